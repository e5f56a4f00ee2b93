"""The instructor's part joined with an autograded result: the score that counts, made of every part.

    before the penalty = the exercises' scores (an override in place of the autograded one) + the written points
    score              = before the penalty, less the late policy's share of it
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from grader.lesson.catalog import Lesson
from grader.lesson.course import NO_POLICY, LessonPolicy
from grader.result.manual import Decisions, LateCharge, Manual, WrittenGrade
from grader.result.record import GradeResult

NONE = Decisions()


def written_points(lesson: Lesson, decision: WrittenGrade, item_points: Mapping[tuple[str, str], float]) -> float:
    """A decision's points: its items' current points (or the points given outright), within the question's."""
    question = next(q for q in lesson.written if q.cell == decision.question)
    if decision.items:
        total = 0.0
        for item_id in decision.items:
            item = question.item(item_id)
            total += item_points.get((question.cell, item_id), item.points if item else 0.0)
        return question.score(total)
    return question.score(decision.points or 0.0)


def joined(result: GradeResult, lesson: Lesson, decisions: Decisions = NONE,
           policy: LessonPolicy = NO_POLICY) -> GradeResult:
    """The result with the instructor's part joined and its score made the grade that counts (a rejected result,
    or a lesson with nothing to join, is returned as it is); `policy`: the course's for the lesson (its due date
    and what lateness costs)."""
    if result.status != "graded":
        return result
    arrived = result.submitted_as
    late_mark = bool(arrived and arrived.late)
    submitted_at = arrived.submitted_at if arrived else ""
    if not lesson.written and not decisions.overrides and not (policy.late and (late_mark or submitted_at)):
        return result if result.manual is None else dataclasses.replace(result, manual=None, score=_autograded(result))
    autograded = _autograded(result)
    overrides = tuple(dataclasses.replace(o, autograded=ex.score) for ex in result.exercises
                      if (o := decisions.overrides.get(ex.id)) is not None)
    replaced = {o.exercise: o.score for o in overrides}
    exercises = sum(replaced.get(ex.id, ex.score) for ex in result.exercises)
    written = tuple(_graded(lesson, q.cell, q.points, decisions) for q in lesson.written)
    before = exercises + sum(w.points or 0.0 for w in written)
    late = None
    if policy.late is not None:
        days = policy.days_late(late_mark, submitted_at, decisions.extension_days)
        percent = policy.late.percent(days)
        if days > 0 or late_mark:
            late = LateCharge(days, percent, before * percent / 100, late_mark, submitted_at,
                              decisions.extension_days)
    score = before - (late.points if late else 0.0)
    return dataclasses.replace(result, score=score, max_score=lesson.max_score,
                               manual=Manual(autograded, before, written, overrides, late))


def _autograded(result: GradeResult) -> float:
    return float(sum(ex.score for ex in result.exercises))  # as grading.py sums them


def _graded(lesson: Lesson, cell: str, max_points: float, decisions: Decisions) -> WrittenGrade:
    decision = decisions.written.get(cell)
    if decision is None:
        return WrittenGrade(cell, max_points=max_points)
    return dataclasses.replace(decision, points=written_points(lesson, decision, decisions.item_points),
                               max_points=max_points)
