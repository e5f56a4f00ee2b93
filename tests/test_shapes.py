"""shapes.py: a JSON shape passes good data and names the place and reason of bad data."""

from __future__ import annotations

from grader.base.shapes import Shape

POINT = Shape({"type": "object", "properties": {"x": {"type": "number"}}, "required": ["x"],
               "additionalProperties": False})


def test_good_data_has_no_error():
    assert POINT.first_error({"x": 1.5}) is None


def test_bad_data_gets_the_best_matching_error_with_its_place():
    error = POINT.first_error({"x": "one"})
    assert list(error.absolute_path) == ["x"] and error.validator == "type"
    assert POINT.first_error({}).validator == "required"
    assert POINT.first_error({"x": 1, "y": 2}).validator == "additionalProperties"


def test_draft_7_keywords_are_honoured():
    shape = Shape({"dependencies": {"a": ["b"]}}, draft="7")
    assert shape.first_error({"a": 1, "b": 2}) is None
    assert shape.first_error({"a": 1}).validator == "dependencies"
