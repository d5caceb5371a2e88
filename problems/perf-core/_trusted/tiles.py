"""F3 tile footprint and buffer requirement (Timeloop's "utilized capacity").

A mapping assigns every loop of the workload to a storage level, temporally or spatially. The
tile a level holds (per instance) spans every loop at that level and below, its own temporal and
spatial loops included: the extent of dimension d at level i is the product of the temporal and
spatial factors of d at levels 0..i. A tensor's tile is its projection:

* GEMM ``O[m][n] += I[m][k] * W[k][n]``: I = M x K, W = K x N, O = M x N.
* conv2d ``O[n][k][p][q] += I[n][c][p*stride + r*dil][q*stride + s*dil] * W[k][c][r][s]``:
  W = K C R S, O = N K P Q and I = N C H W where the input rows are the **bounding box**
  ``(P_t - 1) * stride + (R_t - 1) * dil + 1`` (Timeloop's axis-aligned hyper-rectangle); the
  exact footprint counts only the distinct rows ``{p*stride + r*dil}`` and is reported too.

A level stores only the tensors it keeps (the others bypass it). Bytes per tensor are packed and
rounded up; on-chip output tiles are partial sums of ``psum_bits``. Multiple buffering multiplies
the requirement (Timeloop: effective capacity = floor(capacity / multiple_buffering), which is the
same test for integers). A level fits when its requirement is at most its capacity.
"""

from __future__ import annotations

from typing import Any

import numpy as np

TENSORS = ("input", "weight", "output")
GEMM_DIMS = ("M", "N", "K")
CONV_DIMS = ("N", "K", "C", "P", "Q", "R", "S")


def packed_bytes(elements: int, bits: int) -> int:
    return -(-elements * bits // 8)


def cumulative_extents(levels: list[dict[str, Any]], dims: tuple[str, ...]) -> list[dict[str, int]]:
    """Extent of every dimension in the tile of each level (inner to outer)."""
    out = []
    running = dict.fromkeys(dims, 1)
    for level in levels:
        for d in dims:
            running[d] *= level["temporal"].get(d, 1) * level["spatial"].get(d, 1)
        out.append(dict(running))
    return out


def instances(levels: list[dict[str, Any]]) -> list[int]:
    """Instances of each level: the product of the spatial factors of every level above it."""
    out = []
    for i in range(len(levels)):
        n = 1
        for level in levels[i + 1:]:
            for f in level["spatial"].values():
                n *= f
        out.append(n)
    return out


def _requirement(level: dict[str, Any], elements: dict[str, int], bits: dict[str, int]) -> int:
    stored = sum(packed_bytes(elements[t], bits[t]) for t in TENSORS if t in level["keeps"])
    return level["multiple_buffering"] * stored


# ------------------------------------------------------------------------------------------
# GEMM
# ------------------------------------------------------------------------------------------

def gemm_tile_footprint(gemm: dict[str, Any], precision: dict[str, Any],
                        levels: list[dict[str, Any]]) -> dict[str, Any]:
    bits = {"input": precision["input_bits"], "weight": precision["weight_bits"],
            "output": precision["psum_bits"]}
    res: dict[str, list] = {k: [] for k in ("input_tile", "weight_tile", "output_tile", "required_bytes",
                                            "fits", "instances", "total_required_bytes")}
    for level, ext, inst in zip(levels, cumulative_extents(levels, GEMM_DIMS), instances(levels)):
        full = {"input": ext["M"] * ext["K"], "weight": ext["K"] * ext["N"], "output": ext["M"] * ext["N"]}
        kept = {t: full[t] if t in level["keeps"] else 0 for t in TENSORS}
        req = _requirement(level, kept, bits)
        res["input_tile"].append(kept["input"])
        res["weight_tile"].append(kept["weight"])
        res["output_tile"].append(kept["output"])
        res["required_bytes"].append(req)
        res["fits"].append(req <= level["capacity_bytes"])
        res["instances"].append(inst)
        res["total_required_bytes"].append(inst * req)
    return res


# ------------------------------------------------------------------------------------------
# conv2d
# ------------------------------------------------------------------------------------------

def halo_extent(p_tile: int, r_tile: int, stride: int, dilation: int) -> int:
    """Rows of the input bounding box touched by p_tile output rows and r_tile filter rows."""
    return (p_tile - 1) * stride + (r_tile - 1) * dilation + 1


def exact_rows(p_tile: int, r_tile: int, stride: int, dilation: int) -> int:
    """Distinct input rows p*stride + r*dilation, 0 <= p < p_tile, 0 <= r < r_tile."""
    return len({p * stride + r * dilation for p in range(p_tile) for r in range(r_tile)})


def conv_tile_footprint(conv: dict[str, Any], precision: dict[str, Any],
                        levels: list[dict[str, Any]]) -> dict[str, Any]:
    stride, dil = conv["stride"], conv["dilation"]
    bits = {"input": precision["input_bits"], "weight": precision["weight_bits"],
            "output": precision["psum_bits"]}
    res: dict[str, list] = {k: [] for k in ("input_tile", "input_exact", "weight_tile", "output_tile",
                                            "required_bytes", "fits")}
    for level, e in zip(levels, cumulative_extents(levels, CONV_DIMS)):
        keeps = level["keeps"]
        nc = e["N"] * e["C"]
        bbox = nc * halo_extent(e["P"], e["R"], stride, dil) * halo_extent(e["Q"], e["S"], stride, dil)
        exact = nc * exact_rows(e["P"], e["R"], stride, dil) * exact_rows(e["Q"], e["S"], stride, dil)
        tiles = {"input": bbox, "weight": e["K"] * e["C"] * e["R"] * e["S"],
                 "output": e["N"] * e["K"] * e["P"] * e["Q"]}
        kept = {t: tiles[t] if t in keeps else 0 for t in TENSORS}
        req = _requirement(level, kept, bits)
        res["input_tile"].append(kept["input"])
        res["input_exact"].append(exact if "input" in keeps else 0)
        res["weight_tile"].append(kept["weight"])
        res["output_tile"].append(kept["output"])
        res["required_bytes"].append(req)
        res["fits"].append(req <= level["capacity_bytes"])
    return res


# ------------------------------------------------------------------------------------------
# generators
# ------------------------------------------------------------------------------------------

_LEVEL_NAMES = {2: ("RF", "GLB"), 3: ("RF", "L1", "GLB"), 4: ("RF", "L1", "L2", "GLB")}
_BITS = (4, 8, 8, 16)
_PSUM_BITS = (16, 24, 32)


def _keeps(rng: np.random.Generator, outermost: bool) -> list[str]:
    if outermost or rng.random() < 0.45:
        return list(TENSORS)
    while True:
        kept = [t for t in TENSORS if rng.random() < 0.6]
        if kept:
            return kept


def _capacity(rng: np.random.Generator, req: int, single: int, alt: int | None) -> int:
    """A capacity near the trap boundaries: exactly the requirement, one byte short, between the
    single- and multiple-buffered requirement, near an alternative (wrong) requirement, or loose."""
    u = rng.random()
    if u < 0.2:
        cap = req
    elif u < 0.35:
        cap = req - 1
    elif u < 0.55 and single < req:
        cap = int(rng.integers(single, req))
    elif u < 0.7 and alt is not None and alt != req:
        lo, hi = sorted((alt, req))
        cap = int(rng.integers(lo, hi))
    else:
        cap = int(req * float(rng.uniform(0.3, 3.0)))
    return max(1, cap)


def _factor(rng: np.random.Generator, choices: tuple[int, ...], p_one: float) -> int:
    return 1 if rng.random() < p_one else int(rng.choice(choices))


def gen_gemm_tiles(rng: np.random.Generator, max_levels: int = 3, corner: bool = False) -> dict[str, Any]:
    """A GEMM, its per-level factors (spatial fan-out at one or two levels) and capacities drawn
    near the boundaries where the conventions disagree. ``corner`` draws _gemm_tiles_corner instead."""
    if corner:
        return _gemm_tiles_corner(rng, max_levels)
    n_levels = int(rng.integers(2, max_levels + 1))
    names = _LEVEL_NAMES[n_levels]
    levels = []
    spatial_levels = set(rng.choice(np.arange(1, n_levels), size=int(rng.integers(1, min(2, n_levels - 1) + 1)),
                                    replace=False).tolist())
    for i, name in enumerate(names):
        temporal = {d: _factor(rng, (2, 3, 4, 5, 7, 8), 0.35) for d in GEMM_DIMS}
        spatial = {d: 1 for d in GEMM_DIMS}
        if i in spatial_levels:
            for d in rng.choice(GEMM_DIMS, size=int(rng.integers(1, 3)), replace=False).tolist():
                spatial[d] = int(rng.choice((2, 3, 4, 8, 16)))
        levels.append({"name": name, "temporal": temporal, "spatial": spatial,
                       "keeps": _keeps(rng, i == n_levels - 1),
                       "multiple_buffering": int(rng.choice((1, 2, 2)))})
    dram = {d: _factor(rng, (2, 3, 4, 5, 6), 0.3) for d in GEMM_DIMS}
    gemm = {d: dram[d] * int(np.prod([lv["temporal"][d] * lv["spatial"][d] for lv in levels])) for d in GEMM_DIMS}
    precision = {"input_bits": int(rng.choice(_BITS)), "weight_bits": int(rng.choice(_BITS)),
                 "output_bits": int(rng.choice(_BITS)), "psum_bits": int(rng.choice(_PSUM_BITS))}
    for lv in levels:
        lv["capacity_bytes"] = 1
    probe = gemm_tile_footprint(gemm, precision, levels)
    for i, lv in enumerate(levels):
        req = probe["required_bytes"][i]
        single = req // lv["multiple_buffering"]
        # alternative: the same tensors at the final output precision instead of psum_bits
        alt_bits = dict(precision, psum_bits=precision["output_bits"])
        alt = gemm_tile_footprint(gemm, alt_bits, levels)["required_bytes"][i]
        lv["capacity_bytes"] = _capacity(rng, req, single, alt)
    return {"gemm": gemm, "precision": precision, "levels": [_ordered(lv) for lv in levels]}


def _gemm_tiles_corner(rng: np.random.Generator, max_levels: int) -> dict[str, Any]:
    """Corners of the GEMM tile domain: a single level, spatial fan-out at the innermost level,
    levels that keep nothing, sub-byte widths on two tensors of one level, and (half the time)
    factors up to 4096 whose tiles and bytes pass 2^31 and 2^53."""
    n_levels = 1 if rng.random() < 0.3 else int(rng.integers(2, max_levels + 1))
    large = rng.random() < 0.5
    levels = []
    for i in range(n_levels):
        temporal = {d: (_factor(rng, (2, 3, 5, 7), 0.3) if not large else int(rng.integers(1, 4097)))
                    for d in GEMM_DIMS}
        spatial = {d: _factor(rng, (2, 3, 4, 8), 0.5) if (i == 0 or rng.random() < 0.5) else 1 for d in GEMM_DIMS}
        keeps = [] if i < n_levels - 1 and rng.random() < 0.25 else _keeps(rng, rng.random() < 0.3)
        levels.append({"name": f"L{i}", "temporal": temporal, "spatial": spatial, "keeps": keeps,
                       "multiple_buffering": int(rng.choice((1, 2)))})
    dram = {d: _factor(rng, (2, 3, 5), 0.5) for d in GEMM_DIMS}
    gemm = {d: dram[d] * int(np.prod([lv["temporal"][d] * lv["spatial"][d] for lv in levels], dtype=object))
            for d in GEMM_DIMS}
    precision = {"input_bits": int(rng.choice((1, 3, 4, 5, 8))), "weight_bits": int(rng.choice((1, 3, 4, 5, 8))),
                 "output_bits": int(rng.choice(_BITS)), "psum_bits": int(rng.choice((12, 20, 24, 31, 32)))}
    for lv in levels:
        lv["capacity_bytes"] = 1
    probe = gemm_tile_footprint(gemm, precision, levels)
    for i, lv in enumerate(levels):
        req = probe["required_bytes"][i]
        single = req // lv["multiple_buffering"]
        options = [req, req - 1, single, 2 * req, req // 3] if single < req else [req, req - 1, 2 * req, req // 3]
        lv["capacity_bytes"] = max(1, int(options[int(rng.integers(len(options)))]))
    return {"gemm": gemm, "precision": precision, "levels": [_ordered(lv) for lv in levels]}


def _ordered(level: dict[str, Any]) -> dict[str, Any]:
    return {k: level[k] for k in ("name", "capacity_bytes", "multiple_buffering", "keeps", "temporal", "spatial")}


def gen_conv_tiles(rng: np.random.Generator, max_levels: int = 3, corner: bool = False) -> dict[str, Any]:
    """A conv layer with stride and dilation (often sharing a factor, so the exact footprint has
    holes and overlaps), filter rows split across levels, and capacities near the boundaries.
    ``corner`` draws _conv_tiles_corner instead."""
    if corner:
        return _conv_tiles_corner(rng, max_levels)
    n_levels = int(rng.integers(2, max_levels + 1))
    names = _LEVEL_NAMES[n_levels]
    stride = int(rng.choice((1, 2, 2, 3, 4)))
    dilation = int(rng.choice((1, 1, 2, 2, 3)))
    sizes = {"R": int(rng.choice((1, 2, 3, 3, 4, 5, 6, 7))), "S": 0}
    sizes["S"] = sizes["R"] if rng.random() < 0.7 else int(rng.choice((1, 2, 3, 5)))
    levels = [{"name": n, "temporal": dict.fromkeys(CONV_DIMS, 1), "spatial": dict.fromkeys(CONV_DIMS, 1)}
              for n in names]
    # a filter dimension lives at one level (or at DRAM: tile 1 on chip); 4 and 6 may be split
    # over two adjacent levels
    for d in ("R", "S"):
        where = int(rng.integers(0, n_levels + 1))
        if where < n_levels:
            size = sizes[d]
            if size in (4, 6) and where + 1 < n_levels and rng.random() < 0.6:
                levels[where]["temporal"][d] = 2
                levels[where + 1]["temporal"][d] = size // 2
            else:
                levels[where]["temporal"][d] = size
    dram = {"R": 1, "S": 1}
    for d in ("R", "S"):
        on_chip = int(np.prod([lv["temporal"][d] for lv in levels]))
        dram[d] = sizes[d] // on_chip
    for lv in levels:
        for d in ("N", "K", "C", "P", "Q"):
            choices = (2,) if d == "N" else (2, 3, 4, 5, 7)
            lv["temporal"][d] = _factor(rng, choices, 0.8 if d == "N" else 0.4)
    spatial_level = int(rng.integers(1, n_levels))
    for d in rng.choice(("K", "C", "P", "Q"), size=int(rng.integers(1, 3)), replace=False).tolist():
        levels[spatial_level]["spatial"][d] = int(rng.choice((2, 3, 4, 8)))
    for d in ("N", "K", "C", "P", "Q"):
        dram[d] = _factor(rng, (2, 3, 4), 0.4)
    extent = {d: dram[d] * int(np.prod([lv["temporal"][d] * lv["spatial"][d] for lv in levels]))
              for d in CONV_DIMS}
    conv = {**extent, "stride": stride, "dilation": dilation}
    precision = {"input_bits": int(rng.choice(_BITS)), "weight_bits": int(rng.choice(_BITS)),
                 "psum_bits": int(rng.choice(_PSUM_BITS))}
    for i, lv in enumerate(levels):
        lv["keeps"] = _keeps(rng, i == n_levels - 1)
        lv["multiple_buffering"] = int(rng.choice((1, 2, 2)))
        lv["capacity_bytes"] = 1
    probe = conv_tile_footprint(conv, precision, levels)
    for i, lv in enumerate(levels):
        req = probe["required_bytes"][i]
        single = req // lv["multiple_buffering"]
        alt = None
        if "input" in lv["keeps"]:
            # alternative: the exact footprint instead of the bounding box
            diff = packed_bytes(probe["input_tile"][i], precision["input_bits"]) - packed_bytes(
                probe["input_exact"][i], precision["input_bits"])
            alt = req - lv["multiple_buffering"] * diff
        lv["capacity_bytes"] = _capacity(rng, req, single, alt)
    return {"conv": conv, "precision": precision, "levels": [_ordered(lv) for lv in levels]}


def _conv_tiles_corner(rng: np.random.Generator, max_levels: int) -> dict[str, Any]:
    """Corners of the conv tile domain: a single level, spatial fan-out at the innermost level,
    levels that keep nothing, sub-byte widths on two tensors of one level, stride and dilation
    unequal and above 1 (holes and repeated rows), and (half the time) N, K and C factors up to
    4096 whose tiles and bytes pass 2^31 and 2^53."""
    n_levels = 1 if rng.random() < 0.3 else int(rng.integers(2, max_levels + 1))
    large = rng.random() < 0.5
    stride, dilation = (int(x) for x in rng.choice((2, 3, 4, 5, 6), size=2, replace=False))
    levels = []
    for i in range(n_levels):
        temporal, spatial = {}, {}
        for d in CONV_DIMS:
            if d in ("N", "K", "C"):
                temporal[d] = int(rng.integers(1, 4097)) if large else _factor(rng, (2, 3, 4), 0.5)
                spatial[d] = _factor(rng, (2, 3, 4, 8), 0.6) if (i == 0 or rng.random() < 0.5) else 1
            else:
                temporal[d] = _factor(rng, (2, 3, 4, 5), 0.3)
                spatial[d] = _factor(rng, (2, 3), 0.7) if i == 0 else 1
        keeps = [] if i < n_levels - 1 and rng.random() < 0.25 else _keeps(rng, rng.random() < 0.3)
        levels.append({"name": f"L{i}", "temporal": temporal, "spatial": spatial, "keeps": keeps,
                       "multiple_buffering": int(rng.choice((1, 2)))})
    conv = {d: _factor(rng, (2, 3), 0.5) * int(np.prod([lv["temporal"][d] * lv["spatial"][d] for lv in levels],
                                                       dtype=object)) for d in CONV_DIMS}
    conv.update(stride=stride, dilation=dilation)
    precision = {"input_bits": int(rng.choice((1, 3, 4, 5, 8))), "weight_bits": int(rng.choice((1, 3, 4, 5, 8))),
                 "psum_bits": int(rng.choice((12, 20, 24, 31, 32)))}
    for lv in levels:
        lv["capacity_bytes"] = 1
    probe = conv_tile_footprint(conv, precision, levels)
    for i, lv in enumerate(levels):
        req = probe["required_bytes"][i]
        single = req // lv["multiple_buffering"]
        options = [req, req - 1, single, 2 * req, req // 3] if single < req else [req, req - 1, 2 * req, req // 3]
        lv["capacity_bytes"] = max(1, int(options[int(rng.integers(len(options)))]))
    return {"conv": conv, "precision": precision, "levels": [_ordered(lv) for lv in levels]}


REFERENCES = {
    "tiles.gemm_tile_footprint": gemm_tile_footprint,
    "tiles.conv_tile_footprint": conv_tile_footprint,
}

GENERATORS = {
    "tiles.gemm": gen_gemm_tiles,
    "tiles.conv": gen_conv_tiles,
}
