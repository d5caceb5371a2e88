"""Test vectors: inputs drawn by a problem's generator, expected outputs from its reference.

Vectors are computed on the host, deterministically (case ``i`` of a seed always draws from
``numpy.random.default_rng([seed, i])``), and cached under the problem's content hash, which
covers the spec, signature, generator, seeds and the reference code. Hidden vectors are used for
grading only; they never appear in a prompt, in the sandbox image or in a log a model could see:
the main draw (ids ``h..``), the corners drawn with options of their own (``c..``,
``[generator.corners]``; ``rc..`` for a real-size corner set) and the real-size ones (``r..``,
``[generator.real]``). Visible vectors
are drawn separately (their own seed) and shown in the prompt as examples.

**Instance seeds.** The seeds in ``problem.toml`` give the release's instances, the ones every
published figure is about. An instance seed ``S`` (``eval --instance-seed S``) draws fresh hidden
vectors (small, corners and real-size) and fresh Q&A instances with the same generators and references:
each seed of the problem is replaced by :func:`derive_seed` ``(S, problem, kind, seed)``, a hash,
so problems and kinds stay independent of each other and of the release. The visible examples
stay the release's (the prompt is the same for every seed) and a fresh hidden vector that
coincides with one of them is redrawn. ``None`` (or ``"release"`` on the command line) is the
release. Vectors of a seed are cached under the content hash and the seed.
"""

from __future__ import annotations

import fcntl
import hashlib
import math
import json
import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from ..errors import ConfigError, PackError, ReferenceError_
from .problems import FieldSpec, Problem, TypeSpec
from ..settings import cache_dir

T = TypeVar("T")
VECTOR_FORMAT = 1
RELEASE = "release"  # the instance seed of the release, as the command line and reports spell it
_SEEDED = ("hidden", "corners", "real", "qa")  # what an instance seed redraws; the visible examples never change


def parse_instance_seed(value: "str | int | None") -> int | None:
    """An instance seed from the command line or an API: ``None`` or ``"release"`` is the release
    (``None``), anything else a non-negative integer."""
    if value is None or (isinstance(value, str) and value.strip().lower() == RELEASE):
        return None
    if isinstance(value, bool):
        raise ConfigError(f"instance seed {value!r}: expected a non-negative integer or {RELEASE!r}")
    try:
        seed = int(value)
    except (TypeError, ValueError):
        raise ConfigError(f"instance seed {value!r}: expected a non-negative integer or {RELEASE!r}") from None
    if seed < 0 or (isinstance(value, float) and value != seed):
        raise ConfigError(f"instance seed {value!r}: expected a non-negative integer or {RELEASE!r}")
    return seed


def seed_label(instance_seed: int | None) -> str:
    """``release`` or the seed's number, as reports show it."""
    return RELEASE if instance_seed is None else str(instance_seed)


def seed_words(instance_seed: int | None) -> str:
    """``the release's instances`` or ``instance seed S``, for messages."""
    return "the release's instances" if instance_seed is None else f"instance seed {instance_seed}"


def derive_seed(instance_seed: int | None, problem: Problem, kind: str, seed: int) -> int:
    """The seed a problem's ``kind`` of instances (hidden, real or qa) is drawn from under an
    instance seed: the problem's own seed for the release, else a hash of (instance seed, problem,
    kind, seed), so different problems and kinds never share a stream."""
    if instance_seed is None:
        return seed
    text = f"perfgrade-instance-seed\0{instance_seed}\0{problem.qualified_id}\0{kind}\0{seed}"
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")


@dataclass(frozen=True)
class Vector:
    id: str
    args: list[Any]  # in signature order
    expected: dict[str, Any]

    def kwargs(self, problem: Problem) -> dict[str, Any]:
        return {p.name: a for p, a in zip(problem.data.signature.params, self.args)}


@dataclass(frozen=True)
class VectorSet:
    problem_hash: str
    hidden: tuple[Vector, ...]
    visible: tuple[Vector, ...]
    instance_seed: int | None = None  # None: the release's instances

    @property
    def digest(self) -> str:
        """Hash of the vectors themselves (what the candidate is graded against)."""
        h = hashlib.sha256()
        for v in self.hidden:
            h.update(_canonical({"id": v.id, "args": v.args, "expected": v.expected}).encode())
        return h.hexdigest()


def _canonical(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), allow_nan=False)


def plain(value: Any, where: str) -> Any:
    """Convert generator/reference output to plain JSON values (numpy scalars included)."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)):
        return int(value)
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, (float, np.floating)):
        f = float(value)
        if not np.isfinite(f):
            raise ReferenceError_(f"{where}: non-finite number {f}")
        return f
    if isinstance(value, (list, tuple)):
        return [plain(x, where) for x in value]
    if isinstance(value, np.ndarray):
        return [plain(x, where) for x in value.tolist()]
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if not isinstance(k, str):
                raise ReferenceError_(f"{where}: dict key {k!r} is not a string")
            out[k] = plain(v, where)
        return out
    raise ReferenceError_(f"{where}: value of type {type(value).__name__} is not plain JSON")


def check_value(t: TypeSpec, value: Any, choices: list[str] | None) -> str | None:
    """None when value has type t, else why not. Strict: bool is not int, int is not str."""
    k = t.kind
    if k == "int":
        return None if type(value) is int else f"expected an integer, got {_tname(value)}"
    if k == "float":
        return None if type(value) in (int, float) else f"expected a number, got {_tname(value)}"
    if k == "str":
        return None if type(value) is str else f"expected a string, got {_tname(value)}"
    if k == "bool":
        return None if type(value) is bool else f"expected a boolean, got {_tname(value)}"
    if k == "enum":
        if type(value) is not str:
            return f"expected one of {choices}, got {_tname(value)}"
        return None if value in (choices or []) else f"{value!r} is not one of {choices}"
    assert t.inner is not None
    if k in ("list", "set"):
        if type(value) is not list:
            return f"expected a list, got {_tname(value)}"
        for i, x in enumerate(value):
            why = check_value(t.inner, x, choices)
            if why:
                return f"[{i}]: {why}"
        return None
    if k == "map":
        if type(value) is not dict:
            return f"expected a dict, got {_tname(value)}"
        for key, x in value.items():
            why = check_value(t.inner, x, choices)
            if why:
                return f"[{key!r}]: {why}"
        return None
    return f"unknown type {t}"


def _tname(value: Any) -> str:
    if value is None:
        return "null"
    return {bool: "boolean", int: "integer", float: "float", str: "string", list: "list", dict: "dict"}.get(
        type(value), type(value).__name__
    )


def check_expected(problem: Problem, expected: Any, where: str) -> dict[str, Any]:
    """The reference's answer, checked against the declared outputs (keys and types), or ReferenceError_."""
    if not isinstance(expected, dict):
        raise ReferenceError_(f"{where}: the reference returned {type(expected).__name__}, not a dict")
    names = [f.name for f in problem.data.outputs]
    if sorted(expected) != sorted(names):
        raise ReferenceError_(
            f"{where}: the reference returned keys {sorted(expected)}, the problem declares {sorted(names)}"
        )
    for f in problem.data.outputs:
        why = check_value(f.parsed, expected[f.name], f.choices)
        if why:
            raise ReferenceError_(f"{where}: output {f.name!r} {why}")
    return expected


def _out_of_range(t: TypeSpec, value: Any, where: str, signed: bool, out: list[str]) -> None:
    """Collect the negative integers (unless signed) and non-finite numbers of an output value."""
    if t.kind == "int" and type(value) is int and value < 0 and not signed:
        out.append(f"{where} = {value} is negative (a count; declare signed = true if it may be)")
    elif t.kind == "float" and isinstance(value, float) and not math.isfinite(value):
        out.append(f"{where} = {value} is not finite")
    elif t.inner is not None and isinstance(value, list):
        for i, x in enumerate(value):
            _out_of_range(t.inner, x, f"{where}[{i}]", signed, out)
    elif t.inner is not None and isinstance(value, dict):
        for k, x in value.items():
            _out_of_range(t.inner, x, f"{where}[{k!r}]", signed, out)


def answer_range(fields: list[FieldSpec], expected: Any) -> list[str]:
    """Why a reference's answer is out of range: negative counts (unless the field is ``signed``) and
    non-finite numbers, each named by its field (empty when the answer is in range)."""
    out: list[str] = []
    if isinstance(expected, dict):
        for f in fields:
            if f.name in expected:
                _out_of_range(f.parsed, expected[f.name], f.name, f.signed, out)
    return out


def _args_key(args: list[Any]) -> str:
    return _canonical(args)


def generate(problem: Problem, which: str, exclude: set[str] | None = None,
             count: int | None = None, *, instance_seed: int | None = None, start: int = 0) -> tuple[Vector, ...]:
    """Draw the hidden, corner, real-size, visible or Q&A vectors of a problem (no cache).

    Visible examples and Q&A instances are redrawn (from ``[seed, i, attempt]``) when they
    coincide with an input listed in ``exclude`` (the hidden ones), so a hidden vector never
    appears in a prompt; under an instance seed, hidden vectors are redrawn when they coincide
    with a visible example listed in ``exclude``. Q&A instances come from ``qa.seed``; when the
    problem has real-size vectors, every other instance is drawn at real size. ``instance_seed``
    replaces the hidden, real and Q&A seeds by :func:`derive_seed`; the visible examples have
    only the release's. ``start`` (Q&A only) continues a pool: vectors ``start`` to ``start + count - 1``.
    """
    if start and which != "qa":
        raise ValueError("only a Q&A pool is continued from an index")
    if instance_seed is not None and which not in _SEEDED:
        raise ValueError(f"the {which} vectors are the release's for every instance seed")
    spec = problem.data
    options = dict(spec.generator.options)
    if which == "hidden":
        seed, count, prefix = spec.generator.hidden_seed, spec.generator.hidden_count, "h"
    elif which == "real":
        real = spec.generator.real
        if real is None:
            return ()
        seed, count, prefix = real.seed, real.count, "r"
        options.update(real.options)
    elif which == "corners":
        return tuple(v for c, prefix in zip(spec.generator.corners, corner_prefixes(spec.generator.corners))
                     for v in _draw(problem, which, c.seed, c.count, prefix, {**options, **c.options},
                                    exclude, instance_seed))
    elif which == "qa":
        if spec.qa is None:
            raise PackError(problem.dir / "problem.toml", "no [qa] seed: the problem has no Q&A instances", "qa")
        seed, prefix = spec.qa.seed, "q"
        count = 5 if count is None else count
    else:
        seed, count, prefix = spec.generator.visible_seed, spec.generator.visible_count, "v"
    return _draw(problem, which, seed, count, prefix, options, exclude, instance_seed, start)


def corner_prefixes(corners: Any) -> list[str]:
    """The id prefix of each corner set: ``c`` for the first small one, ``c1-``, ``c2-``... after
    it, and ``rc``, ``rc1-``... for the real-size ones (:func:`is_real` holds for those)."""
    out, seen = [], {False: 0, True: 0}
    for c in corners:
        k = seen[c.real]
        seen[c.real] += 1
        out.append(("rc" if c.real else "c") + (f"{k}-" if k else ""))
    return out


def _draw(problem: Problem, which: str, seed: int, count: int, prefix: str, options: dict[str, Any],
          exclude: set[str] | None, instance_seed: int | None, start: int = 0) -> tuple[Vector, ...]:
    spec = problem.data
    gen = problem.generator_fn
    ref = problem.reference_fn
    seed = derive_seed(instance_seed, problem, which, seed)
    names = [p.name for p in spec.signature.params]
    real_options = {**options, **spec.generator.real.options} if which == "qa" and spec.generator.real else None
    width = len(str(count - 1)) if which != "qa" else 1
    out = []
    for i in range(start, start + count):
        vid = f"{prefix}{i:0{width}d}" if which != "qa" else f"{prefix}{i}"
        opts = real_options if real_options is not None and i % 2 == 1 else options
        where = f"{problem.qualified_id} {which} vector {vid}" + (
            f" (instance seed {instance_seed})" if instance_seed is not None else "")
        for attempt in range(100):
            rng = np.random.default_rng([seed, i] if attempt == 0 else [seed, i, attempt])
            try:
                drawn = gen(rng, **opts)
            except Exception as exc:  # noqa: BLE001 - a broken generator is a pack error
                raise ReferenceError_(
                    f"{where}: generator {spec.generator.name} raised {type(exc).__name__}: {exc}") from exc
            if not isinstance(drawn, dict) or sorted(drawn) != sorted(names):
                got = sorted(drawn) if isinstance(drawn, dict) else type(drawn).__name__
                raise ReferenceError_(f"{where}: generator returned {got}, expected arguments {names}")
            args = [plain(drawn[n], where) for n in names]
            if not exclude or _args_key(args) not in exclude:
                break
        else:
            avoid = "a visible example" if which in ("hidden", "real") else "a hidden vector"
            raise ReferenceError_(f"{where}: every draw coincides with {avoid} (the input space is too small)")
        call_args = json.loads(_canonical(args))  # the reference gets its own copy
        try:
            expected = ref(*call_args)
        except Exception as exc:  # noqa: BLE001
            raise ReferenceError_(f"{where}: reference {spec.reference} raised {type(exc).__name__}: {exc}") from exc
        expected = check_expected(problem, plain(expected, where), where)
        out.append(Vector(id=vid, args=args, expected=expected))
    return tuple(out)


def generate_hidden(problem: Problem, *, instance_seed: int | None = None,
                    exclude: set[str] | None = None) -> tuple[Vector, ...]:
    """Every hidden vector (no cache): the main draw, the corners, then the real-size ones (under an
    instance seed, each redrawn when it coincides with an input of ``exclude``: the visible examples)."""
    return tuple(v for which in ("hidden", "corners", "real")
                 for v in generate(problem, which, exclude=exclude, instance_seed=instance_seed))


def is_real(v: Vector) -> bool:
    """A real-size hidden vector (drawn from ``[generator.real]``, or a real-size corner set)."""
    return v.id.startswith("r")


def hidden_inputs(hidden: tuple[Vector, ...]) -> set[str]:
    return {_args_key(v.args) for v in hidden}


def _cache_path(problem: Problem, instance_seed: int | None = None) -> Path:
    name = problem.content_hash if instance_seed is None else f"{problem.content_hash}-seed-{instance_seed}"
    return cache_dir() / "vectors" / f"{name}.json"


def _read_cache(path: Path, problem: Problem, instance_seed: int | None) -> VectorSet | None:
    try:
        data = json.loads(path.read_text())
        if (data.get("format") == VECTOR_FORMAT and data.get("problem_hash") == problem.content_hash
                and data.get("instance_seed") == instance_seed):
            return VectorSet(
                problem_hash=problem.content_hash,
                hidden=tuple(Vector(**v) for v in data["hidden"]),
                visible=tuple(Vector(**v) for v in data["visible"]),
                instance_seed=instance_seed,
            )
    except (ValueError, KeyError, TypeError, OSError, AttributeError):
        pass  # a damaged cache entry is recomputed
    return None


def load(problem: Problem, *, use_cache: bool = True, instance_seed: int | None = None) -> VectorSet:
    """The problem's vectors, from the cache keyed on content hash and instance seed when possible.

    ``instance_seed`` None is the release; a seed draws fresh hidden vectors (small and real-size)
    beside the release's visible examples, never coinciding with one of them.
    """
    if not use_cache:
        return _build(problem, instance_seed, use_cache)
    path = _cache_path(problem, instance_seed)
    return built_once(path, lambda: _read_cache(path, problem, instance_seed) if path.is_file() else None,
                      lambda: _build(problem, instance_seed, use_cache))


def _build(problem: Problem, instance_seed: int | None, use_cache: bool) -> VectorSet:
    path = _cache_path(problem, instance_seed)
    if instance_seed is None:
        hidden = generate_hidden(problem)
        visible = generate(problem, "visible", exclude=hidden_inputs(hidden))
    else:
        visible = load(problem, use_cache=use_cache).visible
        hidden = generate_hidden(problem, instance_seed=instance_seed, exclude=hidden_inputs(visible))
    vs = VectorSet(problem_hash=problem.content_hash, hidden=hidden, visible=visible, instance_seed=instance_seed)
    if use_cache:
        # key order is kept as generated (not sorted), so cached vectors render the same prompt
        write_atomic(
            path,
            json.dumps({
                "format": VECTOR_FORMAT,
                "problem": problem.qualified_id,
                "problem_hash": problem.content_hash,
                "instance_seed": instance_seed,
                "hidden": [v.__dict__ for v in vs.hidden],
                "visible": [v.__dict__ for v in vs.visible],
            }, separators=(",", ":"), allow_nan=False),
        )
    return vs


def built_once(path: Path, read: Callable[[], T | None], build: Callable[[], T]) -> T:
    """The cache entry ``path``: what ``read`` finds there, else what ``build`` makes (and writes).
    Another process (an xdist worker, a second eval, a Ray worker on this machine) that wants the
    same entry meanwhile waits for this one's build, then reads it instead of building it again:
    the build holds an exclusive lock on ``<path>.lock``, which the kernel releases when the holder
    dies, so an interrupted build never blocks the next one."""
    if (found := read()) is not None:
        return found
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.parent / f"{path.name}.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            if (found := read()) is not None:
                return found
            return build()
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def write_atomic(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def field_specs(problem: Problem) -> dict[str, FieldSpec]:
    return {f.name: f for f in problem.data.outputs}
