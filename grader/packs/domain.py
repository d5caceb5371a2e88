"""The input domain of a problem: rules over its arguments in a small, safe expression language.

A problem states, in ``problem.toml``, what every input it is tested on satisfies::

    [[domain]]
    rule = "layer.filter_w <= layer.ifmap_w and layer.filter_h <= layer.ifmap_h"
    says = "filters are never larger than the input"

The prompt shows both; ``problems validate`` proves every hidden and visible input satisfies every
rule. A rule is one Python *expression*, parsed with :mod:`ast` and checked against a whitelist at
load time, then compiled once into a tree of small closures (below) that evaluate it over the plain
JSON arguments. Nothing is ever passed to ``eval``, no attribute of a Python object is ever read,
and no function outside the list below can be called. The language:

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
import math
import operator
from collections.abc import Callable, Iterable, Mapping, Sequence
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
# evaluation: each rule compiled once into a tree of closures over plain JSON values
# ------------------------------------------------------------------------------------------

def evaluate(rule: Rule | str, env: Mapping[str, Any]) -> bool:
    """Evaluate a rule on the arguments ``env`` (name -> plain JSON value).

    Returns True or False; raises DomainEvalError when the rule cannot be evaluated."""
    if isinstance(rule, str):
        rule = parse_rule(rule)
    ctx = _Ctx(env)
    try:
        value = _program(rule)(ctx, {})
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


def _text(node: ast.AST) -> str:
    """A node's source text, for messages (unparsed once, when the rule is compiled)."""
    return ast.unparse(node)


class _Ctx:
    """One evaluation: the arguments, and the steps taken so far (every node evaluated is one)."""

    __slots__ = ("env", "steps")

    def __init__(self, env: Mapping[str, Any]) -> None:
        self.env = env
        self.steps = 0


def _tick(ctx: _Ctx) -> None:
    ctx.steps += 1
    if ctx.steps > MAX_STEPS:
        raise DomainEvalError(f"the rule takes more than {MAX_STEPS} steps")


@lru_cache(maxsize=4096)
def _program(rule: Rule) -> Callable[[_Ctx, dict[str, Any]], Any]:
    """The rule's tree compiled into closures ``f(ctx, local)``, once per rule: the same values,
    errors and step counts as walking the tree on every input, without dispatching on node types
    and operators again for each of the thousands of inputs a rule is evaluated on."""
    return _compile(rule.tree.body)


def _compile(node: ast.AST) -> Callable[[_Ctx, dict[str, Any]], Any]:
    build = _BUILDERS.get(type(node))
    if build is not None:
        return build(node)
    what = type(node).__name__

    def refused(ctx: _Ctx, local: dict[str, Any]) -> Any:  # parse_rule refuses these; a hand-made tree might not
        _tick(ctx)
        raise DomainEvalError(f"{what} is not part of the rule language")
    return refused


# atoms -----------------------------------------------------------------------------------

def _c_constant(node: ast.Constant):
    value = node.value

    def f(ctx, local):
        _tick(ctx)
        return value
    return f


def _c_name(node: ast.Name):
    name = node.id

    def f(ctx, local):
        _tick(ctx)
        if name in local:
            return local[name]
        if name in ctx.env:
            return ctx.env[name]
        raise DomainEvalError(f"unknown name {name!r}")
    return f


def _c_list(node: ast.List):
    elts = [_compile(e) for e in node.elts]

    def f(ctx, local):
        _tick(ctx)
        return [e(ctx, local) for e in elts]
    return f


def _key(obj: Any, key: Any, where: str) -> Any:
    if not isinstance(obj, dict):
        raise DomainEvalError(f"{where}: {_kind(obj)} has no keys")
    if key not in obj:
        raise DomainEvalError(f"{where}: no key {key!r}")
    return obj[key]


def _c_attribute(node: ast.Attribute):
    value, attr, where = _compile(node.value), node.attr, _text(node)

    def f(ctx, local):
        _tick(ctx)
        return _key(value(ctx, local), attr, where)
    return f


def _c_subscript(node: ast.Subscript):
    value, where = _compile(node.value), _text(node)
    if isinstance(node.slice, ast.Slice):
        parts = [None if part is None else _compile(part) for part in (node.slice.lower, node.slice.upper)]

        def sliced(ctx, local):
            _tick(ctx)
            obj = value(ctx, local)
            if not isinstance(obj, list):
                raise DomainEvalError(f"{where}: only a list can be sliced, not {_kind(obj)}")
            bounds = []
            for part in parts:
                b = None if part is None else part(ctx, local)
                if b is not None and type(b) is not int:
                    raise DomainEvalError(f"{where}: a slice bound must be an integer")
                bounds.append(b)
            return obj[bounds[0]:bounds[1]]
        return sliced
    index_of = _compile(node.slice)

    def indexed(ctx, local):
        _tick(ctx)
        obj = value(ctx, local)
        index = index_of(ctx, local)
        if isinstance(obj, (list, tuple)):
            if type(index) is not int:
                raise DomainEvalError(f"{where}: a list index must be an integer, not {_kind(index)}")
            if not -len(obj) <= index < len(obj):
                raise DomainEvalError(f"{where}: index {index} is out of range (length {len(obj)})")
            return obj[index]
        if isinstance(obj, dict):
            return _key(obj, index, where)
        raise DomainEvalError(f"{where}: {_kind(obj)} cannot be indexed")
    return indexed


# operators -------------------------------------------------------------------------------

def _c_boolop(node: ast.BoolOp):
    want = isinstance(node.op, ast.Or)  # the value that decides: True for or, False for and
    values = [(_compile(v), _text(v)) for v in node.values]

    def f(ctx, local):
        _tick(ctx)
        for v, text in values:
            x = v(ctx, local)
            if type(x) is not bool:
                raise DomainEvalError(f"{text}: 'and' / 'or' need True or False, got {_kind(x)}")
            if x is want:
                return want
        return not want
    return f


def _c_unaryop(node: ast.UnaryOp):
    operand, where = _compile(node.operand), _text(node)
    if isinstance(node.op, ast.Not):
        def negated(ctx, local):
            _tick(ctx)
            x = operand(ctx, local)
            if type(x) is not bool:
                raise DomainEvalError(f"{where}: 'not' needs True or False, got {_kind(x)}")
            return not x
        return negated
    minus = isinstance(node.op, ast.USub)

    def signed(ctx, local):
        _tick(ctx)
        x = operand(ctx, local)
        if not _number(x):
            raise DomainEvalError(f"{where}: a sign needs a number, got {_kind(x)}")
        return -x if minus else x
    return signed


_ARITHMETIC = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
               ast.FloorDiv: operator.floordiv}


def _c_binop(node: ast.BinOp):
    left, right, where = _compile(node.left), _compile(node.right), _text(node)
    op = _ARITHMETIC.get(type(node.op), operator.mod)

    def f(ctx, local):
        _tick(ctx)
        a, b = left(ctx, local), right(ctx, local)
        if not (_number(a) and _number(b)):
            raise DomainEvalError(f"{where}: arithmetic needs numbers, got {_kind(a)} and {_kind(b)}")
        try:
            return op(a, b)
        except ZeroDivisionError:
            raise DomainEvalError(f"{where}: division by zero") from None
        except OverflowError:
            raise DomainEvalError(f"{where}: the number is too large") from None
    return f


def _comparison(op: ast.cmpop, where: str) -> Callable[[Any, Any], bool]:
    """The test of one comparison operator, with the rule language's type rules."""
    if isinstance(op, ast.Is):
        return lambda a, b: a is None
    if isinstance(op, ast.IsNot):
        return lambda a, b: a is not None
    if isinstance(op, ast.Eq):
        return lambda a, b: bool(a == b)
    if isinstance(op, ast.NotEq):
        return lambda a, b: bool(a != b)
    if isinstance(op, (ast.In, ast.NotIn)):
        inside = isinstance(op, ast.In)

        def member(a: Any, b: Any) -> bool:
            if isinstance(b, str):
                if not isinstance(a, str):
                    raise DomainEvalError(f"{where}: only a string can be in a string")
                found = a in b
            elif isinstance(b, (list, tuple, dict, set)):
                try:
                    found = a in b
                except TypeError:
                    raise DomainEvalError(f"{where}: {_kind(a)} cannot be a key") from None
            else:
                raise DomainEvalError(f"{where}: 'in' needs a list, dict or string, got {_kind(b)}")
            return found if inside else not found
        return member
    order = {ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt}.get(type(op), operator.ge)

    def ordered(a: Any, b: Any) -> bool:
        if (_number(a) and _number(b)) or (type(a) is str and type(b) is str):
            return order(a, b)
        raise DomainEvalError(f"{where}: cannot order {_kind(a)} and {_kind(b)}")
    return ordered


def _c_compare(node: ast.Compare):
    where = _text(node)
    left = _compile(node.left)
    steps = [(_comparison(op, where), _compile(right)) for op, right in zip(node.ops, node.comparators)]

    def f(ctx, local):
        _tick(ctx)
        a = left(ctx, local)
        for test, right in steps:
            b = right(ctx, local)
            if not test(a, b):
                return False
            a = b
        return True
    return f


# comprehensions and calls ----------------------------------------------------------------

def _items(value: Any, where: str) -> list[Any]:
    if isinstance(value, (list, tuple, str)):
        return list(value)
    if isinstance(value, dict):
        return list(value)
    if isinstance(value, set):
        return sorted(value, key=repr)  # a fixed order, whatever the hash seed
    raise DomainEvalError(f"{where}: cannot iterate over {_kind(value)}")


def _binder(target: ast.AST) -> Callable[[Any, dict[str, Any]], None]:
    if isinstance(target, ast.Name):
        name = target.id

        def one(item: Any, scope: dict[str, Any]) -> None:
            scope[name] = item
        return one
    assert isinstance(target, ast.Tuple)
    names = [e.id for e in target.elts]  # type: ignore[attr-defined]
    where = _text(target)

    def unpack(item: Any, scope: dict[str, Any]) -> None:
        if not isinstance(item, (list, tuple)) or len(item) != len(names):
            raise DomainEvalError(f"cannot unpack {_kind(item)} into {where}")
        for n, x in zip(names, item):
            scope[n] = x
    return unpack


def _c_comprehension(node: ast.GeneratorExp | ast.ListComp):
    clauses = [(_compile(g.iter), _text(g.iter), _binder(g.target), [(_compile(c), _text(c)) for c in g.ifs])
               for g in node.generators]
    elt = _compile(node.elt)
    depth = len(clauses)

    def f(ctx, local):
        _tick(ctx)
        out: list[Any] = []

        def run(i: int, scope: dict[str, Any]) -> None:
            if i == depth:
                out.append(elt(ctx, scope))
                return
            source, where, bind, ifs = clauses[i]
            for item in _items(source(ctx, scope), where):
                inner = dict(scope)
                bind(item, inner)
                ok = True
                for cond, text in ifs:
                    c = cond(ctx, inner)
                    if type(c) is not bool:
                        raise DomainEvalError(f"{text}: an 'if' filter needs True or False")
                    if not c:
                        ok = False
                        break
                if ok:
                    run(i + 1, inner)

        run(0, local)
        return out
    return f


def _c_call(node: ast.Call):
    func, where = node.func, _text(node)
    if isinstance(func, ast.Attribute):
        obj_of, attr = _compile(func.value), func.attr

        def method(ctx, local):
            _tick(ctx)
            obj = obj_of(ctx, local)
            if not isinstance(obj, dict):
                raise DomainEvalError(f"{where}: .{attr}() needs a dict, got {_kind(obj)}")
            if attr == "keys":
                return list(obj.keys())
            if attr == "values":
                return list(obj.values())
            return [(k, v) for k, v in obj.items()]
        return method
    assert isinstance(func, ast.Name)
    name, args = func.id, [_compile(a) for a in node.args]

    def call(ctx, local):
        _tick(ctx)
        return _call(name, [a(ctx, local) for a in args], where)
    return call


_BUILDERS: dict[type, Callable[[Any], Callable[[_Ctx, dict[str, Any]], Any]]] = {
    ast.Constant: _c_constant, ast.Name: _c_name, ast.List: _c_list, ast.Attribute: _c_attribute,
    ast.Subscript: _c_subscript, ast.BoolOp: _c_boolop, ast.UnaryOp: _c_unaryop, ast.BinOp: _c_binop,
    ast.Compare: _c_compare, ast.GeneratorExp: _c_comprehension, ast.ListComp: _c_comprehension,
    ast.Call: _c_call,
}


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
