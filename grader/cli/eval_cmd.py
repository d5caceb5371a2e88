"""``python -m grader eval``: generate, grade, report.

Exit status: 0 the run is complete; 1 a grader error (a broken pack, a damaged run directory);
2 a usage error (a bad option or file, the sandbox not ready); 3 the model service failed (it
cannot be reached, refused the request or key, or every request failed); 4 the run is
incomplete (some completion requests failed: resume it); 130 interrupted (resume it).
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
import time
from pathlib import Path

from .common import dump_json, pack_roots
from ..console import console
from ..errors import ConfigError, ModelServiceError, RunDirError

EPILOG = """\
completion sources (first match wins):
  --completions FILE.jsonl   grade completions produced elsewhere ({"problem", "sample", "text"} lines)
  --base-url / --model       any OpenAI-compatible chat-completions endpoint (vLLM, Ollama, hosted)
  (neither)                  the offline demo model: the pack's bundled solutions and variants

examples:
  python -m grader eval --samples 10
  python -m grader eval --model gpt-4o-mini --base-url https://api.openai.com/v1 --samples 10 --k 1,5,10
  python -m grader eval --model qwen2.5-coder --base-url http://localhost:8000/v1 --api-key-env NONE
  python -m grader eval --completions samples.jsonl --pack perf-core
  python -m grader eval --resume runs/20260101-120000-gpt-4o-mini-1a2b
  python -m grader eval --family F4 --difficulty hard --samples 5 --regrade 2 --batch 8
  python -m grader eval --mode both --pack perf-model --samples 5 --qa-items 5
  python -m grader eval --rounds 3 --feedback examples --samples 5
  python -m grader eval --instance-seed $RANDOM --samples 5      # fresh hidden vectors and Q&A items

exit status:
  0    the run is complete
  1    grader error (a broken pack, a damaged run directory)
  2    usage error (a bad option or input file, the sandbox not ready)
  3    the model service failed: unreachable, refused the request or the key, or every request failed
  4    the run is incomplete: some completion requests failed (resume it to finish)
  130  interrupted (resume it to finish)
"""

EXIT_MODEL_SERVICE = 3
EXIT_INCOMPLETE = 4


def register(sub: argparse._SubParsersAction, formatter: type, add_pack) -> None:
    p = sub.add_parser(
        "eval", help="generate with a model, grade in the sandbox, report pass rates", formatter_class=formatter,
        description="Generate N samples per problem, grade each in a fresh sandbox container as it arrives, "
        "and report pass@1 with its confidence interval, the run-to-run spread and pass@k. Every completion "
        "and verdict goes to an fsynced journal in the run directory; an interrupted run continues with "
        "--resume.",
        epilog=EPILOG,
    )
    sel = p.add_argument_group("problems")
    sel.add_argument("--pack", help="only this pack (default: every loaded pack)")
    sel.add_argument("--problem", action="append", metavar="ID", help="only these problems (repeatable)")
    sel.add_argument("--family", action="append", help="only these families, e.g. F4 (repeatable)")
    sel.add_argument("--difficulty", action="append", choices=["easy", "medium", "hard"])
    sel.add_argument("--instance-seed", metavar="S", default=None,
                     help="draw fresh hidden vectors (small and real-size) and Q&A items from seed S, a "
                     "non-negative integer, with the same generators and references: a private seed rules out "
                     "a model trained on the published instances. The prompt's visible examples stay the "
                     "release's. Default: release (the instances every published figure is about)")
    add_pack(sel)

    gen = p.add_argument_group("model")
    gen.add_argument("--model", help="model name (default: the offline demo model when no endpoint is set)")
    gen.add_argument("--base-url", help="OpenAI-compatible base URL (default: $PERFGRADE_BASE_URL or $OPENAI_BASE_URL)")
    gen.add_argument("--api-key-env", default="OPENAI_API_KEY", metavar="VAR",
                     help="environment variable holding the API key (default OPENAI_API_KEY; NONE for no key)")
    gen.add_argument("--api-key-file", metavar="PATH", help="read the API key from this file instead")
    gen.add_argument("--temperature", type=float, default=0.8)
    gen.add_argument("--top-p", type=float, default=1.0)
    gen.add_argument("--max-tokens", type=int, default=4096)
    gen.add_argument("--seed", type=int, default=0, help="base seed; sample i asks for seed+i (where accepted)")
    gen.add_argument("--system-prompt", metavar="FILE", help="a system message to send first")
    gen.add_argument("--concurrency", type=int, default=4, help="requests in flight (default 4)")
    gen.add_argument("--request-timeout", type=float, default=300.0, help="seconds per request (default 300)")
    gen.add_argument("--max-attempts", type=int, default=6, help="attempts per request on transient errors")
    gen.add_argument("--price-in", type=float, help="USD per million prompt tokens (for cost)")
    gen.add_argument("--price-out", type=float, help="USD per million completion tokens (for cost)")
    gen.add_argument("--no-cache", action="store_true", help="ignore the completion cache")
    gen.add_argument("--completions", metavar="FILE", help="grade completions from a JSON Lines file")

    modes = p.add_argument_group("modes and rounds")
    modes.add_argument("--mode", choices=["code", "qa", "both"], default=None,
                       help="code: the model writes the function (default); qa: it answers concrete instances "
                       "directly (no code runs); both: each on the same problems, and the gap between them")
    modes.add_argument("--qa-items", type=int, default=5, metavar="N",
                       help="Q&A: value items per problem, and items per choice question (default 5)")
    modes.add_argument("--rounds", type=int, default=1, metavar="R",
                       help="self-revision: up to R rounds per sample; after each graded round a sample that did "
                       "not pass goes back to the model with feedback (default 1: no revision)")
    modes.add_argument("--feedback", choices=["none", "examples"], default="none",
                       help="between rounds: none (a fixed request to review and improve) or examples (the result "
                       "of running the code on the prompt's visible examples only; in Q&A, the examples restated)")
    modes.add_argument("--revise-all", action="store_true", help="revise passing samples too")

    run = p.add_argument_group("run")
    run.add_argument("--samples", type=int, default=None, help="samples per problem (default 10)")
    run.add_argument("--k", default="1,5,10", help="pass@k values, comma separated (default 1,5,10)")
    run.add_argument("--regrade", type=int, default=0, metavar="K",
                     help="grade every sample K more times and report the share whose verdict changed")
    run.add_argument("--workers", type=int, default=None,
                     help="grading containers in parallel (default: twice the CPU count, at most 8; "
                     "lowered so their memory limits fit in half the host)")
    run.add_argument("--batch", type=int, default=1, metavar="N",
                     help="batch mode: grade up to N samples of one problem per container, each in its own "
                     "fresh process with leftovers killed and scratch wiped between samples (faster; samples "
                     "share a container's kernel namespaces one after another, see docs/performance.md). "
                     "Default 1: one fresh container per sample")
    run.add_argument("--engine", choices=["local", "ray"], default="local",
                     help="where gradings run: local (this machine's Docker engine, default) or ray (as Ray tasks "
                     "on the nodes of a cluster, each node with its own Docker engine; needs pip install -e "
                     "\".[ray]\"); generation, the journal and the statistics stay here")
    run.add_argument("--runtime", choices=["runc", "runsc"], default=None,
                     help="OCI runtime of the sandbox containers: runc (the engine's default) or runsc "
                     "(gVisor: a user-space kernel between the candidate and the host; bin/setup --runsc "
                     "registers it; slower, see docs/performance.md). Default: $PERFGRADE_DOCKER_RUNTIME, "
                     "else the engine's default")
    run.add_argument("--ray-address", metavar="ADDR",
                     help="with --engine ray: the cluster to join (host:port, auto; default $RAY_ADDRESS, else a "
                     "one-node cluster on this machine)")
    run.add_argument("--runs-dir", default=None, help="parent of new run directories (default ./runs)")
    run.add_argument("--name", help="run directory name (default: time, model and a random suffix)")
    run.add_argument("--resume", metavar="RUN", help="continue an interrupted run")
    run.add_argument("--json", metavar="FILE", nargs="?", const="-",
                     help="also write the summary as JSON (to FILE, or stdout with no FILE)")
    run.add_argument("--quiet", action="store_true", help="no progress display")
    p.set_defaults(handler=cmd_eval)


def _parse_ks(text: str) -> list[int]:
    try:
        ks = sorted({int(x) for x in text.split(",") if x.strip()})
    except ValueError:
        raise ConfigError(f"--k {text!r}: expected comma-separated integers") from None
    if not ks or ks[0] < 1:
        raise ConfigError("--k values must be >= 1")
    return ks


def _api_key(args: argparse.Namespace) -> str | None:
    if args.api_key_file:
        try:
            return Path(args.api_key_file).read_text().strip()
        except OSError as exc:
            raise ConfigError(f"--api-key-file {args.api_key_file}: {exc.strerror}") from None
    if args.api_key_env and args.api_key_env.upper() != "NONE":
        return os.environ.get(args.api_key_env)
    return None


class _LiveProgress:
    """Two live bars: generation and grading (counts, rate, ETA)."""

    def __init__(self, quiet: bool) -> None:
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

        self.quiet = quiet
        self.verdicts: dict[str, int] = {}
        self._lock = threading.Lock()
        self.p = Progress(
            TextColumn("{task.description:<10}"), BarColumn(), MofNCompleteColumn(),
            TextColumn("{task.fields[rate]}"), TimeElapsedColumn(), TextColumn("eta"), TimeRemainingColumn(),
            TextColumn("{task.fields[extra]}"), console=console(stderr=True), transient=False,
            disable=quiet,
        )
        self.t0 = time.monotonic()

    def __enter__(self):
        self.p.__enter__()
        return self

    def __exit__(self, *exc):
        return self.p.__exit__(*exc)

    def start(self, gen_total: int, grade_total: int) -> None:
        self.gen = self.p.add_task("generate", total=gen_total, rate="", extra="")
        self.grd = self.p.add_task("grade", total=grade_total, rate="", extra="")

    def _rate(self, task) -> str:
        t = self.p.tasks[task]
        el = max(1e-6, time.monotonic() - self.t0)
        return f"{t.completed / el:.1f}/s"

    def generated(self, problem: str, sample: int, cached: bool) -> None:
        self.p.advance(self.gen)
        self.p.update(self.gen, rate=self._rate(self.gen))

    def graded(self, problem: str, sample: int, verdict: str) -> None:
        with self._lock:
            self.verdicts[verdict] = self.verdicts.get(verdict, 0) + 1
            passed = self.verdicts.get("pass", 0) + self.verdicts.get("correct", 0)
            total = sum(self.verdicts.values())
        self.p.advance(self.grd)
        self.p.update(self.grd, rate=self._rate(self.grd), extra=f"pass {passed}/{total}")

    def more(self, gen: int, grade: int) -> None:
        """A revision round was scheduled: the totals grow."""
        with self._lock:
            self.p.update(self.gen, total=(self.p.tasks[self.gen].total or 0) + gen)
            self.p.update(self.grd, total=(self.p.tasks[self.grd].total or 0) + grade)

    def note(self, text: str) -> None:
        if not self.quiet:
            self.p.console.print(f"[yellow]{text}[/yellow]")


def _positive(args: argparse.Namespace) -> None:
    """Counts must be positive: 0 is never silently replaced by a default."""
    for name in ("samples", "workers", "concurrency", "batch", "rounds", "qa_items", "max_attempts"):
        value = getattr(args, name, None)
        if value is not None and value < 1:
            raise ConfigError(f"--{name.replace('_', '-')} must be >= 1 (got {value})")
    if args.regrade < 0:
        raise ConfigError(f"--regrade must be >= 0 (got {args.regrade})")


def _select(args: argparse.Namespace, catalog):
    problems = catalog.select(args.pack, args.problem)
    if args.family:
        problems = [p for p in problems if p.family in set(args.family)]
    if args.difficulty:
        problems = [p for p in problems if p.difficulty in set(args.difficulty)]
    if not problems:
        raise ConfigError("no problem matches the selection")
    return problems


def cmd_eval(args: argparse.Namespace) -> int:
    import json

    from sandbox import Limits

    from ..grading.execution import safe_workers
    from ..packs import vectors
    from ..packs.prompt import render_prompt
    from ..packs.vectors import parse_instance_seed, seed_words
    from ..packs.problems import Catalog
    from ..packs.qa import qa_items, render_qa_prompt
    from ..pipeline.completions_file import file_digest, load_completions
    from ..pipeline.demo import DEMO_MODEL, DEMO_NOTICE
    from ..pipeline.evaluate import EvalPlan, Evaluator
    from ..pipeline.llm import GenParams, ModelClient
    from ..results.render import render_summary
    from ..results.runs import ProblemEntry, RunDir, RunManifest, git_commit, host_facts, new_run_id, now_iso
    from ..results.summary import load_run, run_summary
    from ..settings import runs_dir

    _positive(args)
    catalog = Catalog(pack_roots(args))
    workers = args.workers or min(8, 2 * (os.cpu_count() or 1))
    file_completions = None
    json_stdout = args.json == "-"
    con = console(stderr=True)

    if args.resume:
        run = RunDir.open(Path(args.resume))
        m = run.manifest
        saved = (m.engine or {}).get("runtime")
        if args.runtime and saved and args.runtime != saved:
            raise RunDirError(f"run {m.run_id} grades under runtime {saved}, not {args.runtime}: verdicts would "
                              "mix runtimes (resume without --runtime, or start a new run)")
        if saved and saved != "default":
            args.runtime = saved
        instance_seed = m.instance_seed
        if args.instance_seed is not None and parse_instance_seed(args.instance_seed) != instance_seed:
            raise RunDirError(
                f"run {m.run_id} is graded on {seed_words(instance_seed)}, not on "
                f"{seed_words(parse_instance_seed(args.instance_seed))}: results would mix instance seeds "
                "(resume without --instance-seed, or start a new run)")
        problems = [catalog.find(e.id) for e in m.problems]
        for e, p in zip(m.problems, problems):
            if p.content_hash != e.content_hash:
                raise RunDirError(
                    f"{e.id} changed since run {m.run_id} started (content hash {e.content_hash[:12]} -> "
                    f"{p.content_hash[:12]}); results would mix problem versions: start a new run")
        samples, ks, regrade, source, model = m.samples, m.k_values, m.regrade, m.source, m.model
        modes, rounds, feedback, revise_all = tuple(m.modes), m.rounds, m.feedback, m.revise_all
        n_items = max((len([i for i in e.qa_items if i.startswith("q")]) for e in m.problems), default=0) or 5
        gen = m.generation
        params = GenParams(model=m.model, temperature=gen.get("temperature", 0.8), top_p=gen.get("top_p", 1.0),
                           max_tokens=gen.get("max_tokens", 4096), seed=gen.get("seed"),
                           system_prompt=gen.get("system_prompt"))
        base_url = m.base_url
        if source == "completions":
            path = Path(m.completions_file or "")
            if not path.is_file() or file_digest(path) != gen.get("completions_sha256"):
                raise RunDirError(f"the completions file {path} is missing or changed since the run started")
            file_completions = load_completions(path, catalog)
        limits = Limits.model_validate(m.limits) if m.limits else Limits()
        batch = int(m.exec_mode.split(":")[1]) if m.exec_mode.startswith("batch:") else 1
    else:
        problems = _select(args, catalog)
        instance_seed = parse_instance_seed(args.instance_seed)
        ks = _parse_ks(args.k)
        regrade = args.regrade
        mode = args.mode or "code"
        modes = ("code", "qa") if mode == "both" else (mode,)
        rounds, feedback, revise_all, n_items = args.rounds, args.feedback, args.revise_all, args.qa_items
        if "qa" in modes:
            # a search problem (docs/mapper.md) without [qa] joins a Q&A run with no items
            without = [p.qualified_id for p in problems if p.data.qa is None and p.data.scoring is None]
            if without:
                raise ConfigError(f"{len(without)} selected problem(s) have no [qa] table, so no Q&A items: "
                                  + ", ".join(without[:5]))
            if modes == ("qa",) and all(p.data.qa is None for p in problems):
                raise ConfigError("the selected problems are search problems without a [qa] table: no Q&A items")
        base_url = args.base_url or os.environ.get("PERFGRADE_BASE_URL") or os.environ.get("OPENAI_BASE_URL")
        system_prompt = None
        if args.system_prompt:
            try:
                system_prompt = Path(args.system_prompt).read_text()
            except OSError as exc:
                raise ConfigError(f"--system-prompt {args.system_prompt}: {exc.strerror}") from None
        if args.completions:
            source = "completions"
            file_completions = load_completions(Path(args.completions), catalog, args.pack)
            wanted = {p.qualified_id for p in problems}
            file_completions = {k: v for k, v in file_completions.items() if k[0] in wanted}
            if not file_completions:
                raise ConfigError(f"{args.completions} has no completion for the selected problems")
            problems = [p for p in problems if any(k[0] == p.qualified_id for k in file_completions)]
            in_file = {k[1] for k in file_completions}
            if args.mode is None:
                modes = tuple(m for m in ("code", "qa") if m in in_file)
            samples = args.samples or (max(k[3] for k in file_completions) + 1)
            model = args.model or "completions-file"
        elif base_url or (args.model and args.model != DEMO_MODEL):
            source = "model"
            base_url = base_url or "https://api.openai.com/v1"
            if not args.model:
                raise ConfigError("--model is required with a model endpoint")
            model = args.model
            samples = args.samples or 10
        else:
            source = "demo"
            model = DEMO_MODEL
            base_url = None
            samples = args.samples or 10
        params = GenParams(model=model, temperature=args.temperature, top_p=args.top_p,
                           max_tokens=args.max_tokens, seed=args.seed, system_prompt=system_prompt)
        limits = Limits()
        batch = args.batch

    needs_sandbox = "code" in modes
    biggest = max((p.sandbox_limits(limits).memory_mb for p in problems), default=limits.memory_mb)
    workers, note = safe_workers(workers, biggest)
    if note and needs_sandbox:
        con.print(f"[yellow]{note}[/yellow]")
    # hidden vectors: computed (or read from the cache keyed on content and seed) before anything runs
    vecs = {p.qualified_id: vectors.load(p, instance_seed=instance_seed) for p in problems}
    items = ({p.qualified_id: qa_items(p, vecs[p.qualified_id].hidden, n_items, instance_seed=instance_seed)
              for p in problems} if "qa" in modes else {})
    if args.resume:
        for e in run.manifest.problems:
            if vecs[e.id].digest != e.vectors_digest:
                raise RunDirError(f"the hidden vectors of {e.id} differ from the ones run {run.manifest.run_id} "
                                  "was graded on: results would mix instances; start a new run")
    prompts: dict[tuple[str, str, str], str] = {}
    for p in problems:
        pid = p.qualified_id
        if "code" in modes:
            prompts[(pid, "code", "")] = render_prompt(p, vecs[pid].visible)
        for it in items.get(pid, ()):
            prompts[(pid, "qa", it.id)] = render_qa_prompt(p, it, vecs[pid].visible)

    client = None
    if source == "model":
        client = ModelClient(base_url=base_url or "", api_key=_api_key(args), params=params,
                             timeout_s=args.request_timeout, max_attempts=args.max_attempts,
                             use_cache=not args.no_cache, price_in_per_mtok=args.price_in,
                             price_out_per_mtok=args.price_out)

    run_id = run.manifest.run_id if args.resume else (args.name or new_run_id(params.model))
    engine = _open_engine(args, run_id, workers, con, memory_mb=biggest) if needs_sandbox else None

    if not args.resume:
        packs = {}
        for p in problems:
            packs[p.pack.name] = {"version": p.pack.version, "hash": p.pack.content_hash, "tier": p.tier}
        generation = params.to_json()
        if source == "completions":
            generation["completions_sha256"] = file_digest(Path(args.completions))
        manifest = RunManifest(
            run_id=run_id, created=now_iso(), git_commit=git_commit(),
            command=sys.argv[:], source=source, model=model, base_url=base_url, generation=generation,
            completions_file=str(Path(args.completions).resolve()) if args.completions else None,
            samples=samples, k_values=ks, regrade=regrade, pack=packs,
            problems=[ProblemEntry(id=p.qualified_id, family=p.family, difficulty=p.difficulty, title=p.title,
                                   content_hash=p.content_hash, vectors_digest=vecs[p.qualified_id].digest,
                                   n_hidden=len(vecs[p.qualified_id].hidden), tier=p.tier,
                                   qa_items=[it.id for it in items.get(p.qualified_id, ())]) for p in problems],
            image={"id": engine.image_id, "tag": engine.image_tag} if engine else {},
            engine=engine.describe() if engine else {},
            limits=limits.model_dump(), host=host_facts(), notes=[DEMO_NOTICE] if source == "demo" else [],
            exec_mode="per-sample" if batch == 1 else f"batch:{batch}",
            modes=list(modes), rounds=rounds, feedback=feedback, revise_all=revise_all,
            instance_seed=instance_seed,
        )
        run = RunDir.create(Path(args.runs_dir) if args.runs_dir else runs_dir(), manifest)
    elif engine is not None and run.manifest.image.get("id") != engine.image_id:
        raise RunDirError(
            f"the sandbox image changed since run {run.manifest.run_id} started "
            f"({str(run.manifest.image.get('id'))[:19]} -> {engine.image_id[:19]}): start a new run")

    run.lock()
    if args.resume and engine is not None:  # the manifest names the first session's engine
        run.journal.append({"type": "event", "event": "engine", **engine.describe(), "ts": now_iso()})
    if source == "demo":
        con.print(f"[bold yellow]NOTE:[/bold yellow] {DEMO_NOTICE}")
    con.print(f"run directory: {run.path}")
    if instance_seed is not None:
        con.print(f"instance seed {instance_seed}: fresh hidden vectors"
                  + (" and Q&A items" if "qa" in modes else "") + ", not the release's")
    plan = EvalPlan(problems=problems, samples=samples, source=source, prompts=prompts, vectors=vecs,
                    modes=modes, qa_items=items, client=client, file_completions=file_completions,
                    concurrency=args.concurrency, workers=workers, regrade=regrade, base_limits=limits,
                    batch_size=batch, rounds=rounds, feedback=feedback, revise_all=revise_all)

    previous = signal.getsignal(signal.SIGTERM)
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    evaluator = None
    try:
        with _LiveProgress(args.quiet) as progress:
            evaluator = Evaluator(run, plan, engine, progress)
            evaluator.execute()
    except KeyboardInterrupt:
        if evaluator is not None:
            evaluator.interrupt()
        n = engine.sweep() if engine else 0
        run.journal.append({"type": "event", "event": "interrupted", "swept": n, "ts": now_iso()})
        print(f"interrupted; resume with: python -m grader eval --resume {run.path}", file=sys.stderr)
        return 130
    except ModelServiceError as exc:
        print(f"error: {exc}", file=sys.stderr)
        print(f"the run stopped; after fixing it, resume with: python -m grader eval --resume {run.path}",
              file=sys.stderr)
        return EXIT_MODEL_SERVICE
    finally:
        signal.signal(signal.SIGTERM, previous)
        if engine is not None:
            engine.sweep()
            engine.close()
        run.unlock()
        if client is not None:
            client.close()

    if source == "model" and evaluator.failed_requests and not evaluator.completed_requests:
        print(f"error: every request to the model service at {base_url} failed ({evaluator.failed_requests} "
              f"requests): {evaluator.last_failure}", file=sys.stderr)
        print(f"after fixing it, resume with: python -m grader eval --resume {run.path}", file=sys.stderr)
        return EXIT_MODEL_SERVICE
    summary = run_summary(load_run(run.path))
    render_summary(summary, con=console(stderr=True) if json_stdout else None)
    if args.json:
        if json_stdout:
            dump_json(summary)
        else:
            Path(args.json).write_text(json.dumps(summary, indent=2) + "\n")
    failed = summary["run"].get("generation_failures_open", 0)
    if failed:
        where = base_url or "the completion source"
        print(f"{failed} completion request(s) to {where} failed; the run is incomplete. Finish it with: "
              f"python -m grader eval --resume {run.path}", file=sys.stderr)
        return EXIT_INCOMPLETE
    return 0


def _open_engine(args: argparse.Namespace, run_id: str, workers: int, con, memory_mb: int | None = None):
    """The grading engine: the local Docker engine, after sweeping containers of dead graders, or a
    Ray cluster (whose nodes each verify their image and sweep their own orphans)."""
    from sandbox import Limits
    from sandbox.engine import connect, sweep

    from ..grading.execution import LocalEngine, open_sandbox

    if getattr(args, "engine", "local") == "ray":
        from ..grading.ray_engine import RayEngine

        if getattr(args, "runtime", None):
            from ..errors import ConfigError

            raise ConfigError("--runtime applies to the local engine; on Ray each node runs its engine's default "
                              "runtime (set the default runtime of the nodes' Docker engines instead)")

        engine = RayEngine(args.ray_address, run_id=run_id, memory_mb=memory_mb or Limits().memory_mb)
        for text in engine.notes:
            con.print(f"[yellow]{text}[/yellow]")
        con.print(f"grading on the Ray cluster at {engine.address}: {engine.slots} slot(s) on "
                  f"{sum(n['state'] == 'ready' for n in engine.nodes())} node(s)")
        return engine
    swept = sweep(connect(), orphans_only=True)
    if swept:
        con.print(f"removed {swept} container(s) left by a grader that is no longer running")
    return LocalEngine(open_sandbox(run_id, runtime=getattr(args, "runtime", None)), slots=workers)
