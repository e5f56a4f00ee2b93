"""The edges tried as an attacker would in round three: long and look-alike names, noise against similarity, the
watcher's read, the regrade's seeds, portfolios that verify and only what verify read. Each test below failed on
the commit before its fix."""

from __future__ import annotations

import json
import unicodedata
import warnings
import zipfile
from pathlib import Path

import pytest
from conftest import FAST, SEED

from grader import grading
from grader.base import escape
from grader.classroom import batch
from grader.intake import layouts
from grader.lesson.draw import Given

HERE = Path(__file__).parent
SAMPLES = HERE.parent / "samples" / "inference-scaling"
LESSON = "inference-scaling"


def _zip(path: Path, entries: list[tuple[str, bytes]]) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name, body in entries:
            archive.writestr(name, body)
    return path


# ---- finding 3: one file name stops the class ----

def test_a_250_byte_entry_name_unpacks_and_its_student_is_one_row(tmp_path):
    long_name = "ben_1002_2002_" + "x" * (250 - len("ben_1002_2002_.ipynb")) + ".ipynb"
    assert len(long_name.encode()) == 250
    archive = _zip(tmp_path / "class.zip", [(long_name, b"{}"), ("ada_1001_2001_ada.ipynb", b"{}")])
    found = layouts.read(archive, tmp_path / "unpacked")
    assert {e.student: e.refused for e in found.entries} == {"1001": "", "1002": ""}


@pytest.mark.kernel
def test_a_batch_with_a_250_byte_flat_name_grades_everyone_and_names_every_file_within_limits(tmp_path):
    stem = "y" * 247  # flat layout: the stem is the student id; `.py` + `.ipynb` would pass 255 bytes
    archive = _zip(tmp_path / "class.zip", [(stem + ".py", b"x = 1\n"),
                                            ("ada.ipynb", (SAMPLES / "ada.ipynb").read_bytes())])
    out = tmp_path / "out"
    batch.run(batch.Request(archive, LESSON, out, jobs=1, options=grading.Options(limits=FAST), given=Given(seed=SEED), progress=False))
    results = {json.loads(p.read_text())["student"]: json.loads(p.read_text()) for p in (out / "results").glob("*.json")}
    assert results["ada"]["score"] == 3.0
    long_id = next(s for s in results if s != "ada")
    assert long_id.startswith("y" * 100) and len(long_id.encode()) <= layouts.MAX_STUDENT_BYTES
    assert all(len(p.name.encode()) <= 255 for p in out.rglob("*"))


# ---- finding 5: two students who look like one ----

def test_nfc_and_nfd_spellings_of_one_name_are_one_student_rejected_with_both_files(tmp_path):
    nfc, nfd = unicodedata.normalize("NFC", "josé"), unicodedata.normalize("NFD", "josé")
    assert nfc != nfd
    archive = _zip(tmp_path / "class.zip", [(nfc + ".ipynb", b"{}"), (nfd + ".ipynb", b"{}")])
    found = layouts.read(archive, tmp_path / "unpacked")
    assert [e.student for e in found.entries] == [nfc]
    assert len(found.entries[0].paths) == 2  # batch rejects a student with two files, naming both


@pytest.mark.kernel
def test_a_batch_rejects_both_spellings_and_writes_one_row(tmp_path):
    body = (SAMPLES / "ada.ipynb").read_bytes()
    nfc, nfd = unicodedata.normalize("NFC", "josé"), unicodedata.normalize("NFD", "josé")
    archive = _zip(tmp_path / "class.zip", [(nfc + ".ipynb", body), (nfd + ".ipynb", b"{}")])
    out = tmp_path / "out"
    batch.run(batch.Request(archive, LESSON, out, jobs=1, options=grading.Options(limits=FAST), given=Given(seed=SEED), progress=False))
    rows = (out / "grades.csv").read_text(encoding="utf-8").splitlines()[1:]
    assert len(rows) == 1 and rows[0].startswith(nfc + ",")
    result = json.loads((out / "results" / f"{nfc}.json").read_text())
    assert result["status"] == "rejected" and "2 files for student" in result["error"]


# ---- finding 8: formula look-alikes ----

def test_fullwidth_and_no_break_space_formulas_are_neutralised():
    for text in ("\uff1d1+1", "\uff0bcmd|x", "\uff0dcmd", "\uff20SUM(A1)", "\u00a0=1+1"):
        assert escape.csv_text([[text]]).startswith("'"), text


# ---- finding 4: the watcher sits silent on a FIFO ----

def test_watch_refuses_a_fifo_a_link_or_an_oversized_file_at_start_in_one_line(tmp_path):
    import os
    import subprocess
    import sys

    fifo, link, big = tmp_path / "fifo.ipynb", tmp_path / "link.ipynb", tmp_path / "big.ipynb"
    os.mkfifo(fifo)
    link.symlink_to(SAMPLES / "ada.ipynb")
    with open(big, "wb") as handle:
        handle.truncate(21 * 1024 * 1024)  # sparse: over the 20 MiB a submission may hold
    for path, kind in ((fifo, "a FIFO"), (link, "a symbolic link"), (big, "over the 20 MiB limit")):
        done = subprocess.run([sys.executable, "-m", "grader", "check", "--watch", str(path)],
                              capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
        assert done.returncode == 2, (path, done.stdout, done.stderr)
        assert kind in done.stderr and len(done.stderr.strip().splitlines()) == 1


def test_a_fifo_put_in_the_notebooks_place_mid_watch_is_skipped_with_one_line(tmp_path):
    import os

    from grader import watch
    from grader.base.options import Options

    path = tmp_path / "nb.ipynb"
    os.mkfifo(path)
    watcher = watch.Watcher(path, LESSON, Options())
    said = watcher.poll()  # returns at once: the FIFO is never opened for reading
    assert said is not None and said.startswith("skipped:") and "a FIFO" in said
    assert watcher.poll() is None  # said once, until the entry changes


# ---- finding 7: an honest portfolio fails verify ----

def _cli(*args):
    from click.testing import CliRunner

    from grader import cli

    return CliRunner().invoke(cli.main, [str(a) for a in args])


@pytest.mark.kernel
def test_an_honest_portfolio_of_grade_json_alone_verifies_intact(tmp_path, course_key):
    _, pub = course_key
    result = tmp_path / "r.json"
    graded = _cli("grade", SAMPLES / "ada.ipynb", "--json", result, "--seed", SEED)
    assert graded.exit_code == 0, graded.output
    assert "keys init" not in graded.output  # a student is never invited to make a course key
    data = json.loads(result.read_text())
    assert data["digests"]["notebook"] is None and data["digests"]["report"] is None  # nothing else was written
    built = _cli("portfolio", result, "--out", tmp_path / "p.zip")
    assert built.exit_code == 0, built.output
    checked = _cli("verify", tmp_path / "p.zip", "--key", pub)
    assert checked.exit_code == 0, checked.output
    # with --notebook elsewhere, the result records a notebook the portfolio cannot find: refused, naming the flag
    graded = _cli("grade", SAMPLES / "ada.ipynb", "--json", result, "--notebook", tmp_path / "elsewhere.ipynb",
                  "--seed", SEED)
    refused = _cli("portfolio", result, "--out", tmp_path / "q.zip")
    assert refused.exit_code == 2 and "--notebook r.executed.ipynb" in refused.stderr
    assert not (tmp_path / "q.zip").exists()


# ---- findings 9 and 10: verify vouches only for what it read ----

def _forged(source: Path, target: Path, change) -> Path:
    with zipfile.ZipFile(source) as old, zipfile.ZipFile(target, "w") as new:
        for info in old.infolist():
            new.writestr(info.filename, old.read(info))
        change(new)
    return target


def _unicode_path(name: bytes, shown: bytes) -> bytes:
    import struct
    import zlib

    return struct.pack("<HHB", 0x7075, 1 + 4 + len(shown), 1) + struct.pack("<I", zlib.crc32(name)) + shown


def test_verify_refuses_entries_an_unzip_tool_would_write_elsewhere(graded, tmp_path, course_key):
    from test_sign import _portfolio_of

    _, pub = course_key
    real = _portfolio_of(graded, tmp_path, pub)
    report = b"inference-capacity/report.html"

    def folder_with_data(new):
        info = zipfile.ZipInfo("zz/")
        info.extra = _unicode_path(b"zz/", report)
        new.writestr(info, b"<h1>9/9</h1>")

    def extra_on_a_file(new):
        info = zipfile.ZipInfo("notes.bin")
        info.extra = _unicode_path(b"notes.bin", report)
        new.writestr(info, b"<h1>9/9</h1>")

    def twin(new):
        new.writestr("inference-capacity/Report.html", b"<h1>9/9</h1>")

    def backslash(new):
        new.writestr("inference-capacity\\report.html", b"<h1>9/9</h1>")

    for change, said in ((folder_with_data, "zz/: altered (a folder entry"),
                         (extra_on_a_file, "notes.bin: altered (it carries a Unicode-path extra field"),
                         (twin, "differs from it only in case"),
                         (backslash, "altered (a backslash or control character")):
        checked = _cli("verify", _forged(real, tmp_path / f"{change.__name__}.zip", change), "--key", pub)
        assert checked.exit_code == 1 and said in checked.output, (change.__name__, checked.output)


def test_two_results_of_one_lesson_in_case_twin_folders_are_not_intact(graded, tmp_path, course_key):
    from test_sign import _portfolio_of, _signed_result

    from grader.classroom import portfolio
    from grader.result import record, sign

    _, pub = course_key
    real = _portfolio_of(graded, tmp_path, pub)
    older = _signed_result(graded, tmp_path / "older").read_bytes()  # a genuine signed result of the same student
    with zipfile.ZipFile(real) as old:
        members = {name: old.read(name) for name in old.namelist()}
    members = {n: b for n, b in members.items() if n != "manifest.json"}
    members["Inference-Capacity/result.json"] = older
    student = json.loads(older)["student"]
    members["manifest.json"] = record.dumps(sign.unsigned(portfolio.manifest(
        student, ["inference-capacity", "Inference-Capacity"], members))).encode()
    forged = tmp_path / "forged.zip"
    with zipfile.ZipFile(forged, "w") as new:
        for name, body in members.items():
            new.writestr(name, body)
    checked = _cli("verify", forged, "--key", pub)
    assert checked.exit_code == 1
    assert "Inference-Capacity/result.json: altered (a result of lesson 'inference-capacity' in the folder of " \
           "'Inference-Capacity'" in checked.output, checked.output


# ---- finding 6: a regrade trusts the gradebook's seeds ----

def test_only_bounded_seeds_of_intact_signed_results_are_replayed(course_key):
    from grader.result import regrade, sign

    key = sign.signing_key()
    good = sign.sign({"status": "graded", "student": "ada", "seed": 5, "hash_seed": 7}, key)
    huge = sign.sign({"status": "graded", "student": "ben", "seed": 10**30, "hash_seed": 7}, key)  # signed, unbounded
    edited = dict(good, student="cy", seed=6)  # the signature no longer holds
    boolean = sign.sign({"status": "graded", "student": "dee", "seed": True, "hash_seed": 7}, key)
    kept, refused = regrade.trusted({"ada": good, "ben": huge, "cy": edited, "dee": boolean}, key.public_key())
    assert list(kept) == ["ada"] and refused == ["ben", "cy", "dee"]
    kept, refused = regrade.trusted({"cy": edited, "eve": {"status": "graded", "seed": 1, "hash_seed": 2**40}})
    assert list(kept) == ["cy"] and refused == ["eve"]  # no key at hand: bounds alone


@pytest.mark.kernel
def test_a_regrade_grades_edited_seeds_with_fresh_ones_and_says_so(tmp_path, course_key):
    import shutil
    import sqlite3

    folder = tmp_path / "class"
    folder.mkdir()
    for name in ("ada.ipynb", "ben.py"):
        shutil.copy(SAMPLES / name, folder / name)
    out = tmp_path / "out"
    options = grading.Options(limits=FAST)
    batch.run(batch.Request(folder, LESSON, out, jobs=2, options=options, progress=False))
    before = {p.stem: json.loads(p.read_text()) for p in (out / "results").glob("*.json")}
    with sqlite3.connect(out / "gradebook.sqlite") as db:
        for student, field, value in (("ada", "seed", 10**30), ("ben", "hash_seed", 2**40)):
            (text,) = db.execute("SELECT result_json FROM grades WHERE student=?", (student,)).fetchone()
            db.execute("UPDATE grades SET result_json=? WHERE student=?",
                       (json.dumps(dict(json.loads(text), **{field: value})), student))
    summary = batch.run(batch.Request(folder, LESSON, out, jobs=2, options=options, progress=False, regrade=True))
    assert summary.named["untrusted"] == ["ada", "ben"]
    after = {p.stem: json.loads(p.read_text()) for p in (out / "results").glob("*.json")}
    for student in ("ada", "ben"):
        assert after[student]["status"] == "graded" and after[student]["score"] == before[student]["score"]
        assert 0 <= after[student]["seed"] < 2**53 and 0 <= after[student]["hash_seed"] < 2**32
        assert after[student]["seed"] == before[student]["seed"]  # freshly derived: the student's own seed again
    from grader.report import render_text

    assert "recorded seeds not trusted (edited or unsigned), graded with freshly derived seeds: ada, ben" in \
        render_text.report_line(summary)


# ---- finding 2: similarity evaded by noise ----

def _simple_ends(source: str) -> list[tuple[int, int]]:
    import ast

    return sorted({(n.end_lineno, n.col_offset) for n in ast.walk(ast.parse(source))
                   if isinstance(n, ast.stmt) and not hasattr(n, "body")})


def _semicolons(source: str) -> str:
    lines = source.splitlines()
    for end, _ in _simple_ends(source):
        lines[end - 1] += ";"
    return "\n".join(lines)


def _passes(source: str) -> str:
    lines = source.splitlines()
    for end, col in sorted(_simple_ends(source), reverse=True):
        lines.insert(end, " " * col + "pass")
    return "\n".join(lines)


def _unparsed(source: str) -> str:
    import ast

    return ast.unparse(ast.parse(source))


def _docstrings_and_parens(source: str) -> str:
    return "\n".join(line.replace(" = ", " = (", 1) + ")" if " = " in line and not line.rstrip().endswith(("(", "[", "{", ",", "\\"))
                     and line.count("(") == line.count(")") and "#" not in line else line
                     for line in source.splitlines()) + '\n"""A docstring-like constant."""\n'


@pytest.mark.parametrize("noise", [_semicolons, _passes, _unparsed, _docstrings_and_parens])
def test_noise_that_cannot_change_behaviour_does_not_hide_a_copy(noise):
    import copy

    from test_similarity import _class

    from grader.classroom import similarity
    from grader.lesson import catalog, handout

    notebooks = _class()  # the reference, two disguised copies, two independent solutions, two blank handouts
    noisy = copy.deepcopy(notebooks["orig"])
    changed = 0
    for cell in noisy.cells:
        if cell.cell_type == "code" and cell.get("id", "").startswith("answer-"):
            try:
                cell.source, changed = noise(cell.source), changed + 1
                compile(cell.source, "cell", "exec")
            except SyntaxError:
                pytest.fail(f"{noise.__name__} made a cell that does not parse")
    assert changed >= 3
    notebooks["noisy"] = noisy
    report = similarity.analyse(notebooks, handout.scaffold(catalog.get(LESSON)))
    scores = {frozenset(p.students): p.score for p in report.code}
    assert scores[frozenset(("orig", "noisy"))] >= 0.9
    for other in ("indep1", "indep2"):  # independently written solutions stay apart
        assert scores.get(frozenset(("orig", other)), 0.0) < 0.2 and scores.get(frozenset(("noisy", other)), 0.0) < 0.2
