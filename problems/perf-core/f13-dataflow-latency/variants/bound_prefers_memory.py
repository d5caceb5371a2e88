ORDER = ("ws", "os", "is")
# dataflow -> (dimension on the rows, on the columns, streamed, stationary tensor)
PLAN = {"ws": ("K", "N", "M", "W"), "os": ("M", "N", "K", "O"), "is": ("K", "M", "N", "I")}
RELEVANT = {"I": ("M", "K"), "W": ("K", "N"), "O": ("M", "N")}


def _largest_divisor(n, cap):
    for d in range(min(n, cap), 0, -1):
        if n % d == 0:
            return d
    return 1


def _ceil_div(a, b):
    return -(-a // b)


def dataflow_latency(gemm: dict, array: dict, gb: dict) -> dict:
    macs = gemm["M"] * gemm["N"] * gemm["K"]
    outputs = gemm["M"] * gemm["N"]
    out = {k: {} for k in ("cycles", "gb_reads", "gb_writes", "latency", "bound")}
    for df in ORDER:
        rdim, cdim, _, stat = PLAN[df]
        fr = _largest_divisor(gemm[rdim], array["rows"])
        fc = _largest_divisor(gemm[cdim], array["cols"])
        spread = {rdim: fr, cdim: fc}
        reads = 0
        for t in ("I", "W"):
            if t == stat:
                reads += gemm[RELEVANT[t][0]] * gemm[RELEVANT[t][1]]  # loaded into the RFs once
            else:
                irrelevant = [d for d in spread if d not in RELEVANT[t]]
                reads += macs // (spread[irrelevant[0]] if irrelevant else 1)  # multicast
        if stat == "O":
            writes = outputs
        else:
            writes = macs // spread.get("K", 1)  # K on the rows: reduced inside the array
            reads += writes - outputs  # read-modify-write, first read elided
        cycles = macs // (fr * fc)
        terms = [("compute", cycles),
                 ("gb_read", _ceil_div(reads, gb["read_words_per_cycle"])),
                 ("gb_write", _ceil_div(writes, gb["write_words_per_cycle"]))]
        latency = max(v for _, v in terms)
        out["cycles"][df] = cycles
        out["gb_reads"][df] = reads
        out["gb_writes"][df] = writes
        out["latency"][df] = latency
        out["bound"][df] = next(name for name, v in reversed(terms) if v == latency)
    best = ORDER[0]
    for df in ORDER[1:]:
        if out["latency"][df] < out["latency"][best]:
            best = df
    out["best_dataflow"] = best
    return out
