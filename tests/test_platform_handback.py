"""What students and instructors read where grades are handed back: the Canvas comment carries the rubric items and the comment, a
platform's test student outside the roster is never counted in the class's figures, the PrairieLearn tests add up to
the score, a roster's login names its student, nbgrader's timestamp.txt is read (not "ignored") and marks lateness, a
student verifies an unsigned portfolio without a key, and a value nobody measured is never labelled measured."""

from __future__ import annotations

import json
import re
import shutil
import zipfile
from pathlib import Path

import nbformat
import pytest
from click.testing import CliRunner
from conftest import FAST, typed, write

from grader import cli, grading
from grader.classroom import batch, platforms, review
from grader.intake import layouts
from grader.lesson import catalog, handout
from grader.report import platform_results, render
from grader.result import gradebook
from grader.result.record import read_result

LESSON = "inference-scaling"
HERE = Path(__file__).parent


@pytest.fixture(scope="module")
def canvas_batch(tmp_path_factory):
    """A Canvas class of three: Ada, Ben (marked late), and Canvas's test student, whom the roster leaves out; a
    course whose late policy takes 10 % a day."""
    root = tmp_path_factory.mktemp("canvas")
    home = root / "course"
    home.mkdir()
    (home / "course.toml").write_text(f'name = "c"\ntimezone = "UTC"\n[lessons.{LESSON}.late]\npercent_per_day = 10\n')
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("GRADER_COURSE", str(home))
        folder = root / "in"
        folder.mkdir()
        book = handout.solution_notebook(catalog.get(LESSON))
        for name in ("lovelaceada_1001_5551_lab", "hopperben_LATE_1002_5552_lab", "studenttest_9999_5553_lab"):
            write(book, folder / f"{name}.ipynb")
        roster = root / "roster.csv"
        roster.write_text("Student,ID,SIS User ID,SIS Login ID,Section\n\"Lovelace, Ada\",1001,a1,ada,S1\n"
                          "\"Hopper, Ben\",1002,b1,ben,S1\n")
        out = root / "out"
        batch.run(batch.Request(folder, LESSON, out, jobs=2, options=grading.Options(limits=FAST), progress=False, roster=roster))
        opened = review.Review(out, "ta")
        try:
            opened.decide("explanation", ["1002"], ["realized-size"], comment="the realised size, well argued")
            opened.override("ben", "crossover", 0.5, "hard-coded the seed's crossover")  # the roster's login
            opened.refresh()
        finally:
            opened.close()
        yield out, home


def test_the_canvas_comment_carries_the_rubric_items_and_the_graders_comment(canvas_batch, monkeypatch):
    out, home = canvas_batch
    monkeypatch.setenv("GRADER_COURSE", str(home))
    platforms.export("canvas", out, assignment_id="77")
    with zipfile.ZipFile(out / "export" / "canvas" / "comments.zip") as bundle:
        ben = next(bundle.read(n).decode() for n in bundle.namelist() if "1002" in n)
    question = next(q for q in catalog.get(LESSON).written if q.cell == "explanation")
    item = question.item("realized-size")
    assert f"{item.text} (+{item.points:g})" in ben and "comment: the realised size, well argued" in ben
    assert "OVERRIDE crossover" in ben and "LATE" in ben


def test_a_student_the_roster_leaves_out_is_listed_apart_and_never_counted(canvas_batch, monkeypatch):
    out, home = canvas_batch
    monkeypatch.setenv("GRADER_COURSE", str(home))
    rows = {json.loads(p.read_text())["student"]: json.loads(p.read_text()) for p in (out / "results").glob("*.json")}
    assert set(rows) == {"1001", "1002", "9999"}
    dashboard = (out / "index.html").read_text()
    shown = re.sub(r"\s+", " ", re.sub("<[^>]+>", " ", dashboard))
    assert "Not on the roster (graded, not counted in the class's figures): 9999" in shown or \
        "not counted in the class's figures): studenttest (9999)" in shown
    mean = (rows["1001"]["score"] + rows["1002"]["score"]) / 2  # the class's mean: Ada and Ben only
    data = render.dashboard_data([gradebook.summary(typed(r)) for r in rows.values()], catalog.get(LESSON))
    assert data["mean"] == pytest.approx(mean) and data["graded"] == 2
    assert "Late (marked by the platform, or by its submission time): Hopper, Ben (1002)" in shown
    opened = review.Review(out, "ta")
    try:
        assert opened.progress()["explanation"] == (1, 2)  # of the class: the test student is not counted
    finally:
        opened.close()
    platforms.export("prairielearn", out)
    assert sorted(p.name for p in (out / "export" / "prairielearn").iterdir()) == ["1001", "1002"]


def test_the_prairielearn_tests_add_up_to_the_score(canvas_batch, monkeypatch):
    out, home = canvas_batch
    monkeypatch.setenv("GRADER_COURSE", str(home))
    data = json.loads((out / "results" / "1002.json").read_text())
    exported = platform_results.prairielearn_results(read_result(data))
    assert sum(t["points"] for t in exported["tests"]) == pytest.approx(data["score"])
    assert sum(t["max_points"] for t in exported["tests"]) == pytest.approx(data["max_score"])
    names = [t["name"] for t in exported["tests"]]
    assert "override: crossover" in names and "late penalty" in names and "written: explanation" in names


def test_an_override_names_its_student_by_the_rosters_login_or_says_who_is_graded(canvas_batch, monkeypatch):
    out, home = canvas_batch
    monkeypatch.setenv("GRADER_COURSE", str(home))
    ben = json.loads((out / "results" / "1002.json").read_text())
    assert next(o for o in ben["manual"]["overrides"])["exercise"] == "crossover"
    refused = CliRunner().invoke(cli.main, ["review", str(out), "--override", "nobody", "crossover", "1",
                                            "--reason", "x"])
    assert refused.exit_code == 2 and "graded: 1001, 1002, 9999" in refused.output


def test_nbgraders_timestamp_is_read_not_ignored(tmp_path):
    submitted = tmp_path / "submitted" / "ada" / "lab"
    submitted.mkdir(parents=True)
    shutil.copy(HERE.parent / "samples" / LESSON / "ada.ipynb", submitted / "lab.ipynb")
    (submitted / "timestamp.txt").write_text("2026-12-01 10:00:00.123456 UTC")
    found = layouts.read(tmp_path / "submitted", tmp_path / "unpacked")
    assert found.layout == "nbgrader" and not any("timestamp" in i for i in found.ignored)
    assert found.entries[0].submitted_at == "2026-12-01T10:00:00+00:00"


def test_a_student_verifies_an_unsigned_portfolio_without_a_key(canvas_batch, tmp_path, own_course):
    from grader.classroom import portfolio

    out, _ = canvas_batch
    own_course("student")  # no key anywhere
    portfolio.build([out / "results" / "1001.json"], tmp_path / "mine.zip")
    done = CliRunner().invoke(cli.main, ["verify", str(tmp_path / "mine.zip")])
    assert done.exit_code == 1, done.output  # not all intact, and said: never exit 2
    assert "result.json: unsigned" in done.output and "no course public key here" in done.output


@pytest.mark.kernel
def test_a_value_nobody_measured_is_never_labelled_measured(graded, tmp_path):
    lesson = catalog.get("inference-capacity")
    path = tmp_path / "bare.ipynb"
    nbformat.write(handout.scaffold(lesson), str(path))
    result = graded.file(path, "inference-capacity")
    shown = re.sub(r"\s+", " ", re.sub("<[^>]+>", " ", render.report_html(typed(result))))
    assert "service_ms = not measured on this run" in shown
    assert "Upper panel" not in shown  # the caption speaks of no panel that is not drawn
