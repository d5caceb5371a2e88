def psum_traffic(workload, architecture, mapping):
    b = workload["bits"]
    holders = [x for x in _levels(workload, architecture, mapping) if "O" in x["keeps"]][1:]
    return {"O_complete": {x["name"]: 0 if FLAGS.get("all_partial") else x["O"]["final_updates"] for x in holders},
            "O_update_bytes": {x["name"]: _o_write_bytes(x, b) for x in holders},
            "O_read_bytes": {x["name"]: _psum_bytes(x["O"]["reads"], b) for x in holders}}
