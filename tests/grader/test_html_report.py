"""The HTML report: built from a crafted run directory, checked as text and in real headless Chromium.

The crafted run has every kind of failure and hostile model output (``</script>``, tags, event
handlers, a remote image). Chromium tests never skip: without Chromium they fail with the fix.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
from html.parser import HTMLParser
from pathlib import Path

import markupsafe
import pytest

from grader.results.html_report import MAX_SAMPLES_SHOWN, failing_samples, render_html
from grader.results.render import pct
from grader.results.summary import load_run, run_summary
from grader.results.runs import ProblemEntry, RunDir, RunManifest
from grader.grading.scoring import FieldDiff, FieldSummary, Grade, VectorFailure, infra_grade, no_code_grade

PACK = "fixture-pack"
RUN_ID = "20250101-000000-fixture-0000"
MODEL = 'fixture-model</script><script>document.body.dataset.pwned="model"</script>'

HOSTILE_CODE = (
    '</script><script>document.body.dataset.pwned="code"</script>\n'
    '<img src="http://198.51.100.7/pixel.png" onerror="document.body.dataset.pwned=\'img\'">\n'
    "<!-- ]]> --> <style>body{display:none}</style> \ud800 \x00\r\n"
    "def model(x):\n"
    '    return {"cycles": 2 * x}\n'
)
GOOD_CODE = "def model(x):\n    return {'cycles': x, 'energy_pj': 1.5 * x}\n"
WRONG_CODE = "def model(x):\n    # counts bytes as bits\n    return {'cycles': 2 * x, 'energy_pj': 1.2 * x}\n"

# (id, family, difficulty, title, verdict script of samples 0..3)
PROBLEMS = [
    ("alpha-easy", "F1", "easy", "Alpha: layer accounting", ["pass", "pass", "wrong", "wrong"]),
    ("beta-medium", "F2", "medium", 'Beta "quoted" <title> & more', ["hostile", "runtime", "pass", "timeout"]),
    ("delta-easy", "F3", "easy", "Delta: roofline", ["wrong", "pass", "pass", "pass"]),
    ("gamma-hard", "F2", "hard", "Gamma: tiling", ["no_code", "load", "wrong_type", "infra"]),
]
# pass@1 per problem: alpha 2/4, beta 1/4, delta 3/4, gamma 0/3 (the infrastructure error is excluded)
ORDER_BY_ID = ["alpha-easy", "beta-medium", "delta-easy", "gamma-hard"]
ORDER_BY_PASS1 = ["gamma-hard", "beta-medium", "alpha-easy", "delta-easy"]
N_FAILING = 10

INPUTS = '[{"M":64,"N":32,"K":16},{"bits":8}]'


def _grade(kind: str) -> Grade:
    common = {"vectors_total": 3, "cpu_s": 0.042, "wall_s": 0.31, "max_rss_kb": 21504}
    if kind == "pass":
        return Grade(verdict="pass", reason="all 3 vectors match", vectors_answered=3, vectors_passed=3, **common)
    if kind == "wrong":
        return Grade(
            verdict="wrong_answer", reason="wrong cycles, energy_pj on 2 of 3 vectors", vectors_answered=3,
            vectors_passed=1, failed_vectors=["h1", "h2"],
            failures=[VectorFailure(vector=v, kind="wrong_answer", inputs=INPUTS, diffs=[
                FieldDiff(path="cycles", kind="value", expected=4096, got=8192, abs_err=4096.0, rel_err=1.0, ratio=2.0),
                FieldDiff(path="energy_pj", kind="value", expected=1.5e6, got=1.2e6, abs_err=3e5, rel_err=0.2, ratio=0.8),
            ]) for v in ("h1", "h2")],
            fields={"cycles": FieldSummary(failed=2, answered=3, ratio_min=2.0, ratio_max=2.0),
                    "energy_pj": FieldSummary(failed=2, answered=3, ratio_min=0.8, ratio_max=0.8)}, **common)
    if kind == "hostile":
        return Grade(
            verdict="wrong_answer", reason="wrong cycles on 1 of 3 vectors <b>not bold</b>", vectors_answered=3,
            vectors_passed=2, failed_vectors=["h0"],
            failures=[VectorFailure(vector="h0<i>", kind="wrong_answer", inputs='["<script>alert(1)</script>"]', diffs=[
                FieldDiff(path="cycles<u>", kind="value", expected=18, got="<svg onload=alert(1)>", note="</td></tr>"),
            ])], output_tail="<iframe src=\"http://198.51.100.7/\"></iframe>\n", **common)
    if kind == "runtime":
        return Grade(
            verdict="runtime_error", reason="raised ZeroDivisionError: division by zero on 3 of 3 vectors",
            vectors_answered=3, exception_type="ZeroDivisionError", failed_vectors=["h0", "h1", "h2"],
            failures=[VectorFailure(
                vector="h0", kind="runtime_error", inputs=INPUTS, error_type="ZeroDivisionError",
                error_message="division by zero </pre><script>document.body.dataset.pwned='msg'</script>",
                traceback='Traceback (most recent call last):\n  File "candidate.py", line 7, in model\n'
                          "    return a / b\nZeroDivisionError: division by zero\n")], **common)
    if kind == "timeout":
        return Grade(
            verdict="timeout", reason="cpu_time on vector h2: cpu time limit 2s exceeded", vectors_answered=2,
            vectors_passed=2, stop_reason="cpu_time", stop_detail="cpu time limit 2s exceeded",
            output_bytes=40, output_tail="tiling 1 of 1000000\ntiling 2 of 1000000\n",
            **dict(common, cpu_s=2.01, wall_s=2.4))
    if kind == "no_code":
        return no_code_grade("no code block and no definition of model", 3)
    if kind == "load":
        return Grade(
            verdict="load_error", reason="SyntaxError: invalid syntax (candidate.py, line 1)", load_kind="import",
            exception_type="SyntaxError",
            failures=[VectorFailure(vector="(load)", kind="runtime_error", error_type="SyntaxError",
                                    error_message="invalid syntax (candidate.py, line 1)",
                                    traceback='  File "candidate.py", line 1\n    def model(x)\n               ^\n'
                                              "SyntaxError: invalid syntax\n")], **common)
    if kind == "wrong_type":
        return Grade(
            verdict="wrong_type", reason="reads: expected int, got str (3 of 3 vectors)", vectors_answered=3,
            failed_vectors=["h0", "h1", "h2"],
            failures=[VectorFailure(vector="h0", kind="wrong_type", inputs=INPUTS, diffs=[
                FieldDiff(path="per_level.DRAM", kind="missing", expected=18),
                FieldDiff(path="per_level.L2", kind="extra", got=0),
                FieldDiff(path="reads", kind="type", expected=18, got="18", note="expected int, got str"),
            ])], **common)
    if kind == "infra":
        return infra_grade("the sandbox container did not start", 3)
    raise AssertionError(kind)


def _code(kind: str) -> str | None:
    return {"pass": GOOD_CODE, "hostile": HOSTILE_CODE, "no_code": None,
            "load": "def model(x)\n    return 1\n"}.get(kind, WRONG_CODE)


def make_run(parent: Path, *, source: str = "completions") -> Path:
    """A finished run directory with the scripted verdicts, written through the real RunDir."""
    manifest = RunManifest(
        run_id=RUN_ID, created="2025-01-01T00:00:00+00:00", source=source, model=MODEL, samples=4,
        k_values=[1, 2, 4], pack={PACK: {"version": "0.0.1", "hash": "ab" * 32}},
        problems=[ProblemEntry(id=f"{PACK}/{pid}", family=fam, difficulty=diff, title=title,
                               content_hash="0" * 64, vectors_digest="1" * 64, n_hidden=3)
                  for pid, fam, diff, title, _ in PROBLEMS],
        image={"id": "sha256:" + "c" * 64, "tag": "perfgrade-sandbox:fixture"},
    )
    run = RunDir.create(parent, manifest)
    run.lock()
    try:
        for pid, _, _, _, script in PROBLEMS:
            for sample, kind in enumerate(script):
                problem = f"{PACK}/{pid}"
                code = _code(kind)
                text = "I cannot say." if code is None else f"Here it is.\n\n```python\n{code}```\n"
                run.journal.append({"type": "completion", "problem": problem, "sample": sample, "source": source,
                                    "text": text, "code": code,
                                    "extraction": {"method": "none" if code is None else "fenced",
                                                   "reason": "no code block" if code is None else "block 1 of 1"},
                                    "meta": {}, "ts": "2025-01-01T00:00:01+00:00"})
                run.journal.append({"type": "grade", "problem": problem, "sample": sample, "round": 0,
                                    "grade": _grade(kind).model_dump(mode="json"), "infra_notes": [],
                                    "image": manifest.image["id"], "ts": "2025-01-01T00:00:02+00:00"})
    finally:
        run.unlock()
    return run.path


@pytest.fixture(scope="module")
def crafted(tmp_path_factory):
    """(run path, summary, failing samples, html) of the crafted run."""
    path = make_run(tmp_path_factory.mktemp("runs"))
    summary = run_summary(load_run(path))
    samples = failing_samples(path)
    return path, summary, samples, render_html(summary, samples)


# ------------------------------------------------------------------------------------------
# headless Chromium
# ------------------------------------------------------------------------------------------

def chromium_binary() -> str:
    for name in (os.environ.get("PERFGRADE_CHROMIUM"), "chromium", "chromium-browser", "google-chrome"):
        if name and (path := shutil.which(name)):
            return path
    pytest.fail("headless Chromium not found: install it with `apt-get install -y --no-install-recommends "
                "chromium` (bin/setup --test does), or point PERFGRADE_CHROMIUM at a Chromium binary",
                pytrace=False)


def chromium(url: str, *args: str, timeout: float = 90) -> str:
    """Run headless Chromium on url with the given action flags; returns stdout."""
    binary = chromium_binary()
    with tempfile.TemporaryDirectory(prefix="perfgrade-chromium-") as profile:
        cmd = [binary, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
               "--disable-background-networking", "--disable-component-update", "--disable-sync",
               "--disable-extensions", "--mute-audio", f"--user-data-dir={profile}",
               "--host-resolver-rules=MAP * ~NOTFOUND", "--virtual-time-budget=2000", *args, url]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            pytest.fail(f"Chromium did not finish within {timeout}s: {' '.join(cmd)}", pytrace=False)
    if proc.returncode != 0:
        pytest.fail(f"Chromium exited with {proc.returncode}: {proc.stderr[-2000:]}", pytrace=False)
    return proc.stdout


def dump_dom(page: Path, fragment: str = "") -> str:
    dom = chromium(page.resolve().as_uri() + fragment, "--dump-dom")
    assert "<body" in dom, f"Chromium returned no DOM: {dom[:500]!r}"
    return dom


def body_attrs(dom: str) -> dict[str, str]:
    tag = re.search(r"<body\b[^>]*>", dom).group(0)
    return dict(re.findall(r'([\w-]+)="([^"]*)"', tag))


def assert_rendered_cleanly(dom: str) -> None:
    attrs = body_attrs(dom)
    assert attrs.get("data-ready") == "1", f"the page's script did not finish: {attrs}"
    assert attrs.get("data-errors", "") == "", f"errors in the page: {attrs['data-errors']}"
    assert "data-pwned" not in dom, "model output ran as script"


def problem_order(dom: str) -> list[str]:
    table = dom[dom.index('id="problems"'):]
    table = table[: table.index("</table>")]
    return [p.split("/", 1)[-1] for p in re.findall(r'<tr data-problem="([^"]+)"', table)]


def write(tmp_path: Path, html: str, name: str = "report.html") -> Path:
    page = tmp_path / name
    page.write_text(html, encoding="utf-8")
    return page


# ------------------------------------------------------------------------------------------
# the data behind the page
# ------------------------------------------------------------------------------------------

def test_crafted_run_statistics_are_what_the_tests_assume(crafted):
    _, s, _, _ = crafted
    assert s["headline"]["pass@1"] == pytest.approx((2 / 4 + 1 / 4 + 3 / 4 + 0 / 3) / 4)
    assert s["runs"]["runs"] == pytest.approx([1 / 4, 2 / 4, 2 / 4, 1 / 3])
    assert s["samples"]["infra_excluded"] == 1
    assert s["run"]["model"] == MODEL


def test_failing_samples_carry_what_the_page_shows(crafted):
    _, _, samples, _ = crafted
    assert len(samples) == N_FAILING
    assert all(sm["verdict"] != "pass" for sm in samples)
    keys = {"problem", "title", "sample", "verdict", "reason", "code", "failures", "output_tail", "stop_reason",
            "cpu_s", "wall_s", "max_rss_kb", "signature"}
    assert all(keys <= set(sm) for sm in samples)
    by = {(sm["problem"].split("/", 1)[1], sm["sample"]): sm for sm in samples}
    assert by[("beta-medium", 0)]["title"] == 'Beta "quoted" <title> & more'
    assert by[("beta-medium", 0)]["code"] == HOSTILE_CODE
    assert by[("gamma-hard", 0)]["code"] is None and by[("gamma-hard", 0)]["verdict"] == "no_code"
    assert by[("beta-medium", 3)]["stop_reason"] == "cpu_time"
    assert by[("beta-medium", 1)]["failures"][0]["traceback"].startswith("Traceback")
    assert by[("gamma-hard", 2)]["failures"][0]["diffs"][2]["got"] == "18"
    assert by[("gamma-hard", 3)]["verdict"] == "infra_error"


# ------------------------------------------------------------------------------------------
# the page as text
# ------------------------------------------------------------------------------------------

class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.data: dict[str, str] = {}
        self._in: str | None = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.tags.append((tag, a))
        if tag == "script":
            self._in = a.get("id") or a.get("type") or "script"
            self.data[self._in] = ""

    def handle_endtag(self, tag):
        if tag == "script":
            self._in = None

    def handle_data(self, data):
        if self._in:
            self.data[self._in] += data


def test_page_is_self_contained_and_escapes_model_output(crafted):
    _, summary, _, page = crafted
    p = _Tags()
    p.feed(page)
    tags = [t for t, _ in p.tags]
    # exactly the page's own scripts: the error recorder, the data block, the init
    assert tags.count("script") == 3
    assert [a.get("type") for t, a in p.tags if t == "script"] == [None, "application/json", None]
    for forbidden in ("link", "img", "iframe", "object", "embed", "base", "form", "image", "use"):
        assert forbidden not in tags, forbidden
    for tag, attrs in p.tags:
        for name, value in attrs.items():
            assert not name.startswith("on"), (tag, name)
            assert name not in ("src", "srcset", "action", "xlink:href", "poster"), (tag, name)
            if name == "href":
                assert value.startswith("#"), (tag, value)
    assert "url(" not in page and "@import" not in page
    csp = next(a["content"] for t, a in p.tags if t == "meta" and a.get("http-equiv") == "Content-Security-Policy")
    assert "default-src 'none'" in csp and "'unsafe-inline'" not in csp.split("script-src")[1].split(";")[0]
    # hostile strings only ever appear escaped
    for raw in ('<script>document.body.dataset.pwned', "<img src=", "<svg onload", "<b>not bold</b>",
                "</pre><script>", "<iframe", "<style>body{display:none}"):
        assert raw not in page, raw
    assert html_escape('</script><script>document.body.dataset.pwned="code"') in page
    page.encode("utf-8")  # a lone surrogate in model output does not make the page unwritable
    # the data block is inert and round-trips to the summary
    assert "</script" not in p.data["report-data"].lower()
    assert json.loads(p.data["report-data"]) == json.loads(json.dumps(summary))
    # samples start collapsed
    assert tags.count("details") == N_FAILING
    assert all("open" not in a for t, a in p.tags if t == "details")


def test_page_mirrors_the_terminal_wording(crafted):
    _, s, _, page = crafted
    for text in ("mean over problems; CI by bootstrap over problems", "runs; CI by bootstrap over runs",
                 "per-run pass rates:", "run std", "run range", "top failure",
                 "excluded (infrastructure errors)", "wrong answer (2)", "wrong type or shape",
                 "infrastructure error", "peak memory 21.0 MiB", "stopped by cpu_time: cpu time limit 2s exceeded",
                 "vectors passed 1/3", "traceback (vector h0)", "(no code extracted: no code block)"):
        assert text in page, text
    assert pct(s["headline"]["pass@1"]) in page


def test_long_code_and_many_samples_are_capped(crafted):
    _, summary, samples, _ = crafted
    many = [dict(samples[0], sample=i, code="x = 1\n" * 2000) for i in range(MAX_SAMPLES_SHOWN + 50)]
    page = render_html(summary, many)
    assert page.count('<details class="sample"') == MAX_SAMPLES_SHOWN
    assert f"Showing the first {MAX_SAMPLES_SHOWN} of {MAX_SAMPLES_SHOWN + 50} failing samples" in page
    assert "code truncated: showing" in page
    assert len(page) < 5_000_000


def test_an_empty_run_renders(tmp_path):
    manifest = RunManifest(run_id="empty-run", created="2025-01-01T00:00:00+00:00", source="model", model="m",
                           samples=2, k_values=[1], pack={}, problems=[])
    run = RunDir.create(tmp_path, manifest)
    s = run_summary(load_run(run.path))
    page = render_html(s, failing_samples(run.path))
    assert "No graded samples yet." in page and "No failing samples." in page


# ------------------------------------------------------------------------------------------
# the page in headless Chromium
# ------------------------------------------------------------------------------------------

@pytest.mark.browser
def test_renders_in_chromium_and_sorts(crafted, tmp_path):
    _, s, samples, page_html = crafted
    page = write(tmp_path, page_html)

    dom = dump_dom(page)
    assert_rendered_cleanly(dom)
    assert problem_order(dom) == ORDER_BY_ID
    text = re.sub(r"\s+", " ", dom)
    assert pct(s["headline"]["pass@1"]) == "37.5%" and 'id="headline-pass1">37.5%<' in text
    for rate in s["runs"]["runs"]:
        assert f'<span class="rate">{pct(rate)}</span>' in text
    assert "gamma-hard" in text and "wrong type or shape" in text and "runtime error" in text
    # hostile output arrives as text, not markup
    assert '&lt;/script&gt;&lt;script&gt;document.body.dataset.pwned="code"&lt;/script&gt;' in dom
    assert dom.count('<details class="sample"') == len(samples) == N_FAILING
    assert " open" not in re.findall(r"<details[^>]*>", dom)[0]

    dom = dump_dom(page, "#sort=pass1")
    assert_rendered_cleanly(dom)
    assert problem_order(dom) == ORDER_BY_PASS1
    assert re.search(r'<th [^>]*data-key="pass1"[^>]*aria-sort="ascending"', dom)

    dom = dump_dom(page, "#sort=-pass1&filter=timeout")
    assert_rendered_cleanly(dom)
    assert problem_order(dom) == ORDER_BY_PASS1[::-1]
    shown = [v for v, hidden in re.findall(r'<details class="sample"[^>]*data-verdict="([^"]+)"[^>]*?( hidden="")?>', dom)
             if not hidden]
    assert shown == ["timeout"]


@pytest.mark.browser
def test_screenshot(crafted, tmp_path):
    _, summary, samples, page_html = crafted
    summary = dict(summary, run=dict(summary["run"], notice="offline demo model: a notice banner"))
    page = write(tmp_path, render_html(summary, samples))
    shot = tmp_path / "report.png"
    chromium(page.resolve().as_uri(), f"--screenshot={shot}", "--window-size=1280,2400",
             "--hide-scrollbars")
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 20_000


@pytest.mark.docker
@pytest.mark.browser
@pytest.mark.slow
def test_real_demo_eval_report(sandbox_image, tmp_path, monkeypatch, capsys):
    from grader.cli import main

    for var in ("PERFGRADE_BASE_URL", "OPENAI_BASE_URL", "PERFGRADE_MODEL"):
        monkeypatch.delenv(var, raising=False)
    runs = tmp_path / "runs"
    assert main(["eval", "--family", "F1", "--family", "F2", "--family", "F3", "--samples", "3", "--k", "1,2",
                 "--runs-dir", str(runs), "--quiet"]) == 0
    (run,) = list(runs.iterdir())
    out = tmp_path / "report.html"
    assert main(["report", str(run), "--html", str(out)]) == 0
    capsys.readouterr()
    s = run_summary(load_run(run))
    assert s["run"].get("notice")

    dom = dump_dom(out, "#sort=-pass1")
    assert_rendered_cleanly(dom)
    text = re.sub(r"\s+", " ", dom)
    assert html_escape(s["run"]["notice"]) in out.read_text() and "NOTE:" in text
    assert f'id="headline-pass1">{pct(s["headline"]["pass@1"])}<' in text
    for rate in s["runs"]["runs"]:
        assert f'<span class="rate">{pct(rate)}</span>' in text
    order = problem_order(dom)
    p1 = {p["problem"].split("/", 1)[-1]: p["pass@1"] for p in s["problems"]}
    assert sorted(order) == sorted(p1)
    assert [p1[p] for p in order] == sorted(p1.values(), reverse=True)


# ------------------------------------------------------------------------------------------
# real runs of the demo model: code only, Q&A only, both modes with revision, a hostile one
# ------------------------------------------------------------------------------------------

ROOT = Path(__file__).resolve().parents[2]
HOSTILE_PROBLEM = "perf-core/f2-roofline-gemm"
HOSTILE_CODE_0 = '''Let me think. <script>document.body.dataset.pwned="code-reply"</script>

```python
def roofline_gemm(gemm, hw):
    # </script><script>document.body.dataset.pwned="code"</script> <img src="http://198.51.100.7/x.png" onerror="document.body.dataset.pwned='img'">
    print("<iframe src=\\"http://198.51.100.7/\\"></iframe>")
    return {"flops": 1, "dram_bytes": 1, "intensity": 1.0, "peak_gflops": 1.0, "ridge_point": 1.0,
            "attainable_gflops": 1.0, "latency_us": 1.0,
            "bound": "</td></tr><script>document.body.dataset.pwned='got'</script>"}
```
'''
HOSTILE_CODE_1 = '''Fixed.

```python
def roofline_gemm(gemm, hw):
    raise ValueError("</pre><script>document.body.dataset.pwned='msg'</script>")
```
'''
HOSTILE_QA_0 = '''<think><script>document.body.dataset.pwned="reasoning"</script> <b>bold?</b></think>

```json
{"flops": "<img src=x onerror=document.body.dataset.pwned='answer'>", "dram_bytes": 1, "intensity": 1.0,
 "peak_gflops": 1.0, "ridge_point": 1.0, "attainable_gflops": 1.0, "latency_us": 1.0,
 "bound": "</pre><script>document.body.dataset.pwned='field'</script>"}
```
'''
HOSTILE_QA_1 = ('Second try: <style>body{display:none}</style>'
                '<svg onload="document.body.dataset.pwned=\'svg\'"></svg> no JSON this time.')
HOSTILE_MODEL = '<script>document.body.dataset.pwned="model"</script>'


def _eval(main, *args: str) -> None:
    assert main(["eval", "--quiet", *args]) == 0, args


@pytest.fixture(scope="module")
def demo_runs(sandbox_image, tmp_path_factory):
    """{name: run directory}: the demo model in code mode (two packs, so two tiers), in Q&A mode, in
    both with three revision rounds, and a completions file of hostile output in both modes with two
    rounds."""
    from grader.cli import main

    base = tmp_path_factory.mktemp("demo-runs")
    hostile = base / "hostile.jsonl"
    hostile.write_text("".join(json.dumps(r) + "\n" for r in [
        {"problem": HOSTILE_PROBLEM, "sample": 0, "text": HOSTILE_CODE_0},
        {"problem": HOSTILE_PROBLEM, "sample": 0, "round": 1, "text": HOSTILE_CODE_1},
        {"problem": HOSTILE_PROBLEM, "sample": 0, "mode": "qa", "item": "q0", "text": HOSTILE_QA_0},
        {"problem": HOSTILE_PROBLEM, "sample": 0, "mode": "qa", "item": "q0", "round": 1, "text": HOSTILE_QA_1},
    ]))
    runs = base / "runs"
    with pytest.MonkeyPatch.context() as mp:
        for var in ("PERFGRADE_BASE_URL", "OPENAI_BASE_URL", "PERFGRADE_MODEL"):
            mp.delenv(var, raising=False)
        mp.setenv("PERFGRADE_CACHE", str(base / "cache"))
        common = ["--runs-dir", str(runs)]
        _eval(main, "--name", "both", "--pack", "perf-core", "--mode", "both", "--rounds", "3", "--feedback", "examples",
              "--family", "F4", "--samples", "3", *common)
        _eval(main, "--name", "code", "--family", "F4", "--family", "F5", "--samples", "2", *common)
        _eval(main, "--name", "qa", "--pack", "perf-core", "--mode", "qa", "--family", "F2", "--family", "F16", "--samples", "2", *common)
        _eval(main, "--name", "hostile", "--completions", str(hostile), "--model", HOSTILE_MODEL,
              "--problem", HOSTILE_PROBLEM, "--mode", "both", "--rounds", "2", "--feedback", "examples",
              "--qa-items", "1", "--samples", "1", "--k", "1", *common)
    return {name: runs / name for name in ("both", "code", "qa", "hostile")}


@pytest.fixture(scope="module")
def demo_pages(demo_runs):
    """{name: (summary, failing samples, page)} of each demo run."""
    out = {}
    for name, path in demo_runs.items():
        s = run_summary(load_run(path))
        samples = failing_samples(path)
        out[name] = (s, samples, render_html(s, samples))
    return out


def section_ids(page: str) -> set[str]:
    return set(re.findall(r'<section id="([^"]+)"', page))


def section(page: str, sec: str) -> str:
    start = page.index(f'<section id="{sec}"')
    return page[start: page.index("</section>", start)]


def between(page: str, start: str, end: str | None = None) -> str:
    i = page.index(start)
    return page[i: page.index(end, i) if end else len(page)]


def sample_block(page: str, i: int, n: int) -> str:
    """The HTML of failing sample i (of n shown)."""
    return between(page, f'id="sample-{i}"', f'id="sample-{i + 1}"' if i + 1 < n else "</section>")


def row(html: str, attr: str) -> str:
    """The first table row carrying the attribute (e.g. data-group="F4")."""
    i = html.index(f"<tr {attr}") if f"<tr {attr}" in html else html.index(attr)
    return html[i: html.index("</tr>", i)]


CODE_SECTIONS = {"headline", "runs", "verdicts", "by-tier", "by-difficulty", "by-family", "problems-section"}
QA_SECTIONS = {"qa-headline", "qa-runs", "qa-verdicts", "qa-by-tier", "qa-by-difficulty", "qa-by-family",
               "qa-problems-section"}


@pytest.mark.docker
@pytest.mark.slow
def test_each_kind_of_run_has_its_sections(demo_pages):
    expect = {
        "code": CODE_SECTIONS | {"cost", "failing"},
        "qa": QA_SECTIONS | {"cost", "failing"},
        "both": CODE_SECTIONS | QA_SECTIONS | {"gap", "revision", "cost", "failing"},
    }
    for name, want in expect.items():
        s, _, page = demo_pages[name]
        assert section_ids(page) == want, name
        # every link of the table of contents lands on something on the page
        nav = between(page, '<nav class="toc"', "</nav>")
        for anchor in re.findall(r'href="#([^"]+)"', nav):
            assert f'id="{anchor}"' in page, (name, anchor)
        # the data block is the summary
        p = _Tags()
        p.feed(page)
        assert json.loads(p.data["report-data"]) == json.loads(json.dumps(s))
    both = demo_pages["both"][2]
    assert 'id="part-code"' in both and 'id="part-qa"' in both
    assert 'id="revision-code"' in both and 'id="revision-qa"' in both
    assert "Headline (code mode)" in both and "Headline (Q&amp;A mode)" in both
    assert 'id="part-code"' not in demo_pages["code"][2]


@pytest.mark.docker
@pytest.mark.slow
def test_code_numbers_and_tiers_equal_the_summary(demo_pages):
    s, _, page = demo_pages["code"]
    assert set(s["by_tier"]) == {"guided", "model"}
    assert f'id="headline-pass1">{pct(s["headline"]["pass@1"])}<' in page
    for key, sec in (("by_tier", "by-tier"), ("by_family", "by-family"), ("by_difficulty", "by-difficulty")):
        assert s[key], key
        html = section(page, sec)
        for name, g in s[key].items():
            r = row(html, f'data-group="{name}"')
            assert f">{pct(g['pass@1'])}<" in r and f">{pct(g['spread']['std'], 2)}<" in r, (key, name)
    probs = section(page, "problems-section")
    for p in s["problems"]:
        r = row(probs, f'data-problem="{p["problem"]}"')
        assert f'>{p["tier"]}<' in r and pct(p["pass@1"]) in r
        assert f'>{p["problem"]}</span>' in r  # two packs: ids keep their pack (f4-gemm-dram-traffic is in both)
    cost = section(page, "cost")
    for rnd, c in s["run"]["cost_usd"]["by_round"].items():
        assert f">round {rnd}</th><td class=\"num\">{c['calls']}<" in cost


@pytest.mark.docker
@pytest.mark.slow
def test_qa_numbers_and_fields_equal_the_summary(demo_pages):
    s, samples, page = demo_pages["qa"]
    q = s["qa"]
    assert s["modes"] == ["qa"] and not s["problems"]
    assert f'id="qa-accuracy">{pct(q["headline"]["accuracy"])}<' in page
    assert ci_text_of(q["headline"]["accuracy_ci95"]) in section(page, "qa-headline")
    kinds = section(page, "qa-headline")
    for kind, v in q["by_kind"].items():
        k = between(kinds, f'data-kind="{kind}"', "</div>")
        assert f"<b>{pct(v['accuracy'])}</b>" in k and f"{v['items']} answers" in k
    for rate in q["runs"]["runs"]:
        assert f'<span class="rate">{pct(rate)}</span>' in section(page, "qa-runs")
    for key, sec in (("by_tier", "qa-by-tier"), ("by_family", "qa-by-family")):
        html = section(page, sec)
        for name, g in q[key].items():
            assert f">{pct(g['pass@1'])}<" in row(html, f'data-group="{name}"'), (key, name)
    table = section(page, "qa-problems-section")
    with_fields = 0
    for p in q["problems"]:
        r = row(table, f'data-problem="{p["problem"]}"')
        assert f"{pct(p['accuracy'])}<" in r
        for field, acc in p["fields"].items():
            chip = between(r, f'data-field="{field}"', "</span>")
            assert f"<b>{pct(acc, 0)}</b>" in chip, (p["problem"], field)
            with_fields += 1
    assert with_fields
    # Q&A answers among the failing samples: the reply collapsed, the JSON answer, fields expected vs got
    assert samples and all(sm["mode"] == "qa" for sm in samples)
    assert page.count('<details class="sample"') == len(samples)
    assert page.count('<details class="reply">') == len(samples)
    assert page.count('data-mode="qa"') >= len(samples)
    wrong = next(sm for sm in samples if sm["verdict"] == "wrong_answer" and sm["failures"][0].get("diffs"))
    i = samples.index(wrong)
    block = sample_block(page, i, len(samples))
    assert "answer (JSON)" in block and "per field: expected vs got" in block
    d = wrong["failures"][0]["diffs"][0]
    assert f"<code>{html_escape(d['path'])}</code>" in block
    assert f"<code>{html_escape(json.dumps(d['expected'], ensure_ascii=False))}</code>" in block
    assert f"<code>{html_escape(json.dumps(d['got'], ensure_ascii=False))}</code>" in block


def ci_text_of(ci):
    from grader.results.render import ci_text

    return ci_text(ci)


def html_escape(text: str) -> str:
    """Text as the page's templates escape it (markupsafe, which Jinja2 autoescapes with)."""
    return str(markupsafe.escape(text))


@pytest.mark.docker
@pytest.mark.slow
def test_gap_and_revision_equal_the_summary(demo_pages):
    from grader.results.render import points, points_ci

    s, samples, page = demo_pages["both"]
    g = s["gap"]
    gap = section(page, "gap")
    assert f'id="gap-value">{points(g["gap"])}<' in gap
    assert f'id="gap-ci">{points_ci(g["gap_ci95"])}<' in gap
    for key, dd in (("qa_wins", "qa-wins"), ("code_wins", "code-wins"), ("ties", "ties")):
        listed = between(gap, f'id="{dd}"', "</dd>")
        assert listed.count('class="pill"') == len(g[key]), key
        for pid in g[key]:
            assert f'>{pid.split("/", 1)[1]}<' in listed
    order = re.findall(r'<tr data-problem="([^"]+)"', gap)
    assert order == [r["problem"] for r in sorted(g["rows"], key=lambda r: (-r["gap"], r["problem"]))]
    for r in g["rows"]:
        assert f'>{points(r["gap"])}<' in row(gap, f'data-problem="{r["problem"]}"')

    rev = section(page, "revision")
    for mode, rv in s["revision"].items():
        block = between(rev, f'id="revision-{mode}"', 'class="revmode"' if mode == "code" else None)
        assert f'data-overall="{rv["overall"]}"' in block
        assert f"revision {html_escape(rv['overall'])}" in block
        for rr in rv["rounds"]:
            r = row(block, f'data-round="{rr["round"]}"')
            assert f">{pct(rr['rate'])}<" in r
            for k, n in (rr["transitions"] or {}).items():
                assert f'class="num t-{k.replace(" ", "-")}">{n}<' in r, (mode, rr["round"], k)
        tiers = between(block, "by tier, round by round", "</table>")
        for name, v in rv["rounds"][-1]["by_tier"].items():
            assert pct(v) in row(tiers, f'data-group="{name}"')
    # revised samples: every round one after another with the feedback between them
    revised = [(i, sm) for i, sm in enumerate(samples) if len(sm["rounds"]) > 1]
    assert revised
    for i, sm in revised:
        block = sample_block(page, i, len(samples))
        assert block.count('<li class="round"') == len(sm["rounds"])
        assert [int(x) for x in re.findall(r'<li class="round" data-round="(\d+)"', block)] == \
            [r["round"] for r in sm["rounds"]]
        assert block.count('<div class="feedback">') == sum(bool(r["feedback"].strip()) for r in sm["rounds"])


@pytest.mark.docker
@pytest.mark.slow
def test_hostile_model_output_in_both_modes_is_escaped(demo_pages):
    s, samples, page = demo_pages["hostile"]
    assert {sm["mode"] for sm in samples} == {"code", "qa"}
    assert all(len(sm["rounds"]) == 2 for sm in samples)
    p = _Tags()
    p.feed(page)
    tags = [t for t, _ in p.tags]
    assert tags.count("script") == 3
    for forbidden in ("link", "img", "iframe", "object", "embed", "base", "form", "image", "use", "style"):
        assert tags.count(forbidden) == (1 if forbidden == "style" else 0), forbidden
    for tag, attrs in p.tags:
        for name, value in attrs.items():
            assert not name.startswith("on"), (tag, name)
            assert name not in ("src", "srcset", "action", "xlink:href", "poster"), (tag, name)
            if name == "href":
                assert value.startswith("#"), (tag, value)
    for raw in ("<script>document.body.dataset.pwned", "<img src=", "<svg onload", "<b>bold?</b>", "<iframe",
                "<style>body{display:none}", "</pre><script>", "</td></tr><script>"):
        assert raw not in page, raw
    for shown in ('<script>document.body.dataset.pwned="model"</script>',  # the model name
                  '<script>document.body.dataset.pwned="reasoning"',  # a Q&A reply
                  "<img src=x onerror=document.body.dataset.pwned='answer'>",  # a JSON answer
                  "document.body.dataset.pwned='msg'",  # an exception message
                  "</td></tr><script>"):  # a returned value
        assert html_escape(shown) in page, shown
    assert "</script" not in p.data["report-data"].lower()
    assert json.loads(p.data["report-data"]) == json.loads(json.dumps(s))


# ------------------------------------------------------------------------------------------
# the leaderboard
# ------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def board(demo_runs):
    from grader.results.leaderboard import build_leaderboard

    summaries = [run_summary(load_run(demo_runs[n])) for n in ("qa", "code", "both")]
    return summaries, build_leaderboard(summaries)


@pytest.mark.docker
@pytest.mark.slow
def test_leaderboard_rows_and_heat_maps_equal_the_summaries(board):
    summaries, b = board
    qa, code, both = summaries
    # code pass@1 first (both before code-only when it scores higher), Q&A-only runs last
    code_rows = sorted([("code", code["headline"]["pass@1"]), ("both", both["headline"]["pass@1"])],
                       key=lambda kv: -kv[1])
    assert [r["run"] for r in b["runs"]] == [n for n, _ in code_rows] + ["qa"]
    assert [r["rank"] for r in b["runs"]] == [1, 2, 3]
    by = {r["run"]: r for r in b["runs"]}
    assert by["code"]["code"]["pass@1"] == code["headline"]["pass@1"]
    assert by["code"]["code"]["ci95"] == code["headline"]["pass@1_ci95"]
    assert by["code"]["qa"] is None and by["code"]["gap"] is None
    assert by["qa"]["code"] is None and by["qa"]["qa"]["accuracy"] == qa["qa"]["headline"]["accuracy"]
    assert by["both"]["gap"]["gap"] == both["gap"]["gap"] and by["both"]["gap"]["ci95"] == both["gap"]["gap_ci95"]
    assert by["both"]["qa"]["runs"]["std"] == both["qa"]["runs"]["std"]
    assert by["both"]["revision"]["code"]["final_change"] == both["revision"]["code"]["final_change"]
    cols = [r["run"] for r in b["runs"]]
    src = {"qa": qa, "code": code, "both": both}
    fam = b["heatmap"]["primary"]["by_family"]
    assert set(fam) == {"F2", "F4", "F5", "F16"}
    for name, cells in fam.items():
        for run, cell in zip(cols, cells):
            s = src[run]
            groups = s["by_family"] if run != "qa" else s["qa"]["by_family"]
            assert (cell or {}).get("value") == (groups.get(name) or {}).get("pass@1"), (name, run)
    qmap = b["heatmap"]["qa"]["by_family"]
    assert all(cells[cols.index("code")] is None for cells in qmap.values())
    assert qmap["F4"][cols.index("both")]["value"] == both["qa"]["by_family"]["F4"]["pass@1"]
    assert b["heatmap"]["primary"]["by_tier"]["guided"][cols.index("code")]["value"] == \
        code["by_tier"]["guided"]["pass@1"]
    # same pack contents: no warning; different problems: a note
    assert b["warnings"] == [] and any("different problems" in n for n in b["notes"])


@pytest.mark.docker
@pytest.mark.slow
def test_leaderboard_page_shows_the_board(board):
    from grader.results.render import points
    from grader.results.leaderboard import render_leaderboard_html

    summaries, b = board
    page = render_leaderboard_html(b)
    assert {"leaderboard", "heatmap", "heatmap-qa", "provenance"} <= section_ids(page)
    table = section(page, "leaderboard")
    assert re.findall(r'<tr data-run="([^"]+)"', table) == [r["run"] for r in b["runs"]]
    for r in b["runs"]:
        tr = row(table, f'data-run="{r["run"]}"')
        if r["code"]:
            assert f'>{pct(r["code"]["pass@1"])}</span>' in tr and ci_text_of(r["code"]["ci95"]) in tr
        if r["qa"]:
            assert f'>{pct(r["qa"]["accuracy"])}</span>' in tr and ci_text_of(r["qa"]["ci95"]) in tr
        if r["gap"]:
            assert f'>{points(r["gap"]["gap"])}</span>' in tr
        assert tr.count('<td class="num" data-v="">-</td>') == (r["code"] is None) + (r["qa"] is None) + \
            (r["gap"] is None)
    heat = section(page, "heatmap")
    for name, cells in b["heatmap"]["primary"]["by_family"].items():
        tr = row(heat, f'data-group="{name}"')
        shown = re.findall(r"<td ([^>]*)>([^<]*)</td>", tr)
        assert [txt for _, txt in shown] == [pct(c["value"]) if c else "-" for c in cells], name
    assert 'title="a Q&amp;A-only run' in heat  # the Q&A-only column is marked
    assert "Warning:" not in page and "Note:" in page


@pytest.mark.docker
@pytest.mark.slow
def test_leaderboard_warns_when_pack_contents_differ(demo_runs, tmp_path, capsys):
    from grader.cli import main

    copy = tmp_path / "qa-other-pack"
    shutil.copytree(demo_runs["qa"], copy)
    manifest = json.loads((copy / "manifest.json").read_text())
    manifest["run_id"] = "qa-other-pack"
    manifest["pack"]["perf-core"]["hash"] = "f" * 64
    (copy / "manifest.json").write_text(json.dumps(manifest))
    out = tmp_path / "board.html"
    assert main(["report", str(demo_runs["qa"]), str(copy), "--html", str(out)]) == 0
    err = capsys.readouterr().err
    assert "different contents of pack perf-core" in err and "ffffffffffff" in err
    page = out.read_text()
    assert 'role="alert"><strong>Warning:</strong> the runs used different contents of pack perf-core' in page


@pytest.mark.docker
@pytest.mark.slow
def test_report_cli_with_several_runs(demo_runs, board, tmp_path, capsys):
    from grader.cli import main

    _, b = board
    paths = [str(demo_runs[n]) for n in ("qa", "code", "both")]
    assert main(["report", *paths]) == 0
    out = capsys.readouterr().out
    assert "leaderboard" in out and "code pass@1" in out and "Q&A acc." in out
    lines = [ln for ln in out.splitlines() if re.match(r"\s*[123]\s", ln)]
    assert len(lines) == 3 and "qa" in lines[2]
    assert main(["report", *paths, "--json", "-"]) == 0
    assert json.loads(capsys.readouterr().out) == json.loads(json.dumps(b))
    assert main(["report", *paths, "--json", str(tmp_path / "b.json"), "--html", str(tmp_path / "b.html")]) == 0
    capsys.readouterr()
    assert json.loads((tmp_path / "b.json").read_text()) == json.loads(json.dumps(b))
    assert "Leaderboard: 3 runs" in (tmp_path / "b.html").read_text()
    # one run: the summary, as before
    assert main(["report", paths[0], "--json", "-"]) == 0
    single = json.loads(capsys.readouterr().out)
    assert single == json.loads(json.dumps(run_summary(load_run(demo_runs["qa"]))))


# ------------------------------------------------------------------------------------------
# the new pages in headless Chromium: clean, sortable, filterable, offline
# ------------------------------------------------------------------------------------------

BROWSER_HOSTS = ("google.com", "googleapis.com", "gstatic.com", "googleusercontent.com")


def page_requests(page: Path, tmp_path: Path) -> set[str]:
    """Every network request Chromium made while loading the page, from its net log, less the
    browser's own background calls (update and account services)."""
    log = tmp_path / f"{page.stem}-netlog.json"
    chromium(page.resolve().as_uri(), f"--log-net-log={log}", "--dump-dom")
    urls = set(re.findall(r'"url":"([^"]+)"', log.read_text(errors="replace")))
    own = {u for u in urls if re.match(r"^[a-z]+://([^/]*\.)?(" + "|".join(map(re.escape, BROWSER_HOSTS)) + r")[:/]", u)}
    return urls - own


@pytest.mark.docker
@pytest.mark.browser
@pytest.mark.slow
def test_new_pages_render_cleanly_offline_in_chromium(demo_pages, board, tmp_path):
    from grader.results.leaderboard import render_leaderboard_html

    # the check itself works: a page that loads things is caught
    leaky = write(tmp_path, '<img src="http://198.51.100.7/x.png"><script>fetch("https://198.51.100.8/")</script>',
                  "leaky.html")
    assert {"http://198.51.100.7/x.png", "https://198.51.100.8/"} <= page_requests(leaky, tmp_path)

    pages = {name: write(tmp_path, demo_pages[name][2], f"{name}.html") for name in demo_pages}
    pages["board"] = write(tmp_path, render_leaderboard_html(board[1]), "board.html")
    for name, page in pages.items():
        dom = dump_dom(page)
        assert_rendered_cleanly(dom)
        assert page_requests(page, tmp_path) == set(), name

    # Q&A only: #sort sorts the Q&A problem table
    s = demo_pages["qa"][0]
    dom = dump_dom(pages["qa"], "#sort=-accuracy")
    assert_rendered_cleanly(dom)
    qa_table = dom[dom.index('id="qa-problems"'):]
    qa_table = qa_table[: qa_table.index("</table>")]
    order = re.findall(r'<tr data-problem="([^"]+)"', qa_table)
    acc = {p["problem"]: p["accuracy"] for p in s["qa"]["problems"]}
    assert [acc[p] for p in order] == sorted(acc.values(), reverse=True)

    # both modes: the mode filter keeps one mode's samples, with the verdict filter
    samples = demo_pages["both"][1]
    dom = dump_dom(pages["both"], "#mode=qa")
    assert_rendered_cleanly(dom)
    shown = [m for m, hidden in re.findall(r'<details class="sample"[^>]*data-mode="([a-z]+)"[^>]*?( hidden="")?>', dom)
             if not hidden]
    assert shown == ["qa"] * sum(sm["mode"] == "qa" for sm in samples)
    dom = dump_dom(pages["both"], "#mode=code&filter=wrong_answer")
    shown = [m for m, hidden in re.findall(r'<details class="sample"[^>]*data-mode="([a-z]+)"[^>]*?( hidden="")?>', dom)
             if not hidden]
    assert shown == ["code"] * sum(sm["mode"] == "code" and sm["verdict"] == "wrong_answer" for sm in samples)

    # the leaderboard sorts
    dom = dump_dom(pages["board"], "#sort=-qa")
    assert_rendered_cleanly(dom)
    by = {r["run"]: (r["qa"] or {}).get("accuracy") for r in board[1]["runs"]}
    order = re.findall(r'<tr data-run="([^"]+)"', dom)
    have = [by[r] for r in order if by[r] is not None]
    assert have == sorted(have, reverse=True) and by[order[-1]] is None

    # screenshots (kept in the test's temporary directory)
    for name, height in (("both", 9000), ("qa", 5000), ("board", 2000)):
        shot = tmp_path / f"{name}.png"
        chromium(pages[name].resolve().as_uri(), f"--screenshot={shot}", f"--window-size=1280,{height}",
                 "--hide-scrollbars")
        data = shot.read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 20_000, name


# ------------------------------------------------------------------------------------------
# autoescaping: every string a run or a model controls lands escaped wherever the pages show it
# ------------------------------------------------------------------------------------------

def hostile(tag: str) -> str:
    """A string that would end the data block, start a script, add an event handler and an image,
    and unescape an entity, were it written into the page as markup; ``tag`` tells where it came from."""
    return (f'</script><script>document.body.dataset.pwned="{tag}"</script>"onmouseover="document.body.dataset.'
            f"pwned=1\" '<img src=x onerror=document.body.dataset.pwned=2><u>&amp; #{tag}")


HOSTILE_PACK = 'pk<u>"&amp;\''  # no "/": a problem id is "<pack>/<id>"
HOSTILE_RUN = 'run-<u>"x"&amp;'  # a directory name: no "/"


def make_hostile_run(parent: Path) -> Path:
    """A finished run in both modes with two revision rounds, every string a run or a model
    controls hostile, written through the real RunDir (so it goes through the real summary)."""
    h = hostile
    pid = f"{HOSTILE_PACK}/{h('problem')}"
    manifest = RunManifest(
        run_id=HOSTILE_RUN, created=h("created"), source="demo", model=h("model"), base_url=h("endpoint"),
        generation={"model": "m", "system_prompt": h("generation")}, samples=1, k_values=[1],
        pack={HOSTILE_PACK: {"version": h("version"), "hash": h("hash"), "tier": h("pack-tier")}},
        problems=[ProblemEntry(id=pid, family=h("family"), difficulty=h("difficulty"), title=h("title"),
                               tier=h("tier"), content_hash="0" * 64, vectors_digest="1" * 64, n_hidden=1,
                               qa_items=[h("item")])],
        image={"id": h("image-id"), "tag": h("image-tag")}, exec_mode=h("exec-mode"), git_commit=h("commit"),
        notes=[h("notice")], modes=["code", "qa"], rounds=2, feedback="examples",
    )
    code_0 = Grade(verdict="wrong_answer", reason=h("reason"), vectors_total=1, vectors_answered=1,
                   failures=[VectorFailure(vector=h("vector"), kind="wrong_answer", inputs=h("inputs"), diffs=[
                       FieldDiff(path=h("path"), kind="value", expected=h("expected"), got=h("got"), note=h("note"))])],
                   output_tail=h("output"))
    code_1 = Grade(verdict="timeout", reason=h("reason-1"), vectors_total=1, stop_reason=h("stop-reason"),
                   stop_detail=h("stop-detail"), failures=[VectorFailure(
                       vector="v0", kind="runtime_error", error_type=h("error-type"), error_message=h("error-message"),
                       traceback=h("traceback"))])
    qa_0 = Grade(verdict="wrong_answer", reason=h("qa-reason"), vectors_total=1, vectors_answered=1,
                 fields={h("field"): FieldSummary(failed=1, answered=1)},
                 failures=[VectorFailure(vector=h("qa-item"), kind="wrong_answer", diffs=[
                     FieldDiff(path=h("qa-path"), kind="type", expected=1, got=h("qa-got"))])])
    qa_1 = Grade(verdict="no_answer", reason=h("qa-reason-1"), vectors_total=1)
    common = {"problem": pid, "sample": 0, "ts": "2025-01-01T00:00:01+00:00"}
    records = [
        {"type": "completion", "mode": "code", "round": 0, "text": h("reply-code"), "code": h("code") + "\nx = 1\n",
         "extraction": {"method": "fenced", "reason": h("extraction")}, "meta": {}},
        {"type": "grade", "mode": "code", "round": 0, "regrade": 0, "grade": code_0.model_dump(mode="json")},
        {"type": "feedback", "mode": "code", "round": 0, "feedback": "examples", "message": h("feedback-code")},
        {"type": "completion", "mode": "code", "round": 1, "text": "", "code": None,
         "extraction": {"method": "none", "reason": h("extraction-1")}, "meta": {}},
        {"type": "grade", "mode": "code", "round": 1, "regrade": 0, "grade": code_1.model_dump(mode="json")},
        {"type": "completion", "mode": "qa", "item": h("item"), "round": 0, "text": h("reply-qa"),
         "answer": {h("answer-key"): h("answer-value")}, "extraction": {"reason": ""}, "meta": {}},
        {"type": "grade", "mode": "qa", "item": h("item"), "round": 0, "regrade": 0,
         "grade": qa_0.model_dump(mode="json")},
        {"type": "feedback", "mode": "qa", "item": h("item"), "round": 0, "feedback": "examples",
         "message": h("feedback-qa")},
        {"type": "completion", "mode": "qa", "item": h("item"), "round": 1, "text": h("reply-qa-1"), "answer": None,
         "extraction": {"reason": h("qa-extraction")}, "meta": {}},
        {"type": "grade", "mode": "qa", "item": h("item"), "round": 1, "regrade": 0,
         "grade": qa_1.model_dump(mode="json")},
    ]
    run = RunDir.create(parent, manifest)
    run.lock()
    try:
        for rec in records:
            run.journal.append({**common, **rec})
    finally:
        run.unlock()
    return run.path


class _Shown(_Tags):
    """Also collects every text node and attribute value, as a reader (or a script) sees them."""

    def __init__(self) -> None:
        super().__init__()
        self.shown: list[str] = []

    def handle_starttag(self, tag, attrs):
        super().handle_starttag(tag, attrs)
        self.shown += [v for _, v in attrs if v]

    def handle_data(self, data):
        super().handle_data(data)
        if not self._in:
            self.shown.append(data)


def assert_escaped(page: str, expected: list[str], data: object) -> None:
    """No hostile string arrives as markup, each expected one is shown intact (as text or an
    attribute value), and the data block is inert and equals ``data``."""
    head, rest = page.split('<script type="application/json" id="report-data">')
    markup = head + rest[rest.index("</script>"):]  # the data block is JSON: a quote there is \"
    for raw in ("<script>document", '"onmouseover', "<img", "<u>", "&amp; #"):
        assert raw not in markup, raw
    p = _Shown()
    p.feed(page)
    p.close()
    tags = [t for t, _ in p.tags]
    assert [a.get("type") for t, a in p.tags if t == "script"] == [None, "application/json", None]
    assert "img" not in tags and "u" not in tags
    assert not [(t, n) for t, a in p.tags for n in a if n.startswith("on")]
    missing = [s for s in expected if not any(s in text for text in p.shown)]
    assert not missing, missing
    assert "</script" not in p.data["report-data"].lower()
    assert json.loads(p.data["report-data"]) == json.loads(json.dumps(data))


@pytest.fixture(scope="module")
def hostile_pages(tmp_path_factory):
    """(summary, run page, leaderboard page) of the hostile run (the leaderboard beside a copy of
    it with other pack contents, so that it warns, naming the pack)."""
    from grader.results.leaderboard import build_leaderboard, render_leaderboard_html

    path = make_hostile_run(tmp_path_factory.mktemp("hostile"))
    s = run_summary(load_run(path))
    other = json.loads(json.dumps(s))
    other["run"]["pack"][HOSTILE_PACK]["hash"] = hostile("other-hash")
    board = build_leaderboard([s, other])
    return s, render_html(s, failing_samples(path)), render_leaderboard_html(board), board


RUN_PAGE_SHOWS = [
    "model", "created", "notice", "endpoint", "version", "hash", "pack-tier", "image-tag", "exec-mode",
    "commit", "problem", "family", "difficulty", "title", "tier", "item", "reason", "vector", "inputs", "path",
    "note", "output", "reason-1", "stop-reason", "stop-detail", "error-type", "error-message", "traceback",
    "feedback-code", "code", "extraction-1", "qa-reason", "field", "qa-item", "qa-path", "reply-qa",
    "feedback-qa", "reply-qa-1", "qa-reason-1", "qa-extraction",
]
SHOWN_AS_JSON = ["expected", "got", "qa-got", "answer-key", "answer-value"]


def test_hostile_strings_are_escaped_wherever_the_run_page_shows_them(hostile_pages):
    s, page, _, _ = hostile_pages
    assert set(s["modes"]) == {"code", "qa"} and s["gap"] and s["revision"]
    assert_escaped(page, [HOSTILE_PACK, HOSTILE_RUN, hostile("generation")[:79] + "\u2026"]  # clipped to 80
                   + [hostile(t) for t in RUN_PAGE_SHOWS]
                   + [json.dumps(hostile(t), ensure_ascii=False) for t in SHOWN_AS_JSON], s)


def test_hostile_strings_are_escaped_wherever_the_leaderboard_shows_them(hostile_pages):
    _, _, page, board = hostile_pages
    assert any(HOSTILE_PACK in w for w in board["warnings"])
    assert_escaped(page, [HOSTILE_PACK, HOSTILE_RUN, hostile("other-hash")[:12]]
                   + [hostile(t) for t in ("model", "notice", "family", "tier", "created")], board)


@pytest.mark.browser
def test_hostile_pages_run_no_hostile_script_in_chromium(hostile_pages, tmp_path):
    _, page, board_page, _ = hostile_pages
    for name, html in (("run", page), ("board", board_page)):
        dom = dump_dom(write(tmp_path, html, f"{name}.html"))
        assert_rendered_cleanly(dom)
        assert 'document.body.dataset.pwned="model"' in dom  # shown as text


def test_a_missing_datum_fails_the_page_instead_of_vanishing(crafted):
    """The templates are strict: a variable the data does not carry is an error, not an empty string."""
    import jinja2

    from grader.results.html_report import report_view
    from grader.results.pages import render_page

    _, summary, samples, page = crafted
    view = report_view(summary, samples)
    assert render_page("report.html", **view) == page
    del view["code"]["headline"]["pass1"]
    with pytest.raises(jinja2.UndefinedError, match="pass1"):
        render_page("report.html", **view)


def test_the_package_data_carries_every_template():
    """An installed perfgrade finds its templates: each file in grader/results/templates matches a
    package-data pattern of pyproject.toml."""
    import fnmatch
    import tomllib

    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    patterns = declared["grader.results"]
    package = ROOT / "grader" / "results"
    files = [f.relative_to(package).as_posix() for f in (package / "templates").rglob("*") if f.is_file()]
    assert {"templates/base.html", "templates/report.html", "templates/leaderboard.html"} <= set(files)
    assert [f for f in files if not any(fnmatch.fnmatch(f, p) for p in patterns)] == []
