"""``python -m grader problems ...``: list, show, export, validate, coverage, new, schema."""

from __future__ import annotations

import argparse
import uuid
from pathlib import Path

from .common import dump_json, pack_roots
from ..console import console, ok_mark, table
from ..errors import ConfigError
from ..packs.problems import Catalog, write_schemas

def register(sub: argparse._SubParsersAction, formatter: type, add_pack) -> None:
    p = sub.add_parser("problems", help="list, show, validate and scaffold problem packs",
                       description="Work with problem packs.", formatter_class=formatter)
    ps = p.add_subparsers(dest="problems_command", metavar="SUBCOMMAND")
    ps.required = True

    q = ps.add_parser("list", help="packs and problems with family and difficulty", formatter_class=formatter,
                      description="List every problem of the loaded packs.",
                      epilog="examples:\n  python -m grader problems list\n  python -m grader problems list --json")
    q.add_argument("pack", nargs="?", help="only this pack")
    q.add_argument("--json", action="store_true", help="one JSON array of {id, pack, family, difficulty, title}")
    add_pack(q)
    q.set_defaults(handler=cmd_list)

    q = ps.add_parser("show", help="print the exact prompt a model sees", formatter_class=formatter,
                      description="Print the prompt of a problem exactly as a model receives it.",
                      epilog="example:\n  python -m grader problems show f1-conv-layer-accounting")
    q.add_argument("id", help="problem id (pack/id, or a unique bare id)")
    add_pack(q)
    q.add_argument("--qa", metavar="ITEM", nargs="?", const="list",
                   help="print the prompt of a Q&A item instead (e.g. q0, c0.1; with no ITEM, list the items)")
    q.add_argument("--qa-items", type=int, default=5, metavar="N", help="Q&A items per kind, as in eval (default 5)")
    q.add_argument("--instance-seed", metavar="S", default=None,
                   help="the Q&A items of instance seed S, as eval --instance-seed S asks them (default: release; "
                   "the code-mode prompt is the same for every seed)")
    q.set_defaults(handler=cmd_show)

    q = ps.add_parser("export", help="the prompts of a pack as a training dataset (JSON Lines)",
                      formatter_class=formatter,
                      description="Write one JSON line per problem: the prompt a model sees, as chat messages "
                      "(prompt) and as text (prompt_text), the problem id, pack, family, difficulty and a "
                      "train/test split from a seeded hash of the problem id. No hidden vector and no expected "
                      "output of one is written (the visible examples are in the prompt). The rows work as a "
                      "TRL GRPOTrainer dataset and, converted to Parquet, as a verl dataset; see docs/reward.md.",
                      epilog="examples:\n  python -m grader problems export perf-core --out perf-core.jsonl\n"
                      "  python -m grader problems export perf-core --out prompts.jsonl --split-seed 7 --test-share 0.3\n"
                      "  python -m grader problems export perf-core --out fresh.jsonl --mode both --instance-seed 7421")
    q.add_argument("pack", help="the pack to export")
    q.add_argument("--out", required=True, metavar="FILE.jsonl", help="where to write (- for stdout)")
    q.add_argument("--split-seed", type=int, default=0, metavar="S", help="seed of the train/test split (default 0)")
    q.add_argument("--test-share", type=float, default=0.2, metavar="F",
                   help="share of problems in the test split, 0 to 1 (default 0.2)")
    add_pack(q)
    q.add_argument("--mode", choices=["code", "qa", "both"], default="code",
                   help="code: one row per problem (default); qa: one row per Q&A item; both")
    q.add_argument("--qa-items", type=int, default=5, metavar="N", help="Q&A items per kind, as in eval (default 5)")
    q.add_argument("--instance-seed", metavar="S", default=None,
                   help="draw the Q&A items from instance seed S, as eval --instance-seed S does (default: release); "
                   "every row records it, and a Rewarder grades it with Rewarder(instance_seed=S)")
    q.set_defaults(handler=cmd_export)

    q = ps.add_parser("validate", help="prove a pack is sound (gold passes, variants fail, ...)",
                      formatter_class=formatter,
                      description="Check every problem: schema, registry, signature, determinism, spec "
                      "coverage, the gold check (the reference and solution.py pass every hidden vector "
                      "through the real sandbox) and the mutant check (every variant fails); for problems with "
                      "a [sampler], the domain sample, feature coverage and hidden-set adequacy (every variant "
                      "and partial model the domain sample shows wrong fails a hidden vector). Exit status 1 "
                      "when any check fails.",
                      epilog="examples:\n  python -m grader problems validate perf-core\n"
                      "  python -m grader problems validate perf-core --problem f1-conv-layer-accounting\n"
                      "  python -m grader problems validate --static   # no Docker needed")
    q.add_argument("pack", nargs="?", help="pack to validate (default: every loaded pack)")
    q.add_argument("--problem", action="append", metavar="ID", help="only these problems (repeatable)")
    q.add_argument("--static", action="store_true", help="skip the sandbox checks (gold and mutants); coverage "
                   "and adequacy run on the host and stay")
    q.add_argument("--runtime", choices=["runc", "runsc"], default=None,
                   help="run the sandbox checks under this OCI runtime (runsc: gVisor; default: the engine's)")
    q.add_argument("--workers", type=int, default=2, help="containers run in parallel (default 2)")
    q.add_argument("--quick", action="store_true",
                   help="quicker: the simulator tried on three real-size vectors only, and each variant and partial "
                   "model run only until its adequacy verdict is settled (the same verdict; its counts are then "
                   "lower bounds)")
    q.add_argument("--json", action="store_true", help="print the report as JSON")
    add_pack(q)
    q.set_defaults(handler=cmd_validate)

    q = ps.add_parser("coverage", help="print the feature coverage tables (Markdown, for the pack README)",
                      formatter_class=formatter,
                      description="For every problem with a [sampler]: how many hidden vectors exercise each "
                      "feature (its [[features]] and the automatic int >= 2^31 and 2^53) and how often the "
                      "domain sample does, as the Markdown table the pack README shows. No Docker needed.",
                      epilog="example:\n  python -m grader problems coverage perf-model --problem f4-gemm-dram-traffic")
    q.add_argument("pack", nargs="?", help="pack (default: every loaded pack)")
    q.add_argument("--problem", action="append", metavar="ID", help="only these problems (repeatable)")
    add_pack(q)
    q.set_defaults(handler=cmd_coverage)

    q = ps.add_parser("new", help="scaffold a new problem (and its pack if needed)", formatter_class=formatter,
                      description="Create ROOT/PACK/ID: a small working problem (its reference and generator "
                      "in the pack's _trusted/ folder, problem.toml with declared variants, spec.md, "
                      "solution.py) that validates and evaluates as it is, for you to rewrite.",
                      epilog="example:\n  python -m grader problems new my-pack/f4-dram-traffic --root problems")
    q.add_argument("target", metavar="PACK/ID")
    q.add_argument("--root", default=None, help="directory that holds packs (default: the built-in problems/)")
    q.set_defaults(handler=cmd_new)

    q = ps.add_parser("fingerprint", help="digests of everything a model sees and is scored against",
                      formatter_class=formatter,
                      description="Digest, per problem, the hidden vectors (inputs and expected outputs), the "
                      "visible examples, the prompt, the Q&A items and their prompts. Digests only: nothing "
                      "hidden is revealed. With --check, compare with a saved fingerprint and exit 1 naming "
                      "every problem and part that differs (prove a refactoring moved nothing a model sees).",
                      epilog="examples:\n  python -m grader problems fingerprint perf-core --out before.json\n"
                      "  python -m grader problems fingerprint perf-core --check before.json")
    q.add_argument("pack")
    q.add_argument("--out", metavar="FILE.json", help="write the fingerprint here (default: stdout)")
    q.add_argument("--check", metavar="FILE.json", help="compare with this saved fingerprint")
    add_pack(q)
    q.set_defaults(handler=cmd_fingerprint)

    q = ps.add_parser("schema", help="write the JSON schemas of pack.toml and problem.toml",
                      formatter_class=formatter)
    q.add_argument("--out", default=None, help="directory (default: the built-in problems/)")
    q.set_defaults(handler=cmd_schema)


def _catalog(args: argparse.Namespace) -> Catalog:
    return Catalog(pack_roots(args))


def cmd_list(args: argparse.Namespace) -> int:
    cat = _catalog(args)
    problems = cat.problems(args.pack)
    if args.json:
        dump_json([{"id": p.qualified_id, "pack": p.pack.name, "tier": p.tier, "family": p.family,
                    "difficulty": p.difficulty, "title": p.title} for p in problems])
        return 0
    con = console()
    for name, pack in sorted(cat.packs.items()):
        if args.pack and name != args.pack:
            continue
        t = table("id", "tier", "family", "difficulty", "title",
                  title=f"{name} {pack.version} ({pack.tier} tier): {len(pack.problems)} problems  "
                  f"(hash {pack.content_hash[:12]})")
        for p in pack.problems:
            t.add_row(p.id, p.tier, p.family, p.difficulty, p.title)
        con.print(t)
    return 0


def cmd_show(args: argparse.Namespace) -> int:
    from ..packs import vectors
    from ..packs.prompt import render_prompt

    problem = _catalog(args).find(args.id)
    instance_seed = vectors.parse_instance_seed(args.instance_seed)
    vs = vectors.load(problem)  # the visible examples: the release's for every instance seed
    import sys

    if args.qa is None:
        sys.stdout.write(render_prompt(problem, vs.visible))
        return 0
    from ..packs.qa import qa_items, render_qa_prompt

    if problem.data.qa is None:
        raise ConfigError(f"{problem.qualified_id} has no [qa] table: it has no Q&A items")
    if args.qa_items < 1:
        raise ConfigError("--qa-items must be >= 1")
    hidden = vs.hidden if instance_seed is None else vectors.load(problem, instance_seed=instance_seed).hidden
    items = {it.id: it for it in qa_items(problem, hidden, args.qa_items, instance_seed=instance_seed)}
    if args.qa == "list":
        for it in items.values():
            sys.stdout.write(f"{it.id}\t{it.kind}\t{it.question or ('one mapping, scored against the best known' if it.kind == 'mapping' else 'what the function returns')}\n")
        return 0
    if args.qa not in items:
        raise ConfigError(f"{problem.qualified_id} has no Q&A item {args.qa!r} (items: {', '.join(items)})")
    sys.stdout.write(render_qa_prompt(problem, items[args.qa], vs.visible))
    return 0


def cmd_validate(args: argparse.Namespace) -> int:
    from ..grading.validate import validate

    cat = _catalog(args)
    problems = cat.select(args.pack, args.problem)
    handle = None
    if not args.static:
        from ..grading.execution import open_sandbox

        handle = open_sandbox(run_id=f"validate-{uuid.uuid4().hex[:8]}", runtime=args.runtime)  # sweeps only its own
    con = console()

    def progress(r) -> None:
        if args.json:
            return
        status = "[green]ok[/green]" if r.ok else "[bold red]FAIL[/bold red]"
        kr = f"  kill rate {r.kill_rate:.0%}" if r.kill_rate is not None else ""
        if r.covered is not None:
            kr += f"  coverage {r.covered[0]}/{r.covered[1]}"
        if r.adequate is not None and r.adequate[1]:
            kr += f"  adequacy {r.adequate[0]}/{r.adequate[1]}"
        con.print(f"{status}  {r.problem.qualified_id}{kr}")
        for c in r.checks:
            if not c.ok:
                con.print(f"      [red]{c.name}[/red]: {c.detail}")

    try:
        reports = validate(problems, handle, workers=args.workers, progress=progress, quick=args.quick)
    finally:
        if handle is not None:
            handle.sandbox.sweep()
    bad = [r for r in reports if not r.ok]
    variants = [v for r in reports for v in r.variants]
    killed = sum(v.killed for v in variants)
    sampled = [r for r in reports if r.adequate is not None]
    caught = sum(r.adequate[0] for r in sampled if r.adequate)
    models = sum(r.adequate[1] for r in sampled if r.adequate)
    if args.json:
        dump_json({"ok": not bad, "problems": [r.to_json() for r in reports],
                   "kill_rate": killed / len(variants) if variants else None,
                   "adequacy": [caught, models] if sampled else None,
                   "packs": {p.pack.name: p.pack.content_hash for p in problems}})
        return 1 if bad else 0
    t = table("problem", "checks", "gold", "variants killed", "coverage", "adequacy", title="validation",
              right=("variants killed", "coverage", "adequacy"))
    for r in reports:
        gold = [c for c in r.checks if c.name.startswith("gold")]
        gold_txt = "skipped" if not gold else ("ok" if all(c.ok for c in gold) else "FAIL")
        kill = f"{sum(v.killed for v in r.variants)}/{len(r.variants)}" if r.variants else "-"
        cov = f"{r.covered[0]}/{r.covered[1]}" if r.covered is not None else "-"
        adq = f"{r.adequate[0]}/{r.adequate[1]}" if r.adequate is not None and r.adequate[1] else "-"
        t.add_row(r.problem.qualified_id, ok_mark(r.ok), gold_txt, kill, cov, adq)
    con.print(t)
    summary = f"{len(reports) - len(bad)}/{len(reports)} problems pass every check"
    if variants:
        summary += f"; pack kill rate {killed}/{len(variants)} = {killed / len(variants):.1%}"
    if models:
        summary += (f"; hidden-set adequacy {caught}/{models} over the {len(sampled)} problem(s) with a domain "
                    "sampler")
    con.print(summary)
    return 1 if bad else 0


def cmd_coverage(args: argparse.Namespace) -> int:
    import sys

    from ..grading.adequacy import coverage, coverage_markdown
    from ..packs.sampling import draw_sample
    from ..packs.vectors import load

    problems = [p for p in _catalog(args).select(args.pack, args.problem) if p.data.sampler is not None]
    if not problems:
        raise ConfigError("none of these problems declares a [sampler]: there is no coverage to show")
    blocks = []
    for p in problems:
        table_, _ = coverage(p, load(p).hidden, draw_sample(p))
        blocks.append(coverage_markdown(p, table_))
    sys.stdout.write("\n".join(blocks))
    return 0


def cmd_new(args: argparse.Namespace) -> int:
    from ..packs.problems import default_pack_roots
    from ..packs.scaffold import new_problem

    root = Path(args.root) if args.root else (default_pack_roots() or [Path("problems")])[-1]
    made = new_problem(root, args.target)
    pack = made.pack_dir.name
    con = console()
    con.print(f"created {'the pack ' + pack + ' and ' if made.new_pack else ''}a working example problem:")
    for path in made.written:
        con.print(f"  {path}")
    con.print("it validates and evaluates as it is; rewrite each file for your problem (docs/authoring.md), then\n"
              f"  python -m grader problems validate {pack} --pack-path {made.pack_dir}\n"
              f"  python -m grader eval --pack {pack} --pack-path {made.pack_dir} --samples 3")
    return 0


def cmd_fingerprint(args: argparse.Namespace) -> int:
    import json
    import sys

    from ..packs.fingerprint import differences, pack_fingerprint

    now = pack_fingerprint(_catalog(args).pack(args.pack))
    text = json.dumps(now, indent=1, sort_keys=True) + "\n"
    if args.out:
        Path(args.out).write_text(text)
    elif not args.check:
        sys.stdout.write(text)
    if args.check:
        try:
            saved = json.loads(Path(args.check).read_text())
        except (OSError, ValueError) as exc:
            raise ConfigError(f"--check {args.check}: {exc}") from None
        diff = differences(saved, now)
        con = console()
        for line in diff:
            con.print(f"[red]differs[/red]  {line}")
        con.print(f"{len(now['problems']) - len(diff)}/{len(now['problems'])} problems identical to {args.check}")
        return 1 if diff else 0
    return 0


def cmd_schema(args: argparse.Namespace) -> int:
    from ..packs.problems import default_pack_roots

    out = Path(args.out) if args.out else (default_pack_roots() or [Path("problems")])[-1]
    for path in write_schemas(out):
        console().print(f"wrote {path}")
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    import sys

    from ..packs.export import export_rows, to_jsonl
    from ..packs.vectors import parse_instance_seed, seed_label

    instance_seed = parse_instance_seed(args.instance_seed)
    if not 0.0 <= args.test_share <= 1.0:
        raise ConfigError(f"--test-share must be between 0 and 1 (got {args.test_share})")
    problems = _catalog(args).problems(args.pack)
    if args.qa_items < 1:
        raise ConfigError("--qa-items must be >= 1")
    rows = list(export_rows(problems, seed=args.split_seed, test_share=args.test_share, mode=args.mode,
                            qa_count=args.qa_items, instance_seed=instance_seed))
    text = to_jsonl(rows)
    if args.out == "-":
        sys.stdout.write(text)
        return 0
    try:
        Path(args.out).write_text(text, encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"--out {args.out}: {exc.strerror}") from None
    n_test = sum(r["split"] == "test" for r in rows)
    console(stderr=True).print(f"wrote {len(rows)} prompts of {args.pack} to {args.out} "
                               f"({len(rows) - n_test} train, {n_test} test; split seed {args.split_seed}; "
                               f"instance seed {seed_label(instance_seed)})")
    return 0
