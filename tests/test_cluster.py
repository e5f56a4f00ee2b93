"""cluster: a batch through Dask forks warm kernels on each worker, and a worker lost mid-batch loses no result.

Each test starts a local cluster of two single-threaded worker processes (loopback only) and ends it; a
killed worker takes its template and kernels with it (bubblewrap's --die-with-parent).
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import threading
import time

import nbformat
import pytest

from conftest import FAST, write
from grader import batch, grading, handout, lessons, sandbox
from grader.record import INTERNAL_ERROR

distributed = pytest.importorskip("distributed")
dask = pytest.importorskip("dask")

pytestmark = [pytest.mark.dask, pytest.mark.filterwarnings("ignore")]
LESSON = "inference-capacity"
STUDENTS = [f"s{i}" for i in range(6)]


def _class(folder):
    """Six reference notebooks, each with a cell that takes a second, so that tasks are in flight when a worker dies."""
    folder.mkdir()
    notebook = handout.solution_notebook(lessons.get(LESSON))
    notebook.cells.append(nbformat.v4.new_code_cell("import time\ntime.sleep(1.5)"))
    for student in STUDENTS:
        write(notebook, folder / f"{student}.ipynb")
    return folder


def _kill_a_busy_worker(client, killed):
    """Wait until a worker is running a task, then SIGKILL that worker process (its nanny starts another)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        busy = [worker for worker, keys in client.processing().items() if keys]
        if busy:
            time.sleep(1.0)  # inside the student's sleeping cell
            pid = client.run(os.getpid, workers=busy[:1])[busy[0]]
            os.kill(pid, signal.SIGKILL)
            killed.append(pid)
            return
        time.sleep(0.05)


def _batch_with_a_kill(folder, out, options):
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                  host="127.0.0.1") as cluster, distributed.Client(cluster) as client:
        killed: list[int] = []
        killer = threading.Thread(target=_kill_a_busy_worker, args=(client, killed), daemon=True)
        killer.start()
        summary = batch.run(folder, LESSON, out, options=options, scheduler=cluster.scheduler_address, progress=False)
        killer.join(timeout=60)
    assert killed, "no worker was busy to kill"
    return summary


def _recorded(out):
    with sqlite3.connect(out / "gradebook.sqlite") as db:
        rows = db.execute("SELECT student, status, result_json FROM grades").fetchall()
    return {student: (status, json.loads(text)) for student, status, text in rows}, len(rows)


def test_a_worker_killed_mid_batch_loses_no_result_and_kernels_are_forked_warm(tmp_path):
    folder = _class(tmp_path / "in")
    summary = _batch_with_a_kill(folder, tmp_path / "out", grading.Options(limits=FAST, seed=5, zygote=True))
    rows, count = _recorded(tmp_path / "out")
    assert count == len(STUDENTS) and sorted(rows) == STUDENTS  # each recorded exactly once
    assert all(status == "graded" and data["score"] == data["max_score"] for status, data in rows.values())
    assert summary.counts["graded"] == len(STUDENTS)
    assert sorted(p.stem for p in (tmp_path / "out" / "results").glob("*.json")) == STUDENTS
    if sandbox.plan(FAST).mode == "bwrap":  # where bubblewrap works, every worker forks its kernels warm
        assert {data["sandbox"]["mode"] for _, data in rows.values()} == {"bwrap+zygote"}


def test_a_task_the_cluster_gives_up_on_is_a_row_to_retry_never_a_stopped_batch(tmp_path):
    folder = _class(tmp_path / "in")
    options = grading.Options(limits=FAST, seed=5, zygote=True)
    with dask.config.set({"distributed.scheduler.allowed-failures": 0}):  # the first lost worker fails its task
        summary = _batch_with_a_kill(folder, tmp_path / "out", options)
    rows, count = _recorded(tmp_path / "out")
    lost = [s for s, (_, data) in rows.items() if (data.get("error") or "").startswith(INTERNAL_ERROR)]
    assert count == len(STUDENTS) and lost and summary.counts["failures"] == len(lost)
    assert all("the cluster lost this submission's task (KilledWorker" in rows[s][1]["error"] for s in lost)
    assert all(rows[s][0] == "graded" for s in STUDENTS if s not in lost)
    # the next run grades what was lost, locally this time, and replaces those rows
    again = batch.run(folder, LESSON, tmp_path / "out", jobs=2, options=options, progress=False)
    rows, count = _recorded(tmp_path / "out")
    assert again.skipped == len(STUDENTS) - len(lost) and count == len(STUDENTS)
    assert all(status == "graded" for status, _ in rows.values())


def test_a_task_on_a_worker_without_a_template_still_grades(tmp_path):
    from grader import cluster, zygote

    notebook = tmp_path / "ada.ipynb"
    write(handout.solution_notebook(lessons.get(LESSON)), notebook)
    try:
        graded = cluster.grade_bytes("ada.ipynb", notebook.read_bytes(), LESSON,
                                     grading.Options(limits=FAST, seed=5, zygote=True, hash_seed=7), "ada")
    finally:
        zygote.stop_shared()
    assert graded.result.status == "graded" and graded.result.score == graded.result.max_score
    assert graded.report_html and graded.result.hash_seed == 7
    if sandbox.plan(FAST).mode == "bwrap":
        assert graded.result.sandbox["mode"] == "bwrap+zygote"  # the template started on first use
