"""A workload factory's knobs arrive as its annotations say (core/factory.py): a request gives every knob as text, and a
Literal int knob that arrived as a string crashed the user's build in torch (issue 67)."""

from __future__ import annotations

import enum
from typing import Literal, Optional

import pytest

from hyperloom.core.factory import WorkloadContractError, declared_knobs, knob_values


class Mode(enum.Enum):
    EAGER = "eager"
    FAST = "fast"


def build(width: int = 256, batch: Literal[8, 64] = 64, scale: float = 1.0, fused: bool = False, limit: Optional[int] = None,
          mode: Mode = Mode.EAGER, name: Literal["a", "b"] = "a", untyped=3, flag: Literal[True, False] = False):
    return width, batch, scale, fused, limit, mode, name, untyped, flag


@pytest.mark.parametrize(("knob", "text", "value"), [
    ("batch", "8", 8), ("width", "128", 128), ("scale", "2", 2.0), ("fused", "true", True), ("fused", "0", False),
    ("limit", "none", None), ("limit", "7", 7), ("mode", "FAST", Mode.FAST), ("mode", "fast", Mode.FAST), ("name", "b", "b"),
    ("untyped", "5", 5), ("flag", "True", True),
])
def test_a_knob_s_text_arrives_as_the_type_its_annotation_names(knob, text, value):
    [got] = knob_values(declared_knobs(build), {knob: text}).values()
    assert got == value and type(got) is type(value), (got, value)


def test_a_literal_int_knob_lists_its_values_as_text_for_the_frozen_session():
    knobs = declared_knobs(build)
    assert knobs["batch"] == ["8", "64"] and knobs["width"] is None and dict(knobs)["mode"] is None


@pytest.mark.parametrize(("knob", "text", "said"), [
    ("batch", "16", "knob batch takes one of 8, 64, not '16'"), ("width", "wide", "knob width takes an int, not 'wide'"),
    ("fused", "maybe", "knob fused takes true or false, not 'maybe'"), ("mode", "slow", "knob mode takes one of EAGER, FAST, not 'slow'"),
    ("limit", "x", "knob limit takes an int or none, not 'x'"),
])
def test_a_value_that_does_not_convert_is_refused_with_the_knob_the_value_and_what_it_takes(knob, text, said):
    with pytest.raises(WorkloadContractError) as caught:
        knob_values(declared_knobs(build), {knob: text})
    assert str(caught.value) == said


def test_an_unknown_knob_is_refused_with_the_knobs_the_factory_declares():
    with pytest.raises(WorkloadContractError, match=r"declares no knob 'batchs' \(did you mean batch\?\); it declares width, batch"):
        knob_values(declared_knobs(build), {"batchs": "8"})
