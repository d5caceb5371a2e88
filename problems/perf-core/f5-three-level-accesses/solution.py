LEVELS = ("RF", "GB", "DRAM")
RELEVANT = {"I": ("M", "K"), "W": ("K", "N"), "O": ("M", "N")}


def _extent(hierarchy, dim, level):
    e = 1
    for name in LEVELS[: level + 1]:
        for d, b in hierarchy[name].get("loops", []):
            if d == dim:
                e *= b
    return e


def _entries(hierarchy, tensor, level):
    rel = RELEVANT[tensor]
    count = _extent(hierarchy, rel[0], level) * _extent(hierarchy, rel[1], level)
    above = [loop for name in LEVELS[level + 1:] for loop in hierarchy[name].get("loops", [])]
    started = False
    for d, b in above:  # innermost first
        started = started or (d in rel and b > 1)
        if started:
            count *= b
    return count


def three_level_accesses(gemm: dict, hierarchy: dict) -> dict:
    macs = gemm["M"] * gemm["N"] * gemm["K"]
    out = {name: dict.fromkeys(("I_reads", "I_fills", "W_reads", "W_fills", "O_reads", "O_fills", "O_updates"), 0)
           for name in LEVELS}
    for t in ("I", "W", "O"):
        holders = [i for i, name in enumerate(LEVELS)
                   if name == "DRAM" or t not in hierarchy[name].get("bypass", [])]
        for pos, lv in enumerate(holders):
            name = LEVELS[lv]
            child = holders[pos - 1] if pos > 0 else None
            served = _entries(hierarchy, t, child) if child is not None else macs
            if t == "O":
                out[name]["O_updates"] = served
                out[name]["O_reads"] = served - gemm["M"] * gemm["N"]
            else:
                out[name][t + "_reads"] = served
                if name != "DRAM":
                    out[name][t + "_fills"] = _entries(hierarchy, t, lv)
        if t == "O":  # partial sums read back from the parent fill the child
            for pos, lv in enumerate(holders[:-1]):
                out[LEVELS[lv]]["O_fills"] = out[LEVELS[holders[pos + 1]]]["O_reads"]
    return out
