"""handout: the student notebook a lesson hands out, its given cells, and what a notebook kept of them."""

from __future__ import annotations

import nbformat

from grader.lesson import catalog, handout

LESSON = "inference-capacity"


def _notebook(*sources):
    return nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(s) for s in sources])


def test_top_level_names_are_read_without_running_anything():
    nb = _notebook("import numpy as np\nfrom jax import numpy as jnp\nimport os.path",
                   "def f():\n    inner = 1\nclass K: pass\nx, (y, z) = 1, (2, 3)\nw: int = 4",
                   "%timeit f()", "raise SystemExit  # never run")
    assert handout.top_level_names(nb) == {"np", "jnp", "os", "f", "K", "x", "y", "z", "w"}


def test_the_release_carries_its_lesson_and_version_and_no_reference_code(tmp_path):
    path = handout.release(LESSON, tmp_path)
    nb = nbformat.read(str(path), as_version=4)
    lesson = catalog.get(LESSON)
    assert nb.metadata["grader"] == {"lesson": LESSON, "format": 1, "version": lesson.version}
    answers = handout.answer_cells(lesson)
    sources = {cell.source.strip() for cell in nb.cells}
    assert answers and not any(cell.source.strip() in sources for cell in answers.values())


def test_a_notebook_of_another_lesson_is_recognised_by_its_names():
    scaling = handout.solution_notebook(catalog.get("inference-scaling"))
    found = handout.other_lesson(catalog.get(LESSON), scaling)
    assert found is not None and found[0] == "inference-scaling" and found[1] == found[2]
    assert handout.other_lesson(catalog.get(LESSON), handout.solution_notebook(catalog.get(LESSON))) is None


def test_the_warm_prefix_holds_only_while_the_lessons_first_cells_are_unchanged():
    warm = "inference-scaling"  # the lesson that declares warm cells (three, in lesson.toml)
    sources = handout.warm_sources(catalog.get(warm))
    assert len(sources) == 3 and handout.warm_sources(catalog.get(LESSON)) == ()
    nb = _notebook(*sources, "x = 1")
    assert handout.warm_prefix(catalog.get(warm), nb) == frozenset(range(3))
    edited = _notebook(sources[0] + "\nimport os", *sources[1:], "x = 1")
    assert handout.warm_prefix(catalog.get(warm), edited) == frozenset()
    assert handout.warm_prefix(catalog.get(warm), _notebook("x = 1")) == frozenset()


def test_given_sources_match_the_scaffolds_given_cells():
    scaffold = handout.scaffold(catalog.get(LESSON))
    given = [c.source.strip() for c in scaffold.cells if "given" in c.metadata.get("tags", [])]
    assert handout.given_sources(catalog.get(LESSON)) == frozenset(given) and len(given) >= 2
