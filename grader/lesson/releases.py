"""Releases that keep their promises: a notebook of an earlier release is graded so that a correct answer passes.

A lesson's given cells change after it is handed out (a trace replaced, a
server fixed). The lesson lists the given cells of its earlier releases by the
SHA-256 of their stripped text (`[[earlier_given]]` in lesson.toml). Before a
notebook runs, every cell that is one of them is replaced by the current
release's cell of the same role, recognised by text alone (never by cell ids,
tags or order, which the student controls): the student's answers then run on
the data every hidden case and every public figure is computed from. The
result records which release the notebook came from, which one graded it, and
which cells were restored; its report says so in a note.
"""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from grader.lesson import catalog, handout


@dataclass(frozen=True)
class Release:
    """Which release a notebook came from and which one graded it."""

    came_from: int | None
    """The notebook's release: its metadata's, else the one its earlier given cells belong to, else the current
    one when it holds the current given cells; None when nothing tells."""
    graded_as: int
    """The lesson's current release."""
    restored: tuple[str, ...] = ()
    """The current given cells run in place of earlier ones (by the scaffold's cell ids)."""

    def to_dict(self) -> dict[str, Any]:
        return {"came_from": self.came_from, "graded_as": self.graded_as, "restored": list(self.restored)}

    @classmethod
    def from_dict(cls, data: Any) -> Release | None:
        if not isinstance(data, dict) or not isinstance(data.get("graded_as"), int):
            return None
        came = data.get("came_from")
        return cls(came if isinstance(came, int) else None, data["graded_as"],
                   tuple(str(cell) for cell in data.get("restored") or ()))

    def note(self, lesson_id: str) -> str:
        """What the report says ("" when the notebook is of the current release and nothing was restored)."""
        came = f"release {self.came_from}" if self.came_from is not None else "a release it does not name"
        if self.restored:
            return (f"this notebook came from {came} of lesson '{lesson_id}'; release {self.graded_as}'s given cells "
                    f"({', '.join(self.restored)}) ran in place of the earlier ones before your answers, so every "
                    "answer is graded on the data the checks are computed from")
        if self.came_from is not None and self.came_from != self.graded_as:
            return (f"this notebook was released as release {self.came_from} of lesson '{lesson_id}' and is graded "
                    f"as release {self.graded_as}; its given cells were not recognised as either (edited?): copy "
                    f"them from a fresh `grader release {lesson_id}` notebook if an answer depends on them")
        return ""


def _digest(source: str) -> str:
    return hashlib.sha256(source.strip().encode("utf-8")).hexdigest()


def restore(lesson: catalog.Lesson, notebook: Any, current: Mapping[str, str] | None = None) -> tuple[Any, Release]:
    """The notebook to run (a copy, with earlier releases' given cells replaced by the current ones) and its
    Release. A notebook with nothing to restore is returned as it is. `current`: the given cells by id, where the
    caller prepared them (a grade's prepared lesson); else read from the scaffold."""
    current = handout.given_by_id(lesson) if current is None else current
    earlier = {sha: (release, cell) for sha, release, cell in lesson.earlier_given if cell in current}
    stated = catalog.released_version(notebook)
    found: dict[int, tuple[int, str]] = {}
    for index, cell in enumerate(notebook.cells):
        if cell.cell_type == "code" and _digest(cell.source) in earlier:
            found[index] = earlier[_digest(cell.source)]
    if found:
        notebook = copy.deepcopy(notebook)
        for index, (_, cell_id) in found.items():
            notebook.cells[index].source = current[cell_id]
    sources = {cell.source.strip() for cell in notebook.cells if cell.cell_type == "code"}
    came = stated if stated is not None else (
        min(release for release, _ in found.values()) if found else
        lesson.version if current and all(text.strip() in sources for text in current.values()) else None)
    return notebook, Release(came, lesson.version, tuple(sorted({cell for _, cell in found.values()})))
