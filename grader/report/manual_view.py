"""The instructor's part of a grade as a report shows it: written answers by rubric, overrides, the late penalty.

Drawn from the result's `manual` part only (manual.py), with the lesson's rubric
for the items' words; a result without one shows nothing here.
"""

from __future__ import annotations

from typing import Any

from grader.base import spelling
from grader.base.errors import LessonError
from grader.lesson import catalog
from grader.result.record import GradeResult


def view(result: GradeResult) -> dict[str, Any] | None:
    """Rows for the report's "Instructor's part" section, or None when the result has no manual part."""
    part = result.manual
    if part is None:
        return None
    questions: dict[str, Any] = {}
    try:
        questions = {q.cell: q for q in catalog.get(str(result.lesson)).written}
    except LessonError:
        pass
    written = []
    for entry in part.written:
        question = questions.get(entry.question)
        items = [question.item(i) if question else None for i in entry.items]
        written.append({"question": question.title if question else entry.question,
                        "points": entry.points, "max_points": entry.max_points,
                        "applied": [f"{i.text} ({'+' if i.points > 0 else ''}{spelling.score(i.points)})" for i in items if i],
                        "comment": entry.comment, "grader": entry.grader})
    return {"written": written, "overrides": list(part.overrides),
            "by_exercise": {o.exercise: o for o in part.overrides}, "late": part.late,
            "autograded": part.autograded, "before_penalty": part.before_penalty,
            "pending": [w["question"] for w in written if w["points"] is None]}
