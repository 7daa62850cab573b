"""Numbered GPUs and nodes sharing a value are named once, as spans: a machine of 64 partitions reads in a line."""

from __future__ import annotations

from hyperloom.tools.detect.spans import by_value, counted, spans


def test_spans_join_runs_of_consecutive_numbers():
    assert spans([9, 0, 1, 2, 3, 5, 7, 8, 3]) == "0-3, 5, 7-9"
    assert spans([4]) == "4" and spans([]) == ""


def test_numbers_sharing_a_value_are_named_once_in_the_order_of_their_first_number():
    levels = {i: "auto" for i in range(64)} | {7: "manual", 40: "manual"}
    assert by_value(levels, "GPU") == "GPU 0-6, 8-39, 41-63: auto; GPU 7, 40: manual"
    assert by_value({2: "gfx942 (38 CUs)", 3: "gfx942 (38 CUs)", 9: "gfx90a (104 CUs)"}, "node", "nodes") == ("nodes 2-3: gfx942 (38 CUs); "
                                                                                                              "node 9: gfx90a (104 CUs)")


def test_kinds_are_named_once_with_their_count():
    assert counted(["MI300X (gfx942)"] * 8 + ["H200 (sm_90)"]) == "8x MI300X (gfx942), H200 (sm_90)" and counted([]) == ""
