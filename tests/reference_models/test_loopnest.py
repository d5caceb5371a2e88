"""The loop-nest references against the brute-force trace simulator and the published numbers.

The simulator lives beside this file (``tracesim.py``); this directory has no ``__init__.py`` (it
would shadow the real ``reference_models`` package), so the directory is put on ``sys.path``
explicitly and the simulator imported as a top-level module.
"""

from __future__ import annotations

import sys
from math import prod
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from tracesim import simulate  # noqa: E402

from support import trusted  # noqa: E402
_TRUSTED = trusted("perf-core")
GENERATORS = _TRUSTED.generators
REFERENCES = _TRUSTED.references
_m_loopnest = _TRUSTED.submodule("loopnest")
analyze = _m_loopnest.analyze
gemm_two_level_traffic = _m_loopnest.gemm_two_level_traffic
tile_footprint = _m_loopnest.tile_footprint

N_CASES = 300


# ------------------------------------------------------------------------------------------
# random mapped loop nests (small enough to simulate)
# ------------------------------------------------------------------------------------------

def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def _split(rng: np.random.Generator, total: int, parts: int) -> list[int]:
    """An exact factorization of ``total`` into ``parts`` ordered factors."""
    out = []
    for _ in range(parts - 1):
        f = int(rng.choice(_divisors(total)))
        out.append(f)
        total //= f
    out.append(total)
    rng.shuffle(out)
    return out


def random_case(rng: np.random.Generator, kind: str, imperfect: bool = False, spatial: bool = True) -> dict:
    depth = int(rng.integers(1, 5))
    if kind == "gemm":
        bounds = {d: int(rng.integers(1, 8)) for d in ("M", "N", "K")}
        workload = {"kind": "gemm", **bounds}
    else:
        bounds = {"N": int(rng.integers(1, 3)), "K": int(rng.integers(1, 4)), "C": int(rng.integers(1, 3)),
                  "P": int(rng.integers(1, 7)), "Q": int(rng.integers(1, 4)), "R": int(rng.integers(1, 4)),
                  "S": int(rng.integers(1, 3))}
        workload = {"kind": "conv", **bounds, "stride": int(rng.integers(1, 4)), "dilation": int(rng.integers(1, 3))}
    levels = [{"temporal": [], "spatial": []} for _ in range(depth)]
    for d, bound in bounds.items():
        remaining = bound
        for lv in range(depth):
            if lv == depth - 1:
                share = remaining + (int(rng.integers(0, 3)) if imperfect and rng.random() < 0.2 else 0)
            elif imperfect:
                share = int(rng.integers(1, remaining + 2)) if rng.random() < 0.7 else 1
            else:
                share = int(rng.choice(_divisors(remaining)))
            remaining = -(-remaining // share)
            if share == 1 and rng.random() < 0.7:
                continue
            n_sp = int(rng.integers(0, 2)) if spatial and rng.random() < 0.35 else 0
            n_t = int(rng.integers(1, 3))
            for k, f in enumerate(_split(rng, share, n_sp + n_t)):
                (levels[lv]["spatial"] if k < n_sp else levels[lv]["temporal"]).append([d, f])
    for lv in levels:
        order = rng.permutation(len(lv["temporal"]))
        lv["temporal"] = [lv["temporal"][i] for i in order]
    arch = {"levels": []}
    for lv in range(depth):
        bypass = [t for t in ("I", "W", "O") if lv < depth - 1 and rng.random() < 0.3]
        arch["levels"].append({"name": f"L{lv}", "bypass": bypass})
    return {"workload": workload, "architecture": arch, "mapping": {"levels": levels}}


def _padded_macs(case: dict) -> int:
    return prod(f for lv in case["mapping"]["levels"] for _, f in lv["temporal"] + lv["spatial"])


def _cases(seed: int, kind: str, imperfect: bool, limit: int = 700):
    rng = np.random.default_rng(seed)
    made = 0
    while made < N_CASES:
        case = random_case(rng, kind, imperfect)
        if _padded_macs(case) > limit:
            continue
        made += 1
        yield case


def _assert_same(case, **kw):
    try:
        got = analyze(case["workload"], case["architecture"], case["mapping"], **kw)
    except NotImplementedError:
        return False
    want = simulate(case["workload"], case["architecture"], case["mapping"], **kw)
    assert got == want, (case, kw)
    return True


# ------------------------------------------------------------------------------------------
# property tests of the core
# ------------------------------------------------------------------------------------------

def test_gemm_perfect_matches_simulator():
    for case in _cases(1, "gemm", imperfect=False):
        assert _assert_same(case)


def test_gemm_imperfect_matches_simulator():
    padded = 0
    for case in _cases(2, "gemm", imperfect=True):
        assert _assert_same(case)
        wl = case["workload"]
        padded += any(
            prod(f for lv in case["mapping"]["levels"] for d2, f in lv["temporal"] + lv["spatial"] if d2 == d) > wl[d]
            for d in ("M", "N", "K")
        )
    assert padded > N_CASES // 3  # the ragged edges really are exercised


@pytest.mark.parametrize("reuse,footprint", [("delta", "bbox"), ("delta", "exact"), ("refetch", "bbox"), ("refetch", "exact")])
def test_conv_matches_simulator(reuse, footprint):
    checked = 0
    rng = np.random.default_rng({"delta": 3, "refetch": 4}[reuse] * 10 + len(footprint))
    while checked < N_CASES // 2:
        case = random_case(rng, "conv")
        if _padded_macs(case) > 400:
            continue
        checked += _assert_same(case, input_reuse=reuse, footprint=footprint)


def test_bad_mappings_are_rejected():
    wl = {"kind": "gemm", "M": 5, "N": 1, "K": 1}
    arch = {"levels": [{"name": "A"}, {"name": "B"}, {"name": "C"}]}
    with pytest.raises(ValueError):  # too small
        analyze(wl, arch, {"levels": [{"temporal": [["M", 2]]}, {}, {"temporal": [["M", 2]]}]})
    with pytest.raises(ValueError):  # conv factors must be exact
        analyze({"kind": "conv", "P": 5}, arch, {"levels": [{"temporal": [["P", 2]]}, {}, {"temporal": [["P", 3]]}]})
    with pytest.raises(ValueError):  # the outermost level holds everything
        analyze(wl, {"levels": [{"name": "A"}, {"name": "B", "bypass": ["I"]}]}, {"levels": [{"temporal": [["M", 5]]}, {}]})


# ------------------------------------------------------------------------------------------
# published numbers
# ------------------------------------------------------------------------------------------

TWO = {"levels": [{"name": "buffer"}, {"name": "DRAM"}]}


def _two(buffer, dram):
    return {"levels": [{"temporal": buffer}, {"temporal": dram}]}


def test_stationarity_examples():
    wl = {"kind": "gemm", "M": 8, "N": 6, "K": 4}
    assert gemm_two_level_traffic(wl, {"M": 1, "N": 3, "K": 4}, [["N", 2], ["M", 8]]) == {
        "I_reads": 32, "W_reads": 192, "O_writes": 48, "O_reads": 0}
    assert gemm_two_level_traffic(wl, {"M": 1, "N": 3, "K": 2}, [["M", 8], ["K", 2], ["N", 2]]) == {
        "I_reads": 64, "W_reads": 24, "O_writes": 96, "O_reads": 48}
    r = analyze(wl, TWO, _two([["K", 4], ["N", 3]], [["N", 2], ["M", 8]]))["levels"][1]
    assert (r["I"]["reads"], r["W"]["reads"], r["O"]["updates"], r["O"]["reads"]) == (32, 192, 48, 0)
    r = analyze(wl, TWO, _two([["N", 3], ["K", 2]], [["M", 8], ["K", 2], ["N", 2]]))["levels"][1]
    assert (r["I"]["reads"], r["W"]["reads"], r["O"]["updates"], r["O"]["reads"]) == (64, 24, 96, 48)


TUTORIAL = [  # conv1d R=3, P=16 (K as given): buffer loops, DRAM loops, expected numbers
    ({"P": 16, "R": 3}, [["P", 16]], [["R", 3]], dict(wf=3, if_=18, or_=32, ou=48, dw=3, di=18, dou=16), 48),
    ({"P": 16, "R": 3}, [["R", 3]], [["P", 16]], dict(wf=3, if_=18, or_=32, ou=48, dw=3, di=18, dou=16), 48),
    ({"P": 16, "R": 3, "K": 32}, [["R", 3]], [["P", 16], ["K", 32]],
     dict(wf=96, if_=576, or_=1024, ou=1536, dw=96, di=576, dou=512), 1536),
    ({"P": 16, "R": 3, "K": 32}, [["R", 3], ["K", 2]], [["P", 16], ["K", 16]],
     dict(wf=96, if_=288, or_=1024, ou=1536, dw=96, di=288, dou=512), 768),
]


@pytest.mark.parametrize("dims,buffer,dram,want,refetch", TUTORIAL)
def test_timeloop_conv1d_tutorial(dims, buffer, dram, want, refetch):
    wl = {"kind": "conv", **dims}
    buf, mem = analyze(wl, TWO, _two(buffer, dram), input_reuse="delta")["levels"]
    got = dict(wf=buf["W"]["fills"], if_=buf["I"]["fills"], or_=buf["O"]["reads"], ou=buf["O"]["updates"],
               dw=mem["W"]["reads"], di=mem["I"]["reads"], dou=mem["O"]["updates"])
    assert got == want
    assert mem["O"]["reads"] == 0
    buf, mem = analyze(wl, TWO, _two(buffer, dram), input_reuse="refetch")["levels"]
    assert buf["I"]["fills"] == mem["I"]["reads"] == refetch
    assert simulate(wl, TWO, _two(buffer, dram), input_reuse="delta")["levels"][0]["I"]["fills"] == want["if_"]


def test_spatial_multicast_and_reduction():
    wl = {"kind": "gemm", "M": 8, "N": 8, "K": 4}
    n_unrolled = {"levels": [{"temporal": [["M", 8], ["N", 2], ["K", 4]], "spatial": [["N", 4]]}, {}]}
    buf = analyze(wl, TWO, n_unrolled)["levels"][0]
    assert buf["I"]["reads"] == 64 and buf["W"]["reads"] == 256
    k_unrolled = {"levels": [{"temporal": [["M", 8], ["N", 8]], "spatial": [["K", 4]]}, {}]}
    buf = analyze(wl, TWO, k_unrolled)["levels"][0]
    assert buf["O"]["updates"] == 256 // 4 and buf["O"]["reads"] == 0
    assert simulate(wl, TWO, k_unrolled)["levels"][0]["O"] == buf["O"]


def test_footprint_exact_vs_bbox():
    wl = {"kind": "conv", "P": 8, "R": 3, "stride": 2}
    assert tile_footprint(wl, {"P": 4, "R": 1}, "I", "exact") == 4
    assert tile_footprint(wl, {"P": 4, "R": 1}, "I", "bbox") == 7


# ------------------------------------------------------------------------------------------
# every problem reference against the simulator, on small draws of the problem's own generator
# ------------------------------------------------------------------------------------------

def _draws(key: str, seed: int, n: int = N_CASES, **options):
    for i in range(n):
        yield GENERATORS[key](np.random.default_rng([seed, i]), **options)


def _sim_two_level(gemm: dict, tile: dict, dram: list) -> dict:
    """DRAM-level counts of a buffer + DRAM GEMM, by simulation."""
    wl = {"kind": "gemm", **{d: gemm[d] for d in ("M", "N", "K")}}
    mapping = {"levels": [{"temporal": [[d, tile[d]] for d in ("M", "N", "K")]}, {"temporal": dram}]}
    top = simulate(wl, TWO, mapping)["levels"][1]
    return {"I": top["I"]["reads"], "W": top["W"]["reads"], "Ow": top["O"]["updates"], "Or": top["O"]["reads"]}


def _ceil_bytes(bits: int) -> int:
    return (bits + 7) // 8


def test_ref_gemm_dram_traffic():
    for args in _draws("loopnest.gemm_dram_traffic", 11, values=(1, 2, 3, 4, 6, 8)):
        got = REFERENCES["loopnest.gemm_dram_traffic"](**args)
        s = _sim_two_level(args["gemm"], args["mapping"]["buffer"], args["mapping"]["dram"])
        assert got == {"I_reads": s["I"], "W_reads": s["W"], "O_writes": s["Ow"], "O_reads": s["Or"]}, args


def test_ref_gemm_dram_bytes():
    for args in _draws("loopnest.gemm_dram_bytes", 12, high=7):
        got = REFERENCES["loopnest.gemm_dram_bytes"](**args)
        s = _sim_two_level(args["gemm"], args["mapping"]["buffer"], args["mapping"]["dram"])
        p = args["precision"]
        want = {"I_bytes": _ceil_bytes(s["I"] * p["input_bits"]), "W_bytes": _ceil_bytes(s["W"] * p["weight_bits"]),
                "O_write_bytes": _ceil_bytes(s["Ow"] * p["output_bits"]),
                "O_read_bytes": _ceil_bytes(s["Or"] * p["output_bits"])}
        want["total_bytes"] = sum(want.values())
        assert got == want, args


def test_ref_gemm_psum_traffic():
    for args in _draws("loopnest.gemm_psum_traffic", 13, high=7):
        got = REFERENCES["loopnest.gemm_psum_traffic"](**args)
        g, p = args["gemm"], args["precision"]
        s = _sim_two_level(g, args["mapping"]["buffer"], args["mapping"]["dram"])
        final = g["M"] * g["N"]
        want = {"O_writes": s["Ow"], "O_reads": s["Or"],
                "I_bytes": _ceil_bytes(s["I"] * p["input_bits"]), "W_bytes": _ceil_bytes(s["W"] * p["weight_bits"]),
                "O_write_bytes": _ceil_bytes(final * p["output_bits"] + (s["Ow"] - final) * p["psum_bits"]),
                "O_read_bytes": _ceil_bytes(s["Or"] * p["psum_bits"])}
        want["total_bytes"] = want["I_bytes"] + want["W_bytes"] + want["O_write_bytes"] + want["O_read_bytes"]
        assert got == want, args


def test_ref_dram_loop_order_sweep():
    import itertools

    for args in _draws("loopnest.dram_loop_order_sweep", 14, values=(1, 2, 3, 4, 6)):
        got = REFERENCES["loopnest.dram_loop_order_sweep"](**args)
        t = args["tiling"]
        traffic = {}
        for order in itertools.permutations("MNK"):
            s = _sim_two_level(args["gemm"], t["buffer"], [[d, t["dram"][d]] for d in order])
            traffic["".join(order)] = s["I"] + s["W"] + s["Ow"] + s["Or"]
        best = min(traffic[k] for k in traffic)
        assert got == {"traffic": traffic, "best_order": sorted(k for k in traffic if traffic[k] == best)[0],
                       "best_traffic": best}, args


def _sim_hierarchy(gemm: dict, hierarchy: dict, names: tuple[str, ...]) -> dict:
    wl = {"kind": "gemm", **{d: gemm[d] for d in ("M", "N", "K")}}
    arch = {"levels": [{"name": n, "bypass": hierarchy[n].get("bypass", [])} for n in names]}
    mapping = {"levels": [{"temporal": hierarchy[n]["loops"], "spatial": hierarchy[n].get("spatial", [])}
                          for n in names]}
    out = {}
    for name, lv in zip(names, simulate(wl, arch, mapping)["levels"]):
        out[name] = {"I_reads": lv["I"]["reads"], "I_fills": lv["I"]["fills"], "W_reads": lv["W"]["reads"],
                     "W_fills": lv["W"]["fills"], "O_reads": lv["O"]["reads"], "O_fills": lv["O"]["fills"],
                     "O_updates": lv["O"]["updates"]}
    return out


def test_ref_three_level_accesses():
    for args in _draws("loopnest.three_level_accesses", 15, values=(1, 2, 3, 4, 6, 8)):
        got = REFERENCES["loopnest.three_level_accesses"](**args)
        assert got == _sim_hierarchy(args["gemm"], args["hierarchy"], ("RF", "GB", "DRAM")), args


def test_ref_pe_array_accesses():
    for args in _draws("loopnest.pe_array_accesses", 16, values=(1, 2, 3, 4, 6, 8), max_pes=8):
        got = REFERENCES["loopnest.pe_array_accesses"](**args)
        want = _sim_hierarchy(args["gemm"], args["hierarchy"], ("RF", "L1", "GB", "DRAM"))
        want["pes"] = prod(f for _, f in args["hierarchy"]["GB"]["spatial"])
        assert got == want, args


def _sim_conv_input(conv: dict, mapping: dict) -> dict:
    wl = {"kind": "conv", **conv}
    maps = {"levels": [{"temporal": mapping["buffer"]}, {"temporal": mapping["dram"]}]}
    buf, top = simulate(wl, TWO, maps, input_reuse="delta", footprint="exact")["levels"]
    return {"input_tile": buf["tiles"]["I"], "input_reads": top["I"]["reads"]}


def test_ref_conv_input_delta():
    for args in _draws("loopnest.conv_input_delta", 17, max_pq=6, max_ck=2, max_rs=3):
        assert REFERENCES["loopnest.conv_input_delta"](**args) == _sim_conv_input(args["conv"], args["mapping"]), args


def test_ref_strided_input_delta():
    for args in _draws("loopnest.strided_input_delta", 18, max_pq=6, max_ck=2, max_rs=3):
        assert REFERENCES["loopnest.strided_input_delta"](**args) == _sim_conv_input(args["conv"], args["mapping"]), args


def test_ref_gemm_array_accesses():
    arch = {"levels": [{"name": "GB"}, {"name": "DRAM"}]}
    for args in _draws("loopnest.gemm_array_accesses", 19, values=(1, 2, 3, 4, 6, 8), sides=(2, 3, 4)):
        got = REFERENCES["loopnest.gemm_array_accesses"](**args)
        g, a, m = args["gemm"], args["array"], args["mapping"]
        sim = simulate({"kind": "gemm", **g}, arch, {"levels": [
            {"temporal": m["gb"], "spatial": [m["cols"], m["rows"]]}, {"temporal": m["dram"]}]})
        gb, dram = sim["levels"]
        assert got == {
            "pes_used": sim["mac_units"], "utilization": sim["mac_units"] / (a["rows"] * a["cols"]),
            "I_reads": gb["I"]["reads"], "W_reads": gb["W"]["reads"], "O_updates": gb["O"]["updates"],
            "O_reads": gb["O"]["reads"], "dram_I_reads": dram["I"]["reads"], "dram_W_reads": dram["W"]["reads"],
            "dram_O_writes": dram["O"]["updates"], "dram_O_reads": dram["O"]["reads"],
        }, args


def test_ref_array_edge_accounting():
    padded = 0
    for args in _draws("loopnest.array_edge_accounting", 20, low=1, high=7, sides=(2, 3, 4), max_work=400):
        got = REFERENCES["loopnest.array_edge_accounting"](**args)
        g, a, m = args["gemm"], args["array"], args["mapping"]
        arch = {"levels": [{"name": "RF", "bypass": m["rf"]["bypass"]}, {"name": "GB"}, {"name": "DRAM"}]}
        sim = simulate({"kind": "gemm", **g}, arch, {"levels": [
            {"temporal": m["rf"]["loops"]}, {"temporal": m["gb"], "spatial": [m["cols"], m["rows"]]},
            {"temporal": m["dram"]}]})
        rf, gb, _ = sim["levels"]
        assert got == {
            "pes_used": sim["mac_units"], "steps": sim["steps"],
            "utilization": sim["macs"] / (sim["steps"] * a["rows"] * a["cols"]),
            "gb": {"I_reads": gb["I"]["reads"], "W_reads": gb["W"]["reads"], "O_updates": gb["O"]["updates"],
                   "O_reads": gb["O"]["reads"]},
            "rf": {"I_reads": rf["I"]["reads"], "I_fills": rf["I"]["fills"], "W_reads": rf["W"]["reads"],
                   "W_fills": rf["W"]["fills"], "O_reads": rf["O"]["reads"], "O_fills": rf["O"]["fills"],
                   "O_updates": rf["O"]["updates"]},
        }, args
        padded += sim["steps"] * sim["mac_units"] > sim["macs"]
    assert padded > N_CASES // 2
