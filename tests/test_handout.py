"""handout: the student notebook a lesson hands out, its given cells, and what a notebook kept of them."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest

from grader.base.errors import LessonError
from grader.lesson import catalog, handout
from grader.run import submission

LESSON = "inference-capacity"


def _notebook(*sources):
    return nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(s) for s in sources])


def test_the_release_carries_its_lesson_and_version_and_no_reference_code(tmp_path):
    path = handout.release(LESSON, tmp_path)
    nb = nbformat.read(str(path), as_version=4)
    lesson = catalog.get(LESSON)
    assert nb.metadata["grader"] == {"lesson": LESSON, "format": 1, "version": lesson.version}
    answers = handout.answer_cells(lesson)
    sources = {cell.source.strip() for cell in nb.cells}
    assert answers and not any(cell.source.strip() in sources for cell in answers.values())


def test_the_warm_prefix_holds_only_while_the_lessons_first_cells_are_unchanged():
    warm = "inference-scaling"  # the lesson that declares warm cells (three, in lesson.toml)
    sources = handout.warm_sources(catalog.get(warm))
    assert len(sources) == 3 and handout.warm_sources(catalog.get("dynamic-batching")) == ()
    nb = _notebook(*sources, "x = 1")
    assert submission.warm_prefix(sources, nb) == frozenset(range(3))
    edited = _notebook(sources[0] + "\nimport os", *sources[1:], "x = 1")
    assert submission.warm_prefix(sources, edited) == frozenset()
    assert submission.warm_prefix(sources, _notebook("x = 1")) == frozenset()


def test_given_sources_match_the_scaffolds_given_cells():
    scaffold = handout.scaffold(catalog.get(LESSON))
    given = [c.source.strip() for c in scaffold.cells if "given" in c.metadata.get("tags", [])]
    assert handout.given_sources(catalog.get(LESSON)) == frozenset(given) and len(given) >= 2


def test_a_broken_lesson_beside_the_graded_one_costs_a_batch_nothing(tmp_path, monkeypatch):
    """A batch's parent reads every lesson of the course before its workers fork (workers.prepare); one that cannot be
    read is passed over there, as a grade passes it over when it compares a notebook's names."""
    import shutil

    from grader import grading
    from grader.base.options import Options
    from grader.classroom import workers as worker
    from grader.judge import judging

    root = Path(__file__).resolve().parent.parent
    home = tmp_path / "course"
    shutil.copytree(root / "lessons" / "inference-scaling", home / "lessons" / "inference-scaling")
    (home / "lessons" / "broken").mkdir(parents=True)
    (home / "lessons" / "broken" / "lesson.toml").write_text("id = [unclosed\n")
    monkeypatch.setenv("GRADER_COURSE", str(home))
    catalog.forget()
    try:
        lesson = catalog.get("inference-scaling")
        with pytest.raises(LessonError):
            catalog.get("broken")
        assert list(handout.other_lessons(lesson)) == []  # the broken one is passed over
        ready = grading.prepared(lesson, public_only=True)
        assert ready.others == () and judging.other_lesson(handout.scaffold(lesson), ready.needed, ready.others) is None
        real = catalog.get
        monkeypatch.setattr(catalog, "get", lambda lesson_id: real(lesson_id) if lesson_id == lesson.id else
                            (_ for _ in ()).throw(OSError(f"{lesson_id}: unreadable")))
        with pytest.raises(OSError):
            list(handout.other_lessons(lesson))
        worker.prepare(lesson, Options(zygote=False, public_only=True), 0)  # the batch goes on
    finally:
        catalog.forget()


def test_warming_a_lesson_looks_up_only_the_others(monkeypatch):
    """A batch's parent holds its lesson from the one lookup of `batch`: the warm-up prepares it with the names of
    every other lesson (a notebook's names are compared with theirs) and never looks the batch's own up again by its
    id (the prepared lesson may come from this process's cache: then nothing is looked up at all)."""
    lesson = catalog.get("inference-scaling")
    looked_up: list[str] = []
    real_get = catalog.get
    monkeypatch.setattr(catalog, "get", lambda lesson_id: looked_up.append(lesson_id) or real_get(lesson_id))
    from grader import grading
    from grader.base.options import Options
    from grader.classroom import workers

    workers.prepare(lesson, Options(zygote=False, public_only=True), 0)
    assert "inference-scaling" not in looked_up
    others = dict(grading.prepared(lesson, public_only=True).others)
    assert set(others) == set(catalog.available()) - {"inference-scaling"}
    assert others["inference-capacity"] == {name for ex in real_get("inference-capacity").exercises for name in ex.needs}
