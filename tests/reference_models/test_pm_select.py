"""The buffer-requirement (F3) and mapping ranking / selection (F16) references of
``reference_models.pm_select`` against the brute-force element-level simulator.

Every problem's outputs are rebuilt here from ``pm_tracesim`` (written from FORMAT.md, sharing
no code with the engine): tiles and requirements from its materialised tiles, counts from its
step-by-step run, used instances from the real MACs it enumerates, and the problem-level rules
(byte rounding, energy, latency, validity checks, ranking, the search over loop orders or
factors) written again from the specs, never imported from the reference. 300 small cases per
problem, drawn by the problem's own generator. The real-size generators are checked for
realism (named layers, millions of MACs), variety and speed.
"""

from __future__ import annotations

import itertools
import sys
from math import prod
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from pm_tracesim import Sim, requirement, simulate  # noqa: E402

from support import trusted  # noqa: E402
_TRUSTED = trusted("perf-model")
GENERATORS = _TRUSTED.generators
REFERENCES = _TRUSTED.references

N_CASES = 300
TENSORS = ("I", "W", "O")


def _nbytes(n: int, bits: int) -> int:
    return (n * bits + 7) // 8


def _level_bytes(lv: dict, bits: dict) -> dict:
    """One simulated level's reads, fills, updates per tensor in bytes (partial sums at psum
    bits, complete write-backs at O bits, each stream rounded up on its own)."""
    out = {t: {a: _nbytes(lv[t][a], bits[t]) for a in ("reads", "fills", "updates")} for t in ("I", "W")}
    fin = lv["O"]["final_updates"]
    out["O"] = {"reads": _nbytes(lv["O"]["reads"], bits["psum"]), "fills": _nbytes(lv["O"]["fills"], bits["psum"]),
                "updates": _nbytes(fin, bits["O"]) + _nbytes(lv["O"]["updates"] - fin, bits["psum"])}
    return out


def _fits_all(wl: dict, arch: dict, m: dict) -> bool:
    return all(r["fits"] for r in requirement(wl, arch, m))


def _rank(metric: list, valid: list) -> list[int]:
    order = []
    for i in range(len(metric)):  # insertion by (metric, index): no library sort, to differ in kind
        if valid[i]:
            k = 0
            while k < len(order) and metric[order[k]] <= metric[i]:
                k += 1
            order.insert(k, i)
    return order + [i for i in range(len(metric)) if not valid[i]]


# ------------------------------------------------------------------------------------------
# F3
# ------------------------------------------------------------------------------------------

def _used_instances(wl: dict, arch: dict, m: dict, level: int) -> int:
    sim = Sim(wl, arch, m)
    above = [i for i, lp in enumerate(sim.loops) if lp[3] and lp[2] > level]
    seen = set()
    for ds in sim.combos(list(range(len(sim.loops)))):
        if sim.real(sim.point(ds)):
            seen.add(tuple(ds[i] for i in above))
    return len(seen)


def sim_buffer_requirement(wl: dict, arch: dict, m: dict) -> dict:
    req = requirement(wl, arch, m)[:-1]
    return {"instance_bytes": {f"{r['name']}.{t}": r["bytes"][t] for r in req for t in TENSORS},
            "instance_total": {r["name"]: r["total"] for r in req},
            "level_total": {r["name"]: r["total"] * _used_instances(wl, arch, m, i) for i, r in enumerate(req)},
            "fits": {r["name"]: r["fits"] for r in req}}


def _factor_mapping(m: dict, level: int, dim: str, f: int, size: int) -> dict:
    levels = [{k: [list(x) for x in v] if k != "bypass" else list(v) for k, v in lv.items()} for lv in m["levels"]]
    for x in levels[level]["temporal"]:
        if x[0] == dim:
            x[1] = f
    inner = prod(x for lv in levels[:-1] for k in ("temporal", "spatial_x", "spatial_y")
                 for d, x in lv.get(k, []) if d == dim)
    inner *= prod(x for k in ("spatial_x", "spatial_y") for d, x in levels[-1].get(k, []) if d == dim)
    outer = 1
    while outer * inner < size:  # the smallest outermost factor that covers the size
        outer += 1
    for x in levels[-1]["temporal"]:
        if x[0] == dim:
            x[1] = outer
    return {"levels": levels}, outer


def sim_largest_fitting_tile(wl: dict, arch: dict, m: dict, target: dict) -> dict:
    names = [lv["name"] for lv in arch["levels"]]
    level, dim = names.index(target["level"]), target["dim"]
    size = wl["dims"][dim]
    fits, outers, f = {}, {}, 1
    while True:  # every f up to the first one whose outermost factor is 1
        mm, outer = _factor_mapping(m, level, dim, f, size)
        fits[f] = [r["fits"] for r in requirement(wl, arch, mm)[:-1]]
        outers[f] = outer
        if outer == 1:
            break
        f += 1
    largest = {n: max([g for g in fits if fits[g][i]], default=0) for i, n in enumerate(names[:-1])}
    best = max([g for g in fits if all(fits[g])], default=0)
    return {"largest_factor": largest, "best_factor": best, "outer_factor": outers[best] if best else 0}


def _verdict(wl: dict, arch: dict, m: dict) -> tuple[str, list[str]]:
    for d in wl["dims"]:
        covered = 1
        for lv in m["levels"]:
            for k in ("temporal", "spatial_x", "spatial_y"):
                for e, x in lv.get(k, []):
                    if e == d:
                        covered *= x
        if covered < wl["dims"][d]:
            return "coverage:" + d, []
    for a, lv in zip(arch["levels"], m["levels"]):
        for k, n in (("spatial_x", a["fanout"][0]), ("spatial_y", a["fanout"][1])):
            if prod(x for _, x in lv.get(k, [])) > n:
                return "fanout:" + a["name"], []
    over = [r["name"] for r in requirement(wl, arch, m)[:-1] if not r["fits"]]
    return ("capacity:" + over[0] if over else "valid"), over


def sim_mapping_validity(wl: dict, arch: dict, candidates: list) -> dict:
    v = [_verdict(wl, arch, m) for m in candidates]
    return {"valid": [r == "valid" for r, _ in v], "reason": [r for r, _ in v], "over_capacity": [o for _, o in v]}


# ------------------------------------------------------------------------------------------
# F16
# ------------------------------------------------------------------------------------------

def _dram(sim: dict, wl: dict) -> int:
    b = _level_bytes(sim["levels"][-1], wl["bits"])
    return sum(b[t]["reads"] + b[t]["updates"] for t in TENSORS)


def _energy(sim: dict, wl: dict, arch: dict) -> float:
    e = sim["macs"] * arch["mac_pj"]
    for a, lv in zip(arch["levels"], sim["levels"]):
        b = _level_bytes(lv, wl["bits"])
        for t in TENSORS:
            e += b[t]["reads"] * a["read_pj_per_byte"] + (b[t]["fills"] + b[t]["updates"]) * a["write_pj_per_byte"]
    return e


def _cycles(sim: dict, wl: dict, arch: dict) -> tuple[int, str]:
    best, bound = sim["steps"], "compute"
    for a, lv in zip(arch["levels"], sim["levels"]):
        if "bytes_per_cycle" in a:
            b = _level_bytes(lv, wl["bits"])
            moved = sum(b[t][x] for t in TENSORS for x in ("reads", "fills", "updates"))
            c = -(-moved // a["bytes_per_cycle"])
            if c > best:
                best, bound = c, a["name"]
    return best, bound


def sim_dram_traffic_ranking(wl: dict, arch: dict, candidates: list) -> dict:
    moved = [_dram(simulate(wl, arch, m), wl) for m in candidates]
    valid = [_fits_all(wl, arch, m) for m in candidates]
    return {"dram_bytes": moved, "valid": valid, "ranking": _rank(moved, valid)}


def sim_energy_ranking(wl: dict, arch: dict, candidates: list) -> dict:
    e = [_energy(simulate(wl, arch, m), wl, arch) for m in candidates]
    valid = [_fits_all(wl, arch, m) for m in candidates]
    return {"energy_pj": e, "valid": valid, "ranking": _rank(e, valid)}


def sim_latency_ranking(wl: dict, arch: dict, candidates: list) -> dict:
    lat = [_cycles(simulate(wl, arch, m), wl, arch) for m in candidates]
    valid = [_fits_all(wl, arch, m) for m in candidates]
    cyc = [c for c, _ in lat]
    return {"cycles": cyc, "bound": [b for _, b in lat], "valid": valid, "ranking": _rank(cyc, valid)}


def sim_edp_ranking(wl: dict, arch: dict, candidates: list) -> dict:
    sims = [simulate(wl, arch, m) for m in candidates]
    e = [_energy(s, wl, arch) for s in sims]
    c = [_cycles(s, wl, arch)[0] for s in sims]
    edp = [x * y for x, y in zip(e, c)]
    valid = [_fits_all(wl, arch, m) for m in candidates]
    return {"energy_pj": e, "cycles": c, "edp": edp, "valid": valid, "ranking": _rank(edp, valid)}


def sim_best_dram_order(wl: dict, arch: dict, m: dict) -> dict:
    loops = m["levels"][-1]["temporal"]
    seen = []
    for perm in itertools.permutations(range(len(loops))):
        mm = {"levels": [dict(lv) for lv in m["levels"]]}
        mm["levels"][-1]["temporal"] = [list(loops[i]) for i in perm]
        seen.append((_dram(simulate(wl, arch, mm), wl), "".join(loops[i][0] for i in perm)))
    best = min(x for x, _ in seen)
    return {"best_order": list(sorted(n for x, n in seen if x == best)[0]), "best_bytes": best,
            "worst_bytes": max(x for x, _ in seen), "optimal_orders": sum(1 for x, _ in seen if x == best)}


CASES = {
    "buffer_requirement": sim_buffer_requirement,
    "largest_fitting_tile": sim_largest_fitting_tile,
    "mapping_validity": sim_mapping_validity,
    "dram_traffic_ranking": sim_dram_traffic_ranking,
    "energy_ranking": sim_energy_ranking,
    "latency_ranking": sim_latency_ranking,
    "edp_ranking": sim_edp_ranking,
    "best_dram_order": sim_best_dram_order,
}


def _close(got, want) -> bool:
    if isinstance(want, float):
        return abs(got - want) <= 1e-9 * abs(want)
    if isinstance(want, dict):
        return got.keys() == want.keys() and all(_close(got[k], want[k]) for k in want)
    if isinstance(want, list):
        return len(got) == len(want) and all(_close(x, y) for x, y in zip(got, want))
    return got == want and type(got) is type(want)


@pytest.mark.parametrize("name", sorted(CASES))
def test_reference_matches_the_simulator(name):
    gen, ref, sim = GENERATORS[f"pm_select.{name}"], REFERENCES[f"pm_select.{name}"], CASES[name]
    for i in range(N_CASES):
        case = gen(np.random.default_rng([79, i]))
        want = sim(*case.values())
        assert _close(ref(**case), want), (i, case, want)


def test_energies_are_sixteenths_so_ties_are_exact():
    for name in ("energy_ranking", "edp_ranking"):
        for real in (False, True):
            case = GENERATORS[f"pm_select.{name}"](np.random.default_rng([80, int(real)]), real=real)
            arch = case["architecture"]
            values = [arch["mac_pj"]] + [lv[k] for lv in arch["levels"] for k in ("read_pj_per_byte", "write_pj_per_byte")]
            assert all(v > 0 and (v * 16) % 1 == 0 for v in values), values


# the ranking problems, and how many candidates their real instances have
_RANKING = ("dram_traffic_ranking", "energy_ranking", "latency_ranking", "edp_ranking", "mapping_validity")


@pytest.mark.parametrize("name", sorted(CASES))
def test_real_instances_are_real_and_fast(name):
    gen, ref = GENERATORS[f"pm_select.{name}"], REFERENCES[f"pm_select.{name}"]
    outs = []
    for i in range(6):
        case = gen(np.random.default_rng([81, i]), real=True)
        wl = case["workload"]
        assert not wl["name"].startswith("small") and prod(wl["dims"].values()) >= 2 * 10**5, wl["name"]
        assert not case["architecture"]["name"].startswith("small")
        if name in _RANKING:
            assert len(case["candidates"]) >= (7 if name == "mapping_validity" else 8)
        outs.append(ref(**case))  # its speed: benchmarks/bench_references.py
    if "valid" in outs[0]:  # not every real candidate is valid, and not every one invalid
        flags = [v for o in outs for v in o["valid"]]
        assert any(flags) and not all(flags)


def test_validity_reasons_cover_every_kind():
    kinds = set()
    for i in range(60):
        case = GENERATORS["pm_select.mapping_validity"](np.random.default_rng([82, i]))
        kinds |= {r.split(":")[0] for r in REFERENCES["pm_select.mapping_validity"](**case)["reason"]}
    assert kinds == {"valid", "coverage", "fanout", "capacity"}


def test_rankings_have_ties_and_invalid_candidates():
    for name in ("dram_traffic_ranking", "energy_ranking", "latency_ranking", "edp_ranking"):
        ties = invalid = 0
        key = {"dram_traffic_ranking": "dram_bytes", "energy_ranking": "energy_pj", "latency_ranking": "cycles",
               "edp_ranking": "edp"}[name]
        for i in range(40):
            out = REFERENCES[f"pm_select.{name}"](**GENERATORS[f"pm_select.{name}"](np.random.default_rng([83, i])))
            vals = [v for v, ok in zip(out[key], out["valid"]) if ok]
            ties += len(vals) != len(set(vals))
            invalid += not all(out["valid"])
        assert ties >= 5 and invalid >= 10, (name, ties, invalid)
