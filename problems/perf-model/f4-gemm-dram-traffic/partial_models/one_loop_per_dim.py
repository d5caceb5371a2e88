# The stationarity closed form: a tensor's tile changes whenever a DRAM loop over one of its
# dimensions advances, so it is re-read once per iteration of the DRAM loops over its other
# dimensions that sit outside its innermost moving loop. Every DRAM iteration is taken to be real
# work: right when each dimension has at most one loop per level (ragged tiles included), wrong
# when a dimension's DRAM loops overshoot its size and leave iterations with nothing to do.
from math import prod

RELEVANT = {"I": ("M", "K"), "W": ("K", "N"), "O": ("M", "N")}


def _refetches(tensor, dram):
    moving = [i for i, (d, f) in enumerate(dram) if d in RELEVANT[tensor] and f > 1]
    if not moving:
        return 1
    return prod(f for d, f in dram[moving[0] + 1:] if d not in RELEVANT[tensor])


def gemm_dram_traffic(workload, architecture, mapping):
    dims = workload["dims"]
    dram = [(d, f) for d, f in mapping["levels"][1]["temporal"]]
    size = {t: dims[a] * dims[b] for t, (a, b) in RELEVANT.items()}
    updates = size["O"] * _refetches("O", dram)
    return {"I_reads": size["I"] * _refetches("I", dram), "W_reads": size["W"] * _refetches("W", dram),
            "O_updates": updates, "O_reads": updates - size["O"]}
