ORDER = ("ws", "os", "is")
# dataflow -> (dimension on the rows, on the columns, streamed, stationary tensor)
PLAN = {"ws": ("K", "N", "M", "W"), "os": ("M", "N", "K", "O"), "is": ("K", "M", "N", "I")}
RELEVANT = {"I": ("M", "K"), "W": ("K", "N"), "O": ("M", "N")}


def _largest_divisor(n, cap):
    for d in range(min(n, cap), 0, -1):
        if n % d == 0:
            return d
    return 1


def _vectors(words, block):
    return -(-words // block)


def array_dataflow_energy(gemm: dict, array: dict, energy: dict) -> dict:
    macs = gemm["M"] * gemm["N"] * gemm["K"]
    outputs = gemm["M"] * gemm["N"]
    out = {k: {} for k in ("pes_used", "cycles", "gb_reads", "gb_updates", "energy_pj")}
    for df in ORDER:
        rdim, cdim, _, stat = PLAN[df]
        fr = _largest_divisor(gemm[rdim], array["rows"])
        fc = _largest_divisor(gemm[cdim], array["cols"])
        spread = {rdim: fr, cdim: fc}
        gb_reads, gb_writes = {}, {}
        rf_reads = rf_writes = 0
        for t in ("I", "W"):
            if t == stat:
                size = gemm[RELEVANT[t][0]] * gemm[RELEVANT[t][1]]
                rf_reads, rf_writes = macs, size
                gb_reads[t] = size
            else:
                # one read per distinct element per cycle: the array dimension irrelevant to t shares it
                irrelevant = [d for d in spread if d not in RELEVANT[t]]
                gb_reads[t] = macs // (spread[irrelevant[0]] if irrelevant else 1)
        if stat == "O":
            rf_writes, rf_reads = macs, macs
            gb_writes["O"], gb_reads["O"] = outputs, 0
        else:
            reduce = spread.get("K", 1)  # K on the rows: products added inside the array
            gb_writes["O"] = macs // reduce
            gb_reads["O"] = gb_writes["O"]
        block = energy["gb_block_size"]
        gb_energy = sum(_vectors(w, block) for w in gb_reads.values()) * energy["gb_read_pj"]
        gb_energy += sum(_vectors(w, block) for w in gb_writes.values()) * energy["gb_write_pj"]
        total = macs * energy["mac_pj"] + rf_reads * energy["rf_read_pj"] + rf_writes * energy["rf_write_pj"] + gb_energy
        out["pes_used"][df] = fr * fc
        out["cycles"][df] = macs // (fr * fc)
        out["gb_reads"][df] = sum(gb_reads.values())
        out["gb_updates"][df] = gb_writes["O"]
        out["energy_pj"][df] = total
    best = ORDER[0]
    for df in ORDER[1:]:
        if out["energy_pj"][df] < out["energy_pj"][best]:
            best = df
    out["best_dataflow"] = best
    return out
