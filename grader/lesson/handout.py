"""The lesson's notebooks: the student's handout (scaffold.py), the solution, and what each cell of them is.

A handout's given cells are recognised by their text (a student may lose cell
ids and tags); `release` writes the handout a student receives, which holds no
reference code.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from grader.base import files, syntax
from grader.base.errors import LessonError
from grader.intake import script
from grader.lesson import catalog
from grader.lesson.cases import Stated

PLACEHOLDER = re.compile(r"\{\{([A-Z][A-Z0-9_]*)\}\}")
"""`{{NAME}}` in a Markdown cell: one of the lesson's variant numbers, filled in for the student's handout."""


def scaffold(lesson: catalog.Lesson, numbers: dict[str, float] | None = None,
             figures: dict[str, Any] | None = None, text: bool = True) -> Any:
    """The student notebook built from `scaffold.py` (given cells + answer stubs), with the lesson's variant
    numbers filled in: `numbers` where given (a student's own), else the seed's (each variant's first choice).
    A quoted figure of a case that varies is `figures`' (`exercise/index`: the reference's for those numbers);
    with numbers of one's own and no such figure, it is refused, never the seed's. A placeholder that names
    nothing is refused. `text=False`: the code alone is wanted (the reference's namespace); Markdown is left as
    written."""
    from grader.intake import load  # the notebook library: not for a template's start (warm_sources)

    path = lesson.folder / "scaffold.py"
    notebook = load.notebook_from_script(path.read_text(encoding="utf-8"))
    notebook.metadata["kernelspec"] = dict(load.KERNEL)
    notebook.metadata["grader"] = {"lesson": lesson.id, "format": 1, "version": lesson.version}
    seed = seed_numbers(lesson)
    values = seed | dict(numbers or {})
    own = values != seed
    for cell in notebook.cells:
        if cell.cell_type == "markdown" and text:
            cell.source = FIGURE.sub(lambda m: _figure(lesson, m[1], int(m[2]), own, figures), cell.source)
            cell.source = PLACEHOLDER.sub(lambda m: f"{values[m[1]]:g}" if m[1] in values else m[0], cell.source)
            left = ANY_PLACEHOLDER.search(cell.source)
            if left:
                raise LessonError(f"{path}: {left[0]} in cell {cell.get('id', '?')} names nothing (variants: "
                                  f"{', '.join(values) or 'none'}; a stated figure is {{{{figure:EXERCISE/INDEX}}}})")
        elif cell.get("id") == lesson.variant_cell:
            cell.source = variant_source(cell.source, values)
    return notebook


def seed_numbers(lesson: catalog.Lesson) -> dict[str, float]:
    """The seed's numbers: each variant's first choice (the handout every student gets unless a course varies it)."""
    return {name: choices[0] for name, choices in lesson.variants}


FIGURE = re.compile(r"\{\{figure:([a-z0-9-]+)/(\d+)\}\}")
"""`{{figure:EXERCISE/INDEX}}` in a Markdown cell: the figure lesson.toml states for that public case, so the
text and the check never disagree."""


ANY_PLACEHOLDER = re.compile(r"\{\{[^{}\n]*\}\}")
"""Whatever `{{...}}` is left after the figures and the numbers are filled in: a placeholder that names nothing."""


def _figure(lesson: catalog.Lesson, exercise_id: str, index: int, own: bool = False,
            figures: dict[str, Any] | None = None) -> str:
    cases = lesson.exercise(exercise_id).cases
    check = cases[index].check if index < len(cases) else None
    if not isinstance(check, Stated):
        raise LessonError(f"lesson {lesson.id}: {{{{figure:{exercise_id}/{index}}}}} names no stated figure")
    value = check.value
    if own and cases[index].varies:
        key = f"{exercise_id}/{index}"
        if figures is None or key not in figures:
            raise LessonError(f"lesson {lesson.id}: {{{{figure:{key}}}}} quotes a figure that varies, and this "
                              "handout's numbers are not the seed's: its figure must be computed for them")
        value = figures[key]
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return repr(value)
    return str(value) if isinstance(value, int) else f"{value:.12g}"


def variant_source(source: str, values: dict[str, float]) -> str:
    """A variant cell's source with each `NAME = ...` line of `values` set to its value (comments kept)."""
    def line(text: str) -> str:
        match = re.match(r"^([A-Z][A-Z0-9_]*)\s*=\s*[^#]*?(\s*#.*)?$", text)
        if not match or match[1] not in values:
            return text
        value = values[match[1]]
        shown = repr(int(value)) if float(value).is_integer() and "." not in repr(value) else repr(float(value))
        return f"{match[1]} = {shown}{match[2] or ''}"
    return "\n".join(line(text) for text in source.splitlines())


def found_numbers(lesson: catalog.Lesson, notebook: Any,
                  given_cells: Mapping[str, str] | None = None) -> tuple[int | None, dict[str, float]]:
    """(index, numbers) of the notebook's variant cell, recognised by text, never by position or id: the code cell
    that is the lesson's given variant cell but for its numbers; where none is (the student edited it), the first
    code cell that assigns every variant name a number at top level. (None, {}) when there is neither. A decoy cell
    placed before the given one is not taken for it. `given_cells`: the given cells, where the caller prepared
    them (a grade's prepared lesson); else read from the scaffold."""
    names = {name for name, _ in lesson.variants}
    if not names:
        return None, {}
    seed = seed_numbers(lesson)
    cells = given_by_id(lesson) if given_cells is None else given_cells
    given = variant_source(cells.get(lesson.variant_cell, ""), seed).strip()
    first: tuple[int, dict[str, float]] | None = None
    for index, cell in enumerate(notebook.cells):
        if cell.cell_type != "code":
            continue
        values = assigned(cell.source)
        if not names <= set(values):
            continue
        held = {name: values[name] for name in names}
        if given and variant_source(cell.source, seed).strip() == given:
            return index, held
        first = first or (index, held)
    return first if first is not None else (None, {})


def assigned(source: str) -> dict[str, float]:
    """The names a cell assigns a number at top level."""
    try:
        tree = syntax.parse(source)
    except (SyntaxError, ValueError, RecursionError):
        return {}
    return {node.targets[0].id: node.value.value for node in tree.body
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
            and isinstance(node.value, ast.Constant) and isinstance(node.value.value, (int, float))
            and not isinstance(node.value.value, bool)}


def needed_names(lesson: catalog.Lesson) -> set[str]:
    """Every name the lesson's exercises need."""
    return {name for ex in lesson.exercises for name in ex.needs}


def other_lessons(lesson: catalog.Lesson) -> Iterator[catalog.Lesson]:
    """The course's other lessons that can be read (one that cannot is passed over). `lesson` is at hand already:
    it is never looked up again by its id."""
    for other_id in catalog.available():
        if other_id == lesson.id:
            continue
        try:
            yield catalog.get(other_id)
        except LessonError:
            continue


def prompt_texts(lesson: catalog.Lesson) -> frozenset[str]:
    """The scaffold's own text (stripped) of its prediction and explanation cells: an unchanged one is unanswered."""
    return frozenset(cell.source.strip() for cell in scaffold(lesson).cells if cell.cell_type == "markdown"
                     and {"prediction", "explanation"} & set(cell.metadata.get("tags", [])))


def given_sources(lesson: catalog.Lesson) -> frozenset[str]:
    """The sources (stripped) of the scaffold's code cells tagged `given`."""
    return frozenset(source.strip() for source in tagged(scaffold(lesson).cells, "given"))


def warm_sources(lesson: catalog.Lesson) -> tuple[str, ...]:
    """The sources of the lesson's `warm_cells`, checked: they must be the scaffold's first code cells, in order,
    tagged `given`, and none may end in an expression (a kernel would display its value; the template shows
    nothing). A template runs them once with the batch's hash seed; they must not print, draw random numbers
    from a shared generator, start threads or read the clock, since every kernel then starts from that one run."""
    if not lesson.warm_cells:
        return ()
    # Read as the script it is: a batch starts its template from these, before the notebook library is loaded.
    text = (lesson.folder / "scaffold.py").read_text(encoding="utf-8")
    code = [cell for cell in script.script_cells(text) if cell.kind == "code"]
    first = [cell.cell_id for cell in code[:len(lesson.warm_cells)]]
    if first != list(lesson.warm_cells):
        raise LessonError(f"lesson {lesson.id}: warm_cells {list(lesson.warm_cells)} are not the scaffold's first "
                          f"code cells ({first})")
    sources = []
    for cell in code[:len(lesson.warm_cells)]:
        if "given" not in cell.tags:
            raise LessonError(f"lesson {lesson.id}: warm cell '{cell.cell_id}' is not a given cell")
        source = cell.source if cell.cell_id != lesson.variant_cell else variant_source(
            cell.source, seed_numbers(lesson))  # as scaffold() writes it
        body = syntax.parse(source).body
        if body and isinstance(body[-1], ast.Expr):
            raise LessonError(f"lesson {lesson.id}: warm cell '{cell.cell_id}' ends in an expression, "
                              "whose value a kernel would display")
        sources.append(source)
    return tuple(sources)


def given_by_id(lesson: catalog.Lesson) -> dict[str, str]:
    """The scaffold's given code cells, by cell id."""
    return {cell.get("id", ""): cell.source for cell in scaffold(lesson).cells
            if cell.cell_type == "code" and "given" in cell.metadata.get("tags", [])}


def given_cells_in_order(lesson: catalog.Lesson) -> list[str]:
    """The scaffold's given code cells, in notebook order."""
    return tagged(scaffold(lesson).cells, "given")


def release(lesson_id: str, out_dir: str | Path) -> Path:
    """Write the student notebook `<out_dir>/<lesson id>.ipynb`; no reference code is in it."""
    import nbformat

    lesson = catalog.get(lesson_id)
    return files.write_text(Path(out_dir) / f"{lesson.id}.ipynb", nbformat.writes(scaffold(lesson)))


def answer_cells(lesson: catalog.Lesson) -> dict[str, Any]:
    """The completed answer cells of `solutions/<id>/answers.py`, by cell id (ids start `answer-`)."""
    path = lesson.solutions / "answers.py"
    if not path.is_file():
        raise LessonError(f"no reference for lesson {lesson.id}: {path} is missing (only instructors have solutions/: "
                          "run from the course checkout, or name its folder with --course DIR or GRADER_COURSE)")
    from grader.intake import load

    cells = load.notebook_from_script(path.read_text(encoding="utf-8")).cells
    return {cell["id"]: cell for cell in cells if cell.cell_type == "code" and cell["id"].startswith("answer-")}


def solution_notebook(lesson: catalog.Lesson) -> Any:
    """The scaffold with every answer cell replaced by the reference answer."""
    notebook = scaffold(lesson)
    answers = answer_cells(lesson)
    for cell in notebook.cells:
        if cell["id"] in answers:
            done = answers[cell["id"]]
            cell.source = done.source
    missing = set(answers) - {cell["id"] for cell in notebook.cells}
    if missing:
        raise LessonError(f"answers.py cells {sorted(missing)} match no answer cell of the scaffold")
    return notebook


def tagged(cells: Any, tag: str) -> list[str]:
    return [c.source for c in cells if c.cell_type == "code" and tag in c.metadata.get("tags", [])]
