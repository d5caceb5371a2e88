def throttled_latency(workload, architecture, mapping, bandwidth):
    res = analyze(workload, architecture, mapping)
    compute = _cycle_stats(workload, architecture, mapping)["cycles"]
    names = [lv["name"] for lv in res["levels"]]
    per_level = _level_cycles(res["levels"], bandwidth)
    total, bottleneck = _throttled(compute, per_level, names)
    return {"compute_cycles": compute, "level_cycles": dict(zip(names, per_level)), "cycles": total,
            "bottleneck": bottleneck, "utilization": res["macs"] / (total * res["mac_units"])}
