"""Domain samplers of the perf-core pack (roofline, tile footprint, loop-nest traffic, access
counts, sliding-window deltas and array edges): inputs drawn from the whole domain a problem
states.

Each sampler is written from its problem's spec and ``[[domain]]`` rules alone and shares no code
with the generators (the validator refuses a shared module). Where the spec bounds no size, a
draw picks one of three scales (small, a real layer's, or far past any real layer, where counts
pass 2^31 and 2^53). ``sample(rng, **options) -> {parameter: value}``, drawn from ``rng`` only.
"""

from __future__ import annotations

from math import gcd
from typing import Any

from .samplers import _log_int

_BITS = (4, 8, 16, 32)


def _pick(rng: Any, values: Any) -> Any:
    return values[int(rng.integers(len(values)))]


def _scaled(rng: Any, scale: int, small: int = 16, real: int = 4096, huge: int = 1 << 28) -> int:
    """A positive size at one of three scales: small, a real layer's, anything up to `huge`."""
    return _log_int(rng, 1, (small, real, huge)[scale])


def _packed(elements: int, bits: int) -> int:
    return (elements * bits + 7) // 8


# ------------------------------------------------------------------------------------------
# F2: roofline
# ------------------------------------------------------------------------------------------

def sample_roofline_gemm(rng: Any) -> dict[str, Any]:
    """perf-core/f2-roofline-gemm: any GEMM and machine with positive integers and bit widths of
    4, 8, 16 or 32. A third of the draws sit exactly on the ridge point: the bandwidth and the
    compute peak are chosen so that MACs * GB/s * 1000 = MACs/cycle * MHz * bytes."""
    scale = int(rng.integers(0, 3))
    gemm = {"M": _scaled(rng, scale), "N": _scaled(rng, scale), "K": _scaled(rng, scale),
            "input_bits": _pick(rng, _BITS), "weight_bits": _pick(rng, _BITS),
            "output_bits": _pick(rng, _BITS)}
    if rng.random() < 0.35:
        macs = gemm["M"] * gemm["N"] * gemm["K"]
        nbytes = (_packed(gemm["M"] * gemm["K"], gemm["input_bits"])
                  + _packed(gemm["K"] * gemm["N"], gemm["weight_bits"])
                  + _packed(gemm["M"] * gemm["N"], gemm["output_bits"]))
        g = gcd(nbytes, 1000 * macs)
        t = _log_int(rng, 1, 64)
        bandwidth = nbytes // g * t
        peak_macs_per_us = 1000 * macs // g * t           # macs_per_cycle * clock_mhz
        clock = gcd(peak_macs_per_us, _log_int(rng, 1, 4096))
        hw = {"macs_per_cycle": peak_macs_per_us // clock, "clock_mhz": clock, "dram_gb_per_s": bandwidth}
    else:
        hw = {"macs_per_cycle": _log_int(rng, 1, 1 << (14 if rng.random() < 0.8 else 40)),
              "clock_mhz": _log_int(rng, 1, 4000 if rng.random() < 0.8 else 1 << 30),
              "dram_gb_per_s": _log_int(rng, 1, 8000 if rng.random() < 0.8 else 1 << 40)}
    return {"gemm": gemm, "hw": hw}


SAMPLERS = {
    "samplers_core_a.roofline_gemm": sample_roofline_gemm,
}
