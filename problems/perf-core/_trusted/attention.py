"""F15 transformer layers in prefill and decode: FLOPs, weight and KV-cache bytes, intensity,
roofline latency and bound (our own model; every convention is stated in the problems' specs).

Counted work (one MAC = two FLOPs): the four attention projections, the MLP matrices, the score
matmul Q K^T and the value matmul A V. Softmax, normalisation, residuals, biases, embeddings and
the LM head are not counted. Counted traffic: weights (read once per forward pass) and the KV
cache (written for every processed token, read by decode steps); activations stay on chip.

* :func:`mha_prefill_decode`: one multi-head attention layer; prefill of `prompt_len` tokens with
  every query scoring every prompt key (no causal savings), then one decode step that attends to
  the cached prompt and itself.
* :func:`gqa_serving`: a model of `n_layers` identical layers with grouped-query attention and an
  optional gated MLP; causal prefill, then `gen_tokens` decode steps, each its own roofline point.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import numpy as np

GB = 10**9


def packed_bytes(elements: int, bits: int) -> int:
    return -(-elements * bits // 8)


def _log_uniform_int(rng: np.random.Generator, lo: int, hi: int) -> int:
    """An integer in [lo, hi], roughly log-uniform (integer arithmetic only: the same draw on
    every platform)."""
    octave = int(rng.integers(lo.bit_length() - 1, hi.bit_length()))
    a, b = max(lo, 1 << octave), min(hi, (1 << (octave + 1)) - 1)
    return int(rng.integers(a, b + 1))


# ------------------------------------------------------------------------------------------
# one MHA layer
# ------------------------------------------------------------------------------------------

def mha_prefill_decode(model: dict[str, Any], precision: dict[str, Any], run: dict[str, Any]) -> dict[str, Any]:
    d, h, d_ff = model["d_model"], model["n_heads"], model["d_ff"]
    hd = d // h
    b, length = run["batch"], run["prompt_len"]
    linear_per_token = 4 * d * d + 2 * d * d_ff  # MACs: Q, K, V, O projections and two MLP matrices
    prefill_macs = b * length * linear_per_token + 2 * b * h * length * length * hd
    decode_macs = b * linear_per_token + 2 * b * h * (length + 1) * hd
    weight_bytes = packed_bytes(linear_per_token, precision["weight_bits"])
    kv_token = 2 * d  # K and V elements of one token
    prefill_kv = packed_bytes(b * length * kv_token, precision["kv_bits"])
    decode_kv = packed_bytes(b * length * kv_token, precision["kv_bits"]) + packed_bytes(b * kv_token, precision["kv_bits"])
    prefill_flops, decode_flops = 2 * prefill_macs, 2 * decode_macs
    return {
        "prefill_flops": prefill_flops,
        "decode_flops": decode_flops,
        "weight_bytes": weight_bytes,
        "prefill_kv_bytes": prefill_kv,
        "decode_kv_bytes": decode_kv,
        "prefill_intensity": float(Fraction(prefill_flops, weight_bytes + prefill_kv)),
        "decode_intensity": float(Fraction(decode_flops, weight_bytes + decode_kv)),
    }


_ODD_BITS = (1, 2, 3, 5, 6, 7, 9, 10, 12)


def gen_mha(rng: np.random.Generator, odd_bits: bool = False, large: bool = False) -> dict[str, Any]:
    """A real layer shape, a batch and a log-uniform prompt length. ``odd_bits`` redraws the
    bit widths among sub-byte and odd ones and the layer as a small odd one, so the packed byte
    counts round up (except where ``large`` redraws the run instead: half of the time, an odd
    batch to 2^12 and an odd prompt of 2^14..2^26 tokens on the real layer with an odd d_ff,
    FLOPs past 2^53)."""
    head_dim = int(rng.choice((16, 32, 64, 64, 128)))
    n_heads = int(rng.choice((1, 2, 4, 8, 12, 16, 32)))
    d = head_dim * n_heads
    model = {"d_model": d, "n_heads": n_heads,
             "d_ff": int(d * rng.choice((2, 3, 4, 4)) + int(rng.choice((0, 0, 8, 64))))}
    precision = {"weight_bits": int(rng.choice((4, 8, 16, 16))), "kv_bits": int(rng.choice((4, 8, 16, 16)))}
    run = {"batch": int(rng.choice((1, 1, 2, 4, 8, 16, 32))),
           "prompt_len": _log_uniform_int(rng, 1, 8192)}
    if odd_bits:
        precision = {"weight_bits": int(rng.choice(_ODD_BITS)), "kv_bits": int(rng.choice(_ODD_BITS))}
    if large and rng.random() < 0.5:  # an odd d_ff and odd sizes: FLOPs with more than 53 significant bits
        run = {"batch": int(2 ** rng.uniform(4, 12)) | 1, "prompt_len": int(2 ** rng.uniform(14, 26)) | 1}
        model["d_ff"] |= 1
    elif odd_bits:  # a small odd layer: with a multiple of 16 as d_model every count fills whole bytes
        heads = int(rng.choice((1, 3)))
        model = {"d_model": heads * int(rng.choice((1, 3, 5, 7))), "n_heads": heads,
                 "d_ff": int(rng.choice((1, 3, 9, 11, 33)))}
    return {"model": model, "precision": precision, "run": run}


# ------------------------------------------------------------------------------------------
# a GQA model: prefill and a run of decode steps on a roofline
# ------------------------------------------------------------------------------------------

def gqa_linear_macs_per_token(model: dict[str, Any]) -> int:
    """MACs of one token through the weight matrices of one layer (= the layer's parameters)."""
    d, hd, ff = model["d_model"], model["head_dim"], model["d_ff"]
    q = d * model["n_heads"] * hd
    kv = 2 * d * model["n_kv_heads"] * hd
    o = model["n_heads"] * hd * d
    mlp = (3 if model["gated_mlp"] else 2) * d * ff
    return q + kv + o + mlp


def gqa_serving(model: dict[str, Any], precision: dict[str, Any], run: dict[str, Any],
                hw: dict[str, Any]) -> dict[str, Any]:
    layers, hd, heads = model["n_layers"], model["head_dim"], model["n_heads"]
    b, length, steps = run["batch"], run["prompt_len"], run["gen_tokens"]
    params = layers * gqa_linear_macs_per_token(model)
    weight_bytes = packed_bytes(params, precision["weight_bits"])
    kv_token_bytes = packed_bytes(layers * 2 * model["n_kv_heads"] * hd, precision["kv_bits"])
    peak = hw["peak_gflops"] * GB
    bw = hw["hbm_gb_per_s"] * GB

    # prefill: causal attention, query i (1-based) scores i keys
    causal_pairs = length * (length + 1) // 2
    prefill_flops = 2 * (b * length * params + 2 * layers * b * heads * causal_pairs * hd)
    prefill_bytes = weight_bytes + b * length * kv_token_bytes
    t_c, t_m = Fraction(prefill_flops, peak), Fraction(prefill_bytes, bw)
    prefill_latency = max(t_c, t_m)

    # decode step j processes token L + j: it attends to L + j + 1 keys, reads L + j cached tokens
    decode_flops = decode_bytes = memory_steps = 0
    decode_latency = Fraction(0)
    for j in range(steps):
        f = 2 * (b * params + 2 * layers * b * heads * (length + j + 1) * hd)
        m = weight_bytes + b * (length + j) * kv_token_bytes + b * kv_token_bytes
        decode_flops += f
        decode_bytes += m
        tc, tm = Fraction(f, peak), Fraction(m, bw)
        decode_latency += max(tc, tm)
        memory_steps += tm > tc
    return {
        "prefill_flops": prefill_flops,
        "prefill_bytes": prefill_bytes,
        "prefill_latency_ms": float(prefill_latency * 1000),
        "prefill_bound": "compute" if t_c >= t_m else "memory",
        "decode_flops": decode_flops,
        "decode_bytes": decode_bytes,
        "decode_latency_ms": float(decode_latency * 1000),
        "decode_memory_bound_steps": memory_steps,
        "kv_cache_bytes": b * (length + steps) * kv_token_bytes,
    }


_HW = ((50_000, 400), (125_000, 900), (312_000, 2039), (197_000, 819), (989_000, 3350), (20_000, 100),
       (1_000, 500), (4_000, 200))


def gen_gqa(rng: np.random.Generator, max_gen: int = 256, odd_bits: bool = False, large: bool = False) -> dict[str, Any]:
    """Models from tiny to large, GQA ratios from MHA to MQA, gated and plain MLPs, batches large
    enough that decode steps cross from memory- to compute-bound, short and long prompts.
    ``odd_bits`` draws sub-byte and odd bit widths and an odd head_dim, d_model and d_ff (the
    packed bytes round up); ``large`` redraws half of the runs with odd prompts of 2^14..2^24
    tokens (FLOPs past 2^53)."""
    hd = int(rng.choice((32, 64, 64, 128, 128)))
    heads = int(rng.choice((4, 8, 12, 16, 32, 40, 64)))
    kv_choices = [g for g in (1, 2, 4, 8, heads) if heads % g == 0]
    kv = int(rng.choice(kv_choices))
    d = hd * heads if rng.random() < 0.8 else int(rng.choice((512, 1024, 2048, 3072)))
    gated = bool(rng.random() < 0.6)
    ff = int(d * (rng.uniform(2.5, 3.5) if gated else 4))
    ff -= ff % 8
    model = {"n_layers": int(rng.choice((1, 2, 4, 12, 24, 32, 48, 80))), "d_model": d, "n_heads": heads,
             "n_kv_heads": kv, "head_dim": hd, "d_ff": ff, "gated_mlp": gated}
    precision = {"weight_bits": int(rng.choice((4, 8, 16, 16))), "kv_bits": int(rng.choice((4, 8, 16, 16)))}
    run = {"batch": int(rng.choice((1, 1, 2, 4, 8, 32, 64, 128, 256, 512))),
           "prompt_len": _log_uniform_int(rng, 1, 8192),
           "gen_tokens": int(rng.integers(1, max_gen + 1))}
    if odd_bits:
        precision = {"weight_bits": int(rng.choice(_ODD_BITS)), "kv_bits": int(rng.choice(_ODD_BITS))}
        model.update(head_dim=int(rng.choice((1, 3, 5, 7, 9))), d_model=int(rng.choice((3, 5, 7, 9, 15))),
                     d_ff=int(rng.choice((1, 3, 9, 11, 33))), n_layers=int(rng.choice((1, 3, 5))))
    if large and rng.random() < 0.5:
        run["prompt_len"] = int(2 ** rng.uniform(14, 24)) | 1
        run["batch"] |= 1
    peak, bw = _HW[int(rng.integers(len(_HW)))]
    if run["gen_tokens"] > 1 and rng.random() < 0.4:
        # put the ridge point between the intensities of the first and the last decode step, so
        # the decode run crosses from one bound to the other
        first, last = (_decode_step_intensity(model, precision, run, j) for j in (0, run["gen_tokens"] - 1))
        if first != last:
            ridge = first + (last - first) * Fraction(int(rng.integers(15, 86)), 100)
            peak = max(1, round(ridge * bw))
    hw = {"peak_gflops": peak, "hbm_gb_per_s": bw}
    return {"model": model, "precision": precision, "run": run, "hw": hw}


def _decode_step_intensity(model: dict[str, Any], precision: dict[str, Any], run: dict[str, Any], j: int) -> Fraction:
    layers, hd = model["n_layers"], model["head_dim"]
    b, length = run["batch"], run["prompt_len"]
    params = layers * gqa_linear_macs_per_token(model)
    kv_token_bytes = packed_bytes(layers * 2 * model["n_kv_heads"] * hd, precision["kv_bits"])
    f = 2 * (b * params + 2 * layers * b * model["n_heads"] * (length + j + 1) * hd)
    m = packed_bytes(params, precision["weight_bits"]) + b * (length + j + 1) * kv_token_bytes
    return Fraction(f, m)


REFERENCES = {
    "attention.mha_prefill_decode": mha_prefill_decode,
    "attention.gqa_serving": gqa_serving,
}

GENERATORS = {
    "attention.mha": gen_mha,
    "attention.gqa": gen_gqa,
}
