"""perf-mapper's layer-fusion kind (``mapper_fusion``): the specs' worked examples, every rule's
reason on hostile and invalid schedules, the cost model against a literal per-tile walk, the
exact search against brute force on small instances, and the bundled solution, a variant, and
`audit`'s side-by-side view through the real sandbox."""

from __future__ import annotations

import itertools
import json
import math

import numpy as np
import pytest

from grader.cli import main
from grader.grading.execution import grade_source
from grader.grading.scoring import Verdict
from grader.packs import vectors
from grader.packs.problems import Catalog
from grader.packs.vectors import Vector, plain

CATALOG = Catalog()
MBV2 = CATALOG.find("perf-mapper/fuse-mbv2-traffic")
RESNET = CATALOG.find("perf-mapper/fuse-resnet-traffic")
LLAMA = CATALOG.find("perf-mapper/fuse-llama-latency")
F = MBV2.trusted.submodule("mapper_fusion")

INT8 = {"I": 8, "W": 8, "O": 8, "psum": 24}
CONV_CHAIN = {"name": "example", "residuals": [[0, 2], [3, 5]], "layers": [
    w for b in (0, 1) for w in (F._conv(f"ex.{b}.expand", "conv", 1, 2, 4, 1),
                                F._conv(f"ex.{b}.dw", "depthwise", 2, 2, 4, 3),
                                F._conv(f"ex.{b}.project", "conv", 2, 1, 4, 1))]}
CONV_ARCH = F._arch(112, 1)
CONV_MAP = {"groups": [{"layers": 2, "tile": {"P": 2, "Q": 4}}, {"layers": 3, "tile": {"P": 2, "Q": 4}},
                       {"layers": 1, "tile": {"P": 4, "Q": 4}}]}
GEMM_CHAIN = {"name": "ex", "residual": False, "layers": [
    {"name": "ex.up", "shape": "gemm", "dims": {"M": 4, "K": 2, "N": 6}, "bits": INT8},
    {"name": "ex.down", "shape": "gemm", "dims": {"M": 4, "K": 6, "N": 2}, "bits": INT8}]}
GEMM_ARCH = F._arch(40, 1, [2, 2], 4)
GEMM_MAP = {"groups": [{"layers": 1, "tile": {"M": 4, "N": 3}}, {"layers": 1, "tile": {"M": 4, "N": 2}}]}


def test_conv_worked_example_of_the_specs():
    """Two blocks, three groups: a shortcut read at an intermediate's footprint (with its halo),
    a shortcut's source written by the group it is an intermediate of, a residual tile read."""
    out = MBV2.evaluator_fn(CONV_MAP, CONV_CHAIN, CONV_ARCH)
    assert out["valid"] and out["objective"] == 208.0
    g0, g1, g2 = out["breakdown"]["groups"]
    assert [(g["dram_bytes"], g["room"]) for g in (g0, g1, g2)] == [(76, 72), (142, 110), (66, 66)]
    assert (g1["input_bytes"], g1["residual_bytes"], g1["source_bytes"]) == (48, 24, 16)
    assert (g2["residual_bytes"], g2["source_bytes"], out["breakdown"]["compulsory_bytes"]) == (16, 0, 76)
    tight = F._arch(109, 1)
    assert MBV2.evaluator_fn(CONV_MAP, CONV_CHAIN, tight)["reason"] == \
        "capacity at GLB: group 1 (layers 2 to 4) needs 110 bytes, the GLB has 109"
    best = MBV2.reference_fn(CONV_CHAIN, CONV_ARCH)
    assert best["proven"] and best["best"] == 48.0
    assert json.loads(best["mapping"]) == {"groups": [{"layers": 3, "tile": {"P": 2, "Q": 4}}] * 2}
    for p in (MBV2, RESNET):
        assert "excess **208**" in p.spec and "excess **48**" in p.spec and "48 / 208 = 0.231" in p.spec


def test_residual_true_is_one_shortcut_over_the_whole_chain():
    """`residual` true (the one-block form) means `residuals` [[0, n - 1]], in the evaluator and in
    the bundled solution's cost model alike."""
    block = {"name": "b", "layers": CONV_CHAIN["layers"][:3]}
    old, new = dict(block, residual=True), dict(block, residuals=[[0, 2]])
    assert F.residual_pairs(old) == F.residual_pairs(new) == [(0, 2)]
    assert F.residual_pairs(dict(block, residual=False)) == []
    cut = {"groups": [{"layers": 2, "tile": {"P": 2, "Q": 4}}, {"layers": 1, "tile": {"P": 4, "Q": 4}}]}
    a, b = MBV2.evaluator_fn(cut, old, F._arch(96, 1)), MBV2.evaluator_fn(cut, new, F._arch(96, 1))
    assert a == b and a["breakdown"]["groups"][1]["residual_bytes"] == 16
    ns: dict = {}
    exec(compile(MBV2.solution_source, "solution", "exec"), ns)
    assert ns["map_chain"](old, F._arch(96, 1)) == ns["map_chain"](new, F._arch(96, 1))


def test_gemm_worked_example_of_the_spec():
    out = LLAMA.evaluator_fn(GEMM_MAP, GEMM_CHAIN, GEMM_ARCH)
    assert out["valid"] and out["objective"] == 26.0
    assert [g["cycles"] for g in out["breakdown"]["groups"]] == [14, 12]
    assert [g["room"] for g in out["breakdown"]["groups"]] == [20, 32]
    best = LLAMA.reference_fn(GEMM_CHAIN, GEMM_ARCH)
    assert best["proven"] and best["best"] == 24.0
    assert "**26**" in LLAMA.spec and "**24**" in LLAMA.spec and "0.923" in LLAMA.spec


class Loop(dict):
    def __eq__(self, other):
        return True

    __hash__ = dict.__hash__


INVALID = [
    (None, "schema: the mapping must be a dict"),
    ([], "schema: the mapping must be a dict"),
    ({"groups": CONV_MAP["groups"], "levels": []}, "schema: unknown key(s) ['levels']"),
    ({1: 2}, "schema: unknown key(s) ['1']"),
    ({"groups": [], "name": 3}, "schema: name must be a string"),
    ({"groups": [{"layers": 1, "tile": {"P": float("nan"), "Q": 1}}]}, "schema: the mapping is not plain JSON"),
    ({"groups": [{"layers": 6, "tile": {"P": 1, "Q": 1}}], "name": "x" * 5000}, "schema: the mapping takes"),
    ({"groups": []}, "schema: groups must be a list of 1 to 6 groups"),
    ({"groups": [{"layers": 1, "tile": {"P": 1, "Q": 1}}] * 7}, "schema: groups must be a list of 1 to 6"),
    ({"groups": [[3, 1, 1]]}, "schema: group 0 must be a dict with exactly the keys layers and tile"),
    ({"groups": [{"layers": 3, "tile": {"P": 1, "Q": 1}, "keep": True}]}, "schema: group 0 must be a dict"),
    ({"groups": [{"layers": True, "tile": {"P": 1, "Q": 1}}]}, "schema: group 0: layers must be a positive"),
    ({"groups": [{"layers": 0, "tile": {"P": 1, "Q": 1}}]}, "schema: group 0: layers must be a positive"),
    ({"groups": [{"layers": 6, "tile": {"M": 1, "N": 1}}]}, "schema: group 0: tile must be a dict with exactly the keys P and Q"),
    ({"groups": [{"layers": 6, "tile": {"P": 1.0, "Q": 1}}]}, "schema: group 0: tile P must be an integer"),
    ({"groups": [{"layers": 6, "tile": {"P": 0, "Q": 1}}]}, "schema: group 0: tile P must be an integer"),
    ({"groups": [{"layers": 6, "tile": {"P": 10 ** 40, "Q": 1}}]}, "schema: group 0: tile P must be an integer"),
    ({"groups": [{"layers": 6, "tile": Loop(P=1, Q=1)}]}, None),  # a dict subclass is not plain data
    ({"groups": [{"layers": 2, "tile": {"P": 1, "Q": 1}}]}, "coverage: the groups hold 2 layers, the chain has 6"),
    ({"groups": [{"layers": 4, "tile": {"P": 1, "Q": 1}}, {"layers": 3, "tile": {"P": 1, "Q": 1}}]},
     "coverage: the groups hold 7 layers"),
    ({"groups": [{"layers": 6, "tile": {"P": 5, "Q": 1}}]}, "tile: group 0: tile P 5 is larger than the output's 4"),
    ({"groups": [{"layers": 6, "tile": {"P": 4, "Q": 4}}]}, "capacity at GLB: group 0 (layers 0 to 5) needs"),
]


@pytest.mark.parametrize("mapping,reason", INVALID, ids=range(len(INVALID)))
def test_every_rule_has_its_reason_and_nothing_raises(mapping, reason):
    out = MBV2.evaluator_fn(mapping, CONV_CHAIN, CONV_ARCH)
    assert out["valid"] is False and out["objective"] is None
    if reason is not None:
        assert out["reason"].startswith(reason), out["reason"]
    else:
        assert out["reason"].startswith("schema:")


def test_the_llama_tile_keys_are_its_own():
    out = LLAMA.evaluator_fn({"groups": [{"layers": 2, "tile": {"P": 1, "Q": 1}}]}, GEMM_CHAIN, GEMM_ARCH)
    assert out["reason"].startswith("schema: group 0: tile must be a dict with exactly the keys M and N")
    whole = {"groups": [{"layers": 2, "tile": {"M": 4, "N": 2}}]}  # room 8 + 24 + 8: exactly the GLB
    assert LLAMA.evaluator_fn(whole, GEMM_CHAIN, GEMM_ARCH)["valid"]
    tight = F._arch(39, 1, [2, 2], 4)
    assert LLAMA.evaluator_fn(whole, GEMM_CHAIN, tight)["reason"] == \
        "capacity at GLB: group 0 (layers 0 to 1) needs 40 bytes, the GLB has 39"


def _literal_conv(chain, a, b, tp, tq):
    """Input bytes, largest footprints and the shortcuts' residual reads of conv group a..b,
    walking every tile's 2-D positions: ``largest[j]`` is the largest footprint of layer a + j's
    input; ``outs[e]`` every tile's positions of layer e's output (its footprint of it)."""
    layers = chain["layers"]
    P, Q = layers[b]["dims"]["P"], layers[b]["dims"]["Q"]
    total_in, largest, resid, resid_big = 0, [0] * (b - a + 1), 0, 0
    for r0, c0 in itertools.product(range(0, P, tp), range(0, Q, tq)):
        need = {(r, c) for r in range(r0, min(r0 + tp, P)) for c in range(c0, min(c0 + tq, Q))}
        outs = {b: need}
        for j in range(b, a - 1, -1):
            wl = layers[j]
            d = wl["dims"]
            new = set()
            for (r, c), dr, dc in itertools.product(need, range(d["R"]), range(d["S"])):
                h = r * wl["stride"][0] + dr * wl["dilation"][0] - wl["padding"][0]
                w = c * wl["stride"][1] + dc * wl["dilation"][1] - wl["padding"][1]
                if 0 <= h < wl["input_hw"][0] and 0 <= w < wl["input_hw"][1]:
                    new.add((h, w))
            need = new
            outs[j - 1] = need
            largest[j - a] = max(largest[j - a], len(need) * d["C"])
        total_in += len(need) * layers[a]["dims"]["C"]
        read = sum(len(outs[e]) * F.out_channels(layers[e]) for s_, e in F.residual_pairs(chain) if a <= e <= b and s_ < a)
        for s_, e in F.residual_pairs(chain):  # a source's elements sit in the group's own footprint of it
            if a <= s_ and e <= b:
                assert outs[e] <= outs[s_ - 1]
        resid += read
        resid_big = max(resid_big, read)
    return total_in, largest, resid, resid_big


def _literal_gemm_cycles(chain, arch, a, b, tm, tn):
    layers = chain["layers"]
    M, N, kb = layers[b]["dims"]["M"], layers[b]["dims"]["N"], layers[b]["dims"]["K"]
    early = sum(layers[j]["dims"]["K"] * layers[j]["dims"]["N"] for j in range(a, b))
    mpc = math.prod(arch["levels"][0]["fanout"])
    bw = arch["levels"][1]["bytes_per_cycle"]
    cycles = 0
    for m0, n0 in itertools.product(range(0, M, tm), range(0, N, tn)):
        m, n = min(tm, M - m0), min(tn, N - n0)
        macs = m * early + m * kb * n
        moved = m * layers[a]["dims"]["K"] + early + kb * n + m * n
        cycles += max(-(-macs // mpc), -(-moved // bw))
    return cycles


def test_the_cost_model_equals_a_literal_walk_of_the_tiles():
    pairs = [(a, b) for a in range(6) for b in range(a, 6)]
    for i in range(8):
        kw = F.gen_conv_fusion(np.random.default_rng([77, i]), small=True)
        chain = kw["chain"]
        layers = chain["layers"]
        mb = kw["architecture"]["levels"][0]["multiple_buffering"]
        for (a, b), tp, tq in itertools.product(pairs, range(1, 4), range(1, 4)):
            P, Q = F.tile_bounds(chain, b)
            tp, tq = min(tp, P), min(tq, Q)
            cost = F._group_cost(chain, kw["architecture"], a, b, tp, tq)
            total_in, largest, resid, resid_big = _literal_conv(chain, a, b, tp, tq)
            assert cost["input_bytes"] == total_in and cost["residual_bytes"] == resid
            source = sum(layers[s]["input_hw"][0] * layers[s]["input_hw"][1] * layers[s]["dims"]["C"]
                         for s, e in F.residual_pairs(chain) if a < s <= b < e)
            assert cost["source_bytes"] == source
            out_tile = tp * tq * F.out_channels(layers[b])
            room = (sum(F.weights(layers[j]) for j in range(a, b + 1)) + mb * largest[0] + sum(largest[1:])
                    + mb * out_tile + mb * resid_big)
            assert cost["room"] == room
            weights = sum(F.weights(layers[j]) for j in range(a, b + 1))
            assert cost["dram_bytes"] == weights + total_in + P * Q * F.out_channels(layers[b]) + resid + source
    assert any(F.residual_pairs(F.gen_conv_fusion(np.random.default_rng([77, i]), small=True)["chain"])
               == [(0, 2), (3, 5)] for i in range(8))  # both shortcuts, in some draws
    for i in range(6):
        kw = F.gen_gemm_fusion(np.random.default_rng([78, i]), small=True)
        chain, arch = kw["chain"], kw["architecture"]
        for (a, b), tm, tn in itertools.product([(0, 2), (1, 2), (0, 0)], range(1, 5), range(1, 5)):
            M, N = F.tile_bounds(chain, b)
            tm, tn = min(tm, M), min(tn, N)
            assert F._group_cost(chain, arch, a, b, tm, tn)["cycles"] == _literal_gemm_cycles(chain, arch, a, b, tm, tn)


@pytest.mark.parametrize("problem", [MBV2, LLAMA], ids=lambda p: p.id)
def test_the_search_and_the_valid_count_equal_brute_force_on_small_instances(problem):
    cut = 0
    for i in range(4):
        kw = plain(problem.generator_fn(np.random.default_rng([4300, i]), small=True), "t")
        args = [kw["chain"], kw["architecture"]]
        rec = problem.reference_fn(*args)
        valid = [out["objective"] for m in F.enumerate_space(*args) if (out := problem.evaluator_fn(m, *args))["valid"]]
        assert rec["proven"] and min(valid) == rec["best"]
        assert problem.evaluator_fn(json.loads(rec["mapping"]), *args)["objective"] == rec["best"]
        assert F.valid_space_size(*args) == len(valid) <= F.space_size(args[0])
        cut += len(valid) < F.space_size(args[0])
    assert cut  # the GLB turns some schedules away: the count is not the space's size


def test_real_spaces_as_the_readme_gives_them():
    """The schedules the rules allow, and the valid ones (every group within the GLB): the README's
    ranges per problem."""
    for problem, allowed, valid in ((MBV2, 9e17, 2e11), (RESNET, 2e17, 1e16), (LLAMA, 1e19, 8e16)):
        for v in vectors.load(problem).hidden:
            assert F.space_size(v.args[0]) >= allowed and F.valid_space_size(*v.args) >= valid, (problem.id, v.id)


# ------------------------------------------------------------------------------------------
# through the real sandbox
# ------------------------------------------------------------------------------------------

def _small(problem, seed):
    out = []
    for i in range(3):
        kw = plain(problem.generator_fn(np.random.default_rng([seed, i]), small=True), "t")
        args = [kw["chain"], kw["architecture"]]
        out.append(Vector(id=f"s{i}", args=args, expected=plain(problem.reference_fn(*args), "t")))
    return tuple(out)


@pytest.mark.docker
@pytest.mark.parametrize("problem,variant", [(RESNET, "no_halo"), (LLAMA, "weights_once")], ids=["conv", "gemm"])
def test_solution_at_the_best_and_a_variant_below_in_the_sandbox(handle, problem, variant):
    small = _small(problem, 9191)
    g, _ = grade_source(handle, problem, problem.solution_source, small)
    assert g.verdict is Verdict.PASS, g.reason
    assert g.score == 1.0
    v = next(x for x in problem.variants if x.name == variant)
    g, _ = grade_source(handle, problem, v.source, small)
    assert g.verdict is not Verdict.PASS and g.score is not None and g.score < 0.95


UNFUSED = '''
def map_chain(chain, architecture):
    return {"groups": [{"layers": 1, "tile": {"P": 1, "Q": 1}} for _ in chain["layers"]]}
'''


@pytest.mark.docker
def test_audit_shows_a_schedule_beside_the_best_known(tmp_path, capsys):
    comp = tmp_path / "completions.jsonl"
    comp.write_text(json.dumps({"problem": MBV2.qualified_id, "sample": 0,
                                "text": f"```python\n{UNFUSED}```\n"}) + "\n")
    rc = main(["eval", "--pack", "perf-mapper", "--problem", MBV2.id, "--completions", str(comp), "--samples", "1",
               "--runs-dir", str(tmp_path / "runs"), "--name", "fuse", "--quiet"])
    assert rc == 0
    capsys.readouterr()
    assert main(["audit", str(tmp_path / "runs" / "fuse"), "--verdict", "wrong_answer", "--no-code"]) == 0
    out = capsys.readouterr().out.replace("\n", "")
    assert "returned mapping on h" in out and '"groups":[{"layers":1,"tile":{"P":1,"Q":1}}' in out
    best = {v.id: v.expected["mapping"] for v in vectors.load(MBV2).hidden}
    assert any(m in out for m in best.values())


@pytest.mark.parametrize("pid", ["fuse-mbv2-traffic", "fuse-resnet-traffic", "fuse-llama-latency"])
def test_the_prompt_asks_for_a_schedule_not_the_formats_mapping(pid):
    """A search problem whose answer is not the format's mapping names its own answer
    (`[scoring] answer`) and never asks for the format's loops; the GEMM mappers still do."""
    from grader.packs.prompt import render_prompt

    text = render_prompt(CATALOG.find(f"perf-mapper/{pid}"), [])
    answer = text[text.index("## Answer format"):]
    assert "Return a fused schedule (a dict, as the task above defines it)." in text
    assert "(0 when it is invalid)" in text and "the format's `mapping`" not in text
    assert "[str, int]" not in answer and "Return it as a plain dict" in answer
    gemm = render_prompt(CATALOG.find("perf-mapper/gemm-energy-mapper"), [])
    assert "Return a mapping (a dict, the format's `mapping`)." in gemm
    assert "def map_gemm(workload: dict, architecture: dict, holds: list) -> dict:" in gemm  # v2: what each level holds
    assert "Return the mapping as a plain dict (str keys; lists of [str, int] loops;" in gemm


def test_a_fusion_qa_item_asks_for_a_schedule_and_scores_its_best_known_one():
    """Q&A on a problem with its own answer form: the prompt names the schedule (never the
    format's levels or the best known); the item's best known schedule scores 1, a worse valid
    one scores best/objective, and a levels mapping is invalid."""
    from grader.grading.qa import grade_qa
    from grader.packs.qa import qa_items, render_qa_prompt

    problem = CATALOG.find("perf-mapper/fuse-llama-latency")
    vs = vectors.load(problem)
    item = qa_items(problem, vs.hidden, 1)[0]
    assert item.kind == "mapping"
    prompt = render_qa_prompt(problem, item, vs.visible)
    assert "ONE answer for this instance, a fused schedule (a dict, as the task above defines it)" in prompt
    assert "Which answer for this instance has the least cycles?" in prompt
    assert '"levels"' not in prompt[prompt.index("## Answer format"):]
    assert item.expected["mapping"] not in prompt and f"{item.expected['best']:.10g}" not in prompt
    best = json.loads(item.expected["mapping"])
    g = grade_qa(problem, item, f"```json\n{json.dumps(best)}\n```\n")
    assert g.verdict is Verdict.CORRECT and g.score == 1.0
    layers = len(item.args[0]["layers"])
    worse = {"groups": [{"layers": 1, "tile": {"M": 1, "N": 1}} for _ in range(layers)]}
    g = grade_qa(problem, item, f"```json\n{json.dumps(worse)}\n```\n")
    assert g.verdict is Verdict.WRONG_ANSWER and 0 < g.score < 1, g.reason
    g = grade_qa(problem, item, '```json\n{"levels": []}\n```\n')
    assert g.score == 0 and "invalid_mapping" in g.reason


def test_the_offline_demo_model_answers_a_schedule_item_right_and_wrong():
    """The built-in demo model (eval with no endpoint) answers items whose answer is not the
    format's mapping: right gives the best known schedule, wrong a schedule one value off."""
    from grader.grading.qa import grade_qa
    from grader.packs.qa import qa_items
    from grader.pipeline.demo import demo_qa_answer

    problem = CATALOG.find("perf-mapper/fuse-mbv2-traffic")
    item = qa_items(problem, vectors.load(problem).hidden, 1)[0]
    assert grade_qa(problem, item, demo_qa_answer(problem, item, 0, right=True)).score == 1.0
    wrong = [grade_qa(problem, item, demo_qa_answer(problem, item, s, right=False)) for s in range(6)]
    assert all(g.verdict is not Verdict.CORRECT for g in wrong if g.verdict is not Verdict.NO_ANSWER)
    assert any(g.score is not None and g.score < 1 for g in wrong)


def test_the_traffic_problems_name_their_objective_the_excess_traffic():
    """The conv chains score the excess DRAM traffic (the compulsory part left out): the prompts'
    shown example, score sentence and Q&A question say so (``[scoring] label``), and a worse
    answer's reason names it."""
    from grader.grading.qa import grade_qa
    from grader.packs.prompt import render_prompt
    from grader.packs.qa import qa_items, render_qa_prompt

    for pid in ("fuse-mbv2-traffic", "fuse-resnet-traffic"):
        problem = CATALOG.find(f"perf-mapper/{pid}")
        assert problem.data.scoring.objective == "traffic" and problem.data.scoring.objective_name == "excess traffic"
        vs = vectors.load(problem)
        code = render_prompt(problem, vs.visible)
        assert "# the best mapping known (excess traffic " in code
        assert "computes its excess traffic on its side; its score is the best known excess traffic divided" in code
        assert "(traffic " not in code and "known traffic" not in code
        item = qa_items(problem, vs.hidden, 1)[0]
        qa = render_qa_prompt(problem, item, vs.visible)
        assert "Which answer for this instance has the least excess traffic?" in qa and "known traffic" not in qa
    layers = len(item.args[0]["layers"])
    worse = {"groups": [{"layers": 1, "tile": {"P": 1, "Q": 1}} for _ in range(layers)]}
    g = grade_qa(problem, item, f"```json\n{json.dumps(worse)}\n```\n")
    assert g.verdict is Verdict.WRONG_ANSWER and ": excess traffic " in g.reason, g.reason
    assert CATALOG.find("perf-mapper/gemm-energy-mapper").data.scoring.objective_name == "energy"  # no label
