"""Releases that keep their promises: a notebook of an earlier release, with or without release metadata, is
graded on the current release's given cells, recognised by their text, and a correct answer passes."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
from conftest import FAST, SEED, full_marks, write

from grader import grading
from grader.intake import load
from grader.lesson import catalog, handout, releases
from grader.lesson.draw import Given

LESSON = "dynamic-batching"
V1 = Path(__file__).parent / "submissions" / "releases" / "dynamic-batching-v1-given.py"


WARM_LINE = "        self.worker.submit(warm_shapes).result()"
"""The line release 2 added to the given server cell (release 1's server did not warm its worker thread)."""


def _release_1(notebook, metadata: bool):
    """The notebook as release 1 handed it out: its given cells as they were then, with or without metadata."""
    old = {cell.get("id"): cell.source for cell in load.notebook_from_script(V1.read_text()).cells}
    server = handout.given_by_id(catalog.get(LESSON))["given-server"].splitlines()
    old["given-server"] = "\n".join(line for line in server if not line.startswith(WARM_LINE))
    assert len(old["given-server"].splitlines()) == len(server) - 1
    notebook = copy.deepcopy(notebook)
    for cell in notebook.cells:
        if cell.get("id") in old:
            cell.source = old[cell.get("id")]
    if metadata:
        notebook.metadata["grader"] = dict(notebook.metadata.get("grader", {}), version=1)
    else:
        notebook.metadata.pop("grader", None)
    return notebook


def test_earlier_given_cells_are_recognised_by_text_alone_and_replaced():
    lesson = catalog.get(LESSON)
    old = _release_1(handout.scaffold(lesson), metadata=False)
    assert "poisson_trace(12, 400, 2.25)" in "".join(c.source for c in old.cells)
    for cell in old.cells:  # ids and tags are the student's: recognition must not need them
        cell.pop("id", None)
        cell.metadata.pop("tags", None)
    restored, release = releases.restore(lesson, old)
    assert release == releases.Release(1, 2, ("given-server", "given-traces"))
    assert "poisson_trace(12, 400, 2.25)" not in "".join(c.source for c in restored.cells)
    assert "phased_trace(12, [(60, 2.0), (40, 8.0)], 4)" in "".join(c.source for c in restored.cells)
    assert "poisson_trace(12, 400, 2.25)" in "".join(c.source for c in old.cells)  # the submission is not changed
    same, current = releases.restore(lesson, handout.scaffold(lesson))
    assert current == releases.Release(2, 2, ()) and current.note(LESSON) == ""
    stated = _release_1(handout.scaffold(lesson), metadata=True)
    assert releases.restore(lesson, stated)[1].came_from == 1


@pytest.mark.kernel
def test_a_release_1_notebook_with_correct_answers_passes_every_exercise(tmp_path):
    lesson = catalog.get(LESSON)
    path = write(_release_1(handout.solution_notebook(lesson), metadata=False), tmp_path / "v1.ipynb")
    result = grading.grade(path, LESSON, grading.Options(limits=FAST), None, Given(seed=SEED)).to_dict()
    assert {e["id"]: e["status"] for e in result["exercises"]} == {ex.id: "passed" for ex in lesson.exercises}
    assert full_marks(result)
    assert result["release"] == {"came_from": 1, "graded_as": 2, "restored": ["given-server", "given-traces"]}
    assert any("came from release 1" in note and "release 2's given cells" in note for note in result["notes"])
