RELEVANT = {"I": "MK", "W": "KN", "O": "MN"}


def _prod(xs):
    p = 1
    for x in xs:
        p *= x
    return p


def gemm_array_accesses(gemm: dict, array: dict, mapping: dict) -> dict:
    macs = gemm["M"] * gemm["N"] * gemm["K"]
    unrolled = [mapping["rows"], mapping["cols"]]
    pes = _prod(b for _, b in unrolled)

    def unrolled_over(dim):
        return _prod(b for d, b in unrolled if d == dim)

    o_updates = macs // unrolled_over("K")
    ext = {d: unrolled_over(d) * _prod(b for dd, b in mapping["gb"] if dd == d) for d in "MNK"}

    def moves(t):
        rel = RELEVANT[t]
        count = ext[rel[0]] * ext[rel[1]]
        started = False
        for d, b in mapping["dram"]:
            started = started or (d in rel and b > 1)
            if started:
                count *= b
        return count

    writes = moves("O")
    return {
        "pes_used": pes,
        "utilization": pes / (array["rows"] * array["cols"]),
        "I_reads": macs // unrolled_over("N"),
        "W_reads": macs // unrolled_over("M"),
        "O_updates": o_updates,
        "O_reads": o_updates,
        "dram_I_reads": moves("I"),
        "dram_W_reads": moves("W"),
        "dram_O_writes": writes,
        "dram_O_reads": writes - gemm["M"] * gemm["N"],
    }
