"""What every command shares: the pack roots it was given and JSON on stdout."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def pack_roots(args: argparse.Namespace) -> list[Path] | None:
    paths = getattr(args, "pack_path", None)
    if not paths:
        return None
    from ..packs.problems import default_pack_roots

    # explicit paths first; the built-in packs stay available unless PERFGRADE_PACKS replaces them
    return [Path(p) for p in paths] + [r for r in default_pack_roots() if r not in [Path(p) for p in paths]]


def dump_json(obj: object) -> None:
    sys.stdout.write(json.dumps(obj, indent=2, sort_keys=False, default=str) + "\n")
