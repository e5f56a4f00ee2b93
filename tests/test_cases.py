"""lessons: a lesson's declarations read into typed cases, and what a case looks like in feedback."""

from __future__ import annotations

import numpy as np
import pytest

from grader.base.errors import LessonError
from grader.lesson import catalog
from grader.lesson.cases import AskReference, Stated


def test_case_forms_and_their_labels():
    call = catalog.case_from_spec({"call": "simulate", "args": [{"array": [0, 1]}, 2.0], "kwargs": {"policy": "fcfs"}})
    assert call.mode == "call" and call.args == ({"__array__": [0.0, 1.0]}, 2.0)
    assert call.label() == "`simulate(np.array([0.0, 1.0]), 2.0, policy='fcfs')`"
    value = catalog.case_from_spec({"value": "capacity"})
    assert value.mode == "value" and value.label() == "`capacity`"
    own = catalog.case_from_spec({"value": "predicted", "args": [{"kernel": "live"}]})
    assert own.kernel_names() == ("live",) and own.label() == "`predicted` (given live)"


def test_a_drawn_array_is_the_seeds_and_a_long_one_says_how_to_rebuild_it():
    case = catalog.case_from_spec({"call": "f", "args": [{"normal": [2, 3], "seed": 5}]})
    assert np.allclose(case.args[0]["__array__"], np.random.default_rng(5).normal(size=(2, 3)))
    big = catalog.case_from_spec({"call": "f", "args": [{"array": list(range(100))}]})
    assert big.label() == "`f(<array shape [100]: rebuild it with the seed recorded in the result>)`"


def test_an_expectation_of_none_is_still_an_expectation():
    assert catalog.case_from_spec({"call": "f", "expect_none": True}).check == Stated(None)
    assert catalog.case_from_spec({"call": "f"}).check == AskReference()


def test_a_case_that_names_nothing_is_a_lesson_error():
    with pytest.raises(LessonError, match="names none of `call`, `value` and `evaluate`"):
        catalog.case_from_spec({"args": [1]})
    with pytest.raises(LessonError, match="names the reference function that answers it"):
        catalog.case_from_spec({"evaluate": "f(args[0])", "args": [1]})


def test_an_unknown_lesson_suggests_the_closest_one():
    with pytest.raises(LessonError, match="unknown lesson 'inference_capacty'; did you mean 'inference-capacity'"):
        catalog.get("inference_capacty")


def test_every_shipped_lesson_loads_with_points_and_kinds():
    found = catalog.available()  # every lesson under lessons/, a fourth one too
    assert {"dynamic-batching", "inference-capacity", "inference-scaling"} <= set(found)
    for lesson_id in found:
        lesson = catalog.get(lesson_id)
        assert lesson.autograded_points == sum(ex.points for ex in lesson.exercises) > 0
        assert lesson.max_score == lesson.autograded_points + sum(q.points for q in lesson.written)
        assert {ex.kind for ex in lesson.exercises} <= {"simulated", "measured"}
