"""``python -m grader eval``."""

from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction, formatter: type, add_pack) -> None:
    p = sub.add_parser("eval", help="generate with a model, grade in the sandbox, report pass rates",
                       formatter_class=formatter)
    add_pack(p)
    p.set_defaults(handler=cmd_eval)


def cmd_eval(args: argparse.Namespace) -> int:
    raise NotImplementedError
