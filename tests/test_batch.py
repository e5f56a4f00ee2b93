"""batch: a class of mixed submissions, resume after SIGKILL, and a Dask cluster."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import FAST, patched_solution, submission, write

from grader import cli, grading
from grader.classroom import batch, certs
from grader.classroom.cluster_guard import LOCAL_CLUSTER as GUARDED
from grader.kernel import sandbox
from grader.lesson import catalog, handout
from grader.lesson.draw import Given

pytestmark = pytest.mark.kernel
LESSON = "inference-capacity"
SUBS = Path(__file__).parent / "submissions" / LESSON
LIMIT_FLAGS = ["--cell-timeout-for", "answer-batch-collection=3", "--notebook-timeout", "90"]


SANDBOXED = sandbox.plan(FAST).mode == "bwrap"
# Tries to wreck everything the batch has recorded and every submission beside it.
VANDAL = """import os, shutil
for top in {targets!r}:
    for root, dirs, files in os.walk(top):
        for name in files:
            try:
                open(os.path.join(root, name), "w").write("owned")
            except OSError:
                pass
    shutil.rmtree(top, ignore_errors=True)
"""


def _class(folder: Path, out: Path | None = None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    if out is not None:
        (folder / "hal.py").write_text(VANDAL.format(targets=[str(out), str(folder)]))
    write(handout.solution_notebook(catalog.get(LESSON)), folder / "ada.ipynb")
    write(patched_solution(LESSON, submission(LESSON, "deadline-counts-equal-as-missed")), folder / "ben.ipynb")
    write(handout.scaffold(catalog.get(LESSON)), folder / "cleo.ipynb")
    write(patched_solution(LESSON, SUBS / "infinite-loop-in-collection-cell.py"), folder / "dev.ipynb")
    (folder / "eli.ipynb").write_text('{"cells": [')
    (folder / "fay.docx").write_text("my answers are in the email")  # a student's file, not a notebook: rejected
    (folder / "notes.txt").write_text("not a submission: listed as ignored, never a student")
    (folder / "gus.py").write_text("import os\nos._exit(1)\n")
    return folder


def _rows(db: Path) -> list[tuple[str, str]]:
    try:
        with sqlite3.connect(str(db), timeout=10) as con:
            return con.execute("SELECT student, status FROM grades ORDER BY student").fetchall()
    except sqlite3.OperationalError:  # polled while the batch is still creating its gradebook
        return []


def test_a_mixed_class_is_recorded_completely(tmp_path):
    out = tmp_path / "out"
    folder = _class(tmp_path / "in", out if SANDBOXED else None)  # the vandal only where a sandbox stops it
    originals = {p.name: p.read_bytes() for p in folder.iterdir()}
    result = CliRunner().invoke(cli.main, ["batch", str(folder), "--lesson", LESSON, "--out", str(out), "--jobs", "2",
                                           *LIMIT_FLAGS])
    assert result.exit_code == 0, result.output
    students = ["ada", "ben", "cleo", "dev", "eli", "fay", "gus"] + (["hal"] if SANDBOXED else [])
    assert [r[0] for r in _rows(out / "gradebook.sqlite")] == students
    assert sorted(p.stem for p in (out / "results").glob("*.json")) == students
    assert sorted(p.stem for p in (out / "reports").glob("*.html")) == students
    results = {s: json.loads((out / "results" / f"{s}.json").read_text()) for s in students}
    modes = {oct(p.stat().st_mode & 0o777) for p in out.rglob("*") if p.is_file() and p.suffix != ".sqlite-wal"}
    assert modes <= {"0o644"}, modes  # readable when copied to a web server (umask 022 in CI)
    assert len({r.get("hash_seed") for r in results.values() if r["status"] == "graded"}) == 1  # one per batch
    assert "rejected: eli.ipynb: not valid notebook JSON" in result.stderr  # the progress line says why
    dashboard = (out / "index.html").read_text()
    assert "Where the measured numbers ran" in dashboard and results["ada"]["environment"]["cpu_model"] in dashboard
    assert "Similar work, flagged for review" in dashboard and (out / "similarity.html").is_file()
    assert "Mistakes, grouped" in dashboard
    assert results["ada"]["score"] == 9.0
    assert results["ben"]["score"] == 8.0
    assert results["eli"]["status"] == "rejected" and results["fay"]["status"] == "rejected"
    assert next(e for e in results["dev"]["exercises"] if e["id"] == "batch-collection")["status"] == "timeout"
    assert results["gus"]["status"] == "graded" and results["gus"]["score"] == 0.0
    lines = (out / "grades.csv").read_text().splitlines()
    assert len(lines) == 1 + len(students) and lines[0].startswith("student,lesson,status,score,max_score,measure,")
    assert (out / "index.html").is_file()
    n = len(students)
    assert f"{n} submissions: {n - 2} graded, 2 rejected, 0 already recorded" in result.output
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == originals

    again = CliRunner().invoke(cli.main, ["batch", str(folder), "--lesson", LESSON, "--out", str(out), *LIMIT_FLAGS])
    assert f"0 graded, 0 rejected, {n} already recorded" in again.output


@pytest.mark.parametrize("signum, jobs", [(signal.SIGKILL, "2"), (signal.SIGINT, "2"), (signal.SIGINT, "1")],
                         ids=["SIGKILL", "Ctrl-C", "Ctrl-C with one job"])
def test_a_killed_batch_resumes_without_losing_or_repeating_anything(tmp_path, signum, jobs):
    # With one job, Ctrl-C once reached only the grade in progress (filed as a grader failure) and the batch went on.
    folder = tmp_path / "in"
    folder.mkdir()
    solution = handout.solution_notebook(catalog.get(LESSON))
    for i in range(8):
        solution.cells[0].source = f"# student {i}\n" + solution.cells[0].source  # a distinct digest each
        write(solution, folder / f"s{i}.ipynb")
    out = tmp_path / "out"
    command = [sys.executable, "-m", "grader", "batch", str(folder), "--lesson", LESSON, "--out", str(out),
               "--jobs", jobs, *LIMIT_FLAGS]
    # As a terminal's foreground job: Ctrl-C goes to the process group, and SIGINT has its default action
    # (a test runner started in the background may have inherited it ignored).
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            start_new_session=True, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    db = out / "gradebook.sqlite"
    deadline = time.monotonic() + 240
    try:
        while time.monotonic() < deadline:
            if db.exists() and len(_rows(db)) >= 2:
                break
            time.sleep(0.2)
        os.killpg(proc.pid, signum)  # the whole group, as a terminal's Ctrl-C does
    finally:
        _, stderr = proc.communicate(timeout=60)
    if signum == signal.SIGINT:  # stopped cleanly, saying how to resume
        assert proc.returncode == 130, stderr[-3000:]
        assert "interrupted" in stderr and "Traceback" not in stderr, stderr
    finished = {student for student, _ in _rows(db)}
    assert 2 <= len(finished) < 8, "the kill should land part-way"
    before = {s: (out / "results" / f"{s}.json").read_bytes() for s in finished}

    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=600)
    rows = _rows(db)
    assert [student for student, _ in rows] == [f"s{i}" for i in range(8)]  # exactly one row each
    assert sorted(p.stem for p in (out / "results").glob("*.json")) == [f"s{i}" for i in range(8)]
    assert not list((out / "results").glob(".*.tmp"))
    for student, data in before.items():
        assert (out / "results" / f"{student}.json").read_bytes() == data


@pytest.mark.dask
@pytest.mark.filterwarnings("ignore")
def test_a_dask_cluster_gives_the_same_results_as_a_local_run(tmp_path):
    distributed = pytest.importorskip("distributed")
    folder = tmp_path / "in"
    folder.mkdir()
    write(handout.solution_notebook(catalog.get(LESSON)), folder / "ada.ipynb")
    write(patched_solution(LESSON, submission(LESSON, "queue-vectorised-shortcut")), folder / "ben.ipynb")
    (folder / "eli.ipynb").write_text("not json")
    options = grading.Options(limits=FAST)
    local = batch.run(batch.Request(folder, LESSON, tmp_path / "local", jobs=1, options=options, progress=False,
                                    given=Given(seed=77)))
    tls = tmp_path / "tls"
    certs.make(tls)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                  host="127.0.0.1", protocol="tls://", security=certs.security(tls, "scheduler"),
                                  **GUARDED) as cluster:
        remote = batch.run(batch.Request(folder, LESSON, tmp_path / "dask", options=options, scheduler=cluster.scheduler_address,
                           progress=False, tls=tls, given=Given(seed=77)))
    assert local.counts == remote.counts
    for student in ("ada", "ben", "eli"):
        a = json.loads((tmp_path / "local" / "results" / f"{student}.json").read_text())
        b = json.loads((tmp_path / "dask" / "results" / f"{student}.json").read_text())
        assert (a["status"], a["score"], a.get("error")) == (b["status"], b["score"], b.get("error"))
        assert [e["status"] for e in a["exercises"]] == [e["status"] for e in b["exercises"]]
        assert [c["label"] for e in a["exercises"] for c in e["cases"]] == [
            c["label"] for e in b["exercises"] for c in e["cases"]]


def test_a_result_file_that_is_not_a_result_is_one_line_and_never_a_stop(tmp_path):
    """A batch folder's result that reads as JSON but is no result (cut short, or edited by hand): the re-join that
    reads it says so in one line; the readers that sweep the folder (similarity, the lesson of a batch) skip it."""
    import json

    from grader.base.errors import GraderError
    from grader.classroom.batch_folder import BatchFolder

    folder = BatchFolder(tmp_path)
    folder.results.mkdir()
    folder.result("ada").write_text(json.dumps({"lesson": "l", "student": "ada", "exercises": "not a list"}))
    folder.result("ben").write_text(json.dumps({"schema": 1, "status": "graded", "lesson": "l", "student": "ben"}))
    with pytest.raises(GraderError, match=r"ada.json: not a result this grader wrote \(TypeError\); rerun the batch"):
        folder.recorded("ada", "l")
    assert [student for student, _ in folder.read_all()] == ["ben"]
