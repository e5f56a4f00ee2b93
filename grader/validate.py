"""`grader validate`: a lesson is sound when its reference earns full marks, its bare scaffold none, and every
figure the lesson states agrees with the reference."""

from __future__ import annotations

import copy
import dataclasses
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import nbformat

from grader import decoded, expectations, handout, lessons, matching, staff_code, variants
from grader.errors import GraderError
from grader.grading import Options, grade
from grader.record import GradeResult


@dataclass(frozen=True)
class Validation:
    """The outcome of `grader validate`."""

    lesson: str
    """Lesson id."""
    reference: GradeResult
    """Grade of the completed solution notebook (hidden cases included)."""
    scaffold: GradeResult
    """Grade of the bare student notebook."""
    problems: tuple[str, ...]
    """Everything that makes the lesson unsound; empty when it is sound."""


def validate(lesson_id: str, options: Options = Options(), workdir: str | Path | None = None) -> Validation:
    """Prove a lesson sound: reference full marks, scaffold zero, stated figures agree with the reference."""
    lesson = lessons.get(lesson_id)
    problems = stated_figures(lesson)
    with tempfile.TemporaryDirectory(dir=workdir) as tmp:
        solution = Path(tmp) / "reference.ipynb"
        nbformat.write(handout.solution_notebook(lesson), str(solution))
        scaffold_path = handout.release(lesson.id, tmp)
        ref = grade(solution, lesson.id, options)
        bare = grade(scaffold_path, lesson.id, options)
    for e in ref.exercises:
        if e.status != "passed":
            problems.append(f"reference fails {e.id}: {'; '.join(e.messages[:2])}")
    for e in bare.exercises:
        if e.status == "passed":
            problems.append(f"the bare scaffold passes {e.id}: its checks cannot tell an empty answer from a right one")
    problems += _variants(lesson, options, workdir)
    return Validation(lesson.id, ref, bare, tuple(problems))


def stated_figures(lesson: lessons.Lesson) -> list[str]:
    """Every figure the lesson states that its reference does not reproduce, in one line each (no kernel runs)."""
    problems = []
    reference = staff_code.reference(lesson.id)
    for ex in lesson.exercises:
        for case in ex.cases:
            if not case.has_expect:
                continue
            want = decoded.decode(case.expect)
            try:
                got = expectations.expectation(dataclasses.replace(case, expect=None, has_expect=False), reference)
            except RuntimeError as err:  # the reference raised on the lesson's own input
                problems.append(f"{ex.id}: {err}")
                continue
            mismatch = matching.compare(got.value, want, case)
            if mismatch:
                problems.append(f"{ex.id}: the reference disagrees with the lesson's figure for {case.label()}: "
                                f"{mismatch.public()}")
    return problems


def before_regrade(lesson: lessons.Lesson, recorded: dict[str, dict[str, Any]]) -> None:
    """Before a regrade moves any grade: a reference that changed since the recorded grades must still reproduce
    every figure the lesson states (else one line, GraderError, and nothing moves; `--force` regrades anyway)."""
    from grader import sign

    now = sign.lesson_digests(lesson.id)[1]
    before = {(data.get("digests") or {}).get("reference") for data in recorded.values()}
    problems = stated_figures(lesson) if before - {now, None} else []
    if problems:
        more = f"; and {len(problems) - 1} more" if len(problems) > 1 else ""
        raise GraderError(f"the reference changed and contradicts the lesson ({problems[0]}{more}): no grade moved. "
                          f"Fix the reference (grader validate {lesson.id}), or pass --force to regrade on it anyway")


VARIANT_DRAWS = 2
"""Students' numbers a lesson with [variants] is also validated on (drawn for made-up ids)."""


def _variants(lesson: lessons.Lesson, options: Options, workdir: str | Path | None) -> list[str]:
    """On a few drawn variants too: the reference's answer cells earn full marks, the bare handout nothing."""
    problems = []
    answers = handout.answer_cells(lesson) if lesson.variants else {}
    for draw in range(VARIANT_DRAWS if lesson.variants else 0):
        student = f"validate-{draw + 1}"
        numbers = variants.numbers_for(lesson, student, None)
        own = dataclasses.replace(options, variant=tuple(sorted(numbers.items())))
        bare_book = variants.student_handout(lesson, student, None)
        filled = copy.deepcopy(bare_book)
        for cell in filled.cells:
            if cell.get("id") in answers:
                cell.source = answers[cell["id"]].source
        with tempfile.TemporaryDirectory(dir=workdir) as tmp:
            nbformat.write(filled, str(Path(tmp) / "reference.ipynb"))
            nbformat.write(bare_book, str(Path(tmp) / "scaffold.ipynb"))
            ref, bare = (grade(Path(tmp) / name, lesson.id, own) for name in ("reference.ipynb", "scaffold.ipynb"))
        shown = variants.shown(numbers)
        problems += [f"reference fails {e.id} with the numbers {shown}: {'; '.join(e.messages[:2])}"
                     for e in ref.exercises if e.status != "passed"]
        problems += [f"the bare handout with the numbers {shown} passes {e.id}" for e in bare.exercises
                     if e.status == "passed"]
    return problems
