"""How far two graders agree on written answers graded twice, blind: per rubric item and on the points.

For each rubric item, over the answers both graders decided: the share where
both applied it or both did not, and Cohen's kappa (agreement beyond what two
graders applying the item at their own rates would reach by chance; scikit-
learn's `cohen_kappa_score`). Over the points each gave, the kappa of the
points as categories. Every answer the two graded differently is listed, to
settle. A kappa is None where it is undefined (both graders gave one and the
same value throughout: nothing to tell agreement from chance).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from grader.base import spelling
from grader.lesson.written import Question


class WrittenGrade(Protocol):
    """What is read of a decision (result.manual.WrittenGrade, a later stage's record): its items and who."""

    @property
    def items(self) -> tuple[str, ...]: ...

    @property
    def grader(self) -> str: ...


def sampled(lesson_id: str, student: str, percent: float) -> bool:
    """Whether a student's answers are in the sample graded twice (repeatable: by the lesson and the student)."""
    if percent <= 0:
        return False
    draw = int(hashlib.sha256(f"double/{lesson_id}/{student}".encode()).hexdigest()[:8], 16) % 10000
    return draw < percent * 100


@dataclass(frozen=True)
class ItemAgreement:
    question: str
    item: str
    answers: int
    agreed: int
    kappa: float | None


@dataclass(frozen=True)
class Disagreement:
    student: str
    question: str
    first: str
    second: str


@dataclass(frozen=True)
class Agreement:
    """Both graders' agreement on the answers each decided."""

    first: str
    second: str
    answers: int
    items: tuple[ItemAgreement, ...]
    points_kappa: float | None
    disagreements: tuple[Disagreement, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"first": self.first, "second": self.second, "answers": self.answers, "points_kappa": self.points_kappa,
                "items": [{"question": i.question, "item": i.item, "answers": i.answers, "agreed": i.agreed,
                           "kappa": i.kappa} for i in self.items],
                "disagreements": [{"student": d.student, "question": d.question, "first": d.first,
                                   "second": d.second} for d in self.disagreements]}


def _kappa(a: list[Any], b: list[Any]) -> float | None:
    from sklearn.metrics import cohen_kappa_score

    if len(set(a) | set(b)) < 2:
        return None
    return round(float(cohen_kappa_score([str(x) for x in a], [str(x) for x in b])), 4)


def _said(decision: WrittenGrade, points: float) -> str:
    items = ", ".join(decision.items) if decision.items else "no item"
    return f"{items} ({spelling.score(points)} point{'' if points == 1 else 's'})"


def measure(questions: tuple[Question, ...], first: Mapping[tuple[str, str], WrittenGrade],
            second: Mapping[tuple[str, str], WrittenGrade], points_of: Any) -> Agreement:
    """The agreement over every (student, question) both decided; `points_of(decision)`: the points it gives."""
    both = sorted(key for key in second if key in first)
    items = []
    for question in questions:
        keys = [k for k in both if k[1] == question.cell]
        for item in question.rubric:
            a = [item.id in first[k].items for k in keys]
            b = [item.id in second[k].items for k in keys]
            if keys:
                items.append(ItemAgreement(question.cell, item.id, len(keys), sum(x == y for x, y in zip(a, b)),
                                           _kappa(a, b)))
    given = [(points_of(first[k]), points_of(second[k])) for k in both]
    disagreements = tuple(Disagreement(k[0], k[1], _said(first[k], p), _said(second[k], q))
                          for k, (p, q) in zip(both, given, strict=True)
                          if set(first[k].items) != set(second[k].items) or p != q)
    graders = ({d.grader for d in (first[k] for k in both)}, {d.grader for d in (second[k] for k in both)})
    return Agreement(", ".join(sorted(graders[0])), ", ".join(sorted(graders[1])), len(both), tuple(items),
                     _kappa([p for p, _ in given], [q for _, q in given]), disagreements)
