def _bytes(elements, bits):
    return (elements * bits + 7) // 8


def mha_prefill_decode(model: dict, precision: dict, run: dict) -> dict:
    d, h, d_ff = model["d_model"], model["n_heads"], model["d_ff"]
    head_dim = d // h
    b, L = run["batch"], run["prompt_len"]

    linear = 4 * d * d + 2 * d * d_ff                   # MACs per token = parameters
    prefill_attn = 2 * b * h * L * L * head_dim         # scores + A V, full square
    decode_attn = 2 * b * h * (L + 1) * head_dim        # the new token sees L + 1 keys
    prefill_flops = b * L * linear + prefill_attn
    decode_flops = b * linear + decode_attn

    weight_bytes = _bytes(linear, precision["weight_bits"])
    kv_per_token = 2 * d                                # K and V
    prefill_kv = _bytes(b * L * kv_per_token, precision["kv_bits"])
    decode_kv = _bytes(b * L * kv_per_token, precision["kv_bits"]) + _bytes(b * kv_per_token, precision["kv_bits"])
    return {
        "prefill_flops": prefill_flops,
        "decode_flops": decode_flops,
        "weight_bytes": weight_bytes,
        "prefill_kv_bytes": prefill_kv,
        "decode_kv_bytes": decode_kv,
        "prefill_intensity": prefill_flops / (weight_bytes + prefill_kv),
        "decode_intensity": decode_flops / (weight_bytes + decode_kv),
    }
