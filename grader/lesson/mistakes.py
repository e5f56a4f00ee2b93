"""The mistakes a lesson's hidden cases are built to catch (`solutions/<id>/mistakes.toml`, staff only): each a
name, the exercise that must lose points for it, and a wrong version of answer cells (a patch in the notebook's
`# %%` form: `answer-...` cells replace the solution's of the same id, `extra-...` cells are added at the end, other
cells are comments). A notebook with a mistake is the reference's solution notebook so patched."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from grader.base.errors import LessonError
from grader.base.shapes import Shape

FILE = "mistakes.toml"
_SHAPE = Shape({"type": "object", "additionalProperties": False, "properties": {"mistakes": {
    "type": "array", "items": {"type": "object", "additionalProperties": False, "required": ["name", "exercise", "patch"],
                               "properties": {"name": {"type": "string"}, "exercise": {"type": "string"},
                                              "patch": {"type": "string"}}}}}}, draft="7")


@dataclass(frozen=True)
class Mistake:
    """One declared mistake."""

    name: str
    exercise: str
    """The exercise that must lose points for it."""
    patch: Path
    """The wrong answer cells, by the ids of the cells they replace."""


def declared(lesson: Any) -> tuple[Mistake, ...]:
    """The lesson's declared mistakes (none without a mistakes.toml), each checked: its exercise exists and its
    patch is a file beside it."""
    path = lesson.solutions / FILE
    if not path.is_file():
        return ()
    try:
        with path.open("rb") as handle:
            spec = tomllib.load(handle)
    except (OSError, tomllib.TOMLDecodeError) as err:
        raise LessonError(f"{path}: not valid TOML: {err}") from None
    error = _SHAPE.first_error(spec)
    if error is not None:
        raise LessonError(f"{path}: {'.'.join(map(str, error.absolute_path)) or 'top level'}: {error.message}")
    found = []
    known = {ex.id for ex in lesson.exercises}
    for entry in spec.get("mistakes", []):
        patch = (path.parent / entry["patch"]).resolve()
        if entry["exercise"] not in known:
            raise LessonError(f"{path}: mistake {entry['name']!r} names no exercise of {lesson.id} "
                              f"({entry['exercise']!r}; known: {', '.join(sorted(known))})")
        if not patch.is_file() or lesson.solutions.resolve() not in patch.parents:
            raise LessonError(f"{path}: mistake {entry['name']!r}: its patch {entry['patch']} is not a file in "
                              f"{lesson.solutions}")
        found.append(Mistake(entry["name"], entry["exercise"], patch))
    return tuple(found)


def notebook(lesson: Any, mistake: Mistake) -> Any:
    """The solution notebook with the mistake's cells in place of the answers of the same ids."""
    from grader.intake import load
    from grader.lesson import handout

    book = handout.solution_notebook(lesson)
    patch = [c for c in load.notebook_from_script(mistake.patch.read_text("utf-8")).cells if c.cell_type == "code"]
    cells = {c.get("id"): c.source for c in patch if str(c.get("id", "")).startswith("answer-")}
    ids = {cell.get("id") for cell in book.cells}
    unknown = sorted(set(cells) - ids)
    if unknown or not cells:
        raise LessonError(f"{mistake.patch}: names {'cells the solution notebook has not (' + ', '.join(unknown) + ')'}"
                          if unknown else f"{mistake.patch}: holds no answer cell (`# %% id=answer-...`)")
    for cell in book.cells:
        if cell.get("id") in cells:
            cell.source = cells[cell["id"]]
    book.cells.extend(c for c in patch if str(c.get("id", "")).startswith("extra-"))  # cells of the student's own
    return book
