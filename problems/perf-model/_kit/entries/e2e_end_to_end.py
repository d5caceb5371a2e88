def end_to_end(workload, architecture, mapping, energy, bandwidth):
    res = analyze(workload, architecture, mapping)
    levels = res["levels"]
    names = [lv["name"] for lv in levels]
    compute = _cycle_stats(workload, architecture, mapping)["cycles"]
    total, bottleneck = _throttled(compute, _level_cycles(levels, bandwidth), names)
    read_b, write_b = _dram_bytes(levels, workload)
    return {
        "reads": _flat_counts(levels, "reads"), "fills": _flat_counts(levels, "fills"),
        "updates": _flat_counts(levels, "updates"),
        "dram_read_bytes": read_b, "dram_write_bytes": write_b,
        "valid": all(_fits(levels, workload, architecture)),
        "energy_pj": _mac_energy(workload, res, compute, energy) + sum(_level_energy(levels, energy)),
        "compute_cycles": compute, "cycles": total, "bottleneck": bottleneck,
        "utilization": res["macs"] / (total * res["mac_units"]),
    }
