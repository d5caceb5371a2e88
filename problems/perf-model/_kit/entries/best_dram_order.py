def best_dram_order(workload, architecture, mapping):
    loops = [list(x) for x in mapping["levels"][-1]["temporal"]]
    results = []
    for perm in _sel_itertools.permutations(loops):
        levels = [dict(lv) for lv in mapping["levels"]]
        levels[-1]["temporal"] = [list(x) for x in perm]
        moved = _sel_dram_bytes(workload, architecture, {"levels": levels})
        results.append((moved, [d for d, _ in perm]))
    best = min(r[0] for r in results)
    tied = [names for moved, names in results if moved == best]
    if FLAGS.get("ties_enumeration"):
        winner = tied[0]
    elif FLAGS.get("ties_last"):
        winner = max(tied)
    else:
        winner = min(tied)
    return {"best_order": winner, "best_bytes": best, "worst_bytes": max(r[0] for r in results),
            "optimal_orders": len(tied)}
