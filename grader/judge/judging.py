"""The judge of one run, outside the kernel: each exercise's verdict on what the probes read, against the prepared
lesson's figures and the reference's answers (for the student's own numbers, where the course grades the lesson
per student), and the notes on the notebook as a whole."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Mapping
from typing import Any

from grader.base import syntax
from grader.base.options import Options
from grader.judge import completion, verdict
from grader.lesson.cases import AskReference, Case, Stated
from grader.lesson.prepared import Prepared
from grader.run import probe
from grader.run.submission import Drawn, Ran


def judged(drawn: Drawn, ran: Ran, options: Options) -> verdict.Judged:
    """Each exercise judged on what the probes read, and the notes on the notebook as a whole."""
    started = time.monotonic()
    verdicts = verdicts_of(drawn.prepared, drawn.plans, ran.probes, ran, drawn.submission.notebook, options,
                           drawn.held, drawn.own_reference)
    notes, verdicts = _noted(drawn, verdicts)
    return verdict.Judged(tuple(verdicts), drawn.notes + tuple(notes), time.monotonic() - started)


def verdicts_of(ready: Prepared, plans: list[probe.ExercisePlan], probes: dict[str, probe.Probe], ran: Ran,
                notebook: Any, options: Options, held: Mapping[str, float] | None = None,
                own_reference: dict[str, Any] | None = None) -> list[verdict.ExerciseResult]:
    """Each exercise judged on `probes` (what `ran` read, or a slice of it) against the lesson's figures, the public
    cases' expectations and the reference's answers (`own_reference`: for the student's own numbers)."""
    lesson, reference = ready.lesson, None if options.public_only else ready.reference
    owned = {ex.id: own_figures(ex.id, list(plan.cases), reference is not None, own_reference, notebook,
                                held or {}, ready.seed_numbers)
             for ex, plan in zip(lesson.exercises, plans)}
    return verdict.judge_lesson(lesson.exercises, owned, probes, dict(ready.public) if reference is not None else {},
                                reference, ran.executed.cells, notebook, ready.checks)


def own_figures(ex_id: str, cases: list[Case], graded: bool, own_reference: dict[str, Any] | None, notebook: Any,
                held: Mapping[str, float], seed_numbers: Mapping[str, float]) -> tuple[list[Case], dict[str, Any] | None]:
    """Public cases whose figures follow the student's own numbers (`varies`): graded, the reference answers them
    for those numbers (`own_reference`, returned); in a self-check, which has no reference, the figures the handout
    carries for the numbers it `held` stand in for the seed's."""
    varied = [i for i, case in enumerate(cases) if case.varies and not case.hidden]
    if not varied:
        return cases, None
    if graded:
        if own_reference is None:
            return cases, None
        unstated = [dataclasses.replace(c, check=AskReference()) if i in varied else c
                    for i, c in enumerate(cases)]
        return unstated, own_reference
    figures = (notebook.metadata.get("grader") or {}).get("public")
    if not isinstance(figures, dict) or not held or dict(held) == dict(seed_numbers):
        return cases, None
    return [dataclasses.replace(c, check=Stated(figures[f"{ex_id}/{i}"]))
            if i in varied and f"{ex_id}/{i}" in figures else c for i, c in enumerate(cases)], None


def _noted(drawn: Drawn, verdicts: list[verdict.ExerciseResult]) -> tuple[list[str], list[verdict.ExerciseResult]]:
    """The result's notes: a notebook of another release or of another lesson says so (in the missing verdicts too)."""
    lesson, notebook = drawn.lesson, drawn.submission.notebook
    notes = list(drawn.submission.notes)
    notes += [f"{ex.id}: {said}" for ex in lesson.exercises for said in completion.unwaited(notebook, ex.timed)]
    if drawn.release_note:
        notes.insert(0, drawn.release_note)
    other = other_lesson(notebook, drawn.prepared.needed, drawn.prepared.others)
    if other and any(v.status == "missing" for v in verdicts):
        hint = (f"this notebook defines {other[1]} of the {other[2]} names of lesson '{other[0]}': is it that "
                f"lesson's notebook? (graded as '{lesson.id}')")
        notes.insert(0, hint)
        verdicts = [dataclasses.replace(v, messages=(hint,) + v.messages) if v.status == "missing" else v
                    for v in verdicts]
    return notes, verdicts


def other_lesson(notebook: Any, needed: frozenset[str],
                 others: tuple[tuple[str, frozenset[str]], ...]) -> tuple[str, int, int] | None:
    """(id, names defined, names needed) of another lesson (`others`: each one's id and the names its exercises
    need) whose names the notebook defines far better than its own lesson's (`needed`)."""
    names = syntax.defined_names(cell.source for cell in notebook.cells if cell.cell_type == "code")
    own = len(needed & names) / max(1, len(needed))
    best: tuple[float, str, int, int] | None = None
    for other_id, needs in others:
        share = len(needs & names) / max(1, len(needs))
        if best is None or share > best[0]:
            best = (share, other_id, len(needs & names), len(needs))
    if best is None or best[0] < 0.5 or best[0] <= own:
        return None
    return best[1], best[2], best[3]
