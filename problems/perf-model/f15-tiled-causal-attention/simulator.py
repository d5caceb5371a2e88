"""A brute-force simulator of the spec (what a careful engineer would write to check a model):
it runs the schedule pass by pass and key block by key block, and inside every visited block
it goes through every (query row, key) pair of every head, counting each score, MAC, masked
pair and exponential one at a time, and every value it reads or writes. Correct, and hopeless
at real sizes (tens of millions of pairs).
"""


def _cdiv(a, b):
    return -(-a // b)


def tiled_causal_attention(workload, architecture, mapping):
    dims = workload["dims"]
    G, H, M, D = dims["G"], dims["H"], dims["M"], dims["D"]
    C = workload["cached"]
    bits = workload["bits"]
    buf = architecture["levels"][0]
    copies = buf.get("multiple_buffering", 1)
    Br, Bc, hp = mapping["Br"], mapping["Bc"], mapping["heads_per_pass"]
    T = C + M
    qblocks = [list(range(s, min(M, s + Br))) for s in range(0, M, Br)]
    kblocks = [list(range(s, min(T, s + Bc))) for s in range(0, T, Bc)]

    q_vals = k_vals = v_vals = o_vals = 0
    score_blocks = macs = masked = exps = 0
    room = {"Q": 0, "K": 0, "V": 0, "S": 0, "acc": 0, "stat": 0}
    held = None
    pass_no = 0
    for g in range(G):
        for rows in qblocks:
            for h_start in range(0, H, hp):
                heads = list(range(h_start, min(H, h_start + hp)))
                q_vals += len(heads) * len(rows) * D
                room["Q"] = max(room["Q"], len(heads) * len(rows) * D)
                room["acc"] = max(room["acc"], len(heads) * len(rows) * D)
                room["stat"] = max(room["stat"], 2 * len(heads) * len(rows))
                visit = []
                for kb, keys in enumerate(kblocks):
                    if any(key <= C + r for r in rows for key in keys):
                        visit.append(kb)
                if mapping["kv_order"] == "alternating" and pass_no % 2 == 1:
                    visit.reverse()
                for n, kb in enumerate(visit):
                    keys = kblocks[kb]
                    if held != (g, kb):
                        k_vals += len(keys) * D
                        v_vals += len(keys) * D
                        held = (g, kb)
                    room["K"] = max(room["K"], len(keys) * D)
                    room["V"] = max(room["V"], len(keys) * D)
                    room["S"] = max(room["S"], len(heads) * len(rows) * len(keys))
                    for _h in heads:
                        score_blocks += 1
                        for r in rows:
                            for key in keys:
                                macs += D          # the score
                                exps += 1          # its exponential
                                macs += D          # its share of the accumulator update
                                if key > C + r:
                                    masked += 1
                            if n > 0:
                                exps += 1          # the row's rescale
                for _h in heads:
                    o_vals += len(rows) * D
                pass_no += 1

    def nbytes(v, b):
        return _cdiv(v * b, 8)

    sram = (nbytes(room["Q"], bits["Q"]) + copies * nbytes(room["K"], bits["K"])
            + copies * nbytes(room["V"], bits["V"]) + nbytes(room["S"], bits["S"])
            + nbytes(room["acc"], bits["acc"]) + nbytes(room["stat"], bits["stat"]))
    return {
        "q_read_bytes": nbytes(q_vals, bits["Q"]),
        "k_read_bytes": nbytes(k_vals, bits["K"]),
        "v_read_bytes": nbytes(v_vals, bits["V"]),
        "o_write_bytes": nbytes(o_vals, bits["O"]),
        "score_blocks": score_blocks,
        "macs": macs,
        "masked_scores": masked,
        "exponentials": exps,
        "sram_bytes": sram,
        "fits": sram <= buf["capacity_bytes"],
    }
