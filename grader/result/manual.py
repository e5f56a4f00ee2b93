"""The instructor's part of a grade: written answers graded by rubric, autograded scores overridden with a reason,
and the late penalty, joined with the autograded result into one score.

The result keeps every part: each exercise's autograded score stays in its
verdict, `manual` says what the instructor decided (who, when, which items,
what comment), and `score` is the grade that counts:

    before the penalty = the exercises' scores (an override in place of the autograded one) + the written points
    score              = before the penalty, less the late policy's share of it

A lesson without written questions, overrides or a late policy keeps its result
exactly as the autograder made it (no `manual` part at all). The records are
here; joining them with a result is joining.py.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class WrittenGrade:
    """One written question of one student: the rubric items applied (or points given outright), the comment, who
    decided and when. `points` is None while nobody has graded it."""

    question: str
    items: tuple[str, ...] = ()
    points: float | None = None
    max_points: float = 0.0
    comment: str = ""
    grader: str = ""
    at: str = ""
    grouping: str = ""
    """How the answer was graded with others, where it was: `blank`, `identical` or `similar at 0.6` (the review's
    grouping and its threshold); "" when it was graded alone."""
    together: tuple[str, ...] = ()
    """The other students one decision graded with this one."""

    def to_dict(self) -> dict[str, Any]:
        data = {"question": self.question, "items": list(self.items), "points": self.points,
                "max_points": self.max_points, "comment": self.comment, "grader": self.grader, "at": self.at}
        return data | ({"group": {"kind": self.grouping, "with": list(self.together)}} if self.grouping else {})

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> WrittenGrade:
        points = data.get("points")
        raw = data.get("group")
        group: Mapping[str, Any] = raw if isinstance(raw, Mapping) else {}
        return cls(str(data.get("question", "")), tuple(str(i) for i in data.get("items") or ()),
                   float(points) if isinstance(points, (int, float)) else None, float(data.get("max_points") or 0.0),
                   str(data.get("comment") or ""), str(data.get("grader") or ""), str(data.get("at") or ""),
                   str(group.get("kind") or ""), tuple(str(s) for s in group.get("with") or ()))


@dataclass(frozen=True)
class Override:
    """An exercise's autograded score replaced by the instructor's, with the reason (the verdict keeps its own)."""

    exercise: str
    score: float
    reason: str
    grader: str = ""
    at: str = ""
    autograded: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {"exercise": self.exercise, "score": self.score, "autograded": self.autograded, "reason": self.reason,
                "grader": self.grader, "at": self.at}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Override:
        return cls(str(data.get("exercise", "")), float(data.get("score") or 0.0), str(data.get("reason") or ""),
                   str(data.get("grader") or ""), str(data.get("at") or ""), float(data.get("autograded") or 0.0))


@dataclass(frozen=True)
class LateCharge:
    """What lateness cost: days late (after any extension), the share taken and the points it came to."""

    days: float
    percent: float
    points: float
    late_mark: bool = False
    submitted_at: str = ""
    extension_days: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {"days": self.days, "percent": self.percent, "points": self.points, "late_mark": self.late_mark,
                "submitted_at": self.submitted_at, "extension_days": self.extension_days}

    @classmethod
    def from_dict(cls, data: Any) -> LateCharge | None:
        if not isinstance(data, Mapping):
            return None
        return cls(float(data.get("days") or 0.0), float(data.get("percent") or 0.0), float(data.get("points") or 0.0),
                   bool(data.get("late_mark")), str(data.get("submitted_at") or ""),
                   float(data.get("extension_days") or 0.0))


@dataclass(frozen=True)
class Manual:
    """The instructor's part of one result, and the sums the score is made of."""

    autograded: float
    """The exercises' scores as the autograder gave them."""
    before_penalty: float
    """The exercises' scores (overrides in place) plus the written points."""
    written: tuple[WrittenGrade, ...] = ()
    overrides: tuple[Override, ...] = ()
    late: LateCharge | None = None

    @property
    def pending(self) -> tuple[str, ...]:
        """The written questions nobody has graded yet."""
        return tuple(w.question for w in self.written if w.points is None)

    def to_dict(self) -> dict[str, Any]:
        return {"autograded": self.autograded, "before_penalty": self.before_penalty,
                "written": [w.to_dict() for w in self.written], "overrides": [o.to_dict() for o in self.overrides],
                "late": self.late.to_dict() if self.late else None}

    @classmethod
    def from_dict(cls, data: Any) -> Manual | None:
        if not isinstance(data, Mapping):
            return None
        return cls(float(data.get("autograded") or 0.0), float(data.get("before_penalty") or 0.0),
                   tuple(WrittenGrade.from_dict(w) for w in data.get("written") or () if isinstance(w, Mapping)),
                   tuple(Override.from_dict(o) for o in data.get("overrides") or () if isinstance(o, Mapping)),
                   LateCharge.from_dict(data.get("late")))


@dataclass(frozen=True)
class Decisions:
    """What the instructor decided for one student (review.py keeps them): per written question, per exercise, and
    the current points of every rubric item (a change to an item's points rescores every answer that used it)."""

    written: Mapping[str, WrittenGrade] = dataclasses.field(default_factory=dict)
    overrides: Mapping[str, Override] = dataclasses.field(default_factory=dict)
    item_points: Mapping[tuple[str, str], float] = dataclasses.field(default_factory=dict)
    extension_days: float = 0.0
