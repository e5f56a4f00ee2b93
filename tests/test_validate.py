"""validate: a lesson is sound when the reference earns full marks, the bare scaffold earns none, and the
figures the lesson states are what the reference computes. Grades are stood in for here (test_cli runs them)."""

from __future__ import annotations

from grader.authoring import validate
from grader.judge.verdict import ExerciseResult
from grader.lesson import catalog, staff_code
from grader.result.record import GradeResult

LESSON = "inference-scaling"


def _grades(monkeypatch, reference_passes: bool, scaffold_passes: bool):
    def grade(path, lesson_id, options, student=None, chosen=None):
        passes = reference_passes if "reference" in str(path) else scaffold_passes
        status = "passed" if passes else "failed"
        return GradeResult(status="graded", lesson=lesson_id, student="x",
                           exercises=(ExerciseResult("sweep", status, 1.0 if passes else 0.0, 1.0, "simulated",
                                                     ("`sweep(1)`: expected 2, got 3",)),))
    monkeypatch.setattr(validate, "grade", grade)


def test_a_sound_lesson_has_no_problems(monkeypatch, tmp_path):
    _grades(monkeypatch, reference_passes=True, scaffold_passes=False)
    assert validate.validate(LESSON, workdir=tmp_path).problems == ()


def test_each_kind_of_unsoundness_is_named(monkeypatch, tmp_path):
    _grades(monkeypatch, reference_passes=False, scaffold_passes=True)
    problems = validate.validate(LESSON, workdir=tmp_path).problems
    assert "reference fails sweep: `sweep(1)`: expected 2, got 3" in problems
    assert any(p.startswith("the bare scaffold passes sweep") for p in problems)


def test_a_stated_figure_the_reference_does_not_reproduce_is_named(monkeypatch, tmp_path):
    _grades(monkeypatch, reference_passes=True, scaffold_passes=False)
    real = staff_code.reference(catalog.get(LESSON))
    # every stated figure is computed by a reference function; one that answers 0 disagrees with all of them
    broken = {name: (lambda *a, **k: 0.0) if callable(value) else value for name, value in real.items()}
    monkeypatch.setattr(staff_code, "reference", lambda lesson_id, numbers=(): broken)
    problems = validate.validate(LESSON, workdir=tmp_path).problems
    stated = [p for p in problems if "the reference disagrees with the lesson's figure" in p]
    # and the hidden cases that must raise, which an answer of 0 never does, are named by seed
    raising = [p for p in problems if "must raise ValueError, but the reference answers 0.0" in p or p.startswith("...")]
    assert stated and raising and len(stated) + len(raising) == len(problems)
