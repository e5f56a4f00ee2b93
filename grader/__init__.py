"""Autograder for the inference-serving course: grade(), check() and GradeResult."""

from __future__ import annotations

from grader.grading import Options, grade
from grader.record import GradeResult


def check(path: str, lesson_id: str | None = None) -> GradeResult:
    """The student's self-check: public checks only, no sandbox required."""
    return grade(path, lesson_id, Options(public_only=True, sandbox="none"))


__all__ = ["grade", "check", "GradeResult", "Options"]
