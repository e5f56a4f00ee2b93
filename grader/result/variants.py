"""Per-student variants: numbers of one's own in the handout, its given cells and its public figures.

A lesson may declare numbers a course draws per student (`[variants]` in
lesson.toml: each name with its choices, the first being the seed's, and the
given cell that defines them). Variants are the course's choice, lesson by
lesson, and off by default: `grader release LESSON --variants ...` turns them on
for that lesson (recorded in `course.variants`, beside the course secret) and
writes each student's handout with their numbers. Without them every student
gets the seed's numbers and is graded on them.

A student's numbers are drawn from the course secret, the lesson and the
student's id (lesson/draw.py), again at every grade, never read from the notebook: a notebook
carrying another student's numbers runs its owner's variant cell in place of
its own (recognised by what it assigns, not by ids) and its report says whose
handout it was. Public figures that depend on the numbers (`varies = true`)
are computed by the reference for the student's numbers; a handout also
carries them in its metadata, for the student's self-check, which has no
reference.
"""

from __future__ import annotations

import copy
import hashlib
import hmac
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from grader.base import files
from grader.base.errors import GraderError, SubmissionRejected
from grader.judge import expectations
from grader.lesson import catalog, course, draw, handout, staff_code


def enable(lesson: catalog.Lesson) -> Path:
    """Record that `lesson` is graded per student from now on (grade, batch and the platforms read it)."""
    if not lesson.variants:
        raise GraderError(f"lesson {lesson.id} declares no [variants]: every student gets the seed's numbers")
    here = course.current()
    if here.policy(lesson.id).variants is False:
        raise GraderError(f"{here.root / course.COURSE_FILE if here.root else 'course.toml'} says variants = false "
                          f"for {lesson.id}: every student is graded on the seed's numbers; set it to true first")
    path = course.private_folder(here) / draw.RECORD_NAME
    known = sorted(set(draw.released()) | {lesson.id})
    return files.write_text(path, json.dumps({"lessons": known}, indent=1) + "\n", private=True)


def defaults(lesson: catalog.Lesson) -> dict[str, float]:
    """The seed's numbers (each variant's first choice)."""
    return handout.seed_numbers(lesson)


def refuse_elsewhere(lesson: catalog.Lesson, notebook: Any, name: str,
                     given_cells: Mapping[str, str] | None = None) -> None:
    """Refuse, in one line, to grade a per-student handout (its metadata names its student and it holds numbers
    other than the seed's) where this course does not grade the lesson per student: graded on the seed's numbers,
    a right answer would lose points without a word."""
    meta = notebook.metadata.get("grader") if isinstance(notebook.metadata, dict) else None
    owner = meta.get("student") if isinstance(meta, dict) else None
    _, held = handout.found_numbers(lesson, notebook, given_cells)
    if not isinstance(owner, str) or not held or held == defaults(lesson):
        return
    here = course.current()
    raise SubmissionRejected(
        f"{name} is a per-student handout of {lesson.id} (its own numbers: {shown(held)}), but {here.label} does not "
        f"grade {lesson.id} per student: grade it in the course that handed it out (--course DIR), or set "
        f"[lessons.{lesson.id}] variants = true in its course.toml")


def own_numbers(lesson: catalog.Lesson, notebook: Any, numbers: dict[str, float] | None, name: str,
                public_only: bool, given_cells: Mapping[str, str] | None = None) -> tuple[Any, dict[str, float]]:
    """(the notebook to run, the numbers it held): where the student's draw has numbers of their own, the notebook's
    variant cell set to them; else (the seed's) a per-student handout graded where the course does not vary the
    lesson is refused, never graded on numbers nobody handed out (a self-check keeps the handout's numbers: its
    figures come with them)."""
    if numbers is None:
        if not public_only:
            refuse_elsewhere(lesson, notebook, name, given_cells)
        return notebook, handout.found_numbers(lesson, notebook, given_cells)[1]
    return applied(lesson, notebook, numbers, given_cells)


def held_elsewhere(notebook: Any, student: str, numbers: dict[str, float] | None, held: dict[str, float]) -> list[str]:
    """A note when the notebook holds another handout's numbers (it is graded on the student's own); it names
    neither the other student nor their numbers (the instructor sees whose it was: GradeResult.handout_of)."""
    if numbers is None or not held or held == numbers:
        return []
    return [f"this notebook holds the numbers of another handout; it was graded on {student}'s own numbers "
            f"({shown(numbers)})"]


def applied(lesson: catalog.Lesson, notebook: Any, numbers: dict[str, float],
            given_cells: Mapping[str, str] | None = None) -> tuple[Any, dict[str, float]]:
    """The notebook to run, its variant cell set to `numbers` (a copy), and the numbers the notebook itself held."""
    index, held = handout.found_numbers(lesson, notebook, given_cells)
    if index is None or held == numbers:
        return notebook, held
    notebook = copy.deepcopy(notebook)
    notebook.cells[index].source = handout.variant_source(notebook.cells[index].source, numbers)
    return notebook, held


def plain(value: Any) -> Any:
    """A reference answer as JSON data (arrays as lists, NumPy scalars as numbers)."""
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, (list, tuple)):
        return [plain(item) for item in value]
    if isinstance(value, dict):
        return {str(key): plain(item) for key, item in value.items()}
    return value


def public_figures(lesson: catalog.Lesson, numbers: dict[str, float]) -> dict[str, Any]:
    """The reference's answers, for these numbers, to every public case that varies (`exercise/index` keys)."""
    reference = staff_code.reference(lesson, tuple(sorted(numbers.items())))
    figures = {}
    for exercise in lesson.exercises:
        for index, case in enumerate(exercise.cases):
            if case.varies:
                figures[f"{exercise.id}/{index}"] = plain(expectations.reference_answer(case, reference))
    return figures


def student_handout(lesson: catalog.Lesson, student: str, secret: bytes | None) -> Any:
    """One student's handout: their numbers in the text (the figures it quotes computed for them) and the variant
    cell, their public figures in its metadata (for the self-check), and whose it is, bound to the course (its
    owner mark: an HMAC under the course secret that no one can move to another student's id)."""
    numbers = draw.numbers_for(lesson, student, secret)
    figures = public_figures(lesson, numbers)
    notebook = handout.scaffold(lesson, numbers, figures)
    notebook.metadata["grader"].update(student=student, owner=owner_mark(lesson.id, student, secret), public=figures)
    return notebook


def owner_mark(lesson_id: str, student: str, secret: bytes | None, key: str | None = None) -> str:
    """What binds a handout to its student in this course: an HMAC of the student's id under the lesson's handout
    key."""
    key = key or draw.handout_key(lesson_id, secret)
    return hmac.new(bytes.fromhex(key), student.encode("utf-8", "surrogateescape"), hashlib.sha256).hexdigest()[:32]


def handout_owner(lesson: catalog.Lesson, notebook: Any, secret: bytes | None, key: str | None = None) -> str | None:
    """The student whose handout this notebook is, where its metadata names one and the owner mark holds under this
    course's secret (an edited name, or a handout of another course, is no one's)."""
    meta = notebook.metadata.get("grader") if isinstance(notebook.metadata, dict) else None
    if not isinstance(meta, dict):
        return None
    student, mark = meta.get("student"), meta.get("owner")
    if not isinstance(student, str) or not isinstance(mark, str):
        return None
    return student if hmac.compare_digest(mark, owner_mark(lesson.id, student, secret, key)) else None


def identity(lesson: catalog.Lesson, notebook: Any, given: str | None, stem: str,
             key: str) -> tuple[str, str | None, list[str]]:
    """(the student graded, whose handout it is where that is another student, notes): the student named (a
    batch's platform identity, or --student), else the handout's owner by its mark, else the file's name."""
    owner = handout_owner(lesson, notebook, None, key)
    if given is not None:
        if owner is not None and owner != given:
            return given, owner, [f"this notebook is another student's handout (its owner mark says so); it was "
                                  f"graded as {given}'s own work"]
        return given, None, []
    if owner is not None and owner != stem:
        return owner, None, [f"graded as {owner}, whose handout this is by its owner mark (the file is named {stem})"]
    return stem, None, []


def shown(numbers: dict[str, float]) -> str:
    """Numbers as `NAME = value, ...` for a note."""
    return ", ".join(f"{name} = {value:g}" for name, value in sorted(numbers.items()))


def release(lesson_id: str, out_dir: Path, roster: Path | None, students: tuple[str, ...], asked: bool = True) -> str:
    """`grader release LESSON --variants`: one handout per student (`<id>.ipynb`, the id a batch matches), and the
    course's record that the lesson is graded per student; what was done, in words."""
    import nbformat

    from grader.intake import layouts, roster as class_list

    if not asked:
        raise GraderError("--roster and --student go with --variants (a notebook per student)")
    lesson = catalog.get(lesson_id)
    ids = [member.student for member in class_list.read(roster).members] if roster else []
    ids = list(dict.fromkeys(layouts.checked_id(i, "student id") for i in [*ids, *students]))
    if not ids:
        raise GraderError("--variants needs --roster ROSTER or --student ID: whose numbers to draw")
    enable(lesson)
    secret = draw.course_secret()
    for student in ids:
        files.write_text(Path(out_dir) / f"{student}.ipynb", nbformat.writes(student_handout(lesson, student, secret)))
    return (f"{len(ids)} notebooks in {out_dir}, each with its student's own numbers; {lesson_id} is now graded per "
            f"student (recorded in {draw.record_path()})\nnext: hand each student their own; grade with `grader batch "
            f"FOLDER --lesson {lesson_id} --roster ROSTER` as usual")
