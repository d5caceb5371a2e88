"""perf-model F15: causal attention of one Llama layer computed block by block (FlashAttention
style) with grouped-query heads and a KV cache, on an accelerator with one on-chip buffer over
DRAM (problems/perf-model/f15-tiled-causal-attention).

Inputs (plain dicts):

* ``workload``: ``{"name", "shape": "attention", "dims": {"G", "H", "M", "D"}, "cached",
  "bits": {"Q", "K", "V", "O", "S", "acc", "stat"}}`` -- ``G`` key/value heads, ``H`` query
  heads per key/value head, ``M`` new query tokens at positions ``cached .. cached + M - 1``,
  head dimension ``D``; the keys are ``0 .. cached + M - 1``.
* ``architecture``: ``{"name", "levels": [buffer, DRAM]}``, the buffer with ``name``,
  ``capacity_bytes`` and ``multiple_buffering`` (copies of the K and V blocks), DRAM with
  ``capacity_bytes`` null.
* ``mapping``: ``{"Br", "Bc", "heads_per_pass", "kv_order"}`` with ``kv_order`` ``ascending``
  or ``alternating``.

The schedule (the spec states it in words): for each kv head, for each query block, the query
heads of the group in passes of ``heads_per_pass`` (the last pass may have fewer); a pass reads
the Q blocks of its heads, visits the key blocks that hold at least one unmasked (query, key)
pair -- always key blocks ``0 .. L`` of its query block -- ascending, or (``alternating``) in
ascending order on even-numbered passes of the whole schedule and descending on odd ones; every
block it visits reads its K and V block from DRAM unless the buffer still holds that block (the
one most recently read, of the same kv head); then writes its O blocks.

The closed forms: per query block ``qb`` with real rows ``r0 .. r1`` the last visited key block is
``L = (cached + r1) // Bc`` (capped at the last key block) and the visited keys are the first
``min(T, (L + 1) * Bc)``; the unmasked pairs of a row ``i`` are ``cached + i + 1``. The only
state is the held block, which the loop over passes (G x query blocks x passes, a few thousand
iterations at most) tracks without touching an element.
"""

from __future__ import annotations

from typing import Any

from reference_models import pm_shapes

BIT_KEYS = ("Q", "K", "V", "O", "S", "acc", "stat")
ORDERS = ("ascending", "alternating")


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def _nbytes(elements: int, bits: int) -> int:
    return _cdiv(elements * bits, 8)


def _parse(workload: dict[str, Any], architecture: dict[str, Any], mapping: dict[str, Any]) -> dict[str, Any]:
    if workload.get("shape") != "attention":
        raise ValueError("workload shape must be 'attention'")
    dims = workload["dims"]
    if sorted(dims) != ["D", "G", "H", "M"]:
        raise ValueError(f"workload dims must be G, H, M, D; got {sorted(dims)}")
    out = {k: int(dims[k]) for k in ("G", "H", "M", "D")}
    if min(out.values()) < 1:
        raise ValueError("every dimension is at least 1")
    out["cached"] = int(workload["cached"])
    if out["cached"] < 0:
        raise ValueError("cached must be >= 0")
    bits = workload["bits"]
    if sorted(bits) != sorted(BIT_KEYS):
        raise ValueError(f"bits must give exactly {list(BIT_KEYS)}")
    out["bits"] = {k: int(bits[k]) for k in BIT_KEYS}
    levels = architecture["levels"]
    if len(levels) != 2 or levels[1].get("capacity_bytes") is not None:
        raise ValueError("architecture: one on-chip buffer, then DRAM (capacity null)")
    out["capacity"] = int(levels[0]["capacity_bytes"])
    out["mb"] = int(levels[0].get("multiple_buffering", 1))
    out["Br"], out["Bc"], out["hp"] = int(mapping["Br"]), int(mapping["Bc"]), int(mapping["heads_per_pass"])
    if min(out["Br"], out["Bc"], out["hp"], out["mb"]) < 1 or out["hp"] > out["H"]:
        raise ValueError("Br, Bc, multiple_buffering >= 1 and 1 <= heads_per_pass <= H")
    out["order"] = mapping["kv_order"]
    if out["order"] not in ORDERS:
        raise ValueError(f"kv_order must be one of {ORDERS}")
    return out


def tiled_causal_attention(workload: dict[str, Any], architecture: dict[str, Any], mapping: dict[str, Any]) -> dict[str, Any]:
    p = _parse(workload, architecture, mapping)
    G, H, M, D, C = p["G"], p["H"], p["M"], p["D"], p["cached"]
    Br, Bc, hp, mb, b = p["Br"], p["Bc"], p["hp"], p["mb"], p["bits"]
    T = C + M
    nk = _cdiv(T, Bc)
    nq = _cdiv(M, Br)
    npass = _cdiv(H, hp)

    def ksize(kb: int) -> int:
        return min(Bc, T - kb * Bc)

    per_qb = []  # (rows, last key block, visited keys, unmasked pairs per head)
    for qb in range(nq):
        r0 = qb * Br
        r1 = min(M, r0 + Br) - 1
        rows = r1 - r0 + 1
        last = min(nk - 1, (C + r1) // Bc)
        cols = min(T, (last + 1) * Bc)
        unmasked = rows * (C + 1) + (r0 + r1) * rows // 2
        per_qb.append((rows, last, cols, unmasked))

    kv_elems = 0  # K elements read (V the same: K and V blocks always move together)
    held = None
    idx = 0
    for g in range(G):
        for rows, last, cols, _ in per_qb:
            for _p in range(npass):
                up = p["order"] == "ascending" or idx % 2 == 0
                first, final = (0, last) if up else (last, 0)
                kv_elems += cols - (ksize(first) if held == (g, first) else 0)
                held = (g, final)
                idx += 1
    kv_elems *= D

    blocks = sum(last + 1 for _, last, _, _ in per_qb)
    scores = sum(rows * cols for rows, _, cols, _ in per_qb)
    unmasked = sum(u for _, _, _, u in per_qb)
    rescale = sum(rows * last for rows, last, _, _ in per_qb)
    heads = G * H

    rows0, cols0, h0 = min(Br, M), min(Bc, T), min(hp, H)
    sram = (_nbytes(rows0 * D * h0, b["Q"])
            + mb * _nbytes(cols0 * D, b["K"]) + mb * _nbytes(cols0 * D, b["V"])
            + _nbytes(rows0 * cols0 * h0, b["S"])
            + _nbytes(rows0 * D * h0, b["acc"])
            + _nbytes(2 * rows0 * h0, b["stat"]))
    return {
        "q_read_bytes": _nbytes(heads * M * D, b["Q"]),
        "k_read_bytes": _nbytes(kv_elems, b["K"]),
        "v_read_bytes": _nbytes(kv_elems, b["V"]),
        "o_write_bytes": _nbytes(heads * M * D, b["O"]),
        "score_blocks": heads * blocks,
        "macs": heads * scores * 2 * D,
        "masked_scores": heads * (scores - unmasked),
        "exponentials": heads * (scores + rescale),
        "sram_bytes": sram,
        "fits": sram <= p["capacity"],
    }


# ------------------------------------------------------------------------------------------
# generators
# ------------------------------------------------------------------------------------------

def _pick(rng, seq):
    return seq[int(rng.integers(len(seq)))]


def _bits(rng, real: bool) -> dict[str, int]:
    if real:
        kv = _pick(rng, (16, 16, 8))
        return {"Q": 16, "K": kv, "V": kv, "O": 16, "S": 32, "acc": 32, "stat": 32}
    return {"Q": _pick(rng, (4, 8, 16)), "K": _pick(rng, (4, 8, 16)), "V": _pick(rng, (4, 8, 16)),
            "O": _pick(rng, (4, 8, 16)), "S": _pick(rng, (8, 16, 32)), "acc": _pick(rng, (16, 24, 32)),
            "stat": _pick(rng, (16, 32))}


# The on-chip buffers of the real designs (pm_shapes): the level that would hold Q, K, V blocks.
_BUFFERS = (("tpu-like", "UnifiedBuffer", "I"), ("nvdla-like", "ConvBuffer", None),
            ("simba-like", "GlobalBuffer", None), ("eyeriss-like", "GLB", None))

# Llama attention heads (pm_shapes: the score product's G key/value heads, H query heads per
# key/value head, K the head dimension).
_MODELS = (("llama2-7b", "llama2-7b.decode.ctx1024.scores"), ("llama3-8b", "llama3-8b.decode.ctx1024.scores"))


def _real_buffer(rng) -> tuple[str, str, int]:
    arch, level, part = _pick(rng, _BUFFERS)
    lv = next(x for x in pm_shapes.architecture(arch)["levels"] if x["name"] == level)
    cap = lv["capacity_bytes"][part] if part else lv["capacity_bytes"]
    return arch, level, int(cap)


def flash_inputs(rng, real: bool = False, huge: bool = False) -> dict[str, Any]:
    """A small instance (a pair-by-pair simulation finishes), or a real Llama layer with a long
    cache on a real buffer (``real=True``: at least 100 million computed scores, so that a
    pair-by-pair simulation needs several seconds or more). ``huge=True`` (with ``real``) puts
    Llama heads of a dimension far past any real one (2^25 to 2^30) in front of up to 2^20
    cached tokens: the MACs and the byte counts pass 2^53 while the tokens stay few enough for
    a pair-by-pair simulation to hold them (and run out of time)."""
    for _ in range(1000):
        if real and huge:
            model, layer = _pick(rng, _MODELS)
            dims = pm_shapes.layer(layer)["dims"]
            G, H = dims["G"], dims["H"]
            D = _pick(rng, (33_554_467, 1_000_000_007, (1 << 30) + 7))
            M = _pick(rng, (65_537, 262_147))
            cached = _pick(rng, (0, 100_003, 1 << 20))
            name = f"{model}.chunk{M}.cache{cached}.head-dim{D}"
            Br = _pick(rng, (1021, 4093, 8191))
            Bc = _pick(rng, (4096, 65_521, 100_003))
            hp = int(rng.integers(1, H + 1))
            arch, level, cap = _real_buffer(rng)
            mb = 2
        elif real:
            model, layer = _pick(rng, _MODELS)
            dims = pm_shapes.layer(layer)["dims"]
            G, H, D = dims["G"], dims["H"], dims["K"]
            M = _pick(rng, (128, 256, 512, 1000, 1024, 2048))
            cached = _pick(rng, (0, 1024, 4096, 8000, 8192, 16384, 32768))
            name = f"{model}.prefill-chunk{M}.cache{cached}"
            Br = _pick(rng, (64, 128, 256))
            Bc = _pick(rng, (64, 128, 256))
            hp = int(rng.integers(1, H + 1))
            arch, level, cap = _real_buffer(rng)
            mb = 2
        else:
            G = int(rng.integers(1, 4))
            H = int(rng.integers(1, 5))
            D = _pick(rng, (1, 2, 3, 4, 8))
            M = int(rng.integers(1, 25))
            cached = _pick(rng, (0, 0, int(rng.integers(1, 8)), int(rng.integers(1, 40))))
            Br = int(rng.integers(1, 13))
            Bc = int(rng.integers(1, 13))
            hp = int(rng.integers(1, H + 1))
            mb = _pick(rng, (1, 2, 3))
            name = "small"
            arch, level, cap = "small", "Buffer", 0
        bits = _bits(rng, real)
        workload = {"name": name, "shape": "attention", "dims": {"G": G, "H": H, "M": M, "D": D},
                    "cached": cached, "bits": bits}
        mapping = {"Br": Br, "Bc": Bc, "heads_per_pass": hp, "kv_order": _pick(rng, ORDERS)}
        if not real:
            arch_d = {"name": "small", "levels": [
                {"name": level, "capacity_bytes": 1, "multiple_buffering": mb},
                {"name": "DRAM", "capacity_bytes": None}]}
            need = tiled_causal_attention(workload, arch_d, mapping)["sram_bytes"]
            cap = max(1, need + int(rng.integers(-need // 3 - 1, need // 3 + 2)))
        architecture = {"name": arch, "levels": [
            {"name": level, "capacity_bytes": cap, "multiple_buffering": mb},
            {"name": "DRAM", "capacity_bytes": None}]}
        if real:
            r = tiled_causal_attention(workload, architecture, mapping)
            if r["macs"] // (2 * D) < 100_000_000:
                continue
        return {"workload": workload, "architecture": architecture, "mapping": mapping}
    raise RuntimeError("no instance drawn")


REFERENCES = {"pm_flash.tiled_causal_attention": tiled_causal_attention}
GENERATORS = {"pm_flash.flash_inputs": flash_inputs}
