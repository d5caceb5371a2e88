LEVELS = ("RF", "L1", "GB", "DRAM")
IN_PE = ("RF", "L1")
RELEVANT = {"I": ("M", "K"), "W": ("K", "N"), "O": ("M", "N")}
KEYS = ("I_reads", "I_fills", "W_reads", "W_fills", "O_reads", "O_fills", "O_updates")


def _prod(xs):
    p = 1
    for x in xs:
        p *= x
    return p


def _extent(h, dim, level):
    e = 1
    for name in LEVELS[: level + 1]:
        loops = h[name].get("loops", []) + (h[name].get("spatial", []) if name == "GB" else [])
        e *= _prod(b for d, b in loops if d == dim)
    return e


def _entries(h, t, level):
    rel = RELEVANT[t]
    count = _extent(h, rel[0], level) * _extent(h, rel[1], level)
    started = False
    for name in LEVELS[level + 1:]:
        for d, b in h[name].get("loops", []):  # temporal loops only, innermost first
            started = started or (d in rel and b > 1)
            if started:
                count *= b
    return count


def pe_array_accesses(gemm: dict, hierarchy: dict) -> dict:
    h = hierarchy
    macs = gemm["M"] * gemm["N"] * gemm["K"]
    spatial = h["GB"].get("spatial", [])
    pes = _prod(b for _, b in spatial)
    out = {name: dict.fromkeys(KEYS, 0) for name in LEVELS}
    for t in ("I", "W", "O"):
        rel = RELEVANT[t]
        sp_rel = _prod(b for d, b in spatial if d in rel)
        sp_irr = pes // sp_rel
        holders = [i for i, n in enumerate(LEVELS) if n == "DRAM" or t not in h[n].get("bypass", [])]
        for pos, lv in enumerate(holders):
            name = LEVELS[lv]
            child = holders[pos - 1] if pos else None
            if child is None:
                served = macs if name in IN_PE else macs // sp_irr
            elif LEVELS[child] in IN_PE:
                served = _entries(h, t, child) * (pes if name in IN_PE else sp_rel)
            else:
                served = _entries(h, t, child)
            if t == "O":
                partition = gemm["M"] * gemm["N"]
                out[name]["O_updates"] = served
                out[name]["O_reads"] = served - partition
            else:
                out[name][t + "_reads"] = served
                if name != "DRAM":
                    out[name][t + "_fills"] = _entries(h, t, lv) * (pes if name in IN_PE else 1)
        if t == "O":
            for pos, lv in enumerate(holders[:-1]):
                out[LEVELS[lv]]["O_fills"] = out[LEVELS[holders[pos + 1]]]["O_reads"]
    out["pes"] = pes
    return out
