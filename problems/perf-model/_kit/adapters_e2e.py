"""Adapters of the energy, cycles, bandwidth, dataflow and end-to-end problems (F8, F9, F10,
F13, F18): each entry point on top of ``analyze`` (engine.py or simulator.py) and the fragment
e2e_engine.py, and each problem's variants as switches (engine switches and the fragment's own).
Merged into the kit by build.py."""

from pathlib import Path

_FRAGMENT = (Path(__file__).resolve().parent / "e2e_engine.py").read_text()


def _adapter(body: str) -> str:
    return _FRAGMENT + body


ADAPTERS = {
    "e2e_layer_energy": _adapter('''

def _analysis(workload, architecture, mapping):
    res = analyze(workload, architecture, mapping)
    if FLAGS.get("per_instance"):
        for lv in res["levels"]:
            n = max(1, lv["used_instances"])
            for t in ("I", "W", "O"):
                lv[t] = {k: v // n for k, v in lv[t].items()}
    return res


def layer_energy(workload, architecture, mapping, energy):
    res = _analysis(workload, architecture, mapping)
    per_level = _level_energy(res["levels"], energy)
    cycles = _cycle_stats(workload, architecture, mapping)["cycles"] if _e2e("mac_energy_every_unit") else 0
    mac = _mac_energy(workload, res, cycles, energy)
    return {"level_energy_pj": {lv["name"]: e for lv, e in zip(res["levels"], per_level)},
            "mac_energy_pj": mac, "total_energy_pj": mac + sum(per_level)}
'''),
    "e2e_array_cycles": _adapter('''

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
'''),
    "e2e_throttled_latency": _adapter('''

def throttled_latency(workload, architecture, mapping, bandwidth):
    res = analyze(workload, architecture, mapping)
    compute = _cycle_stats(workload, architecture, mapping)["cycles"]
    names = [lv["name"] for lv in res["levels"]]
    per_level = _level_cycles(res["levels"], bandwidth)
    total, bottleneck = _throttled(compute, per_level, names)
    return {"compute_cycles": compute, "level_cycles": dict(zip(names, per_level)), "cycles": total,
            "bottleneck": bottleneck, "utilization": res["macs"] / (total * res["mac_units"])}
'''),
    "e2e_dataflow_comparison": _adapter('''

def dataflow_comparison(workload, architecture, mappings, energy):
    energies, cycles = {}, {}
    for name in sorted(mappings):
        res = analyze(workload, architecture, mappings[name])
        steps = _cycle_stats(workload, architecture, mappings[name])["cycles"]
        energies[name] = _mac_energy(workload, res, steps, energy) + sum(_level_energy(res["levels"], energy))
        cycles[name] = steps
    return {"energy_pj": energies, "cycles": cycles, "lowest_energy": _first_min(energies),
            "fewest_cycles": _first_min(cycles)}
'''),
    "e2e_end_to_end": _adapter('''

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
'''),
}

# problem id -> (adapter, {variant file stem: switches})
PROBLEMS = {
    "f10-eyeriss-layer-energy": ("e2e_layer_energy", {
        "fractional_blocks": {"fractional_blocks": True},
        "blocks_ignored": {"blocks_ignored": True},
        "fills_at_read_energy": {"fills_at_read_energy": True},
        "padding_macs_free": {"padding_macs_free": True},
        "multicast_per_destination": {"no_multicast": True},
        "refetch_whole_tile": {"refetch": True},
        "first_read_counted": {"first_read": True},
    }),
    "f10-simba-vector-energy": ("e2e_layer_energy", {
        "fractional_blocks": {"fractional_blocks": True},
        "blocks_ignored": {"blocks_ignored": True},
        "mac_energy_every_unit": {"mac_energy_every_unit": True},
        "per_instance_counts": {"per_instance": True},
        "no_spatial_reduction": {"no_reduction": True},
        "multicast_per_destination": {"no_multicast": True},
        "partition_ignores_replication": {"partition_no_replication": True},
    }),
    "f8-array-cycles-utilization": ("e2e_array_cycles", {
        "empty_steps_counted": {"empty_steps_counted": True},
        "ragged_ignored": {"ragged_ignored": True},
        "busy_counts_every_instance": {"busy_counts_every_instance": True},
        "utilization_of_used_units": {"utilization_of_used_units": True},
        "digits_reversed": {"digits_reversed": True},
    }),
    "f9-bandwidth-bottleneck": ("e2e_throttled_latency", {
        "stalls_add_up": {"stalls_add_up": True},
        "ports_serialized": {"ports_serialized": True},
        "shared_port_ignored": {"shared_port_ignored": True},
        "fills_not_written": {"fills_not_written": True},
        "bottleneck_tie_outermost": {"bottleneck_tie_outermost": True},
        "compute_loses_ties": {"compute_loses_ties": True},
        "empty_steps_counted": {"empty_steps_counted": True},
        "multicast_per_destination": {"no_multicast": True},
    }),
    "f13-dataflow-energy-cycles": ("e2e_dataflow_comparison", {
        "ties_to_last": {"ties_to_last": True},
        "empty_steps_counted": {"empty_steps_counted": True},
        "fractional_blocks": {"fractional_blocks": True},
        "first_read_counted": {"first_read": True},
        "no_spatial_reduction": {"no_reduction": True},
        "multicast_per_destination": {"no_multicast": True},
    }),
    "f18-resnet-eyeriss-end-to-end": ("e2e_end_to_end", {
        "psum_at_output_precision": {"psum_as_output": True},
        "multiple_buffering_ignored": {"multiple_buffering_ignored": True},
        "capacity_in_elements": {"capacity_in_elements": True},
        "stalls_add_up": {"stalls_add_up": True},
        "fractional_blocks": {"fractional_blocks": True},
        "refetch_whole_tile": {"refetch": True},
        "padding_moved": {"padded": True},
        "empty_steps_counted": {"empty_steps_counted": True},
    }),
    "f18-llama-decode-end-to-end": ("e2e_end_to_end", {
        "kv_heads_not_shared": {"gqa_ignored": True},
        "psum_capacity_at_output_bits": {"psum_capacity_at_output_bits": True},
        "multiple_buffering_ignored": {"multiple_buffering_ignored": True},
        "every_write_back_partial": {"all_partial": True},
        "stalls_add_up": {"stalls_add_up": True},
        "fractional_blocks": {"fractional_blocks": True},
        "no_spatial_reduction": {"no_reduction": True},
    }),
}
