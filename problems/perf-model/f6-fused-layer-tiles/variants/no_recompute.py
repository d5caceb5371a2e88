"""WRONG ON PURPOSE (computes every intermediate element once, as if the halos of earlier tiles stayed).

Fused-layer tiles: MACs with recomputation, DRAM bytes and GLB room of a chain of 2 or 3
convolutions executed tile by tile on one global buffer.

Windows are separable, so a tile's footprint of every tensor is all its channels at (needed
rows) x (needed columns). The needed rows of every row group (and the needed columns of every
column group) are found once per axis by walking the chain backwards with exact sets; every sum
over the tile sequence then factors into per-axis sums: a tile shares with its predecessor the
intersection of their row sets times the intersection of their column sets.
"""


def _nbytes(elements, bits):
    return -(-elements * bits // 8)


def _out_channels(wl):
    return wl["dims"]["K"] if wl["shape"] == "conv" else wl["dims"]["C"]


def _macs_per_output(wl):
    d = wl["dims"]
    return d["R"] * d["S"] * (d["C"] if wl["shape"] == "conv" else 1)


def _weights(wl):
    d = wl["dims"]
    return d["R"] * d["S"] * d["C"] * (d["K"] if wl["shape"] == "conv" else 1)


def _axis_sets(layers, axis, size):
    """Per group of output positions along one axis (0 rows, 1 columns) of the last layer: the
    exact set of positions needed of the input of every layer (index j: input of layer j)."""
    out_size = layers[-1]["dims"]["PQ"[axis]]
    win = "RS"[axis]
    groups = []
    for lo in range(0, out_size, size):
        cur = set(range(lo, min(lo + size, out_size)))
        sets = []
        for wl in reversed(layers):
            st, dil, pad = wl["stride"][axis], wl["dilation"][axis], wl["padding"][axis]
            n_in = wl["input_hw"][axis]
            taps = [r * dil - pad for r in range(wl["dims"][win])]
            cur = {x for x in (o * st + t for o in cur for t in taps) if 0 <= x < n_in}
            sets.append(frozenset(cur))
        sets.reverse()
        groups.append(sets)
    return groups


def fused_layer_tiles(layers, architecture, schedule):
    n = len(layers)
    tp, tq = schedule["tile"]["P"], schedule["tile"]["Q"]
    rows = _axis_sets(layers, 0, tp)
    cols = _axis_sets(layers, 1, tq)
    inner_is_q = schedule["order"][0] == "Q"
    outer, inner = (rows, cols) if inner_is_q else (cols, rows)
    chans = [wl["dims"]["C"] for wl in layers]

    total, shared, largest = [0] * n, [0] * n, [0] * n
    for j in range(n):
        o_sizes = [len(t[j]) for t in outer]
        i_sizes = [len(t[j]) for t in inner]
        total[j] = sum(o_sizes) * sum(i_sizes)
        largest[j] = max(o_sizes) * max(i_sizes)
        i_pairs = sum(len(inner[k][j] & inner[k - 1][j]) for k in range(1, len(inner)))
        wrap = len(inner[0][j] & inner[-1][j])
        o_pairs = sum(len(outer[k][j] & outer[k - 1][j]) for k in range(1, len(outer)))
        shared[j] = sum(o_sizes) * i_pairs + o_pairs * wrap

    input_elements = (total[0] - shared[0]) * chans[0]
    macs = []
    for j in range(n - 1):
        computed = (len(frozenset().union(*(t[j + 1] for t in rows)))
                    * len(frozenset().union(*(t[j + 1] for t in cols))))
        macs.append(computed * chans[j + 1] * _macs_per_output(layers[j]))
    last = layers[-1]
    final = last["dims"]["P"] * last["dims"]["Q"] * _out_channels(last)
    macs.append(final * _macs_per_output(last))

    glb = architecture["levels"][0]
    b = glb.get("multiple_buffering", 1)
    weight_bytes = sum(_nbytes(_weights(wl), wl["bits"]["W"]) for wl in layers)
    max_input = largest[0] * chans[0]
    max_inter = [largest[j] * chans[j] for j in range(1, n)]
    out_tile = min(tp, last["dims"]["P"]) * min(tq, last["dims"]["Q"]) * _out_channels(last)
    need = (weight_bytes + b * _nbytes(max_input, layers[0]["bits"]["I"])
            + sum(_nbytes(e, layers[j + 1]["bits"]["I"]) for j, e in enumerate(max_inter))
            + b * _nbytes(out_tile, last["bits"]["O"]))
    return {
        "macs": macs,
        "total_macs": sum(macs),
        "input_read_bytes": _nbytes(input_elements, layers[0]["bits"]["I"]),
        "weight_read_bytes": weight_bytes,
        "output_write_bytes": _nbytes(final, last["bits"]["O"]),
        "max_input_elements": max_input,
        "max_intermediate_elements": max_inter,
        "glb_bytes": need,
        "fits": need <= glb["capacity_bytes"],
    }
