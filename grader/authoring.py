"""What `validate` tells a lesson's author without running a kernel, in the author's words, naming the file.

The student's words ("your answer differs from the reference") never reach an
author: a hidden case that contradicts the reference says which file states
which figure; a property that raises on the reference's own answer is the
author's, with its line; a variant whose first choice is not the given cell's
number, a hidden case for an exercise the lesson has not, and a stale solution
notebook (with what changed) are each one line.
"""

from __future__ import annotations

import traceback
from pathlib import Path
from typing import Any

from grader.judge import expectations, matching
from grader.lesson import catalog, handout, staff_code
from grader.lesson.cases import Holds, Stated
from grader.result import variants
from grader.run import decoded

DRAWN = (1, 2, 3)
"""The seeds whose hidden cases are checked against the reference here (validate --draws asks more)."""


def hidden_figures(lesson: catalog.Lesson, seeds: tuple[int, ...] = DRAWN) -> list[str]:
    """A hidden case that states a figure the reference does not give, in the author's words."""
    problems: list[str] = []
    reference = staff_code.reference(lesson)
    for seed in seeds:
        for exercise_id, cases in staff_code.hidden_cases(lesson, seed).items():
            for case in cases:
                if not isinstance(case.check, Stated) or case.kernel_names():
                    continue
                stated = case.check.value
                try:
                    got = expectations.reference_answer(case, reference)
                except Exception as err:
                    problems.append(f"{lesson.solutions / 'hidden.py'} ({exercise_id}, seed {seed}): the reference "
                                    f"raises {type(err).__name__} on {case.label()}, for which the case states "
                                    f"{_short(stated)}")
                    continue
                mismatch = matching.compare(expectations.as_answered(got), decoded.decode(stated), case)
                if mismatch is not None:
                    problems.append(f"{lesson.solutions / 'hidden.py'} ({exercise_id}, seed {seed}): the case "
                                    f"{case.label()} states {_short(stated)}, but the reference answers "
                                    f"{_short(variants.plain(got))}")
    return sorted(set(problems))[:10]


def properties_run(lesson: catalog.Lesson) -> list[str]:
    """A property (properties.py) that raises on the reference's own answer: the author's, with the line."""
    checks = staff_code.properties(lesson)
    reference = staff_code.reference(lesson)
    path = lesson.folder / "properties.py"
    problems = []
    cases = [(ex.id, c) for ex in lesson.exercises for c in ex.cases]
    cases += [(ex_id, c) for ex_id, drawn in staff_code.hidden_cases(lesson, DRAWN[0]).items() for c in drawn]
    for exercise_id, case in cases:
        if not isinstance(case.check, Holds) or case.kernel_names() or case.check.name not in checks:
            continue
        name = case.check.name
        try:
            answer = expectations.as_answered(expectations.reference_answer(case, reference))
        except Exception:  # the reference cannot answer it outside a kernel (a live replay): nothing to try here
            continue
        try:
            checks[name](expectations.asked(case), answer)
        except Exception as err:
            frames = [f for f in traceback.extract_tb(err.__traceback__) if Path(f.filename) == path]
            where = f"{path}, line {frames[-1].lineno}" if frames else str(path)
            problems.append(f"{where}: `{name}` raised {type(err).__name__}: {str(err)[:160]} on the "
                            f"reference's answer to {case.label()} ({exercise_id}): the check is at fault, not a student")
    return problems


def variant_firsts(lesson: catalog.Lesson) -> list[str]:
    """Each variant's first choice must be the number the given cell assigns in scaffold.py (the seed's, which the
    text and the stated figures are written for); else the plain handout ships the first choice in its place."""
    if not lesson.variants:
        return []
    source = next((c.source for c in lessons_scaffold_cells(lesson) if c.get("id") == lesson.variant_cell), None)
    if source is None:
        return [f"{lesson.folder / 'lesson.toml'}: [variants] names the cell {lesson.variant_cell!r}, which is no "
                "given cell of the scaffold"]
    assigned = variants.assigned(source)
    return [f"{lesson.folder / 'lesson.toml'}: [variants] {name}'s first choice is {choices[0]:g}, but the given cell "
            f"{lesson.variant_cell!r} assigns {assigned[name]:g}: the first choice is the text's own number"
            if name in assigned else
            f"{lesson.folder / 'lesson.toml'}: [variants] {name} is not assigned a number in the given cell "
            f"{lesson.variant_cell!r}" for name, choices in lesson.variants
            if name not in assigned or assigned[name] != choices[0]]


def hidden_names(lesson: catalog.Lesson) -> list[str]:
    """hidden.py's keys must be the lesson's exercise ids."""
    known = {ex.id for ex in lesson.exercises}
    drawn = staff_code.hidden_cases(lesson, DRAWN[0])
    return [f"{lesson.solutions / 'hidden.py'}: draws cases for {key!r}, which lesson.toml has no exercise of "
            f"(exercises: {', '.join(sorted(known))})" for key in sorted(set(drawn) - known)]


def stale_solution(lesson: catalog.Lesson) -> list[str]:
    """The committed `solution.ipynb`, if stale or missing, named with what changed since it was built."""
    import nbformat

    path = lesson.solutions / "solution.ipynb"
    try:
        committed = nbformat.read(str(path), as_version=4).cells
    except (OSError, ValueError):
        return [f"{path} is missing or unreadable: run grader build-solution {lesson.id}"]
    built = handout.solution_notebook(lesson).cells
    if [c.source for c in committed] == [c.source for c in built]:
        return []
    answers = set(handout.answer_cells(lesson))
    quoting = {c.get("id") for c in lessons_scaffold_cells(lesson) if "{{figure:" in c.source}
    causes = set()
    by_id = {c.get("id"): c.source for c in committed}
    for cell in built:
        if by_id.get(cell.get("id")) == cell.source:
            continue
        causes.add("answers.py" if cell.get("id") in answers else
                   "the figures lesson.toml states (quoted in the text)" if cell.get("id") in quoting else "scaffold.py")
    if len(committed) != len(built):
        causes.add("scaffold.py")
    return [f"{path} is stale: {' and '.join(sorted(causes)) or 'its cells'} changed since it was built: run grader "
            f"build-solution {lesson.id}"]


def lessons_scaffold_cells(lesson: catalog.Lesson) -> list[Any]:
    """The scaffold's cells as written (placeholders unfilled)."""
    from grader.intake import load

    return list(load.notebook_from_script((lesson.folder / "scaffold.py").read_text(encoding="utf-8")).cells)


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."
