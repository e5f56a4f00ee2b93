"""Every edge a student controls outside the kernel: class zips, links, file names, rosters, and the text the
grader writes from them (CSV, shell, terminal). Each attack below once worked against the grader."""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import warnings
import zipfile
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import FAST, SEED, typed

from grader import cli, grading
from grader.base import escape, files
from grader.base.errors import GraderError, SubmissionRejected
from grader.classroom import batch, platforms
from grader.intake import layouts, load, roster
from grader.lesson.draw import Given
from grader.report import render
from grader.result import gradebook

HERE = Path(__file__).parent
SAMPLES = HERE.parent / "samples" / "inference-scaling"
LESSON = "inference-scaling"


def run(*args):
    return CliRunner().invoke(cli.main, [str(a) for a in args])


def _zip(path: Path, entries: list[tuple[str | zipfile.ZipInfo, bytes]]) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive, warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a duplicate name is what some tests write on purpose
        for name, body in entries:
            archive.writestr(name, body)
    return path


def _everything_under(folder: Path) -> set[str]:
    return {str(p.relative_to(folder)) for p in folder.rglob("*")}


# ---- one safe unpacker ----

def _hostile_names(tmp_path: Path) -> list[str]:
    inside = str(tmp_path / "escaped" / "hidden.py")
    return ["\\" + inside.lstrip("/").replace("/", "\\"),      # a backslash path: '/' once normalised
            "..\\escaped\\evil.ipynb", "C:\\escaped\\evil.ipynb", "c:/escaped/evil.ipynb",
            "ok/../../escaped/evil.ipynb", "/escaped/abs.ipynb", "bell\x07.ipynb", "\x1b[2Jclear.ipynb"]


def test_no_zip_entry_lands_outside_its_folder_and_each_is_its_students_rejected_row(tmp_path):
    names = _hostile_names(tmp_path)
    archive = _zip(tmp_path / "class.zip", [(name, b"{}") for name in names]
                   + [("ada.ipynb", (SAMPLES / "ada.ipynb").read_bytes())])
    before = _everything_under(tmp_path)
    found = layouts.read(archive, tmp_path / "unpacked")
    assert not (tmp_path / "escaped").exists()
    assert _everything_under(tmp_path) - before == {f"unpacked/{n}" for n in _everything_under(tmp_path / "unpacked")} | {"unpacked"}
    assert _everything_under(tmp_path / "unpacked") == {"ada.ipynb"}
    refused = [e for e in found.entries if e.refused]
    # a student per first part of the name: two names under `escaped` are one student's
    assert {e.student for e in refused} == {"tmp", "C:", "c:", "ok", "escaped", r"bell\x07", r"\x1b[2Jclear"}
    assert all("not unpacked" in e.refused for e in refused)
    assert all(e.refused.isprintable() and e.student.isprintable() for e in refused)
    assert [e.student for e in found.entries if not e.refused] == ["ada"]


def test_links_duplicates_and_file_folder_clashes_in_a_zip_are_rows_not_crashes(tmp_path):
    link = zipfile.ZipInfo("mallory.ipynb")
    link.external_attr = (0o120777 << 16)
    archive = _zip(tmp_path / "class.zip", [
        (link, b"/etc/passwd"), ("ben.ipynb", b"{}"), ("ben.ipynb", b"[]"),
        ("cleo", b"a file"), ("cleo/answer.ipynb", b"{}"), ("ada.ipynb", b"{}")])
    found = layouts.read(archive, tmp_path / "unpacked")
    why = {e.student: e.refused for e in found.entries}
    assert "symbolic link" in why["mallory"] and "second entry of the same name" in why["ben"]
    assert "a file and a folder of the same name" in why["cleo"] and why["ada"] == ""
    assert not (tmp_path / "unpacked" / "mallory.ipynb").is_symlink()


def test_a_zip_bomb_is_refused_in_one_line_before_anything_is_written(tmp_path, monkeypatch):
    monkeypatch.setattr(layouts, "RATIO_FREE_BYTES", 1 << 20)
    archive = _zip(tmp_path / "bomb.zip", [("ada.ipynb", b"\0" * (8 << 20))])
    with pytest.raises(GraderError, match=r"unpacks to \d+ times its size"):
        layouts.read(archive, tmp_path / "unpacked")
    assert not (tmp_path / "unpacked").exists()


def test_one_oversized_entry_costs_only_its_student(tmp_path, monkeypatch):
    monkeypatch.setattr(layouts, "MAX_ENTRY_BYTES", 1 << 20)
    archive = _zip(tmp_path / "class.zip", [("big.ipynb", os.urandom(2 << 20)), ("ada.ipynb", b"{}")])
    found = layouts.read(archive, tmp_path / "unpacked")
    why = {e.student: e.refused for e in found.entries}
    assert "over the 1 MiB a file may hold" in why["big"] and why["ada"] == ""
    assert _everything_under(tmp_path / "unpacked") == {"ada.ipynb"}


def test_entries_are_written_as_a_stream_never_whole(tmp_path):
    written = []
    target = tmp_path / "out.bin"
    files.write_chunks(target, iter([b"a" * 10, b"b" * 10]), limit=20)
    with pytest.raises(files.TooLarge):
        files.write_chunks(tmp_path / "over.bin", (written.append(1) or b"x" * 8 for _ in range(4)), limit=20)
    assert target.read_bytes() == b"a" * 10 + b"b" * 10
    assert len(written) == 3 and not (tmp_path / "over.bin").exists()  # stopped at the chunk that went over


# ---- links, devices and FIFOs are never followed ----

@pytest.fixture
def linked_class(tmp_path):
    """A flat class with a link to the instructor's solution, a link to a key, and a FIFO, beside Ada."""
    secret = tmp_path / "course" / "course.key"
    secret.parent.mkdir()
    secret.write_text("-----BEGIN PRIVATE KEY-----\nsecret\n")
    folder = tmp_path / "class"
    folder.mkdir()
    (folder / "ada.ipynb").write_bytes((SAMPLES / "ada.ipynb").read_bytes())
    (folder / "trudy.ipynb").symlink_to(HERE.parent / "solutions" / LESSON / "solution.ipynb")
    (folder / "mallory.py").symlink_to(secret)
    os.mkfifo(folder / "fifo.ipynb")
    (folder / "linked-folder").symlink_to(secret.parent, target_is_directory=True)
    return folder, secret


def test_a_folder_class_never_follows_a_link_or_opens_a_fifo(linked_class):
    folder, _ = linked_class
    found = layouts.detect(folder)
    why = {e.student: e.refused for e in found.entries}
    assert found.layout == "flat" and why["ada"] == ""
    assert "trudy.ipynb is a symbolic link" in why["trudy"] and "mallory.py is a symbolic link" in why["mallory"]
    assert "fifo.ipynb is a FIFO" in why["fifo"] and "linked-folder is a symbolic link" in why["linked-folder"]


@pytest.mark.kernel
def test_a_batch_records_linked_submissions_as_rejected_and_reads_nothing_through_them(linked_class, tmp_path):
    folder, secret = linked_class
    out = tmp_path / "out"
    summary = batch.run(batch.Request(folder, LESSON, out, jobs=2, options=grading.Options(limits=FAST), given=Given(seed=SEED), progress=False))
    results = {p.stem: json.loads(p.read_text()) for p in (out / "results").glob("*.json")}
    assert results["ada"]["status"] == "graded" and results["ada"]["score"] == 3.0
    for student in ("trudy", "mallory", "fifo", "linked-folder"):
        assert results[student]["status"] == "rejected", student
        assert "not a regular file; it is not read" in results[student]["error"]
    assert sorted(summary.named["rejected"]) == ["fifo", "linked-folder", "mallory", "trudy"]
    written = b"".join(p.read_bytes() for p in out.rglob("*") if p.is_file())
    assert b"secret" not in written and b"PRIVATE KEY" not in written


@pytest.mark.kernel
def test_a_batch_of_a_hostile_zip_grades_the_neighbour_and_rejects_each_entry(tmp_path):
    names = _hostile_names(tmp_path)
    archive = _zip(tmp_path / "class.zip", [(name, b"print('ran outside the sandbox')") for name in names]
                   + [("ada.ipynb", (SAMPLES / "ada.ipynb").read_bytes())])
    out = tmp_path / "out"
    batch.run(batch.Request(archive, LESSON, out, jobs=2, options=grading.Options(limits=FAST), given=Given(seed=SEED), progress=False))
    assert not (tmp_path / "escaped").exists()
    results = [json.loads(p.read_text()) for p in (out / "results").glob("*.json")]
    graded = [r for r in results if r["status"] == "graded"]
    assert [r["student"] for r in graded] == ["ada"] and graded[0]["score"] == 3.0
    assert len(results) == 1 + 7  # the entries under `escaped` are one student's
    assert all("not unpacked" in r["error"] for r in results if r["status"] == "rejected")


def test_grade_and_check_refuse_a_link_or_a_fifo_as_the_file_itself(linked_class, tmp_path):
    folder, _ = linked_class
    for name in ("trudy.ipynb", "fifo.ipynb"):
        with pytest.raises(SubmissionRejected, match="not a regular file"):
            load.read(folder / name)
        for command in ("grade", "check"):
            done = run(command, folder / name, "--lesson", LESSON, *(["--json", tmp_path / "r.json"]
                                                                      if command == "grade" else []))
            assert done.exit_code == 2 and len(done.stderr.strip().splitlines()) == 1, done.output
            assert "not a regular file" in done.stderr
    assert json.loads((tmp_path / "r.json").read_text())["status"] == "rejected"


def test_links_above_the_file_are_the_users_own(tmp_path):
    real = tmp_path / "real"
    real.mkdir()
    (real / "ada.ipynb").write_bytes((SAMPLES / "ada.ipynb").read_bytes())
    (tmp_path / "via").symlink_to(real, target_is_directory=True)
    assert load.read(tmp_path / "via" / "ada.ipynb").student == "ada"


# ---- a roster is a class list, or one line ----

@pytest.mark.parametrize("body, said", [
    ((SAMPLES / "ada.ipynb").read_bytes(), "not a CSV"),
    (b"student\nada\n" + b"x" * 2000 + b"\n", "field over 1024"),
    (b'student\n"ada\n' + b"y" * (200 * 1024) + b"\n", "not a CSV this tool can read"),
    (b"\xff\xfe\x00s", "cannot read the roster"),
])
def test_a_roster_that_is_not_a_class_list_is_one_line(tmp_path, body, said):
    path = tmp_path / "roster.csv"
    path.write_bytes(body)
    with pytest.raises(GraderError, match=said):
        roster.read(path)
    done = run("batch", tmp_path, "--lesson", LESSON, "--out", tmp_path / "out", "--roster", path)
    assert done.exit_code == 2 and len(done.stderr.strip().splitlines()) == 1 and said in done.stderr


# ---- one way out: CSV, shell, terminal ----

FORMULAS = ["=1+1", "=HYPERLINK(\"http://x\",\"y\")", "+cmd|' /C calc'!A0", "@SUM(1)", "-2+3", " =1+1", "\t=1", "\r=1"]


def _cells(text: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(text)))


def test_every_csv_cell_a_student_controls_is_no_formula_and_numbers_stay_numbers(tmp_path):
    rows = [{"student": f, "lesson": LESSON, "status": "rejected", "score": 0.0, "max_score": 3.0, "error": f,
             "name": f, "late": False, "exercises": []} for f in FORMULAS]
    rows.append({"student": "-2", "lesson": LESSON, "status": "graded", "score": -1.5, "max_score": 3.0,
                 "error": "", "name": "", "late": False, "exercises": [{"id": "x", "score": 1.0}]})
    gradebook.write_csv(rows, ["x"], tmp_path / "grades.csv", [{"student": "=2+2", "name": "@A1"}])
    cells = _cells((tmp_path / "grades.csv").read_text())
    for row in cells[1:]:
        for cell in row:
            assert cell[:1] not in ("=", "+", "-", "@", "\t", "\r") or cell in ("-2", "-1.5"), cell
    assert cells[-2][:6] == ["-2", LESSON, "graded", "-1.5", "3.0", "1.0"]  # numbers stay numbers
    assert cells[1][0] == "'=1+1" and cells[-1][0] == "'=2+2"
    assert escape.csv_cell("+cmd|' /C calc'!A0") == "'+cmd\\|' /C calc'!A0"


def test_the_canvas_export_neutralises_formulas_from_the_roster(tmp_path):
    path = tmp_path / "canvas.csv"
    with path.open("w", newline="") as handle:
        csv.writer(handle).writerows([["Student", "ID", "SIS User ID", "SIS Login ID", "Section"],
                                      ["=HYPERLINK(\"http://x\")", "1001", "@SUM(1)", "-2+3", "+cmd|' /C calc'!A0"]])
    from grader.result.record import read_result

    results = [read_result({"student": "1001", "status": "graded", "score": 3.0, "max_score": 3.0, "lesson": LESSON,
                            "exercises": [], "submitted_as": {"layout": "canvas", "files": []}})]
    target = platforms._canvas(results, LESSON, tmp_path / "export", path, "", "77")
    cells = _cells((target / "gradebook.csv").read_text())
    assert cells[2][:5] == ["'=HYPERLINK(\"http://x\")", "1001", "'@SUM(1)", "'-2+3", "'+cmd\\|' /C calc'!A0"]
    assert cells[2][5] == "3"


def test_the_replay_command_is_one_quoted_word_per_argument_and_runs_nothing(tmp_path):
    name = "x;$(touch PWNED);#`touch PWNED2`.ipynb"
    command = render.replay_command(typed({"submission": name, "student": Path(name).stem, "lesson": LESSON, "seed": 7,
                                           "hash_seed": 3}))
    shown = subprocess.run(["bash", "-c", 'grader() { printf "%s\\n" "$@"; }; ' + command], cwd=tmp_path,
                           capture_output=True, text=True, timeout=30)
    assert shown.stdout.splitlines() == ["grade", name, "--lesson", LESSON, "--seed", "7", "--hash-seed", "3"]
    assert list(tmp_path.iterdir()) == []
    assert escape.md_code("a`b") == "`` a`b ``"


def test_terminal_escapes_from_a_file_name_or_a_message_never_reach_the_terminal(tmp_path):
    assert escape.terminal("\x1b]0;owned\x07\x1b[2Jok\n\tnext\x9b") == "\\x1b]0;owned\\x07\\x1b[2Jok\n\tnext\\x9b"
    path = tmp_path / "\x1b]0;owned\x07\x1b[2J.txt"
    path.write_text("x")
    done = run("grade", path, "--lesson", LESSON)
    assert done.exit_code == 2 and "\x1b" not in done.stderr and "\x07" not in done.stderr
    assert "\\x1b]0;owned\\x07" in done.stderr


# ---- a kernel's protocol is the student's ----

@pytest.mark.kernel
@pytest.mark.sandbox  # run again as an ordinary user by .ci/rootless
def test_a_kernel_that_garbles_its_messages_fails_that_student_and_grade_still_exits_0(tmp_path):
    from conftest import patched_solution, statuses, write

    capacity = "inference-capacity"
    path = write(patched_solution(capacity, HERE / "submissions" / "hostile" / "garbles-kernel-messages.py"),
                 tmp_path / "garbles.ipynb")
    done = run("grade", path, "--lesson", capacity, "--json", tmp_path / "r.json", "--seed", SEED,
               "--cell-timeout", 30)
    assert done.exit_code == 0, done.output
    result = json.loads((tmp_path / "r.json").read_text())
    got = statuses(result)
    assert result["status"] == "graded" and "internal grader error" not in json.dumps(result)
    # the cell that garbled the protocol is left out; the probe that garbled it costs what was not yet answered
    assert got["p95-interpolation"] == "error" and got["replica-plan"] == "error"
    assert got["queue-hand-check"] == got["measure"] == "passed"
    messages = " ".join(m for e in result["exercises"] for m in e["messages"])
    assert "broke the kernel protocol" in messages and "'msg_type' is a dict, not a string" in messages


@pytest.mark.kernel
def test_a_batch_shows_no_escape_sequence_from_a_file_name_or_a_reason(tmp_path):
    folder = tmp_path / "class"
    folder.mkdir()
    (folder / "\x1b]0;owned\x07\x1b[2J.ipynb").write_text("not json \x1b[31mred")
    (folder / "ada.ipynb").write_bytes((SAMPLES / "ada.ipynb").read_bytes())
    done = run("batch", folder, "--lesson", LESSON, "--out", tmp_path / "out", "--jobs", 1, "--cell-timeout", 30)
    shown = done.stdout + done.stderr
    assert done.exit_code == 0, shown
    assert "\x1b" not in shown and "\x07" not in shown
    assert "\\x1b]0;owned\\x07" in shown  # named, made visible
