"""A brute-force simulator of the spec (what a careful engineer would write to check a model):
for every candidate it builds the loop nest, runs every DRAM iteration, enumerates the real MACs
under the GLB in it, materialises the GLB's tiles as sets of tensor elements and counts every
element that crosses DRAM's port. Correct, and hopeless at real sizes.
"""

from __future__ import annotations

import itertools

DIMS = ("M", "N", "K")


def _nbytes(n, bits):
    return -(-n * bits // 8)


def _run(workload, architecture, option, factors, order):
    """(DRAM bytes, GLB bytes, fits) of one candidate."""
    size = workload["dims"]
    bits = workload["bits"]
    glb = architecture["levels"][0]
    buf = glb.get("multiple_buffering", 1)
    spatial = {d: 1 for d in DIMS}
    for key in ("spatial_x", "spatial_y"):
        for d, f in option.get(key, []):
            spatial[d] *= f
    trips = {}
    for d in DIMS:
        t = 1
        while t * factors[d] * spatial[d] < size[d]:
            t += 1
        trips[d] = t
    # the indices of a dimension under one DRAM iteration: every GLB temporal index, then the
    # spatial index inside it (the digits of the index, innermost least significant)
    def under(d, t):
        out = []
        for g in range(factors[d]):
            for s in range(spatial[d]):
                v = (t * factors[d] + g) * spatial[d] + s
                if v < size[d]:
                    out.append(v)
        return out

    held = {"I": set(), "W": set(), "O": set()}
    entered = set()
    done = {}          # MACs added into each output so far
    largest = {"I": 0, "W": 0, "O": 0}
    reads = {"I": 0, "W": 0}
    complete = partial = backs = 0
    k_all = size["K"]
    outer = [order[i] for i in range(len(order) - 1, -1, -1)]  # outermost first
    for idx in itertools.product(*(range(trips[d]) for d in outer)):
        t = dict(zip(outer, idx))
        macs = list(itertools.product(under("M", t["M"]), under("N", t["N"]), under("K", t["K"])))
        tiles = {"I": set(), "W": set(), "O": set()}
        if macs:
            box = {}
            for j, d in enumerate(DIMS):
                vals = [mac[j] for mac in macs]
                box[d] = range(min(vals), max(vals) + 1)
            tiles["I"] = {(m, k) for m in box["M"] for k in box["K"]}
            tiles["W"] = {(k, n) for k in box["K"] for n in box["N"]}
            tiles["O"] = {(m, n) for m in box["M"] for n in box["N"]}
        for x in ("I", "W"):
            reads[x] += len(tiles[x] - held[x])
        for o in held["O"] - tiles["O"]:  # leaving: written back into DRAM
            if done[o] == k_all:
                complete += 1
            else:
                partial += 1
        for o in tiles["O"] - held["O"]:  # arriving: read back unless it is the first entry
            if o in entered:
                backs += 1
            entered.add(o)
            done.setdefault(o, 0)
        for x in held:
            held[x] = tiles[x]
            largest[x] = max(largest[x], len(tiles[x]))
        for m, n, k in macs:
            done[(m, n)] += 1
    for o in held["O"]:
        if done[o] == k_all:
            complete += 1
        else:
            partial += 1
    dram = (_nbytes(reads["I"], bits["I"]) + _nbytes(reads["W"], bits["W"]) + _nbytes(complete, bits["O"])
            + _nbytes(partial, bits["psum"]) + _nbytes(backs, bits["psum"]))
    room = {x: buf * _nbytes(largest[x], bits["psum"] if x == "O" else bits[x]) for x in largest}
    cap = glb["capacity_bytes"]
    if isinstance(cap, dict):
        fits = all(room[x] <= cap[x] for x in room)
    else:
        fits = sum(room.values()) <= cap
    return dram, sum(room.values()), fits


def best_tiling_search(workload, architecture, space):
    found = []
    for o, option in enumerate(space["spatial_options"]):
        for fm, fn, fk in itertools.product(*(space["factors"][d] for d in DIMS)):
            factors = {"M": fm, "N": fn, "K": fk}
            for order in itertools.permutations(DIMS):
                dram, room, fits = _run(workload, architecture, option, factors, list(order))
                if fits:
                    found.append((dram, room, o, (fm, fn, fk), list(order)))
    best = min(found)
    return {"best_spatial": best[2], "best_factors": dict(zip(DIMS, best[3])), "best_order": best[4],
            "best_dram_bytes": best[0], "best_glb_bytes": best[1], "valid_candidates": len(found),
            "optimal_candidates": sum(1 for f in found if f[0] == best[0])}
