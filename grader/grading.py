"""The spine: load -> sandbox/run -> probe -> judge -> record, for one submission."""

from __future__ import annotations

import dataclasses
import datetime as _dt
import functools
from pathlib import Path

from grader.base.errors import LessonError
from grader.base.options import Options
from grader.intake import load
from grader.judge import expectations, judging
from grader.kernel import compile_cache
from grader.lesson import catalog, draw as drawing, handout, releases, staff_code
from grader.lesson.prepared import Prepared
from grader.result import recording, variants
from grader.result.record import GradeResult
from grader.run import submission


def rejected(path: str | Path, reason: str, lesson: str | None = None, student: str | None = None) -> GradeResult:
    """The result recorded for a submission that cannot be graded."""
    now = _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")
    return GradeResult(status="rejected", lesson=lesson, student=student or Path(path).stem, error=reason,
                       submission=Path(path).name, graded_at=now)


@functools.cache
def prepared(lesson: catalog.Lesson, public_only: bool = False) -> Prepared:
    """The lesson read once for this process's grades (a host prepares it before its workers fork; they inherit
    it): the handout's given cells and prompts, its warm cells, the checks, and, where graded (not a self-check,
    which has no reference), the reference and its answer to every public case, the same for every student."""
    reference = None if public_only else staff_code.reference(lesson)
    varies = any(case.varies and not case.hidden for ex in lesson.exercises for case in ex.cases)
    public = {} if reference is None else {(ex.id, i): expectations.expectation(case, reference)
                                           for ex in lesson.exercises for i, case in enumerate(ex.cases)}
    return Prepared(lesson, handout.given_by_id(lesson), handout.given_sources(lesson), handout.prompt_texts(lesson),
                    handout.warm_sources(lesson), staff_code.properties(lesson), reference, public,
                    compile_cache.existing(lesson, "cpu"), handout.seed_numbers(lesson),
                    functools.partial(staff_code.reference, lesson) if reference is not None and varies else None,
                    frozenset(handout.needed_names(lesson)),
                    tuple((other.id, frozenset(handout.needed_names(other))) for other in handout.other_lessons(lesson)))


def grade(path: str | Path, lesson_id: str | None = None, options: Options = Options(),
          student: str | None = None, chosen: drawing.Draw | drawing.Given = drawing.Given()) -> GradeResult:
    """Grade one submission, one stage after another, on the draw `chosen` (a batch's parent decides each student's
    whole; else what the command line gives, the rest derived here); raises SubmissionRejected or LessonError for
    bad input."""
    drawn = draw(path, lesson_id, options, student, chosen)  # load -> what this student meets
    ran = submission.run(drawn.prepared, drawn.submission.notebook, drawn.plans, options,
                         drawn.draw.hash_seed)  # kernel -> run -> probe
    judged = judging.judged(drawn, ran, options)  # judge, outside the kernel
    return recording.recorded(drawn, ran, judged, options)  # the result


def draw(path: str | Path, lesson_id: str | None, options: Options, student: str | None,
         chosen: drawing.Draw | drawing.Given = drawing.Given()) -> submission.Drawn:
    """Read the submission and decide, once, what this student meets (their draw, where none was handed over)."""
    read = load.read(path, student)
    lesson = catalog.get(_lesson_id(lesson_id, read))
    ready = prepared(lesson, options.public_only)
    secret = None if isinstance(chosen, drawing.Draw) else drawing.course_secret()  # none on a student's machine
    key = chosen.handout_key if isinstance(chosen, drawing.Draw) else drawing.handout_key(lesson.id, secret)
    who, handout_of, named = variants.identity(lesson, read.notebook, student, Path(read.path).stem, key)
    decided = chosen if isinstance(chosen, drawing.Draw) else drawing.decide(
        lesson, who, chosen, public_only=options.public_only, secret=secret, per_student=drawing.enabled(lesson.id))
    restored, release = releases.restore(lesson, read.notebook, ready.given_by_id)
    numbers = decided.own_numbers()
    restored, held = variants.own_numbers(lesson, restored, numbers, Path(read.path).name, options.public_only,
                                          ready.given_by_id)
    read = dataclasses.replace(read, student=who, notebook=restored)
    notes = tuple(named) + tuple(variants.held_elsewhere(read.notebook, who, numbers, held))
    own_reference = (ready.reference_for(tuple(sorted(numbers.items())))  # the figures this student's numbers make
                     if ready.reference_for and numbers and numbers != ready.seed_numbers else None)
    runs_with = dict(numbers) if numbers is not None and held else held  # the variant cell as it will run
    return submission.Drawn(read, ready, release, release.note(lesson.id), decided, notes, handout_of,
                            submission.plans_for(lesson, decided.seed, options.public_only), runs_with, own_reference)


def _lesson_id(lesson_id: str | None, submission: load.Submission) -> str:
    """The lesson to grade against: the notebook's metadata (written by `release`) and `--lesson` must agree.

    Either alone decides; when both are given and differ, nothing is guessed.
    """
    name = Path(submission.path).name
    hint = submission.lesson_hint
    if lesson_id:
        catalog.get(lesson_id)  # an unknown --lesson is said first, with the lessons there are
    if hint and lesson_id and hint != lesson_id:
        raise LessonError(f"{name}: the notebook is lesson '{hint}' (its metadata says so), not '{lesson_id}'; "
                          f"grade it with --lesson {hint}, or start from the notebook of lesson '{lesson_id}'")
    if lesson_id or hint:
        return str(lesson_id or hint)
    known = ", ".join(catalog.available())
    raise LessonError(f"{name}: no lesson in the notebook's metadata; pass --lesson ({known})")


__all__ = ["Options", "grade", "rejected"]
