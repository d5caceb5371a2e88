"""The input domain of a problem: rules over its arguments in a small, safe expression language.

A problem states, in ``problem.toml``, what every input it is tested on satisfies::

    [[domain]]
    rule = "layer.filter_w <= layer.ifmap_w and layer.filter_h <= layer.ifmap_h"
    says = "filters are never larger than the input"

The prompt shows both; ``problems validate`` proves every hidden and visible input satisfies every
rule. A rule is one Python *expression*, parsed with :mod:`ast` and checked against a whitelist at
load time, then evaluated by the small interpreter below over the plain JSON arguments. Nothing is
ever passed to ``eval``, no attribute of a Python object is ever read, and no function outside the
list below can be called. The language:

==============  ==============================================================================
names           a parameter of the signature (``layer``, ``levels``...) or a variable bound by a
                quantifier (``for x in ...``)
``a.b``         the key ``"b"`` of the dict ``a`` (the same as ``a["b"]``)
``a[i]``        a list element (negative indices count from the end), ``a["k"]`` a dict value,
                ``a[i:j]`` a slice of a list
literals        integers, floats, strings, ``True``, ``False``, ``None``, lists ``[1, 2]``
arithmetic      ``+ - * / // %`` and unary ``-`` on numbers only (never on strings or lists)
comparisons     ``< <= > >= == !=`` (chains such as ``1 <= x <= 4`` too), ``in`` / ``not in``
                (element of a list, key of a dict, substring), ``x is None``, ``x is not None``
logic           ``and``, ``or``, ``not`` on ``True`` / ``False`` only, short-circuit
quantifiers     ``all(x.bandwidth > 0 for x in levels)``, ``any(...)``; comprehensions may have
                several ``for`` clauses, ``if`` filters and ``for k, v in d.items()``, and may be
                given to any function below, or written as a list ``[... for ...]``
functions       ``all any len sum min max prod sorted set range abs``
methods         ``d.keys()``, ``d.values()``, ``d.items()`` of a dict
==============  ==============================================================================

Examples::

    array.rows * array.cols >= 2
    all(l.read_bandwidth >= 1 and l.write_bandwidth >= 1 for l in levels)
    all(gemm[d] % prod(lv.temporal[d] for lv in levels) == 0 for d in ["M", "N", "K"])
    sorted(x.dim for x in dataflow) == sorted(dims)

A rule evaluates to ``True`` or ``False``; anything else (a number, a missing key, a division by
zero, comparing a string with a number) is an :class:`DomainEvalError`, which the validator reports
as a broken rule. Evaluation is bounded (steps and range lengths), so a rule always finishes fast.

Errors: :class:`DomainSyntaxError` (a rule that does not parse or uses what the language does not
have; raised at load time) and :class:`DomainEvalError` (a rule that cannot be evaluated on an
input), both ``ValueError`` subclasses.
"""

from __future__ import annotations

import ast
import functools
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

FUNCTIONS = ("all", "any", "len", "sum", "min", "max", "prod", "sorted", "set", "range", "abs")
METHODS = ("keys", "values", "items")
MAX_STEPS = 1_000_000
MAX_RANGE = 100_000
MAX_RULE_CHARS = 2000

_BINOPS = (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.Mod)
_CMPOPS = (ast.Lt, ast.LtE, ast.Gt, ast.GtE, ast.Eq, ast.NotEq, ast.In, ast.NotIn, ast.Is, ast.IsNot)


class DomainSyntaxError(ValueError):
    """A rule that does not parse, or uses syntax the rule language does not have."""


class DomainEvalError(ValueError):
    """A rule that cannot be evaluated on an input (missing key, wrong type, division by zero...)."""


@dataclass(frozen=True)
class Rule:
    """A parsed rule: its text, its syntax tree and the free names it reads."""

    text: str
    tree: ast.Expression
    names: frozenset[str]


# ------------------------------------------------------------------------------------------
# parsing: a whitelist walk over the syntax tree
# ------------------------------------------------------------------------------------------

@lru_cache(maxsize=4096)
def parse_rule(text: str) -> Rule:
    """Parse and check a rule, or raise DomainSyntaxError saying what is wrong."""
    if len(text) > MAX_RULE_CHARS:
        raise DomainSyntaxError(f"rule is longer than {MAX_RULE_CHARS} characters")
    if not text.strip():
        raise DomainSyntaxError("rule is empty")
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as exc:
        raise DomainSyntaxError(f"rule {text!r} does not parse: {exc.msg}") from None
    names: set[str] = set()
    try:
        _check(tree.body, frozenset(), names)
    except DomainSyntaxError as exc:
        raise DomainSyntaxError(f"rule {text!r}: {exc}") from None
    return Rule(text, tree, frozenset(names))


def _refuse(node: ast.AST, why: str) -> DomainSyntaxError:
    return DomainSyntaxError(f"{why} (column {getattr(node, 'col_offset', 0) + 1})")


def _check(node: ast.AST, bound: frozenset[str], free: set[str]) -> None:
    """Raise DomainSyntaxError unless ``node`` is in the language; collect its free names."""
    if isinstance(node, ast.Constant):
        if node.value is not None and type(node.value) not in (bool, int, float, str):
            raise _refuse(node, f"constant {node.value!r} is not allowed (numbers, strings, True, False, None)")
    elif isinstance(node, ast.Name):
        if node.id.startswith("_"):
            raise _refuse(node, f"name {node.id!r} is not allowed (names starting with _)")
        if node.id in FUNCTIONS and node.id not in bound:
            raise _refuse(node, f"{node.id} is a function: call it, as in {node.id}(...)")
        if node.id not in bound:
            free.add(node.id)
    elif isinstance(node, ast.Attribute):
        if node.attr.startswith("_"):
            raise _refuse(node, f"attribute {node.attr!r} is not allowed (a.b reads the key b of a dict; "
                          "keys starting with _ cannot be read this way)")
        _check(node.value, bound, free)
    elif isinstance(node, ast.Subscript):
        _check(node.value, bound, free)
        s = node.slice
        if isinstance(s, ast.Slice):
            if s.step is not None:
                raise _refuse(node, "slices take no step (a[i:j] only)")
            for part in (s.lower, s.upper):
                if part is not None:
                    _check(part, bound, free)
        else:
            _check(s, bound, free)
    elif isinstance(node, ast.List):
        for e in node.elts:
            _check(e, bound, free)
    elif isinstance(node, ast.BoolOp):
        for v in node.values:
            _check(v, bound, free)
    elif isinstance(node, ast.UnaryOp):
        if not isinstance(node.op, (ast.Not, ast.USub, ast.UAdd)):
            raise _refuse(node, f"operator {type(node.op).__name__} is not allowed")
        _check(node.operand, bound, free)
    elif isinstance(node, ast.BinOp):
        if not isinstance(node.op, _BINOPS):
            raise _refuse(node, f"operator {type(node.op).__name__} is not allowed (+ - * / // % only)")
        _check(node.left, bound, free)
        _check(node.right, bound, free)
    elif isinstance(node, ast.Compare):
        for op, right in zip(node.ops, node.comparators):
            if not isinstance(op, _CMPOPS):
                raise _refuse(node, f"comparison {type(op).__name__} is not allowed")
            if isinstance(op, (ast.Is, ast.IsNot)) and not (isinstance(right, ast.Constant) and right.value is None):
                raise _refuse(node, "'is' and 'is not' only compare with None")
        _check(node.left, bound, free)
        for right in node.comparators:
            _check(right, bound, free)
    elif isinstance(node, ast.Call):
        if node.keywords:
            raise _refuse(node, "keyword arguments are not allowed")
        if any(isinstance(a, ast.Starred) for a in node.args):
            raise _refuse(node, "*arguments are not allowed")
        f = node.func
        if isinstance(f, ast.Name) and f.id in FUNCTIONS and f.id not in bound:
            if not node.args:
                raise _refuse(node, f"{f.id}() needs an argument")
        elif isinstance(f, ast.Attribute) and f.attr in METHODS:
            if node.args:
                raise _refuse(node, f".{f.attr}() takes no arguments")
            _check(f.value, bound, free)
        else:
            what = f.id if isinstance(f, ast.Name) else (f".{f.attr}()" if isinstance(f, ast.Attribute) else "this")
            raise _refuse(node, f"cannot call {what}: the functions are {', '.join(FUNCTIONS)} and the "
                          f"methods .{'(), .'.join(METHODS)}()")
        for a in node.args:
            _check(a, bound, free)
    elif isinstance(node, (ast.GeneratorExp, ast.ListComp)):
        inner = bound
        for gen in node.generators:
            if gen.is_async:
                raise _refuse(node, "async comprehensions are not allowed")
            _check(gen.iter, inner, free)
            inner = inner | _targets(gen.target)
            for cond in gen.ifs:
                _check(cond, inner, free)
        _check(node.elt, inner, free)
    else:
        raise _refuse(node, f"{type(node).__name__} is not part of the rule language")


def _targets(target: ast.AST) -> frozenset[str]:
    """The names a ``for`` clause binds: one name, or a tuple of names (``for k, v in ...``)."""
    if isinstance(target, ast.Name) and not target.id.startswith("_") and target.id not in FUNCTIONS:
        return frozenset([target.id])
    if isinstance(target, ast.Tuple) and all(isinstance(e, ast.Name) for e in target.elts):
        names = [e.id for e in target.elts]  # type: ignore[attr-defined]
        if not any(n.startswith("_") or n in FUNCTIONS for n in names):
            return frozenset(names)
    raise _refuse(target, "a for clause binds a name or names (for x in ..., for k, v in ...)")


# ------------------------------------------------------------------------------------------
# evaluation: a tree-walking interpreter over plain JSON values
# ------------------------------------------------------------------------------------------

def evaluate(rule: Rule | str, env: Mapping[str, Any]) -> bool:
    """Evaluate a rule on the arguments ``env`` (name -> plain JSON value).

    Returns True or False; raises DomainEvalError when the rule cannot be evaluated."""
    if isinstance(rule, str):
        rule = parse_rule(rule)
    ev = _Evaluator(env)
    try:
        value = ev.eval(rule.tree.body, {})
    except RecursionError:
        raise DomainEvalError("the rule nests too deeply") from None
    except (TypeError, ValueError, OverflowError) as exc:
        if isinstance(exc, DomainEvalError):
            raise
        raise DomainEvalError(f"{type(exc).__name__}: {exc}") from None
    if type(value) is not bool:
        raise DomainEvalError(f"the rule gives {_show(value)}, not True or False")
    return value


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _kind(value: Any) -> str:
    if value is None:
        return "None"
    return {bool: "a boolean", int: "an integer", float: "a number", str: "a string", list: "a list",
            dict: "a dict", tuple: "a pair", set: "a set"}.get(type(value), type(value).__name__)


def _number(value: Any) -> bool:
    return type(value) in (int, float)


@functools.lru_cache(maxsize=8192)
def _text(node: ast.AST) -> str:
    """A node's source text, for messages: unparsed once per node (rules are evaluated on
    thousands of inputs, and most evaluations raise nothing)."""
    return ast.unparse(node)


class _Evaluator:
    def __init__(self, env: Mapping[str, Any]) -> None:
        self.env = env
        self.steps = 0

    def eval(self, node: ast.AST, local: dict[str, Any]) -> Any:
        self.steps += 1
        if self.steps > MAX_STEPS:
            raise DomainEvalError(f"the rule takes more than {MAX_STEPS} steps")
        method = getattr(self, "_" + type(node).__name__, None)
        if method is None:  # parse_rule refuses these; a hand-made tree might not
            raise DomainEvalError(f"{type(node).__name__} is not part of the rule language")
        return method(node, local)

    # atoms -------------------------------------------------------------------------------
    def _Constant(self, node: ast.Constant, local: dict[str, Any]) -> Any:
        return node.value

    def _Name(self, node: ast.Name, local: dict[str, Any]) -> Any:
        if node.id in local:
            return local[node.id]
        if node.id in self.env:
            return self.env[node.id]
        raise DomainEvalError(f"unknown name {node.id!r}")

    def _List(self, node: ast.List, local: dict[str, Any]) -> Any:
        return [self.eval(e, local) for e in node.elts]

    def _Attribute(self, node: ast.Attribute, local: dict[str, Any]) -> Any:
        obj = self.eval(node.value, local)
        return self._key(obj, node.attr, _text(node))

    def _key(self, obj: Any, key: Any, where: str) -> Any:
        if not isinstance(obj, dict):
            raise DomainEvalError(f"{where}: {_kind(obj)} has no keys")
        if key not in obj:
            raise DomainEvalError(f"{where}: no key {key!r}")
        return obj[key]

    def _Subscript(self, node: ast.Subscript, local: dict[str, Any]) -> Any:
        obj = self.eval(node.value, local)
        where = _text(node)
        if isinstance(node.slice, ast.Slice):
            if not isinstance(obj, list):
                raise DomainEvalError(f"{where}: only a list can be sliced, not {_kind(obj)}")
            bounds = []
            for part in (node.slice.lower, node.slice.upper):
                b = None if part is None else self.eval(part, local)
                if b is not None and type(b) is not int:
                    raise DomainEvalError(f"{where}: a slice bound must be an integer")
                bounds.append(b)
            return obj[bounds[0]:bounds[1]]
        index = self.eval(node.slice, local)
        if isinstance(obj, (list, tuple)):
            if type(index) is not int:
                raise DomainEvalError(f"{where}: a list index must be an integer, not {_kind(index)}")
            if not -len(obj) <= index < len(obj):
                raise DomainEvalError(f"{where}: index {index} is out of range (length {len(obj)})")
            return obj[index]
        if isinstance(obj, dict):
            return self._key(obj, index, where)
        raise DomainEvalError(f"{where}: {_kind(obj)} cannot be indexed")

    # operators ---------------------------------------------------------------------------
    def _BoolOp(self, node: ast.BoolOp, local: dict[str, Any]) -> Any:
        want = isinstance(node.op, ast.Or)  # the value that decides: True for or, False for and
        for v in node.values:
            x = self.eval(v, local)
            if type(x) is not bool:
                raise DomainEvalError(f"{_text(v)}: 'and' / 'or' need True or False, got {_kind(x)}")
            if x is want:
                return want
        return not want

    def _UnaryOp(self, node: ast.UnaryOp, local: dict[str, Any]) -> Any:
        x = self.eval(node.operand, local)
        if isinstance(node.op, ast.Not):
            if type(x) is not bool:
                raise DomainEvalError(f"{_text(node)}: 'not' needs True or False, got {_kind(x)}")
            return not x
        if not _number(x):
            raise DomainEvalError(f"{_text(node)}: a sign needs a number, got {_kind(x)}")
        return -x if isinstance(node.op, ast.USub) else x

    def _BinOp(self, node: ast.BinOp, local: dict[str, Any]) -> Any:
        a, b = self.eval(node.left, local), self.eval(node.right, local)
        if not (_number(a) and _number(b)):
            raise DomainEvalError(f"{_text(node)}: arithmetic needs numbers, got {_kind(a)} and {_kind(b)}")
        op = node.op
        try:
            if isinstance(op, ast.Add):
                return a + b
            if isinstance(op, ast.Sub):
                return a - b
            if isinstance(op, ast.Mult):
                return a * b
            if isinstance(op, ast.Div):
                return a / b
            if isinstance(op, ast.FloorDiv):
                return a // b
            return a % b
        except ZeroDivisionError:
            raise DomainEvalError(f"{_text(node)}: division by zero") from None
        except OverflowError:
            raise DomainEvalError(f"{_text(node)}: the number is too large") from None

    def _Compare(self, node: ast.Compare, local: dict[str, Any]) -> Any:
        left = self.eval(node.left, local)
        for op, right_node in zip(node.ops, node.comparators):
            right = self.eval(right_node, local)
            if not self._compare(op, left, right, node):
                return False
            left = right
        return True

    def _compare(self, op: ast.cmpop, a: Any, b: Any, node: ast.AST) -> bool:
        if isinstance(op, ast.Is):
            return a is None
        if isinstance(op, ast.IsNot):
            return a is not None
        if isinstance(op, ast.Eq):
            return bool(a == b)
        if isinstance(op, ast.NotEq):
            return bool(a != b)
        if isinstance(op, (ast.In, ast.NotIn)):
            if isinstance(b, str):
                if not isinstance(a, str):
                    raise DomainEvalError(f"{_text(node)}: only a string can be in a string")
                found = a in b
            elif isinstance(b, (list, tuple, dict, set)):
                try:
                    found = a in b
                except TypeError:
                    raise DomainEvalError(f"{_text(node)}: {_kind(a)} cannot be a key") from None
            else:
                raise DomainEvalError(f"{_text(node)}: 'in' needs a list, dict or string, got {_kind(b)}")
            return found if isinstance(op, ast.In) else not found
        if (_number(a) and _number(b)) or (type(a) is str and type(b) is str):
            if isinstance(op, ast.Lt):
                return a < b
            if isinstance(op, ast.LtE):
                return a <= b
            if isinstance(op, ast.Gt):
                return a > b
            return a >= b
        raise DomainEvalError(f"{_text(node)}: cannot order {_kind(a)} and {_kind(b)}")

    # comprehensions and calls ------------------------------------------------------------
    def _items(self, value: Any, where: str) -> list[Any]:
        if isinstance(value, (list, tuple, str)):
            return list(value)
        if isinstance(value, dict):
            return list(value)
        if isinstance(value, set):
            return sorted(value, key=repr)  # a fixed order, whatever the hash seed
        raise DomainEvalError(f"{where}: cannot iterate over {_kind(value)}")

    def _comprehension(self, node: ast.GeneratorExp | ast.ListComp, local: dict[str, Any]) -> list[Any]:
        out: list[Any] = []

        def run(i: int, scope: dict[str, Any]) -> None:
            if i == len(node.generators):
                out.append(self.eval(node.elt, scope))
                return
            gen = node.generators[i]
            for item in self._items(self.eval(gen.iter, scope), _text(gen.iter)):
                inner = dict(scope)
                self._bind(gen.target, item, inner)
                ok = True
                for cond in gen.ifs:
                    c = self.eval(cond, inner)
                    if type(c) is not bool:
                        raise DomainEvalError(f"{_text(cond)}: an 'if' filter needs True or False")
                    if not c:
                        ok = False
                        break
                if ok:
                    run(i + 1, inner)

        run(0, local)
        return out

    def _bind(self, target: ast.AST, item: Any, scope: dict[str, Any]) -> None:
        if isinstance(target, ast.Name):
            scope[target.id] = item
            return
        assert isinstance(target, ast.Tuple)
        if not isinstance(item, (list, tuple)) or len(item) != len(target.elts):
            raise DomainEvalError(f"cannot unpack {_kind(item)} into {_text(target)}")
        for e, x in zip(target.elts, item):
            scope[e.id] = x  # type: ignore[attr-defined]

    _GeneratorExp = _comprehension
    _ListComp = _comprehension

    def _Call(self, node: ast.Call, local: dict[str, Any]) -> Any:
        f = node.func
        where = _text(node)
        if isinstance(f, ast.Attribute):
            obj = self.eval(f.value, local)
            if not isinstance(obj, dict):
                raise DomainEvalError(f"{where}: .{f.attr}() needs a dict, got {_kind(obj)}")
            if f.attr == "keys":
                return list(obj.keys())
            if f.attr == "values":
                return list(obj.values())
            return [(k, v) for k, v in obj.items()]
        assert isinstance(f, ast.Name)
        args = [self.eval(a, local) for a in node.args]
        return _call(f.id, args, where)


def _seq(args: Sequence[Any], where: str, name: str) -> list[Any]:
    if len(args) != 1:
        raise DomainEvalError(f"{where}: {name}() takes one list")
    value = args[0]
    if isinstance(value, (list, tuple, str)):
        return list(value)
    if isinstance(value, dict):
        return list(value)
    if isinstance(value, set):
        return sorted(value, key=repr)
    raise DomainEvalError(f"{where}: {name}() needs a list, dict or string, got {_kind(value)}")


def _numbers(values: Iterable[Any], where: str, name: str) -> list[Any]:
    out = list(values)
    if not all(_number(v) for v in out):
        raise DomainEvalError(f"{where}: {name}() needs numbers")
    return out


def _call(name: str, args: list[Any], where: str) -> Any:
    if name in ("all", "any"):
        values = _seq(args, where, name)
        if not all(type(v) is bool for v in values):
            raise DomainEvalError(f"{where}: {name}() needs True or False for every element")
        return all(values) if name == "all" else any(values)
    if name == "len":
        if len(args) != 1 or not isinstance(args[0], (list, tuple, str, dict, set)):
            raise DomainEvalError(f"{where}: len() needs one list, dict or string")
        return len(args[0])
    if name == "sum":
        return sum(_numbers(_seq(args, where, name), where, name))
    if name == "prod":
        try:
            return math.prod(_numbers(_seq(args, where, name), where, name))
        except OverflowError:
            raise DomainEvalError(f"{where}: the number is too large") from None
    if name in ("min", "max"):
        values = _seq(args, where, name) if len(args) == 1 else list(args)
        if not values:
            raise DomainEvalError(f"{where}: {name}() of nothing")
        if not (all(_number(v) for v in values) or all(type(v) is str for v in values)):
            raise DomainEvalError(f"{where}: {name}() needs numbers or strings")
        return min(values) if name == "min" else max(values)
    if name == "sorted":
        values = _seq(args, where, name)
        if not (all(_number(v) for v in values) or all(type(v) is str for v in values)):
            raise DomainEvalError(f"{where}: sorted() needs numbers or strings")
        return sorted(values)
    if name == "set":
        try:
            return set(_seq(args, where, name))
        except TypeError:
            raise DomainEvalError(f"{where}: set() needs numbers or strings") from None
    if name == "range":
        if not 1 <= len(args) <= 3 or not all(type(a) is int for a in args):
            raise DomainEvalError(f"{where}: range() takes one to three integers")
        if len(args) == 3 and args[2] == 0:
            raise DomainEvalError(f"{where}: range() step is zero")
        r = range(*args)
        if len(r) > MAX_RANGE:
            raise DomainEvalError(f"{where}: range() longer than {MAX_RANGE}")
        return list(r)
    if name == "abs":
        if len(args) != 1 or not _number(args[0]):
            raise DomainEvalError(f"{where}: abs() needs one number")
        return abs(args[0])
    raise DomainEvalError(f"{where}: unknown function {name}")


# ------------------------------------------------------------------------------------------
# checking inputs
# ------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Violation:
    """An input outside the domain: the rule it breaks (by index), and why."""

    index: int
    rule: str
    says: str
    error: str | None = None  # set when the rule could not be evaluated

    def describe(self) -> str:
        what = f"rule {self.index + 1} `{self.rule}` ({self.says})"
        return f"cannot evaluate {what}: {self.error}" if self.error else f"breaks {what}"


def violations(rules: Sequence[Any], env: Mapping[str, Any]) -> list[Violation]:
    """The rules (objects with ``rule`` and ``says``) that the arguments ``env`` break."""
    out = []
    for i, r in enumerate(rules):
        try:
            ok = evaluate(r.rule, env)
        except DomainEvalError as exc:
            out.append(Violation(i, r.rule, r.says, str(exc)))
            continue
        if not ok:
            out.append(Violation(i, r.rule, r.says))
    return out
