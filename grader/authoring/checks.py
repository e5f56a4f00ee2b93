"""What `validate` tells a lesson's author without running a kernel, in the author's words, naming the file.

The student's words ("your answer differs from the reference") never reach an
author: a hidden case that contradicts the reference says which file states
which figure; a property that raises on the reference's own answer is the
author's, with its line; a variant whose first choice is not the given cell's
number, a hidden case for an exercise the lesson has not, and a stale solution
notebook (with what changed) are each one line.
"""

from __future__ import annotations

import re
import traceback
from pathlib import Path
from typing import Any

import nbformat

from grader.base import syntax
from grader.judge import expectations, matching
from grader.lesson import catalog, handout, staff_code
from grader.lesson.cases import AskReference, Holds, Raises, Stated
from grader.result import variants
from grader.run import decoded

DRAWN = tuple(range(1, 21))
"""The seeds whose hidden cases are each asked of the reference (`validate --draws N` asks N instead)."""


def hidden_figures(lesson: catalog.Lesson, seeds: tuple[int, ...] = DRAWN) -> list[str]:
    """Every hidden case of every seed drawn, asked of the reference: a stated figure it does not give, a `raises`
    it does not raise, or a case it cannot answer, each named by seed and case in the author's words (the first ten,
    and how many more)."""
    problems: list[str] = []
    reference = staff_code.reference(lesson)
    for seed in seeds:
        for exercise_id, cases in staff_code.hidden_cases(lesson, seed).items():
            problems += [f"{lesson.solutions / 'hidden.py'} ({exercise_id}, seed {seed}): {wrong}"
                         for case in cases if not case.kernel_names() for wrong in [_disagrees(case, reference)] if wrong]
    unique = list(dict.fromkeys(problems))
    return unique[:10] + ([f"... and {len(unique) - 10} more such hidden cases"] if len(unique) > 10 else [])


def _disagrees(case: catalog.Case, reference: dict[str, Any]) -> str | None:
    """How the reference's own answer to one hidden case contradicts what the case says is right, if it does."""
    if not isinstance(case.check, (Stated, Raises, AskReference)):
        return None
    try:
        got = expectations.reference_answer(case, reference)
    except Exception as err:
        if isinstance(case.check, Raises):
            raised = {k.__name__ for k in type(err).__mro__}
            return None if case.check.type in raised else (
                f"the case {case.label()} must raise {case.check.type}, but the reference raises {type(err).__name__}")
        states = f"for which the case states {_short(case.check.value)}" if isinstance(case.check, Stated) else \
            "which the case asks it to answer"
        return f"the reference raises {type(err).__name__} ({str(err)[:80]}) on {case.label()}, {states}"
    if isinstance(case.check, Raises):
        return (f"the case {case.label()} must raise {case.check.type}, but the reference answers "
                f"{_short(variants.plain(got))}: the input is valid under this seed")
    if isinstance(case.check, Stated) and matching.compare(expectations.as_answered(got), decoded.decode(
            case.check.value), case) is not None:
        return (f"the case {case.label()} states {_short(case.check.value)}, but the reference answers "
                f"{_short(variants.plain(got))}")
    return None


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
    assigned = handout.assigned(source)
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
    path = lesson.solutions / "solution.ipynb"
    try:
        committed = nbformat.read(str(path), as_version=4).cells
    except (OSError, ValueError):
        return [f"{path} is missing or unreadable: run grader build-solution {lesson.id}"]
    built = handout.solution_notebook(lesson).cells
    if [c.source for c in committed] == [c.source for c in built]:
        return []
    answers = set(handout.answer_cells(lesson))
    written = {c.get("id"): c.source for c in lessons_scaffold_cells(lesson)}
    causes = set()
    by_id = {c.get("id"): c.source for c in committed}
    for cell in built:
        cell_id, before = cell.get("id"), by_id.get(cell.get("id"))
        if before == cell.source:
            continue
        causes.add("answers.py" if cell_id in answers else
                   "the figures lesson.toml states (quoted in the text)" if _only_quoted(written.get(cell_id), before)
                   else f"scaffold.py (cell {cell_id})" if before is not None else "scaffold.py (its cells)")
    if len(committed) != len(built):
        causes.add("scaffold.py (its cells)")
    return [f"{path} is stale: {' and '.join(sorted(causes)) or 'its cells'} changed since it was built: run grader "
            f"build-solution {lesson.id}"]


def _only_quoted(template: str | None, before: str | None) -> bool:
    """Whether a cell's text as built before is its template now with other figures in its placeholders: then
    only what lesson.toml states (a quoted figure, a variant's first number) changed, not the text."""
    if template is None or before is None or "{{" not in template:
        return False
    pattern = ".+?".join(re.escape(part) for part in handout.ANY_PLACEHOLDER.split(template))
    return re.fullmatch(pattern, before, re.DOTALL) is not None


def lessons_scaffold_cells(lesson: catalog.Lesson) -> list[Any]:
    """The scaffold's cells as written (placeholders unfilled)."""
    from grader.intake import load

    return list(load.notebook_from_script((lesson.folder / "scaffold.py").read_text(encoding="utf-8")).cells)


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


_NUMBER = re.compile(r"(?<![\w.{}])\d+(?:\.\d+)?(?![\w{}]|\.\d)")
"""A number as a reader reads it in prose: not part of a name (p95, x2), a placeholder or a longer number."""
_PLAIN = re.compile(r"\{\{[^}]*\}\}|\$\$.*?\$\$|\$[^$\n]*\$", re.DOTALL)
"""What is not the author's typed prose: placeholders and LaTeX (`$(B-1)\\delta/2$` is a formula, not a figure)."""
_HEADING = re.compile(r"^#+ .*?`([\w.-]+)`", re.MULTILINE)
"""An exercise's heading, `## Exercise `burst``: the text below it, to the next such heading, is that exercise's."""


def typed_variants(lesson: catalog.Lesson) -> list[str]:
    """A number that varies per student typed into the text as the seed's figure: every student would read it while
    their grade uses their own. Where an exercise uses a varying name (its text or its reference answer names it,
    or its `varies` figures move with it), a literal equal to one of that name's values in its text, or in its
    cases' notes and hints, is refused, naming the placeholder to write."""
    if not lesson.variants:
        return []
    texts = exercise_texts(lesson)
    answers = handout.answer_cells(lesson)
    moved = _moved_by(lesson)
    problems = []
    for ex in lesson.exercises:
        code = "\n".join(c.source for cid, c in answers.items() if cid == f"answer-{ex.id}"
                         or c.cell_type == "code" and syntax.defined_names([c.source]) & set(ex.needs))
        said = [(lesson.folder / "scaffold.py", "its text", texts.get(ex.id, ""))]
        said += [(lesson.folder / "lesson.toml", f"the {key} of {case.label()}", getattr(case, key))
                 for case in ex.cases for key in ("note", "hint")]
        for name, choices in lesson.variants:
            if ex.id not in moved[name] and not re.search(rf"\b{name}\b", texts.get(ex.id, "") + "\n" + code):
                continue
            for path, where, words in said:
                typed = [t for t in _NUMBER.findall(_PLAIN.sub(" ", words)) if float(t) in map(float, choices)]
                problems += [f"{path}: exercise {ex.id}: {where} writes {typed[0]}, one of {name}'s numbers, which "
                             f"vary per student: write {{{{{name}}}}} so each reads their own"] if typed else []
    return problems


def _moved_by(lesson: catalog.Lesson) -> dict[str, set[str]]:
    """Per varying name, the exercises whose `varies` figures change when that name alone takes another value."""
    seed = variants.defaults(lesson)
    before = variants.public_figures(lesson, seed)
    moved: dict[str, set[str]] = {}
    for name, choices in lesson.variants:
        after = variants.public_figures(lesson, dict(seed, **{name: choices[-1]}))
        moved[name] = {key.split("/")[0] for key in before if repr(before[key]) != repr(after.get(key))}
    return moved


def exercise_texts(lesson: catalog.Lesson) -> dict[str, str]:
    """The Markdown under each exercise's heading (a heading naming the exercise id in backticks), to the next."""
    known = {ex.id for ex in lesson.exercises}
    texts: dict[str, str] = {}
    current = None
    for cell in lessons_scaffold_cells(lesson):
        if cell.cell_type != "markdown":
            continue
        named = [m for m in _HEADING.findall(cell.source) if m in known]
        current = named[0] if named else current
        if current:
            texts[current] = texts.get(current, "") + "\n" + cell.source
    return texts
