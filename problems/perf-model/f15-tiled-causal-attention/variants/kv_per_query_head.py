"""Causal attention computed block by block (FlashAttention style) with grouped heads and a KV
cache: DRAM traffic, computed and masked scores, MACs, exponentials and buffer room.

Per query block (real rows r0..r1, at positions cached + r0 .. cached + r1) the visited key
blocks are 0..L with L the block of key cached + r1 (capped at the last key block): a key block
has an unmasked pair exactly when its first key is at or before the last row's position. The
visited keys are the first min(T, (L + 1) * Bc); row i has cached + i + 1 unmasked keys, all
inside them. The only state that crosses passes is the K/V block the buffer holds; a loop over
the passes (no elements) tracks it.
"""

FLAGS: dict = {"kv_per_query_head": True}  # a wrong-on-purpose variant of the solution


def _cdiv(a, b):
    return -(-a // b)


def _nbytes(elements, bits):
    return _cdiv(elements * bits, 8)


def tiled_causal_attention(workload, architecture, mapping):
    dims = workload["dims"]
    G, H, M, D = dims["G"], dims["H"], dims["M"], dims["D"]
    C = workload["cached"]
    b = workload["bits"]
    buf = architecture["levels"][0]
    cap = buf["capacity_bytes"]
    mb = 1 if FLAGS.get("single_buffered") else buf.get("multiple_buffering", 1)
    Br, Bc, hp = mapping["Br"], mapping["Bc"], mapping["heads_per_pass"]
    order = mapping["kv_order"]
    ragged_full = FLAGS.get("ragged_full", False)
    mask_c = 0 if FLAGS.get("no_cache_offset") else C

    T = C + M
    nk = _cdiv(T, Bc)
    nq = _cdiv(M, Br)
    npass = _cdiv(H, hp)

    def ksize(kb):
        return Bc if ragged_full else min(Bc, T - kb * Bc)

    per_qb = []
    for qb in range(nq):
        r0 = qb * Br
        r1 = min(M, r0 + Br) - 1
        rows = Br if ragged_full else r1 - r0 + 1
        if FLAGS.get("no_causal_skip"):
            last = nk - 1
        else:
            last = min(nk - 1, (mask_c + r1) // Bc)
        cols = (last + 1) * Bc if ragged_full else min(T, (last + 1) * Bc)
        real_rows = r1 - r0 + 1
        unmasked = real_rows * (mask_c + 1) + (r0 + r1) * real_rows // 2
        unmasked = min(unmasked, rows * cols)
        per_qb.append((rows, last, cols, unmasked))

    kv_elems = 0
    held = None
    idx = 0
    reads_per_pass_heads = FLAGS.get("kv_per_query_head", False)
    for g in range(G):
        for rows, last, cols, _ in per_qb:
            for p in range(npass):
                up = order == "ascending" or idx % 2 == 0
                first, final = (0, last) if up else (last, 0)
                reuse = held == (g, first) and not FLAGS.get("no_reuse")
                n = cols - (ksize(first) if reuse else 0)
                if reads_per_pass_heads:
                    n = cols * min(hp, H - p * hp)
                kv_elems += n
                held = (g, final)
                idx += 1
    kv_elems *= D

    blocks = sum(last + 1 for _, last, _, _ in per_qb)
    scores = sum(rows * cols for rows, _, cols, _ in per_qb)
    unmasked = sum(u for _, _, _, u in per_qb)
    if FLAGS.get("rescale_every_block"):
        rescale = sum(rows * (last + 1) for rows, last, _, _ in per_qb)
    else:
        rescale = sum(rows * last for rows, last, _, _ in per_qb)
    heads = G * H
    computed = unmasked if FLAGS.get("unmasked_only") else scores
    q_rows = nq * Br if ragged_full else M

    rows0 = Br if ragged_full else min(Br, M)
    cols0 = Bc if ragged_full else min(Bc, T)
    h0 = min(hp, H)
    sram = (_nbytes(rows0 * D * h0, b["Q"])
            + mb * _nbytes(cols0 * D, b["K"]) + mb * _nbytes(cols0 * D, b["V"])
            + _nbytes(rows0 * cols0 * h0, b["S"])
            + _nbytes(rows0 * D * h0, b["acc"])
            + _nbytes(2 * rows0 * h0, b["stat"]))
    return {
        "q_read_bytes": _nbytes(heads * q_rows * D, b["Q"]),
        "k_read_bytes": _nbytes(kv_elems, b["K"]),
        "v_read_bytes": _nbytes(kv_elems, b["V"]),
        "o_write_bytes": _nbytes(heads * q_rows * D, b["O"]),
        "score_blocks": heads * blocks,
        "macs": heads * computed * 2 * D,
        "masked_scores": heads * (scores - unmasked),
        "exponentials": heads * (computed + rescale),
        "sram_bytes": sram,
        "fits": sram <= cap,
    }
