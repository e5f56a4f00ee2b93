"""Classes as LMSs download them, and grades handed back to Canvas, PrairieLearn and Gradescope.

The formats are checked against JSON Schemas and column lists in tests/schemas/,
written from each platform's published documentation (not from our own output).
"""

from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import jsonschema
import pytest
from conftest import FAST, SEED, statuses

from grader import grading
from grader.base.errors import GraderError
from grader.classroom import batch, gradescope, platforms
from grader.intake import layouts
from grader.lesson.draw import Given
from grader.report import platform_results

HERE = Path(__file__).parent
SAMPLES = HERE.parent / "samples" / "inference-scaling"
LESSON = "inference-scaling"
# student: (sample file, Canvas name and user id, Moodle full name and participant id)
CLASS = {"ada": ("ada.ipynb", "lovelaceada", "1001", "Ada Lovelace", "501"),
         "ben": ("ben.py", "bitdiddleben", "1002", "Ben Bitdiddle", "502"),
         "cleo": ("cleo.ipynb", "patracleo", "1003", "Cleo Patra", "503"),
         "dev": ("dev.ipynb", "nulldev", "1004", "Dev Null", "504")}
SCHEMAS = HERE / "schemas"
CANVAS_COLUMNS = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]  # Canvas's gradebook import, in order


def _noise(folder: Path) -> None:
    (folder / "README.md").write_text("instructions")
    (folder / ".DS_Store").write_bytes(b"\0")
    (folder / "notes.txt").write_text("to do")


def make_class(layout: str, root: Path) -> Path:
    """The same four submissions in one of the layouts an LMS downloads (zips for Canvas and Moodle)."""
    folder = root / layout
    folder.mkdir(parents=True)
    for student, (sample, canvas_name, user, full_name, participant) in CLASS.items():
        data = (SAMPLES / sample).read_bytes()
        suffix = Path(sample).suffix
        if layout == "flat":
            (folder / f"{student}{suffix}").write_bytes(data)
        elif layout == "per-student":
            (folder / student).mkdir()
            (folder / student / f"submission{suffix}").write_bytes(data)
            (folder / student / ".ipynb_checkpoints").mkdir()
            (folder / student / ".ipynb_checkpoints" / f"submission-checkpoint{suffix}").write_bytes(data)
        elif layout == "nbgrader":
            target = folder / "submitted" / student / "ps1"
            target.mkdir(parents=True)
            (target / f"ps1{suffix}").write_bytes(data)
            (target / "timestamp.txt").write_text("2026-12-01 10:00:00")
        elif layout == "canvas":
            late = "_LATE" if student == "ben" else ""
            (folder / f"{canvas_name}{late}_{user}_{int(user) + 7000}_inference-scaling{suffix}").write_bytes(data)
        elif layout == "moodle":
            target = folder / f"{full_name}_{participant}_assignsubmission_file_"
            target.mkdir()
            (target / f"inference-scaling{suffix}").write_bytes(data)
    _noise(folder)
    if layout in ("canvas", "moodle"):
        archive = root / f"{layout}.zip"
        with zipfile.ZipFile(archive, "w") as zipped:
            for path in sorted(folder.rglob("*")):
                if path.is_file():
                    zipped.write(path, path.relative_to(folder))
        shutil.rmtree(folder)
        return archive
    return folder


LAYOUT_IDS = {"flat": {s: s for s in CLASS}, "per-student": {s: s for s in CLASS}, "nbgrader": {s: s for s in CLASS},
              "canvas": {s: v[2] for s, v in CLASS.items()}, "moodle": {s: v[4] for s, v in CLASS.items()}}


@pytest.mark.parametrize("layout", sorted(LAYOUT_IDS))
def test_each_layout_is_detected_with_its_students_and_its_noise_ignored(layout, tmp_path):
    found = layouts.read(make_class(layout, tmp_path), tmp_path / "unpacked")
    assert found.layout == layout
    assert {e.student for e in found.entries} == set(LAYOUT_IDS[layout].values())
    assert all(len(e.paths) == 1 for e in found.entries), found.entries  # checkpoints and timestamps are not files of theirs
    assert {"README.md", ".DS_Store", "notes.txt"} <= set(found.ignored)
    late = {e.student for e in found.entries if e.late}
    assert late == ({"1002"} if layout == "canvas" else set())
    if layout == "moodle":
        assert {e.name for e in found.entries} == {v[3] for v in CLASS.values()}


def test_a_stray_folder_in_a_flat_class_is_named_not_skipped(tmp_path):
    folder = make_class("flat", tmp_path)
    (folder / "sub").mkdir()
    (folder / "sub" / "zed.ipynb").write_bytes((SAMPLES / "ada.ipynb").read_bytes())
    found = layouts.detect(folder)
    assert found.layout == "flat" and "zed" not in {e.student for e in found.entries}
    assert any(item.startswith("sub/") and "not read" in item for item in found.unread)


def test_two_files_for_one_student_stay_together_and_other_files_are_theirs(tmp_path):
    folder = make_class("per-student", tmp_path)
    (folder / "ada" / "answers.pdf").write_bytes(b"%PDF")
    found = layouts.detect(folder)
    ada = next(e for e in found.entries if e.student == "ada")
    assert sorted(p.name for p in ada.paths) == ["answers.pdf", "submission.ipynb"]


# ---- the same class graded from every layout ----

@pytest.fixture(scope="module")
def batches(tmp_path_factory):
    """Each layout graded once (inference-scaling: quick kernels), with a roster for the Canvas one."""
    root = tmp_path_factory.mktemp("layouts")
    roster = root / "canvas-roster.csv"
    rows = [CANVAS_COLUMNS + ["Inference scaling (77)"], ["    Points Possible", "", "", "", "", "6"]]
    rows += [[v[3].split()[1] + ", " + v[3].split()[0], v[2], f"S{v[2]}", s, "Sec 1"] for s, v in CLASS.items()]
    rows += [["Gone, Eve", "1005", "S1005", "eve", "Sec 2"], ["Student, Test", "9999", "", "", ""]]
    with roster.open("w", newline="") as handle:
        csv.writer(handle).writerows(rows)
    options = grading.Options(limits=FAST)
    done = {}
    for layout in LAYOUT_IDS:
        source = make_class(layout, root / "in")
        out = root / "out" / layout
        summary = batch.run(batch.Request(source, LESSON, out, jobs=3, options=options, progress=False,
                            roster=roster if layout == "canvas" else None, given=Given(seed=SEED)))
        done[layout] = (summary, out)
    return done, roster


def _verdicts(out: Path) -> dict[str, tuple]:
    found = {}
    for path in (out / "results").glob("*.json"):
        data = json.loads(path.read_text())
        found[data["student"]] = (data["status"], data.get("score"), tuple(sorted(statuses(data).items())))
    return found


def _csv(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as handle:
        return list(csv.DictReader(handle))


@pytest.mark.kernel
def test_every_layout_grades_the_class_to_the_same_verdicts(batches):
    done, _ = batches
    flat = _verdicts(done["flat"][1])
    assert set(flat) == set(CLASS) and flat["ada"][0] == "graded" and flat["ada"][1] == 3.0
    assert len({v[1] for v in flat.values()}) > 1  # the class is not all alike: a difference would show
    for layout, ids in LAYOUT_IDS.items():
        summary, out = done[layout]
        assert summary.layout == layout
        got = _verdicts(out)
        assert {student: got[ids[student]] for student in CLASS} == flat, layout
        assert any("README.md" in item for item in summary.ignored)
        rows = _csv(out / "grades.csv")
        assert "README" not in {r["student"] for r in rows}


@pytest.mark.kernel
def test_a_roster_names_the_missing_and_the_late(batches):
    done, _ = batches
    summary, out = done["canvas"]
    assert summary.named["missing"] == ["1005"] and summary.named["outside"] == []
    rows = {r["student"]: r for r in _csv(out / "grades.csv")}
    assert rows["1005"]["status"] == "missing" and rows["1005"]["name"] == "Gone, Eve"
    assert rows["1005"]["lesson"] == LESSON  # a missing row still says which lesson it is missing from
    assert rows["1002"]["late"] == "late" and rows["1001"]["late"] == ""
    assert "9999" not in rows  # Canvas's test student is not in the class
    dashboard = (out / "index.html").read_text()
    assert "No submission" in dashboard and "1005" in dashboard
    assert "Lovelace, Ada (1001)" in dashboard  # the roster's names, not only Canvas's user ids


@pytest.mark.kernel
def test_canvas_export_is_an_importable_gradebook_with_comment_files(batches, tmp_path):
    done, roster = batches
    with pytest.raises(GraderError, match="--assignment-id 'x7' is not a number"):
        platforms.export("canvas", done["canvas"][1], tmp_path / "x", roster=roster, assignment_id="x7")
    with pytest.raises(GraderError, match="Canvas gradebook export"):
        plain = tmp_path / "plain.csv"
        plain.write_text("student\nada\n")
        platforms.export("canvas", done["canvas"][1], tmp_path / "x", roster=plain, assignment_id="77")
    target = platforms.export("canvas", done["canvas"][1], tmp_path / "canvas", roster=roster)  # its only assignment
    with (target / "gradebook.csv").open(newline="") as handle:
        rows = list(csv.reader(handle))
    assert rows[0][:5] == CANVAS_COLUMNS and rows[0][5] == "Inference scaling (77)"
    # the assignment's points: three exercises and the written questions' three (lessons/inference-scaling/lesson.toml)
    assert rows[1][0].strip() == "Points Possible" and rows[1][5] == "6"
    scores = {row[1]: row[5] for row in rows[2:]}
    flat = _verdicts(done["flat"][1])
    assert scores == {CLASS[s][2]: f"{flat[s][1]:g}" for s in CLASS} | {"1005": ""}
    with zipfile.ZipFile(target / "comments.zip") as bundle:
        comments = sorted(bundle.namelist())
    assert "bitdiddleben_LATE_1002_8002_feedback.txt" in comments and len(comments) == 4


@pytest.mark.kernel
def test_prairielearn_export_follows_its_schema(batches, tmp_path):
    done, _ = batches
    target = platforms.export("prairielearn", done["flat"][1], tmp_path / "pl")
    schema = json.loads((SCHEMAS / "prairielearn-results.json").read_text())
    flat = _verdicts(done["flat"][1])
    for student in CLASS:
        data = json.loads((target / student / "results.json").read_text())
        jsonschema.validate(data, schema)
        assert all(t["points"] <= t["max_points"] for t in data["tests"])
        assert data["score"] == pytest.approx(flat[student][1] / 6)  # of 3 exercise and 3 written points


def test_an_export_is_one_entry_and_refuses_what_it_does_not_read(tmp_path):
    """Each platform is one Export (name, options, write, describe); a format or an option it does not know is
    one line, before anything is written."""
    from click.testing import CliRunner

    from grader import cli
    from grader.base.errors import GraderError

    assert sorted(platforms.EXPORTS) == ["canvas", "gradescope", "prairielearn"]
    with pytest.raises(GraderError, match=r"the prairielearn export reads no --assignment-id \(it reads: only --to"):
        platforms.export("prairielearn", tmp_path, tmp_path / "pl", assignment_id="77")
    done = CliRunner().invoke(cli.main, ["export", "moodle", str(tmp_path)])
    assert done.exit_code == 2 and "unknown export format 'moodle' (known: canvas, prairielearn, gradescope)" in done.output
    assert not (tmp_path / "pl").exists() and not (tmp_path / "export").exists()


def test_a_rejected_result_is_not_gradable_on_prairielearn_and_scores_zero_on_gradescope():
    data = grading.rejected(Path("x.pdf"), "not a notebook", LESSON, "x")
    pl = platform_results.prairielearn_results(data)
    jsonschema.validate(pl, json.loads((SCHEMAS / "prairielearn-results.json").read_text()))
    assert pl["gradable"] is False
    gs = platform_results.gradescope_results(data)
    jsonschema.validate(gs, json.loads((SCHEMAS / "gradescope-results.json").read_text()))
    assert gs["score"] == 0 and "not a notebook" in gs["output"]


# ---- the Gradescope bundle, run as its container would ----

@pytest.fixture(scope="module")
def bundle(tmp_path_factory):
    return gradescope.bundle(LESSON, tmp_path_factory.mktemp("gs")) / "autograder.zip"


def test_the_bundle_holds_what_setup_and_run_need(bundle):
    with zipfile.ZipFile(bundle) as archive:
        names = set(archive.namelist())
        setup = archive.read("setup.sh").decode()
        modes = {i.filename: (i.external_attr >> 16) & 0o777 for i in archive.infolist()}
    assert {"setup.sh", "run_autograder", "grader-src/pyproject.toml", "grader-src/grader/cli.py",
            f"course/lessons/{LESSON}/lesson.toml", f"course/solutions/{LESSON}/hidden.py",
            "course/templates/report.html.j2"} <= names
    assert modes["run_autograder"] == 0o755 and modes["setup.sh"] == 0o755
    done = subprocess.run(["bash", "-n", "-c", setup], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr  # setup.sh cannot run offline: check that it parses and what it does
    assert "python3.11" in setup and "pip install /autograder/source/grader-src" in setup
    assert "chmod -R go-rwx /autograder/source/course/solutions" in setup
    # the kernel runs as nobody: the interpreter and the grader are readable by others, the solutions are not
    assert "chmod -R a+rX /autograder/venv" in setup and setup.index("a+rX") < setup.index("go-rwx")


def _run_autograder(bundle: Path, root: Path, submission: Path | None) -> dict:
    gradescope.unpack_bundle(bundle, root)
    (root / "submission").mkdir(parents=True)
    if submission is not None:
        shutil.copy(submission, root / "submission" / submission.name)
    env = dict(os.environ, AUTOGRADER_ROOT=str(root), GRADER_PYTHON=sys.executable)
    done = subprocess.run([str(root / "source" / "run_autograder")], env=env, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    data = json.loads((root / "results" / "results.json").read_text())
    jsonschema.validate(data, json.loads((SCHEMAS / "gradescope-results.json").read_text()))
    return data


@pytest.mark.kernel
def test_run_autograder_writes_valid_results_for_a_solution_a_bug_and_a_rejection(bundle, tmp_path):
    solution = _run_autograder(bundle, tmp_path / "a", SAMPLES / "ada.ipynb")
    assert solution["score"] == 3.0 and len(solution["tests"]) == 6
    visible = [t for t in solution["tests"] if t["visibility"] == "visible"]
    hidden = [t for t in solution["tests"] if t["visibility"] == "after_due_date"]
    assert len(visible) == len(hidden) == 3 and all(t["max_score"] == 0 for t in visible)
    assert sum(t["max_score"] for t in hidden) == 3.0

    buggy = _run_autograder(bundle, tmp_path / "b", SAMPLES / "dev.ipynb")
    assert 0 <= buggy["score"] < 3.0 and any(t["status"] == "failed" for t in buggy["tests"])
    # before the due date students see the public checks only: no hidden verdict in anything visible
    assert buggy["visibility"] == "after_due_date" and "hidden case" not in buggy["output"]
    assert all("hidden case" not in t["output"] for t in buggy["tests"] if t["visibility"] == "visible")
    assert any("hidden case" in t["output"] for t in buggy["tests"] if t["visibility"] == "after_due_date")

    junk = tmp_path / "essay.pdf"
    junk.write_bytes(b"%PDF-1.4")
    rejected = _run_autograder(bundle, tmp_path / "c", junk)
    assert rejected["score"] == 0 and rejected["tests"] == [] and "Not graded" in rejected["output"]
