"""Attention references against an instrumented forward pass: a small numpy transformer whose
matmuls count their MACs and whose weights and KV cache count the elements they hold, read and
write. Large generator cases are checked by direct summation over queries and decode steps."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from support import trusted  # noqa: E402
_TRUSTED = trusted("perf-core")
at = _TRUSTED.submodule("attention")

N_RANDOM = 300


class Meter:
    """Counts MACs of every matmul, and elements read from / written to the KV cache."""

    def __init__(self) -> None:
        self.macs = 0
        self.kv_read = 0
        self.kv_written = 0

    def mm(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        assert a.ndim == 2 and b.ndim == 2 and a.shape[1] == b.shape[0]
        self.macs += a.shape[0] * a.shape[1] * b.shape[1]
        return a @ b


class Model:
    """One or more decoder layers: GQA (MHA when kv_heads == heads), plain or gated MLP."""

    def __init__(self, rng, layers, d, heads, kv_heads, head_dim, d_ff, gated):
        self.heads, self.kv_heads, self.e = heads, kv_heads, head_dim
        self.layers = []
        for _ in range(layers):
            w = {"q": rng.standard_normal((d, heads * head_dim)), "k": rng.standard_normal((d, kv_heads * head_dim)),
                 "v": rng.standard_normal((d, kv_heads * head_dim)), "o": rng.standard_normal((heads * head_dim, d)),
                 "up": rng.standard_normal((d, d_ff)), "down": rng.standard_normal((d_ff, d))}
            if gated:
                w["gate"] = rng.standard_normal((d, d_ff))
            self.layers.append(w)

    def n_params(self) -> int:
        return sum(a.size for w in self.layers for a in w.values())

    def token(self, m: Meter, x: np.ndarray, caches: list, attend_upto) -> np.ndarray:
        """Process one token of one sequence: x (1, d). caches[l] holds (k, v) rows of earlier
        tokens; attend_upto(n_cached) says how many cached rows (plus itself) it sees."""
        for w, cache in zip(self.layers, caches):
            q = m.mm(x, w["q"])
            k = m.mm(x, w["k"])
            v = m.mm(x, w["v"])
            n_seen = attend_upto(len(cache))
            seen = cache[:n_seen]
            m.kv_read += sum(kr.size + vr.size for kr, vr in seen) if self.reads_cache else 0
            keys = np.concatenate([kr for kr, _ in seen] + [k]) if seen else k
            vals = np.concatenate([vr for _, vr in seen] + [v]) if seen else v
            cache.append((k, v))
            m.kv_written += k.size + v.size
            heads_out = []
            group = self.heads // self.kv_heads
            for hh in range(self.heads):
                kv = hh // group
                qh = q[:, hh * self.e:(hh + 1) * self.e]
                kh = keys[:, kv * self.e:(kv + 1) * self.e]
                vh = vals[:, kv * self.e:(kv + 1) * self.e]
                s = m.mm(qh, kh.T)
                p = np.exp(s - s.max())
                p /= p.sum()
                heads_out.append(m.mm(p, vh))
            x = x + m.mm(np.concatenate(heads_out, axis=1), w["o"])
            u = m.mm(x, w["up"])
            if "gate" in w:
                u = u * m.mm(x, w["gate"])
            x = x + m.mm(np.maximum(u, 0), w["down"]) * 1e-3
        return x

    reads_cache = True


def _prefill(model: Model, m: Meter, batch: int, length: int, d: int, rng, causal: bool):
    """Prefill: token i sees tokens 1..i (causal) or all L prompt tokens (full square)."""
    caches = []
    for _ in range(batch):
        x = rng.standard_normal((length, d))
        cache = [[] for _ in model.layers]
        if causal:
            model.reads_cache = False  # in prefill the keys come from on chip, not from the cache
            for i in range(length):
                model.token(m, x[i:i + 1], cache, lambda n: n)
        else:
            # full square: every query scores all L keys (keys computed first, then attention)
            _full_square(model, m, x, cache)
        caches.append(cache)
    model.reads_cache = True
    return caches


def _full_square(model: Model, m: Meter, x: np.ndarray, cache: list) -> None:
    for w, c in zip(model.layers, cache):
        q, k, v = m.mm(x, w["q"]), m.mm(x, w["k"]), m.mm(x, w["v"])
        for i in range(x.shape[0]):
            c.append((k[i:i + 1], v[i:i + 1]))
            m.kv_written += k[i:i + 1].size + v[i:i + 1].size
        outs = []
        group = model.heads // model.kv_heads
        for hh in range(model.heads):
            kv = hh // group
            s = m.mm(q[:, hh * model.e:(hh + 1) * model.e], k[:, kv * model.e:(kv + 1) * model.e].T)
            outs.append(m.mm(np.exp(s - s.max()), v[:, kv * model.e:(kv + 1) * model.e]))
        x = x + m.mm(np.concatenate(outs, axis=1), w["o"])
        u = m.mm(x, w["up"])
        if "gate" in w:
            u = u * m.mm(x, w["gate"])
        x = x + m.mm(np.maximum(u, 0), w["down"]) * 1e-3


def _decode_step(model: Model, m: Meter, caches: list, d: int, rng) -> None:
    for cache in caches:
        model.token(m, rng.standard_normal((1, d)), cache, lambda n: n)


def _bytes(elements: int, bits: int) -> int:
    return math.ceil(Fraction(elements * bits, 8))


# ------------------------------------------------------------------------------------------
# MHA, one layer
# ------------------------------------------------------------------------------------------

def _check_mha_traced(args: dict, rng) -> None:
    mo, pr, ru = args["model"], args["precision"], args["run"]
    d, h = mo["d_model"], mo["n_heads"]
    model = Model(rng, 1, d, h, h, d // h, mo["d_ff"], gated=False)
    pre = Meter()
    caches = _prefill(model, pre, ru["batch"], ru["prompt_len"], d, rng, causal=False)
    dec = Meter()
    _decode_step(model, dec, caches, d, rng)
    weight_bytes = _bytes(model.n_params(), pr["weight_bits"])
    pre_kv = _bytes(pre.kv_written, pr["kv_bits"])
    dec_kv = _bytes(dec.kv_read, pr["kv_bits"]) + _bytes(dec.kv_written, pr["kv_bits"])
    got = at.mha_prefill_decode(mo, pr, ru)
    assert got["prefill_flops"] == 2 * pre.macs and got["decode_flops"] == 2 * dec.macs
    assert got["weight_bytes"] == weight_bytes
    assert got["prefill_kv_bytes"] == pre_kv and got["decode_kv_bytes"] == dec_kv
    assert got["prefill_intensity"] == float(Fraction(2 * pre.macs, weight_bytes + pre_kv))
    assert got["decode_intensity"] == float(Fraction(2 * dec.macs, weight_bytes + dec_kv))


def test_mha_worked_example():
    got = at.mha_prefill_decode({"d_model": 8, "n_heads": 2, "d_ff": 16}, {"weight_bits": 8, "kv_bits": 16},
                                {"batch": 2, "prompt_len": 3})
    assert got == {"prefill_flops": 6720, "decode_flops": 2304, "weight_bytes": 512, "prefill_kv_bytes": 192,
                   "decode_kv_bytes": 256, "prefill_intensity": 6720 / 704, "decode_intensity": 3.0}


def test_mha_small_models_traced():
    rng = np.random.default_rng(31)
    for i in range(N_RANDOM):
        r = np.random.default_rng([31, i])
        h = int(r.choice([1, 2, 4]))
        args = {"model": {"d_model": h * int(r.choice([1, 2, 3, 4])), "n_heads": h, "d_ff": int(r.integers(1, 20))},
                "precision": {"weight_bits": int(r.choice([4, 8, 16])), "kv_bits": int(r.choice([4, 8, 16]))},
                "run": {"batch": int(r.integers(1, 4)), "prompt_len": int(r.integers(1, 9))}}
        _check_mha_traced(args, rng)


def test_mha_generator_cases_by_summation():
    for i in range(N_RANDOM):
        args = at.gen_mha(np.random.default_rng([32, i]))
        mo, pr, ru = args["model"], args["precision"], args["run"]
        d, h, ff = mo["d_model"], mo["n_heads"], mo["d_ff"]
        e = d // h
        b, n = ru["batch"], ru["prompt_len"]
        per_token = sum(rows * cols for rows, cols in [(d, d)] * 4 + [(d, ff), (ff, d)])
        prefill = b * n * per_token + sum(2 * n * e for _ in range(n)) * h * b  # each query: n keys
        decode = b * per_token + 2 * (n + 1) * e * h * b
        got = at.mha_prefill_decode(mo, pr, ru)
        assert got["prefill_flops"] == 2 * prefill and got["decode_flops"] == 2 * decode
        assert got["decode_kv_bytes"] - got["prefill_kv_bytes"] == b * 2 * d * pr["kv_bits"] // 8


# ------------------------------------------------------------------------------------------
# GQA serving
# ------------------------------------------------------------------------------------------

def _roof(flops: int, nbytes: int, hw: dict) -> tuple[Fraction, bool]:
    tc = Fraction(flops, hw["peak_gflops"] * 10**9)
    tm = Fraction(nbytes, hw["hbm_gb_per_s"] * 10**9)
    return max(tc, tm), tm > tc


def _check_gqa_traced(args: dict, rng) -> None:
    mo, pr, ru, hw = args["model"], args["precision"], args["run"], args["hw"]
    model = Model(rng, mo["n_layers"], mo["d_model"], mo["n_heads"], mo["n_kv_heads"], mo["head_dim"], mo["d_ff"],
                  mo["gated_mlp"])
    weight_bytes = _bytes(model.n_params(), pr["weight_bits"])
    per_token_kv = 2 * mo["n_kv_heads"] * mo["head_dim"] * mo["n_layers"]
    pre = Meter()
    caches = _prefill(model, pre, ru["batch"], ru["prompt_len"], mo["d_model"], rng, causal=True)
    assert pre.kv_read == 0
    pre_bytes = weight_bytes + _bytes(pre.kv_written, pr["kv_bits"])
    pre_t, pre_mem = _roof(2 * pre.macs, pre_bytes, hw)
    dec_flops = dec_bytes = mem_steps = 0
    dec_t = Fraction(0)
    for _ in range(ru["gen_tokens"]):
        m = Meter()
        _decode_step(model, m, caches, mo["d_model"], rng)
        # kv bytes per token are rounded per token (kv_token_bytes); here every count is a
        # multiple of one token's elements
        nbytes = weight_bytes + (m.kv_read + m.kv_written) // per_token_kv * _bytes(per_token_kv, pr["kv_bits"])
        t, mem = _roof(2 * m.macs, nbytes, hw)
        dec_flops += 2 * m.macs
        dec_bytes += nbytes
        dec_t += t
        mem_steps += mem
    cache_tokens = sum(len(c[0]) for c in caches)
    got = at.gqa_serving(mo, pr, ru, hw)
    assert got == {
        "prefill_flops": 2 * pre.macs, "prefill_bytes": pre_bytes, "prefill_latency_ms": float(pre_t * 1000),
        "prefill_bound": "memory" if pre_mem else "compute", "decode_flops": dec_flops, "decode_bytes": dec_bytes,
        "decode_latency_ms": float(dec_t * 1000), "decode_memory_bound_steps": mem_steps,
        "kv_cache_bytes": cache_tokens * _bytes(per_token_kv, pr["kv_bits"]),
    }


def test_gqa_worked_example():
    got = at.gqa_serving({"n_layers": 2, "d_model": 8, "n_heads": 4, "n_kv_heads": 2, "head_dim": 2, "d_ff": 12,
                          "gated_mlp": True}, {"weight_bits": 8, "kv_bits": 16},
                         {"batch": 1, "prompt_len": 4, "gen_tokens": 2}, {"peak_gflops": 4, "hbm_gb_per_s": 1})
    assert got == {"prefill_flops": 8320, "prefill_bytes": 1088, "prefill_latency_ms": 0.00208,
                   "prefill_bound": "compute", "decode_flops": 4544, "decode_bytes": 2272,
                   "decode_latency_ms": 0.002272, "decode_memory_bound_steps": 2, "kv_cache_bytes": 192}


def test_gqa_tie_is_compute_bound():
    # one layer, d 1, 1 head of dim 1, plain MLP f 1: 6 params; L 1: prefill 2*(6 + 2*1) = 16 FLOPs,
    # bytes 6 (8-bit weights) + 2 (8-bit K and V) = 8; peak 2 GFLOP/s and 1 GB/s: 8 ns each
    got = at.gqa_serving({"n_layers": 1, "d_model": 1, "n_heads": 1, "n_kv_heads": 1, "head_dim": 1, "d_ff": 1,
                          "gated_mlp": False}, {"weight_bits": 8, "kv_bits": 8},
                         {"batch": 1, "prompt_len": 1, "gen_tokens": 1}, {"peak_gflops": 2, "hbm_gb_per_s": 1})
    assert got["prefill_flops"] == 16 and got["prefill_bytes"] == 8 and got["prefill_bound"] == "compute"
    # decode step 0 (2 keys): 2*(6 + 2*2) = 20 FLOPs (10 ns), bytes 6 + 2 + 2 = 10 (10 ns): a tie, compute
    assert got["decode_flops"] == 20 and got["decode_bytes"] == 10 and got["decode_memory_bound_steps"] == 0
    assert got["decode_latency_ms"] == 1e-5


def _small_gqa(r: np.random.Generator) -> dict:
    heads = int(r.choice([1, 2, 4, 6]))
    kv = int(r.choice([g for g in (1, 2, 3, 6) if heads % g == 0]))
    return {
        "model": {"n_layers": int(r.integers(1, 3)), "d_model": int(r.integers(1, 9)), "n_heads": heads,
                  "n_kv_heads": kv, "head_dim": int(r.integers(1, 4)), "d_ff": int(r.integers(1, 9)),
                  "gated_mlp": bool(r.random() < 0.5)},
        "precision": {"weight_bits": int(r.choice([4, 8, 16])), "kv_bits": int(r.choice([4, 8, 16]))},
        "run": {"batch": int(r.integers(1, 3)), "prompt_len": int(r.integers(1, 7)), "gen_tokens": int(r.integers(1, 5))},
        "hw": {"peak_gflops": int(r.integers(1, 40)), "hbm_gb_per_s": int(r.integers(1, 10))},
    }


def test_gqa_small_models_traced():
    rng = np.random.default_rng(33)
    for i in range(N_RANDOM):
        _check_gqa_traced(_small_gqa(np.random.default_rng([33, i])), rng)


def test_gqa_generator_cases_by_summation():
    mixed = 0
    for i in range(N_RANDOM):
        args = at.gen_gqa(np.random.default_rng([34, i]))
        mo, pr, ru, hw = args["model"], args["precision"], args["run"], args["hw"]
        d, h, g, e, f = mo["d_model"], mo["n_heads"], mo["n_kv_heads"], mo["head_dim"], mo["d_ff"]
        shapes = [(d, h * e), (d, g * e), (d, g * e), (h * e, d)] + [(d, f)] * (2 if mo["gated_mlp"] else 1) + [(f, d)]
        params = mo["n_layers"] * sum(a * b for a, b in shapes)
        wb = _bytes(params, pr["weight_bits"])
        kvb = _bytes(mo["n_layers"] * 2 * g * e, pr["kv_bits"])
        b, n = ru["batch"], ru["prompt_len"]
        attn = lambda keys: mo["n_layers"] * b * h * 2 * keys * e  # noqa: E731
        pre_macs = b * n * params + sum(attn(i + 1) for i in range(n))
        pre_bytes = wb + b * n * kvb
        t, mem = _roof(2 * pre_macs, pre_bytes, hw)
        steps = [(2 * (b * params + attn(n + j + 1)), wb + b * (n + j + 1) * kvb) for j in range(ru["gen_tokens"])]
        roofs = [_roof(fl, by, hw) for fl, by in steps]
        got = at.gqa_serving(mo, pr, ru, hw)
        assert got["prefill_flops"] == 2 * pre_macs and got["prefill_bytes"] == pre_bytes
        assert got["prefill_latency_ms"] == float(t * 1000) and got["prefill_bound"] == ("memory" if mem else "compute")
        assert got["decode_flops"] == sum(s[0] for s in steps) and got["decode_bytes"] == sum(s[1] for s in steps)
        assert math.isclose(got["decode_latency_ms"], float(sum(r[0] for r in roofs) * 1000), rel_tol=1e-12)
        assert got["decode_memory_bound_steps"] == sum(r[1] for r in roofs)
        assert got["kv_cache_bytes"] == b * (n + ru["gen_tokens"]) * kvb
        mixed += 0 < got["decode_memory_bound_steps"] < ru["gen_tokens"]
    assert mixed >= N_RANDOM // 10  # decode runs that cross the ridge point
