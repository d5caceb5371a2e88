"""The energy, cycles, bandwidth, dataflow and end-to-end references against brute force.

Each reference of ``reference_models.pm_e2e`` is compared, on 300 small cases drawn by its own
generator, with the problem's outputs computed here from scratch, sharing no code with the
references:

* the counts (reads, fills, updates, largest tiles, fits) from ``pm_tracesim`` (the element-level
  simulator written from FORMAT.md);
* the compute cycles, full cycles and busy instance-cycles by stepping every time step and every
  MAC unit of the loop nest (built here from the mapping, in the format's nest order);
* energy by packing each stream into blocks one block at a time;
* a level's bandwidth need by trying 0, 1, 2, ... cycles until its ports can move its words;
* bytes by packing the bits of each stream.

Also: the published Timeloop energy exercise (DRAM block 8), and the real-size generators
(named real layers and architectures, fitting where the spec promises it, milliseconds each).
"""

from __future__ import annotations

import itertools
import sys
from fractions import Fraction
from math import prod
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from pm_tracesim import requirement, simulate  # noqa: E402

from reference_models import pm_core  # noqa: E402
from support import trusted  # noqa: E402
_TRUSTED = trusted("perf-model")
GENERATORS = _TRUSTED.generators
REFERENCES = _TRUSTED.references

N_CASES = 300
TENSORS = ("I", "W", "O")


# ------------------------------------------------------------------------------------------
# brute force, from the specs
# ------------------------------------------------------------------------------------------

def nest_loops(mapping: dict) -> list[tuple[str, int, int, bool]]:
    """(dim, factor, level, spatial) innermost first: per level its spatial_x, spatial_y loops
    (inside) and then its temporal loops, levels from the innermost."""
    loops = []
    for lv, m in enumerate(mapping["levels"]):
        for key in ("spatial_x", "spatial_y"):
            loops += [(d, f, lv, True) for d, f in m.get(key, [])]
        loops += [(d, f, lv, False) for d, f in m.get("temporal", [])]
    return loops


def brute_cycles(workload: dict, architecture: dict, mapping: dict) -> dict:
    """Every step and every MAC unit: cycles (steps with a real MAC), full cycles (every reached
    unit real), busy (cycle, instance) pairs per level."""
    loops = nest_loops(mapping)
    weight, running = [], {}
    for d, f, _, _ in loops:
        weight.append(running.get(d, 1))
        running[d] = running.get(d, 1) * f
    bounds = workload["dims"]
    depth = len(architecture["levels"])
    temporal = [i for i, lp in enumerate(loops) if not lp[3]]
    spatial = [i for i, lp in enumerate(loops) if lp[3]]

    def real(digits: dict) -> bool:
        index = dict.fromkeys(bounds, 0)
        for i, x in digits.items():
            index[loops[i][0]] += x * weight[i]
        return all(index[d] < bounds[d] for d in bounds)

    cycles = full = 0
    busy = [0] * depth
    for step in itertools.product(*(range(loops[i][1]) for i in temporal)):
        digits = dict(zip(temporal, step))
        units = [dict(zip(spatial, lane)) for lane in itertools.product(*(range(loops[i][1]) for i in spatial))]
        live = [u for u in units if real({**digits, **u})]
        if not live:
            continue
        cycles += 1
        full += len(live) == len(units)
        for lv in range(depth):
            busy[lv] += len({tuple(u[i] for i in spatial if loops[i][2] > lv) for u in live})
    return {"cycles": cycles, "full_cycles": full, "busy": busy}


def blocks(words: int, size: int) -> int:
    n = 0
    while words > 0:  # one block at a time, the last one possibly partly filled
        words -= size
        n += 1
    return n


def brute_energy(sim: dict, energy: dict) -> tuple[list[float], float]:
    per_level = []
    for lv, cost in zip(sim["levels"], energy["levels"]):
        e = Fraction(0)
        for t in TENSORS:
            for action, key in (("reads", "read_pj"), ("fills", "fill_pj"), ("updates", "update_pj")):
                if lv[t][action]:
                    pj = cost[key] if action == "updates" else cost[key][t]
                    e += blocks(lv[t][action], cost["block_words"][t]) * Fraction(pj)
        per_level.append(float(e))
    return per_level, float(sim["macs"] * Fraction(energy["mac_pj"]))


def need(reads: int, writes: int, bw: dict) -> int:
    t = 0
    while not (reads <= bw["read_words_per_cycle"] * t and writes <= bw["write_words_per_cycle"] * t
               and (bw["shared_words_per_cycle"] is None or reads + writes <= bw["shared_words_per_cycle"] * t)):
        t += 1
    return t


def brute_bandwidth(sim: dict, bandwidth: dict, compute: int) -> tuple[dict, int, str]:
    names, needs = [], []
    for lv, bw in zip(sim["levels"], bandwidth["levels"]):
        reads = sum(lv[t]["reads"] for t in TENSORS)
        writes = sum(lv[t]["fills"] + lv[t]["updates"] for t in TENSORS)
        names.append(lv["name"])
        needs.append(need(reads, writes, bw))
    total = max([compute] + needs)
    slow = [n for n, c in zip(names, needs) if c == total]
    return dict(zip(names, needs)), total, ("compute" if total == compute else slow[0])


def nbytes(elements: int, bits: int) -> int:
    return (elements * bits + 7) // 8


# ------------------------------------------------------------------------------------------
# the problems' outputs from brute force
# ------------------------------------------------------------------------------------------

def want_energy(case: dict) -> dict:
    sim = simulate(case["workload"], case["architecture"], case["mapping"])
    per_level, mac = brute_energy(sim, case["energy"])
    return {"level_energy_pj": {lv["name"]: e for lv, e in zip(sim["levels"], per_level)},
            "mac_energy_pj": mac, "total_energy_pj": mac + sum(per_level)}


def want_cycles(case: dict) -> dict:
    wl, arch, mapping = case["workload"], case["architecture"], case["mapping"]
    bc = brute_cycles(wl, arch, mapping)
    units = prod(x * y for x, y in (lv["fanout"] for lv in arch["levels"]))
    macs = simulate(wl, arch, mapping)["macs"]
    return {"cycles": bc["cycles"], "full_cycles": bc["full_cycles"], "utilization": macs / (bc["cycles"] * units),
            "busy_instance_cycles": {lv["name"]: b for lv, b in zip(arch["levels"], bc["busy"])}}


def want_latency(case: dict) -> dict:
    wl, arch, mapping = case["workload"], case["architecture"], case["mapping"]
    sim = simulate(wl, arch, mapping)
    compute = brute_cycles(wl, arch, mapping)["cycles"]
    level_cycles, total, bottleneck = brute_bandwidth(sim, case["bandwidth"], compute)
    return {"compute_cycles": compute, "level_cycles": level_cycles, "cycles": total, "bottleneck": bottleneck,
            "utilization": sim["macs"] / (total * sim["mac_units"])}


def want_dataflows(case: dict) -> dict:
    energies, cycles = {}, {}
    for name, mapping in case["mappings"].items():
        energies[name] = want_energy({**case, "mapping": mapping})["total_energy_pj"]
        cycles[name] = brute_cycles(case["workload"], case["architecture"], mapping)["cycles"]

    def winner(values: dict) -> str:
        return sorted(values, key=lambda k: (values[k], k))[0]
    return {"energy_pj": energies, "cycles": cycles, "lowest_energy": winner(energies), "fewest_cycles": winner(cycles)}


def want_end_to_end(case: dict) -> dict:
    wl, arch, mapping = case["workload"], case["architecture"], case["mapping"]
    sim = simulate(wl, arch, mapping)
    bits = wl["bits"]
    d = sim["levels"][-1]
    per_level, mac = brute_energy(sim, case["energy"])
    compute = brute_cycles(wl, arch, mapping)["cycles"]
    _, total, bottleneck = brute_bandwidth(sim, case["bandwidth"], compute)
    final = d["O"]["final_updates"]
    return {
        **{a: {f"{x['name']}.{t}": x[t][a] for x in sim["levels"] for t in TENSORS} for a in ("reads", "fills", "updates")},
        "dram_read_bytes": nbytes(d["I"]["reads"], bits["I"]) + nbytes(d["W"]["reads"], bits["W"])
        + nbytes(d["O"]["reads"], bits["psum"]),
        "dram_write_bytes": nbytes(final, bits["O"]) + nbytes(d["O"]["updates"] - final, bits["psum"]),
        "valid": all(r["fits"] for r in requirement(wl, arch, mapping)),
        "energy_pj": mac + sum(per_level),
        "compute_cycles": compute, "cycles": total, "bottleneck": bottleneck,
        "utilization": sim["macs"] / (total * sim["mac_units"]),
    }


def close(got, want) -> bool:
    if isinstance(want, dict):
        return isinstance(got, dict) and got.keys() == want.keys() and all(close(got[k], want[k]) for k in want)
    if isinstance(want, float):
        return isinstance(got, (int, float)) and abs(got - want) <= 1e-9 * abs(want) + 1e-9
    return type(got) is type(want) and got == want


# reference key, generator key, outputs by brute force
CASES = [
    ("pm_e2e.layer_energy", "pm_e2e.eyeriss_energy", want_energy),
    ("pm_e2e.layer_energy", "pm_e2e.simba_energy", want_energy),
    ("pm_e2e.array_cycles", "pm_e2e.array_cycles", want_cycles),
    ("pm_e2e.throttled_latency", "pm_e2e.throttled_latency", want_latency),
    ("pm_e2e.dataflow_comparison", "pm_e2e.dataflow_comparison", want_dataflows),
    ("pm_e2e.end_to_end", "pm_e2e.resnet_eyeriss_e2e", want_end_to_end),
    ("pm_e2e.end_to_end", "pm_e2e.llama_decode_e2e", want_end_to_end),
]


@pytest.mark.parametrize("ref, gen, want", CASES, ids=[g.split(".")[1] for _, g, _ in CASES])
def test_reference_matches_brute_force(ref, gen, want):
    for i in range(N_CASES):
        case = GENERATORS[gen](np.random.default_rng([79, i]))
        got = REFERENCES[ref](**case)
        assert close(got, want(case)), (i, case, got)


@pytest.mark.parametrize("gen", sorted({g for _, g, _ in CASES}))
def test_real_instances_are_real_and_fast(gen):
    ref = next(r for r, g, _ in CASES if g == gen)
    fits = 0
    for i in range(6):
        case = GENERATORS[gen](np.random.default_rng([80, i]), real=True)
        maps = case["mappings"].values() if "mappings" in case else [case["mapping"]]
        nests = [pm_core.parse(case["workload"], case["architecture"], m) for m in maps]
        assert all(n.macs >= 10**6 for n in nests), case["workload"]["name"]
        assert not case["workload"]["name"].startswith("small")
        assert not case["architecture"]["name"].startswith("small")
        fits += all(pm_core.valid(n) for n in nests)
        REFERENCES[ref](**case)  # its speed: benchmarks/bench_references.py
    if gen in ("pm_e2e.dataflow_comparison",):
        assert fits == 6  # the spec says every mapping fits
    elif gen in ("pm_e2e.resnet_eyeriss_e2e", "pm_e2e.llama_decode_e2e"):
        assert 1 <= fits <= 5  # validity is a real question
    else:
        assert fits >= 3


def test_batched_resnet_layers_pass_int32():
    """The ``batched`` real-size corners: a ResNet-50 layer at a batch of 8 to 256 on the
    Eyeriss-like array, with a count of its answer (reads, fills, updates, DRAM bytes or cycles)
    past 2^31 (32-bit counts wrap)."""
    for i in range(4):
        case = GENERATORS["pm_e2e.resnet_eyeriss_e2e"](np.random.default_rng([83, i]), real=True, batched=True)
        wl = case["workload"]
        assert wl["name"].startswith("resnet50.") and 8 <= wl["dims"]["N"] <= 256
        assert case["architecture"]["name"] == "eyeriss-like-4level"
        out = REFERENCES["pm_e2e.end_to_end"](**case)
        counts = [v for a in ("reads", "fills", "updates") for v in out[a].values()]
        counts += [out[k] for k in ("dram_read_bytes", "dram_write_bytes", "compute_cycles", "cycles")]
        assert max(counts) >= 2**31, wl["name"]


def test_small_end_to_end_cases_include_both_verdicts():
    for gen in ("pm_e2e.resnet_eyeriss_e2e", "pm_e2e.llama_decode_e2e"):
        verdicts = [REFERENCES["pm_e2e.end_to_end"](**GENERATORS[gen](np.random.default_rng([81, i])))["valid"]
                    for i in range(60)]
        assert 10 <= sum(verdicts) <= 50, gen


def test_bottleneck_ties_are_drawn():
    """The latency generator makes a second level tie with the slowest part now and then."""
    ties = 0
    for i in range(80):
        out = REFERENCES["pm_e2e.throttled_latency"](**GENERATORS["pm_e2e.throttled_latency"](np.random.default_rng([82, i])))
        ties += list(out["level_cycles"].values()).count(out["cycles"]) + (out["compute_cycles"] == out["cycles"]) >= 2
    assert ties >= 8


def test_timeloop_energy_exercise():
    """Timeloop's conv1d exercise (R=3, P=16; buffer [P16], DRAM [R3]): DRAM reads W 3 -> one
    8-word block, I 18 -> three blocks, at 43.35 pJ a block; 48 MACs at 0.845 pJ."""
    wl = {"name": "conv1d", "shape": "conv", "dims": {"N": 1, "K": 1, "C": 1, "P": 16, "Q": 1, "R": 3, "S": 1},
          "input_hw": [18, 1], "stride": [1, 1], "dilation": [1, 1], "padding": [0, 0],
          "bits": {"I": 8, "W": 8, "O": 8, "psum": 8}}
    arch = {"name": "two-level", "levels": [{"name": "Buffer", "capacity_bytes": 1024, "fanout": [1, 1]},
                                            {"name": "DRAM", "capacity_bytes": None, "fanout": [1, 1]}]}
    mapping = {"levels": [{"temporal": [["P", 16]]}, {"temporal": [["R", 3]]}]}
    zero = {"I": 0.0, "W": 0.0, "O": 0.0}
    energy = {"mac_pj": 0.845, "levels": [
        {"name": "Buffer", "block_words": {"I": 1, "W": 1, "O": 1}, "read_pj": zero, "fill_pj": zero, "update_pj": 0.0},
        {"name": "DRAM", "block_words": {"I": 8, "W": 8, "O": 8}, "read_pj": {"I": 43.35, "W": 43.35, "O": 43.35},
         "fill_pj": {"I": 43.35, "W": 43.35, "O": 43.35}, "update_pj": 0.0}]}
    sim = simulate(wl, arch, mapping)
    assert (sim["levels"][1]["W"]["reads"], sim["levels"][1]["I"]["reads"]) == (3, 18)
    out = REFERENCES["pm_e2e.layer_energy"](wl, arch, mapping, energy)
    assert out["level_energy_pj"]["DRAM"] == pytest.approx(4 * 43.35)
    assert out["mac_energy_pj"] == pytest.approx(40.56)
