"""evidence: a written result's values, decoded once, as the report and the figure read them."""

from __future__ import annotations

import numpy as np
from conftest import typed

from grader.result.evidence import Evidence, Shown
from grader.run import wire
from grader.run.decoded import NOTHING, Opaque


def _result():
    return {
        "measured": {"values": {"timings": wire.encode([{"batch": 1, "p50": np.float64(2.5)}]), "absent": None},
                     "answers": {"fit": [{"case": "fit(live)", "name": "fit", "args": [[1.0, 2.0]],
                                          "value": wire.encode({"setup": 0.5})}]}},
        "simulated": {"values": {"stable": wire.encode(np.arange(3.0))},
                      "answers": {"queue": [
                          {"case": "simulate(a, 2.0)", "name": "simulate", "args": [{"__array__": [0.0, 1.0]}, 2.0],
                           "columns": ["arrival", "finish"], "note": "n", "value": wire.encode((np.zeros(2), np.ones(2)))},
                          {"case": "simulate([], -1)", "name": "simulate", "args": [[], -1],
                           "raised": {"type": "ValueError", "value_error": True, "message": "negative"}},
                          "not an answer"]}},
    }


def test_values_are_decoded_and_absent_ones_stay_none():
    seen = Evidence.of(typed(_result()))
    assert seen.value("measured", "timings") == [{"batch": 1, "p50": 2.5}]
    assert seen.value("measured", "absent") is None and seen.value("measured", "never") is None
    assert seen.value("simulated", "stable").tolist() == [0.0, 1.0, 2.0]


def test_answers_become_shown_records_and_junk_entries_are_skipped():
    seen = Evidence.of(typed(_result()))
    first, second = seen.answers["simulated"]["queue"]
    assert isinstance(first, Shown) and first.columns == ("arrival", "finish") and first.note == "n"
    assert first.args[0].tolist() == [0.0, 1.0] and first.args[1] == 2.0
    assert [v.tolist() for v in first.value] == [[0.0, 0.0], [1.0, 1.0]]
    assert not second.has_value and second.value is NOTHING
    assert (second.raised, second.message) == ("ValueError", "negative")
    assert seen.answers["measured"]["fit"][0].value == {"setup": 0.5}


def test_a_result_without_evidence_reads_as_empty():
    seen = Evidence.of(typed({"status": "rejected"}))
    assert seen.values == {"measured": {}, "simulated": {}} and seen.answers == {"measured": {}, "simulated": {}}
    assert Evidence.of(typed({"simulated": {"values": {"x": {"__object__": "Thing"}}}})).value("simulated", "x") == Opaque("Thing")
