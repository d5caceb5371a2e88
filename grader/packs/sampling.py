"""The domain sample of a problem, and the features its inputs exercise.

A problem may declare an independent **domain sampler** (``[sampler]`` in problem.toml: a key of
its pack's trusted ``SAMPLERS``). Unlike the generator, which draws where the traps are, the
sampler draws from the whole domain the prompt states (its ``[[domain]]`` rules and the pack
format's validity rules) and shares no code with the generator, so a corner the generator never
reaches still shows up here. Input ``i`` always comes from
``numpy.random.default_rng([sampler_seed(problem), i])``, where the seed is derived from the
problem's qualified id.

Every draw is checked (the sampler's output has the declared parameters, satisfies every
``[[domain]]`` rule, and the reference answers it without raising, with the declared outputs and
in range); an accepted draw keeps the reference's answer. Draws and hidden vectors are then
tagged with the **features** they exercise: the problem's ``[[features]]`` (rules over the
parameters, in the language of grader/packs/domain.py) and two automatic ones, an integer of at
least 2^31 and one of at least 2^53 anywhere in the inputs or the expected outputs (where 32-bit
and float arithmetic stop being exact).

The sample is cached under a key covering the problem's content hash and the sampler's own
source, options, count and seed, so a re-validation costs nothing until one of them changes.
"""

from __future__ import annotations

import hashlib
import json
import zlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import GraderError
from ..settings import cache_dir
from .bundle import canonical_module, source_closure
from .domain import DomainEvalError, evaluate, violations
from .problems import Problem
from .vectors import Vector, answer_range, built_once, check_expected, plain, write_atomic

SAMPLE_FORMAT = 1
INT31 = 2 ** 31
INT53 = 2 ** 53


@dataclass(frozen=True)
class Feature:
    """A feature a hidden vector can exercise: declared (a rule) or automatic (a large integer)."""

    name: str
    says: str
    min: int
    rule: str | None = None  # None: automatic
    at_least: int | None = None  # automatic: the integer threshold

    @property
    def automatic(self) -> bool:
        return self.rule is None


AUTOMATIC = (
    Feature("int >= 2^31", "an integer of the inputs or the expected outputs reaches 2^31 (32-bit arithmetic wraps)",
            3, at_least=INT31),
    Feature("int >= 2^53", "an integer of the inputs or the expected outputs reaches 2^53 (float64 is no longer exact)",
            3, at_least=INT53),
)


def features(problem: Problem) -> list[Feature]:
    """The problem's declared features, then the automatic ones."""
    declared = [Feature(f.name, f.says, f.min, rule=f.rule) for f in problem.data.features]
    return declared + list(AUTOMATIC)


def _largest_int(value: Any) -> int:
    """The largest magnitude of any integer inside a plain JSON value (0 when there is none)."""
    if type(value) is int:
        return abs(value)
    if isinstance(value, dict):
        return max((_largest_int(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return max((_largest_int(v) for v in value), default=0)
    return 0


def tag(problem: Problem, kwargs: Mapping[str, Any], expected: Any) -> tuple[frozenset[str], list[str]]:
    """The features one input (its arguments by name, and the reference's answer) exercises, and
    the rules that could not be evaluated on it (feature name: why)."""
    found: set[str] = set()
    errors: list[str] = []
    largest = max(_largest_int(dict(kwargs)), _largest_int(expected))
    for f in features(problem):
        if f.rule is None:
            if f.at_least is not None and largest >= f.at_least:
                found.add(f.name)
            continue
        try:
            if evaluate(f.rule, kwargs):
                found.add(f.name)
        except DomainEvalError as exc:
            errors.append(f"{f.name}: {exc}")
    return frozenset(found), errors


def tag_vectors(problem: Problem, vectors: Iterable[Vector]) -> dict[str, tuple[frozenset[str], list[str]]]:
    """Vector id -> (its features, the feature rules that could not be evaluated on it)."""
    return {v.id: tag(problem, v.kwargs(problem), v.expected) for v in vectors}


@dataclass(frozen=True)
class Draw:
    """One input of the domain sample: accepted (``expected`` set) or not (``problem`` says why)."""

    id: str
    args: list[Any] | None  # in signature order; None when the sampler's output had the wrong shape
    expected: dict[str, Any] | None = None
    problem: str | None = None
    features: tuple[str, ...] = ()
    feature_errors: tuple[str, ...] = ()

    @property
    def accepted(self) -> bool:
        return self.problem is None


@dataclass(frozen=True)
class DomainSample:
    key: str
    seed: int
    draws: tuple[Draw, ...]

    @property
    def accepted(self) -> tuple[Draw, ...]:
        return tuple(d for d in self.draws if d.accepted)

    @property
    def rejected(self) -> tuple[Draw, ...]:
        return tuple(d for d in self.draws if not d.accepted)


def sampler_seed(problem: Problem) -> int:
    """The seed of a problem's domain sample: the CRC-32 of its qualified id."""
    return zlib.crc32(problem.qualified_id.encode())


def shared_modules(problem: Problem) -> list[str]:
    """Modules of trusted code that the sampler and the generator both use (must be none)."""
    sampler = source_closure(problem.sampler_fn)
    generator = source_closure(problem.generator_fn)
    return sorted(canonical_module(m) for m in set(sampler) & set(generator))


def sample_key(problem: Problem) -> str:
    """What the sample depends on: the problem (its files, reference and generator), the sampler's
    source, options and count, and the seed."""
    spec = problem.data.sampler
    assert spec is not None
    fn = problem.sampler_fn
    h = hashlib.sha256(f"perfgrade-domain-sample-v{SAMPLE_FORMAT}\0".encode())
    h.update(problem.content_hash.encode())
    h.update(json.dumps([spec.name, spec.options, spec.count, sampler_seed(problem)], sort_keys=True).encode())
    h.update(f"{canonical_module(fn.__module__)}.{fn.__qualname__}".encode())
    for name, src in sorted(source_closure(fn).items()):
        h.update(canonical_module(name).encode() + b"\0" + hashlib.sha256(src.encode()).digest())
    return h.hexdigest()


def _draw_one(problem: Problem, rng: np.random.Generator, did: str) -> Draw:
    d = problem.data
    names = [p.name for p in d.signature.params]
    where = f"{problem.qualified_id} domain sample {did}"
    try:
        drawn = problem.sampler_fn(rng, **(d.sampler.options if d.sampler else {}))
    except Exception as exc:  # noqa: BLE001 - a broken sampler is the finding
        return Draw(did, None, problem=f"the sampler raised {type(exc).__name__}: {exc}")
    if not isinstance(drawn, dict) or sorted(drawn) != sorted(names):
        got = sorted(drawn) if isinstance(drawn, dict) else type(drawn).__name__
        return Draw(did, None, problem=f"the sampler returned {got}, expected the arguments {names}")
    try:
        args = [plain(drawn[n], where) for n in names]
    except GraderError as exc:
        return Draw(did, None, problem=str(exc))
    kwargs = dict(zip(names, args))
    broken = violations(d.domain, kwargs)
    if broken:
        return Draw(did, args, problem=broken[0].describe())
    try:
        answer = problem.reference_fn(*json.loads(json.dumps(args)))
    except ZeroDivisionError as exc:
        return Draw(did, args, problem=f"the reference divides by zero ({exc})")
    except Exception as exc:  # noqa: BLE001 - what the reference does is the finding
        return Draw(did, args, problem=f"the reference raises {type(exc).__name__}: {str(exc)[:300]}")
    try:
        expected = check_expected(problem, plain(answer, where), where)
    except GraderError as exc:
        return Draw(did, args, problem=str(exc))
    bad = answer_range(d.outputs, expected)
    if bad:
        return Draw(did, args, expected=None, problem="the reference answers out of range: " + "; ".join(bad[:2]))
    found, errors = tag(problem, kwargs, expected)
    return Draw(did, args, expected, None, tuple(sorted(found)), tuple(errors))


def draw_sample(problem: Problem, *, use_cache: bool = True) -> DomainSample:
    """The problem's domain sample (``[sampler] count`` draws), from the cache when possible."""
    if problem.data.sampler is None:
        raise GraderError(f"{problem.qualified_id} declares no [sampler]")
    key = sample_key(problem)
    seed = sampler_seed(problem)
    path = cache_dir() / "domain" / f"{key}.json"
    if not use_cache:
        return _draw_all(problem, key, seed, path, use_cache)
    return built_once(path, lambda: _read_sample(path, key, seed),
                      lambda: _draw_all(problem, key, seed, path, use_cache))


def _read_sample(path: Path, key: str, seed: int) -> DomainSample | None:
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text())
        if data.get("format") == SAMPLE_FORMAT and data.get("key") == key:
            return DomainSample(key, seed, tuple(Draw(d[0], d[1], d[2], d[3], tuple(d[4]), tuple(d[5]))
                                                 for d in data["draws"]))
    except (ValueError, KeyError, TypeError, IndexError, OSError):
        pass  # a damaged cache entry is recomputed
    return None


def _draw_all(problem: Problem, key: str, seed: int, path: Path, use_cache: bool) -> DomainSample:
    count = problem.data.sampler.count
    width = len(str(count - 1))
    draws = tuple(_draw_one(problem, np.random.default_rng([seed, i]), f"d{i:0{width}d}") for i in range(count))
    sample = DomainSample(key, seed, draws)
    if use_cache:
        write_atomic(path, json.dumps({
            "format": SAMPLE_FORMAT, "problem": problem.qualified_id, "key": key,
            "draws": [[d.id, d.args, d.expected, d.problem, list(d.features), list(d.feature_errors)] for d in draws],
        }, separators=(",", ":"), allow_nan=False))
    return sample
