"""perf-model references and generators: buffer requirements (F3) and mapping ranking and
selection (F16), in the format of problems/perf-model/FORMAT.md.

Every count comes from :mod:`reference_models.pm_core` (closed forms; nothing here walks the
loop nest or the tensors). A candidate is a mapping dict; a list of candidates shares one
workload and one architecture.

* F3: the room each on-chip level reserves (:func:`ref_buffer_requirement`), the largest factor
  of one loop that still fits (:func:`ref_largest_fitting_tile`), which candidates are valid and
  why not (:func:`ref_mapping_validity`).
* F16: candidates ranked by off-chip bytes, energy, latency and energy-delay product (invalid,
  over-capacity candidates last by index, ties to the lower index), and the best ordering of the
  outermost level's loops (:func:`ref_best_dram_order`).

Each generator draws a small instance (a brute-force simulation of every candidate finishes) by
default and a real one (a named real layer on a named real architecture) with ``real=True``.
Energies are multiples of 1/16 pJ, so every energy sum is exact in floating point whatever the
order of the additions, and ties between candidates are exact.
"""

from __future__ import annotations

import itertools
from math import prod
from typing import Any, Callable, Sequence

from reference_models import pm_core, pm_shapes

from . import pm_draw

TENSORS = ("I", "W", "O")
WINDOW_DIMS = ("P", "Q", "R", "S")


# ------------------------------------------------------------------------------------------
# shared pieces
# ------------------------------------------------------------------------------------------

def _nbytes(elements: int, bits: int) -> int:
    return -(-elements * bits // 8)


def _used_instances(nest: pm_core.Nest, level: int) -> int:
    """Instances of ``level`` under which at least one real MAC runs during the schedule."""
    return prod(pm_core._valid_instances(nest, d, level) for d in nest.dims)


def _requirement(nest: pm_core.Nest) -> list[dict[str, Any]]:
    """pm_core.buffer_requirement for the on-chip levels (the outermost one always fits)."""
    return pm_core.buffer_requirement(nest)[:-1]


def _rank(metric: Sequence[Any], valid: Sequence[bool]) -> list[int]:
    """Valid candidates by ascending metric (ties: lower index), then the invalid ones by index."""
    good = sorted((i for i, ok in enumerate(valid) if ok), key=lambda i: (metric[i], i))
    return good + [i for i, ok in enumerate(valid) if not ok]


def _dram_bytes(nest: pm_core.Nest) -> int:
    t = pm_core.offchip_traffic(nest)
    return t["I_read"] + t["W_read"] + t["O_write"] + t["O_read"]


def _energy(nest: pm_core.Nest, architecture: dict[str, Any], counts=None) -> float:
    """MACs x mac_pj + every byte read (read_pj_per_byte) and written: filled or updated
    (write_pj_per_byte), each stream of each tensor at each level rounded up to a byte."""
    lb = pm_core.level_bytes(nest, counts)
    total = nest.macs * architecture["mac_pj"]
    for arch, row in zip(architecture["levels"], lb):
        for t in TENSORS:
            total += row[t]["reads"] * arch["read_pj_per_byte"]
            total += (row[t]["fills"] + row[t]["updates"]) * arch["write_pj_per_byte"]
    return float(total)


def _latency(nest: pm_core.Nest, architecture: dict[str, Any], counts=None) -> tuple[int, str]:
    """(cycles, bound): the slowest of the MAC units (one time step per cycle) and every port
    with a bytes_per_cycle (all bytes read from or written into the level); ties go to compute,
    then to the innermost level."""
    lb = pm_core.level_bytes(nest, counts)
    best, bound = nest.steps, "compute"
    for arch, row in zip(architecture["levels"], lb):
        bpc = arch.get("bytes_per_cycle")
        if bpc is None:
            continue
        moved = sum(row[t][a] for t in TENSORS for a in ("reads", "fills", "updates"))
        cyc = -(-moved // bpc)
        if cyc > best:
            best, bound = cyc, arch["name"]
    return best, bound


def _strip(arch: dict[str, Any], keep: Sequence[str] = (), top: Sequence[str] = ()) -> dict[str, Any]:
    """The architecture with only the level fields in ``keep`` (besides name, capacity, fanout,
    multiple_buffering) and the architecture fields in ``top``."""
    out: dict[str, Any] = {"name": arch["name"]}
    for k in top:
        out[k] = arch[k]
    out["levels"] = []
    for lv in arch["levels"]:
        entry = {"name": lv["name"], "capacity_bytes": lv["capacity_bytes"], "fanout": list(lv.get("fanout", [1, 1]))}
        if lv.get("multiple_buffering", 1) != 1:
            entry["multiple_buffering"] = lv["multiple_buffering"]
        for k in keep:
            if k in lv:
                entry[k] = lv[k]
        out["levels"].append(entry)
    return out


def _sixteenth(x: float) -> float:
    """x rounded to a multiple of 1/16 (at least 1/16)."""
    return max(1, round(x * 16)) / 16


def _padded(mapping: dict[str, Any]) -> int:
    return prod(f for lv in mapping["levels"] for key in ("temporal", "spatial_x", "spatial_y")
                for _, f in lv.get(key, []))


def _real_bits(rng: Any) -> dict[str, int]:
    """INT8 with 24- or 32-bit accumulators, or FP16 with FP32 accumulators."""
    kind = int(rng.integers(0, 3))
    return [{"I": 8, "W": 8, "O": 8, "psum": 24}, {"I": 8, "W": 8, "O": 8, "psum": 32},
            {"I": 16, "W": 16, "O": 16, "psum": 32}][kind]


def _buffered(rng: Any, arch: dict[str, Any], p: float = 0.6, choices: Sequence[int] = (2,)) -> dict[str, Any]:
    """Give some on-chip levels (those without a multiple buffering yet) double buffering."""
    for lv in arch["levels"][:-1]:
        if "multiple_buffering" not in lv and rng.random() < p:
            lv["multiple_buffering"] = int(pm_draw._pick(rng, choices))
    return arch


_ENERGY_KEYS = ("read_pj_per_byte", "write_pj_per_byte")
REGISTER_BYTES = 4  # a level whose every partition is this small is a register (never multiple-buffered here)


def _real_arch(rng: Any, name: str, workload: dict[str, Any], *, energies: bool = False, bandwidth: bool = False,
               buffer_p: float = 0.5) -> dict[str, Any]:
    """A named real architecture for ``workload``: only the fields the problem uses (energies
    rounded to 1/16 pJ; a port bandwidth only on single-instance levels), double buffering on
    some of its buffers, and registers sized for one value of the layer's precision."""
    src = pm_shapes.architecture(name)
    keep = (_ENERGY_KEYS if energies else ()) + (("bytes_per_cycle",) if bandwidth else ())
    arch = _strip(src, keep, ("mac_pj",) if energies else ())
    if energies:
        arch["mac_pj"] = _sixteenth(arch["mac_pj"])
        for lv in arch["levels"]:
            for k in _ENERGY_KEYS:
                lv[k] = _sixteenth(lv[k])
    for i, lv in enumerate(arch["levels"]):
        inst = prod(x * y for x, y in (tuple(v["fanout"]) for v in arch["levels"][i + 1:]))
        if bandwidth and inst != 1:
            lv.pop("bytes_per_cycle", None)
        cap = lv["capacity_bytes"]
        if isinstance(cap, dict) and all(v <= REGISTER_BYTES for v in cap.values()):
            mb = lv.get("multiple_buffering", 1)
            bits = workload["bits"]
            lv["capacity_bytes"] = {t: max(v, mb * _nbytes(1, bits["psum"] if t == "O" else bits[t]))
                                    for t, v in cap.items()}
        elif i < len(arch["levels"]) - 1 and "multiple_buffering" not in lv and rng.random() < buffer_p:
            lv["multiple_buffering"] = 2
    return arch


def _valid_mapping(wl: dict[str, Any], arch: dict[str, Any], mapping: dict[str, Any]) -> bool:
    return pm_core.valid(pm_core.parse(wl, arch, mapping))


def _with_noop(rng: Any, mapping: dict[str, Any], dims: Sequence[str]) -> dict[str, Any]:
    """A copy of ``mapping`` with one factor-1 loop inserted (it never advances: every count is
    the same), used to make exact ties between candidates."""
    out = {"levels": [dict(lv, temporal=[list(x) for x in lv.get("temporal", [])]) for lv in mapping["levels"]]}
    lv = out["levels"][int(rng.integers(0, len(out["levels"])))]
    lv["temporal"].insert(int(rng.integers(0, len(lv["temporal"]) + 1)), [str(pm_draw._pick(rng, dims)), 1])
    return out


def _candidates(rng: Any, wl: dict[str, Any], arch: dict[str, Any], count: int, n_invalid: int | None, *,
                limit: int | None = None, tie_p: float = 0.4, bypass_p: float = 0.2,
                inner_cap: Sequence[int] | None = None, big_cap: Sequence[int] | None = None,
                **kw: Any) -> list[dict[str, Any]]:
    """``count`` distinct candidate mappings in random order, possibly with one exact tie.

    ``n_invalid``: how many are over some level's capacity (as far as the draws allow; drawn
    with the larger ``big_cap`` on inner factors); None: any (small instances, whose capacities
    are set afterwards). ``limit`` bounds the padded iteration space of each candidate."""
    dims = pm_core.SHAPES[wl["shape"]]
    valid: list[dict[str, Any]] = []
    invalid: list[dict[str, Any]] = []
    seen: set[str] = set()
    want_valid = count - (n_invalid or 0)
    for attempt in range(3000):
        need_v = len(valid) < want_valid
        need_i = n_invalid is not None and len(invalid) < n_invalid
        if not need_v and not need_i:
            break
        use_big = need_i and (not need_v or attempt % 2 == 1)
        b = pm_draw.draw_bypass(rng, arch, bypass_p)
        m = pm_draw.draw_mapping(rng, wl, arch, b, inner_cap=big_cap if use_big else inner_cap, **kw)
        key = repr(m)
        if (limit is not None and _padded(m) > limit) or key in seen:
            continue
        ok = True if n_invalid is None else _valid_mapping(wl, arch, m)
        if ok and need_v:
            valid.append(m)
            seen.add(key)
        elif not ok and need_i:
            invalid.append(m)
            seen.add(key)
    cands = valid + invalid
    for _ in range(3000):  # the draws ran short of one kind: fill with anything
        if len(cands) >= count:
            break
        m = pm_draw.draw_mapping(rng, wl, arch, pm_draw.draw_bypass(rng, arch, bypass_p), inner_cap=inner_cap, **kw)
        if (limit is None or _padded(m) <= limit) and repr(m) not in seen:
            seen.add(repr(m))
            cands.append(m)
    if len(cands) >= 3 and rng.random() < tie_p:  # an exact tie with an earlier candidate
        src = cands[int(rng.integers(0, len(cands) - 1))]
        cands[-1] = _with_noop(rng, src, dims)
    order = rng.permutation(len(cands))
    return [cands[i] for i in order]


def _capacities_between(rng: Any, wl: dict[str, Any], arch: dict[str, Any], cands: Sequence[dict[str, Any]],
                        n_invalid: int) -> None:
    """Small instances: set on-chip capacities from the candidates' own needs so that about
    ``n_invalid`` of them are over capacity (at one level) and the others fit."""
    needs = [_requirement(pm_core.parse(wl, arch, m)) for m in cands]
    levels = arch["levels"][:-1]
    tight = int(rng.integers(0, len(levels)))
    keep = max(1, len(cands) - n_invalid)
    for lv, arch_lv in enumerate(levels):
        cap = arch_lv["capacity_bytes"]
        if isinstance(cap, dict):
            if lv == tight:
                t = str(pm_draw._pick(rng, [t for t in TENSORS if t in cap]))
                arch_lv["capacity_bytes"] = {u: max(1, max(n[lv]["bytes"][u] for n in needs)) for u in cap}
                arch_lv["capacity_bytes"][t] = max(1, sorted(n[lv]["bytes"][t] for n in needs)[keep - 1])
            else:
                arch_lv["capacity_bytes"] = {u: max(1, max(n[lv]["bytes"][u] for n in needs)) for u in cap}
        elif lv == tight:
            arch_lv["capacity_bytes"] = max(1, sorted(n[lv]["total"] for n in needs)[keep - 1])
        else:
            arch_lv["capacity_bytes"] = max(1, max(n[lv]["total"] for n in needs) + int(rng.integers(0, 3)))


def _small_arch(rng: Any, depth: int, energies: bool = False, bandwidth: bool = False,
                max_fanout: int = 3) -> dict[str, Any]:
    arch = pm_draw.small_architecture(rng, depth, max_fanout=max_fanout)
    if rng.random() < 0.4 and depth > 2:  # a partitioned level now and then
        lv = arch["levels"][int(rng.integers(0, depth - 1))]
        lv["capacity_bytes"] = {t: int(pm_draw._pick(rng, (16, 32, 64, 128))) for t in TENSORS}
    for lv in arch["levels"][:-1]:
        if not isinstance(lv["capacity_bytes"], dict):
            lv["capacity_bytes"] = int(pm_draw._pick(rng, (32, 48, 64, 96, 128, 256)))
    _buffered(rng, arch, 0.4, (2, 3))
    if energies:
        arch["mac_pj"] = int(rng.integers(1, 9)) / 16
        for i, lv in enumerate(arch["levels"]):
            scale = 4 ** i
            lv["read_pj_per_byte"] = int(rng.integers(1, 9)) * scale / 16
            lv["write_pj_per_byte"] = int(rng.integers(1, 9)) * scale / 16
    if bandwidth:
        for i, lv in enumerate(arch["levels"]):
            if prod(x * y for x, y in (tuple(v["fanout"]) for v in arch["levels"][i + 1:])) == 1 and (
                    i == depth - 1 or rng.random() < 0.7):
                lv["bytes_per_cycle"] = int(pm_draw._pick(rng, (1, 2, 3, 4, 8)))
    return arch


def _odd_bits(rng: Any) -> dict[str, int]:
    """Precisions whose streams often end inside a byte (3- to 6-bit quantized operands, 12-bit
    activations, 20- or 28-bit accumulators)."""
    o = int(pm_draw._pick(rng, (8, 16)))
    return {"I": int(pm_draw._pick(rng, (4, 6, 8, 12))), "W": int(pm_draw._pick(rng, (3, 4, 6))), "O": o,
            "psum": int(pm_draw._pick(rng, (o, 20, 28)))}


def _small_layer(rng: Any, shapes: Sequence[str], max_dim: int = 6, macs: tuple[int, int] = (12, 200),
                 odd_bits: bool = False) -> dict[str, Any]:
    """A small layer of one of ``shapes`` whose MAC count lies in ``macs``."""
    while True:
        shape = str(pm_draw._pick(rng, shapes))
        if shape == "gemm":
            wl = pm_draw.small_gemm(rng, max_dim)
        elif shape == "bmm":
            wl = pm_draw.small_bmm(rng, max_tokens=4, max_head=3)
        else:
            wl = pm_draw.small_conv(rng, shape, max_pq=4, max_c=2, max_k=2, max_rs=3)
        if macs[0] <= pm_draw.macs(wl) <= macs[1]:
            if odd_bits:
                wl["bits"] = _odd_bits(rng)
            return wl


# ------------------------------------------------------------------------------------------
# F3 easy: the room every on-chip level reserves, per instance and over its instances
# ------------------------------------------------------------------------------------------

def ref_buffer_requirement(workload: dict, architecture: dict, mapping: dict) -> dict[str, Any]:
    nest = pm_core.parse(workload, architecture, mapping)
    inst, total, level_total, fits = {}, {}, {}, {}
    for lv, r in enumerate(_requirement(nest)):
        name = r["name"]
        for t in TENSORS:
            inst[f"{name}.{t}"] = r["bytes"][t]
        total[name] = r["total"]
        level_total[name] = r["total"] * _used_instances(nest, lv)
        fits[name] = r["fits"]
    return {"instance_bytes": inst, "instance_total": total, "level_total": level_total, "fits": fits}


def _set_capacities(rng: Any, wl: dict[str, Any], arch: dict[str, Any], mapping: dict[str, Any]) -> None:
    """Small instances: capacities near what the mapping needs, so that it fits some levels
    and not others."""
    nest = pm_core.parse(wl, arch, mapping)
    for lv, r in zip(arch["levels"][:-1], _requirement(nest)):
        def near(n: int) -> int:
            return max(1, int(round(n * float(rng.uniform(0.6, 1.5))))) if rng.random() < 0.8 else n
        if isinstance(lv["capacity_bytes"], dict):
            lv["capacity_bytes"] = {t: near(r["bytes"][t]) for t in lv["capacity_bytes"]}
        else:
            lv["capacity_bytes"] = near(r["total"])


def _idle_lanes(rng: Any, wl: dict[str, Any], arch: dict[str, Any], mapping: dict[str, Any]) -> dict[str, Any]:
    """The mapping with one more spatial loop (a GEMM or bmm dimension, where a level's fanout
    has room) reaching past its dimension's size: some instances it reaches never hold a real
    index. The dimension's outermost loop becomes a DRAM loop of factor 1 (still valid). The
    mapping as it was when no level has room."""
    levels = mapping["levels"]
    dims = wl["dims"]
    options = []
    for i, lv in enumerate(levels[:-1]):
        for a, key in ((0, "spatial_x"), (1, "spatial_y")):
            room = arch["levels"][i]["fanout"][a] // prod(f for _, f in lv.get(key, []))
            if room >= 2:
                options.append((i, key, room))
    for _ in range(20):
        if not options:
            break
        i, key, room = options[int(rng.integers(0, len(options)))]
        d = str(pm_draw._pick(rng, [d for d in dims if dims[d] >= 1]))
        inside = prod(f for m in levels[:i] for k in ("spatial_x", "spatial_y", "temporal") for e, f in m.get(k, []) if e == d)
        inside *= prod(f for e, f in levels[i].get("spatial_x", []) if e == d) if key == "spatial_y" else 1
        inside *= prod(f for e, f in levels[i].get(key, []) if e == d)
        if (room - 1) * inside < dims[d]:
            continue
        out = {"levels": [{k: ([list(x) for x in v] if k != "bypass" else list(v)) for k, v in m.items()} for m in levels]}
        out["levels"][i].setdefault(key, []).append([d, room])
        for m in out["levels"][i + 1:]:  # the loops of d above it: factor 1 (it already covers d)
            m["temporal"] = [[e, 1 if e == d else f] for e, f in m["temporal"]]
        if not any(e == d for e, _ in out["levels"][-1]["temporal"]):
            out["levels"][-1]["temporal"].append([d, 1])
        return out
    return mapping


def gen_buffer_requirement(rng: Any, real: bool = False,
                           groups: Sequence[str] = ("bert-base", "llama-prefill", "llama-decode", "attention"),
                           archs: Sequence[str] = ("tpu-like", "nvdla-like", "simba-like"),
                           idle_lanes: bool = False) -> dict[str, Any]:
    """``idle_lanes``: small instances get a spatial loop that reaches past its dimension's size
    (instances that never take part)."""
    if real:
        wl = pm_draw.real_layer(rng, groups, _real_bits(rng))
        arch = _real_arch(rng, str(pm_draw._pick(rng, archs)), wl, buffer_p=0.5)
        depth = len(arch["levels"])
        caps = {3: [1, 64, 0], 4: [1, 16, 64, 0], 5: [1, 8, 16, 64, 0]}[depth]
        big = {3: [1, 512, 0], 4: [1, 64, 512, 0], 5: [1, 32, 64, 512, 0]}[depth]
        want_fit = rng.random() < 0.6  # fitting everywhere, or over capacity somewhere
        for attempt in range(200):
            b = pm_draw.draw_bypass(rng, arch, 0.2)
            mapping = pm_draw.draw_mapping(rng, wl, arch, b, inner_cap=caps if want_fit else big, imperfect_p=0.3,
                                           spatial_p=0.9, fill_spatial=True)
            if _valid_mapping(wl, arch, mapping) == want_fit:
                break
        return {"workload": wl, "architecture": arch, "mapping": mapping}
    while True:
        wl = _small_layer(rng, ("gemm", "gemm", "bmm"), max_dim=8, macs=(12, 800))
        arch = _small_arch(rng, int(rng.integers(2, 5)))
        mapping = pm_draw.draw_mapping(rng, wl, arch, pm_draw.draw_bypass(rng, arch, 0.3), imperfect_p=0.4)
        if idle_lanes:
            mapping = _idle_lanes(rng, wl, arch, mapping)
        if _padded(mapping) <= 1500:
            _set_capacities(rng, wl, arch, mapping)
            return {"workload": wl, "architecture": arch, "mapping": mapping}


# ------------------------------------------------------------------------------------------
# F3 medium: the largest factor of one loop that fits each level
# ------------------------------------------------------------------------------------------

def _others(mapping: dict[str, Any], level: int, dim: str) -> int:
    """The product of every factor of ``dim`` but the target loop's and the outermost level's."""
    out = 1
    last = len(mapping["levels"]) - 1
    for i, lv in enumerate(mapping["levels"]):
        for key in ("temporal", "spatial_x", "spatial_y"):
            for d, f in lv.get(key, []):
                if d == dim and not (key == "temporal" and i in (level, last)):
                    out *= f
    return out


def _with_factor(mapping: dict[str, Any], level: int, dim: str, f: int, size: int) -> dict[str, Any]:
    """The mapping with the target loop's factor f and the outermost loop of ``dim`` covering
    the rest (the smallest factor for which the factors cover the size)."""
    out = {"levels": [dict(lv, temporal=[list(x) for x in lv.get("temporal", [])]) for lv in mapping["levels"]]}
    inner = _others(mapping, level, dim) * f
    for x in out["levels"][level]["temporal"]:
        if x[0] == dim:
            x[1] = f
    for x in out["levels"][-1]["temporal"]:
        if x[0] == dim:
            x[1] = -(-size // inner)
    return out


def ref_largest_fitting_tile(workload: dict, architecture: dict, mapping: dict, target: dict) -> dict[str, Any]:
    names = [lv["name"] for lv in architecture["levels"]]
    level, dim = names.index(target["level"]), target["dim"]
    size = workload["dims"][dim]
    fmax = -(-size // _others(mapping, level, dim))
    onchip = names[:-1]

    def fits(f: int) -> list[bool]:
        nest = pm_core.parse(workload, architecture, _with_factor(mapping, level, dim, f, size))
        return [r["fits"] for r in _requirement(nest)]

    # every level's requirement grows with f (or stays): binary search for the last f that fits
    largest = {}
    for i, name in enumerate(onchip):
        lo, hi = 0, fmax  # fits at lo (0 = none), find the largest
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if fits(mid)[i]:
                lo = mid
            else:
                hi = mid - 1
        largest[name] = lo
    best = min(largest.values()) if largest else fmax
    outer = -(-size // (_others(mapping, level, dim) * best)) if best else 0
    return {"largest_factor": largest, "best_factor": best, "outer_factor": outer}


def _prepare_target(rng: Any, wl: dict[str, Any], mapping: dict[str, Any],
                    levels: Sequence[int], min_size: int = 4) -> tuple[int, str] | None:
    """Pick a target (level index, dimension), make sure the target loop and the outer loop
    exist once each (the outer one covering the rest); None if there is no such target."""
    window = set(WINDOW_DIMS) if wl["shape"] in ("conv", "depthwise") else set()
    dims = [d for d in pm_core.SHAPES[wl["shape"]] if d not in window and wl["dims"][d] >= min_size]
    if not dims:
        return None
    dim = str(pm_draw._pick(rng, dims))
    level = int(pm_draw._pick(rng, list(levels)))
    lv = mapping["levels"]
    for at in (level, len(lv) - 1):
        mine = [x for x in lv[at]["temporal"] if x[0] == dim]
        if not mine:
            lv[at]["temporal"].insert(int(rng.integers(0, len(lv[at]["temporal"]) + 1)), [dim, 1])
        elif len(mine) > 1:  # one loop of the dimension there (drop the factor-1 extras)
            keep = max(mine, key=lambda x: x[1])
            lv[at]["temporal"] = [x for x in lv[at]["temporal"] if x[0] != dim or x is keep]
    size = wl["dims"][dim]
    if _others(mapping, level, dim) >= size:
        return None
    f = next(x for x in lv[level]["temporal"] if x[0] == dim)[1]
    fixed = _with_factor(mapping, level, dim, f, size)
    mapping["levels"] = fixed["levels"]
    return level, dim


def gen_largest_fitting_tile(rng: Any, real: bool = False,
                             groups: Sequence[str] = ("resnet50", "mobilenetv2-pw", "deeplabv3-dilated", "bert-base",
                                                      "llama-prefill"),
                             archs: Sequence[str] = ("eyeriss-like", "simba-like", "nvdla-like"),
                             odd_bits: bool = False,
                             shapes: Sequence[str] = ("conv", "gemm", "bmm", "depthwise"),
                             min_size: int = 4) -> dict[str, Any]:
    """``odd_bits``: small layers get precisions that are not whole bytes; ``shapes``: the shapes
    of small layers; ``min_size``: the smallest target dimension of a small layer."""
    while True:
        if real:
            wl = pm_draw.real_layer(rng, groups, _real_bits(rng))
            arch = _real_arch(rng, str(pm_draw._pick(rng, archs)), wl, buffer_p=0.7)
            depth = len(arch["levels"])
            caps = {3: [4, 16, 0], 4: [1, 8, 64, 0], 5: [1, 8, 16, 32, 0]}[depth]
            mapping = pm_draw.fitting_mapping(rng, wl, arch, bypass=lambda r: pm_draw.draw_bypass(r, arch, 0.2),
                                              imperfect_p=0.3, inner_cap=caps, spatial_p=0.9, fill_spatial=True)
            shared = [i for i, lv in enumerate(arch["levels"][:-1]) if not isinstance(lv["capacity_bytes"], dict)]
            levels = shared or list(range(depth - 1))
        else:
            wl = _small_layer(rng, tuple(shapes), max_dim=10, macs=(16, 800), odd_bits=odd_bits)
            arch = _small_arch(rng, int(rng.integers(2, 5)))
            mapping = pm_draw.draw_mapping(rng, wl, arch, pm_draw.draw_bypass(rng, arch, 0.25), imperfect_p=0.4)
            levels = list(range(len(arch["levels"]) - 1))
        if real:  # prefer a target whose largest choices overflow some level (most real ones do)
            picks, tight = [], False
            for _ in range(6):
                trial = {"levels": [dict(lv, temporal=[list(x) for x in lv.get("temporal", [])])
                                    for lv in mapping["levels"]]}
                tgt = _prepare_target(rng, wl, trial, levels, min_size=32)
                if tgt is None:
                    continue
                target = {"level": arch["levels"][tgt[0]]["name"], "dim": tgt[1]}
                picks.append((trial, target))
                out = ref_largest_fitting_tile(wl, arch, trial, target)
                size = wl["dims"][tgt[1]]
                tight = out["best_factor"] < -(-size // _others(trial, tgt[0], tgt[1]))
                if tight:
                    break
            if not picks or (not tight and rng.random() < 0.75):
                continue
            mapping, target = picks[-1]
            return {"workload": wl, "architecture": arch, "mapping": mapping, "target": target}
        tgt = _prepare_target(rng, wl, mapping, levels, min_size=min_size)
        if tgt is None or _padded(mapping) > 1500:
            continue
        _set_capacities(rng, wl, arch, mapping)
        target = {"level": arch["levels"][tgt[0]]["name"], "dim": tgt[1]}
        return {"workload": wl, "architecture": arch, "mapping": mapping, "target": target}


# ------------------------------------------------------------------------------------------
# F3 hard: which candidates are valid, and the first reason why not
# ------------------------------------------------------------------------------------------

def _verdict(workload: dict, architecture: dict, mapping: dict) -> tuple[str, list[str]]:
    """("valid" | "coverage:<dim>" | "fanout:<level>" | "capacity:<level>", over-capacity levels)."""
    for d in workload["dims"]:  # in the order the workload lists them
        f = prod(x for lv in mapping["levels"] for key in ("temporal", "spatial_x", "spatial_y")
                 for e, x in lv.get(key, []) if e == d)
        if f < workload["dims"][d]:
            return f"coverage:{d}", []
    for arch, lv in zip(architecture["levels"], mapping["levels"]):
        fx, fy = arch.get("fanout", [1, 1])
        if prod(x for _, x in lv.get("spatial_x", [])) > fx or prod(x for _, x in lv.get("spatial_y", [])) > fy:
            return f"fanout:{arch['name']}", []
    nest = pm_core.parse(workload, architecture, mapping)
    over = [r["name"] for r in _requirement(nest) if not r["fits"]]
    return (f"capacity:{over[0]}" if over else "valid"), over


def ref_mapping_validity(workload: dict, architecture: dict, candidates: list) -> dict[str, Any]:
    verdicts = [_verdict(workload, architecture, m) for m in candidates]
    return {"valid": [v == "valid" for v, _ in verdicts], "reason": [v for v, _ in verdicts],
            "over_capacity": [over for _, over in verdicts]}


def _break_coverage(rng: Any, wl: dict[str, Any], mapping: dict[str, Any]) -> dict[str, Any] | None:
    """Lower the outermost factor of one dimension by one: its factors no longer cover it."""
    out = {"levels": [dict(lv, temporal=[list(x) for x in lv.get("temporal", [])]) for lv in mapping["levels"]]}
    top = [x for x in out["levels"][-1]["temporal"] if x[1] >= 2]
    if not top:
        return None
    x = top[int(rng.integers(0, len(top)))]
    x[1] -= 1
    return out


def _break_fanout(rng: Any, wl: dict[str, Any], arch: dict[str, Any], mapping: dict[str, Any]) -> dict[str, Any] | None:
    """Move a factor of a dimension from the outermost level into a spatial loop that then
    exceeds its fanout (the outermost factor shrinks so the dimension stays covered)."""
    out = {"levels": [{k: ([list(x) for x in v] if isinstance(v, list) and k != "bypass" else v)
                       for k, v in lv.items()} for lv in mapping["levels"]]}
    last = len(out["levels"]) - 1
    window = set(WINDOW_DIMS) if wl["shape"] in ("conv", "depthwise") else set()
    inner_i = min(i for i, lv in enumerate(out["levels"]) if "I" not in lv.get("bypass", []))
    choices = []
    for i, lv in enumerate(out["levels"][:-1]):
        fx, fy = arch["levels"][i]["fanout"]
        for key, room in (("spatial_x", fx), ("spatial_y", fy)):
            if room < 2:
                continue
            for x in out["levels"][last]["temporal"]:
                if x[1] >= 2 and not (x[0] in window and i > inner_i):
                    choices.append((i, key, room, x))
    # a mapping made for the transposed array: every spatial loop of a level on one axis (the
    # loops stay in the same order, so only the axis overflows: X times Y still fits)
    flips = []
    for i, lv in enumerate(out["levels"]):
        fx, fy = arch["levels"][i]["fanout"]
        both = prod(f for k in ("spatial_x", "spatial_y") for _, f in lv.get(k, []))
        if lv.get("spatial_x") and lv.get("spatial_y") and both > fx:
            flips.append((i, "spatial_x"))
        if lv.get("spatial_x") and lv.get("spatial_y") and both > fy:
            flips.append((i, "spatial_y"))
    if flips and (not choices or rng.random() < 0.5):
        i, key = flips[int(rng.integers(0, len(flips)))]
        lv = out["levels"][i]
        lv[key] = lv.pop("spatial_x") + lv.pop("spatial_y")
        return out
    if not choices:
        return None

    def used(i: int, key: str) -> int:
        return prod(f for _, f in out["levels"][i].get(key, []))

    def slack(c: tuple) -> bool:  # one axis overflows while X times Y stays within the fanout
        i, key, room, _ = c
        fx, fy = arch["levels"][i]["fanout"]
        other = used(i, "spatial_y" if key == "spatial_x" else "spatial_x")
        return used(i, key) * (room // used(i, key) + 1) * other <= fx * fy
    roomy = [c for c in choices if slack(c)]
    pool = roomy if roomy and rng.random() < 0.8 else choices
    i, key, room, top = pool[int(rng.integers(0, len(pool)))]
    g = room // used(i, key) + 1  # the new spatial loop's factor: one more than the room left
    d = top[0]
    loops = out["levels"][i].setdefault(key, [])
    loops.append([d, g])
    size = wl["dims"][d]
    inner = prod(f for j, lv in enumerate(out["levels"]) for k in ("temporal", "spatial_x", "spatial_y")
                 for e, f in lv.get(k, []) if e == d and not (j == last and k == "temporal"))
    top[1] = max(1, -(-size // inner))
    return out


def gen_mapping_validity(rng: Any, real: bool = False,
                         groups: Sequence[str] = ("resnet50", "resnet50-strided", "deeplabv3-dilated", "mobilenetv2-dw",
                                                  "mobilenetv2-pw"),
                         archs: Sequence[str] = ("eyeriss-like", "simba-like", "nvdla-like"),
                         odd_bits: bool = False) -> dict[str, Any]:
    """``odd_bits``: small layers get precisions that are not whole bytes."""
    if real:
        wl = pm_draw.real_layer(rng, groups, _real_bits(rng))
        arch = _real_arch(rng, str(pm_draw._pick(rng, archs)), wl, buffer_p=0.7)
        depth = len(arch["levels"])
        caps = {3: [4, 16, 0], 4: [1, 8, 64, 0], 5: [1, 8, 16, 32, 0]}[depth]
        big = {3: [16, 64, 0], 4: [1, 64, 256, 0], 5: [1, 32, 64, 256, 0]}[depth]
        count = int(rng.integers(7, 10))
        kw: dict[str, Any] = dict(imperfect_p=0.3, spatial_p=0.9, fill_spatial=True)
    else:
        count = int(rng.integers(4, 7))
    n_valid = int(rng.integers(1, 4))
    n_struct = int(rng.integers(0, 3))
    n_cap = max(0, count - n_valid - n_struct)
    if real:
        cands = _candidates(rng, wl, arch, n_valid + n_cap, n_cap, tie_p=0.0, inner_cap=caps, big_cap=big, **kw)
    else:
        while True:
            wl = _small_layer(rng, ("conv", "conv", "depthwise"), macs=(12, 250), odd_bits=odd_bits)
            arch = _small_arch(rng, int(rng.integers(3, 5)))
            cands = _candidates(rng, wl, arch, n_valid + n_cap, None, limit=400, tie_p=0.0, imperfect_p=0.3)
            if len(cands) == n_valid + n_cap:
                break
        _capacities_between(rng, wl, arch, cands, n_cap)
    for _ in range(n_struct):  # a copy of a candidate that is not covered or exceeds a fanout
        for _try in range(30):
            base = cands[int(rng.integers(0, len(cands)))]
            bad = _break_coverage(rng, wl, base) if rng.random() < 0.5 else _break_fanout(rng, wl, arch, base)
            if bad is not None:
                cands.insert(int(rng.integers(0, len(cands) + 1)), bad)
                break
    return {"workload": wl, "architecture": arch, "candidates": cands}


# ------------------------------------------------------------------------------------------
# F16: rankings by DRAM bytes, energy, latency, energy-delay product
# ------------------------------------------------------------------------------------------

def ref_dram_traffic_ranking(workload: dict, architecture: dict, candidates: list) -> dict[str, Any]:
    nests = [pm_core.parse(workload, architecture, m) for m in candidates]
    moved = [_dram_bytes(n) for n in nests]
    valid = [pm_core.valid(n) for n in nests]
    return {"dram_bytes": moved, "valid": valid, "ranking": _rank(moved, valid)}


def ref_energy_ranking(workload: dict, architecture: dict, candidates: list) -> dict[str, Any]:
    nests = [pm_core.parse(workload, architecture, m) for m in candidates]
    energy = [_energy(n, architecture) for n in nests]
    valid = [pm_core.valid(n) for n in nests]
    return {"energy_pj": energy, "valid": valid, "ranking": _rank(energy, valid)}


def ref_latency_ranking(workload: dict, architecture: dict, candidates: list) -> dict[str, Any]:
    nests = [pm_core.parse(workload, architecture, m) for m in candidates]
    lat = [_latency(n, architecture) for n in nests]
    valid = [pm_core.valid(n) for n in nests]
    cycles = [c for c, _ in lat]
    return {"cycles": cycles, "bound": [b for _, b in lat], "valid": valid, "ranking": _rank(cycles, valid)}


def ref_edp_ranking(workload: dict, architecture: dict, candidates: list) -> dict[str, Any]:
    energy, cycles, edp, valid = [], [], [], []
    for m in candidates:
        nest = pm_core.parse(workload, architecture, m)
        counts = pm_core.access_counts(nest)
        e = _energy(nest, architecture, counts)
        c, _ = _latency(nest, architecture, counts)
        energy.append(e)
        cycles.append(c)
        edp.append(e * c)
        valid.append(pm_core.valid(nest))
    return {"energy_pj": energy, "cycles": cycles, "edp": edp, "valid": valid, "ranking": _rank(edp, valid)}


_REAL_CAPS = {3: ([4, 16, 0], [16, 128, 0]), 4: ([1, 8, 64, 0], [1, 64, 512, 0]),
              5: ([1, 8, 16, 32, 0], [1, 32, 64, 256, 0])}


def _ranking_case(rng: Any, real: bool, *, groups: Sequence[str], archs: Sequence[str], energies: bool,
                  bandwidth: bool, small_shapes: Sequence[str], small_depths: Sequence[int],
                  two_level: bool = False) -> dict[str, Any]:
    if real:
        wl = pm_draw.real_layer(rng, groups, _real_bits(rng))
        name = str(pm_draw._pick(rng, archs))
        if name == "two-level":
            arch = _two_level(rng)
            caps = ([512, 0], [4096, 0])
        else:
            arch = _real_arch(rng, name, wl, energies=energies, bandwidth=bandwidth)
            caps = _REAL_CAPS[len(arch["levels"])]
        count = int(rng.integers(8, 11))
        n_invalid = int(rng.integers(0, 4))
        cands = _candidates(rng, wl, arch, count, n_invalid, inner_cap=caps[0], big_cap=caps[1],
                            imperfect_p=0.3, spatial_p=0.9, fill_spatial=True)
        return {"workload": wl, "architecture": arch, "candidates": cands}
    while True:
        wl = _small_layer(rng, small_shapes, odd_bits=energies)
        arch = _small_arch(rng, int(pm_draw._pick(rng, small_depths)), energies=energies, bandwidth=bandwidth)
        count = int(rng.integers(4, 8))
        cands = _candidates(rng, wl, arch, count, None, limit=300, imperfect_p=0.35)
        if len(cands) == count:
            break
    _capacities_between(rng, wl, arch, cands, int(rng.integers(0, 3)))
    return {"workload": wl, "architecture": arch, "candidates": cands}


def _two_level(rng: Any) -> dict[str, Any]:
    cap, name = pm_draw._pick(rng, ((65536, "simba-like"), (131072, "eyeriss-like"), (524288, "nvdla-like")))
    arch = {"name": f"{name}-buffer", "levels": [{"name": "GlobalBuffer", "capacity_bytes": cap, "fanout": [1, 1]},
                                                 {"name": "DRAM", "capacity_bytes": None, "fanout": [1, 1]}]}
    return _buffered(rng, arch, 0.5)


def gen_dram_traffic_ranking(rng: Any, real: bool = False) -> dict[str, Any]:
    return _ranking_case(rng, real, groups=("bert-base", "llama-prefill", "llama-decode", "attention"),
                         archs=("two-level", "two-level", "tpu-like", "nvdla-like"), energies=False, bandwidth=False,
                         small_shapes=("gemm", "gemm", "bmm"), small_depths=(2, 3))


def gen_energy_ranking(rng: Any, real: bool = False, groups: Sequence[str] | None = None) -> dict[str, Any]:
    """``groups``: the groups of the real layers (None: the problem's own, as before)."""
    return _ranking_case(rng, real, groups=groups or ("resnet50", "mobilenetv2-pw", "mobilenetv2-dw", "bert-base"),
                         archs=("eyeriss-like", "simba-like", "nvdla-like"), energies=True, bandwidth=False,
                         small_shapes=("conv", "gemm", "depthwise"), small_depths=(2, 3, 4))


def gen_latency_ranking(rng: Any, real: bool = False, groups: Sequence[str] | None = None) -> dict[str, Any]:
    """``groups``: the groups of the real layers (None: the problem's own, as before)."""
    return _ranking_case(rng, real, groups=groups or ("resnet50", "bert-base", "llama-prefill", "llama-decode"),
                         archs=("eyeriss-like", "simba-like", "nvdla-like", "tpu-like"), energies=False, bandwidth=True,
                         small_shapes=("conv", "gemm", "gemm"), small_depths=(2, 3, 4))


def gen_edp_ranking(rng: Any, real: bool = False, groups: Sequence[str] | None = None,
                    cycles_past: int | None = None) -> dict[str, Any]:
    """``groups``: the groups of the real layers (None: the problem's own, as before);
    ``cycles_past``: draw again until some candidate takes at least this many cycles (None: the
    first draw, as before)."""
    for _ in range(200):
        case = _ranking_case(rng, real, groups=groups or ("resnet50", "deeplabv3-dilated", "mobilenetv2-dw",
                                                          "llama-decode", "attention"),
                             archs=("eyeriss-like", "simba-like", "nvdla-like", "tpu-like"), energies=True,
                             bandwidth=True, small_shapes=("conv", "gemm", "bmm", "depthwise"), small_depths=(2, 3, 4))
        if cycles_past is None or max(ref_edp_ranking(**case)["cycles"]) >= cycles_past:
            return case
    raise AssertionError(f"no candidate reached {cycles_past} cycles in 200 draws")


# ------------------------------------------------------------------------------------------
# F16 hard: the best ordering of the outermost level's loops
# ------------------------------------------------------------------------------------------

def _dram_streams(nest: pm_core.Nest, tensor: str) -> int:
    """Bytes of one tensor crossing the outermost level's port (pm_core.access_counts
    restricted to the last level)."""
    last = nest.depth - 1
    b = nest.bits
    hold = nest.holders(tensor)
    if tensor == "O":
        if len(hold) == 1:  # MAC results added straight into the outermost level: partial sums
            updates, final = pm_core._mac_accesses(nest, tensor, last), 0
        else:
            updates = pm_core._moves(nest, tensor, hold[-2], last, "reduce")
            final = nest.size("O") if pm_core._contributors(nest, last) == 1 else 0
        reads = updates - pm_core.partition(nest, "O", last)
        return _nbytes(final, b["O"]) + _nbytes(updates - final, b["psum"]) + _nbytes(reads, b["psum"])
    reads = pm_core._mac_accesses(nest, tensor, last) if len(hold) == 1 else \
        pm_core._moves(nest, tensor, hold[-2], last, "multicast")
    return _nbytes(reads, b[tensor])


def _with_order(mapping: dict[str, Any], order: Sequence[Sequence[Any]]) -> dict[str, Any]:
    levels = [dict(lv) for lv in mapping["levels"]]
    levels[-1]["temporal"] = [list(x) for x in order]
    return {"levels": levels}


def ref_best_dram_order(workload: dict, architecture: dict, mapping: dict) -> dict[str, Any]:
    loops = [tuple(x) for x in mapping["levels"][-1]["temporal"]]
    nest0 = pm_core.parse(workload, architecture, mapping)
    relevant = {t: nest0.relevant(t) for t in TENSORS}
    memo: dict[tuple, int] = {}
    results = []
    for perm in itertools.permutations(loops):
        nest = None
        moved = 0
        for t in TENSORS:
            # DRAM loops irrelevant to t inside all its relevant ones never change its tiles (every
            # iteration of a dimension's outermost loop has a real index): the count of t depends
            # only on the loops from its first relevant one outwards
            first = next((i for i, (d, _) in enumerate(perm) if d in relevant[t]), len(perm))
            key = (t, perm[first:])
            if key not in memo:
                nest = nest or pm_core.parse(workload, architecture, _with_order(mapping, perm))
                memo[key] = _dram_streams(nest, t)
            moved += memo[key]
        results.append((moved, [d for d, _ in perm]))
    best = min(r[0] for r in results)
    worst = max(r[0] for r in results)
    winner = min(names for moved, names in results if moved == best)
    return {"best_order": winner, "best_bytes": best, "worst_bytes": worst,
            "optimal_orders": sum(1 for moved, _ in results if moved == best)}


def _split_below_top(rng: Any, wl: dict[str, Any], arch: dict[str, Any], mapping: dict[str, Any],
                     p: float) -> dict[str, Any]:
    """The mapping with the loops below the outermost level split by pm_draw.split_loops (the
    outermost level's loops kept as they are); the first of a few draws that stays valid."""
    top = mapping["levels"][-1]["temporal"]
    for _ in range(20):
        out = pm_draw.split_loops(rng, wl, {"levels": mapping["levels"][:-1] + [dict(mapping["levels"][-1], temporal=[])]}, p)
        out["levels"][-1]["temporal"] = [list(x) for x in top]
        try:
            pm_core.parse(wl, arch, out)
        except ValueError:
            continue
        return out
    return mapping


def _overshoot_below_top(rng: Any, wl: dict[str, Any], arch: dict[str, Any], mapping: dict[str, Any]) -> dict[str, Any]:
    """The mapping with one outermost loop [d, F] shortened to [d, F'] and a new loop [d, g] at
    the level below (c * g * F' covers d, c * g * F' - c >= its size: whole tiles of d past its
    size under the new loop in the last outermost iteration); unchanged when no loop allows it."""
    bounds = wl["dims"]
    top = len(mapping["levels"]) - 1
    choices = []
    for j, (d, big) in enumerate(mapping["levels"][-1]["temporal"]):
        c = prod(f for lv in mapping["levels"][:-1] for k in ("temporal", "spatial_x", "spatial_y")
                 for e, f in lv.get(k, []) if e == d)
        for g in range(2, big):
            f2 = -(-bounds[d] // (c * g))
            if c * g < bounds[d] and f2 >= 2 and c * g * f2 - c >= bounds[d]:
                choices.append((j, d, g, f2))
    if not choices:
        return mapping
    j, d, g, f2 = choices[int(rng.integers(0, len(choices)))]
    out = {"levels": [dict(lv, temporal=[list(x) for x in lv.get("temporal", [])]) for lv in mapping["levels"]]}
    out["levels"][-1]["temporal"][j][1] = f2
    below = out["levels"][top - 1]["temporal"]
    below.insert(int(rng.integers(0, len(below) + 1)), [d, g])
    nest = pm_core.parse(wl, arch, mapping)
    others = [t for t in TENSORS if d not in nest.relevant(t)]
    if top >= 2 and others:  # the level below DRAM bypasses a tensor d does not index: the empty
        t = str(pm_draw._pick(rng, others))  # tiles lie above that tensor's child of DRAM
        held = out["levels"][top - 1].get("bypass", [])
        out["levels"][top - 1]["bypass"] = [u for u in TENSORS if u in held or u == t]
    try:
        pm_core.parse(wl, arch, out)
    except ValueError:
        return mapping
    return out


def gen_best_dram_order(rng: Any, real: bool = False,
                        groups: Sequence[str] = ("resnet50", "mobilenetv2-pw", "bert-base", "llama-prefill", "attention"),
                        archs: Sequence[str] = ("two-level", "eyeriss-like", "simba-like", "nvdla-like"),
                        split: float = 0.0, overshoot: bool = False,
                        small_depth: Sequence[int] = (2, 3)) -> dict[str, Any]:
    """``split``: the probability of splitting each loop below the outermost level into several
    loops of its dimension (pm_draw.split_loops); ``overshoot``: move part of an outermost loop
    into a new loop at the level below, so that the level's last tiles of the dimension are empty
    in the outermost loop's last iteration. Both off draw exactly as before. ``small_depth``: the
    fewest and most levels of a small instance's architecture."""
    lo, hi = (3, 5) if real else (3, 4)
    want = int(rng.integers(lo, hi + 1))  # how many outermost loops (any in range after many tries)
    for attempt in range(10000):
        if real:
            wl = pm_draw.real_layer(rng, groups, _real_bits(rng))
            name = str(pm_draw._pick(rng, archs))
            if name == "two-level":
                arch = _two_level(rng)
                caps = [256, 0]
            else:
                arch = _real_arch(rng, name, wl)
                caps = _REAL_CAPS[len(arch["levels"])][0]
            mapping = pm_draw.fitting_mapping(rng, wl, arch, tries=60, bypass=lambda r: pm_draw.draw_bypass(r, arch, 0.2),
                                              imperfect_p=0.3, inner_cap=caps, spatial_p=0.8, fill_spatial=True)
        else:
            wl = _small_layer(rng, ("gemm", "conv", "bmm"), macs=(12, 160))
            arch = _small_arch(rng, int(rng.integers(small_depth[0], small_depth[1] + 1)))
            mapping = pm_draw.draw_mapping(rng, wl, arch, pm_draw.draw_bypass(rng, arch, 0.25), imperfect_p=0.35,
                                           temporal_p=0.5, spatial_p=0.4)
            if _padded(mapping) > 250:
                continue
        top = [x for x in mapping["levels"][-1]["temporal"] if x[1] > 1]
        n = len(top) if attempt > 300 else want
        if len(top) == n and lo <= n <= hi and len({d for d, _ in top}) == len(top):
            mapping["levels"][-1]["temporal"] = top
            if split > 0:
                mapping = _split_below_top(rng, wl, arch, mapping, split)
            if overshoot:
                mapping = _overshoot_below_top(rng, wl, arch, mapping)
            return {"workload": wl, "architecture": arch, "mapping": mapping}
    raise AssertionError("no mapping with enough outermost loops")  # pragma: no cover


REFERENCES: dict[str, Callable[..., dict[str, Any]]] = {
    "pm_select.buffer_requirement": ref_buffer_requirement,
    "pm_select.largest_fitting_tile": ref_largest_fitting_tile,
    "pm_select.mapping_validity": ref_mapping_validity,
    "pm_select.dram_traffic_ranking": ref_dram_traffic_ranking,
    "pm_select.energy_ranking": ref_energy_ranking,
    "pm_select.latency_ranking": ref_latency_ranking,
    "pm_select.edp_ranking": ref_edp_ranking,
    "pm_select.best_dram_order": ref_best_dram_order,
}

GENERATORS: dict[str, Callable[..., dict[str, Any]]] = {
    "pm_select.buffer_requirement": gen_buffer_requirement,
    "pm_select.largest_fitting_tile": gen_largest_fitting_tile,
    "pm_select.mapping_validity": gen_mapping_validity,
    "pm_select.dram_traffic_ranking": gen_dram_traffic_ranking,
    "pm_select.energy_ranking": gen_energy_ranking,
    "pm_select.latency_ranking": gen_latency_ranking,
    "pm_select.edp_ranking": gen_edp_ranking,
    "pm_select.best_dram_order": gen_best_dram_order,
}
