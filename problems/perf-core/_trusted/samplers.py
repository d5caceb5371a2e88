"""Domain samplers of the perf-core pack: inputs drawn from the whole domain a problem states.

A sampler is written from the problem's spec and its ``[[domain]]`` rules alone, and shares no
code with the generators (the validator checks that no module is shared): where a generator
draws the traps it knows, a sampler draws everything the text allows, including sizes far past
any real layer when the spec sets no bound, so a corner no generator reaches still shows up in
the validator's coverage and adequacy checks. ``sample(rng, **options) -> {parameter: value}``,
drawn from ``rng`` only.
"""

from __future__ import annotations

from typing import Any


def _log_int(rng: Any, low: int, high: int) -> int:
    """An integer in low..high, log-uniform (each power of two as likely as the next)."""
    value = int(2 ** rng.uniform(low.bit_length() - 1, high.bit_length()))
    return max(low, min(high, value))


def sample_conv_layer_accounting(rng: Any, max_bits: int = 28) -> dict[str, Any]:
    """perf-core/f1-conv-layer-accounting: any conv2d layer the spec admits. The spec bounds no size,
    so each layer is drawn at one of three scales: small (every size under 16), a real network's
    (channels to 4096, maps to 512), or anything up to 2^max_bits per size, where the counts pass
    2^31 and 2^53. Stride, dilation and padding are independent of the filter; bit widths are any
    positive integers (sub-byte and odd ones included)."""
    scale = int(rng.integers(0, 3))
    top = (16, 4096, 1 << max_bits)[scale]
    maps = (16, 512, 1 << max_bits)[scale]
    while True:
        r = _log_int(rng, 1, min(maps, 11 if rng.random() < 0.8 else maps))
        s = r if rng.random() < 0.5 else _log_int(rng, 1, min(maps, 11 if rng.random() < 0.8 else maps))
        stride = _log_int(rng, 1, 4 if rng.random() < 0.8 else maps)
        dilation = 1 if rng.random() < 0.5 else _log_int(rng, 1, 4 if rng.random() < 0.8 else maps)
        padding = 0 if rng.random() < 0.3 else _log_int(rng, 1, max(1, dilation * max(r, s)))
        h, w = _log_int(rng, 1, maps), _log_int(rng, 1, maps)
        if (h + 2 * padding >= dilation * (r - 1) + 1) and (w + 2 * padding >= dilation * (s - 1) + 1):
            break
    layer = {"N": _log_int(rng, 1, top), "C": _log_int(rng, 1, top), "K": _log_int(rng, 1, top),
             "H": h, "W": w, "R": r, "S": s, "stride": stride, "padding": padding, "dilation": dilation}
    width = (lambda: _log_int(rng, 1, 64)) if rng.random() < 0.9 else (lambda: _log_int(rng, 1, 4096))
    precision = {"input_bits": width(), "weight_bits": width(), "output_bits": width()}
    return {"layer": layer, "precision": precision}


SAMPLERS = {
    "samplers.conv_layer_accounting": sample_conv_layer_accounting,
}
