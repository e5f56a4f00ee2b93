"""matching: where an answer differs from what was expected, said so a student can act on it."""

from __future__ import annotations

import numpy as np

from grader.judge import matching
from grader.lesson import catalog
from grader.run.decoded import Opaque


def case(**kw):
    return catalog.case_from_spec(dict({"call": "f", "args": [1.0]}, **kw))


def test_several_returned_values_name_the_one_that_differs():
    c = case(columns=["arrivals", "start", "finish"])
    got = [np.array([0.0, 1.0]), np.array([0.0, 2.5])]
    mismatch = matching.compare(got, [[0.0, 1.0], [0.0, 2.0]], c)
    assert mismatch.where == "the second of 2 returned values (finish), at index [1]"
    assert mismatch.got.startswith("2.5 in") and mismatch.want == "2.0"


def test_a_dict_names_the_missing_or_differing_key():
    c = case()
    assert matching.compare({"a": 1.0}, {"a": 1.0, "b": 2.0}, c).where == "key 'b'"
    deep = matching.compare({"a": {"b": [1.0, 3.0]}}, {"a": {"b": [1.0, 2.0]}}, c)
    assert deep.where == "'a'['b'][1]"
    assert matching.compare([1.0], {"a": 1.0}, c).want == "a dict with keys ['a']"


def test_nan_matches_nan_and_infinity_never_passes_a_tolerance():
    c = case()
    assert matching.compare(np.array([np.nan, 1.0]), [np.nan, 1.0], c) is None
    assert matching.compare(np.array([np.inf]), [1e308], c) is not None


def test_shape_differences_say_both_shapes():
    mismatch = matching.compare(np.zeros((2, 3)), np.zeros((3, 2)), case())
    assert mismatch.got.startswith("shape [2, 3]") and mismatch.want.startswith("shape [3, 2]: ")
    short = matching.compare([1.0, 2.0], [4.0], case())  # a public figure is shown, not only its shape
    assert short.public() == "expected shape [1]: [4.0], got shape [2]: [1.0, 2.0]"
    assert "4.0" not in short.hidden()  # a hidden case never shows the reference's answer


def test_what_could_not_be_read_is_shown_by_its_type():
    assert matching.show(Opaque("Generator")) == "<Generator>"
    mismatch = matching.compare(Opaque("Generator"), [1.0, 2.0], case())
    assert mismatch.got == "<Generator>" and mismatch.want == "numbers"


def test_show_keeps_feedback_short():
    assert matching.show(np.float32(0.1)) == repr(round(float(np.float32(0.1)), 10))
    assert len(matching.show(list(range(1000)))) == 160 and matching.show(list(range(1000))).endswith("...")
