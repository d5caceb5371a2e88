from fractions import Fraction


def _bytes(elements, bits):
    return (elements * bits + 7) // 8


def gqa_serving(model: dict, precision: dict, run: dict, hw: dict) -> dict:
    n_layers, d, h, g = model["n_layers"], model["d_model"], model["n_heads"], model["n_kv_heads"]
    e, f = model["head_dim"], model["d_ff"]
    B, L, G = run["batch"], run["prompt_len"], run["gen_tokens"]
    peak = hw["peak_gflops"] * 10**9          # FLOP/s
    bw = hw["hbm_gb_per_s"] * 10**9           # bytes/s

    mlp = (3 if model["gated_mlp"] else 2) * d * f
    params = n_layers * (d * h * e + 2 * d * g * e + h * e * d + mlp)
    weight_bytes = _bytes(params, precision["weight_bits"])
    kv_token_bytes = _bytes(n_layers * 2 * g * e, precision["kv_bits"])

    def attention_macs(pairs):
        # scores and A V, for every query head of every layer
        return n_layers * B * h * pairs * e * 2

    prefill_flops = 2 * (B * L * params + attention_macs(L * (L + 1) // 2))
    prefill_bytes = weight_bytes + B * L * kv_token_bytes
    t_c, t_m = Fraction(prefill_flops, peak), Fraction(prefill_bytes, bw)

    decode_flops = decode_bytes = memory_steps = 0
    decode_time = Fraction(0)
    for j in range(G):
        flops = 2 * (B * params + attention_macs(L + j + 1))
        nbytes = (weight_bytes if j == 0 else 0) + B * (L + j) * kv_token_bytes + B * kv_token_bytes
        tc, tm = Fraction(flops, peak), Fraction(nbytes, bw)
        decode_flops += flops
        decode_bytes += nbytes
        decode_time += max(tc, tm)
        if tm > tc:
            memory_steps += 1

    return {
        "prefill_flops": prefill_flops,
        "prefill_bytes": prefill_bytes,
        "prefill_latency_ms": float(max(t_c, t_m) * 1000),
        "prefill_bound": "compute" if t_c >= t_m else "memory",
        "decode_flops": decode_flops,
        "decode_bytes": decode_bytes,
        "decode_latency_ms": float(decode_time * 1000),
        "decode_memory_bound_steps": memory_steps,
        "kv_cache_bytes": B * (L + G) * kv_token_bytes,
    }
