DIMS = ("C", "K", "P", "Q", "R", "S")


def _offsets(n_out, n_filter, stride, dilation):
    return {i * stride + j * dilation for i in range(n_out) for j in range(n_filter)}


def strided_input_delta(conv: dict, mapping: dict) -> dict:
    st, dil = conv["stride"], conv["dilation"]
    ext = dict.fromkeys(DIMS, 1)
    for d, b in mapping["buffer"]:
        ext[d] *= b
    rows = _offsets(ext["P"], ext["R"], st, dil)
    cols = _offsets(ext["Q"], ext["S"], st, dil)
    tile = ext["C"] * len(rows) * len(cols)
    common_rows, common_cols = {}, {}

    loops, weight = [], dict(ext)
    for d, b in reversed(mapping["dram"]):  # (read as outermost first)
        loops.append((d, b, weight[d]))
        weight[d] *= b
    total = 1
    for _, b, _ in loops:
        total *= b

    idx = [0] * len(loops)
    reads, prev = 0, None
    for _ in range(total):
        start = dict.fromkeys(DIMS, 0)
        for (d, _, w), i in zip(loops, idx):
            start[d] += i * w
        box = (start["C"], start["P"] * st + start["R"] * dil, start["Q"] * st + start["S"] * dil)
        if prev is None:
            reads += tile
        else:
            dh, dw = box[1] - prev[1], box[2] - prev[2]
            if dh not in common_rows:
                common_rows[dh] = len(rows & {x + dh for x in rows})
            if dw not in common_cols:
                common_cols[dw] = len(cols & {x + dw for x in cols})
            same_c = ext["C"] if box[0] == prev[0] else 0
            reads += tile - same_c * common_rows[dh] * common_cols[dw]
        prev = box
        for j in range(len(loops)):
            idx[j] += 1
            if idx[j] < loops[j][1]:
                break
            idx[j] = 0
    return {"input_tile": tile, "input_reads": reads}
