"""expectations: what each kind of case expects, and a case on the student's own values resolved on them."""

from __future__ import annotations

import pytest

from grader.judge import expectations
from grader.judge.expectations import Pending, Refused, Unavailable, Value
from grader.lesson import catalog
from grader.lesson.cases import Accepts, Holds, Raises, Recompute
from grader.run.decoded import Answer


def case(**spec):
    return catalog.case_from_spec(dict({"call": "f", "args": [2.0]}, **spec))


def double(x):
    return x * 2


def test_each_declaration_gives_its_expectation():
    assert expectations.expectation(case(expect=[1, 2]), None) == Value([1, 2])
    assert expectations.expectation(case(raises="ValueError"), None) == Raises("ValueError")
    assert expectations.expectation(case(property="shape"), None) == Holds("shape")
    assert expectations.expectation(case(recompute="f(2.0)"), None) == Recompute("f(2.0)")
    assert expectations.expectation(case(args=[{"kernel": "x"}]), None) == Pending(("x",))
    assert expectations.expectation(case(), None) == Unavailable()
    assert expectations.expectation(case(), {"f": double}) == Value(4.0)  # the reference on the same input, 2 * 2


def test_a_reference_that_raises_is_a_lesson_bug_said_loudly():
    with pytest.raises(RuntimeError, match=r"reference failed on `f\(2.0\)`: ZeroDivisionError"):
        expectations.expectation(case(), {"f": lambda x: x / 0})


def test_a_case_on_the_students_values_is_asked_of_the_reference_on_exactly_those():
    own = case(args=[{"kernel": "x"}])

    def positive(x):
        if x < 0:
            raise ValueError("negative")
        if x == 0:
            raise ZeroDivisionError("zero")
        return x * 10

    reference = {"f": positive}
    resolved, expect = expectations.resolved(own, Answer(30.0, 30.0, args=(3.0,)), Pending(("x",)), reference)
    assert resolved.args == (3.0,) and expect == Value(30.0)
    assert expectations.resolved(own, Answer(0.0, 0.0, args=(-1.0,)), Pending(("x",)), reference)[1] == Raises()
    refused = expectations.resolved(own, Answer(0.0, 0.0, args=(0.0,)), Pending(("x",)), reference)[1]
    assert refused == Refused("ZeroDivisionError: zero")
    # an answer without the values it was asked on cannot pass; a missing name is judged as missing
    assert isinstance(expectations.resolved(own, Answer(1.0, 1.0), Pending(("x",)), reference)[1], Refused)
    assert expectations.resolved(own, Answer(missing="f"), Pending(("x",)), reference)[1] == Accepts()
    # any other expectation passes through untouched
    assert expectations.resolved(own, Answer(1.0, 1.0), Value(2.0), reference) == (own, Value(2.0))
