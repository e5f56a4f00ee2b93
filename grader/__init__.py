"""Autograder for the inference-serving course: grade(), check(), Options and GradeResult.

They are imported on first use: a command that only starts the kernel template
(or prints its help) does not pay for the grading machinery.
"""

from __future__ import annotations

from typing import Any

__all__ = ["grade", "check", "GradeResult", "Options"]


def check(path: str, lesson_id: str | None = None) -> Any:
    """The student's self-check: public checks only, no sandbox required; a GradeResult."""
    from grader.grading import Options, grade

    return grade(path, lesson_id, Options(public_only=True, sandbox="none"))


def __getattr__(name: str) -> Any:
    if name in ("grade", "Options"):
        from grader import grading

        return getattr(grading, name)
    if name == "GradeResult":
        from grader.record import GradeResult

        return GradeResult
    raise AttributeError(f"module 'grader' has no attribute {name!r}")
