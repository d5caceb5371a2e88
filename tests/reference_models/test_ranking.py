"""The F13 and F16 references against the brute-force trace simulator.

For every random case, every metric (counts, traffic, energy) is recomputed from the simulator
(``tracesim.py``, beside this file), with exact fractions for the energy; validity from the
simulator's tiles; and the ranking is checked pair by pair against those metrics (every pair of
ranked candidates in the right order, ties by index, invalid candidates where the spec puts
them). The generators are run at small sizes so the simulator stays fast.
"""

from __future__ import annotations

import itertools
import math
import sys
from fractions import Fraction
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from tracesim import simulate  # noqa: E402

from support import trusted  # noqa: E402
_TRUSTED = trusted("perf-core")
GENERATORS = _TRUSTED.generators
REFERENCES = _TRUSTED.references

N_CASES = 300
TENSORS = ("I", "W", "O")
ACTIONS = ("reads", "fills", "updates")
LEVELS = ("RF", "GB", "DRAM")
RELEVANT = {"I": "MK", "W": "KN", "O": "MN"}


def exact(x: float) -> Fraction:
    return Fraction(str(x))


def exact_level(counts: dict, block: int, read_pj: float, write_pj: float) -> Fraction:
    energy = Fraction(0)
    for t in TENSORS:
        for a in ACTIONS:
            energy += math.ceil(Fraction(counts[t][a], block)) * exact(read_pj if a == "reads" else write_pj)
    return energy


def _cases(key: str, seed: int, **options):
    for i in range(N_CASES):
        yield GENERATORS[key](np.random.default_rng([seed, i]), **options)


def check_ranking(ranking: list[int], metric: list, valid: list[bool], invalid_last: bool) -> None:
    """Every pair of ranked valid candidates in order (ties by index); invalid ones per the rule."""
    n = len(metric)
    good = [i for i in range(n) if valid[i]]
    head, tail = ranking[: len(good)], ranking[len(good):]
    assert sorted(head) == good
    for x, y in itertools.combinations(head, 2):
        assert metric[x] < metric[y] or (metric[x] == metric[y] and x < y)
    assert tail == ([i for i in range(n) if not valid[i]] if invalid_last else [])


# ------------------------------------------------------------------------------------------
# F13: WS / OS / IS on one PE array
# ------------------------------------------------------------------------------------------

# dataflow -> (rows, cols, streamed, stationary), as the spec's table
TABLE = {"ws": ("K", "N", "M", "W"), "os": ("M", "N", "K", "O"), "is": ("K", "M", "N", "I")}


def _fit(n: int, side: int) -> int:
    return [d for d in range(1, side + 1) if n % d == 0][-1]


def _simulated_dataflow(gemm: dict, array: dict, energy: dict, df: str) -> dict:
    r, c, s, kept = TABLE[df]
    fr, fc = _fit(gemm[r], array["rows"]), _fit(gemm[c], array["cols"])
    workload = {"kind": "gemm", **gemm}
    arch = {"levels": [{"name": "RF", "bypass": [t for t in TENSORS if t != kept]}, {"name": "GB"}]}
    mapping = {"levels": [{}, {"spatial": [[r, fr], [c, fc]],
                               "temporal": [[s, gemm[s]], [r, gemm[r] // fr], [c, gemm[c] // fc]]}]}
    sim = simulate(workload, arch, mapping)
    rf, gb = sim["levels"]
    total = sim["macs"] * exact(energy["mac_pj"])
    total += exact_level(rf, 1, energy["rf_read_pj"], energy["rf_write_pj"])
    total += exact_level(gb, energy["gb_block_size"], energy["gb_read_pj"], energy["gb_write_pj"])
    assert sim["mac_units"] == fr * fc and sim["steps"] * fr * fc == sim["macs"]
    return {"pes_used": fr * fc, "cycles": sim["steps"], "gb_reads": sum(gb[t]["reads"] for t in TENSORS),
            "gb_updates": gb["O"]["updates"], "energy_pj": total}


def test_dataflows_match_simulator():
    ties = 0
    for args in _cases("ranking.array_dataflow_energy", 21, values=(1, 2, 3, 4, 5, 6, 7, 8, 9, 10),
                       sides=(2, 3, 4, 5, 6, 8)):
        got = REFERENCES["ranking.array_dataflow_energy"](**args)
        want = {df: _simulated_dataflow(args["gemm"], args["array"], args["energy"], df) for df in TABLE}
        for key in ("pes_used", "cycles", "gb_reads", "gb_updates"):
            assert got[key] == {df: want[df][key] for df in TABLE}, (key, args)
        for df in TABLE:
            assert Fraction(got["energy_pj"][df]) == want[df]["energy_pj"], args  # sixteenths: exact
        least = min(want[df]["energy_pj"] for df in TABLE)
        winners = [df for df in ("ws", "os", "is") if want[df]["energy_pj"] == least]
        assert got["best_dataflow"] == winners[0], args
        ties += len(winners) > 1
    assert ties > 30  # exact ties really are drawn


def test_dataflow_worked_example():
    got = REFERENCES["ranking.array_dataflow_energy"](
        {"M": 6, "N": 4, "K": 9}, {"rows": 4, "cols": 3},
        {"mac_pj": 1.0, "rf_read_pj": 0.5, "rf_write_pj": 0.75, "gb_read_pj": 6.0, "gb_write_pj": 8.0,
         "gb_block_size": 4})
    assert got == {
        "pes_used": {"ws": 6, "os": 6, "is": 9}, "cycles": {"ws": 36, "os": 36, "is": 24},
        "gb_reads": {"ws": 192, "os": 180, "is": 174}, "gb_updates": {"ws": 72, "os": 24, "is": 72},
        "energy_pj": {"ws": 783.0, "os": 792.0, "is": 772.5}, "best_dataflow": "is",
    }


def _least_latency(cycles: int, reads: int, writes: int, gb: dict) -> int:
    """The fewest cycles L >= cycles in which the ports move the words (L * width >= words),
    by bisection over L (no ceil formula)."""
    lo, hi = cycles, max(cycles, reads, writes, 1)
    while lo < hi:
        mid = (lo + hi) // 2
        if mid * gb["read_words_per_cycle"] >= reads and mid * gb["write_words_per_cycle"] >= writes:
            hi = mid
        else:
            lo = mid + 1
    return lo


def test_dataflow_latency_matches_simulator():
    bound_ties = best_ties = 0
    bounds = set()
    for args in _cases("ranking.dataflow_latency", 51, values=(1, 2, 3, 4, 5, 6, 7, 8, 9, 10),
                       sides=(2, 3, 4, 5, 6, 8)):
        gb = args["gb"]
        got = REFERENCES["ranking.dataflow_latency"](**args)
        zero = {k: 0 for k in ("mac_pj", "rf_read_pj", "rf_write_pj", "gb_read_pj", "gb_write_pj")}
        for df in TABLE:
            sim = _simulated_dataflow(args["gemm"], args["array"], {**zero, "gb_block_size": 1}, df)
            assert got["cycles"][df] == sim["cycles"] and got["gb_reads"][df] == sim["gb_reads"], args
            assert got["gb_writes"][df] == sim["gb_updates"], args
            latency = _least_latency(sim["cycles"], sim["gb_reads"], sim["gb_updates"], gb)
            assert got["latency"][df] == latency, args
            # the bound: the first resource that alone would need the whole latency
            alone = {"compute": sim["cycles"] == latency,
                     "gb_read": _least_latency(0, sim["gb_reads"], 0, gb) == latency,
                     "gb_write": _least_latency(0, 0, sim["gb_updates"], gb) == latency}
            assert got["bound"][df] == next(b for b in ("compute", "gb_read", "gb_write") if alone[b]), args
            bound_ties += sum(alone.values()) > 1
            bounds.add(got["bound"][df])
        least = min(got["latency"].values())
        winners = [df for df in ("ws", "os", "is") if got["latency"][df] == least]
        assert got["best_dataflow"] == winners[0]
        best_ties += len(winners) > 1
    assert bounds == {"compute", "gb_read", "gb_write"} and bound_ties > 50 and best_ties > 50


def test_dataflow_latency_worked_example():
    got = REFERENCES["ranking.dataflow_latency"]({"M": 6, "N": 4, "K": 9}, {"rows": 4, "cols": 3},
                                                 {"read_words_per_cycle": 8, "write_words_per_cycle": 2})
    assert got == {
        "cycles": {"ws": 36, "os": 36, "is": 24}, "gb_reads": {"ws": 192, "os": 180, "is": 174},
        "gb_writes": {"ws": 72, "os": 24, "is": 72}, "latency": {"ws": 36, "os": 36, "is": 36},
        "bound": {"ws": "compute", "os": "compute", "is": "gb_write"}, "best_dataflow": "ws",
    }


def test_dataflow_generator_draws_the_traps():
    not_divisible = 0
    seen = set()
    for args in _cases("ranking.array_dataflow_energy", 1301):
        g, a = args["gemm"], args["array"]
        not_divisible += any(g[r] % a["rows"] and g[r] > a["rows"] for r, _, _, _ in TABLE.values())
        seen.add(REFERENCES["ranking.array_dataflow_energy"](**args)["best_dataflow"])
    assert not_divisible > 100 and seen == {"ws", "os", "is"}


# ------------------------------------------------------------------------------------------
# F16: tilings ranked by DRAM traffic
# ------------------------------------------------------------------------------------------

def _simulated_tiling(gemm: dict, cand: dict) -> tuple[int, int]:
    """(DRAM traffic, words of the buffer's tiles) by executing the two-level nest."""
    workload = {"kind": "gemm", **gemm}
    arch = {"levels": [{"name": "buffer"}, {"name": "DRAM"}]}
    mapping = {"levels": [{"temporal": [[d, cand["tile"][d]] for d in "MNK"]}, {"temporal": cand["dram"]}]}
    sim = simulate(workload, arch, mapping)
    buf, dram = sim["levels"]
    traffic = dram["I"]["reads"] + dram["W"]["reads"] + dram["O"]["updates"] + dram["O"]["reads"]
    return traffic, sum(buf["tiles"].values())


def test_tiling_ranking_matches_simulator():
    exact_fit = just_over = ties = invalid_better = 0
    for args in _cases("ranking.tiling_traffic_ranking", 31, values=(1, 2, 3, 4, 6, 8)):
        got = REFERENCES["ranking.tiling_traffic_ranking"](**args)
        sims = [_simulated_tiling(args["gemm"], c) for c in args["candidates"]]
        traffic = [t for t, _ in sims]
        mult = 2 if args["buffer"]["double_buffered"] else 1
        words = [w * mult for _, w in sims]
        cap = args["buffer"]["capacity_words"]
        valid = [w <= cap for w in words]
        assert got["traffic"] == traffic and got["required_words"] == words and got["valid"] == valid, args
        check_ranking(got["ranking"], traffic, valid, invalid_last=False)
        exact_fit += cap in words
        just_over += cap + 1 in words
        good = [traffic[i] for i in range(len(traffic)) if valid[i]]
        ties += len(good) != len(set(good))
        invalid_better += bool(good) and any(not v and t < min(good) for t, v in zip(traffic, valid))
    assert exact_fit > 50 and just_over > 50 and ties > 50 and invalid_better > 30


def test_tiling_worked_example():
    cands = [
        {"tile": {"M": 1, "N": 3, "K": 4}, "dram": [["N", 2], ["M", 8]]},
        {"tile": {"M": 1, "N": 3, "K": 2}, "dram": [["M", 8], ["K", 2], ["N", 2]]},
        {"tile": {"M": 8, "N": 6, "K": 1}, "dram": [["K", 4]]},
        {"tile": {"M": 1, "N": 3, "K": 2}, "dram": [["M", 8], ["K", 2], ["N", 1], ["N", 2]]},
        {"tile": {"M": 4, "N": 6, "K": 4}, "dram": [["M", 2]]},
    ]
    got = REFERENCES["ranking.tiling_traffic_ranking"]({"M": 8, "N": 6, "K": 4},
                                                       {"capacity_words": 124, "double_buffered": True}, cands)
    assert got == {"traffic": [272, 232, 104, 232, 104], "required_words": [38, 22, 124, 22, 128],
                   "valid": [True, True, True, True, False], "ranking": [2, 1, 3, 0]}


# ------------------------------------------------------------------------------------------
# F16: RF / GB / DRAM mappings ranked by energy
# ------------------------------------------------------------------------------------------

def _simulated_hierarchy(gemm: dict, arch: dict, hierarchy: dict) -> tuple[Fraction, bool]:
    workload = {"kind": "gemm", **gemm}
    levels = {"levels": [{"name": n, "bypass": hierarchy[n].get("bypass", [])} for n in LEVELS]}
    mapping = {"levels": [{"temporal": hierarchy[n]["loops"]} for n in LEVELS]}
    sim = simulate(workload, levels, mapping)
    energy = sim["macs"] * exact(arch["mac_pj"])
    for name, level in zip(LEVELS, sim["levels"]):
        energy += exact_level(level, arch[name]["block_size"], arch[name]["read_pj"], arch[name]["write_pj"])
    fits = all(sum(level["tiles"].values()) <= arch[name]["capacity_words"] // arch[name]["multiple_buffering"]
               for name, level in zip(LEVELS[:2], sim["levels"][:2]))
    return energy, fits


def test_hierarchy_ranking_matches_simulator():
    ties = invalid_better = buffered = mixed = 0
    for args in _cases("ranking.hierarchy_energy_ranking", 41, values=(1, 2, 3, 4, 5, 6, 8)):
        got = REFERENCES["ranking.hierarchy_energy_ranking"](**args)
        sims = [_simulated_hierarchy(args["gemm"], args["architecture"], h) for h in args["candidates"]]
        energy = [e for e, _ in sims]
        valid = [v for _, v in sims]
        assert [Fraction(e) for e in got["energy_pj"]] == energy, args  # sixteenths: exact
        assert got["valid"] == valid, args
        check_ranking(got["ranking"], energy, valid, invalid_last=True)
        good = [energy[i] for i in range(len(energy)) if valid[i]]
        ties += len(good) != len(set(good))
        invalid_better += bool(good) and any(not v and e < min(good) for e, v in zip(energy, valid))
        buffered += any(args["architecture"][n]["multiple_buffering"] > 1 for n in ("RF", "GB"))
        mixed += 0 < sum(valid) < len(valid)
    assert ties > 40 and invalid_better > 30 and buffered > 150 and mixed > 100


def test_hierarchy_worked_example():
    arch = {"mac_pj": 0.5,
            "RF": {"capacity_words": 9, "multiple_buffering": 2, "block_size": 1, "read_pj": 0.25, "write_pj": 0.375},
            "GB": {"capacity_words": 34, "multiple_buffering": 1, "block_size": 5, "read_pj": 6.0, "write_pj": 7.5},
            "DRAM": {"block_size": 8, "read_pj": 40.0, "write_pj": 50.0}}
    c0 = {"RF": {"bypass": ["W"], "loops": [["K", 3]]}, "GB": {"bypass": [], "loops": [["N", 2], ["M", 2]]},
          "DRAM": {"loops": [["K", 2], ["M", 2]]}}
    c1 = {**c0, "DRAM": {"loops": [["K", 2], ["N", 1], ["M", 2]]}}
    c2 = {"RF": {"bypass": ["I", "O"], "loops": [["M", 4]]}, "GB": {"bypass": [], "loops": [["K", 6]]},
          "DRAM": {"loops": [["N", 2]]}}
    c3 = {"RF": {"bypass": [], "loops": [["K", 6], ["N", 2]]}, "GB": {"bypass": ["I"], "loops": [["M", 2]]},
          "DRAM": {"loops": [["M", 2]]}}
    got = REFERENCES["ranking.hierarchy_energy_ranking"]({"M": 4, "N": 2, "K": 6}, arch, [c0, c1, c2, c3])
    assert got == {"energy_pj": [573.0, 573.0, 551.5, 395.0], "valid": [True, True, True, False],
                   "ranking": [2, 0, 1, 3]}
