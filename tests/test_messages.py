"""What students and instructors are told, each finding of a walkthrough (issue 40) checked as a person
meets it: the text a page shows, the words a command prints, the exit code a script sees."""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest
from conftest import typed

from grader.classroom import similarity
from grader.lesson import catalog, handout
from grader.report import render, render_similarity

HERE = Path(__file__).parent


def _result(**environment) -> dict:
    return {"schema": 1, "status": "graded", "error": None, "lesson": "inference-scaling", "student": "ada",
            "score": 1.0, "max_score": 3.0, "exercises": [], "measured": {}, "simulated": {},
            "environment": environment, "sandbox": {}, "mode": "grade", "seed": 1, "hash_seed": 1,
            "digest": "d", "submission": "ada.ipynb", "graded_at": "2026-12-05T12:00:00+00:00", "notes": [],
            "run": {"attempts": 1, "seconds": 0.0, "timings": {}, "flood": None, "deadline_hit": False}, "cells": [], "stored_outputs": 0, "as_submitted": [], "explanations": []}


def test_no_receipt_says_because_none_and_a_lesson_without_jax_shows_no_jax_rows():
    quiet = _result(cpu_model="x86", cpu_count=2, device_requested="cpu", device_used="cpu",
                    device_fallback_reason=None, jax_backend=None, jax=None)
    for text in (render.report_html(typed(quiet)), render.report_md(typed(quiet))):
        assert "because None" not in text and "fell back" not in text and "JAX backend" not in text
    fell = _result(cpu_model="x86", device_requested="gpu", device_used="cpu", device_fallback_reason="no GPU here")
    assert "fell back to the CPU because" in render.report_md(typed(fell)) and "no GPU here" in render.report_md(typed(fell))


def test_similarity_fragments_keep_one_line_per_line():
    from test_similarity import _class

    lesson = catalog.get("inference-scaling")
    notebooks = _class()
    report = similarity.analyse(notebooks, handout.scaffold(lesson))
    html = render_similarity.similarity_html(report, lesson)
    fragments = re.findall(r"<pre>(.*?)</pre>", html, flags=re.S)
    assert fragments
    for fragment in fragments:
        lines = fragment.split("\n")
        numbered = [line for line in lines if re.match(r"^(<mark>)?\s*\d+  ", line)]
        assert len(numbered) == len([line for line in lines if line.strip()])  # every line starts with its number
        assert len(numbered) >= 1 and not re.search(r"\S\s+\d+  \S.*\s+\d+  ", fragment.split("\n")[0])


def test_names_stand_beside_ids_where_the_roster_gives_them(graded):
    from test_similarity import _class

    from grader.result import gradebook

    lesson = catalog.get("inference-scaling")
    ada = dict(gradebook.summary(typed(graded.solution("inference-scaling"))), student="1001", name="Ada Lovelace")
    absent = [{"student": "1007", "name": "Ben Bitdiddle", "status": "missing", "lesson": lesson.id}]
    page = render.dashboard_html([ada], lesson, absent)
    notice = re.search(r"<strong>No submission</strong>(.*?)</p>", page, flags=re.S).group(1)
    assert "Ben Bitdiddle (1007)" in notice
    assert "Ada Lovelace (1001)</a>" in page
    report = similarity.analyse(_class(), handout.scaffold(lesson))
    html = render_similarity.similarity_html(report, lesson, {"orig": "Ada Lovelace"})
    assert "Ada Lovelace (orig)" in html


def _course_copy(tmp_path):
    import shutil

    root = HERE.parent
    course = tmp_path / "course"
    for name in ("lessons", "solutions", "templates"):
        shutil.copytree(root / name, course / name)
    return course


def _batch(course, folder, out, *extra):
    import os
    import subprocess
    import sys

    env = dict(os.environ, GRADER_COURSE=str(course))
    return subprocess.run([sys.executable, "-m", "grader", "batch", str(folder), "--lesson", "inference-scaling",
                           "--out", str(out), "--jobs", "2", *extra], capture_output=True, text=True, env=env,
                          timeout=600, cwd=course)


@pytest.mark.kernel
def test_a_regrade_on_a_reference_that_contradicts_the_lesson_moves_nobody_and_says_why(tmp_path):
    import shutil
    import sqlite3

    course = _course_copy(tmp_path)
    folder = tmp_path / "class"
    folder.mkdir()
    for name in ("ada.ipynb", "ben.py"):
        shutil.copy(HERE.parent / "samples" / "inference-scaling" / name, folder / name)
    out = tmp_path / "out"
    assert _batch(course, folder, out).returncode == 0
    before = (out / "grades.csv").read_text()
    answers = course / "solutions" / "inference-scaling" / "answers.py"
    wrong = "    return (accel[0] - general[0]) / unit_saving"
    assert wrong in answers.read_text()
    answers.write_text(answers.read_text().replace(wrong, wrong + " + 1"))  # the lesson says 80, this gives 81
    refused = _batch(course, folder, out, "--regrade")
    assert refused.returncode == 2
    line = refused.stderr.strip()
    assert len(line.splitlines()) == 1 and "the reference changed and contradicts the lesson" in line
    assert "crossover" in line and "no grade moved" in line and "--force" in line
    assert (out / "grades.csv").read_text() == before and not (out / "changes.csv").exists()
    with sqlite3.connect(out / "gradebook.sqlite") as db:
        assert db.execute("SELECT COUNT(*) FROM history").fetchone() == (0,)
    forced = _batch(course, folder, out, "--regrade", "--force")
    assert forced.returncode == 0, forced.stderr[-2000:]
    assert (out / "changes.csv").exists()


def test_completion_is_read_from_the_source_and_only_where_a_timer_never_waits():
    import nbformat

    from grader.judge import completion

    def book(source):
        return nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source)])

    waits = "def measure(x):\n    t = time.perf_counter()\n    f(x).block_until_ready()\n    return time.perf_counter() - t"
    copies = "def measure(x):\n    t = time.perf_counter()\n    np.asarray(f(x))\n    return time.perf_counter() - t"
    dispatch = "import time\n\ndef measure(x):\n    t = time.perf_counter()\n    f(x)\n    return time.perf_counter() - t"
    assert completion.unwaited(book(waits), ("measure",)) == [] == completion.unwaited(book(copies), ("measure",))
    (said,) = completion.unwaited(book(dispatch), ("measure",))
    assert said.startswith("`measure` (cell 1, line 6): the timer stops without waiting for the device")
    assert completion.unwaited(book(dispatch), ("other",)) == []


def test_a_timer_in_a_helper_that_measure_calls_is_followed_into_the_helper():
    import nbformat

    from grader.judge import completion

    helper = ("import time\n\ndef _timed_call(fn, x):\n    t0 = time.perf_counter()\n    out = fn(x)\n"
              "    return out, (time.perf_counter() - t0) * 1000\n")
    measure = "def measure(batch, repeats=40):\n    return [_timed_call(infer, batch)[1] for _ in range(repeats)]\n"
    book = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(helper), nbformat.v4.new_code_cell(measure)])
    (said,) = completion.unwaited(book, ("measure",))
    assert said.startswith("`_timed_call` (called by `measure`) (cell 1, line 6): the timer stops without waiting")
    # a timed region in measure around a helper that waits does wait
    waiting = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(
        "import time\n\ndef _run(x):\n    return infer(x).block_until_ready()\n\ndef measure(x):\n"
        "    t = time.perf_counter()\n    _run(x)\n    return time.perf_counter() - t\n")])
    assert completion.unwaited(waiting, ("measure",)) == []


@pytest.mark.kernel
def test_a_measure_without_block_until_ready_is_told_so_in_check_and_the_original_is_not(tmp_path):
    import subprocess
    import sys

    from conftest import write

    lesson = catalog.get("inference-capacity")
    original = handout.solution_notebook(lesson)
    assert ".block_until_ready()" in next(c.source for c in original.cells if c.get("id") == "answer-measure")
    hasty = handout.solution_notebook(lesson)
    for cell in hasty.cells:
        cell.source = cell.source.replace(".block_until_ready()", "")
    said = {}
    for name, book in (("original", original), ("hasty", hasty)):
        path = write(book, tmp_path / f"{name}.ipynb")
        done = subprocess.run([sys.executable, "-m", "grader", "check", str(path)], capture_output=True, text=True,
                              timeout=300)
        said[name] = done.stdout
    assert "the timer stops without waiting for the device" in said["hasty"]
    assert "block_until_ready" in said["hasty"] and "PASS" in said["hasty"]  # feedback, not points
    assert "the timer stops without waiting" not in said["original"]


@pytest.mark.kernel
def test_grader_check_inside_a_notebook_prints_the_public_verdicts(tmp_path):
    import shutil

    import nbformat
    from nbclient import NotebookClient

    target = tmp_path / "hw.ipynb"
    shutil.copy(HERE.parent / "samples" / "inference-scaling" / "ada.ipynb", target)
    book = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell(f"import grader\nwhole = grader.check({str(target)!r})"),
        nbformat.v4.new_code_cell(f"one = grader.check({str(target)!r}, 'crossover')"),
        nbformat.v4.new_code_cell("unsaved_answer = 41 + 1"),
        nbformat.v4.new_code_cell(f"__session__ = {str(target)!r}\nfound = grader.check()"),
    ])
    NotebookClient(book, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()
    shown = [[o for o in cell.outputs if o.get("output_type") in ("display_data", "update_display_data")]
             for cell in book.cells]
    plain = ["".join(o.get("data", {}).get("text/plain", "") for o in outs) for outs in shown]
    rich = ["".join(o.get("data", {}).get("text/html", "") for o in outs) for outs in shown]
    # one display per check (the progress line became the verdicts), even where the check was assigned
    assert [len(outs) for outs in shown] == [1, 1, 0, 1]
    assert "PASS     batch-sweep" in plain[0] and "PASS     crossover" in plain[0] and "public checks only" in plain[0]
    assert "<table>" in rich[0] and "not graded yet" in rich[0] and "checking" not in rich[0]
    assert "crossover" in plain[1] and "batch-sweep" not in plain[1]
    assert plain[3].startswith("save first: hw.ipynb on disk does not hold the cells you just ran")
    assert "PASS     crossover" in plain[3] and "save first" in rich[3]
    assert "".join(plain).count("Hidden cases are drawn when your notebook is graded") == 3  # once a check


def test_a_cell_saved_as_a_list_of_lines_is_found_saved_and_an_edited_one_is_not(tmp_path):
    from grader import in_notebook

    cell = "def twice(x):\n    return 2 * x\n\nanswer = twice(21)"
    book = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(cell)])
    path = tmp_path / "hw.ipynb"
    nbformat.write(book, str(path))
    assert isinstance(__import__("json").loads(path.read_text())["cells"][0]["source"], list)  # as Jupyter saves it
    saved = in_notebook.saved_cells(path)
    assert not in_notebook.unsaved([cell, "import grader\ngrader.check()"], saved)
    assert in_notebook.unsaved([cell + "\n# edited"], saved)


def test_the_graders_own_cells_are_not_run_at_grading_nor_their_outputs_compared(tmp_path):
    from grader.intake import load

    for mine in ("import grader\ngrader.check()", "grader.check('hw.ipynb', 'crossover')", "from grader import check\nr = check()",
                 "grader.submit()"):
        assert load.is_grader_cell(mine), mine
    for theirs in ("import grader\nx = 1\ngrader.check()", "print(grader.check())", "import grader", "check = 2"):
        assert not load.is_grader_cell(theirs), theirs
    check_cell = nbformat.v4.new_code_cell("import grader\ngrader.check()")
    check_cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text="3 of 3 exercises pass")]
    book = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1"), check_cell])
    path = tmp_path / "hw.ipynb"
    nbformat.write(book, str(path))
    read = load.read(path)
    assert read.notebook.cells[1].source == "" and read.as_submitted == ()


@pytest.mark.kernel
def test_check_exits_1_when_a_public_check_fails_and_release_says_what_comes_next(tmp_path):
    from click.testing import CliRunner

    from grader import cli

    released = CliRunner().invoke(cli.main, ["release", "inference-scaling", "--out", str(tmp_path)])
    assert released.exit_code == 0 and "next: hand it out" in released.output and "grader check" in released.output
    bare = CliRunner().invoke(cli.main, ["check", str(tmp_path / "inference-scaling.ipynb")])
    assert bare.exit_code == 1 and "0 of 3 exercises pass" in bare.output
    done = CliRunner().invoke(cli.main, ["check", str(HERE.parent / "samples" / "inference-scaling" / "ada.ipynb")])
    assert done.exit_code == 0 and "3 of 3 exercises pass" in done.output


@pytest.mark.kernel
def test_after_keys_init_a_rerun_names_the_unsigned_results_and_verify_finds_the_key(tmp_path, monkeypatch,
                                                                                      own_course):
    import shutil

    from click.testing import CliRunner
    from conftest import FAST

    from grader import cli, grading
    from grader.classroom import batch
    from grader.report import render_text

    folder = tmp_path / "class"
    folder.mkdir()
    shutil.copy(HERE.parent / "samples" / "inference-scaling" / "ada.ipynb", folder / "ada.ipynb")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.delenv("GRADER_KEY", raising=False)
    own_course()  # the key `keys init` makes is this course's, never the suite's: a later test would sign with it
    batch.run(batch.Request(folder, "inference-scaling", tmp_path / "out", jobs=1, options=grading.Options(limits=FAST), progress=False))
    assert CliRunner().invoke(cli.main, ["keys", "init"]).exit_code == 0
    again = batch.run(batch.Request(folder, "inference-scaling", tmp_path / "out", jobs=1, options=grading.Options(limits=FAST),
                      progress=False))
    assert again.skipped == 1
    assert "recorded unsigned, before the course key (sign them: rerun with --regrade): ada" in \
        render_text.report_line(again)
    batch.run(batch.Request(folder, "inference-scaling", tmp_path / "out", jobs=1, options=grading.Options(limits=FAST),
              progress=False, regrade=True))
    checked = CliRunner().invoke(cli.main, ["verify", str(tmp_path / "out" / "results" / "ada.json")])  # no --key
    assert checked.exit_code == 0 and checked.output.startswith("ada.json: intact")


@pytest.mark.parametrize("wait, total", [(3.0, 6.0), (2900.0, 3000.0)])  # a linear axis, and a log one
def test_the_comparison_legend_stays_clear_of_every_bar(wait, total):
    from grader.report import figure
    from grader.result.evidence import Evidence

    spec = catalog.get("dynamic-batching").figure
    measured = {"wait": [wait] * 5, "compute": [2.0] * 5, "overhead": [1.0] * 5, "total": [total] * 5}
    simulated = {"wait": [wait] * 5, "compute": [2.0] * 5, "overhead": [0.0] * 5, "total": [total] * 5}
    data = {"measured": {"values": {"service_measured": measured}},
            "simulated": {"values": {"service_simulated": simulated}}}
    panel = figure.layout(Evidence.of(typed(data)), spec).panels[-1]
    width, height = panel.key_box()
    legend_bottom = panel.plot_top + 6 + height  # the box is drawn from 6 px below the top of the plot
    legend_x = (panel.key_x(), panel.key_x() + width)
    beneath = [b for b in panel.bars if b.x < legend_x[1] and b.x + b.width > legend_x[0]]
    assert beneath and all(b.y >= legend_bottom for b in beneath), (legend_bottom, min(b.y for b in beneath))


def test_messages_show_code_as_code_in_html_pages():
    assert str(render.ticks("`fit_service(<list>)`: got `x`")) == \
        "<code>fit_service(&lt;list&gt;)</code>: got <code>x</code>"


def test_a_recomputation_that_raised_says_what_it_raised_and_one_message_counts_one_way():
    import numpy as np

    from grader.judge import matching, verdict
    from grader.lesson.cases import Case, Recompute
    from grader.run.decoded import Answer, Own, Raised

    case = Case(name="predicted", mode="value", check=Recompute("latency_summary(x)"))
    answer = Answer(value=1.0, own=Own(raised=Raised("TypeError", False, "'NoneType' object is not subscriptable")))
    said = verdict._recomputed(case, answer, "latency_summary(x)", "`predicted`")
    assert "raised TypeError: 'NoneType' object is not subscriptable" in said.message
    three = Case(name="simulate_queue", mode="call", columns=("", "start (ms)", "finish (ms)", "latency (ms)"))
    got = [np.array([0.0, 2.0]), np.array([2.0, 5.0]), np.array([2.0, 3.0])]
    want = [np.array([0.0, 2.0]), np.array([2.0, 4.0]), np.array([2.0, 3.0])]
    where = matching.compare(got, want, three).where
    assert where == "the second of 3 returned values (finish (ms)), at index [1]"  # a word, then an index


def test_one_students_bug_over_many_hidden_cases_is_one_mistake_and_a_quiet_regrade_says_so():
    from grader.classroom import batch
    from grader.judge import mistakes
    from grader.judge.verdict import CaseVerdict, ExerciseResult
    from grader.report import render_text

    messages = [f"hidden case `simulate_queue({i})`: the {word} of 3 returned values ({name}), at index [{i}] differs"
                for i, (word, name) in enumerate([("first", "start"), ("second", "finish"), ("third", "latency"),
                                                   ("first", "start"), ("second", "finish"), ("third", "latency")])]
    cases = tuple(CaseVerdict(f"`simulate_queue({i})`", True, "failed", m) for i, m in enumerate(messages))
    found = mistakes.of_result((ExerciseResult("burst", "failed", 0.0, 1.0, "simulated", (), cases),))
    assert len(found) == 1 and found[0]["input"] == "hidden cases" and found[0]["message"] == messages[0]
    quiet = batch.Summary(total=2, skipped=0, named={"changed": []})
    assert "the regrade moved no grade" in render_text.report_line(quiet)
    assert "moved no grade" not in render_text.report_line(batch.Summary(total=2, skipped=0))


def test_the_similarity_summary_says_which_kind_each_pair_is():
    from test_similarity import _class

    report = similarity.analyse(_class(), handout.scaffold(catalog.get("inference-scaling")))
    line = report.summary()
    assert "copy1 & orig (code 1.0)" in line


@pytest.mark.kernel
def test_a_canvas_export_reuses_the_batchs_roster_and_names_whom_it_left_blank(tmp_path):
    import shutil

    from click.testing import CliRunner

    from grader import cli

    folder = tmp_path / "class"
    folder.mkdir()
    shutil.copy(HERE.parent / "samples" / "inference-scaling" / "ada.ipynb", folder / "ada.ipynb")
    roster = tmp_path / "canvas.csv"
    roster.write_text("Student,ID,SIS User ID,SIS Login ID,Section,Lab 2 (77)\n"
                      "    Points Possible,,,,,3\n\"Lovelace, Ada\",ada,,,A,\n\"Hacker, Alyssa\",alyssa,,,A,\n")
    out = tmp_path / "out"
    done = CliRunner().invoke(cli.main, ["batch", str(folder), "--lesson", "inference-scaling", "--out", str(out),
                                         "--roster", str(roster), "--jobs", "1"])
    assert done.exit_code == 0, done.output
    exported = CliRunner().invoke(cli.main, ["export", "canvas", str(out)])  # no --roster: the batch kept it
    assert exported.exit_code == 0, exported.output
    assert "1 of 2 students scored" in exported.output
    assert "left blank (no graded submission): Hacker, Alyssa (alyssa)" in exported.output


@pytest.mark.kernel
def test_a_per_record_fit_is_shown_its_input_whole_and_told_the_mistake(graded):
    result = graded.patch("dynamic-batching", "fit-per-record")
    fit = next(e for e in result["exercises"] if e["id"] == "service-fit")
    public = next(m for m in fit["messages"] if m.startswith("`fit_service("))
    assert fit["status"] == "failed" and "<list of" not in public
    assert public.startswith("`fit_service([{'id': 0, 'batch_id': 0, 'batch_size': 1")  # pasteable: the records
    assert public.endswith("(one point per batch, not one per record: a batch of four records is still one batch time)")


def test_the_dashboard_has_a_student_by_exercise_table_and_long_cells_wrap(graded):
    from grader.result import gradebook

    lesson = catalog.get("inference-scaling")
    ada = dict(gradebook.summary(typed(graded.solution("inference-scaling"))), student="ada")
    page = render.dashboard_html([ada], lesson)
    table = page.split('<table tabindex="0" class="by-exercise">')[1].split("</table>")[0]
    for exercise in lesson.exercises:
        assert f"<th title=\"{exercise.id}\">{exercise.id}</th>" in table
    assert table.count('<td class="passed">pass</td>') == len(lesson.exercises)
    assert "td code{white-space:normal;overflow-wrap:break-word}" in page  # long code wraps inside its cell


def test_names_reach_the_batch_summary_changes_csv_and_verify(tmp_path):
    import csv

    from grader.classroom import batch, verify
    from grader.report import render_text
    from grader.result import regrade

    summary = batch.Summary(total=2, skipped=0, named={"rejected": ["1002"], "missing": ["1007"]},
                            names={"1002": "Bitdiddle, Ben", "1007": "Hacker, Alyssa"})
    line = render_text.report_line(summary)
    assert "rejected: Bitdiddle, Ben (1002)" in line and "no submission: Hacker, Alyssa (1007)" in line
    before = {"student": "1002", "status": "graded", "score": 1.0, "max_score": 3.0, "exercises": [], "digests": {},
              "graded_at": "a"}
    moved = regrade.changes([(before, dict(before, score=2.0, graded_at="b"))])
    regrade.write_csv(moved, tmp_path / "changes.csv", {"1002": "Bitdiddle, Ben"})
    with open(tmp_path / "changes.csv", newline="") as handle:
        (row,) = csv.DictReader(handle)
    assert (row["student"], row["name"]) == ("1002", "Bitdiddle, Ben")
    assert verify.whose({"student": "1002", "submitted_as": {"name": "Bitdiddle, Ben"}, "status": "graded",
                         "score": 2.0, "max_score": 3.0}).startswith("student 1002 (Bitdiddle, Ben), lesson")


def test_a_comment_and_a_portfolio_name_the_student():
    from grader.classroom import portfolio
    from grader.report import render_text
    from grader.result.record import read_result

    rejected = {"status": "rejected", "student": "1002", "lesson": "inference-scaling", "error": "two files",
                "submitted_as": {"name": "Bitdiddle, Ben"}}
    assert render_text.result_text(read_result(rejected)).startswith("Bitdiddle, Ben (1002) · inference-scaling: not graded")
    entry = portfolio.Entry("inference-scaling", dict(rejected, score=0.0, max_score=3.0), "", "", "", None)
    assert "Evidence portfolio · Bitdiddle, Ben (1002)" in portfolio.index_html([entry])


def test_a_self_check_never_says_0_hidden():
    from grader.judge import verdict
    from grader.lesson.catalog import Case

    public = [Case(name="f", mode="call"), Case(name="g", mode="call")]
    assert verdict._passed_line(public, {}) == "all 2 cases passed"
    assert verdict._passed_line(public + [Case(name="h", mode="call", hidden=True)], {}) == \
        "all 3 cases passed (2 public, 1 hidden)"
