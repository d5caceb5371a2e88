def level_accesses(workload, architecture, mapping):
    lv = _levels(workload, architecture, mapping)
    return {a: {f"{x['name']}.{t}": x[t][a] for x in lv for t in ("I", "W", "O")}
            for a in ("reads", "fills", "updates")}
