"""Problem packs: the file format, loading, content hashes and lookup.

A pack is one self-contained directory::

    <pack>/pack.toml                      name, version, tier, description, its trusted code folder
    <pack>/<trusted>/__init__.py          the pack's trusted code (host only): REFERENCES, GENERATORS
    <pack>/<problem>/problem.toml         the problem, declared as data (see ProblemFile)
    <pack>/<problem>/spec.md              the specification: the only prose a model sees
    <pack>/<problem>/solution.py          a bundled correct solution (self-contained), or assembled
                                          from files of the pack ([solution] assemble = [...])

Wrong-on-purpose variants are declared in problem.toml as the change that makes their mistake
(switches, an exact search-and-replace, a unified diff; see grader/packs/changes.py) and
materialised from the solution when needed; partial models (answers right on a restricted domain
only) are declared the same way. A problem may also name an independent domain sampler and the
features its hidden vectors must exercise (grader/packs/sampling.py, grader/grading/adequacy.py).
Directories whose name starts with ``_`` or ``.`` are the pack's own (trusted code, a shared
engine), never problems.

Packs are found under ``--pack-path`` directories, ``PERFGRADE_PACKS``, the ``perfgrade.packs``
entry point group of installed packages, and the built-in ``problems/`` directory.

Files are parsed into frozen pydantic models that reject unknown fields. A broken file raises
:class:`PackError` naming the file, the field and what was expected; nothing is skipped.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from importlib import metadata
from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from ..errors import PackError, ProblemNotFound
from .changes import ChangeError, apply_change
from .domain import parse_rule
from .trusted import TrustedCode, load_trusted

PACK_FILE = "pack.toml"
PROBLEM_FILE = "problem.toml"
SPEC_FILE = "spec.md"
SOLUTION_FILE = "solution.py"
VARIANTS_DIR = "variants"
PARTIAL_MODELS_DIR = "partial_models"
ENV_PACKS = "PERFGRADE_PACKS"
ENTRY_POINT_GROUP = "perfgrade.packs"
FORMAT_VERSION = 2
MIN_HIDDEN = 50

IDENT = r"^[A-Za-z_][A-Za-z0-9_]*$"
SLUG = r"^[a-z0-9][a-z0-9-]*[a-z0-9]$"


# ------------------------------------------------------------------------------------------
# output types: a tiny grammar
# ------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class TypeSpec:
    """An output type: int | float | str | bool | enum | list[T] | set[T] | map[T]."""

    kind: str
    inner: "TypeSpec | None" = None

    def __str__(self) -> str:
        return f"{self.kind}[{self.inner}]" if self.inner else self.kind

    @property
    def has_float(self) -> bool:
        return self.kind == "float" or (self.inner is not None and self.inner.has_float)

    @property
    def has_enum(self) -> bool:
        return self.kind == "enum" or (self.inner is not None and self.inner.has_enum)

    @property
    def has_int(self) -> bool:
        return self.kind == "int" or (self.inner is not None and self.inner.has_int)

    def describe(self) -> str:
        """Plain words for the prompt."""
        words = {"int": "integer", "float": "number", "str": "string", "bool": "boolean", "enum": "string"}
        if self.kind in words:
            return words[self.kind]
        inner = self.inner.describe() if self.inner else "?"
        if self.kind == "list":
            return f"list of {inner} (in order)"
        if self.kind == "set":
            return f"list of {inner} (any order)"
        return f"dict from string to {inner}"


_SCALARS = {"int", "float", "str", "bool", "enum"}
_CONTAINERS = {"list", "set", "map"}


def parse_type(text: str) -> TypeSpec:
    text = text.strip()
    if text in _SCALARS:
        return TypeSpec(text)
    m = re.fullmatch(r"(list|set|map)\[(.+)\]", text)
    if not m:
        raise ValueError(
            f"unknown type {text!r}: expected int, float, str, bool, enum, list[T], set[T] or map[T]"
        )
    inner = parse_type(m.group(2))
    if m.group(1) == "set" and inner.kind not in ("int", "str", "enum", "bool"):
        raise ValueError(f"set[{inner}] is not supported: set elements must be int, str, enum or bool")
    return TypeSpec(m.group(1), inner)


# ------------------------------------------------------------------------------------------
# the file format
# ------------------------------------------------------------------------------------------

def _refuse_duplicates(names: list[str], what: str) -> None:
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise ValueError(f"duplicate {what}: {', '.join(dup)}")


class _Strict(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class PackFile(_Strict):
    """``pack.toml``."""

    name: str = Field(pattern=SLUG, description="pack name, used as the prefix of problem ids")
    version: str = Field(pattern=r"^\d+\.\d+\.\d+$", description="semantic version of the pack")
    description: str = Field(min_length=1)
    tier: Literal["guided", "model", "search"] = Field(
        "guided",
        description="guided: specs state the formulas; model: specs state only what the hardware does, "
        "so the model has to build the performance model itself; search: the answer is a mapping, scored "
        "against the best known (every problem has a [scoring] table)",
    )
    preamble: str | None = Field(
        None, pattern=r"^[A-Za-z0-9_.-]+\.md$",
        description="a Markdown file of the pack (e.g. FORMAT.md) shown before every problem's spec in the "
        "prompt: the pack's shared input format",
    )
    trusted: str = Field(
        pattern=r"^_[A-Za-z0-9_]+$",
        description="the folder of the pack's trusted code (host only): a Python package whose __init__.py "
        "defines REFERENCES and GENERATORS, the dicts problem.toml's keys name",
    )


class ParamSpec(_Strict):
    name: str = Field(pattern=IDENT)
    type: Literal["dict", "list", "int", "float", "str", "bool"]
    description: str = Field(min_length=1, description="one line; spec.md explains it in full")


class Signature(_Strict):
    entry_point: str = Field(pattern=IDENT, description="name of the function the model writes")
    params: list[ParamSpec] = Field(min_length=1)

    @field_validator("params")
    @classmethod
    def _unique(cls, v: list[ParamSpec]) -> list[ParamSpec]:
        _refuse_duplicates([p.name for p in v], "parameter names")
        return v

    def python(self) -> str:
        args = ", ".join(f"{p.name}: {p.type}" for p in self.params)
        return f"def {self.entry_point}({args}) -> dict:"


class FieldSpec(_Strict):
    """One key of the returned dict and how it is compared."""

    name: str = Field(min_length=1, max_length=64)
    type: str = Field(description="int, float, str, bool, enum, list[T], set[T] or map[T]")
    unit: str = Field("", description="unit of the value (elements, bytes, cycles, pJ, ...)")
    description: str = ""
    rtol: float | None = Field(None, ge=0, le=1, description="relative tolerance (float fields)")
    atol: float | None = Field(None, ge=0, description="absolute tolerance (float fields)")
    choices: list[str] | None = Field(None, description="allowed values (enum fields)")
    signed: bool = Field(False, description="its integers may be negative (otherwise the validator's reference "
                         "range check flags a negative integer as a broken reference)")

    @field_validator("type")
    @classmethod
    def _grammar(cls, v: str) -> str:
        parse_type(v)
        return v

    @model_validator(mode="after")
    def _tolerances(self) -> "FieldSpec":
        t = self.parsed
        if t.has_float and (self.rtol is None or self.atol is None):
            raise ValueError(f"field {self.name!r} holds floats: state both rtol and atol")
        if not t.has_float and (self.rtol is not None or self.atol is not None):
            raise ValueError(f"field {self.name!r} holds no floats: rtol/atol do not apply")
        if t.has_enum and not self.choices:
            raise ValueError(f"field {self.name!r} is an enum: list its choices")
        if not t.has_enum and self.choices:
            raise ValueError(f"field {self.name!r} is not an enum: choices do not apply")
        if self.signed and not t.has_int:
            raise ValueError(f"field {self.name!r} holds no integers: signed does not apply")
        return self

    @property
    def parsed(self) -> TypeSpec:
        return parse_type(self.type)

    def comparison(self) -> str:
        t = self.parsed
        parts = []
        if t.has_float:
            parts.append(f"|got - expected| <= {self.atol:g} + {self.rtol:g} * |expected|")
        if t.kind in ("int",) or (t.inner and not t.has_float and t.kind != "set"):
            parts.append("exact")
        if t.kind == "set":
            parts.append("as a set (order ignored)")
        if t.has_enum:
            parts.append("one of " + ", ".join(f"`{c}`" for c in self.choices or []))
        if not parts:
            parts.append("exact")
        return "; ".join(dict.fromkeys(parts))


class RealSpec(_Strict):
    """Real-size hidden vectors: instances no element-by-element simulation finishes in time."""

    seed: int = Field(ge=0)
    count: int = Field(ge=1, le=1000)
    options: dict[str, Any] = Field(default_factory=dict, description="generator options for real sizes "
                                    "(merged over the generator's options)")


class CornerSpec(_Strict):
    """Hidden vectors drawn with generator options of their own, for corners of the domain the main
    draw reaches too rarely (the validator's coverage and adequacy checks say which)."""

    seed: int = Field(ge=0)
    count: int = Field(ge=1, le=1000)
    options: dict[str, Any] = Field(default_factory=dict, description="generator options for these vectors "
                                    "(merged over the generator's options)")
    says: str = Field(min_length=3, description="what these vectors add, in one sentence")
    real: bool = Field(False, description="real-size corners, held to what [generator.real] vectors are: "
                       "ids rc.., answered by the reference alone, and the simulator must run out of time "
                       "on each; unlike [generator.real], their options never draw a Q&A item")


class GeneratorSpec(_Strict):
    """Where the test inputs come from: a registered generator, its options and seeds."""

    name: str = Field(min_length=1, description="key in the pack's trusted GENERATORS")
    options: dict[str, Any] = Field(default_factory=dict, description="keyword options of the generator")
    hidden_seed: int = Field(ge=0)
    hidden_count: int = Field(ge=1, le=100_000)
    visible_seed: int = Field(ge=0)
    visible_count: int = Field(2, ge=1, le=5)
    small_input_space: str | None = Field(
        None, description=f"reason the input space allows fewer than {MIN_HIDDEN} hidden vectors"
    )
    real: RealSpec | None = Field(
        None, description="real-size hidden vectors drawn in addition to the hidden_count small ones"
    )
    corners: list[CornerSpec] = Field(
        default_factory=list,
        description="hidden vectors drawn in addition, with options of their own (never shown in a prompt): "
        "one [generator.corners] table or several [[generator.corners]] sets",
    )

    @field_validator("corners", mode="before")
    @classmethod
    def _one_or_more_corner_sets(cls, value: Any) -> Any:
        return [value] if isinstance(value, dict) else value

    @property
    def seeds(self) -> list[int]:
        """Every seed of the code-mode vectors: hidden, visible, real, corners."""
        return ([self.hidden_seed, self.visible_seed] + ([self.real.seed] if self.real else [])
                + [c.seed for c in self.corners])

    @model_validator(mode="after")
    def _seeds(self) -> "GeneratorSpec":
        seeds = self.seeds
        if len(set(seeds)) != len(seeds):
            raise ValueError("hidden_seed, visible_seed, real.seed and each corners.seed must all differ")
        if self.hidden_count < MIN_HIDDEN and not self.small_input_space:
            raise ValueError(
                f"hidden_count {self.hidden_count} < {MIN_HIDDEN}: raise it or explain in small_input_space"
            )
        return self


class ChoiceSpec(_Strict):
    """A multiple-choice question derived from a Q&A instance's reference answer.

    ``min`` / ``max``: the option with the smallest / largest value, where the options are the
    elements of the list parameter ``among`` (values: the list output ``field``, aligned with it),
    the keys of the map output ``field``, or the scalar outputs listed in ``keys``. ``flag``: the
    element of ``among`` whose entry in the list[bool] output ``field`` equals ``want`` (exactly
    one must). Instances where the answer is tied are skipped, so every item has one answer.
    """

    kind: Literal["min", "max", "flag"]
    question: str = Field(min_length=10, description="the question, e.g. 'Which mapping moves the fewest DRAM words?'")
    field: str | None = Field(None, description="the output the answer is read from")
    keys: list[str] | None = Field(None, min_length=2, description="scalar outputs compared with each other")
    among: str | None = Field(None, pattern=IDENT, description="list parameter whose elements are the options")
    valid: str | None = Field(None, description="list[bool] output: only elements marked true are options")
    want: bool = Field(False, description="flag: the value of the flag that marks the answer")

    @model_validator(mode="after")
    def _shape(self) -> "ChoiceSpec":
        if (self.field is None) == (self.keys is None):
            raise ValueError("give exactly one of field and keys")
        if self.kind == "flag" and (self.field is None or self.among is None):
            raise ValueError("a flag question needs field (a list[bool] output) and among (a list parameter)")
        if self.keys is not None and self.among is not None:
            raise ValueError("keys compares outputs with each other: among does not apply")
        return self


class QASpec(_Strict):
    """Q&A mode: one concrete instance per item, drawn from a seed of its own."""

    seed: int = Field(ge=0, description="seed of the Q&A instances (never a code-mode seed)")
    choices: list[ChoiceSpec] = Field(default_factory=list, description="multiple-choice questions")
    choice_seed: str | None = Field(
        None, min_length=1, max_length=128,
        description="seed of the choice items' distractors and order (default: the problem id); kept fixed so "
        "the items stay the same however the problem's files change")


class DomainRule(_Strict):
    """One rule every input of the problem satisfies (the language: grader/packs/domain.py)."""

    rule: str = Field(min_length=1, description="an expression over the parameters, e.g. "
                      "'layer.filter_w <= layer.ifmap_w' or 'all(l.bandwidth > 0 for l in hw.levels)'")
    says: str = Field(min_length=3, description="the rule as one short sentence (shown in the prompt)")

    @field_validator("rule")
    @classmethod
    def _parses(cls, v: str) -> str:
        parse_rule(v)  # DomainSyntaxError is a ValueError: reported with the file and field
        return v


class Replacement(_Strict):
    """One exact search-and-replace: ``old`` must occur exactly once in the text it is applied to."""

    old: str = Field(min_length=1)
    new: str


class SourceSpec(_Strict):
    """Where a candidate module comes from: one file of the problem, or files of the pack joined."""

    file: str | None = Field(None, pattern=r"^[A-Za-z0-9_][A-Za-z0-9_/.-]*\.py$",
                             description="a file of the problem directory")
    assemble: list[str] | None = Field(
        None, min_length=1, description="files of the pack (paths from the pack directory, e.g. "
        "'_kit/engine.py'), joined in this order into one self-contained module")

    @model_validator(mode="after")
    def _one(self) -> "SourceSpec":
        if (self.file is None) == (self.assemble is None):
            raise ValueError("give exactly one of file and assemble")
        for part in self.assemble or []:
            if not re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_/.-]*\.py", part) or ".." in part.split("/"):
                raise ValueError(f"assemble: {part!r} is not a .py path inside the pack")
        return self


class _ChangeSpec(_Strict):
    """A module declared as one change of the problem's solution (shared by variants and partial models).

    Exactly one of ``switches`` (the solution's ``FLAGS`` dict for a solution built with mistake
    switches), ``replace`` (exact search-and-replace edits), ``patch`` (a unified diff of the
    solution) or ``file`` (a whole module in the problem directory, for one that shares nothing
    with the solution).
    """

    name: str | None = Field(None, pattern=IDENT, description="its name (default: its file's stem)")
    switches: dict[str, bool | int | float | str] | None = Field(
        None, min_length=1, description="the FLAGS the solution's mistake switches read")
    replace: list[Replacement] | None = Field(None, min_length=1, description="exact edits of the solution")
    patch: str | None = Field(None, min_length=1, description="a unified diff of the solution")
    file: str | None = Field(None, description="a whole module (each kind says in which folder)")

    @model_validator(mode="after")
    def _one_change(self) -> "_ChangeSpec":
        given = [k for k in ("switches", "replace", "patch", "file") if getattr(self, k) is not None]
        if len(given) != 1:
            raise ValueError("give exactly one of switches, replace, patch and file"
                             + (f" (got {', '.join(given)})" if given else ""))
        if self.name is None and self.file is None:
            raise ValueError("a module declared as a change needs a name")
        return self

    @property
    def label(self) -> str:
        return self.name if self.name is not None else Path(self.file or "").stem


class VariantSpec(_ChangeSpec):
    """A wrong-on-purpose variant: the mistake and the change of the solution that makes it."""

    mistake: str = Field(min_length=10, description="the plausible mistake this variant makes")
    file: str | None = Field(None, pattern=r"^variants/[A-Za-z0-9_]+\.py$", description="a whole module")


class PartialModelSpec(_ChangeSpec):
    """A partial model: an answer that is right on a restricted part of the domain only (one loop per
    dimension, no padding, perfect factors, 32-bit or float arithmetic...), declared like a variant.

    The validator proves that the hidden vectors catch it wherever the domain sample shows it wrong;
    with ``rule``, also that it is right on every domain-sample input the rule accepts.
    """

    restricted: str = Field(min_length=10, description="where it is right, in one sentence "
                            "('right when every dimension has at most one loop per level')")
    rule: str | None = Field(None, min_length=1, description="optional: that restricted domain as a rule (the "
                             "language of [[domain]]); the validator checks the model is right wherever it holds")
    file: str | None = Field(None, pattern=r"^partial_models/[A-Za-z0-9_]+\.py$", description="a whole module")

    @field_validator("rule")
    @classmethod
    def _parses(cls, v: str | None) -> str | None:
        if v is not None:
            parse_rule(v)
        return v


class SamplerSpec(_Strict):
    """The problem's domain sampler: draws inputs from the whole stated domain, independently of the
    generator (it shares no code with it), for the validator's coverage and adequacy checks."""

    name: str = Field(min_length=1, description="key in the pack's trusted SAMPLERS: sample(rng, **options) -> "
                      "{parameter: value}")
    options: dict[str, Any] = Field(default_factory=dict, description="keyword options of the sampler")
    count: int = Field(2000, ge=1, le=100_000, description="inputs the validator draws (default 2000)")


class FeatureSpec(_Strict):
    """A feature the domain allows, which the hidden vectors must exercise (coverage)."""

    name: str = Field(pattern=IDENT, description="a short identifier, e.g. 'outer_overshoot'")
    rule: str = Field(min_length=1, description="when an input exercises the feature: a rule over the parameters "
                      "(the language of [[domain]])")
    says: str = Field(min_length=3, description="the feature as one short sentence")
    min: int = Field(3, ge=1, le=1000, description="hidden vectors that must exercise it (default 3)")

    @field_validator("rule")
    @classmethod
    def _parses(cls, v: str) -> str:
        parse_rule(v)
        return v


class ProblemLimits(_Strict):
    case_cpu_s: float | None = Field(None, gt=0, le=60)
    load_cpu_s: float | None = Field(None, gt=0, le=60)
    memory_mb: int | None = Field(None, ge=64, le=4096)


class BaselineSpec(_ChangeSpec):
    """A baseline search (random, greedy...) of a search problem: the solution with another
    strategy, scored by the validator so the pack's README can say where the scale starts."""

    says: str = Field(min_length=10, description="what the baseline does, in one sentence")
    file: str | None = Field(None, pattern=r"^baselines/[A-Za-z0-9_]+\.py$", description="a whole module")


MAPPING_OUTPUTS = {"best": "float", "proven": "bool", "mapping": "str"}


class ProofSpec(_Strict):
    """Small instances on which the validator proves the reference search optimal by brute force."""

    seed: int = Field(ge=0)
    count: int = Field(3, ge=1, le=50)
    options: dict[str, Any] = Field(default_factory=dict, description="generator options for instances whose "
                                    "space can be enumerated one mapping at a time (merged over the generator's)")


class ScoringSpec(_Strict):
    """``[scoring]``: the answer is a mapping, judged and scored on the host (docs/mapper.md)."""

    kind: Literal["mapping"] = Field(description="mapping: the candidate returns a mapping per hidden instance")
    objective: Literal["energy", "edp", "cycles", "traffic"] = Field(description="what is minimised (the spec defines it)")
    evaluator: str = Field(min_length=1, description="key in the pack's trusted EVALUATORS: (mapping, args...) -> "
                           "{valid, reason, objective, breakdown}")
    tolerance: float = Field(0.001, gt=0, le=0.1, description="an instance is at the best known within this "
                             "relative margin; a sample passes when every instance is")
    max_bytes: int = Field(16384, ge=256, le=1_000_000, description="cap on one returned mapping as compact JSON")
    space: str | None = Field(None, description="key in the pack's trusted SPACES: (args...) -> every mapping of the "
                              "space the search claims to cover, one at a time (the brute-force proof)")
    proof: ProofSpec | None = Field(None, description="the small instances of the brute-force proof (with space)")
    baselines: list[BaselineSpec] = Field(default_factory=list, description="baseline searches the validator scores")
    answer: str | None = Field(None, min_length=1, description="what the function returns, as the prompt names it, "
                               "when it is not the format's mapping (e.g. \"a fused schedule (a dict, as the spec "
                               "defines it)\"); the default names the format's mapping and its loops")
    label: str | None = Field(None, min_length=1, max_length=60, description="what the prompts and reasons call "
                              "the objective when its name alone would mislead (e.g. \"excess traffic\" when the "
                              "spec leaves a compulsory part out); default: the objective's name")

    @property
    def objective_name(self) -> str:
        """The objective as prompts and reasons name it."""
        return self.label or self.objective

    @model_validator(mode="after")
    def _proof(self) -> "ScoringSpec":
        if (self.space is None) != (self.proof is None):
            raise ValueError("give both space and proof (the brute-force proof of the search), or neither")
        return self

    @field_validator("baselines")
    @classmethod
    def _unique_baselines(cls, v: list[BaselineSpec]) -> list[BaselineSpec]:
        _refuse_duplicates([x.label for x in v], "baseline names")
        return v


Difficulty = Literal["easy", "medium", "hard"]


class ProblemFile(_Strict):
    """``problem.toml``: a problem declared as pure data."""

    id: str = Field(pattern=SLUG, description="unique within the pack")
    title: str = Field(min_length=1)
    family: str = Field(pattern=r"^[A-Za-z][A-Za-z0-9_-]*$", description="problem family, e.g. F4")
    difficulty: Difficulty
    version: int = Field(ge=1)
    summary: str = Field(min_length=1, description="what the problem measures, one sentence")
    tags: list[str] = Field(default_factory=list)
    reference: str = Field(min_length=1, description="key in the pack's trusted REFERENCES")
    signature: Signature
    outputs: list[FieldSpec] = Field(min_length=1, description="keys of the returned dict")
    generator: GeneratorSpec
    variants: list[VariantSpec] = Field(default_factory=list)
    partial_models: list[PartialModelSpec] = Field(
        default_factory=list, description="answers right on a restricted domain only; the hidden vectors must "
        "catch each wherever the domain sample shows it wrong")
    sampler: SamplerSpec | None = Field(None, description="the independent domain sampler (coverage and adequacy)")
    features: list[FeatureSpec] = Field(default_factory=list, description="features of the domain the hidden "
                                        "vectors must exercise (besides the automatic int >= 2^31 and 2^53)")
    limits: ProblemLimits = Field(default_factory=ProblemLimits)
    domain: list[DomainRule] = Field(
        default_factory=list, description="what every input satisfies: rules over the parameters, stated in "
        "the prompt and checked by the validator on every hidden and visible input")
    qa: QASpec | None = Field(None, description="Q&A mode: the seed of its instances and its choice questions")
    scoring: ScoringSpec | None = Field(
        None, description="search problems: the answer is a mapping judged on the host; the reference is the "
        "reference search and the outputs are what it records per instance (best, proven, mapping)")
    solution: SourceSpec | None = Field(
        None, description="where the bundled correct solution comes from (default: solution.py of the problem)")
    simulator: str | SourceSpec | None = Field(
        None, description="a bundled brute-force simulator (a candidate written from the spec's semantics): the "
        "validator proves it passes every small hidden vector and runs out of time on every real-size one; a "
        "file of the problem (e.g. 'simulator.py') or { assemble = [...] }",
    )

    @field_validator("outputs")
    @classmethod
    def _unique_outputs(cls, v: list[FieldSpec]) -> list[FieldSpec]:
        _refuse_duplicates([f.name for f in v], "output names")
        return v

    @model_validator(mode="after")
    def _qa(self) -> "ProblemFile":
        if self.qa is None:
            return self
        g = self.generator
        if self.qa.seed in set(g.seeds):
            raise ValueError("qa.seed must differ from the generator's seeds")
        outputs = {f.name: f.parsed for f in self.outputs}
        params = {p.name: p.type for p in self.signature.params}
        for i, c in enumerate(self.qa.choices):
            where = f"qa.choices.{i}"
            for name in ([c.field] if c.field else []) + (c.keys or []) + ([c.valid] if c.valid else []):
                if name not in outputs:
                    raise ValueError(f"{where}: {name!r} is not an output")
            if c.among is not None and params.get(c.among) != "list":
                raise ValueError(f"{where}: among {c.among!r} is not a list parameter")
            t = outputs[c.field] if c.field else None
            if c.kind == "flag" and (t is None or str(t) != "list[bool]"):
                raise ValueError(f"{where}: a flag question reads a list[bool] output")
            if c.kind != "flag" and t is not None:
                if c.among is not None and t.kind != "list":
                    raise ValueError(f"{where}: with among, field must be a list output aligned with it")
                if c.among is None and t.kind != "map":
                    raise ValueError(f"{where}: without among, field must be a map output (its keys are the options)")
            if c.valid is not None and str(outputs[c.valid]) != "list[bool]":
                raise ValueError(f"{where}: valid must name a list[bool] output")
        return self

    @model_validator(mode="after")
    def _mapping_outputs(self) -> "ProblemFile":
        if self.scoring is None:
            return self
        got = {f.name: f.type for f in self.outputs}
        if got != MAPPING_OUTPUTS:
            raise ValueError(f"a [scoring] problem records exactly the outputs {MAPPING_OUTPUTS} (the best known per "
                             f"instance), got {got}")
        if self.qa is not None and self.qa.choices:
            raise ValueError("a [scoring] problem's Q&A items ask for one mapping each: qa.choices do not apply")
        return self

    @field_validator("variants")
    @classmethod
    def _unique_variants(cls, v: list[VariantSpec]) -> list[VariantSpec]:
        _refuse_duplicates([x.label for x in v], "variant names")
        return v

    @field_validator("features")
    @classmethod
    def _unique_features(cls, v: list[FeatureSpec]) -> list[FeatureSpec]:
        _refuse_duplicates([x.name for x in v], "feature names")
        return v

    @model_validator(mode="after")
    def _adequacy(self) -> "ProblemFile":
        _refuse_duplicates([x.label for x in self.variants] + [x.label for x in self.partial_models],
                           "variant and partial model names")
        if (self.features or self.partial_models) and self.sampler is None:
            raise ValueError("features and partial models are measured on the domain sample: declare [sampler]")
        return self

    @field_validator("simulator")
    @classmethod
    def _simulator_file(cls, v: "str | SourceSpec | None") -> "str | SourceSpec | None":
        if isinstance(v, str):
            if not re.fullmatch(r"[A-Za-z0-9_]+\.py", v):
                raise ValueError(f"simulator {v!r}: a .py file of the problem directory")
            return SourceSpec(file=v)
        return v


# ------------------------------------------------------------------------------------------
# loaded objects
# ------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class DeclaredModule:
    """A module declared in problem.toml as a change of the solution (a variant or a partial model);
    its source is materialised from the solution on demand."""

    problem: "Problem"
    index: int
    spec: VariantSpec | PartialModelSpec

    table = "variants"  # the problem.toml table that declares it (for error messages)

    @property
    def name(self) -> str:
        return self.spec.label

    @property
    def source(self) -> str:
        """The module. Raises PackError naming it when its change no longer applies to the solution."""
        problem, spec = self.problem, self.spec
        where = problem.dir / PROBLEM_FILE
        what = {"variants": "variant", "partial_models": "partial model"}.get(self.table, "baseline")
        if spec.file is not None:
            return _read_source(problem.dir / spec.file, where, f"{self.table}.{self.index}.file")
        solution = problem.solution_source
        if solution is None:
            raise PackError(where, f"{what} {self.name!r} changes the solution, but the problem has none",
                            f"{self.table}.{self.index}")
        try:
            return apply_change(solution, switches=spec.switches, replace=spec.replace, patch=spec.patch)
        except ChangeError as exc:
            raise PackError(where, f"{what} {self.name!r} no longer applies to the solution: {exc}",
                            f"{self.table}.{self.index}") from None


@dataclass(frozen=True)
class Variant(DeclaredModule):
    """A wrong-on-purpose variant: the solution with one plausible mistake."""

    spec: VariantSpec

    @property
    def mistake(self) -> str:
        return self.spec.mistake


@dataclass(frozen=True)
class PartialModel(DeclaredModule):
    """An answer right only on a restricted part of the domain (``restricted``, optionally ``rule``)."""

    spec: PartialModelSpec
    table = "partial_models"

    @property
    def restricted(self) -> str:
        return self.spec.restricted

    @property
    def rule(self) -> str | None:
        return self.spec.rule


@dataclass(frozen=True)
class Baseline(DeclaredModule):
    """A baseline search of a search problem (``[[scoring.baselines]]``)."""

    spec: BaselineSpec
    table = "scoring.baselines"

    @property
    def says(self) -> str:
        return self.spec.says


def _read_source(path: Path, where: Path, field: str) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise PackError(where, f"{path.name} not found", field) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise PackError(path, f"cannot read: {exc}") from None


@dataclass(frozen=True, eq=False)
class Problem:
    pack: "Pack"
    dir: Path
    data: ProblemFile
    spec: str

    @property
    def id(self) -> str:
        return self.data.id

    @property
    def qualified_id(self) -> str:
        return f"{self.pack.name}/{self.data.id}"

    @property
    def title(self) -> str:
        return self.data.title

    @property
    def family(self) -> str:
        return self.data.family

    @property
    def difficulty(self) -> str:
        return self.data.difficulty

    @property
    def entry_point(self) -> str:
        return self.data.signature.entry_point

    @property
    def tier(self) -> str:
        """``guided`` or ``model``: the pack's tier."""
        return self.pack.data.tier

    def _source(self, spec: SourceSpec, field: str) -> str:
        where = self.dir / PROBLEM_FILE
        if spec.file is not None:
            return _read_source(self.dir / spec.file, where, f"{field}.file")
        parts = [_read_source(self.pack.dir / part, where, f"{field}.assemble") for part in spec.assemble or []]
        return "\n\n".join(p.strip("\n") for p in parts) + "\n"

    @cached_property
    def solution_source(self) -> str | None:
        """The bundled correct solution (a file of the problem, or assembled from the pack), or None."""
        if self.data.solution is not None:
            return self._source(self.data.solution, "solution")
        path = self.dir / SOLUTION_FILE
        return _read_source(path, self.dir / PROBLEM_FILE, "solution") if path.is_file() else None

    @cached_property
    def simulator_source(self) -> str | None:
        """The bundled brute-force simulator, or None."""
        sim = self.data.simulator
        return self._source(sim, "simulator") if isinstance(sim, SourceSpec) else None

    @property
    def variants(self) -> list[Variant]:
        return [Variant(self, i, v) for i, v in enumerate(self.data.variants)]

    @property
    def baselines(self) -> list[Baseline]:
        """The baseline searches of a search problem (none for a pass/fail problem)."""
        sc = self.data.scoring
        return [Baseline(self, i, b) for i, b in enumerate(sc.baselines)] if sc else []

    @property
    def evaluator_fn(self) -> Callable[..., Any]:
        """A search problem's evaluator, from the EVALUATORS of the pack's trusted code."""
        sc = self.data.scoring
        if sc is None:
            raise PackError(self.dir / PROBLEM_FILE, "the problem declares no [scoring]", "scoring")
        return self.trusted_table_fn("EVALUATORS", sc.evaluator, "scoring.evaluator")

    def trusted_table_fn(self, table: str, key: str, field: str) -> Callable[..., Any]:
        """A function of an optional table of the pack's trusted code (EVALUATORS, SPACES)."""
        found = getattr(self.trusted.module, table, None)
        fn = found.get(key) if isinstance(found, dict) else None
        if not callable(fn):
            known = ", ".join(sorted(found)) if isinstance(found, dict) else f"none (no {table} dict)"
            raise PackError(self.dir / PROBLEM_FILE, f"unknown {table.lower()[:-1]} {key!r} (the pack's trusted "
                            f"code defines: {known})", field)
        return fn

    @property
    def partial_models(self) -> list[PartialModel]:
        return [PartialModel(self, i, m) for i, m in enumerate(self.data.partial_models)]

    @property
    def trusted(self) -> TrustedCode:
        return self.pack.trusted

    @property
    def reference_fn(self) -> Callable[..., Any]:
        """The problem's reference function, from the pack's trusted code."""
        fn = self.trusted.references.get(self.data.reference)
        if fn is None:
            raise PackError(self.dir / PROBLEM_FILE, f"unknown reference {self.data.reference!r} (the pack's "
                            f"trusted code defines: {', '.join(sorted(self.trusted.references)) or 'none'})",
                            "reference")
        return fn

    @property
    def generator_fn(self) -> Callable[..., Any]:
        """The problem's input generator, from the pack's trusted code."""
        fn = self.trusted.generators.get(self.data.generator.name)
        if fn is None:
            raise PackError(self.dir / PROBLEM_FILE, f"unknown generator {self.data.generator.name!r} (the "
                            f"pack's trusted code defines: {', '.join(sorted(self.trusted.generators)) or 'none'})",
                            "generator.name")
        return fn

    @property
    def sampler_fn(self) -> Callable[..., Any]:
        """The problem's domain sampler, from the pack's trusted code (PackError without [sampler])."""
        if self.data.sampler is None:
            raise PackError(self.dir / PROBLEM_FILE, "the problem declares no [sampler]", "sampler")
        fn = self.trusted.samplers.get(self.data.sampler.name)
        if fn is None:
            raise PackError(self.dir / PROBLEM_FILE, f"unknown sampler {self.data.sampler.name!r} (the pack's "
                            f"trusted code defines: {', '.join(sorted(self.trusted.samplers)) or 'none'})",
                            "sampler.name")
        return fn

    @cached_property
    def file_hash(self) -> str:
        """Hash of every file in the problem directory (names and bytes)."""
        h = hashlib.sha256(b"perfgrade-problem-files\0")
        for path in sorted(p for p in self.dir.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
            rel = path.relative_to(self.dir).as_posix()
            h.update(rel.encode() + b"\0" + hashlib.sha256(path.read_bytes()).digest())
        return h.hexdigest()

    @cached_property
    def content_hash(self) -> str:
        """Hash of the problem files plus the source of its reference and generator.

        Any change that can change a hidden vector or the prompt changes this hash: the spec,
        the signature, the generator and its options and seeds, and the reference code.
        """
        from .bundle import canonical_module, source_closure

        h = hashlib.sha256(f"perfgrade-problem-v{FORMAT_VERSION}\0".encode())
        h.update(self.file_hash.encode())
        if self.pack.preamble:
            h.update(b"\0preamble\0" + hashlib.sha256(self.pack.preamble.encode()).digest())
        for what, src in (("solution", self.solution_source), ("simulator", self.simulator_source)):
            if src is not None:
                h.update(f"\0{what}\0".encode() + hashlib.sha256(src.encode()).digest())
        trusted = self.trusted
        for key, registry in ((self.data.reference, trusted.references),
                              (self.data.generator.name, trusted.generators)):
            h.update(b"\0" + key.encode() + b"\0")
            obj = registry.get(key)
            if obj is not None:
                h.update(f"{canonical_module(obj.__module__)}.{obj.__qualname__}".encode())
                for name, src in sorted(source_closure(obj).items()):
                    h.update(canonical_module(name).encode() + b"\0" + hashlib.sha256(src.encode()).digest())
        return h.hexdigest()

    def sandbox_limits(self, base: Any) -> Any:
        """Apply the problem's optional limits on top of a base sandbox Limits."""
        updates = {k: v for k, v in self.data.limits.model_dump().items() if v is not None}
        return base.model_copy(update=updates) if updates else base


@dataclass(frozen=True, eq=False)
class Pack:
    name: str
    dir: Path
    data: PackFile
    problems: tuple[Problem, ...] = ()
    trusted: TrustedCode = None  # type: ignore[assignment]  # set by load_pack

    @property
    def version(self) -> str:
        return self.data.version

    @property
    def tier(self) -> str:
        return self.data.tier

    @cached_property
    def preamble(self) -> str | None:
        """The pack's shared text shown before every spec (its input format), or None."""
        if not self.data.preamble:
            return None
        return (self.dir / self.data.preamble).read_text(encoding="utf-8")

    @cached_property
    def content_hash(self) -> str:
        h = hashlib.sha256(b"perfgrade-pack\0" + self.name.encode() + b"\0" + self.version.encode())
        h.update(hashlib.sha256((self.dir / PACK_FILE).read_bytes()).digest())
        for p in sorted(self.problems, key=lambda p: p.id):
            h.update(b"\0" + p.id.encode() + b"\0" + p.content_hash.encode())
        return h.hexdigest()


# ------------------------------------------------------------------------------------------
# loading
# ------------------------------------------------------------------------------------------

_M = TypeVar("_M", bound=BaseModel)


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as f:
            return tomllib.load(f)
    except FileNotFoundError:
        raise PackError(path, "file not found") from None
    except tomllib.TOMLDecodeError as exc:
        raise PackError(path, f"not valid TOML: {exc}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise PackError(path, f"cannot read: {exc}") from None


def _validation_error(path: Path, exc: ValidationError) -> PackError:
    first = exc.errors()[0]
    loc = ".".join(str(x) for x in first.get("loc", ())) or None
    msg = first.get("msg", "invalid")
    if first.get("type") == "extra_forbidden":
        msg = "unknown field (check the spelling; see problems/problem.schema.json)"
    elif first.get("type") == "missing":
        msg = "required field is missing"
    more = len(exc.errors()) - 1
    if more:
        msg += f" (and {more} more problem{'s' if more > 1 else ''})"
    return PackError(path, msg, loc)


def _load_file(path: Path, model: type[_M]) -> _M:
    """Read a TOML file into a strict model, or raise PackError naming the file and field."""
    raw = _read_toml(path)
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        raise _validation_error(path, exc) from None


def load_pack(pack_dir: Path) -> Pack:
    """Load one pack and all of its problems, or raise PackError."""
    pack_dir = Path(pack_dir)
    pack_path = pack_dir / PACK_FILE
    data = _load_file(pack_path, PackFile)
    if pack_dir.name not in (data.name, data.name.replace("-", "_")):  # my-pack/, or a module my_pack/
        raise PackError(pack_path, f"pack name {data.name!r} differs from its directory {pack_dir.name!r}", "name")
    trusted_dir = pack_dir / data.trusted
    if not trusted_dir.is_dir():
        raise PackError(pack_path, f"the trusted code folder {data.trusted}/ does not exist", "trusted")
    pack = Pack(name=data.name, dir=pack_dir, data=data, trusted=load_trusted(data.name, trusted_dir, pack_path))
    if data.preamble:
        pre = pack_dir / data.preamble
        try:
            text = pre.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise PackError(pack_path, f"preamble file {data.preamble} not found", "preamble") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise PackError(pre, f"cannot read: {exc}") from None
        if not text.strip():
            raise PackError(pre, "the preamble is empty")
    problems = []
    seen: dict[str, Path] = {}
    for sub in sorted(p for p in pack_dir.iterdir() if p.is_dir() and not p.name.startswith((".", "_"))):
        if not (sub / PROBLEM_FILE).exists():
            raise PackError(sub, f"directory has no {PROBLEM_FILE} (every directory of a pack is a problem)")
        problem = load_problem(pack, sub)
        if problem.id in seen:
            raise PackError(sub / PROBLEM_FILE, f"id {problem.id!r} is also used by {seen[problem.id]}", "id")
        seen[problem.id] = sub
        if (problem.data.scoring is not None) != (pack.tier == "search"):
            raise PackError(sub / PROBLEM_FILE, "a problem has a [scoring] table exactly when its pack's tier is "
                            f"search (this pack's tier is {pack.tier})", "scoring")
        problems.append(problem)
    object.__setattr__(pack, "problems", tuple(problems))
    return pack


def load_problem(pack: Pack, problem_dir: Path) -> Problem:
    path = problem_dir / PROBLEM_FILE
    data = _load_file(path, ProblemFile)
    if data.id != problem_dir.name:
        raise PackError(path, f"id {data.id!r} differs from its directory name {problem_dir.name!r}", "id")
    spec_path = problem_dir / SPEC_FILE
    try:
        spec = spec_path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise PackError(spec_path, "file not found (every problem needs a spec.md)") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise PackError(spec_path, f"cannot read: {exc}") from None
    if not spec.strip():
        raise PackError(spec_path, "the specification is empty")
    for i, v in enumerate(data.variants):
        if v.file is not None and not (problem_dir / v.file).is_file():
            raise PackError(path, f"variant file {v.file} not found", f"variants.{i}.file")
    for field, src in (("solution", data.solution), ("simulator", data.simulator)):
        if not isinstance(src, SourceSpec):
            continue
        if src.file is not None and not (problem_dir / src.file).is_file():
            raise PackError(path, f"{field} file {src.file} not found", f"{field}.file")
        for part in src.assemble or []:
            full = (pack.dir / part).resolve()
            if not full.is_relative_to(pack.dir.resolve()) or not full.is_file():
                raise PackError(path, f"{field}: {part} is not a file of the pack", f"{field}.assemble")
    params = [p.name for p in data.signature.params]
    for i, r in enumerate(data.domain):
        unknown = sorted(parse_rule(r.rule).names - set(params))
        if unknown:
            raise PackError(path, f"rule {r.rule!r} reads {', '.join(unknown)}: not a parameter "
                            f"(parameters: {', '.join(params)})", f"domain.{i}.rule")
    if data.simulator and not data.generator.real:
        raise PackError(path, "a simulator needs real-size vectors to run out of time on: add [generator.real]",
                        "simulator")
    for table, specs in (("features", data.features), ("partial_models", data.partial_models)):
        for i, declared in enumerate(specs):
            if declared.rule is None:
                continue
            unknown = sorted(parse_rule(declared.rule).names - set(params))
            if unknown:
                raise PackError(path, f"rule {declared.rule!r} reads {', '.join(unknown)}: not a parameter "
                                f"(parameters: {', '.join(params)})", f"{table}.{i}.rule")
    for i, m in enumerate(data.partial_models):
        if m.file is not None and not (problem_dir / m.file).is_file():
            raise PackError(path, f"partial model file {m.file} not found", f"partial_models.{i}.file")
    for folder, specs, table in ((VARIANTS_DIR, data.variants, "[[variants]]"),
                                 (PARTIAL_MODELS_DIR, data.partial_models, "[[partial_models]]")):
        if (problem_dir / folder).is_dir():
            declared = {v.file for v in specs if v.file is not None}
            for f in sorted((problem_dir / folder).glob("*.py")):
                if f"{folder}/{f.name}" not in declared:
                    raise PackError(f, f"this file is not declared in problem.toml {table}")
    return Problem(pack=pack, dir=problem_dir, data=data, spec=spec)


def entry_point_roots() -> list[Path]:
    """Pack directories of installed packages (the ``perfgrade.packs`` entry point group).

    An entry point names a module (its folder is the pack), a path (str or Path), or a
    function returning one: ``[project.entry-points."perfgrade.packs"] my-pack = "my_pack"``.
    """
    roots: list[Path] = []
    for ep in sorted(metadata.entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name):
        where = Path(f"<entry point {ep.name} = {ep.value} ({ENTRY_POINT_GROUP})>")
        try:
            obj = ep.load()
            if callable(obj) and not isinstance(obj, type):
                obj = obj()
        except Exception as exc:  # noqa: BLE001 - a broken plugin is named, never skipped
            raise PackError(where, f"cannot load: {type(exc).__name__}: {exc}") from exc
        if isinstance(obj, (str, os.PathLike)):
            path = Path(obj)
        elif getattr(obj, "__path__", None):
            path = Path(list(obj.__path__)[0])
        elif getattr(obj, "__file__", None):
            path = Path(obj.__file__).parent
        else:
            raise PackError(where, f"gives {type(obj).__name__}: expected a pack directory, a module or a function "
                            "returning a directory")
        if not path.is_dir():
            raise PackError(where, f"{path} is not a directory")
        roots.append(path)
    return roots


def default_pack_roots() -> list[Path]:
    """Where packs are found: PERFGRADE_PACKS, installed packs (entry points), then the built-in ones."""
    roots: list[Path] = []
    env = os.environ.get(ENV_PACKS)
    if env:
        roots.extend(Path(p) for p in env.split(os.pathsep) if p)
    roots.extend(entry_point_roots())
    builtin = Path(__file__).resolve().parents[2] / "problems"
    if builtin.is_dir():
        roots.append(builtin)
    return roots


def _pack_dirs(root: Path) -> list[Path]:
    if (root / PACK_FILE).is_file():
        return [root]
    if not root.is_dir():
        raise PackError(root, "no such pack directory")
    return sorted(p for p in root.iterdir() if p.is_dir() and (p / PACK_FILE).is_file())


class Catalog:
    """Every pack found under the given roots (a pack directory or a directory of packs)."""

    def __init__(self, roots: list[Path] | None = None) -> None:
        self.roots = [Path(r) for r in (roots if roots is not None else default_pack_roots())]
        packs: dict[str, Pack] = {}
        for root in self.roots:
            for d in _pack_dirs(root):
                pack = load_pack(d)
                if pack.name in packs:
                    if packs[pack.name].dir.resolve() == d.resolve():
                        continue
                    raise PackError(d / PACK_FILE, f"pack {pack.name!r} is also defined in {packs[pack.name].dir}", "name")
                packs[pack.name] = pack
        self.packs = packs

    def problems(self, pack: str | None = None) -> list[Problem]:
        if pack is not None:
            return list(self.pack(pack).problems)
        return [p for pk in self.packs.values() for p in pk.problems]

    def pack(self, name: str) -> Pack:
        try:
            return self.packs[name]
        except KeyError:
            known = ", ".join(sorted(self.packs)) or "none"
            raise ProblemNotFound(f"no pack named {name!r} (known packs: {known})") from None

    def find(self, ident: str) -> Problem:
        """Look a problem up by ``pack/id`` or by a bare id that is unique."""
        if "/" in ident:
            pack_name, _, pid = ident.partition("/")
            for p in self.pack(pack_name).problems:
                if p.id == pid:
                    return p
            raise ProblemNotFound(f"pack {pack_name!r} has no problem {pid!r}")
        hits = [p for p in self.problems() if p.id == ident]
        if len(hits) == 1:
            return hits[0]
        if len(hits) > 1:
            raise ProblemNotFound(f"{ident!r} is ambiguous: " + ", ".join(p.qualified_id for p in hits))
        close = [p.qualified_id for p in self.problems() if ident in p.id][:5]
        hint = f" (did you mean {', '.join(close)}?)" if close else ""
        raise ProblemNotFound(f"no problem {ident!r}{hint}")

    def select(self, pack: str | None = None, ids: list[str] | None = None) -> list[Problem]:
        if ids:
            chosen = [self.find(i if "/" in i or pack is None else f"{pack}/{i}") for i in ids]
            return list(dict.fromkeys(chosen))
        return self.problems(pack)


def write_schemas(directory: Path) -> list[Path]:
    """Write the JSON schemas of pack.toml and problem.toml (for editors)."""
    out = []
    for name, model in (("pack.schema.json", PackFile), ("problem.schema.json", ProblemFile)):
        path = directory / name
        schema = model.model_json_schema()
        schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
        schema["$id"] = name
        path.write_text(json.dumps(schema, indent=2, sort_keys=True) + "\n")
        out.append(path)
    return out
