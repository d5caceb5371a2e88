"""The best candidate of a stated mapping space of a matrix product on a GLB over DRAM, by DRAM
bytes (closed form, every candidate at once with numpy).

Along each dimension a GLB tile is a contiguous block of indices (the last one ragged), so a
tensor's tile changes at every iteration of the DRAM loops from its first relevant loop with
more than one iteration outwards, and every element of the tensor arrives once per iteration of
the irrelevant loops outside that loop. Outputs leave the GLB and come back the same way: each
return is one partial-sum write-back and one read-back; the last write-back is the complete one.
"""

from __future__ import annotations

import itertools

import numpy as np

FLAGS: dict[str, bool] = {}

DIMS = ("M", "N", "K")
TENSORS = ("I", "W", "O")
RELEVANT = {"I": ("M", "K"), "W": ("K", "N"), "O": ("M", "N")}
ORDERS = sorted(itertools.permutations(DIMS))  # alphabetical, innermost first


def _ceil_div(a, b):
    return -(-a // b)


def _spatial(option):
    s = {d: 1 for d in DIMS}
    for key in ("spatial_x", "spatial_y"):
        for d, f in option.get(key, []):
            s[d] *= int(f)
    return s


def _option_arrays(workload, architecture, space, option):
    dims = {d: int(workload["dims"][d]) for d in DIMS}
    bits = workload["bits"]
    glb = architecture["levels"][0]
    buf = 1 if FLAGS.get("buffering_ignored") else int(glb.get("multiple_buffering", 1))
    s = _spatial(option)
    lists = [np.asarray(space["factors"][d], dtype=np.int64) for d in DIMS]
    grid = np.meshgrid(*lists, indexing="ij")
    f = {d: g.reshape(-1) for d, g in zip(DIMS, grid)}
    ext = {d: np.minimum(dims[d], f[d] * s[d]) for d in DIMS}      # the largest tile along d
    trips = {d: _ceil_div(dims[d], f[d] * s[d]) for d in DIMS}      # DRAM iterations along d
    room = {}
    for t in TENSORS:
        a, b = RELEVANT[t]
        tbits = bits["psum"] if t == "O" and not FLAGS.get("o_room_at_o_bits") else bits[t]
        room[t] = buf * _ceil_div(ext[a] * ext[b] * tbits, 8)
    total = room["I"] + room["W"] + room["O"]
    cap = glb["capacity_bytes"]
    if isinstance(cap, dict):
        fits = np.ones(total.shape, dtype=bool)
        for t in TENSORS:
            fits &= room[t] <= int(cap[t])
    else:
        fits = total <= int(cap)
    if FLAGS.get("padded_ragged"):
        padded = {d: trips[d] * f[d] * s[d] for d in DIMS}
        size = {t: padded[RELEVANT[t][0]] * padded[RELEVANT[t][1]] for t in TENSORS}
    else:
        size = {t: dims[RELEVANT[t][0]] * dims[RELEVANT[t][1]] for t in TENSORS}
    n = len(total)
    dram = np.zeros((n, len(ORDERS)), dtype=np.int64)
    for j, order in enumerate(ORDERS):
        if FLAGS.get("outer_to_inner"):
            order = order[::-1]
        mult = {}
        for t in TENSORS:
            m = np.ones(n, dtype=np.int64)
            started = np.zeros(n, dtype=bool)
            for d in order:
                if FLAGS.get("no_reuse"):
                    if d not in RELEVANT[t]:
                        m = m * trips[d]
                elif d in RELEVANT[t]:
                    started |= True if FLAGS.get("one_iteration_starts") else trips[d] > 1
                else:
                    m = np.where(started, m * trips[d], m)
            mult[t] = m
        obits = bits["O"] if FLAGS.get("psum_at_o_bits") else bits["psum"]
        i_bytes = _ceil_div(size["I"] * mult["I"] * bits["I"], 8)
        w_bytes = _ceil_div(size["W"] * mult["W"] * bits["W"], 8)
        o_complete = _ceil_div(size["O"] * bits["O"], 8)
        partial = size["O"] * (mult["O"] - 1)
        back = size["O"] * mult["O"] if FLAGS.get("first_read_counted") else partial
        dram[:, j] = (i_bytes + w_bytes + o_complete + _ceil_div(partial * obits, 8)
                      + _ceil_div(back * obits, 8))
    return {"f": f, "glb": total, "fits": fits, "dram": dram}


def best_tiling_search(workload, architecture, space):
    per_option = [_option_arrays(workload, architecture, space, o) for o in space["spatial_options"]]
    valid_count = sum(int(a["fits"].sum()) * len(ORDERS) for a in per_option)
    best_bytes = min(int(a["dram"][a["fits"]].min()) for a in per_option if a["fits"].any())
    optimal = sum(int((a["dram"][a["fits"]] == best_bytes).sum()) for a in per_option if a["fits"].any())
    best_key, best = None, {}
    for o, a in enumerate(per_option):
        rows, cols = np.nonzero((a["dram"] == best_bytes) & a["fits"][:, None])
        if len(rows) == 0:
            continue
        # rows are in lexicographic (M, N, K) order, columns in alphabetical order
        glbs = a["glb"][rows]
        if FLAGS.get("ties_skip_glb"):
            k = np.lexsort((cols, rows))[0]
            key = (o,)
        else:
            k = np.lexsort((cols, rows, glbs))[0]
            key = (int(glbs[k]), o)
        if best_key is None or key < best_key:
            best_key = key
            r, c = int(rows[k]), int(cols[k])
            order = list(ORDERS[c])
            best = {"best_spatial": o,
                    "best_factors": {d: int(a["f"][d][r]) for d in DIMS},
                    "best_order": order,
                    "best_dram_bytes": best_bytes,
                    "best_glb_bytes": int(a["glb"][r])}
    best["valid_candidates"] = valid_count
    best["optimal_candidates"] = optimal
    return best
