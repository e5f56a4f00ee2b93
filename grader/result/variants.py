"""Per-student variants: numbers of one's own in the handout, its given cells and its public figures.

A lesson may declare numbers a course draws per student (`[variants]` in
lesson.toml: each name with its choices, the first being the seed's, and the
given cell that defines them). Variants are the course's choice, lesson by
lesson, and off by default: `grader release LESSON --variants ...` turns them on
for that lesson (recorded in `course.variants`, beside the course secret) and
writes each student's handout with their numbers. Without them every student
gets the seed's numbers and is graded on them.

A student's numbers are drawn from the course secret, the lesson and the
student's id, again at every grade, never read from the notebook: a notebook
carrying another student's numbers runs its owner's variant cell in place of
its own (recognised by what it assigns, not by ids) and its report says whose
handout it was. Public figures that depend on the numbers (`varies = true`)
are computed by the reference for the student's numbers; a handout also
carries them in its metadata, for the student's self-check, which has no
reference.
"""

from __future__ import annotations

import ast
import copy
import dataclasses
import hashlib
import hmac
import json
from pathlib import Path
from typing import Any

import numpy as np

from grader.base import files
from grader.base.errors import GraderError
from grader.base.options import Options
from grader.judge import expectations
from grader.lesson import handout, lessons, staff_code
from grader.result import seeds

RECORD_NAME = "course.variants"


def record_path() -> Path:
    """Where the course records which lessons are graded per student: beside the course secret."""
    return seeds.secret_path().parent / RECORD_NAME


def enabled(lesson_id: str) -> bool:
    """Whether the course turned variants on for this lesson."""
    try:
        data = json.loads(files.read_regular(record_path(), 1 << 20))
    except (OSError, ValueError):
        return False
    return isinstance(data, dict) and lesson_id in (data.get("lessons") or [])


def enable(lesson: lessons.Lesson) -> Path:
    """Record that `lesson` is graded per student from now on (grade, batch and the platforms read it)."""
    if not lesson.variants:
        raise GraderError(f"lesson {lesson.id} declares no [variants]: every student gets the seed's numbers")
    path = record_path()
    try:
        data = json.loads(files.read_regular(path, 1 << 20))
    except (OSError, ValueError):
        data = {}
    known = sorted(set((data.get("lessons") if isinstance(data, dict) else None) or []) | {lesson.id})
    return files.write_text(path, json.dumps({"lessons": known}, indent=1) + "\n")


def defaults(lesson: lessons.Lesson) -> dict[str, float]:
    """The seed's numbers (each variant's first choice)."""
    return {name: choices[0] for name, choices in lesson.variants}


def numbers_for(lesson: lessons.Lesson, student: str, secret: bytes | None) -> dict[str, float]:
    """A student's numbers: each drawn from its choices by an HMAC of the lesson, the student and its name."""
    drawn = {}
    for name, choices in lesson.variants:
        message = "\0".join(("inference-grader variant", lesson.id, student, name)).encode("utf-8", "surrogateescape")
        digest = hmac.new(secret or b"inference-grader: no course secret", message, hashlib.sha256).digest()
        drawn[name] = choices[int.from_bytes(digest[:8], "big") % len(choices)]
    return drawn


def graded_numbers(lesson: lessons.Lesson, student: str) -> dict[str, float] | None:
    """The numbers a grade uses: the student's own where the course turned variants on, else None (the seed's)."""
    if not lesson.variants or not enabled(lesson.id):
        return None
    return numbers_for(lesson, student, seeds.course_secret())


def found_numbers(lesson: lessons.Lesson, notebook: Any) -> tuple[int | None, dict[str, float]]:
    """(index, numbers) of the notebook's variant cell, recognised by text: the first code cell that assigns every
    variant name a number at top level; (None, {}) when there is none."""
    names = {name for name, _ in lesson.variants}
    for index, cell in enumerate(notebook.cells):
        if cell.cell_type != "code" or not names:
            continue
        try:
            tree = ast.parse(cell.source)
        except (SyntaxError, ValueError, RecursionError):
            continue
        values = {node.targets[0].id: node.value.value for node in tree.body
                  if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
                  and isinstance(node.value, ast.Constant) and isinstance(node.value.value, (int, float))}
        if names <= set(values):
            return index, {name: values[name] for name in names}
    return None, {}


def applied(lesson: lessons.Lesson, notebook: Any, numbers: dict[str, float]) -> tuple[Any, dict[str, float]]:
    """The notebook to run, its variant cell set to `numbers` (a copy), and the numbers the notebook itself held."""
    index, held = found_numbers(lesson, notebook)
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


def public_figures(lesson: lessons.Lesson, numbers: dict[str, float]) -> dict[str, Any]:
    """The reference's answers, for these numbers, to every public case that varies (`exercise/index` keys)."""
    reference = staff_code.reference(lesson, tuple(sorted(numbers.items())))
    figures = {}
    for exercise in lesson.exercises:
        for index, case in enumerate(exercise.cases):
            if case.varies:
                figures[f"{exercise.id}/{index}"] = plain(expectations.reference_answer(case, reference))
    return figures


def student_handout(lesson: lessons.Lesson, student: str, secret: bytes | None) -> Any:
    """One student's handout: their numbers in the text and the variant cell, their public figures in its
    metadata (for the self-check), and whose it is."""
    numbers = numbers_for(lesson, student, secret)
    notebook = handout.scaffold(lesson, numbers)
    notebook.metadata["grader"].update(student=student, public=public_figures(lesson, numbers))
    return notebook


def shown(numbers: dict[str, float]) -> str:
    """Numbers as `NAME = value, ...` for a note."""
    return ", ".join(f"{name} = {value:g}" for name, value in sorted(numbers.items()))


def own_figures(lesson: lessons.Lesson, ex_id: str, cases: list[lessons.Case], numbers: dict[str, float] | None,
                 notebook: Any, graded: bool) -> tuple[list[lessons.Case], dict[str, Any] | None]:
    """Public cases whose figures follow the student's own numbers (`varies`): graded, the reference answers them
    for those numbers (the namespace returned); in a self-check, which has no reference, the figures the handout
    carries for its numbers stand in for the seed's."""
    varied = [i for i, case in enumerate(cases) if case.varies and not case.hidden]
    if not varied:
        return cases, None
    if graded:
        if not numbers or numbers == defaults(lesson):
            return cases, None
        unstated = [dataclasses.replace(c, expect=None, has_expect=False) if i in varied else c
                    for i, c in enumerate(cases)]
        return unstated, staff_code.reference(lesson, tuple(sorted(numbers.items())))
    figures = (notebook.metadata.get("grader") or {}).get("public")
    if not isinstance(figures, dict) or found_numbers(lesson, notebook)[1] in ({}, defaults(lesson)):
        return cases, None
    return [dataclasses.replace(c, expect=figures[f"{ex_id}/{i}"], has_expect=True)
            if i in varied and f"{ex_id}/{i}" in figures else c for i, c in enumerate(cases)], None


def own_options(lesson: lessons.Lesson, options: Options, student: str, secret: bytes | None,
                per_student: bool) -> Options:
    """A student's options as a batch's parent decides them (so a cluster's workers need no course secret): their
    own hidden-case seed where none is recorded or given, and their own numbers where the course grades the lesson
    per student (`per_student`: `enabled`, read once per batch)."""
    if options.seed is None:
        options = dataclasses.replace(options, seed=seeds.hidden_seed(lesson.id, student, secret),
                                      seed_from="course secret" if secret else "lesson and student")
    if not per_student or not lesson.variants:
        return options
    return dataclasses.replace(options, variant=tuple(sorted(numbers_for(lesson, student, secret).items())))


def release(lesson_id: str, out_dir: Path, roster: Path | None, students: tuple[str, ...], asked: bool = True) -> str:
    """`grader release LESSON --variants`: one handout per student (`<id>.ipynb`, the id a batch matches), and the
    course's record that the lesson is graded per student; what was done, in words."""
    import nbformat

    from grader.intake import layouts, roster as class_list

    if not asked:
        raise GraderError("--roster and --student go with --variants (a notebook per student)")
    lesson = lessons.get(lesson_id)
    ids = [member.student for member in class_list.read(roster).members] if roster else []
    ids = list(dict.fromkeys(layouts.student_id(i) for i in [*ids, *students]))
    if not ids:
        raise GraderError("--variants needs --roster ROSTER or --student ID: whose numbers to draw")
    unsafe = [i for i in ids if "/" in i or "\\" in i or i.startswith(".") or not i.isprintable()]
    if unsafe:
        raise GraderError(f"student id {layouts.printable(unsafe[0])!r} cannot name a file (a separator, a leading "
                          "dot or a control character): fix it in the roster")
    enable(lesson)
    secret = seeds.course_secret()
    for student in ids:
        files.write_text(Path(out_dir) / f"{student}.ipynb", nbformat.writes(student_handout(lesson, student, secret)))
    return (f"{len(ids)} notebooks in {out_dir}, each with its student's own numbers; {lesson_id} is now graded per "
            f"student (recorded in {record_path()})\nnext: hand each student their own; grade with `grader batch "
            f"FOLDER --lesson {lesson_id} --roster ROSTER` as usual")
