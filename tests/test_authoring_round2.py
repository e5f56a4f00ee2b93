"""Authoring, round 2: what a handout quotes follows the student's numbers, a placeholder that names nothing is
refused, and `validate` catches what an author gets wrong, in the author's words."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from grader.base.errors import LessonError
from grader.lesson import handout, lessons
from grader.result import variants

ROOT = Path(__file__).resolve().parent.parent
LESSON = "inference-capacity"


@pytest.fixture
def course_copy(tmp_path, monkeypatch):
    """A course folder holding a copy of one lesson (and its solutions), made the course in force."""
    home = tmp_path / "course"
    shutil.copytree(ROOT / "lessons" / LESSON, home / "lessons" / LESSON)
    shutil.copytree(ROOT / "solutions" / LESSON, home / "solutions" / LESSON)
    (home / "course.toml").write_text('name = "copy"\ntimezone = "UTC"\n')
    monkeypatch.setenv("GRADER_COURSE", str(home))
    lessons.forget()
    yield home
    lessons.forget()


def _quote(home: Path, text: str) -> None:
    scaffold = home / "lessons" / LESSON / "scaffold.py"
    scaffold.write_text(scaffold.read_text().replace(
        "# `BURST_REQUESTS` = {{BURST_REQUESTS}} requests arrive together at t = 0 and each needs",
        f"# `BURST_REQUESTS` = {{{{BURST_REQUESTS}}}} requests arrive together at t = 0 ({text}) and each needs"))
    lessons.forget()


def test_a_quoted_figure_that_varies_follows_the_students_numbers(course_copy):
    _quote(course_copy, "they finish at {{figure:burst/0}}")
    lesson = lessons.get(LESSON)
    text = "\n".join(c.source for c in handout.scaffold(lesson).cells)
    assert "they finish at [2, 4, 6, 8]" in text  # the seed's numbers: the stated figure
    own = dict(variants.defaults(lesson), BURST_REQUESTS=5, BURST_SERVICE_MS=2.5)
    mine = variants.student_handout(lesson, "someone", None)
    numbers = variants.numbers_for(lesson, "someone", None)
    figures = variants.public_figures(lesson, numbers)
    assert f"they finish at {figures['burst/0']!r}" in "\n".join(c.source for c in mine.cells)
    # by hand: five requests of 2.5 ms at once finish at 2.5, 5, 7.5, 10 and 12.5
    worked = handout.scaffold(lesson, own, variants.public_figures(lesson, own))
    assert "they finish at [2.5, 5.0, 7.5, 10.0, 12.5]" in "\n".join(c.source for c in worked.cells)
    with pytest.raises(LessonError, match=r"quotes a figure that varies, and this handout's numbers are not the seed's"):
        handout.scaffold(lesson, own)  # never the seed's figure beside another student's numbers


@pytest.mark.parametrize("placeholder", ["{{figure:Speedup/0}}", "{{ACEPT}}"])
def test_a_placeholder_that_names_nothing_is_refused(course_copy, placeholder):
    _quote(course_copy, placeholder)
    with pytest.raises(LessonError, match=r"names nothing"):
        handout.scaffold(lessons.get(LESSON))
