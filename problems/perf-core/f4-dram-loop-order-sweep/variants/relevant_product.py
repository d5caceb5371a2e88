from itertools import permutations

RELEVANT = {"I": "MK", "W": "KN", "O": "MN"}


def _moves(tensor, tile, loops):
    rel = RELEVANT[tensor]
    count = tile[rel[0]] * tile[rel[1]]
    for dim, bound in loops:
        if dim in rel:
            count *= bound
    return count


def dram_loop_order_sweep(gemm: dict, tiling: dict) -> dict:
    tile, bounds = tiling["buffer"], tiling["dram"]
    traffic = {}
    for order in permutations("MNK"):
        loops = [(d, bounds[d]) for d in order]
        writes = _moves("O", tile, loops)
        reads = writes - gemm["M"] * gemm["N"]
        traffic["".join(order)] = _moves("I", tile, loops) + _moves("W", tile, loops) + writes + reads
    best = sorted(traffic.items(), key=lambda kv: (kv[1], kv[0]))[0]
    return {"traffic": traffic, "best_order": best[0], "best_traffic": best[1]}
