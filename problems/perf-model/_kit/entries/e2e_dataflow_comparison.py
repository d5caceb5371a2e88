def dataflow_comparison(workload, architecture, mappings, energy):
    energies, cycles = {}, {}
    for name in sorted(mappings):
        res = analyze(workload, architecture, mappings[name])
        steps = _cycle_stats(workload, architecture, mappings[name])["cycles"]
        energies[name] = _mac_energy(workload, res, steps, energy) + sum(_level_energy(res["levels"], energy))
        cycles[name] = steps
    return {"energy_pj": energies, "cycles": cycles, "lowest_energy": _first_min(energies),
            "fewest_cycles": _first_min(cycles)}
