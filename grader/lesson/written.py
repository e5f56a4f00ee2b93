"""A lesson's written questions (`[[written]]`: the tagged prediction and explanation cells, graded by rubric), as the
lesson declares them.

A written question's score is the sum of the rubric items applied to the answer
(items may be positive or negative), kept within 0 and the question's points.
What lateness costs is the course's (course.py), not the lesson's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from grader.base import spelling
from grader.base.errors import LessonError


@dataclass(frozen=True)
class RubricItem:
    """One thing an answer earns (or loses) points for."""

    id: str
    points: float
    text: str


@dataclass(frozen=True)
class Question:
    """A written question: the notebook cell it is answered in, its points and its rubric."""

    cell: str
    title: str
    points: float
    rubric: tuple[RubricItem, ...]

    def item(self, item_id: str) -> RubricItem | None:
        return next((item for item in self.rubric if item.id == item_id), None)

    def score(self, points: float) -> float:
        """Points kept within 0 and the question's own."""
        return round(min(max(points, 0.0), self.points), 4)


def questions(spec: dict[str, Any], spec_path: Any, cells: set[str]) -> tuple[Question, ...]:
    """The `[[written]]` questions of a lesson.toml (already schema-checked), each naming a cell of its scaffold."""
    found = []
    for entry in spec.get("written", []):
        rubric = tuple(RubricItem(str(i["id"]), float(i["points"]), str(i.get("text", ""))) for i in entry["rubric"])
        ids = [item.id for item in rubric]
        if len(set(ids)) != len(ids):
            raise LessonError(f"{spec_path}: written question '{entry['cell']}' repeats a rubric item id")
        reachable = sum(item.points for item in rubric if item.points > 0)
        if reachable < float(entry["points"]):
            raise LessonError(f"{spec_path}: written question '{entry['cell']}' is worth {spelling.score(entry['points'])} points, but "
                              f"its rubric's positive items add up to {spelling.score(reachable)}")
        if entry["cell"] not in cells:
            raise LessonError(f"{spec_path}: written question '{entry['cell']}' names no prediction or explanation "
                              f"cell of the scaffold (known: {', '.join(sorted(cells)) or 'none'})")
        found.append(Question(str(entry["cell"]), str(entry.get("title", entry["cell"])), float(entry["points"]),
                              rubric))
    if len({q.cell for q in found}) != len(found):
        raise LessonError(f"{spec_path}: two written questions name the same cell")
    return tuple(found)
