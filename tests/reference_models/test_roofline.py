"""Roofline references against an independent formulation (intensity vs ridge point, attainable
throughput from the roofs) and hand-computed cases."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest

from support import trusted  # noqa: E402
_TRUSTED = trusted("perf-core")
rl = _TRUSTED.submodule("roofline")

N_RANDOM = 300


def _bytes(elements: int, bits: int) -> int:
    # independent of the reference's integer trick: exact rational ceiling
    return math.ceil(Fraction(elements * bits, 8))


def _bw(level: dict, clock_mhz: int) -> int:
    scale = {"GB/s": 1000**3, "GiB/s": 1024**3, "B/cycle": clock_mhz * 1000 * 1000}
    return level["bandwidth"] * scale[level["unit"]]


def _gemm_roofline_by_roofs(gemm: dict, hw: dict) -> dict:
    """Second formulation: decide the bound by intensity vs ridge point, take the attainable
    throughput from the two roofs and derive the latency from it."""
    flops = 2 * gemm["M"] * gemm["N"] * gemm["K"]
    nbytes = (_bytes(gemm["M"] * gemm["K"], gemm["input_bits"]) + _bytes(gemm["K"] * gemm["N"], gemm["weight_bits"])
              + _bytes(gemm["M"] * gemm["N"], gemm["output_bits"]))
    peak = Fraction(hw["macs_per_cycle"] * hw["clock_mhz"]) * 2 * 10**6
    bw = Fraction(hw["dram_gb_per_s"]) * 10**9
    intensity = Fraction(flops, nbytes)
    ridge = peak / bw
    attainable = min(peak, intensity * bw)
    return {
        "flops": flops, "dram_bytes": nbytes, "intensity": float(intensity), "peak_gflops": float(peak / 10**9),
        "ridge_point": float(ridge), "attainable_gflops": float(attainable / 10**9),
        "latency_us": float(flops / attainable * 10**6),
        "bound": "compute" if intensity >= ridge else "memory",
    }


def _hier_by_roofs(kernel: dict, hw: dict) -> dict:
    flops = 2 * kernel["macs"]
    peak = Fraction(2 * hw["macs_per_cycle"] * hw["clock_mhz"] * 10**6)
    rows = []
    for rank, (lv, tr) in enumerate(zip(hw["levels"], kernel["traffic"])):
        assert tr["level"] == lv["name"]
        b = sum(_bytes(tr[f"{t}_elements"], kernel[f"{t}_bits"]) for t in ("input", "weight", "output"))
        bw = _bw(lv, hw["clock_mhz"])
        rows.append((lv["name"], b, Fraction(flops, b), Fraction(peak) / bw, bw, rank))
    roofs = [("compute", peak, -1)] + [(name, i * bw, rank) for name, _, i, _, bw, rank in rows]
    attainable = min(r[1] for r in roofs)
    # lowest roof wins; among equal roofs compute first, then the earliest level
    bound = min(roofs, key=lambda r: (r[1], r[2]))[0]
    return {
        "flops": flops, "peak_gflops": float(peak / 10**9), "level_bytes": [r[1] for r in rows],
        "intensity": [float(r[2]) for r in rows], "ridge_point": [float(r[3]) for r in rows],
        "attainable_gflops": float(attainable / 10**9), "latency_us": float(flops / attainable * 10**6),
        "bound": bound,
    }


def _close(a, b) -> bool:
    if isinstance(a, list):
        return len(a) == len(b) and all(_close(x, y) for x, y in zip(a, b))
    if isinstance(a, float) or isinstance(b, float):
        return math.isclose(a, b, rel_tol=1e-12, abs_tol=0.0)
    return a == b and type(a) is type(b)


def _assert_same(got: dict, want: dict) -> None:
    assert sorted(got) == sorted(want)
    for k in want:
        assert _close(got[k], want[k]), (k, got[k], want[k])


# ------------------------------------------------------------------------------------------

def test_gemm_hand_tie_at_ridge_point():
    got = rl.roofline_gemm({"M": 64, "N": 64, "K": 32, "input_bits": 8, "weight_bits": 4, "output_bits": 8},
                           {"macs_per_cycle": 2048, "clock_mhz": 500, "dram_gb_per_s": 56})
    assert got["flops"] == 262144 and got["dram_bytes"] == 2048 + 1024 + 4096
    assert got["peak_gflops"] == 2048.0
    assert got["intensity"] == got["ridge_point"] == pytest.approx(256 / 7)
    assert got["latency_us"] == pytest.approx(0.128)
    assert got["attainable_gflops"] == pytest.approx(2048.0)
    assert got["bound"] == "compute"


def test_gemm_hand_memory_bound_and_rounding():
    got = rl.roofline_gemm({"M": 1, "N": 256, "K": 512, "input_bits": 8, "weight_bits": 8, "output_bits": 16},
                           {"macs_per_cycle": 2048, "clock_mhz": 500, "dram_gb_per_s": 56})
    assert got["dram_bytes"] == 132096 and got["bound"] == "memory"
    assert got["latency_us"] == pytest.approx(132096 / 56e9 * 1e6)
    # 7x1 input of 4 bits: 28 bits -> 4 bytes; 1x1 weight of 4 bits -> 1 byte; 7x1 output of 4 bits -> 4 bytes
    got = rl.roofline_gemm({"M": 7, "N": 1, "K": 1, "input_bits": 4, "weight_bits": 4, "output_bits": 4},
                           {"macs_per_cycle": 16, "clock_mhz": 1000, "dram_gb_per_s": 100})
    assert got["dram_bytes"] == 9


def test_gemm_macs_by_enumeration():
    for m, n, k in [(3, 5, 7), (1, 1, 1), (4, 2, 9)]:
        macs = sum(1 for _ in itertools.product(range(m), range(n), range(k)))
        got = rl.roofline_gemm({"M": m, "N": n, "K": k, "input_bits": 8, "weight_bits": 8, "output_bits": 8},
                               {"macs_per_cycle": 16, "clock_mhz": 100, "dram_gb_per_s": 10})
        assert got["flops"] == 2 * macs


def test_gemm_random_against_roofs():
    ties = bounds = 0
    for i in range(N_RANDOM):
        args = rl.gen_gemm_roofline(np.random.default_rng([5, i]))
        got = rl.roofline_gemm(args["gemm"], args["hw"])
        want = _gemm_roofline_by_roofs(args["gemm"], args["hw"])
        _assert_same(got, want)
        h = args["hw"]
        ties += want["flops"] * h["dram_gb_per_s"] * 10**9 == 2 * h["macs_per_cycle"] * h["clock_mhz"] * 10**6 * want["dram_bytes"]
        bounds += got["bound"] == "memory"
    # the traps appear: exact ties and both bounds
    assert ties >= N_RANDOM // 6 and N_RANDOM // 6 <= bounds <= N_RANDOM - N_RANDOM // 6


def test_hierarchical_hand_example():
    hw = {"macs_per_cycle": 256, "clock_mhz": 1000, "levels": [
        {"name": "L1", "bandwidth": 64, "unit": "B/cycle"}, {"name": "L2", "bandwidth": 200, "unit": "GiB/s"},
        {"name": "DRAM", "bandwidth": 100, "unit": "GB/s"}]}

    def tr(name, a, b, c):
        return {"level": name, "input_elements": a, "weight_elements": b, "output_elements": c}

    kernel = {"macs": 10**9, "input_bits": 8, "weight_bits": 4, "output_bits": 16, "traffic": [
        tr("L1", 120_000_000, 100_000_000, 20_000_000), tr("L2", 100_000_000, 200_000_000, 50_000_000),
        tr("DRAM", 150_000_000, 381_250_000, 25_000_000)]}
    got = rl.roofline_hierarchical(kernel, hw)
    assert got["level_bytes"] == [210_000_000, 300_000_000, 390_625_000]
    assert got["ridge_point"] == [8.0, 2.384185791015625, 5.12]
    assert got["bound"] == "compute" and got["latency_us"] == 3906.25 and got["attainable_gflops"] == 512.0
    kernel["traffic"][2]["input_elements"] += 1
    assert rl.roofline_hierarchical(kernel, hw)["bound"] == "DRAM"
    # two levels tied above compute: the earlier one is named
    kernel["traffic"] = [tr("L1", 64_000, 0, 0), tr("L2", 0, 0, 1), tr("DRAM", 100_000, 0, 0)]
    hw["levels"][0]["bandwidth"] = 64
    kernel["macs"] = 1
    got = rl.roofline_hierarchical(kernel, hw)
    assert got["bound"] == "L1" and got["latency_us"] == 1.0


def test_hierarchical_random_against_roofs():
    seen = {"compute_tie": 0, "level_tie": 0, "levels": set()}
    for i in range(N_RANDOM):
        args = rl.gen_hierarchical_roofline(np.random.default_rng([6, i]))
        k, h = args["kernel"], args["hw"]
        got = rl.roofline_hierarchical(k, h)
        _assert_same(got, _hier_by_roofs(k, h))
        t_c = Fraction(k["macs"], h["macs_per_cycle"] * h["clock_mhz"] * 10**6)
        times = [Fraction(b, _bw(lv, h["clock_mhz"])) for b, lv in zip(got["level_bytes"], h["levels"])]
        seen["compute_tie"] += t_c == max(times)
        seen["level_tie"] += max(times) > t_c and times.count(max(times)) > 1
        seen["levels"].add(got["bound"])
    assert seen["compute_tie"] >= 30 and seen["level_tie"] >= 20
    assert seen["levels"] >= {"compute", "L1", "DRAM"}


def test_generators_are_deterministic():
    for gen in (rl.gen_gemm_roofline, rl.gen_hierarchical_roofline):
        for i in range(20):
            assert gen(np.random.default_rng([9, i])) == gen(np.random.default_rng([9, i]))
