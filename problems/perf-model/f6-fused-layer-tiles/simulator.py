"""A brute-force simulator of the fused schedule, written from the spec: it visits the tiles in
order, walks every MAC of every needed element back through the chain to build each tensor's
footprint as a set of (channel, row, column) elements, and counts what is computed, read and
reserved. Obviously correct, and hopeless at real sizes (it enumerates every MAC).
"""


def _nbytes(elements, bits):
    return -(-elements * bits // 8)


def _out_channels(wl):
    return wl["dims"]["K"] if wl["shape"] == "conv" else wl["dims"]["C"]


def _back(wl, needed_out):
    """Every MAC of the needed output elements of a layer: the input elements they read
    (padding excluded) and, per output element, its number of MACs."""
    d = wl["dims"]
    (sh, sw), (dh, dw), (ph, pw) = wl["stride"], wl["dilation"], wl["padding"]
    hin, win = wl["input_hw"]
    chans = range(d["C"])
    needed_in, macs_each = set(), {}
    for (k, p, q) in needed_out:
        count = 0
        for c in (chans if wl["shape"] == "conv" else (k,)):
            for r in range(d["R"]):
                for s in range(d["S"]):
                    count += 1
                    h, w = p * sh + r * dh - ph, q * sw + s * dw - pw
                    if 0 <= h < hin and 0 <= w < win:
                        needed_in.add((c, h, w))
        macs_each[(k, p, q)] = count
    return needed_in, macs_each


def fused_layer_tiles(layers, architecture, schedule):
    n = len(layers)
    last = layers[-1]
    P, Q, K = last["dims"]["P"], last["dims"]["Q"], _out_channels(last)
    tp, tq = schedule["tile"]["P"], schedule["tile"]["Q"]
    keep = schedule["keep_intermediate"]
    row_groups = [range(lo, min(lo + tp, P)) for lo in range(0, P, tp)]
    col_groups = [range(lo, min(lo + tq, Q)) for lo in range(0, Q, tq)]
    if schedule["order"][0] == "Q":
        tiles = [(rg, cg) for rg in row_groups for cg in col_groups]
    else:
        tiles = [(rg, cg) for cg in col_groups for rg in row_groups]

    macs = [0] * n
    input_reads = 0
    largest = [0] * n          # footprint of the input of layer j
    prev = [set() for _ in range(n)]
    out_tile_max = 0
    for rg, cg in tiles:
        outs = {(k, p, q) for k in range(K) for p in rg for q in cg}
        out_tile_max = max(out_tile_max, len(outs))
        foot = [None] * n
        need = outs
        for j in range(n - 1, -1, -1):
            need_in, each = _back(layers[j], need)
            if j == n - 1:
                computed = need
            elif keep:
                computed = need - prev[j + 1]
            else:
                computed = need
            macs[j] += sum(each[e] for e in computed)
            foot[j] = need_in
            need = need_in
        input_reads += len(foot[0] - prev[0])
        for j in range(n):
            largest[j] = max(largest[j], len(foot[j]))
        prev = foot

    glb = architecture["levels"][0]
    b = glb.get("multiple_buffering", 1)
    weights = 0
    for wl in layers:
        d = wl["dims"]
        count = d["C"] * d["R"] * d["S"] * (d["K"] if wl["shape"] == "conv" else 1)
        weights += _nbytes(count, wl["bits"]["W"])
    room = (weights + b * _nbytes(largest[0], layers[0]["bits"]["I"])
            + sum(_nbytes(largest[j], layers[j]["bits"]["I"]) for j in range(1, n))
            + b * _nbytes(out_tile_max, last["bits"]["O"]))
    return {
        "macs": macs,
        "total_macs": sum(macs),
        "input_read_bytes": _nbytes(input_reads, layers[0]["bits"]["I"]),
        "weight_read_bytes": weights,
        "output_write_bytes": _nbytes(P * Q * K, last["bits"]["O"]),
        "max_input_elements": largest[0],
        "max_intermediate_elements": largest[1:],
        "glb_bytes": room,
        "fits": room <= glb["capacity_bytes"],
    }
