"""The perf-model traffic references against the brute-force element-level simulator.

Each reference of ``reference_models.pm_traffic`` is compared, on 300 small cases drawn by its
own generator, with the problem's outputs computed here from ``pm_tracesim.simulate`` (written
from FORMAT.md, sharing no code with the engine). The real-size generators are checked for
validity, realism (the mapping fits the architecture) and speed.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from pm_tracesim import simulate  # noqa: E402

from reference_models import pm_core  # noqa: E402
from support import trusted  # noqa: E402
_TRUSTED = trusted("perf-model")
GENERATORS = _TRUSTED.generators
REFERENCES = _TRUSTED.references

N_CASES = 300


def _nbytes(n: int, bits: int) -> int:
    return (n * bits + 7) // 8


def _writes(lv: dict, bits: dict) -> int:
    final = lv["O"]["final_updates"]
    return _nbytes(final, bits["O"]) + _nbytes(lv["O"]["updates"] - final, bits["psum"])


def _dram_bytes(sim: dict, wl: dict) -> dict:
    d, b = sim["levels"][-1], wl["bits"]
    return {"I_read_bytes": _nbytes(d["I"]["reads"], b["I"]), "W_read_bytes": _nbytes(d["W"]["reads"], b["W"]),
            "O_write_bytes": _writes(d, b), "O_read_bytes": _nbytes(d["O"]["reads"], b["psum"])}


def _gemm_traffic(sim: dict, wl: dict) -> dict:
    d = sim["levels"][-1]
    return {"I_reads": d["I"]["reads"], "W_reads": d["W"]["reads"], "O_updates": d["O"]["updates"],
            "O_reads": d["O"]["reads"]}


def _window(sim: dict, wl: dict) -> dict:
    return {"I_tile": {x["name"]: x["tile"]["I"] for x in sim["levels"]},
            "I_fills": {x["name"]: x["I"]["fills"] for x in sim["levels"]},
            "I_reads": {x["name"]: x["I"]["reads"] for x in sim["levels"]}}


def _accesses(sim: dict, wl: dict) -> dict:
    return {a: {f"{x['name']}.{t}": x[t][a] for x in sim["levels"] for t in "IWO"} for a in ("reads", "fills", "updates")}


def _psum(sim: dict, wl: dict) -> dict:
    held = [x for x in sim["levels"] if "O" in x["keeps"]][1:]
    return {"O_complete": {x["name"]: x["O"]["final_updates"] for x in held},
            "O_update_bytes": {x["name"]: _writes(x, wl["bits"]) for x in held},
            "O_read_bytes": {x["name"]: _nbytes(x["O"]["reads"], wl["bits"]["psum"]) for x in held}}


def _stationary(sim: dict, wl: dict) -> dict:
    lv = sim["levels"]
    return {"W_fills": {x["name"]: x["W"]["fills"] for x in lv}, "I_reads": {x["name"]: x["I"]["reads"] for x in lv},
            "O_updates": {x["name"]: x["O"]["updates"] for x in lv}, "O_reads": {x["name"]: x["O"]["reads"] for x in lv}}


# reference key, generator key, outputs from the simulation
CASES = [
    ("pm_traffic.gemm_dram_traffic", "pm_traffic.gemm_dram_traffic", _gemm_traffic),
    ("pm_traffic.conv_dram_bytes", "pm_traffic.conv_dram_bytes", _dram_bytes),
    ("pm_traffic.window_input_traffic", "pm_traffic.window_input_traffic", _window),
    ("pm_traffic.level_accesses", "pm_traffic.depthwise_accesses", _accesses),
    ("pm_traffic.level_accesses", "pm_traffic.simba_accesses", _accesses),
    ("pm_traffic.psum_traffic", "pm_traffic.psum_traffic", _psum),
    ("pm_traffic.weight_stationary", "pm_traffic.weight_stationary", _stationary),
    ("pm_traffic.attention_dram_bytes", "pm_traffic.attention_dram_bytes", _dram_bytes),
]


@pytest.mark.parametrize("ref, gen, outputs", CASES, ids=[g.split(".")[1] for _, g, _ in CASES])
def test_reference_matches_the_simulator(ref, gen, outputs):
    for i in range(N_CASES):
        case = GENERATORS[gen](np.random.default_rng([77, i]))
        args = (case["workload"], case["architecture"], case["mapping"])
        want = outputs(simulate(*args), case["workload"])
        assert REFERENCES[ref](*args) == want, (i, case)


@pytest.mark.parametrize("gen", sorted({g for _, g, _ in CASES}))
def test_real_instances_are_real_valid_and_fast(gen):
    ref = next(r for r, g, _ in CASES if g == gen)
    fits = 0
    for i in range(6):
        case = GENERATORS[gen](np.random.default_rng([78, i]), real=True)
        nest = pm_core.parse(case["workload"], case["architecture"], case["mapping"])
        assert nest.macs >= 10**6, case["workload"]["name"]
        assert not case["workload"]["name"].startswith("small")
        fits += pm_core.valid(nest)
        REFERENCES[ref](case["workload"], case["architecture"], case["mapping"])  # speed: benchmarks/bench_references.py
    assert fits >= 5


def _padded(mapping: dict) -> int:
    out = 1
    for lv in mapping["levels"]:
        for key in ("temporal", "spatial_x", "spatial_y"):
            for _, f in lv.get(key, []):
                out *= f
    return out


def test_split_loop_corners_match_the_simulator():
    """The corner vectors of f4-gemm-dram-traffic: several loops of a dimension at one level, outer
    loops that overshoot the size (pm_draw.split_loops), which the plain draws never make."""
    gen = GENERATORS["pm_traffic.gemm_dram_traffic"]
    several = 0
    for i in range(120):
        case = gen(np.random.default_rng([79, i]), split=0.8)
        args = (case["workload"], case["architecture"], case["mapping"])
        assert REFERENCES["pm_traffic.gemm_dram_traffic"](*args) == _gemm_traffic(simulate(*args), case["workload"]), (i, case)
        several += any(len([d for d, f in lv["temporal"] if d == x and f > 1]) >= 2
                       for lv in case["mapping"]["levels"] for x in "MNK")
    assert several >= 60


def test_the_domain_sampler_small_draws_match_the_simulator():
    """The domain sampler of f4-gemm-dram-traffic reaches corners no generator draws (a factor-1
    outermost loop with overshooting loops inside it, three loops of a dimension at one level):
    the reference agrees with the element-level simulator on its small draws too."""
    sample = _TRUSTED.samplers["samplers.gemm_dram_traffic"]
    checked = 0
    for i in range(1000):
        case = sample(np.random.default_rng([80, i]), real_share=0.0)
        if _padded(case["mapping"]) > 3000:
            continue
        args = (case["workload"], case["architecture"], case["mapping"])
        assert REFERENCES["pm_traffic.gemm_dram_traffic"](*args) == _gemm_traffic(simulate(*args), case["workload"]), (i, case)
        checked += 1
        if checked == 150:
            break
    assert checked == 150
