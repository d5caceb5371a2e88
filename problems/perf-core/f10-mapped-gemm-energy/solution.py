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


def _entries(hierarchy, tensor, level):
    """Elements of tensor entering the tile of LEVELS[level] over the run (stationarity rule)."""
    rel = RELEVANT[tensor]
    count = _extent(hierarchy, rel[0], level) * _extent(hierarchy, rel[1], level)
    above = [loop for name in LEVELS[level + 1:] for loop in hierarchy[name].get("loops", [])]
    started = False
    for d, b in above:  # innermost first
        started = started or (d in rel and b > 1)
        if started:
            count *= b
    return count


def _counts(gemm, hierarchy):
    macs = gemm["M"] * gemm["N"] * gemm["K"]
    out = {name: {t: {"reads": 0, "fills": 0, "updates": 0} for t in TENSORS} for name in LEVELS}
    for t in TENSORS:
        holders = [i for i, name in enumerate(LEVELS)
                   if name == "DRAM" or t not in hierarchy[name].get("bypass", [])]
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


def mapped_gemm_energy(gemm: dict, hierarchy: dict, energy: dict) -> dict:
    macs, counts = _counts(gemm, hierarchy)
    vectors, level_energy = {}, {}
    for name in LEVELS:
        cost = energy[name]
        n, e = 0, 0.0
        for t in TENSORS:
            for action in ("reads", "fills", "updates"):
                v = -(-counts[name][t][action] // cost["block_size"])
                n += v
                e += v * (cost["read_pj"] if action == "reads" else cost["write_pj"])
        vectors[name] = n
        level_energy[name] = e
    mac_energy = macs * energy["mac_pj"]
    return {
        "vectors": vectors,
        "level_energy_pj": level_energy,
        "mac_energy_pj": mac_energy,
        "total_energy_pj": mac_energy + sum(level_energy.values()),
    }
