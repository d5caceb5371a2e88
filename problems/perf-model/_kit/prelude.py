# The entry-point helpers every kit problem shares (joined after engine.py or simulator.py).
# ---- the problem's entry point -----------------------------------------------------------

def _nbytes(elements, bits):
    return -(-elements * bits // 8)


def _o_write_bytes(lv, bits):
    final = 0 if FLAGS.get("all_partial") else lv["O"]["final_updates"]
    if FLAGS.get("psum_as_output"):
        return _nbytes(lv["O"]["updates"], bits["O"])
    return _nbytes(final, bits["O"]) + _nbytes(lv["O"]["updates"] - final, bits["psum"])


def _psum_bytes(n, bits):
    return _nbytes(n, bits["O"] if FLAGS.get("psum_as_output") else bits["psum"])


def _levels(workload, architecture, mapping):
    res = analyze(workload, architecture, mapping)
    if FLAGS.get("per_instance"):
        for lv in res["levels"]:
            n = max(1, lv["used_instances"])
            for t in ("I", "W", "O"):
                lv[t] = {k: v // n for k, v in lv[t].items()}
    return res["levels"]
