"""Command line: ``python -m grader <command>``.

Every user mistake ends in one line on stderr and exit status 2; a failed check or validation
ends in exit status 1. Only this module configures logging.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Callable

from .. import __version__
from ..errors import GraderError, UserError

EXAMPLES_MAIN = """\
commands:
  eval       generate completions with a model (or grade a completions file) and report pass rates
  report     recompute every statistic of a run directory (no model, no Docker); --html for a page
  audit      explain why each failing sample failed, field by field; --group clusters failures
  compare    paired comparison of two runs
  problems   list, show, validate and scaffold problem packs
  sandbox    build the sandbox image, check its isolation, sweep leftover containers

examples:
  python -m grader eval --samples 10                  # offline demo model when no endpoint is set
  python -m grader eval --model gpt-4o-mini --base-url https://api.openai.com/v1 --samples 10
  python -m grader report runs/<run> --html report.html
  python -m grader problems validate perf-core
  python -m grader sandbox doctor
"""


class _Formatter(argparse.RawDescriptionHelpFormatter):
    def __init__(self, prog: str) -> None:
        super().__init__(prog, max_help_position=32, width=100)


def _add_pack_option(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--pack-path",
        action="append",
        metavar="PATH",
        help="a pack directory or a directory of packs (repeatable; default: $PERFGRADE_PACKS, then "
        "the built-in problems/)",
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m grader",
        description="Benchmark and grader for LLM-written analytical performance models of DNN accelerators.",
        epilog=EXAMPLES_MAIN,
        formatter_class=_Formatter,
    )
    parser.add_argument("--version", action="version", version=f"perfgrade {__version__}")
    parser.add_argument("-v", "--verbose", action="count", default=0, help="more log output (repeatable)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    from . import eval_cmd, problems_cmd, results_cmd, sandbox_cmd

    eval_cmd.register(sub, _Formatter, _add_pack_option)
    results_cmd.register(sub, _Formatter)
    problems_cmd.register(sub, _Formatter, _add_pack_option)
    sandbox_cmd.register(sub, _Formatter)
    return parser


def _configure_logging(verbosity: int) -> None:
    level = logging.WARNING if verbosity == 0 else logging.INFO if verbosity == 1 else logging.DEBUG
    logging.basicConfig(level=level, format="%(levelname)s %(name)s: %(message)s", stream=sys.stderr)
    if verbosity < 2:
        for noisy in ("httpx", "httpx2", "openai", "urllib3", "docker"):
            logging.getLogger(noisy).setLevel(logging.WARNING)


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    _configure_logging(args.verbose)
    handler: Callable[[argparse.Namespace], int] = args.handler
    try:
        return handler(args)
    except UserError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except GraderError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # output piped into a closed reader (e.g. `| head`): not an error of ours
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0
    except Exception as exc:  # noqa: BLE001 - the sandbox's errors carry hints
        from sandbox.errors import SandboxError

        if isinstance(exc, SandboxError):
            hint = f"\n  fix: {exc.hint}" if exc.hint else ""
            print(f"error: {exc}{hint}", file=sys.stderr)
            return 2
        raise
