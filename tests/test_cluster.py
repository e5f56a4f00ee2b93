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
from conftest import FAST, full_marks, write

from grader import grading
from grader.classroom import batch, certs
from grader.classroom.cluster_guard import LOCAL_CLUSTER as GUARDED, MODULE as GUARD
from grader.kernel import sandbox
from grader.lesson import catalog, draw, handout
from grader.lesson.draw import Given
from grader.result.record import INTERNAL_ERROR

distributed = pytest.importorskip("distributed")
dask = pytest.importorskip("dask")

pytestmark = [pytest.mark.dask, pytest.mark.filterwarnings("ignore")]
LESSON = "inference-capacity"
STUDENTS = [f"s{i}" for i in range(6)]


def _class(folder):
    """Six reference notebooks, each with a cell that takes a second, so that tasks are in flight when a worker dies."""
    folder.mkdir()
    notebook = handout.solution_notebook(catalog.get(LESSON))
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


@pytest.fixture(scope="module")
def course_certs(tmp_path_factory):
    """The course CA and its certificates, made once by `grader cluster certs`."""
    folder = tmp_path_factory.mktemp("certs") / "tls"
    certs.make(folder)
    return folder


def _batch_with_a_kill(folder, out, options, tls):
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                  host="127.0.0.1", protocol="tls://", security=certs.security(tls, "scheduler"),
                                  **GUARDED) as cluster, distributed.Client(cluster, security=certs.security(tls)) as client:
        killed: list[int] = []
        killer = threading.Thread(target=_kill_a_busy_worker, args=(client, killed), daemon=True)
        killer.start()
        summary = batch.run(batch.Request(folder, LESSON, out, options=options, scheduler=cluster.scheduler_address, progress=False,
                            tls=tls, given=Given(seed=5)))
        killer.join(timeout=60)
    assert killed, "no worker was busy to kill"
    return summary


def _recorded(out):
    with sqlite3.connect(out / "gradebook.sqlite") as db:
        rows = db.execute("SELECT student, status, result_json FROM grades").fetchall()
    return {student: (status, json.loads(text)) for student, status, text in rows}, len(rows)


def test_a_worker_killed_mid_batch_loses_no_result_and_kernels_are_forked_warm(tmp_path, course_certs):
    folder = _class(tmp_path / "in")
    summary = _batch_with_a_kill(folder, tmp_path / "out", grading.Options(limits=FAST, zygote=True),
                                 course_certs)
    rows, count = _recorded(tmp_path / "out")
    assert count == len(STUDENTS) and sorted(rows) == STUDENTS  # each recorded exactly once
    assert all(status == "graded" and full_marks(data) for status, data in rows.values())
    assert summary.counts["graded"] == len(STUDENTS)
    assert sorted(p.stem for p in (tmp_path / "out" / "results").glob("*.json")) == STUDENTS
    if sandbox.plan(FAST).mode == "bwrap":  # where bubblewrap works, every worker forks its kernels warm
        assert {data["sandbox"]["mode"] for _, data in rows.values()} == {"bwrap+zygote"}


def test_a_task_the_cluster_gives_up_on_is_a_row_to_retry_never_a_stopped_batch(tmp_path, course_certs):
    folder = _class(tmp_path / "in")
    options = grading.Options(limits=FAST, zygote=True)
    with dask.config.set({"distributed.scheduler.allowed-failures": 0}):  # the first lost worker fails its task
        summary = _batch_with_a_kill(folder, tmp_path / "out", options, course_certs)
    rows, count = _recorded(tmp_path / "out")
    lost = [s for s, (_, data) in rows.items() if (data.get("error") or "").startswith(INTERNAL_ERROR)]
    assert count == len(STUDENTS) and lost and summary.counts["failures"] == len(lost)
    assert all("the cluster lost this submission's task (KilledWorker" in rows[s][1]["error"] for s in lost)
    assert all(rows[s][0] == "graded" for s in STUDENTS if s not in lost)
    # the next run grades what was lost, locally this time, and replaces those rows
    again = batch.run(batch.Request(folder, LESSON, tmp_path / "out", jobs=2, options=options, progress=False,
                                    given=Given(seed=5)))
    rows, count = _recorded(tmp_path / "out")
    assert again.skipped == len(STUDENTS) - len(lost) and count == len(STUDENTS)
    assert all(status == "graded" for status, _ in rows.values())


def test_a_task_on_a_worker_without_a_template_still_grades(tmp_path):
    from grader.classroom import workers as cluster
    from grader.kernel import zygote

    notebook = tmp_path / "ada.ipynb"
    write(handout.solution_notebook(catalog.get(LESSON)), notebook)
    try:
        chosen = draw.decide(catalog.get(LESSON), "ada", Given(5, hash_seed=7), secret=None, per_student=False)
        graded = cluster.grade_bytes("ada.ipynb", notebook.read_bytes(), LESSON,
                                     grading.Options(limits=FAST, zygote=True), "ada", chosen)
    finally:
        zygote.stop_shared()
    assert graded.result.status == "graded" and graded.result.score == sum(e.max_score for e in graded.result.exercises)
    assert graded.report_html and graded.result.hash_seed == 7
    if sandbox.plan(FAST).mode == "bwrap":
        assert graded.result.sandbox is not None and graded.result.sandbox.mode == "bwrap+zygote"  # the template started on first use


def _dask(*args, tls, role, log):
    """`dask scheduler` or `dask worker` as a course starts it, in a session of its own (ended by the test)."""
    import subprocess
    import sys
    from pathlib import Path

    files = certs.Files.of(tls, role)
    guard = ["--preload", GUARD] + (["--preload-nanny", GUARD] if role == "worker" else [])
    return subprocess.Popen([str(Path(sys.executable).with_name("dask")), *args, "--no-dashboard", "--tls-ca-file",
                             str(files.ca), "--tls-cert", str(files.cert), "--tls-key", str(files.key), *guard],
                            start_new_session=True, stdin=subprocess.DEVNULL, stdout=log, stderr=log)


def _scheduler(tmp_path, tls, log, processes):
    """A TLS scheduler on loopback (appended to `processes`, for `_end`); its address once it has written it."""
    address_file = tmp_path / "scheduler.json"
    processes.append(_dask("scheduler", "--protocol", "tls", "--host", "127.0.0.1", "--port", "0", "--scheduler-file",
                           str(address_file), tls=tls, role="scheduler", log=log))
    deadline = time.monotonic() + 60
    while not address_file.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    return json.loads(address_file.read_text())["address"]


def _end(processes):
    import subprocess

    for process in processes:
        try:
            os.killpg(process.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    for process in processes:
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=20)


def test_a_tls_cluster_of_the_course_grades_a_class_and_refuses_strangers(tmp_path, course_certs):
    from pathlib import Path

    from click.testing import CliRunner

    from grader import cli

    samples = Path(__file__).parent.parent / "samples" / "inference-scaling"
    stranger = tmp_path / "stranger"
    certs.make(stranger)  # a CA of its own: certificates the course never signed
    log = open(tmp_path / "dask.log", "w")  # noqa: SIM115 -- the cluster's processes write to it until the end
    processes: list = []
    try:
        address = _scheduler(tmp_path, course_certs, log, processes)
        assert address.startswith("tls://127.0.0.1:")
        processes.append(_dask("worker", address, "--nworkers", "2", "--nthreads", "1", tls=course_certs,
                               role="worker", log=log))
        processes.append(_dask("worker", address, "--nworkers", "1", "--nthreads", "1", tls=stranger,
                               role="worker", log=log))
        with distributed.Client(address, security=certs.security(course_certs), timeout=30) as client:
            client.wait_for_workers(2, timeout=60)
            time.sleep(2)  # time enough for the stranger's worker to try
            assert len(client.scheduler_info()["workers"]) == 2  # the stranger never joined
        out = tmp_path / "out"
        done = CliRunner().invoke(cli.main, ["batch", str(samples), "--lesson", "inference-scaling", "--out", str(out),
                                             "--scheduler", address, "--tls", str(course_certs)])
        assert done.exit_code == 0, done.output
        results = {p.stem: json.loads(p.read_text()) for p in (out / "results").glob("*.json")}
        assert results["ada"]["score"] == 3.0 and results["fay"]["status"] == "rejected"
        assert sum(r["status"] == "graded" for r in results.values()) == 5
        for tls, said in ((stranger, "with the course's certificates"), (None, "needs --tls DIR")):
            refused = CliRunner().invoke(cli.main, ["batch", str(samples), "--lesson", "inference-scaling", "--out",
                                                    str(tmp_path / "refused"), "--scheduler", address,
                                                    *(["--tls", str(tls)] if tls else [])])
            assert refused.exit_code == 2 and said in refused.stderr
        with pytest.raises(Exception):  # noqa: B017 -- a client with no certificate at all (Dask raises OSError or its own)
            distributed.Client(address, timeout=5)
        plain = CliRunner().invoke(cli.main, ["batch", str(samples), "--lesson", "inference-scaling", "--out",
                                              str(tmp_path / "plain"), "--scheduler", address.replace("tls", "tcp"),
                                              "--tls", str(course_certs)])
        assert plain.exit_code == 2 and "only the course may use it" in plain.stderr
        assert not (tmp_path / "plain").exists()
    finally:
        _end(processes)
        log.close()


@pytest.mark.kernel
def test_the_submission_service_grades_on_the_course_cluster(tmp_path, course_certs, monkeypatch):
    """`grader serve --scheduler tls://... --tls DIR`: the queue is the server's, the grades run on the cluster."""
    import hashlib
    import subprocess
    import sys

    import httpx
    from test_service_live import _copy_for, _gradebook_rows, _wait_done

    from grader.service import tokens

    home = tmp_path / "course"
    home.mkdir()
    (home / "course.toml").write_text('name = "clustered"\ntimezone = "UTC"\n')
    monkeypatch.setenv("GRADER_COURSE", str(home))
    made = {p.who: t for p, t in tokens.issue([("s0", "S0"), ("s1", "S1")], "student")}
    log = open(tmp_path / "dask.log", "w")  # noqa: SIM115 -- the cluster's processes write to it until the end
    processes: list = []
    try:
        address = _scheduler(tmp_path, course_certs, log, processes)
        processes.append(_dask("worker", address, "--nworkers", "1", "--nthreads", "1", tls=course_certs,
                               role="worker", log=log))
        with distributed.Client(address, security=certs.security(course_certs), timeout=30) as client:
            client.wait_for_workers(1, timeout=60)
        port_probe = __import__("socket").socket()
        port_probe.bind(("127.0.0.1", 0))
        port = port_probe.getsockname()[1]
        port_probe.close()
        processes.append(subprocess.Popen(
            [sys.executable, "-m", "grader", "serve", "--out", str(tmp_path / "served"), "--port", str(port),
             "--scheduler", address, "--tls", str(course_certs)], start_new_session=True, stdout=log, stderr=log))
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                if httpx.get(url + "/", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.2)
        files = {s: _copy_for(s, tmp_path) for s in made}
        ids = set()
        for student, path in files.items():
            got = httpx.post(f"{url}/api/submissions", params={"lesson": LESSON}, content=path.read_bytes(),
                             headers={"Authorization": f"Bearer {made[student]}"}, timeout=30)
            assert got.status_code == 202, got.text
            ids.add(got.json()["id"])
        rows = _wait_done(str(home / "private" / "queue.sqlite"), ids, 180)
    finally:
        _end(processes)
        log.close()
    assert {r["state"] for r in rows} == {"done"} and {r["status"] for r in rows} == {"graded"}
    assert sorted(_gradebook_rows(tmp_path / "served")) == sorted(
        (s, hashlib.sha256(p.read_bytes()).hexdigest()) for s, p in files.items())
