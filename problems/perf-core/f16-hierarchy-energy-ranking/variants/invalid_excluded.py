LEVELS = ("RF", "GB", "DRAM")
TENSORS = ("I", "W", "O")
RELEVANT = {"I": ("M", "K"), "W": ("K", "N"), "O": ("M", "N")}


def _extent(hierarchy, dim, level):
    """Extent of dim in the tile of LEVELS[level]: its loops at that level and below."""
    e = 1
    for name in LEVELS[: level + 1]:
        for d, b in hierarchy[name].get("loops", []):
            if d == dim:
                e *= b
    return e


def _tile(hierarchy, tensor, level):
    a, b = RELEVANT[tensor]
    return _extent(hierarchy, a, level) * _extent(hierarchy, b, level)


def _entries(hierarchy, tensor, level):
    """Elements of tensor entering the tile of LEVELS[level] over the run (stationarity rule)."""
    rel = RELEVANT[tensor]
    count = _tile(hierarchy, tensor, level)
    above = [loop for name in LEVELS[level + 1:] for loop in hierarchy[name].get("loops", [])]
    started = False
    for d, b in above:  # innermost first
        started = started or (d in rel and b > 1)
        if started:
            count *= b
    return count


def _holds(hierarchy, name, tensor):
    return name == "DRAM" or tensor not in hierarchy[name].get("bypass", [])


def _counts(gemm, hierarchy):
    macs = gemm["M"] * gemm["N"] * gemm["K"]
    out = {name: {t: {"reads": 0, "fills": 0, "updates": 0} for t in TENSORS} for name in LEVELS}
    for t in TENSORS:
        holders = [i for i, name in enumerate(LEVELS) if _holds(hierarchy, name, t)]
        for pos, lv in enumerate(holders):
            name = LEVELS[lv]
            served = _entries(hierarchy, t, holders[pos - 1]) if pos > 0 else macs
            if t == "O":
                out[name]["O"]["updates"] = served
                out[name]["O"]["reads"] = served - gemm["M"] * gemm["N"]
            else:
                out[name][t]["reads"] = served
                if name != "DRAM":
                    out[name][t]["fills"] = _entries(hierarchy, t, lv)
        if t == "O":
            for pos, lv in enumerate(holders[:-1]):
                out[LEVELS[lv]]["O"]["fills"] = out[LEVELS[holders[pos + 1]]]["O"]["reads"]
    return macs, out


def _energy(gemm, hierarchy, architecture):
    macs, counts = _counts(gemm, hierarchy)
    total = macs * architecture["mac_pj"]
    for name in LEVELS:
        cost = architecture[name]
        for t in TENSORS:
            for action in ("reads", "fills", "updates"):
                vectors = -(-counts[name][t][action] // cost["block_size"])
                total += vectors * (cost["read_pj"] if action == "reads" else cost["write_pj"])
    return total


def _fits(gemm, hierarchy, architecture):
    for lv, name in enumerate(LEVELS[:2]):
        words = sum(_tile(hierarchy, t, lv) for t in TENSORS if _holds(hierarchy, name, t))
        usable = architecture[name]["capacity_words"] // architecture[name]["multiple_buffering"]
        if words > usable:
            return False
    return True


def hierarchy_energy_ranking(gemm: dict, architecture: dict, candidates: list) -> dict:
    energy = [_energy(gemm, h, architecture) for h in candidates]
    valid = [_fits(gemm, h, architecture) for h in candidates]
    n = len(candidates)
    ranking = sorted((i for i in range(n) if valid[i]), key=lambda i: (energy[i], i))
    return {"energy_pj": energy, "valid": valid, "ranking": ranking}
