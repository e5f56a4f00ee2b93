"""What a result shows of the student's answers, kept as the wire carried them: each exercise's public answers, by
kind (measured, simulated), and the lesson's evidence values read after the run.

Made once per grade from the probes (run/probe.py); a report decodes them only when it draws them (evidence.py).
"""

from __future__ import annotations

from typing import Any

from grader.lesson import catalog
from grader.result.parts import PublicAnswer
from grader.run import decoded, probe

Shown = dict[str, list[tuple[str, tuple[PublicAnswer, ...]]]]
"""kind -> [(exercise id, its public answers)], in the lesson's order."""


def public_answers(lesson: catalog.Lesson, plans: list[probe.ExercisePlan], probes: dict[str, probe.Probe]) -> Shown:
    """The student's answers on the public inputs, by kind, per exercise whose probe ran."""
    shown: Shown = {"measured": [], "simulated": []}
    for ex, plan in zip(lesson.exercises, plans):
        found = probes[ex.id]
        if found.status != "ok":
            continue
        answers = tuple(
            PublicAnswer(case.label().replace("`", ""), case.name, tuple(case.args), tuple(case.kwargs.items()),
                         tuple(case.columns), case.note, answer.wire if answer.has_value else decoded.NOTHING,
                         answer.raised)
            for case, answer in zip(plan.cases, found.results) if not case.hidden)
        shown["measured" if ex.kind == "measured" else "simulated"].append((ex.id, answers))
    return shown


def evidence_values(lesson: catalog.Lesson, plan: probe.ExercisePlan, found: probe.Probe) -> dict[str, dict[str, Any]]:
    """The lesson's evidence values read after the run, by kind; a name the notebook left undefined is None."""
    values: dict[str, dict[str, Any]] = {"measured": {}, "simulated": {}}
    results = found.results if found.status == "ok" else (decoded.NO_ANSWER,) * len(plan.cases)
    for case, answer in zip(plan.cases, results):
        values[lesson.evidence[case.name]][case.name] = answer.wire if answer.has_value else None
    return values
