"""``problems new``: a new problem (and its pack) that validates and evaluates as it is.

The scaffold is a small, complete, working problem (the multiply-accumulates and the bytes a
matrix product touches) so that ``problems validate`` and ``eval`` run on it at once; the author
then rewrites each file. It writes:

    <root>/<pack>/pack.toml                       (only for a new pack)
    <root>/<pack>/_trusted/__init__.py            (only for a new pack) finds every module beside it
    <root>/<pack>/_trusted/<module>.py            the reference and the input generator
    <root>/<pack>/<id>/problem.toml               the problem as data, its variants as declared edits
    <root>/<pack>/<id>/spec.md                    the text a model sees
    <root>/<pack>/<id>/solution.py                a correct, self-contained solution
"""

from __future__ import annotations

import re
import zlib
from dataclasses import dataclass
from pathlib import Path

from ..errors import ConfigError

PACK_TOML = '''name = "{pack}"
version = "0.1.0"
tier = "guided"
trusted = "_trusted"
description = "TODO: what this pack covers."
'''

TRUSTED_INIT = '''"""The {pack} pack's trusted code: the references and input generators its problems name.

Host only: the grader imports this package to compute expected outputs; nothing here ever
reaches a candidate. Every module beside this file is found here, and its ``REFERENCES`` and
``GENERATORS`` (keys starting with the module's name) are merged.
"""

import importlib
import pkgutil

from reference_models.registry import merge

_MODULES = [importlib.import_module(f"{{__name__}}.{{m.name}}") for m in pkgutil.iter_modules(__path__)]

REFERENCES = merge(_MODULES, "REFERENCES")
GENERATORS = merge(_MODULES, "GENERATORS")
'''

REFERENCE = '''"""Reference and input generator of {pack}/{pid} (trusted: run on the host only).

The reference takes the problem's parameters in signature order and returns a plain dict; the
generator draws one input from ``rng`` only. Replace both with your problem's.
"""

from __future__ import annotations


def {entry}(gemm: dict) -> dict:
    m, n, k, bits = gemm["M"], gemm["N"], gemm["K"], gemm["bits"]
    elements = m * k + k * n + m * n
    return {{"macs": m * n * k, "bytes": -(-elements * bits // 8)}}


def gen_gemm(rng, max_dim: int = 512) -> dict:
    dims = {{d: int(rng.integers(1, max_dim + 1)) for d in ("M", "N", "K")}}
    return {{"gemm": {{**dims, "bits": int(rng.choice([4, 8, 16]))}}}}


REFERENCES = {{"{module}.{entry}": {entry}}}
GENERATORS = {{"{module}.gemm": gen_gemm}}
'''

PROBLEM_TOML = '''id = "{pid}"
title = "TODO: one-line title (example: MACs and bytes of a matrix product)"
family = "F1"
difficulty = "easy"
version = 1
summary = "TODO: what this problem measures, in one sentence."
tags = ["gemm"]
reference = "{module}.{entry}"       # a key of the pack's trusted REFERENCES (_trusted/{module}.py)

[signature]
entry_point = "{entry}"

[[signature.params]]
name = "gemm"
type = "dict"
description = "the matrix product: M, N, K and bits per element"

[[outputs]]
name = "macs"
type = "int"
unit = "multiply-accumulates"

[[outputs]]
name = "bytes"
type = "int"
unit = "bytes"

[[domain]]
rule = 'all(gemm[d] >= 1 for d in ["M", "N", "K"]) and gemm.bits in [4, 8, 16]'
says = "sizes are positive and elements take 4, 8 or 16 bits"

[generator]
name = "{module}.gemm"              # a key of the pack's trusted GENERATORS
options = {{ max_dim = 512 }}
hidden_seed = {hidden_seed}
hidden_count = 60
visible_seed = {visible_seed}
visible_count = 2

# Each variant is the solution with one plausible mistake, declared as the edit that makes it.
[[variants]]
name = "flops_not_macs"
mistake = "counts two operations per multiply-accumulate"
[[variants.replace]]
old = "\\"macs\\": m * n * k"
new = "\\"macs\\": 2 * m * n * k"

[[variants]]
name = "output_forgotten"
mistake = "leaves the output matrix out of the bytes"
[[variants.replace]]
old = "m * k + k * n + m * n"
new = "m * k + k * n"

[[variants]]
name = "bytes_rounded_down"
mistake = "rounds a fractional byte count down instead of up"
[[variants.replace]]
old = "-(-elements * bits // 8)"
new = "elements * bits // 8"

[qa]
seed = {qa_seed}
'''

SPEC = '''TODO: say what to compute in plain words. (This example: a matrix product `O[m][n] += I[m][k] * W[k][n]`.)

## Inputs

`gemm` is a dict: `M`, `N` and `K` are the sizes of the product (positive integers) and `bits` is
the width of every element of `I`, `W` and `O` in bits (4, 8 or 16).

## What to return

- `macs`: the number of multiply-accumulates, `M * N * K`.
- `bytes`: the bytes of `I`, `W` and `O` together (`M*K + K*N + M*N` elements), rounded up to a
  whole byte.

## Worked example

`M = 2, N = 3, K = 5, bits = 4`: `macs = 30`; the elements are `10 + 15 + 6 = 31`, so
`31 * 4 = 124` bits, which is `15.5` bytes, rounded up to `bytes = 16`.
'''

SOLUTION = '''def {entry}(gemm: dict) -> dict:
    m, n, k, bits = gemm["M"], gemm["N"], gemm["K"], gemm["bits"]
    elements = m * k + k * n + m * n
    return {{"macs": m * n * k, "bytes": -(-elements * bits // 8)}}
'''


@dataclass(frozen=True)
class Scaffold:
    pack_dir: Path
    problem_dir: Path
    written: tuple[Path, ...]
    new_pack: bool


def new_problem(root: Path, target: str) -> Scaffold:
    """Write a new working problem ``PACK/ID`` under ``root`` (and the pack, if it is new)."""
    m = re.fullmatch(r"([a-z0-9][a-z0-9-]*[a-z0-9])/([a-z0-9][a-z0-9-]*[a-z0-9])", target)
    if not m:
        raise ConfigError(f"{target!r}: expected PACK/ID in lower case letters, digits and dashes")
    pack, pid = m.groups()
    pack_dir = root / pack
    pdir = pack_dir / pid
    if pdir.exists():
        raise ConfigError(f"{pdir} already exists")
    module = re.sub(r"[^a-z0-9_]", "_", pid)
    if module[0].isdigit():
        module = "p_" + module
    entry = "solve"
    trusted = pack_dir / "_trusted"
    written: list[Path] = []
    new_pack = not (pack_dir / "pack.toml").exists()
    if new_pack:
        trusted.mkdir(parents=True, exist_ok=True)
        (pack_dir / "pack.toml").write_text(PACK_TOML.format(pack=pack))
        (trusted / "__init__.py").write_text(TRUSTED_INIT.format(pack=pack))
        written += [pack_dir / "pack.toml", trusted / "__init__.py"]
    ref = trusted / f"{module}.py"
    if ref.exists():
        raise ConfigError(f"{ref} already exists")
    seed = zlib.crc32(f"{pack}/{pid}".encode()) % 100_000
    pdir.mkdir(parents=True)
    files = {
        ref: REFERENCE.format(pack=pack, pid=pid, module=module, entry=entry),
        pdir / "problem.toml": PROBLEM_TOML.format(pid=pid, module=module, entry=entry, hidden_seed=seed,
                                                   visible_seed=seed + 1, qa_seed=seed + 2),
        pdir / "spec.md": SPEC,
        pdir / "solution.py": SOLUTION.format(entry=entry),
    }
    for path, text in files.items():
        path.write_text(text)
        written.append(path)
    return Scaffold(pack_dir, pdir, tuple(written), new_pack)
