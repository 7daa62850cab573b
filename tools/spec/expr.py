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


def evaluate(text: str | int | float, names: Mapping[str, Number], where: str = "expression") -> Number:
    """The value of `text` with `names` bound; integers stay integers."""
    if isinstance(text, bool):
        raise HyperloomError(f"{where} is a boolean, not a number", "write a number or an expression such as ceil_div(n, 256)")
    if isinstance(text, int | float):
        return text
    try:
        tree = ast.parse(str(text), mode="eval")
    except SyntaxError as exc:
        raise HyperloomError(f"{where} {text!r} is not an arithmetic expression ({exc.msg})", "write e.g. ceil_div(n, 256) or 2 * n * k") from exc
    return _eval(tree.body, names, text, where)


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
        try:
            return _BINARY[type(node.op)](left, right)
        except ZeroDivisionError as exc:
            raise HyperloomError(f"{where} {text!r} divides by zero", "check the shape values") from exc
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _UNARY[type(node.op)](_eval(node.operand, names, text, where))
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _FUNCTIONS and not node.keywords:
        return _FUNCTIONS[node.func.id](*(_eval(a, names, text, where) for a in node.args))
    raise HyperloomError(
        f"{where} {text!r} contains {ast.dump(node)[:40]}…, which is not allowed",
        "use numbers, shape names, + - * / // % **, and min, max, ceil_div, round_up, log2",
    )


def evaluate_int(text: str | int | float, names: Mapping[str, Number], where: str) -> int:
    value = evaluate(text, names, where)
    if isinstance(value, float):
        if not value.is_integer():
            raise HyperloomError(f"{where} {text!r} is {value}, not a whole number", "use // or ceil_div for integer division")
        value = int(value)
    return value
