DIMS = ("C", "K", "P", "Q", "R", "S")


def conv_input_delta(conv: dict, mapping: dict) -> dict:
    ext = dict.fromkeys(DIMS, 1)
    for d, b in mapping["buffer"]:
        ext[d] *= b
    rows = ext["P"] + ext["R"] - 1
    cols = ext["Q"] + ext["S"] - 1
    tile = ext["C"] * rows * cols

    loops, weight = [], dict(ext)
    for d, b in mapping["dram"]:  # innermost first: digit weight grows outwards
        loops.append((d, b, weight[d]))
        weight[d] *= b

    idx = [0] * len(loops)
    total = 1
    for _, b, _ in loops:
        total *= b
    reads, prev = 0, None
    for _ in range(total):
        start = dict.fromkeys(DIMS, 0)
        for (d, _, w), i in zip(loops, idx):
            start[d] += i * w
        box = (start["C"], start["P"] + start["R"], start["Q"] + start["S"])
        if prev is None:
            reads += tile
        elif box[0] != prev[0] or (start["R"], start["S"]) != last_rs or box[1] < prev[1] or box[2] < prev[2]:
            reads += tile if box != prev else 0
        else:
            common_c = ext["C"] if box[0] == prev[0] else 0
            common_h = max(0, rows - abs(box[1] - prev[1]))
            common_w = max(0, cols - abs(box[2] - prev[2]))
            reads += tile - common_c * common_h * common_w
        prev = box
        last_rs = (start["R"], start["S"])
        for j in range(len(loops)):  # advance the innermost loop first
            idx[j] += 1
            if idx[j] < loops[j][1]:
                break
            idx[j] = 0
    return {"input_tile": tile, "input_reads": reads}
