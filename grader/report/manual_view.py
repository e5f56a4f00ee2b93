"""The instructor's part of a grade as a report shows it: written answers by rubric, overrides, the late penalty.

Drawn from the result's `manual` part only (manual.py), with the lesson's rubric
for the items' words; a result without one shows nothing here.
"""

from __future__ import annotations

from typing import Any

from grader.base import spelling
from grader.base.errors import LessonError
from grader.base.shapes import mapping
from grader.lesson import catalog


def view(result: dict[str, Any]) -> dict[str, Any] | None:
    """Rows for the report's "Instructor's part" section, or None when the result has no manual part."""
    part = mapping(result, "manual")
    if not part:
        return None
    questions: dict[str, Any] = {}
    try:
        questions = {q.cell: q for q in catalog.get(str(result.get("lesson"))).written}
    except LessonError:
        pass
    written = []
    for entry in part.get("written") or []:
        if not isinstance(entry, dict):
            continue
        question = questions.get(str(entry.get("question")))
        items = [question.item(str(i)) if question else None for i in entry.get("items") or []]
        written.append({"question": question.title if question else str(entry.get("question")),
                        "points": entry.get("points"), "max_points": entry.get("max_points"),
                        "applied": [f"{i.text} ({'+' if i.points > 0 else ''}{spelling.score(i.points)})" for i in items if i],
                        "comment": str(entry.get("comment") or ""), "grader": str(entry.get("grader") or "")})
    overrides = [o for o in part.get("overrides") or [] if isinstance(o, dict)]
    late = mapping(part, "late")
    return {"written": written, "overrides": overrides, "by_exercise": {o.get("exercise"): o for o in overrides},
            "late": late or None, "autograded": part.get("autograded"), "before_penalty": part.get("before_penalty"),
            "pending": [w["question"] for w in written if w["points"] is None]}
