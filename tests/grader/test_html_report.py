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
    assert "&lt;/script&gt;&lt;script&gt;document.body.dataset.pwned=&quot;code&quot;" in page
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
    assert s["run"]["notice"].replace("'", "&#x27;") in out.read_text() and "NOTE:" in text
    assert f'id="headline-pass1">{pct(s["headline"]["pass@1"])}<' in text
    for rate in s["runs"]["runs"]:
        assert f'<span class="rate">{pct(rate)}</span>' in text
    order = problem_order(dom)
    p1 = {p["problem"].split("/", 1)[-1]: p["pass@1"] for p in s["problems"]}
    assert sorted(order) == sorted(p1)
    assert [p1[p] for p in order] == sorted(p1.values(), reverse=True)
