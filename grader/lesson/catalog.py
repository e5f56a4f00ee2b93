"""Lessons as data: `lessons/<id>/` (public) and `solutions/<id>/` (grader only).

A lesson folder holds `lesson.toml` (exercises, points, kind, needed names and
public cases with the figures the lesson text states), `scaffold.py` (the
student notebook in `# %%` form: given cells tagged `given`, one answer cell per
exercise tagged `answer`) and optionally `properties.py` (public consistency
checks run in the grader process). A solutions folder holds `answers.py` (the
completed answer cells, same ids), `hidden.py` (`cases(rng)`: hidden cases per
exercise) and the generated `solution.ipynb`. Nothing in this module knows a
particular lesson: a new lesson is a new pair of folders.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from grader.base import syntax
from grader.base.errors import LessonError
from grader.lesson import lesson_schema, written
from grader.lesson.cases import KERNEL_ARG, PASTE_ITEMS, AskReference, Case, case_from_spec
from grader.lesson.folders import course_folder
from grader.lesson.written import Question

KINDS = ("simulated", "measured")


@dataclass(frozen=True)
class Exercise:
    """One graded exercise of a lesson."""

    id: str
    """Exercise id, fixed by the contract."""
    title: str
    """Short human title."""
    kind: str
    """`simulated` (checked exactly) or `measured` (checked for structure only)."""
    points: float
    """Points for passing every case."""
    needs: tuple[str, ...]
    """Names the student notebook must define for this exercise."""
    cases: tuple[Case, ...]
    """Public cases (the figures the lesson text states)."""
    scoring: str = "all"
    """`all`: the points for passing every case, else 0 (the default). `cases`: the points times the share of
    cases that passed, every case (public or hidden) weighing the same; excused cases count in neither."""
    timed: tuple[str, ...] = ()
    """Functions whose timed regions must wait for completion (`timed`): said as feedback, never graded."""


@dataclass(frozen=True)
class Lesson:
    """A lesson's public definition."""

    id: str
    """Lesson id: the folder name under lessons/."""
    title: str
    """Title shown in reports."""
    folder: Path
    """`lessons/<id>/`."""
    exercises: tuple[Exercise, ...]
    """Graded exercises in report order."""
    evidence: dict[str, str] = field(default_factory=dict)
    """Names read after the run for the evidence report (not graded), each `measured` or `simulated`."""
    figure: dict[str, Any] = field(default_factory=dict)
    """The lesson's figure: panels drawn from evidence values (see render.figure_svg)."""
    report: dict[str, str] = field(default_factory=dict)
    """The lesson's own words in its reports (`[report]`): percentile_method, measured_units, simulated_values_note."""
    warm_imports: tuple[str, ...] = ()
    """Modules a batch's warm kernel template imports once for every kernel (`warm_imports`)."""
    compile_warmup: str = ""
    """Code run after the lesson's given cells to fill the JAX compilation cache every kernel reads (`compile_warmup`)."""
    warm_cells: tuple[str, ...] = ()
    """Ids of the scaffold's leading given cells a batch's warm kernel template runs once for every kernel whose
    notebook starts with them unchanged (`warm_cells`; see warm_sources)."""
    version: int = 1
    """The lesson's release: raised whenever its given cells change what a notebook computes (`version`)."""
    variants: tuple[tuple[str, tuple[float, ...]], ...] = ()
    """Numbers a course may draw per student (`[variants]`), each with its choices; the first is the seed's."""
    variant_cell: str = ""
    """The given cell that defines those numbers (`[variants] cell`)."""
    earlier_given: tuple[tuple[str, int, str], ...] = ()
    """Given cells of earlier releases, as (SHA-256 of the stripped source, release, the id of the current cell it
    became) (`[[earlier_given]]`): a notebook holding one is graded with the current cell in its place."""

    written: tuple[Question, ...] = ()
    """The written questions graded by rubric (`[[written]]`)."""

    @property
    def autograded_points(self) -> float:
        """Sum of the exercises' points."""
        return float(sum(ex.points for ex in self.exercises))

    @property
    def max_score(self) -> float:
        """The assignment's points: the exercises' and the written questions'."""
        return self.autograded_points + float(sum(q.points for q in self.written))

    def __hash__(self) -> int:
        """A lesson is known by where it lives and which release it is (what caches of its code depend on)."""
        return hash((self.folder, self.id, self.version))

    def exercise(self, exercise_id: str) -> Exercise:
        """The exercise with this id."""
        for ex in self.exercises:
            if ex.id == exercise_id:
                return ex
        raise LessonError(f"lesson {self.id} has no exercise '{exercise_id}'")

    @property
    def solutions(self) -> Path:
        """`solutions/<id>/` in the course folder or the checkout (absent on a student's machine)."""
        return course_folder("solutions") / self.id


def available() -> list[str]:
    """Ids of the lessons in the course folder."""
    root = course_folder("lessons")
    return sorted(p.name for p in root.iterdir() if (p / "lesson.toml").is_file()) if root.is_dir() else []


def get(lesson_id: str) -> Lesson:
    """Load `lessons/<id>/lesson.toml` from the course folder in force, or raise `LessonError` (loaded once per
    folder: a lesson is keyed by where it lives, so two course folders never share one)."""
    return _load(course_folder("lessons") / lesson_id, lesson_id)


def forget() -> None:
    """Read every lesson from its folder again (after an author changed one in this process)."""
    _load.cache_clear()


@functools.cache
def _load(folder: Path, lesson_id: str) -> Lesson:
    spec_path = folder / "lesson.toml"
    if not spec_path.is_file():
        known = available()
        close = difflib.get_close_matches(lesson_id.replace("_", "-").lower(), known, n=1)
        raise LessonError(f"unknown lesson '{lesson_id}'" + (f"; did you mean '{close[0]}'?" if close else "")
                          + f" (known: {', '.join(known) or 'none'})")
    try:
        with spec_path.open("rb") as handle:
            spec = tomllib.load(handle)
    except tomllib.TOMLDecodeError as exc:
        raise LessonError(f"{spec_path}: not valid TOML: {exc}") from None
    if "late" in spec or "due" in spec:
        raise LessonError(f"{spec_path}: a due date and a late policy are the course's, not the lesson's: move [late] "
                          f"to course.toml as [lessons.{lesson_id}] due = ... and [lessons.{lesson_id}.late]")
    problem = lesson_schema.problem(spec)
    if problem is not None:
        raise LessonError(f"{spec_path}: {problem}")
    exercises = tuple(_exercise(lesson_id, item) for item in spec.get("exercises", []))
    if not exercises:
        raise LessonError(f"{spec_path}: no [[exercises]]")
    if any(not item.get("needs") for item in spec.get("exercises", [])):
        exercises = _derived_needs(folder / "scaffold.py", exercises)
    evidence = {str(k): str(v) for k, v in spec.get("evidence", {}).items()}
    if any(kind not in KINDS for kind in evidence.values()):
        raise LessonError(f"{spec_path}: every [evidence] name must be {' or '.join(KINDS)}")
    warm = tuple(str(name) for name in spec.get("warm_imports", []))
    if not all(re.fullmatch(r"[A-Za-z_][\w.]*", name) for name in warm):
        raise LessonError(f"{spec_path}: warm_imports must be module names")
    warmup = spec.get("compile_warmup", "")
    if not isinstance(warmup, str):
        raise LessonError(f"{spec_path}: compile_warmup must be a string of code")
    cells = spec.get("warm_cells", [])
    if not (isinstance(cells, list) and all(isinstance(c, str) for c in cells)):
        raise LessonError(f"{spec_path}: warm_cells must be a list of cell ids")
    return Lesson(id=spec.get("id", lesson_id), title=spec.get("title", lesson_id), folder=folder, exercises=exercises,
                  evidence=evidence, figure=dict(spec.get("figure", {})),
                  report={str(k): str(v) for k, v in spec.get("report", {}).items()}, warm_imports=warm,
                  compile_warmup=warmup, warm_cells=tuple(cells), version=_version(spec, spec_path),
                  earlier_given=_earlier_given(spec, spec_path),
                  variants=tuple((str(k), tuple(v)) for k, v in spec.get("variants", {}).items() if k != "cell"),
                  variant_cell=str(spec.get("variants", {}).get("cell", "")),
                  written=written.questions(spec, spec_path, _written_cells(folder / "scaffold.py")))


def _written_cells(scaffold: Path) -> set[str]:
    """Ids of the scaffold's markdown cells tagged prediction or explanation (read from its `# %%` markers)."""
    text = scaffold.read_text(encoding="utf-8") if scaffold.is_file() else ""
    return set(re.findall(r"^# %% \[markdown\] id=(\S+) tags=\S*(?:prediction|explanation)", text, flags=re.M))


def _derived_needs(scaffold: Path, exercises: tuple[Exercise, ...]) -> tuple[Exercise, ...]:
    """An exercise without `needs` needs what its stub defines: the top-level names of the scaffold's
    `answer-<exercise id>` cell (functions, classes, assignments)."""
    import ast

    from grader.intake import load

    cells = {cell.get("id"): cell.source for cell in load.notebook_from_script(scaffold.read_text("utf-8")).cells}
    derived = []
    for ex in exercises:
        names: list[str] = []
        try:
            body = syntax.parse(cells.get(f"answer-{ex.id}", "")).body
        except SyntaxError:
            body = []
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.append(node.name)
            elif isinstance(node, ast.Assign):
                names += [t.id for t in node.targets if isinstance(t, ast.Name)]
        if not ex.needs and not names:
            stubs = sorted(str(key) for key in cells if str(key).startswith("answer-"))
            raise LessonError(f"{scaffold}: exercise '{ex.id}' has no `needs` and no answer cell `answer-{ex.id}` to "
                              f"derive them from (its answer cells: {', '.join(stubs) or 'none'}): was an id renamed "
                              "in one place only?")
        derived.append(ex if ex.needs else dataclasses.replace(ex, needs=tuple(dict.fromkeys(names))))
    return tuple(derived)


def _earlier_given(spec: dict[str, Any], spec_path: Path) -> tuple[tuple[str, int, str], ...]:
    earlier = tuple((item["sha256"], item["release"], item["cell"]) for item in spec.get("earlier_given", []))
    version = spec.get("version", 1)
    if any(release >= version for _, release, _ in earlier if isinstance(version, int)):
        raise LessonError(f"{spec_path}: every earlier_given release must be below the lesson's version ({version})")
    return earlier


def _version(spec: dict[str, Any], spec_path: Path) -> int:
    version = spec.get("version", 1)
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise LessonError(f"{spec_path}: version must be a whole number of at least 1")
    return version


def released_version(notebook: Any) -> int | None:
    """The lesson version a notebook was released as (`grader release` writes it), if it says."""
    meta = notebook.metadata.get("grader") if isinstance(notebook.metadata, dict) else None
    version = meta.get("version") if isinstance(meta, dict) else None
    return version if isinstance(version, int) and not isinstance(version, bool) else None


SCORINGS = ("all", "cases")
"""How an exercise scores: all-or-nothing, or by the share of its cases that passed."""


def _exercise(lesson_id: str, item: dict[str, Any]) -> Exercise:
    ex_id = item["id"]
    kind = item.get("kind", "simulated")
    if kind not in KINDS:
        raise LessonError(f"lesson {lesson_id}, exercise {ex_id}: kind must be one of {KINDS}")
    cases = tuple(case_from_spec(spec) for spec in item.get("cases", []))
    for case in cases:
        if isinstance(case.check, AskReference):
            raise LessonError(f"lesson {lesson_id}, exercise {ex_id}: public case {case.label()} states no expectation")
    scoring = item.get("scoring", "all")
    if scoring not in SCORINGS:
        raise LessonError(f"lesson {lesson_id}, exercise {ex_id}: scoring must be one of {SCORINGS}, not {scoring!r}")
    return Exercise(id=ex_id, title=item.get("title", ex_id), kind=kind, points=float(item.get("points", 1)),
                    needs=tuple(item.get("needs", [])), cases=cases, scoring=scoring,
                    timed=tuple(item.get("timed", [])))


__all__ = ["KERNEL_ARG", "PASTE_ITEMS", "Case", "Exercise", "Lesson", "case_from_spec"]
