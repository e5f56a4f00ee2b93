"""The judge of one run, outside the kernel: each exercise's verdict on what the probes read, against the prepared
lesson's figures and the reference's answers (for the student's own numbers, where the course grades the lesson
per student), and the notes on the notebook as a whole."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Mapping
from typing import Any

from grader.base.options import Options
from grader.intake import load
from grader.judge import completion, verdict
from grader.lesson import catalog, handout, releases, staff_code
from grader.lesson.cases import AskReference, Stated
from grader.lesson.prepared import Prepared
from grader.run import probe
from grader.run.submission import Drawn, Ran


def judged(drawn: Drawn, ran: Ran, options: Options) -> verdict.Judged:
    """Each exercise judged on what the probes read, and the notes on the notebook as a whole."""
    started = time.monotonic()
    verdicts = verdicts_of(drawn.prepared, drawn.plans, ran.probes, ran, drawn.submission.notebook, options,
                           drawn.numbers)
    notes, verdicts = _noted(drawn.lesson, drawn.submission, drawn.release, verdicts)
    return verdict.Judged(tuple(verdicts), drawn.notes + tuple(notes), time.monotonic() - started)


def verdicts_of(ready: Prepared, plans: list[probe.ExercisePlan], probes: dict[str, probe.Probe], ran: Ran,
                notebook: Any, options: Options, numbers: dict[str, float] | None = None) -> list[verdict.ExerciseResult]:
    """Each exercise judged on `probes` (what `ran` read, or a slice of it) against the lesson's figures, the public
    cases' expectations and the reference's answers."""
    lesson, reference = ready.lesson, None if options.public_only else ready.reference
    owned = {ex.id: own_figures(lesson, ex.id, list(plan.cases), numbers, notebook, reference is not None,
                                ready.given_by_id)
             for ex, plan in zip(lesson.exercises, plans)}
    return verdict.judge_lesson(lesson.exercises, owned, probes, dict(ready.public) if reference is not None else {},
                                reference, ran.executed.cells, notebook, ready.checks)


def own_figures(lesson: catalog.Lesson, ex_id: str, cases: list[catalog.Case], numbers: dict[str, float] | None,
                 notebook: Any, graded: bool,
                 given_cells: Mapping[str, str] | None = None) -> tuple[list[catalog.Case], dict[str, Any] | None]:
    """Public cases whose figures follow the student's own numbers (`varies`): graded, the reference answers them
    for those numbers (the namespace returned); in a self-check, which has no reference, the figures the handout
    carries for its numbers stand in for the seed's."""
    varied = [i for i, case in enumerate(cases) if case.varies and not case.hidden]
    if not varied:
        return cases, None
    if graded:
        if not numbers or numbers == handout.seed_numbers(lesson):
            return cases, None
        unstated = [dataclasses.replace(c, check=AskReference()) if i in varied else c
                    for i, c in enumerate(cases)]
        return unstated, staff_code.reference(lesson, tuple(sorted(numbers.items())))
    figures = (notebook.metadata.get("grader") or {}).get("public")
    if not isinstance(figures, dict) or handout.found_numbers(lesson, notebook, given_cells)[1] in ({}, handout.seed_numbers(lesson)):
        return cases, None
    return [dataclasses.replace(c, check=Stated(figures[f"{ex_id}/{i}"]))
            if i in varied and f"{ex_id}/{i}" in figures else c for i, c in enumerate(cases)], None


def _noted(lesson: catalog.Lesson, submission: load.Submission, release: releases.Release,
           verdicts: list[verdict.ExerciseResult]) -> tuple[list[str], list[verdict.ExerciseResult]]:
    """The result's notes: a notebook of another release or of another lesson says so (in the missing verdicts too)."""
    notes = list(submission.notes)
    notes += [f"{ex.id}: {said}" for ex in lesson.exercises for said in completion.unwaited(submission.notebook, ex.timed)]
    if release.note(lesson.id):
        notes.insert(0, release.note(lesson.id))
    other = handout.other_lesson(lesson, submission.notebook)
    if other and any(v.status == "missing" for v in verdicts):
        hint = (f"this notebook defines {other[1]} of the {other[2]} names of lesson '{other[0]}': is it that "
                f"lesson's notebook? (graded as '{lesson.id}')")
        notes.insert(0, hint)
        verdicts = [dataclasses.replace(v, messages=(hint,) + v.messages) if v.status == "missing" else v
                    for v in verdicts]
    return notes, verdicts


