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
