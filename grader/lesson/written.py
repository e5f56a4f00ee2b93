"""A lesson's written questions (`[[written]]`: the tagged prediction and explanation cells, graded by rubric) and
its late policy (`[late]`), as the lesson declares them.

A written question's score is the sum of the rubric items applied to the answer
(items may be positive or negative), kept within 0 and the question's points.
A late policy takes `percent_per_day` off the total for each day late (a part of
a day counts as a day), and the whole total after `cutoff_days`; without a
submission time, the platform's late mark counts as one day late.
"""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass
from typing import Any

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


@dataclass(frozen=True)
class LatePolicy:
    """What lateness costs: a share of the total per day, and everything after a cut-off."""

    percent_per_day: float = 0.0
    cutoff_days: float | None = None
    due: str = ""
    """When the work was due (ISO 8601), to count days from a submission time; "" when only a late mark is known."""

    def days_late(self, late: bool, submitted_at: str = "", extension_days: float = 0.0) -> float:
        """Whole days late (a part of a day counts): from the submission time where known, else one day for the
        platform's late mark; an extension moves the due date (with a mark alone, any extension excuses it)."""
        if submitted_at and self.due:
            try:
                over = _dt.datetime.fromisoformat(submitted_at) - _dt.datetime.fromisoformat(self.due)
            except (ValueError, TypeError):
                over = None
            if over is not None:
                seconds = over.total_seconds() - extension_days * 86400
                return float(-(-seconds // 86400)) if seconds > 0 else 0.0
        return 1.0 if late and extension_days <= 0 else 0.0

    def percent(self, days: float) -> float:
        """The share of the total taken for this many days late."""
        if days <= 0:
            return 0.0
        if self.cutoff_days is not None and days > self.cutoff_days:
            return 100.0
        return min(100.0, self.percent_per_day * days)


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
            raise LessonError(f"{spec_path}: written question '{entry['cell']}' is worth {entry['points']:g} points, but "
                              f"its rubric's positive items add up to {reachable:g}")
        if entry["cell"] not in cells:
            raise LessonError(f"{spec_path}: written question '{entry['cell']}' names no prediction or explanation "
                              f"cell of the scaffold (known: {', '.join(sorted(cells)) or 'none'})")
        found.append(Question(str(entry["cell"]), str(entry.get("title", entry["cell"])), float(entry["points"]),
                              rubric))
    if len({q.cell for q in found}) != len(found):
        raise LessonError(f"{spec_path}: two written questions name the same cell")
    return tuple(found)


def late_policy(spec: dict[str, Any], spec_path: Any) -> LatePolicy | None:
    """The `[late]` table, or None when the lesson declares no late policy."""
    late = spec.get("late")
    if late is None:
        return None
    due = str(late.get("due", ""))
    if due:
        try:
            _dt.datetime.fromisoformat(due)
        except ValueError:
            raise LessonError(f"{spec_path}: [late] due {due!r} is not an ISO 8601 time") from None
    cutoff = late.get("cutoff_days")
    return LatePolicy(float(late.get("percent_per_day", 0.0)), float(cutoff) if cutoff is not None else None, due)
