def _sel_others(mapping, level, dim):
    last = len(mapping["levels"]) - 1
    out = 1
    for i, lv in enumerate(mapping["levels"]):
        for key in ("temporal", "spatial_x", "spatial_y"):
            for d, f in lv.get(key, []) or []:
                if d == dim and not (key == "temporal" and i in (level, last)):
                    out *= f
    return out


def _sel_outer(size, inner):
    return size // inner if FLAGS.get("outer_floor") else -(-size // inner)


def _sel_with_factor(mapping, level, dim, f, size):
    levels = [dict(lv, temporal=[list(x) for x in lv.get("temporal", [])]) for lv in mapping["levels"]]
    inner = _sel_others(mapping, level, dim) * f
    for x in levels[level]["temporal"]:
        if x[0] == dim:
            x[1] = f
    for x in levels[-1]["temporal"]:
        if x[0] == dim:
            x[1] = -(-size // inner)
    return {"levels": levels}


def largest_fitting_tile(workload, architecture, mapping, target):
    names = [lv["name"] for lv in architecture["levels"]]
    level, dim = names.index(target["level"]), target["dim"]
    size = workload["dims"][dim]
    others = _sel_others(mapping, level, dim)
    fmax = -(-size // others)
    cache = {}

    def fits(f):
        if f not in cache:
            m = _sel_with_factor(mapping, level, dim, f, size)
            cache[f] = [r["fits"] for r in _sel_requirement(workload, architecture, _sel_tiles(workload, architecture, m))]
        return cache[f]

    largest = {}
    for i, name in enumerate(names[:-1]):
        if FLAGS.get("only_target_level") and i != level:
            largest[name] = fmax
            continue
        lo, hi = 0, fmax  # a level's need never shrinks as f grows: the last f that fits
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if fits(mid)[i]:
                lo = mid
            else:
                hi = mid - 1
        largest[name] = lo
    best = min(largest.values())
    return {"largest_factor": largest, "best_factor": best,
            "outer_factor": _sel_outer(size, others * best) if best else 0}
