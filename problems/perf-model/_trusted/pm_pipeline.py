"""F17 (perf-model tier): a layer streamed through a multiple-buffered global buffer, iteration
by iteration of the DRAM level's loops (our own model; problems/perf-model/f17-double-buffered-
pipeline/spec.md states every rule).

The global buffer (GLB) is the level just inside DRAM and holds I, W and O. DRAM's temporal loops
(at most one with a factor above 1 per dimension, no spatial loops) step through iterations
t = 0 .. T-1, innermost loop fastest. Per iteration:

* the load: the elements of the GLB's I and W tiles that the previous iteration's tiles do not
  have (all of them at t = 0), plus, when the output tile changes to one that was held before, its
  partial sums read back (psum bits); each tensor's part rounded up to whole bytes on its own;
* the compute: the time steps of the loops below DRAM in which some MAC is real (one cycle each);
* the write-back: when the output tile changes after t (or t is the last iteration), the whole
  tile leaves: complete outputs (O bits) if it never comes back, partial sums (psum bits) else.

Output tiles are aligned blocks (one DRAM loop per dimension), so an output tile is either the
previous one or disjoint from it; input windows overlap partially (halo rows stay).

The pipeline: one DRAM port, one transfer at a time, a transfer of B > 0 bytes takes
ceil(B / bytes_per_cycle) cycles, zero bytes take no time and no port. The GLB has b slots; the
load of t waits for: the load of t-1, the release of iteration t-b's slot (the end of its
write-back, or of its compute when it writes nothing back), and the write-back of the partial
sums it reads back. Compute of t starts when its load is done and compute t-1 is done; its
write-back is ready when its compute ends. When the port is free it serves, of the next load and
the next write-back, the one that became ready first (write-back first on a tie).

Per-iteration quantities are computed with numpy over all T iterations at once (tile boxes per
axis and their overlaps with the previous iteration's); the pipeline is an O(T) event schedule.
"""

from __future__ import annotations

from math import prod
from typing import Any, Sequence

import numpy as np

from reference_models import pm_core, pm_shapes

from . import pm_draw

TENSORS = ("I", "W", "O")
BUFFERINGS = (1, 2, 3)


# ------------------------------------------------------------------------------------------
# per-iteration traffic and compute
# ------------------------------------------------------------------------------------------

def _check(nest: pm_core.Nest, architecture: dict[str, Any]) -> tuple[int, int]:
    if nest.depth < 2:
        raise ValueError("the architecture needs a global buffer inside DRAM")
    glb, dram = nest.depth - 2, nest.depth - 1
    if set(nest.keeps[glb]) != set(TENSORS):
        raise ValueError("the global buffer (the level inside DRAM) must hold I, W and O")
    if nest.fanout[dram] != (1, 1):
        raise ValueError("DRAM has fanout [1, 1]")
    seen = set()
    for lp in nest.loops:
        if lp.level == dram:
            if lp.spatial:
                raise ValueError("DRAM has no spatial loops")
            if lp.factor > 1:
                if lp.dim in seen:
                    raise ValueError(f"DRAM has two loops of {lp.dim} with a factor above 1")
                seen.add(lp.dim)
    levels = architecture["levels"]
    b = levels[glb].get("multiple_buffering", 1)
    if b not in BUFFERINGS:
        raise ValueError("the global buffer's multiple_buffering must be 1, 2 or 3")
    bpc = levels[dram].get("bytes_per_cycle")
    if isinstance(bpc, bool) or not isinstance(bpc, int) or bpc < 1:
        raise ValueError("DRAM needs an integer bytes_per_cycle >= 1")
    return b, bpc


def _ceil_div(a: np.ndarray, b: int) -> np.ndarray:
    return -(-a // b)


def iteration_table(workload: dict[str, Any], architecture: dict[str, Any],
                    mapping: dict[str, Any]) -> dict[str, Any]:
    """Per DRAM iteration: load bytes, compute cycles, write-back bytes, the iteration after
    which the partial sums a load reads back were written (-1: none), plus element counts."""
    nest = pm_core.parse(workload, architecture, mapping)
    b, bpc = _check(nest, architecture)
    glb, dram = nest.depth - 2, nest.depth - 1
    outer = [(i, lp) for i, lp in enumerate(nest.loops) if lp.level == dram]
    T = prod(lp.factor for _, lp in outer)
    t = np.arange(T, dtype=np.int64)
    base = {d: np.zeros(T, dtype=np.int64) for d in nest.dims}
    digit = {d: np.zeros(T, dtype=np.int64) for d in nest.dims}
    period = 1
    for i, lp in outer:  # innermost first: the innermost loop changes fastest
        dg = (t // period) % lp.factor
        period *= lp.factor
        base[lp.dim] += dg * nest.strides[i]
        if lp.factor > 1:
            digit[lp.dim] = dg

    def ranges(d: str) -> tuple[np.ndarray, np.ndarray]:
        ext = nest.extent(d, glb)
        return base[d], np.minimum(base[d] + ext, nest.bounds[d]) - 1

    def axis_box(ax: tuple) -> tuple[np.ndarray, np.ndarray]:
        if ax[0] == "id":
            return ranges(ax[1])
        _, pd, rd, st, dil, pad, size = ax
        plo, phi = ranges(pd)
        rlo, rhi = ranges(rd)
        return np.maximum(0, plo * st + rlo * dil - pad), np.minimum(size - 1, phi * st + rhi * dil - pad)

    elems: dict[str, np.ndarray] = {}
    fills: dict[str, np.ndarray] = {}
    for tensor in TENSORS:
        size = np.ones(T, dtype=np.int64)
        keep = np.ones(T, dtype=np.int64)
        for ax in nest.axes[tensor]:
            lo, hi = axis_box(ax)
            size *= np.maximum(0, hi - lo + 1)
            ov = np.zeros(T, dtype=np.int64)
            ov[1:] = np.maximum(0, np.minimum(hi[1:], hi[:-1]) - np.maximum(lo[1:], lo[:-1]) + 1)
            keep *= ov
        elems[tensor] = size
        fills[tensor] = size - keep

    # outputs: the tile is named by the DRAM digits of the dimensions relevant to O
    rel = sorted(nest.relevant("O"))
    key = np.zeros(T, dtype=np.int64)
    for d in rel:
        f = max([lp.factor for _, lp in outer if lp.dim == d] or [1])
        key = key * f + digit[d]
    changed_in = np.ones(T, dtype=bool)  # the tile of t differs from that of t-1 (t = 0: enters)
    changed_in[1:] = key[1:] != key[:-1]
    leaves = np.ones(T, dtype=bool)  # the tile of t leaves after t
    leaves[:-1] = changed_in[1:]
    uniq, inv = np.unique(key, return_inverse=True)
    first = np.full(len(uniq), T, dtype=np.int64)
    np.minimum.at(first, inv, t)
    last = np.full(len(uniq), -1, dtype=np.int64)
    np.maximum.at(last, inv, t)
    readback = changed_in & (t > first[inv])
    complete = leaves & (t == last[inv])
    partial = leaves & ~complete
    # the iteration after which a read-back tile last left: the previous visit's last iteration
    prev_leave = np.full(T, -1, dtype=np.int64)
    last_seen = {}
    leave_idx = np.flatnonzero(leaves)
    rb_idx = set(np.flatnonzero(readback).tolist())
    leave_set = set(leave_idx.tolist())
    if rb_idx:
        for i in range(T):  # only iterations that enter or leave matter; T is moderate
            k = int(key[i])
            if i in rb_idx:
                prev_leave[i] = last_seen[k]
            if i in leave_set:
                last_seen[k] = i

    bits = nest.bits
    o_el = elems["O"]
    load_bytes = (_ceil_div(fills["I"] * bits["I"], 8) + _ceil_div(fills["W"] * bits["W"], 8)
                  + _ceil_div(np.where(readback, o_el, 0) * bits["psum"], 8))
    store_bytes = (_ceil_div(np.where(complete, o_el, 0) * bits["O"], 8)
                   + _ceil_div(np.where(partial, o_el, 0) * bits["psum"], 8))

    # compute: real time steps of the loops below DRAM
    steps = np.ones(T, dtype=np.int64)
    for d in nest.dims:
        offs = np.zeros(1, dtype=np.int64)
        for i, lp in enumerate(nest.loops):
            if lp.dim == d and lp.level < dram and not lp.spatial:
                offs = (offs[:, None] + np.arange(lp.factor, dtype=np.int64)[None, :] * nest.strides[i]).ravel()
        offs = np.sort(offs)
        steps *= np.searchsorted(offs, nest.bounds[d] - base[d], side="left")
    return {"T": T, "buffering": b, "bytes_per_cycle": bpc, "load_bytes": load_bytes,
            "store_bytes": store_bytes, "compute": steps, "hazard": prev_leave,
            "fills": fills, "elems": elems, "readback": np.where(readback, o_el, 0),
            "complete": np.where(complete, o_el, 0), "partial": np.where(partial, o_el, 0)}


# ------------------------------------------------------------------------------------------
# the pipeline
# ------------------------------------------------------------------------------------------

def schedule(load_cyc: Sequence[int], comp: Sequence[int], store_cyc: Sequence[int],
             hazard: Sequence[int], b: int) -> dict[str, list[int]]:
    """Event schedule of loads, computes and write-backs on one port (cycles per transfer)."""
    T = len(comp)
    le, cs, ce, se = [0] * T, [0] * T, [0] * T, [0] * T
    rel = [0] * T
    i = j = 0  # next load, next write-back
    port = 0
    while j < T:
        # the next load, if its conditions are known
        r_load = None
        if i < T:
            ok = True
            r = le[i - 1] if i else 0
            if i >= b:
                if j > i - b:
                    r = max(r, rel[i - b])
                else:
                    ok = False
            h = hazard[i]
            if h >= 0:
                if j > h:
                    r = max(r, se[h])
                else:
                    ok = False
            if ok:
                r_load = r
        if r_load is not None and load_cyc[i] == 0:
            le[i] = r_load
            cs[i] = max(le[i], ce[i - 1] if i else 0)
            ce[i] = cs[i] + comp[i]
            i += 1
            continue
        if j < i and store_cyc[j] == 0:
            se[j] = ce[j]
            rel[j] = ce[j]
            j += 1
            continue
        r_store = ce[j] if j < i else None
        if r_load is not None and (r_store is None or r_load < r_store):
            start = max(port, r_load)
            le[i] = port = start + load_cyc[i]
            cs[i] = max(le[i], ce[i - 1] if i else 0)
            ce[i] = cs[i] + comp[i]
            i += 1
        else:
            assert r_store is not None
            start = max(port, r_store)
            se[j] = port = start + store_cyc[j]
            rel[j] = se[j]
            j += 1
    return {"load_end": le, "compute_start": cs, "compute_end": ce, "store_end": se}


def pipeline(workload: dict[str, Any], architecture: dict[str, Any], mapping: dict[str, Any]) -> dict[str, Any]:
    tab = iteration_table(workload, architecture, mapping)
    bpc = tab["bytes_per_cycle"]
    load_cyc = _ceil_div(tab["load_bytes"], bpc).tolist()
    store_cyc = _ceil_div(tab["store_bytes"], bpc).tolist()
    comp = tab["compute"].tolist()
    hazard = tab["hazard"].tolist()
    by_b = {}
    main = None
    for b in BUFFERINGS:
        s = schedule(load_cyc, comp, store_cyc, hazard, b)
        by_b[str(b)] = int(s["store_end"][-1])
        if b == tab["buffering"]:
            main = s
    assert main is not None
    total_compute = int(sum(comp))
    ce, cs = main["compute_end"], main["compute_start"]
    stalled = sum(1 for t in range(len(comp)) if cs[t] > (ce[t - 1] if t else 0))
    return {
        "read_bytes": int(tab["load_bytes"].sum()),
        "write_bytes": int(tab["store_bytes"].sum()),
        "compute_cycles": total_compute,
        "cycles": by_b[str(tab["buffering"])],
        "compute_idle_cycles": int(ce[-1]) - total_compute,
        "stalled_iterations": int(stalled),
        "cycles_by_buffering": by_b,
    }


# ------------------------------------------------------------------------------------------
# generators
# ------------------------------------------------------------------------------------------

def _pick(rng: Any, values: Sequence[Any]) -> Any:
    return values[int(rng.integers(0, len(values)))]


def _small_arch(rng: Any) -> dict[str, Any]:
    depth = int(_pick(rng, (2, 3, 3)))
    levels = []
    if depth == 3:
        levels.append({"name": "RF", "capacity_bytes": {"I": 16, "W": 16, "O": 16}, "fanout": [1, 1]})
    fan = [int(rng.integers(1, 4)), int(rng.integers(1, 3))]
    levels.append({"name": "GLB", "capacity_bytes": 4096, "fanout": fan,
                   "multiple_buffering": int(rng.integers(1, 4))})
    levels.append({"name": "DRAM", "capacity_bytes": None, "fanout": [1, 1],
                   "bytes_per_cycle": int(_pick(rng, (1, 2, 3, 4, 6, 8)))})
    return {"name": f"small-{depth}-level", "levels": levels}


def _dram_loops(mapping: dict[str, Any]) -> list[list[Any]]:
    return mapping["levels"][-1]["temporal"]


def _iterations(mapping: dict[str, Any]) -> int:
    return prod(f for _, f in _dram_loops(mapping))


def _padded(mapping: dict[str, Any]) -> int:
    out = 1
    for lv in mapping["levels"]:
        for k in ("temporal", "spatial_x", "spatial_y"):
            for _, f in lv.get(k, []):
                out *= f
    return out


def _no_glb_bypass(bypass: list[list[str]]) -> list[list[str]]:
    out = [list(b) for b in bypass]
    out[-2] = []
    return out


def gen_pipeline(rng: Any, real: bool = False, large: bool = False) -> dict[str, Any]:
    """``large`` (with ``real``): Llama prefill projections behind a DRAM port of one byte a
    cycle, redrawn until some count of the answer reaches 2^31."""
    if real and large:
        case: dict[str, Any] = {}
        for _ in range(200):
            case = _real_case(rng, ("llama-prefill",))
            case["architecture"]["levels"][-1]["bytes_per_cycle"] = 1
            out = pipeline(**case)
            if max([out["read_bytes"], out["write_bytes"], *out["cycles_by_buffering"].values()]) >= 1 << 31:
                break
        return case
    if real:
        return _real_case(rng)
    while True:
        k = rng.random()
        wl = (pm_draw.small_conv(rng, "conv", max_pq=6, max_c=3, max_k=3) if k < 0.45 else
              pm_draw.small_conv(rng, "depthwise", max_pq=6, max_c=3) if k < 0.6 else pm_draw.small_gemm(rng, 9))
        arch = _small_arch(rng)
        bypass = _no_glb_bypass(pm_draw.draw_bypass(rng, arch, 0.3))
        mapping = pm_draw.draw_mapping(rng, wl, arch, bypass, imperfect_p=0.35, spatial_p=0.5, temporal_p=0.5)
        T = _iterations(mapping)
        if 2 <= T <= 40 and _padded(mapping) <= 2500:
            return {"workload": wl, "architecture": arch, "mapping": mapping}


REAL_GROUPS = ("resnet50", "mobilenetv2-pw", "mobilenetv2-dw", "bert-base", "llama-prefill")
REAL_ARCHS = ("eyeriss-like", "simba-like", "nvdla-like", "tpu-like")


def real_architecture(name: str, b: int) -> dict[str, Any]:
    """A named architecture of pm_shapes with the GLB's multiple buffering set to ``b``. The
    tpu-like unified buffer gets a 256 KiB W partition (TPU v1's weight FIFO: four 64 KiB tiles)
    so that the buffer inside DRAM holds all three tensors."""
    arch = pm_shapes.architecture(name)
    glb = arch["levels"][-2]
    if isinstance(glb["capacity_bytes"], dict) and "W" not in glb["capacity_bytes"]:
        glb["capacity_bytes"]["W"] = 262144
    glb["multiple_buffering"] = b
    return arch


def _real_case(rng: Any, groups: Sequence[str] = REAL_GROUPS) -> dict[str, Any]:
    while True:
        wl = pm_draw.real_layer(rng, groups)
        if wl["shape"] == "depthwise":
            wl["dims"]["N"] = int(_pick(rng, (2, 4)))
            wl["name"] += f".batch{wl['dims']['N']}"
        name = str(_pick(rng, REAL_ARCHS))
        arch = real_architecture(name, int(_pick(rng, BUFFERINGS)))
        depth = len(arch["levels"])
        caps = {3: [2, 16, 0], 4: [2, 8, 16, 0], 5: [1, 8, 8, 16, 0]}[depth]
        opts = dict(imperfect_p=0.35, inner_cap=caps, spatial_p=0.9, fill_spatial=True)
        mapping = pm_draw.fitting_mapping(
            rng, wl, arch, tries=60,
            bypass=lambda r: _no_glb_bypass(pm_draw.draw_bypass(r, arch, 0.2)), **opts)
        T = _iterations(mapping)
        if not (800 <= T <= 12000):
            continue
        if not pm_core.valid(pm_core.parse(wl, arch, mapping)):
            continue
        return {"workload": wl, "architecture": arch, "mapping": mapping}


REFERENCES: dict = {"pm_pipeline.pipeline": pipeline}
GENERATORS: dict = {"pm_pipeline.pipeline": gen_pipeline}

__all__ = ["GENERATORS", "REFERENCES", "gen_pipeline", "iteration_table", "pipeline", "real_architecture", "schedule"]
