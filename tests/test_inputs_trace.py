"""What inputs(seed) runs, traced in every timed leg on both sides (tools/workload/worker/calls.py): a candidate whose
inputs run code the reference's do not is refused (tools/workload/checks/proof.inputs_rewritten)."""

from __future__ import annotations

import math
from functools import partial

from hyperloom.tools.workload.checks.proof import inputs_rewritten
from hyperloom.tools.workload.worker.calls import traced


def _draw(seed: int) -> float:
    return math.sqrt(seed) + len(str(seed))


def test_a_trace_names_the_python_functions_a_call_enters_and_the_builtins_it_calls():
    names = traced(lambda: _draw(4))
    assert any(name.endswith(" _draw") and "test_inputs_trace.py:" in name for name in names), names
    assert any(name.endswith(".sqrt") for name in names) and any(name.endswith(".len") for name in names), names


def test_the_same_draw_traced_twice_reads_the_same_and_a_wrapper_of_what_it_calls_is_named():
    honest = set(traced(partial(_draw, 9)))
    assert set(traced(partial(_draw, 16))) == honest and inputs_rewritten(honest, honest) is None
    real = math.sqrt

    def hidden_work(value):  # what a candidate's patch of a callee looks like: a new function on the inputs' path
        return real(value)

    math.sqrt = hidden_work
    try:
        wrapped = set(traced(partial(_draw, 9)))
    finally:
        math.sqrt = real
    said = inputs_rewritten(wrapped, honest)
    assert said is not None and "hidden_work" in said and "its inputs(seed) runs code the reference's does not" in said, said
