"""The class's mistakes, grouped: the same failing check on the same kind of input, with who made it.

A student's result gives, per exercise that did not pass, each failed or
errored case as a mistake: its exercise, its outcome, its input (a public
case by its call; the hidden cases of one outcome as one mistake, the first
one's, since each student's hidden inputs differ and one bug fails many) and what went wrong with its numbers folded, which is what
groups it with others; the message itself is kept as the student saw it, numbers and all, as
the group's example. An exercise that could not be judged case by case (a
name missing, a timeout) is one mistake of its own.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from grader.judge.verdict import CaseVerdict, ExerciseResult

PER_EXERCISE = 6
"""Distinct mistakes kept per student and exercise (a class's summary rows stay small)."""
_NUMBER = re.compile(r"(?<![\w.])-?\d+(\.\d*)?([eE][-+]?\d+)?(?![\w])")
_HIDDEN = re.compile(r"hidden case `[^`]*`")


def folded(text: str) -> str:
    """What went wrong, with the numbers and hidden inputs that differ from student to student folded."""
    return _NUMBER.sub("#", _HIDDEN.sub("hidden case", text))[:200]


def _detail(case: CaseVerdict) -> str:
    prefix = f"hidden case {case.label}" if case.hidden else case.label
    return case.message[len(prefix) + 2:] if case.message.startswith(prefix + ": ") else case.message


def of_result(exercises: tuple[ExerciseResult, ...]) -> list[dict[str, str]]:
    """One student's mistakes, from their verdicts: {exercise, outcome, input, key, message} for each distinct one."""
    found: list[dict[str, str]] = []
    for exercise in exercises:
        if exercise.status == "passed":
            continue
        cases = [c for c in exercise.cases if c.outcome in ("failed", "error")]
        if not cases:
            message = exercise.messages[0] if exercise.messages else exercise.status
            found.append({"exercise": exercise.id, "outcome": exercise.status, "input": "",
                          "key": folded(message), "message": message})
            continue
        seen: set[tuple[str, str, str]] = set()
        hidden: set[str] = set()
        said: set[tuple[str, str]] = set()
        for case in cases:
            where = "hidden cases" if case.hidden else case.label
            key = (case.outcome, where, folded(_detail(case)))
            if key in seen or where == "hidden cases" and case.outcome in hidden:
                continue  # a student's hidden cases of one outcome are one mistake: one bug, many draws
            if where != "hidden cases" and (key[0], key[2]) in said:
                continue  # the same problem on another public input: one bug, said once (its first input shown)
            hidden |= {case.outcome} if where == "hidden cases" else set()
            said.add((key[0], key[2]))
            seen.add(key)
            found.append({"exercise": exercise.id, "outcome": key[0], "input": where, "key": key[2],
                          "message": case.message})
            if len(seen) >= PER_EXERCISE:
                break
    return found


@dataclass
class Group:
    """One mistake and the students who made it."""

    exercise: str
    outcome: str
    input: str
    message: str
    """The first student's message, as they saw it."""
    students: list[str] = field(default_factory=list)


def grouped(rows: list[dict[str, Any]]) -> dict[str, list[Group]]:
    """Per exercise, its mistakes from the most students to the fewest (each student counted once a group); `rows`
    are the gradebook's summaries (gradebook.summary), which hold each student's mistakes."""
    groups: dict[tuple[str, str, str, str], Group] = {}
    for row in rows:
        if row.get("status") != "graded":
            continue
        for mistake in row.get("mistakes") or ():
            key = (mistake["exercise"], mistake["outcome"], mistake["input"], mistake["key"])
            group = groups.setdefault(key, Group(key[0], key[1], key[2], mistake["message"]))
            if row["student"] not in group.students:
                group.students.append(row["student"])
    by_exercise: dict[str, list[Group]] = {}
    for group in sorted(groups.values(), key=lambda g: (-len(g.students), g.input, g.message)):
        by_exercise.setdefault(group.exercise, []).append(group)
    return by_exercise
