"""F2 roofline: operational intensity, ridge point, attainable throughput, latency and bound.

Two models:

* :func:`roofline_gemm`: one GEMM against one memory (DRAM) and a compute peak. Every tensor
  crosses the DRAM interface exactly once; one MAC is two FLOPs; bandwidth in GB/s (10^9 B/s).
* :func:`roofline_hierarchical`: a kernel with given traffic at several memory levels, each with
  its own bandwidth in GB/s, GiB/s or bytes per cycle; the slowest of compute and every level
  sets the latency.

Every comparison is exact (``fractions.Fraction``): the inputs are integers, so times are ratios
of integers and a tie at the ridge point is a true tie. Ties go to ``"compute"``.
"""

from __future__ import annotations

from fractions import Fraction
from math import gcd
from typing import Any

import numpy as np

GB = 10**9
GIB = 2**30
MHZ = 10**6

BANDWIDTH_UNITS = ("GB/s", "GiB/s", "B/cycle")


def packed_bytes(elements: int, bits: int) -> int:
    """Bytes for `elements` values of `bits` bits, packed, rounded up to a whole byte."""
    return -(-elements * bits // 8)


def peak_flops_per_s(macs_per_cycle: int, clock_mhz: int) -> int:
    """Compute peak in FLOP/s: two FLOPs per MAC."""
    return 2 * macs_per_cycle * clock_mhz * MHZ


def bandwidth_bytes_per_s(bandwidth: int, unit: str, clock_mhz: int) -> int:
    """A bandwidth in bytes per second (an exact integer for integer inputs)."""
    if unit == "GB/s":
        return bandwidth * GB
    if unit == "GiB/s":
        return bandwidth * GIB
    if unit == "B/cycle":
        return bandwidth * clock_mhz * MHZ
    raise ValueError(f"unknown bandwidth unit {unit!r}")


# ------------------------------------------------------------------------------------------
# one GEMM, one memory
# ------------------------------------------------------------------------------------------

def gemm_dram_bytes(gemm: dict[str, Any]) -> int:
    m, n, k = gemm["M"], gemm["N"], gemm["K"]
    return (packed_bytes(m * k, gemm["input_bits"]) + packed_bytes(k * n, gemm["weight_bits"])
            + packed_bytes(m * n, gemm["output_bits"]))


def roofline_gemm(gemm: dict[str, Any], hw: dict[str, Any]) -> dict[str, Any]:
    macs = gemm["M"] * gemm["N"] * gemm["K"]
    flops = 2 * macs
    dram_bytes = gemm_dram_bytes(gemm)
    peak = peak_flops_per_s(hw["macs_per_cycle"], hw["clock_mhz"])
    bw = hw["dram_gb_per_s"] * GB
    t_compute = Fraction(flops, peak)
    t_memory = Fraction(dram_bytes, bw)
    latency = max(t_compute, t_memory)
    return {
        "flops": flops,
        "dram_bytes": dram_bytes,
        "intensity": float(Fraction(flops, dram_bytes)),
        "peak_gflops": float(Fraction(peak, GB)),
        "ridge_point": float(Fraction(peak, bw)),
        "attainable_gflops": float(Fraction(flops) / latency / GB),
        "latency_us": float(latency * MHZ),
        "bound": "compute" if t_compute >= t_memory else "memory",
    }


_MPC = (16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384)
_CLOCKS = (200, 250, 400, 500, 600, 700, 750, 800, 900, 1000, 1200, 1250, 1400, 1500, 1600, 1800, 2000, 2400)
_BITS = (4, 8, 8, 16, 16, 32)


def _log_int(rng: np.random.Generator, lo: int, hi: int) -> int:
    """An integer in [lo, hi], roughly log-uniform: a random power-of-two octave, then a uniform
    value inside it (integer arithmetic only, so every platform draws the same numbers)."""
    lo, hi = max(1, lo), max(1, lo, hi)
    octave = int(rng.integers(lo.bit_length() - 1, hi.bit_length()))
    a, b = max(lo, 1 << octave), min(hi, (1 << (octave + 1)) - 1)
    return int(rng.integers(a, b + 1)) if a <= b else lo


def gen_gemm_roofline(rng: np.random.Generator, tie_fraction: float = 0.3,
                      max_dim: int = 4096) -> dict[str, Any]:
    """A GEMM and a machine. A share of the cases sits exactly on the ridge point (a tie); the
    rest mix compute- and memory-bound cases, odd sizes and 4-bit tensors (byte rounding), with
    M, N and K up to `max_dim` (past 2^17, FLOPs and bytes pass 2^53)."""
    if rng.random() < tie_fraction:
        while True:
            dims = [int(rng.choice([16, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024, 2048]))
                    for _ in range(3)]
            bits = [int(rng.choice(_BITS)) for _ in range(3)]
            gemm = {"M": dims[0], "N": dims[1], "K": dims[2],
                    "input_bits": bits[0], "weight_bits": bits[1], "output_bits": bits[2]}
            macs = dims[0] * dims[1] * dims[2]
            nbytes = gemm_dram_bytes(gemm)
            # tie: macs * bw * 1000 == mpc * clock * bytes
            options = []
            for mpc in _MPC:
                for clock in _CLOCKS:
                    num = mpc * clock * nbytes
                    den = macs * 1000
                    if num % den == 0 and 1 <= num // den <= 20000:
                        options.append((mpc, clock, num // den))
            if options:
                mpc, clock, bw = options[int(rng.integers(len(options)))]
                return {"gemm": gemm, "hw": {"macs_per_cycle": mpc, "clock_mhz": clock, "dram_gb_per_s": bw}}
    gemm = {
        "M": _log_int(rng, 1, max_dim), "N": _log_int(rng, 1, max_dim), "K": _log_int(rng, 1, max_dim),
        "input_bits": int(rng.choice(_BITS)), "weight_bits": int(rng.choice(_BITS)),
        "output_bits": int(rng.choice(_BITS)),
    }
    if rng.random() < 0.4:
        # a 4-bit tensor with an odd element count: its bytes need rounding up
        tensor, dims = [("input", "MK"), ("weight", "KN"), ("output", "MN")][int(rng.integers(3))]
        gemm[f"{tensor}_bits"] = 4
        for d in dims:
            gemm[d] |= 1
    hw = {"macs_per_cycle": int(rng.choice(_MPC)), "clock_mhz": int(rng.choice(_CLOCKS)),
          "dram_gb_per_s": _log_int(rng, 8, 4000)}
    return {"gemm": gemm, "hw": hw}


# ------------------------------------------------------------------------------------------
# several memory levels
# ------------------------------------------------------------------------------------------

def level_bytes(kernel: dict[str, Any], entry: dict[str, Any]) -> int:
    return (packed_bytes(entry["input_elements"], kernel["input_bits"])
            + packed_bytes(entry["weight_elements"], kernel["weight_bits"])
            + packed_bytes(entry["output_elements"], kernel["output_bits"]))


def roofline_hierarchical(kernel: dict[str, Any], hw: dict[str, Any]) -> dict[str, Any]:
    flops = 2 * kernel["macs"]
    peak = peak_flops_per_s(hw["macs_per_cycle"], hw["clock_mhz"])
    t_compute = Fraction(flops, peak)
    nbytes: list[int] = []
    intensity: list[float] = []
    ridge: list[float] = []
    bound, t_max = "compute", t_compute
    for level, entry in zip(hw["levels"], kernel["traffic"]):
        b = level_bytes(kernel, entry)
        bw = bandwidth_bytes_per_s(level["bandwidth"], level["unit"], hw["clock_mhz"])
        nbytes.append(b)
        intensity.append(float(Fraction(flops, b)))
        ridge.append(float(Fraction(peak, bw)))
        t = Fraction(b, bw)
        if t > t_max:  # strictly slower: compute and earlier levels win ties
            bound, t_max = level["name"], t
    return {
        "flops": flops,
        "peak_gflops": float(Fraction(peak, GB)),
        "level_bytes": nbytes,
        "intensity": intensity,
        "ridge_point": ridge,
        "attainable_gflops": float(Fraction(flops) / t_max / GB),
        "latency_us": float(t_max * MHZ),
        "bound": bound,
    }


_LEVEL_NAMES = ("L1", "L2", "LLC", "DRAM")
_LEVEL_UNITS = {"L1": ("B/cycle",), "L2": ("B/cycle", "GiB/s"), "LLC": ("GiB/s", "GB/s"),
                "DRAM": ("GB/s", "GiB/s")}
_LEVEL_BW = {"B/cycle": (8, 512), "GiB/s": (50, 4000), "GB/s": (10, 3000)}


def _split_bytes(rng: np.random.Generator, total: int, bits: dict[str, int]) -> dict[str, int] | None:
    """Element counts whose packed bytes add up to exactly `total`.

    One tensor of at most 8 bits absorbs the remainder, so any total >= 1 is reachable."""
    small = [t for t in ("input", "weight", "output") if bits[t] <= 8]
    if not small or total < 1:
        return None
    absorber = small[int(rng.integers(len(small)))]
    out = {}
    used = 0
    for t in ("input", "weight", "output"):
        if t == absorber:
            continue
        share = int(rng.integers(0, max(1, total // 3) + 1)) if rng.random() < 0.85 else 0
        elements = share * 8 // bits[t]
        out[t] = elements
        used += packed_bytes(elements, bits[t])
    rest = total - used
    if rest < 1:
        return None
    out[absorber] = rest * 8 // bits[absorber]
    return out


def gen_hierarchical_roofline(rng: np.random.Generator, tie_fraction: float = 0.45,
                              max_levels: int = 4, min_levels: int = 2,
                              max_macs: int = 10**11) -> dict[str, Any]:
    """A kernel with traffic at min_levels..max_levels memory levels of mixed bandwidth units
    (a random kernel performs up to `max_macs` MACs).

    Modes: a random kernel; compute tied exactly with the slowest level; two levels tied exactly
    for the slowest (and slower than compute)."""
    while True:
        n_levels = int(rng.integers(min_levels, max_levels + 1))
        names = sorted(rng.choice(_LEVEL_NAMES, size=n_levels, replace=False).tolist(),
                       key=_LEVEL_NAMES.index)
        if "DRAM" not in names:
            names[-1] = "DRAM"
            names = sorted(set(names), key=_LEVEL_NAMES.index)
            if len(names) < min(2, min_levels):
                continue
        mpc = int(rng.choice(_MPC))
        clock = int(rng.choice(_CLOCKS))
        levels = []
        for name in names:
            unit = str(rng.choice(_LEVEL_UNITS[name]))
            lo, hi = _LEVEL_BW[unit]
            levels.append({"name": name, "bandwidth": _log_int(rng, lo, hi), "unit": unit})
        bits = {t: int(rng.choice(_BITS)) for t in ("input", "weight", "output")}
        hw = {"macs_per_cycle": mpc, "clock_mhz": clock, "levels": levels}
        bws = [bandwidth_bytes_per_s(lv["bandwidth"], lv["unit"], clock) for lv in levels]
        peak = peak_flops_per_s(mpc, clock)
        u = rng.random()
        traffic = None
        if u < tie_fraction / 2:
            traffic, macs = _tie_compute(rng, bits, bws, peak)
        elif u < tie_fraction and len(bws) >= 2:
            traffic, macs = _tie_levels(rng, bits, bws, peak)
        else:
            macs = _log_int(rng, 1000, max_macs)
            traffic = []
            for _ in names:
                split = {t: _log_int(rng, 1, 10**8) if rng.random() < 0.85 else 0 for t in bits}
                if all(v == 0 for v in split.values()):
                    split["input"] = 1
                traffic.append(split)
        if traffic is None:
            continue
        kernel = {"macs": int(macs), "input_bits": bits["input"], "weight_bits": bits["weight"],
                  "output_bits": bits["output"],
                  "traffic": [{"level": name, "input_elements": int(s["input"]),
                               "weight_elements": int(s["weight"]), "output_elements": int(s["output"])}
                              for name, s in zip(names, traffic)]}
        return {"kernel": kernel, "hw": hw}


def _fill_below(rng: np.random.Generator, bits: dict[str, int], bws: list[int], t_max: Fraction,
                fixed: dict[int, int]) -> list[dict[str, int]] | None:
    """Traffic per level: the levels in `fixed` get exactly that many bytes, the others take at
    most 90% of t_max at their bandwidth."""
    traffic = []
    for i, bw in enumerate(bws):
        if i in fixed:
            total = fixed[i]
        else:
            cap = int(t_max * bw * Fraction(9, 10))
            if cap < 1:
                return None
            total = _log_int(rng, 1, cap)
        split = _split_bytes(rng, total, bits)
        if split is None:
            return None
        traffic.append(split)
    return traffic


def _tie_compute(rng: np.random.Generator, bits: dict[str, int], bws: list[int],
                 peak: int) -> tuple[list[dict[str, int]] | None, int]:
    """Compute time equals the time of one level exactly; the other levels are faster."""
    i = int(rng.integers(len(bws)))
    # bytes_i = flops * bw_i / peak = macs * bw_i / (peak / 2) must be an integer
    step = Fraction(bws[i], peak // 2).denominator
    if step > 10**11:
        return None, 0
    macs = step * _log_int(rng, max(1, 10**4 // step), max(2, 10**11 // step))
    t = Fraction(2 * macs, peak)
    target = t * bws[i]
    if target.denominator != 1 or target < 1 or target > 10**12:
        return None, 0
    return _fill_below(rng, bits, bws, t, {i: int(target)}), macs


def _tie_levels(rng: np.random.Generator, bits: dict[str, int], bws: list[int],
                peak: int) -> tuple[list[dict[str, int]] | None, int]:
    """Two levels share the largest time exactly; compute is faster."""
    i, j = sorted(rng.choice(len(bws), size=2, replace=False).tolist())
    g = gcd(bws[i], bws[j])
    unit_i, unit_j = bws[i] // g, bws[j] // g  # bytes_i : bytes_j = bw_i : bw_j
    if unit_i > 10**11 or unit_j > 10**11:
        return None, 0
    scale = _log_int(rng, 1, max(1, 10**11 // max(unit_i, unit_j)))
    b_i, b_j = unit_i * scale, unit_j * scale
    t = Fraction(b_i, bws[i])
    max_macs = int(t * peak / 2 * Fraction(9, 10))
    if max_macs < 1:
        return None, 0
    macs = _log_int(rng, 1, max_macs)
    return _fill_below(rng, bits, bws, t, {i: b_i, j: b_j}), macs


REFERENCES = {
    "roofline.roofline_gemm": roofline_gemm,
    "roofline.roofline_hierarchical": roofline_hierarchical,
}

GENERATORS = {
    "roofline.gemm": gen_gemm_roofline,
    "roofline.hierarchical": gen_hierarchical_roofline,
}
