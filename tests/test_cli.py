"""cli: exit codes, one-line reasons, `--json -`, release and validate, run in-process."""

from __future__ import annotations

import json

import nbformat
import pytest
from click.testing import CliRunner

from grader import cli
from grader.lesson import catalog, handout

LESSON = "inference-capacity"


def run(*args):
    return CliRunner().invoke(cli.main, list(args))


BAD = {"broken.ipynb": b'{"cells": [', "empty.ipynb": b"", "old.ipynb": json.dumps({"nbformat": 3, "worksheets": []}).encode(),
       "image.ipynb": b"\x89PNG\r\n\x1a\n\x00\x00", "bytes.ipynb": b"\xff\xfe\x00garbage", "nocells.ipynb": b'{"nbformat": 4, "metadata": {}}'}


@pytest.mark.parametrize("name", sorted(BAD))
def test_bad_input_exits_2_with_one_line_and_a_rejected_result(tmp_path, name):
    path = tmp_path / name
    path.write_bytes(BAD[name])
    out = tmp_path / "result.json"
    result = run("grade", str(path), "--lesson", LESSON, "--json", str(out))
    assert result.exit_code == 2
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("grader: ") and "Traceback" not in result.output
    data = json.loads(out.read_text())
    assert data["status"] == "rejected" and data["error"] and data["schema"] == 1


def test_json_dash_writes_exactly_one_document(tmp_path):
    path = tmp_path / "broken.ipynb"
    path.write_text("{")
    result = run("grade", str(path), "--lesson", LESSON, "--json", "-")
    assert result.exit_code == 2
    assert json.loads(result.stdout)["status"] == "rejected"


def test_unknown_lesson_is_a_clear_error(tmp_path):
    path = tmp_path / "a.py"
    path.write_text("x = 1\n")
    result = run("grade", str(path), "--lesson", "no-such-lesson")
    assert result.exit_code == 2 and "unknown lesson 'no-such-lesson'" in result.stderr


def test_check_without_a_lesson_says_how_to_give_one(tmp_path):
    path = tmp_path / "a.py"
    path.write_text("x = 1\n")
    result = run("check", str(path))
    assert result.exit_code == 2 and "--lesson" in result.stderr


def _reference_lines(lesson_id):
    """Every substantive line of the reference answers.

    Left out: blank lines, comments, short lines, and `def` lines, whose
    signatures the contract itself publishes to students.
    """
    text = (catalog.get(lesson_id).solutions / "answers.py").read_text()
    lines = {line.strip() for line in text.splitlines()}
    return {line for line in lines if len(line) > 12 and not line.startswith(("#", "def "))}


@pytest.mark.parametrize("lesson_id", ["inference-capacity", "inference-scaling"])
def test_release_contains_no_line_of_the_reference(tmp_path, lesson_id):
    result = run("release", lesson_id, "--out", str(tmp_path))
    assert result.exit_code == 0
    notebook = nbformat.read(str(tmp_path / f"{lesson_id}.ipynb"), as_version=4)
    assert notebook.metadata["grader"]["lesson"] == lesson_id
    released = {line.strip() for cell in notebook.cells for line in cell.source.splitlines()}
    leaked = _reference_lines(lesson_id) & released
    assert not leaked, leaked
    assert any("answer" in cell.metadata.get("tags", []) for cell in notebook.cells)


def test_committed_solution_notebook_is_up_to_date():
    for lesson_id in catalog.available():
        lesson = catalog.get(lesson_id)
        committed = nbformat.read(str(lesson.solutions / "solution.ipynb"), as_version=4)
        built = handout.solution_notebook(lesson)
        assert [c.source for c in committed.cells] == [c.source for c in built.cells], (
            f"run `grader build-solution {lesson_id}`")


@pytest.mark.kernel
def test_validate_proves_the_lesson_sound():
    result = run("validate", LESSON, "--cell-timeout", "20")
    assert result.exit_code == 0, result.output
    assert "reference: 9/9 passed" in result.stdout
    assert "scaffold: 0 passed" in result.stdout
    assert "nothing crashed" in result.stdout


@pytest.mark.kernel
def test_check_feedback_names_expected_and_got(tmp_path):
    notebook = handout.solution_notebook(catalog.get(LESSON))
    for cell in notebook.cells:
        if cell["id"] == "answer-batch-collection":
            cell.source = "collection_wait = (8 - np.arange(8)) * 2.0"
    path = tmp_path / "mine.ipynb"
    nbformat.write(notebook, str(path))
    result = run("check", str(path), "--cell-timeout", "20")
    assert result.exit_code == 1  # a public check fails: exit 1, as test runners do
    text = result.stdout
    assert "PASS     queue-hand-check" in text
    assert "FAIL     batch-collection" in text
    assert "expected 14.0" in text and "got 16.0" in text


@pytest.mark.kernel
def test_grade_json_dash_prints_one_document_and_check_reads_the_lesson_from_metadata(tmp_path):
    released = handout.release("inference-scaling", tmp_path)
    result = run("grade", str(released), "--lesson", "inference-scaling", "--json", "-", "--cell-timeout", "20")
    assert result.exit_code == 0
    data = json.loads(result.stdout)  # exactly one document: json.loads rejects trailing text
    assert data["status"] == "graded" and data["lesson"] == "inference-scaling" and data["score"] == 0.0
    assert [e["id"] for e in data["exercises"]] == ["batch-sweep", "crossover", "cache-product"]
    checked = run("check", str(released), "--cell-timeout", "20")
    assert checked.exit_code == 1 and "for lesson inference-scaling" in checked.stdout  # nothing passes yet


@pytest.mark.parametrize("command", ["grade", "check"])
def test_a_lesson_option_that_disagrees_with_the_notebook_is_refused_naming_both(tmp_path, command):
    released = handout.release("inference-scaling", tmp_path)
    result = run(command, str(released), "--lesson", "inference-capacity", *(["--json", str(tmp_path / "r.json")]
                                                                             if command == "grade" else []))
    assert result.exit_code == 2
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "'inference-scaling'" in lines[0] and "'inference-capacity'" in lines[0]
    if command == "grade":
        assert json.loads((tmp_path / "r.json").read_text())["status"] == "rejected"


@pytest.mark.kernel
def test_grade_reads_the_lesson_from_the_metadata_when_none_is_given(tmp_path):
    released = handout.release("inference-capacity", tmp_path)
    result = run("grade", str(released), "--json", "-", "--no-sandbox", "--cell-timeout", "20")
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["lesson"] == "inference-capacity"


def test_batch_records_a_disagreeing_notebook_as_rejected_naming_both(tmp_path):
    (tmp_path / "in").mkdir()
    handout.release("inference-scaling", tmp_path / "in")
    done = run("batch", str(tmp_path / "in"), "--lesson", LESSON, "--out", str(tmp_path / "out"), "--jobs", "1",
               "--no-sandbox")
    assert done.exit_code == 0, done.output
    data = json.loads((tmp_path / "out" / "results" / "inference-scaling.json").read_text())
    assert data["status"] == "rejected" and "'inference-scaling'" in data["error"] and f"'{LESSON}'" in data["error"]


def test_batch_into_a_folder_whose_gradebook_is_another_file_stops_and_leaves_it_alone(tmp_path):
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "ada.py").write_text("x = 1\n")
    book = tmp_path / "out" / "gradebook.sqlite"
    book.parent.mkdir()
    book.write_bytes(b"minutes of the staff meeting\n" * 200)
    result = run("batch", str(tmp_path / "in"), "--lesson", LESSON, "--out", str(tmp_path / "out"))
    assert result.exit_code == 2
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "is not a gradebook" in lines[0] and "Traceback" not in result.output
    assert book.read_bytes() == b"minutes of the staff meeting\n" * 200
    assert not (tmp_path / "out" / "results" / "ada.json").exists()


def test_two_files_for_one_student_are_rejected_together_until_one_is_removed(tmp_path):
    folder, out = tmp_path / "in", tmp_path / "out"
    folder.mkdir()
    (folder / "ada.ipynb").write_text("{ not a notebook")
    (folder / "ada.py").write_text("x = 1\n")
    first = run("batch", str(folder), "--lesson", LESSON, "--out", str(out))
    assert first.exit_code == 0, first.output
    assert "1 submissions: 0 graded, 1 rejected, 0 already recorded" in first.output
    data = json.loads((out / "results" / "ada.json").read_text())
    assert data["status"] == "rejected" and "ada.ipynb, ada.py" in data["error"]
    again = run("batch", str(folder), "--lesson", LESSON, "--out", str(out))
    assert "0 graded, 0 rejected, 1 already recorded" in again.output

    (folder / "ada.py").unlink()  # the instructor keeps the notebook: it is graded (here: rejected) on its own
    third = run("batch", str(folder), "--lesson", LESSON, "--out", str(out))
    assert "1 submissions: 0 graded, 1 rejected, 0 already recorded" in third.output
    data = json.loads((out / "results" / "ada.json").read_text())
    assert data["submission"] == "ada.ipynb" and "ada.py" not in data["error"]
    assert len((out / "grades.csv").read_text().splitlines()) == 2


@pytest.mark.parametrize("jobs", ["0", "-3", "many"])
def test_batch_refuses_a_job_count_below_one_before_touching_anything(tmp_path, jobs):
    (tmp_path / "in").mkdir()
    result = run("batch", str(tmp_path / "in"), "--lesson", LESSON, "--out", str(tmp_path / "out"), "--jobs", jobs)
    assert result.exit_code == 2 and "--jobs" in result.output
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("flag", [["--cell-timeout", "0"], ["--cell-timeout", "-1"], ["--cell-timeout-for", "x=0"],
                                  ["--cell-timeout-for", "nothing"], ["--notebook-timeout", "0"]])
def test_timeouts_must_be_positive(tmp_path, flag):
    result = run("grade", str(tmp_path / "a.py"), "--lesson", LESSON, *flag)
    assert result.exit_code == 2 and "Traceback" not in result.output


def test_a_timeout_below_one_second_is_rounded_up_not_to_no_limit():
    from grader.run import cells as running

    assert running.whole_seconds(0.5) == 1 and running.whole_seconds(2.1) == 3 and running.whole_seconds(4) == 4


def test_batch_refuses_without_isolation_unless_told(tmp_path, monkeypatch):
    from grader.kernel import sandbox

    monkeypatch.setattr(sandbox, "bwrap_path", lambda: None)
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "ada.py").write_text("x = 1\n")
    refused = run("batch", str(tmp_path / "in"), "--lesson", LESSON, "--out", str(tmp_path / "out"), "--jobs", "1")
    assert refused.exit_code == 2
    lines = [line for line in refused.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "without isolation" in lines[0] and "--no-sandbox" in lines[0]
    assert not (tmp_path / "out" / "results" / "ada.json").exists()


@pytest.mark.kernel
def test_batch_without_a_sandbox_says_so_on_stderr_and_the_dashboard(tmp_path, monkeypatch):
    from grader.kernel import sandbox

    monkeypatch.setattr(sandbox, "bwrap_path", lambda: None)
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "ada.py").write_text("x = 1\n")
    done = run("batch", str(tmp_path / "in"), "--lesson", LESSON, "--out", str(tmp_path / "out"), "--jobs", "1",
               "--no-sandbox", "--no-zygote")
    assert done.exit_code == 0, done.output
    assert "without isolation" in done.stderr and "read your files" in done.stderr
    dashboard = (tmp_path / "out" / "index.html").read_text()
    assert "Graded without isolation" in dashboard and "ada" in dashboard
    assert json.loads((tmp_path / "out" / "results" / "ada.json").read_text())["sandbox"]["isolated"] is False


def test_an_absent_device_is_refused_with_one_line_unless_falling_back_is_asked(tmp_path):
    from grader.kernel import devices

    if devices.device_available("gpu"):
        pytest.skip("this host has a GPU")
    (tmp_path / "a.py").write_text("x = 1\n")
    refused = run("grade", str(tmp_path / "a.py"), "--lesson", LESSON, "--device", "gpu")
    lines = [line for line in refused.stderr.splitlines() if line.strip()]
    assert refused.exit_code == 2 and len(lines) == 1 and "no GPU on this host" in lines[0] and "--device-fallback" in lines[0]


@pytest.mark.kernel
def test_grade_writes_every_report_and_a_portfolio_takes_them_all(tmp_path):
    import zipfile

    (tmp_path / "ada.py").write_text("interpolated_p95 = 5.95\n")
    out = tmp_path / "out"
    done = run("grade", str(tmp_path / "ada.py"), "--lesson", LESSON, "--json", str(out / "ada.json"),
               "--html", str(out / "ada.html"), "--md", str(out / "ada.md"), "--notebook", str(out / "ada.executed.ipynb"),
               "--no-sandbox", "--device", "gpu", "--device-fallback")
    assert done.exit_code == 0, done.stderr
    data = json.loads((out / "ada.json").read_text())
    env = data["environment"]
    assert (env["device_requested"], env["device_used"], env["device_fell_back"]) == ("gpu", "cpu", True)
    for key in ("cpu_model", "cpu_count", "memory_bytes", "os", "python", "jax", "grader", "isolation", "jobs_at_once"):
        assert key in env, key
    assert "Receipt" in (out / "ada.html").read_text() and "Receipt:" in (out / "ada.md").read_text()
    zipped = run("portfolio", str(out / "ada.json"), "--out", str(tmp_path / "ada.zip"))
    assert zipped.exit_code == 0, zipped.stderr
    with zipfile.ZipFile(tmp_path / "ada.zip") as archive:
        assert archive.read(f"{LESSON}/notebook.ipynb") == (out / "ada.executed.ipynb").read_bytes()
        assert archive.read(f"{LESSON}/report.md") == (out / "ada.md").read_bytes()
    other = dict(data, student="ben", lesson="inference-scaling", digests=dict(data["digests"], notebook=None))
    (out / "ben.json").write_text(json.dumps(other))
    mixed = run("portfolio", str(out / "ada.json"), str(out / "ben.json"), "--out", str(tmp_path / "mixed.zip"))
    lines = [line for line in mixed.stderr.splitlines() if line.strip()]
    assert mixed.exit_code == 2 and len(lines) == 1 and "different students (ada, ben)" in lines[0]
    assert not (tmp_path / "mixed.zip").exists()


def test_the_command_line_loads_without_the_grading_machinery():
    """`grader batch` starts its kernel template before it imports grading, reports and records (so the
    template's second of imports overlaps the grader's own); `--help` and `check` do not wait for them either."""
    import subprocess
    import sys

    probe = ("import sys, grader.cli\n"
             "print(sorted(m for m in ('grader.grading', 'grader.classroom.batch', 'grader.report.render', 'grader.result.record', 'jinja2',"
             " 'cryptography') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "[]"


def test_the_command_line_docstrings_name_every_command():
    from grader import cli, cli_class

    told = (cli.__doc__ or "") + (cli_class.__doc__ or "")
    for name in cli.main.commands:
        assert name in told, f"cli.py's docstring does not name `{name}`"
