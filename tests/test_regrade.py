"""regrade: every submission graded again with its recorded seeds; the gradebook keeps the earlier grades, and
changes.csv, the summary and the dashboard name exactly the students whose grade moved, and why."""

from __future__ import annotations

import csv
import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import patched_solution, write
from test_render import CHROME_FLAGS, CHROMIUM

from grader.base.options import Options
from grader.lesson import catalog, handout
from grader.lesson.draw import Given
from grader.result import gradebook, regrade

ROOT = Path(__file__).resolve().parent.parent
LESSON = "inference-capacity"
SUBS = Path(__file__).parent / "submissions" / LESSON


def _result(student, score, exercises, digests=None, **extra):
    return dict({"schema": 1, "status": "graded", "lesson": LESSON, "student": student, "score": score,
                 "max_score": 2.0, "exercises": [{"id": i, "status": st, "score": sc, "kind": k}
                                                 for i, st, sc, k in exercises],
                 "digests": digests or {"lesson": "L", "reference": "R", "submission": "S"},
                 "graded_at": "2026-12-05T08:00:00+00:00"}, **extra)


def test_only_moved_grades_are_changes_with_their_exercises_and_digests():
    same = (_result("ada", 2.0, [("a", "passed", 1.0, "simulated"), ("m", "passed", 1.0, "measured")]),) * 2
    moved = (_result("ben", 1.0, [("a", "failed", 0.0, "simulated"), ("m", "passed", 1.0, "measured")]),
             _result("ben", 1.0, [("a", "passed", 1.0, "simulated"), ("m", "failed", 0.0, "measured")],
                     digests={"lesson": "L", "reference": "R2", "submission": "S"}))
    (change,) = regrade.changes([same, moved])
    assert change.student == "ben" and (change.before, change.after) == (1.0, 1.0)  # the total alone hides it
    assert change.exercises == ("a: failed 0 -> passed 1", "m: passed 1 -> failed 0 (measured)")
    assert change.digests == ("reference",)
    rejected = dict(_result("cy", 0.0, []), status="rejected")
    (gone,) = regrade.changes([(_result("cy", 2.0, []), rejected)])
    assert gone.line() == "cy 2 -> rejected"


def test_changes_csv_is_safe_to_open_in_a_spreadsheet(tmp_path):
    moved = regrade.changes([(_result("=HYPERLINK(1)", 1.0, []), _result("=HYPERLINK(1)", 2.0, []))])
    regrade.write_csv(moved, tmp_path / "changes.csv")
    with open(tmp_path / "changes.csv", newline="") as handle:
        (row,) = csv.DictReader(handle)
    assert row["student"] == "'=HYPERLINK(1)" and (row["before"], row["after"]) == ("1", "2")


def test_each_student_keeps_their_recorded_seeds():
    options = Options(zygote=True)
    template = Given(hash_seed=11)
    kept, mine = regrade.replayed(options, template, {"status": "graded", "seed": 1234, "hash_seed": 11})
    assert (mine.seed, mine.hash_seed, kept.zygote) == (1234, 11, True)
    alone, other = regrade.replayed(options, template, {"status": "graded", "seed": 5, "hash_seed": 99})
    assert (other.seed, other.hash_seed, alone.zygote) == (5, 99, False)  # a kernel of its own, with its hash seed
    assert regrade.replayed(options, template, None) == (options, template)  # derived, on the template's
    assert regrade.batch_hash_seed({"a": {"hash_seed": 3}, "b": {"hash_seed": 3}, "c": {"hash_seed": 4}}) == 3


def test_the_gradebook_moves_replaced_grades_to_history_and_resumes_a_regrade(tmp_path):
    book = gradebook.Gradebook(tmp_path / "gradebook.sqlite")
    book.add(_result("ada", 1.0, []), "d1")
    first = book.start_regrade(LESSON)
    assert book.start_regrade(LESSON) == first  # an interrupted regrade is resumed, not restarted
    assert book.has(LESSON, "ada", "d1") and not book.has(LESSON, "ada", "d1", first)
    book.add(_result("ada", 2.0, [], graded_at="2026-12-05T09:00:00+00:00"), "d1", first)
    assert book.has(LESSON, "ada", "d1", first)
    (before, after), = book.changed_by(LESSON, first)
    assert (before["score"], after["score"]) == (1.0, 2.0)
    assert [row["score"] for row in book.latest(LESSON)] == [2.0]  # the row holds the current grade
    book.finish_regrade(LESSON)
    assert book.start_regrade(LESSON) != first
    book.close()
    with sqlite3.connect(tmp_path / "gradebook.sqlite") as db:
        assert db.execute("SELECT score, replaced_by FROM history").fetchall() == [(1.0, first)]


def test_a_gradebook_of_the_earlier_version_opens_and_keeps_its_rows(tmp_path):
    path = tmp_path / "gradebook.sqlite"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE grades (lesson TEXT NOT NULL, student TEXT NOT NULL, digest TEXT NOT NULL,"
                   " status TEXT NOT NULL, score REAL, max_score REAL, graded_at TEXT, result_json TEXT NOT NULL,"
                   " PRIMARY KEY (lesson, student, digest))")
        db.execute("INSERT INTO grades VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                   (LESSON, "ada", "d", "graded", 2.0, 2.0, "t", json.dumps(_result("ada", 2.0, []))))
    book = gradebook.Gradebook(path)
    assert book.has(LESSON, "ada", "d") and [r["score"] for r in book.latest(LESSON)] == [2.0]
    book.close()


def _batch(course, folder, out, *extra):
    env = dict(os.environ, GRADER_COURSE=str(course))
    done = subprocess.run([sys.executable, "-m", "grader", "batch", str(folder), "--lesson", LESSON, "--out", str(out),
                           "--jobs", "2", *extra], capture_output=True, text=True, env=env, timeout=600, cwd=course)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def _changes(out):
    with open(out / "changes.csv", newline="") as handle:
        return list(csv.DictReader(handle))


@pytest.mark.kernel
def test_a_regrade_after_changing_hidden_cases_names_exactly_the_students_it_moved(tmp_path):
    course = tmp_path / "course"
    for name in ("lessons", "solutions", "templates"):
        shutil.copytree(ROOT / name, course / name)
    folder = tmp_path / "class"
    folder.mkdir()
    write(handout.solution_notebook(catalog.get(LESSON)), folder / "ada.ipynb")
    write(patched_solution(LESSON, SUBS / "invalid-accepts-nan-service.py"), folder / "ben.ipynb")  # passes public
    write(patched_solution(LESSON, SUBS / "collection-off-by-one.py"), folder / "cy.ipynb")
    write(handout.scaffold(catalog.get(LESSON)), folder / "dee.ipynb")
    out = tmp_path / "graded"
    _batch(course, folder, out)
    with open(out / "grades.csv", newline="") as handle:
        before = {r["student"]: r for r in csv.DictReader(handle)}
    assert before["ben"]["invalid-timeline"] == "0.0"  # the hidden NaN and infinity service times catch ben
    # the course staff drop those two hidden cases (they draw nothing from the seed, so no other case moves)
    hidden = course / "solutions" / LESSON / "hidden.py"
    text = hidden.read_text()
    for case in ('_invalid([0.0, 1.0], float("nan")),', '_invalid([0.0, 1.0], float("inf")),'):
        assert case in text
        text = text.replace(case, "")
    hidden.write_text(text)
    summary = _batch(course, folder, out, "--regrade")
    (moved,) = _changes(out)
    assert moved["student"] == "ben" and moved["digests changed"] == "reference"
    assert float(moved["after"]) == float(moved["before"]) + 1
    assert moved["exercises changed"] == "invalid-timeline: failed 0 -> passed 1"
    assert "grades the regrade moved (changes.csv): ben" in summary
    dashboard = (out / "index.html").read_text()
    assert "What the regrade changed" in dashboard and "invalid-timeline: failed 0 -&gt; passed 1" in dashboard
    if CHROMIUM:  # the dashboard's sections as a browser shows them: the regrade, similar work, mistakes
        done = subprocess.run([CHROMIUM, *CHROME_FLAGS, f"--user-data-dir={tmp_path / 'profile'}", "--dump-dom",
                               (out / "index.html").as_uri()], capture_output=True, text=True, timeout=120)
        for heading in ("What the regrade changed", "Similar work, flagged for review", "Mistakes, grouped"):
            assert heading in done.stdout, heading
        assert [line for line in done.stderr.splitlines() if "CONSOLE" in line or "Refused to" in line] == []
    with sqlite3.connect(out / "gradebook.sqlite") as db:
        assert db.execute("SELECT COUNT(*) FROM history").fetchone() == (4,)  # every earlier grade kept
        assert db.execute("SELECT COUNT(*) FROM grades").fetchone() == (4,)
    # nothing changed since: a regrade with the recorded seeds moves no grade
    _batch(course, folder, out, "--regrade")
    assert _changes(out) == []
