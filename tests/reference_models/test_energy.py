"""The energy references (F10) against a direct recomputation, the brute-force trace simulator
and Timeloop's published conv1d exercise.

The recomputation is exact: per-vector energies are turned into fractions (``Fraction(str(x))``)
and vectors are counted with ``math.ceil`` of an exact quotient, or by packing words into
vectors one at a time; the references compute in floating point with integer ceilings. The
simulator (``tracesim.py``, beside this file) executes the mapped loop nests and shares nothing
with the closed forms.
"""

from __future__ import annotations

import math
import sys
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from tracesim import simulate  # noqa: E402

from support import trusted  # noqa: E402
_TRUSTED = trusted("perf-core")
GENERATORS = _TRUSTED.generators
REFERENCES = _TRUSTED.references
E = _TRUSTED.submodule("energy")
_m_loopnest = _TRUSTED.submodule("loopnest")
analyze = _m_loopnest.analyze

N_CASES = 300
TENSORS = ("I", "W", "O")
ACTIONS = ("reads", "fills", "updates")
LEVELS = ("RF", "GB", "DRAM")


# ------------------------------------------------------------------------------------------
# the independent arithmetic
# ------------------------------------------------------------------------------------------

def packed_vectors(count: int, block: int) -> int:
    """Vectors needed to move ``count`` words, packing them one at a time (the definition)."""
    vectors = room = 0
    for _ in range(count):
        if room == 0:
            vectors += 1
            room = block
        room -= 1
    return vectors


def exact(x: float) -> Fraction:
    return Fraction(str(x))


def exact_level(counts: dict, cost: dict) -> tuple[int, Fraction]:
    block = cost["block_size"]
    vectors, energy = 0, Fraction(0)
    for t in TENSORS:
        for a in ACTIONS:
            v = math.ceil(Fraction(counts[t][a], block))
            vectors += v
            energy += v * exact(cost["read_pj"] if a == "reads" else cost["write_pj"])
    return vectors, energy


def close(got: float, want: Fraction, rel: float = 1e-12) -> bool:
    return abs(Fraction(got) - want) <= rel * max(abs(want), 1)


# ------------------------------------------------------------------------------------------
# published numbers and the worked examples of the specs
# ------------------------------------------------------------------------------------------

TWO = {"levels": [{"name": "Buffer"}, {"name": "DRAM"}]}
CONV1D = {"kind": "conv", "P": 16, "R": 3}
CONV1D_MAP = {"levels": [{"temporal": [["P", 16]]}, {"temporal": [["R", 3]]}]}


def test_timeloop_conv1d_energy_exercise():
    result = analyze(CONV1D, TWO, CONV1D_MAP)
    assert simulate(CONV1D, TWO, CONV1D_MAP)["levels"] == result["levels"]
    dram = result["levels"][1]
    assert (dram["W"]["reads"], dram["I"]["reads"], dram["O"]["updates"]) == (3, 18, 16)
    cost = {"block_size": 8, "read_pj": 43.35, "write_pj": 43.35}
    zero = {"reads": 0, "fills": 0, "updates": 0}
    v, e = E.level_energy({"W": dram["W"], "I": zero, "O": zero}, cost)
    assert v == 1 and e == pytest.approx(43.35, rel=1e-12)
    v, e = E.level_energy({"I": dram["I"], "W": zero, "O": zero}, cost)
    assert v == 3 and e == pytest.approx(3 * 43.35, rel=1e-12)
    assert f"{e:.2f}" == "130.05"  # Timeloop prints 130.06: its per-vector energy is rounded in the printout
    assert result["macs"] * 0.845 == pytest.approx(40.56, rel=1e-12)
    accesses = {"macs": result["macs"], "levels": [{"name": lv["name"], **{t: lv[t] for t in TENSORS}}
                                                   for lv in result["levels"]]}
    arch = {"mac_pj": 0.845, "levels": [{"name": "Buffer", "block_size": 4, "read_pj": 2.5, "write_pj": 3.0},
                                        {"name": "DRAM", "block_size": 8, "read_pj": 43.35, "write_pj": 51.2}]}
    out = REFERENCES["energy.action_energy"](accesses, arch)
    assert out["level_vectors"] == [50, 6]
    assert out["mac_energy_pj"] == pytest.approx(40.56, rel=1e-12)
    assert out["level_energy_pj"] == pytest.approx([134.0, 275.8], rel=1e-12)
    assert out["total_energy_nj"] == pytest.approx(0.45036, rel=1e-12)


def test_mapped_worked_example():
    gemm = {"M": 4, "N": 2, "K": 6}
    hierarchy = {"RF": {"bypass": ["W"], "loops": [["K", 3]]}, "GB": {"bypass": [], "loops": [["N", 2], ["M", 2]]},
                 "DRAM": {"loops": [["K", 2], ["M", 2]]}}
    energy = {"mac_pj": 0.5, "RF": {"block_size": 1, "read_pj": 0.25, "write_pj": 0.375},
              "GB": {"block_size": 5, "read_pj": 6.0, "write_pj": 7.5},
              "DRAM": {"block_size": 8, "read_pj": 40.0, "write_pj": 50.0}}
    assert REFERENCES["energy.mapped_gemm_energy"](gemm, hierarchy, energy) == {
        "vectors": {"RF": 168, "GB": 31, "DRAM": 7},
        "level_energy_pj": {"RF": 52.0, "GB": 207.0, "DRAM": 290.0},
        "mac_energy_pj": 24.0,
        "total_energy_pj": 573.0,
    }


# ------------------------------------------------------------------------------------------
# F10 action energy: the arithmetic
# ------------------------------------------------------------------------------------------

def test_ceil_matches_literal_packing():
    for block in range(1, 34):
        for count in range(0, 200):
            assert E.ceil_div(count, block) == packed_vectors(count, block)


def _cases(key: str, seed: int, **options):
    for i in range(N_CASES):
        yield GENERATORS[key](np.random.default_rng([seed, i]), **options)


def test_action_energy_matches_exact_recomputation():
    for args in _cases("energy.action_energy", 11):
        acc, arch = args["accesses"], args["architecture"]
        got = REFERENCES["energy.action_energy"](acc, arch)
        mac = acc["macs"] * exact(arch["mac_pj"])
        assert close(got["mac_energy_pj"], mac)
        total = mac
        for i, (counts, cost) in enumerate(zip(acc["levels"], arch["levels"])):
            v, e = exact_level(counts, cost)
            assert got["level_vectors"][i] == v
            assert close(got["level_energy_pj"][i], e)
            total += e
        assert close(got["total_energy_nj"], total / 1000)


def test_level_energy_by_packing_small_counts():
    rng = np.random.default_rng(12)
    for _ in range(N_CASES):
        block = int(rng.integers(1, 17))
        counts = {t: {a: int(rng.integers(0, 120)) for a in ACTIONS} for t in TENSORS}
        cost = {"block_size": block, "read_pj": int(rng.integers(1, 50)) / 4, "write_pj": int(rng.integers(1, 50)) / 4}
        v, e = E.level_energy(counts, cost)
        want_v = sum(packed_vectors(counts[t][a], block) for t in TENSORS for a in ACTIONS)
        want_e = sum(packed_vectors(counts[t][a], block) * (cost["read_pj"] if a == "reads" else cost["write_pj"])
                     for t in TENSORS for a in ACTIONS)
        assert (v, e) == (want_v, want_e)  # quarter-pJ energies: exact in binary


def test_action_energy_generator_draws_the_traps():
    ragged = total_differs = merged_differs = zeros = small = 0
    for args in _cases("energy.action_energy", 101):
        for counts, cost in zip(args["accesses"]["levels"], args["architecture"]["levels"]):
            b = cost["block_size"]
            cs = [counts[t][a] for t in TENSORS for a in ACTIONS]
            ragged += any(c % b for c in cs)
            zeros += any(c == 0 for c in cs)
            small += any(0 < c < b for c in cs)
            per = sum(E.ceil_div(counts[t]["reads"], b) for t in TENSORS)
            total_differs += per != E.ceil_div(sum(counts[t]["reads"] for t in TENSORS), b)
            merged_differs += any(
                E.ceil_div(counts[t]["fills"], b) + E.ceil_div(counts[t]["updates"], b)
                != E.ceil_div(counts[t]["fills"] + counts[t]["updates"], b) for t in TENSORS)
    assert ragged > 400 and zeros > 200 and small > 100
    assert total_differs > 150 and merged_differs > 50


# ------------------------------------------------------------------------------------------
# F10 mapped energy: counts from the simulator
# ------------------------------------------------------------------------------------------

def _simulated_energy(args: dict) -> dict:
    gemm, hierarchy, energy = args["gemm"], args["hierarchy"], args["energy"]
    workload = {"kind": "gemm", **gemm}
    arch = {"levels": [{"name": n, "bypass": hierarchy[n].get("bypass", [])} for n in LEVELS]}
    mapping = {"levels": [{"temporal": hierarchy[n]["loops"]} for n in LEVELS]}
    sim = simulate(workload, arch, mapping)
    out = {"vectors": {}, "level_energy_pj": {}}
    total = sim["macs"] * exact(energy["mac_pj"])
    out["mac_energy_pj"] = total
    for name, level in zip(LEVELS, sim["levels"]):
        v, e = exact_level(level, energy[name])
        out["vectors"][name] = v
        out["level_energy_pj"][name] = e
        total += e
    out["total_energy_pj"] = total
    return out


SMALL = (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 12)


def test_mapped_energy_matches_simulator():
    for args in _cases("energy.mapped_gemm_energy", 13, values=SMALL):
        got = REFERENCES["energy.mapped_gemm_energy"](**args)
        want = _simulated_energy(args)
        assert got["vectors"] == want["vectors"], args
        for name in LEVELS:
            assert close(got["level_energy_pj"][name], want["level_energy_pj"][name]), args
        assert close(got["mac_energy_pj"], want["mac_energy_pj"])
        assert close(got["total_energy_pj"], want["total_energy_pj"]), args


def test_mapped_generator_draws_the_traps():
    bypass = unit_loops = ragged = psum = 0
    for args in _cases("energy.mapped_gemm_energy", 1011):
        h = args["hierarchy"]
        bypass += bool(h["RF"]["bypass"] or h["GB"]["bypass"])
        unit_loops += any(f == 1 for n in LEVELS for _, f in h[n]["loops"])
        result = E.hierarchy_counts(args["gemm"], h)
        ragged += any(level[t][a] % args["energy"][name]["block_size"]
                      for name, level in zip(LEVELS, result["levels"]) for t in TENSORS for a in ACTIONS)
        psum += result["levels"][2]["O"]["reads"] > 0
    assert bypass > 150 and unit_loops > 50 and ragged > 150 and psum > 100
