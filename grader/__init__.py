"""Autograder for the inference-serving course: grade(), check(), Options and GradeResult.

They are imported on first use: a command that only starts the kernel template
(or prints its help) does not pay for the grading machinery.
"""

from __future__ import annotations

from typing import Any

__all__ = ["grade", "check", "GradeResult", "Options"]


def check(path: str | None = None, exercise: str | None = None, lesson: str | None = None) -> Any:
    """The student's self-check, from inside a notebook: `grader.check()` checks the saved notebook this kernel
    runs (`grader.check("hw.ipynb")` names one, `grader.check("hw.ipynb", "burst")` one exercise) as `grader check`
    does, prints the public verdicts and returns them as data (grader/in_notebook.py)."""
    from grader import in_notebook

    return in_notebook.check(path, exercise, lesson)


def __getattr__(name: str) -> Any:
    if name in ("grade", "Options"):
        from grader import grading

        return getattr(grading, name)
    if name == "GradeResult":
        from grader.result.record import GradeResult

        return GradeResult
    raise AttributeError(f"module 'grader' has no attribute {name!r}")
