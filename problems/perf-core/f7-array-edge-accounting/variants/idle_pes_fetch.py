from itertools import product

DIMS = ("M", "N", "K")
RELEVANT = {"I": ("M", "K"), "W": ("K", "N"), "O": ("M", "N")}


def _odometer(loops):
    """Index tuples of ``loops`` (innermost first) in execution order, innermost fastest."""
    for digits in product(*(range(b) for _, b in reversed(loops))):
        yield tuple(reversed(digits))


def array_edge_accounting(gemm: dict, array: dict, mapping: dict) -> dict:
    size = {d: gemm[d] for d in DIMS}
    rf = mapping["rf"]
    rf_loops, gb_loops, dram_loops = rf.get("loops", []), mapping["gb"], mapping["dram"]
    keeps = {t for t in "IWO" if t not in rf.get("bypass", [])}

    # digit weights: each dimension's loops from the innermost: RF, cols, rows, GB, DRAM
    order = ([("rf", i, d, b) for i, (d, b) in enumerate(rf_loops)]
             + [("cols", 0) + tuple(mapping["cols"]), ("rows", 0) + tuple(mapping["rows"])]
             + [("gb", i, d, b) for i, (d, b) in enumerate(gb_loops)]
             + [("dram", i, d, b) for i, (d, b) in enumerate(dram_loops)])
    weight, acc = {}, dict.fromkeys(DIMS, 1)
    for kind, i, d, b in order:
        weight[(kind, i)] = acc[d]
        acc[d] *= b
    rf_extent = dict.fromkeys(DIMS, 1)
    for d, b in rf_loops:
        rf_extent[d] *= b

    rows_d, rows_b = mapping["rows"]
    cols_d, cols_b = mapping["cols"]
    pes = [(r, c) for r in range(rows_b) for c in range(cols_b)]
    outer = gb_loops + dram_loops

    def base(pe, outer_idx):
        b = dict.fromkeys(DIMS, 0)
        b[rows_d] += pe[0] * weight[("rows", 0)]
        b[cols_d] += pe[1] * weight[("cols", 0)]
        for pos, x in enumerate(outer_idx):
            kind, i = ("gb", pos) if pos < len(gb_loops) else ("dram", pos - len(gb_loops))
            b[outer[pos][0]] += x * weight[(kind, i)]
        return b

    def cell(t, b):
        """The PE's RF tile of t as (start per relevant dim), its size; None when idle."""
        lengths = {d: min(rf_extent[d], size[d] - b[d]) for d in DIMS}
        rel = RELEVANT[t]
        if any(lengths[d] <= 0 for d in rel):  # only the tensor's own dimensions checked
            return None, 0
        return (b[rel[0]], b[rel[1]]), lengths[rel[0]] * lengths[rel[1]]

    macs = size["M"] * size["N"] * size["K"]
    steps = 1
    for _, b in rf_loops + outer:
        steps *= b
    out_gb = dict.fromkeys(("I_reads", "W_reads", "O_updates", "O_reads"), 0)
    out_rf = dict.fromkeys(("I_reads", "I_fills", "W_reads", "W_fills", "O_reads", "O_fills", "O_updates"), 0)

    prev = {t: {pe: None for pe in pes} for t in "IWO"}
    ever_pe = {pe: set() for pe in pes}
    union_prev, union_ever, sizes = set(), set(), {}
    for outer_idx in _odometer(outer):
        bases = {pe: base(pe, outer_idx) for pe in pes}
        for t in ("I", "W"):
            if t not in keeps:
                continue
            fetched = set()
            for pe in pes:
                c, n = cell(t, bases[pe])
                if c is not None and c != prev[t][pe]:
                    out_rf[t + "_fills"] += n
                    fetched.add((c, n))
                prev[t][pe] = c
            out_gb[t + "_reads"] += sum(n for _, n in fetched)
        if "O" in keeps:
            union = set()
            for pe in pes:
                c, n = cell("O", bases[pe])
                if c is not None:
                    union.add(c)
                    sizes[c] = n
                    ever_pe[pe].add(c)
            out_gb["O_updates"] += sum(sizes[c] for c in union_prev - union)  # written back
            out_gb["O_reads"] += sum(sizes[c] for c in (union - union_prev) & union_ever)  # read back
            union_ever |= union
            union_prev = union
        # tensors the RF bypasses: the MAC units use the GB directly, step by step
        bypassed = [t for t in "IWO" if t not in keeps]
        if bypassed:
            for rf_idx in _odometer(rf_loops):
                used = {t: set() for t in bypassed}
                for pe in pes:
                    v = dict(bases[pe])
                    for pos, ((d, _), x) in enumerate(zip(rf_loops, rf_idx)):
                        v[d] += x * weight[("rf", pos)]
                    if all(v[d] < size[d] for d in DIMS):
                        for t in bypassed:
                            rel = RELEVANT[t]
                            used[t].add((v[rel[0]], v[rel[1]]))
                for t in bypassed:
                    out_gb["O_updates" if t == "O" else t + "_reads"] += len(used[t])
    if "O" in keeps:
        out_gb["O_updates"] += sum(sizes[c] for c in union_prev)  # the final drain
        out_rf["O_updates"] = macs
        out_rf["O_reads"] = macs - sum(sizes[c] for pe in pes for c in ever_pe[pe])
        out_rf["O_fills"] = out_gb["O_reads"]
    else:
        out_gb["O_reads"] = out_gb["O_updates"] - size["M"] * size["N"]
    for t in ("I", "W"):
        if t in keeps:
            out_rf[t + "_reads"] = macs
    used_pes = rows_b * cols_b
    return {
        "pes_used": used_pes,
        "steps": steps,
        "utilization": macs / (steps * array["rows"] * array["cols"]),
        "gb": out_gb,
        "rf": out_rf,
    }
