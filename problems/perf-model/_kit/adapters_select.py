"""Adapters of the buffer-requirement (F3) and mapping ranking / selection (F16) problems.

Every adapter is select_engine.py (shared helpers on top of ``analyze``) followed by the
problem's entry point; build.py merges ADAPTERS and PROBLEMS into the kit's tables, so each
problem's solution.py, simulator.py and variants are written like the others'."""

from pathlib import Path

_HELPERS = "\n\n" + (Path(__file__).resolve().parent / "select_engine.py").read_text()

_ENTRIES = {
    "buffer_requirement": '''
def buffer_requirement(workload, architecture, mapping):
    levels = _sel_tiles(workload, architecture, mapping)
    inst, total, level_total, fits = {}, {}, {}, {}
    for i, r in enumerate(_sel_requirement(workload, architecture, levels)):
        for t in ("I", "W", "O"):
            inst[r["name"] + "." + t] = r["bytes"][t]
        total[r["name"]] = r["total"]
        level_total[r["name"]] = r["total"] * _sel_used_instances(workload, architecture, mapping, i)
        fits[r["name"]] = r["fits"]
    return {"instance_bytes": inst, "instance_total": total, "level_total": level_total, "fits": fits}
''',
    "largest_fitting_tile": '''
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
''',
    "mapping_validity": '''
def _sel_verdict(workload, architecture, mapping):
    dims = list(workload["dims"])
    for d in dims:
        f = 1
        for lv in mapping["levels"]:
            for key in ("temporal", "spatial_x", "spatial_y"):
                for e, x in lv.get(key, []) or []:
                    if e == d:
                        f *= x
        if f < workload["dims"][d] or (FLAGS.get("exact_coverage") and f != workload["dims"][d]):
            return "coverage:" + d, []
    for arch, lv in zip(architecture["levels"], mapping["levels"]):
        fx, fy = arch.get("fanout", [1, 1])
        px = py = 1
        for _, x in lv.get("spatial_x", []) or []:
            px *= x
        for _, x in lv.get("spatial_y", []) or []:
            py *= x
        bad = px * py > fx * fy if FLAGS.get("fanout_total") else (px > fx or py > fy)
        if bad:
            return "fanout:" + arch["name"], []
    levels = _sel_tiles(workload, architecture, mapping)
    over = [r["name"] for r in _sel_requirement(workload, architecture, levels) if not r["fits"]]
    return ("capacity:" + over[0] if over else "valid"), over


def mapping_validity(workload, architecture, candidates):
    verdicts = [_sel_verdict(workload, architecture, m) for m in candidates]
    return {"valid": [v == "valid" for v, _ in verdicts], "reason": [v for v, _ in verdicts],
            "over_capacity": [over for _, over in verdicts]}
''',
    "dram_traffic_ranking": '''
def dram_traffic_ranking(workload, architecture, candidates):
    moved, valid = [], []
    for m in candidates:
        moved.append(_sel_dram_bytes(workload, architecture, m))
        valid.append(_sel_valid(workload, architecture, m))
    return {"dram_bytes": moved, "valid": valid, "ranking": _sel_rank(moved, valid)}
''',
    "energy_ranking": '''
def energy_ranking(workload, architecture, candidates):
    energy, valid = [], []
    for m in candidates:
        res = analyze(workload, architecture, m)
        energy.append(_sel_energy(workload, architecture, res))
        valid.append(_sel_valid(workload, architecture, m, res["levels"]))
    return {"energy_pj": energy, "valid": valid, "ranking": _sel_rank(energy, valid)}
''',
    "latency_ranking": '''
def latency_ranking(workload, architecture, candidates):
    cycles, bound, valid = [], [], []
    for m in candidates:
        res = analyze(workload, architecture, m)
        c, b = _sel_latency(workload, architecture, res)
        cycles.append(c)
        bound.append(b)
        valid.append(_sel_valid(workload, architecture, m, res["levels"]))
    return {"cycles": cycles, "bound": bound, "valid": valid, "ranking": _sel_rank(cycles, valid)}
''',
    "edp_ranking": '''
def edp_ranking(workload, architecture, candidates):
    energy, cycles, edp, valid = [], [], [], []
    for m in candidates:
        res = analyze(workload, architecture, m)
        e = _sel_energy(workload, architecture, res)
        c, _ = _sel_latency(workload, architecture, res)
        energy.append(e)
        cycles.append(c)
        edp.append(e * c)
        valid.append(_sel_valid(workload, architecture, m, res["levels"]))
    metric = energy if FLAGS.get("rank_by_energy") else edp
    return {"energy_pj": energy, "cycles": cycles, "edp": edp, "valid": valid, "ranking": _sel_rank(metric, valid)}
''',
    "best_dram_order": '''
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
''',
}

ADAPTERS = {name: _HELPERS + code for name, code in _ENTRIES.items()}

# problem id -> (adapter, {variant file stem: engine / adapter switches})
PROBLEMS = {
    "f3-buffer-requirement": ("buffer_requirement", {
        "double_buffering_ignored": {"single_buffer": True},
        "capacity_in_elements": {"capacity_in_elements": True},
        "psum_at_output_precision": {"psum_as_output": True},
        "bypass_ignored": {"ignore_bypass": True},
        "padded_ragged_tiles": {"no_ragged": True},
        "total_over_architecture_instances": {"arch_instances": True},
    }),
    "f3-largest-fitting-tile": ("largest_fitting_tile", {
        "double_buffering_ignored": {"single_buffer": True},
        "capacity_in_elements": {"capacity_in_elements": True},
        "psum_at_output_precision": {"psum_as_output": True},
        "only_target_level_checked": {"only_target_level": True},
        "padded_ragged_tiles": {"no_ragged": True},
        "outer_factor_rounded_down": {"outer_floor": True},
    }),
    "f3-mapping-validity": ("mapping_validity", {
        "double_buffering_ignored": {"single_buffer": True},
        "psum_at_output_precision": {"psum_as_output": True},
        "span_ignores_stride": {"span_ignores_stride": True},
        "padding_held": {"padded": True},
        "bypass_ignored": {"ignore_bypass": True},
        "fanout_checked_on_the_total": {"fanout_total": True},
        "imperfect_factors_rejected": {"exact_coverage": True},
    }),
    "f16-dram-traffic-ranking": ("dram_traffic_ranking", {
        "ties_higher_index": {"ties_higher_index": True},
        "invalid_ranked": {"invalid_ranked": True},
        "double_buffering_ignored": {"single_buffer": True},
        "first_read_counted": {"first_read": True},
        "outer_to_inner": {"outer_first": True},
        "psum_at_output_precision": {"psum_as_output": True},
    }),
    "f16-energy-ranking": ("energy_ranking", {
        "ceil_on_total": {"ceil_on_total": True},
        "fills_free": {"fills_free": True},
        "multicast_per_destination": {"no_multicast": True},
        "psum_at_output_precision": {"psum_as_output": True},
        "invalid_by_energy": {"invalid_by_metric": True},
        "writes_at_read_price": {"one_price": True},
        "bypass_ignored": {"ignore_bypass": True},
    }),
    "f16-latency-ranking": ("latency_ranking", {
        "latency_summed": {"sum_latency": True},
        "ideal_compute_cycles": {"ideal_compute": True},
        "port_counts_reads_only": {"reads_only": True},
        "cycles_rounded_down": {"floor_cycles": True},
        "ties_higher_index": {"ties_higher_index": True},
        "invalid_ranked": {"invalid_ranked": True},
        "multicast_per_destination": {"no_multicast": True},
    }),
    "f16-edp-ranking": ("edp_ranking", {
        "latency_summed": {"sum_latency": True},
        "ranked_by_energy": {"rank_by_energy": True},
        "fills_free": {"fills_free": True},
        "ideal_compute_cycles": {"ideal_compute": True},
        "invalid_ranked": {"invalid_ranked": True},
        "no_spatial_reduction": {"no_reduction": True},
    }),
    "f16-best-dram-order": ("best_dram_order", {
        "ties_to_the_last_order": {"ties_last": True},
        "ties_in_enumeration_order": {"ties_enumeration": True},
        "write_backs_ignored": {"reads_only": True},
        "outer_to_inner": {"outer_first": True},
        "first_read_counted": {"first_read": True},
        "no_reuse": {"no_reuse": True},
    }),
}
