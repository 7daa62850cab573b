"""Arithmetic over shape variables, for launch geometry, buffer shapes and metrics in kernel.yaml.

A small evaluator over Python's own parser: numbers, names bound by the shape, + - * / // % **,
parentheses, and the functions min, max, ceil_div, round_up, log2. Nothing else is callable or
reachable, so a spec can never run code through an expression.
"""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Mapping
from functools import lru_cache

from hyperloom.core.errors import HyperloomError

_BINARY = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow,
}
_UNARY = {ast.USub: operator.neg, ast.UAdd: operator.pos}
_FUNCTIONS = {
    "min": min,
    "max": max,
    "ceil_div": lambda a, b: -(-a // b),
    "round_up": lambda a, b: -(-a // b) * b,
    "log2": lambda a: int(math.log2(a)) if a > 0 and (a & (a - 1)) == 0 else math.log2(a),
}
Number = int | float
MAX_EXPONENT = 64
MAX_MAGNITUDE = 1 << 64  # no size, count or geometry a kernel takes is larger


def evaluate(text: str | int | float, names: Mapping[str, Number], where: str = "expression") -> Number:
    """The value of `text` with `names` bound; integers stay integers."""
    if isinstance(text, bool):
        raise HyperloomError(f"{where} is a boolean, not a number", "write a number or an expression such as ceil_div(n, 256)")
    if isinstance(text, int | float):
        return text
    try:
        tree = _parsed(str(text))
    except SyntaxError as exc:
        raise HyperloomError(f"{where} {text!r} is not an arithmetic expression ({exc.msg})",
                             "write e.g. ceil_div(n, 256) or 2 * n * k") from exc
    return _eval(tree.body, names, text, where)


@lru_cache(maxsize=4096)
def _parsed(text: str) -> ast.Expression:
    """The expression's tree, parsed once: a tune session evaluates the same few expressions for every launch."""
    return ast.parse(text, mode="eval")


def _eval(node: ast.AST, names: Mapping[str, Number], text: object, where: str) -> Number:
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float) and not isinstance(node.value, bool):
        return node.value
    if isinstance(node, ast.Name):
        if node.id in names:
            return names[node.id]
        raise HyperloomError(
            f"{where} {text!r} uses {node.id!r}, which the shape does not define",
            f"define {node.id} in the shape, or use one of {sorted(names)}",
        )
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left, right = _eval(node.left, names, text, where), _eval(node.right, names, text, where)
        if isinstance(node.op, ast.Pow) and (abs(right) > MAX_EXPONENT or abs(left) > MAX_MAGNITUDE):
            raise HyperloomError(f"{where} {_shown(text)} raises {left} to {right}, beyond what a shape needs",
                                 f"keep exponents within ±{MAX_EXPONENT}")
        return _bounded(_apply(lambda: _BINARY[type(node.op)](left, right), names, text, where), text, where)
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _UNARY[type(node.op)](_eval(node.operand, names, text, where))
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _FUNCTIONS and not node.keywords:
        values = [_eval(a, names, text, where) for a in node.args]
        return _bounded(_apply(lambda: _FUNCTIONS[node.func.id](*values), names, text, where), text, where)
    raise HyperloomError(
        f"{where} {text!r} contains {ast.dump(node)[:40]}…, which is not allowed",
        "use numbers, shape names, + - * / // % **, and min, max, ceil_div, round_up, log2",
    )


def _apply(compute, names: Mapping[str, Number], text: object, where: str) -> Number:  # type: ignore[no-untyped-def]
    """One operation or function call, its arithmetic failures as errors that say where."""
    try:
        return compute()
    except ZeroDivisionError as exc:
        shape = ", ".join(f"{k}={v}" for k, v in list(names.items())[:8])
        raise HyperloomError(f"{where} {_shown(text)} divides by zero (with {shape})",
                             "check the shape values and tuning values it uses") from exc
    except TypeError as exc:  # e.g. ceil_div(n) with one argument
        raise HyperloomError(f"{where} {_shown(text)} calls a function with the wrong arguments ({exc})",
                             "min(a, b, ...), max(a, b, ...), ceil_div(a, b), round_up(a, b), log2(a)") from exc
    except (OverflowError, ValueError) as exc:
        raise HyperloomError(f"{where} {_shown(text)} cannot be computed ({exc})", "check the shape values") from exc


def _bounded(value: Number, text: object, where: str) -> Number:
    if abs(value) > MAX_MAGNITUDE:
        raise HyperloomError(f"{where} {_shown(text)} evaluates to {value:.3g}, beyond any size a kernel takes",
                             "check the expression and the shape values")
    return value


def _shown(text: object) -> str:
    shown = str(text)
    return repr(shown if len(shown) <= 120 else shown[:117] + "...")


def evaluate_int(text: str | int | float, names: Mapping[str, Number], where: str) -> int:
    value = evaluate(text, names, where)
    if isinstance(value, float):
        if not value.is_integer():
            raise HyperloomError(f"{where} {text!r} is {value}, not a whole number", "use // or ceil_div for integer division")
        value = int(value)
    return value
