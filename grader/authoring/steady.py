"""`grader validate LESSON --under-load N`: no point moves with the machine's load.

A check that reads measured values must hold for every valid measurement (a
property), or run on data the seed fixes: timing noise never decides a point.
This proves it the way it fails: the reference and a mistake the lesson declares
(solutions/<id>/mistakes.toml) are each graded N times, with one seed, beside
busy processes that take the machine's cores, and every exercise's score must be
the same on every run. A score that moves is named, with the scores it took.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import nbformat

from grader.base.errors import GraderError
from grader.grading import Options, grade
from grader.lesson import catalog, handout, mistakes


@dataclass(frozen=True)
class Graded:
    """One notebook graded several times under load."""

    label: str
    totals: tuple[float, ...]
    """The score of each run."""
    moved: tuple[tuple[str, tuple[float, ...]], ...]
    """Exercises whose score was not the same on every run, with the scores they took."""


@dataclass(frozen=True)
class Steadiness:
    lesson: str
    busy: int
    notebooks: tuple[Graded, ...]

    @property
    def problems(self) -> tuple[str, ...]:
        return tuple(f"{g.label}: {ex} scored {', '.join(f'{s:g}' for s in scores)} over {len(g.totals)} runs "
                     "under load: noise decides that point" for g in self.notebooks for ex, scores in g.moved)


@contextmanager
def busy_processes(count: int) -> Iterator[None]:
    """`count` processes that spin on a core each until the block ends."""
    spinning = [subprocess.Popen([sys.executable, "-c", "while True: pass"], start_new_session=True,
                                 stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                for _ in range(count)]
    try:
        yield
    finally:
        for process in spinning:
            process.kill()
            process.wait()


def under_load(lesson_id: str, options: Options, runs: int, busy: int = 2, mistake: str | None = None,
               workdir: str | Path | None = None) -> Steadiness:
    """Grade the reference and a declared mistake (the first, or the one named) `runs` times each beside `busy`
    spinning processes, with one seed."""
    lesson = catalog.get(lesson_id)
    declared = mistakes.declared(lesson)
    chosen = [m for m in declared if mistake in (None, m.name)][:1]
    if mistake is not None and not chosen:
        known = ", ".join(repr(m.name) for m in declared) or "none (solutions/<id>/mistakes.toml)"
        raise GraderError(f"lesson {lesson.id} declares no mistake {mistake!r} (declared: {known})")
    books = [("the reference", handout.solution_notebook(lesson))]
    books += [(f"the mistake {m.name!r}", mistakes.notebook(lesson, m)) for m in chosen]
    graded = []
    with tempfile.TemporaryDirectory(dir=workdir) as tmp, busy_processes(busy):
        for label, book in books:
            path = Path(tmp) / "steady.ipynb"  # one name: one student, one seed
            nbformat.write(book, str(path))
            results = [grade(path, lesson.id, options) for _ in range(runs)]
            per_exercise = {ex.id: tuple(next((e.score for e in r.exercises if e.id == ex.id), -1.0) for r in results)
                            for ex in lesson.exercises}
            graded.append(Graded(label, tuple(r.score for r in results),
                                 tuple((ex, scores) for ex, scores in per_exercise.items() if len(set(scores)) > 1)))
    return Steadiness(lesson.id, busy, tuple(graded))
