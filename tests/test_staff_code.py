"""staff_code: reference, checks and hidden cases, run in the grader process and never shipped to a kernel."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from grader.base.errors import LessonError
from grader.lesson import catalog, staff_code
from grader.lesson.cases import Stated


def test_the_reference_answers_the_lessons_stated_figures():
    reference = staff_code.reference(catalog.get("inference-capacity"))
    for ex in catalog.get("inference-capacity").exercises:
        for case in ex.cases:
            if isinstance(case.check, Stated) and case.mode == "call" and not case.kernel_names():
                assert case.name in reference or case.reference in reference, case.label()


def test_hidden_cases_are_drawn_from_the_seed_and_only_from_it():
    one = staff_code.hidden_cases(catalog.get("inference-capacity"), 11)
    again = staff_code.hidden_cases(catalog.get("inference-capacity"), 11)
    other = staff_code.hidden_cases(catalog.get("inference-capacity"), 12)
    labels = lambda drawn: {ex: [c.label() for c in cases] for ex, cases in drawn.items()}  # noqa: E731
    assert labels(one) == labels(again) and labels(one) != labels(other)
    assert all(case.hidden for cases in one.values() for case in cases)


def test_each_lessons_checks_are_named_functions():
    for lesson_id in catalog.available():
        checks = staff_code.properties(catalog.get(lesson_id))
        assert all(callable(check) for check in checks.values())


def test_solutions_inside_the_python_environment_are_refused(tmp_path):
    with pytest.raises(LessonError, match="inside the Python environment"):
        staff_code._outside_the_environment(Path(sys.prefix) / "solutions")
    staff_code._outside_the_environment(tmp_path)  # anywhere else is fine
