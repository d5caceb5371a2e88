def array_cycles(workload, architecture, mapping):
    res = analyze(workload, architecture, mapping) if _E2E_BRUTE else None
    stats = _cycle_stats(workload, architecture, mapping)
    names = [lv["name"] for lv in architecture["levels"]]
    macs = res["macs"] if res else prod(workload["dims"].values())
    units = prod(x * y for x, y in (lv.get("fanout", [1, 1]) for lv in architecture["levels"]))
    if _e2e("utilization_of_used_units"):
        units = prod(f for lv in mapping["levels"] for key in ("spatial_x", "spatial_y") for _, f in lv.get(key, []))
    return {"cycles": stats["cycles"], "full_cycles": stats["full_cycles"],
            "utilization": macs / (stats["cycles"] * units),
            "busy_instance_cycles": dict(zip(names, stats["busy"]))}
