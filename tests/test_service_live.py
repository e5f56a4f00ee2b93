"""The submission service for real: `grader serve` as a process on loopback, grading in kernels.

Each test starts its own server (a subprocess, stopped and its processes
reaped at the end), submits copies of a bundled sample made distinct per
student (a markdown cell of their own: another digest, the same grade), and
checks what the queue and the batch folder recorded: every accepted
submission graded into the gradebook exactly once, through a server killed
with SIGKILL, a grading worker killed mid-job, and two servers sharing one
PostgreSQL queue.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from conftest import answering

ROOT = Path(__file__).parent.parent
SAMPLE = ROOT / "samples" / "inference-capacity" / "ada.ipynb"
LESSON = "inference-capacity"
pytestmark = pytest.mark.kernel


def _copy_for(student: str, folder: Path, extra_code: str = "") -> Path:
    """The sample notebook, made this student's own (another digest), optionally with a code cell first."""
    notebook = json.loads(SAMPLE.read_text())
    notebook["cells"].append({"cell_type": "markdown", "metadata": {}, "source": f"Submitted by {student}."})
    if extra_code:
        notebook["cells"].insert(0, {"cell_type": "code", "metadata": {}, "source": extra_code, "outputs": [],
                                     "execution_count": None})
    path = folder / f"{student}.ipynb"
    path.write_text(json.dumps(notebook))
    return path


@pytest.fixture
def course(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """A course of its own with tokens for twelve students and an instructor; its lesson was due two and a half
    days ago, at 10 % a day late."""
    import datetime as dt

    from grader.service import tokens

    home = tmp_path / "course"
    home.mkdir()
    due = (dt.datetime.now(dt.UTC) - dt.timedelta(days=2.5)).replace(microsecond=0)
    (home / "course.toml").write_text(f'name = "served"\ntimezone = "UTC"\n[lessons.{LESSON}]\ndue = {due.isoformat()}\n'
                                      f'[lessons.{LESSON}.late]\npercent_per_day = 10\n')
    monkeypatch.setenv("GRADER_COURSE", str(home))
    students = [f"s{i:02d}" for i in range(12)]
    made = {p.who: t for p, t in tokens.issue([(s, s.upper()) for s in students], "student")}
    made["prof"] = tokens.issue([("prof", "Prof")], "instructor")[0][1]
    return {"home": home, "tokens": made, "students": students, "out": tmp_path / "served", "tmp": tmp_path,
            "due": due}


def _started(course: dict[str, Any], *args: str, out: Path | None = None) -> tuple[str, subprocess.Popen[str]]:
    """`grader serve` started on a free loopback port (not yet answering): its address and its process."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = dict(os.environ, GRADER_COURSE=str(course["home"]))
    proc = subprocess.Popen([sys.executable, "-m", "grader", "serve", "--out", str(out or course["out"]), "--port",
                             str(port), "--jobs", "2", "--lease", "3", *args], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True,
                            preexec_fn=lambda: os.umask(0o022))  # a usual umask: the server keeps its folder private
    return f"http://127.0.0.1:{port}", proc


def _answering(url: str, proc: subprocess.Popen[str]) -> None:
    answering(url + "/", proc, 90, lambda: proc.stdout.read() if proc.stdout else "")


@contextlib.contextmanager
def serving(course: dict[str, Any], *args: str, out: Path | None = None) -> Iterator[tuple[str, subprocess.Popen[str]]]:
    """`grader serve` on a free loopback port until the block ends; yields its address and its process."""
    url, proc = _started(course, *args, out=out)
    try:
        _answering(url, proc)
        yield url, proc
    finally:
        _stop(proc)


def _stop(proc: subprocess.Popen[str]) -> None:
    """The server and every process of its session ended (the grading side dies with it)."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(30)
    if proc.stdout:
        proc.stdout.close()


def _in_session(sid: int) -> list[str]:
    """The command lines of the processes still in a session (a server started with start_new_session)."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        with contextlib.suppress(OSError, IndexError):
            if int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[3]) == sid:
                found.append(Path(f"/proc/{pid}/cmdline").read_text().replace("\0", " ")[:160])
    return found


def _submit(url: str, token: str, path: Path) -> httpx.Response:
    return httpx.post(f"{url}/api/submissions", params={"lesson": LESSON}, content=path.read_bytes(),
                      headers={"Authorization": f"Bearer {token}"}, timeout=30)


def _jobs(database: str) -> list[dict[str, Any]]:
    from grader.service.jobs import Queue

    queue = Queue(database)
    try:
        return [job.__dict__ for job in queue.recent(("saved", "queued", "running", "done", "failed", "dead",
                                                      "superseded"), 1000)]
    finally:
        queue.close()


def _wait_done(database: str, ids: set[str], seconds: float = 240) -> list[dict[str, Any]]:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        rows = [j for j in _jobs(database) if j["id"] in ids]
        if len(rows) == len(ids) and all(j["state"] in ("done", "dead", "superseded") for j in rows):
            return rows
        time.sleep(0.5)
    raise AssertionError(f"not all graded in {seconds} s: {[(j['id'], j['state']) for j in _jobs(database)]}")


def _running_pid(database: str, job_id: str) -> int:
    """The pid of the worker grading the job, once it runs."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        pid = next((j["pid"] for j in _jobs(database) if j["id"] == job_id and j["state"] == "running"), None)
        if pid:
            return int(pid)
        time.sleep(0.1)
    raise AssertionError("the job never ran")


def _gradebook_rows(out: Path) -> list[tuple[str, str]]:
    """(student, digest) of every row of the lesson's gradebook, wherever the folder keeps it."""
    from grader.classroom.batch_folder import BatchFolder

    with BatchFolder(out / LESSON).open_gradebook() as book:
        return [(row["student"], row["digest"]) for row in book.rows(LESSON)]


def test_a_server_killed_mid_burst_loses_nothing_and_grades_nothing_twice(course: dict[str, Any]) -> None:
    database = str(course["home"] / "private" / "queue.sqlite")
    files = {s: _copy_for(s, course["tmp"]) for s in course["students"][:8]}
    accepted: dict[str, dict[str, Any]] = {}
    with serving(course) as (url, proc):
        for student in list(files)[:5]:
            got = _submit(url, course["tokens"][student], files[student])
            assert got.status_code == 202, got.text
            accepted[student] = got.json()
        time.sleep(2.0)  # some are being graded now
        os.kill(proc.pid, signal.SIGKILL)  # the server itself, mid-burst: its grading side dies with it
        proc.wait(10)
        deadline = time.monotonic() + 20  # each dies as its parent does, and takes its moment to exit
        while _in_session(proc.pid) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert _in_session(proc.pid) == []  # every process it started has ended (a kernel's sandbox dies with it)
    with serving(course) as (url, _):
        for student in list(files)[5:7]:
            got = _submit(url, course["tokens"][student], files[student])
            assert got.status_code == 202, got.text
            accepted[student] = got.json()
        # the command line's way, and the notebook's (grader.submit() on a saved notebook)
        said = subprocess.run([sys.executable, "-m", "grader", "submit", str(files["s07"]), "--server", url, "--token",
                               course["tokens"]["s07"], "--lesson", LESSON, "--json"], capture_output=True, text=True,
                              timeout=60)
        assert said.returncode == 0, said.stderr
        accepted["s07"] = json.loads(said.stdout)
        assert accepted["s07"]["sha256"] == hashlib.sha256(files["s07"].read_bytes()).hexdigest()
        from grader import client

        again = client.from_notebook(files["s06"], url, course["tokens"]["s06"], None, wait=False)  # lesson: metadata
        assert again is not None and again["receipt"]["sha256"] == accepted["s06"]["sha256"]
        accepted["s06 again"] = again["receipt"]  # the same bytes twice: still one row in the gradebook
        rows = _wait_done(database, {r["id"] for r in accepted.values()})
        state = httpx.get(f"{url}/api/submissions/{accepted['s00']['id']}",
                          headers={"Authorization": f"Bearer {course['tokens']['s00']}"}, timeout=10).json()
    assert {r["state"] for r in rows} <= {"done", "superseded"}  # s06's first, if still queued when it came again
    book = _gradebook_rows(course["out"])
    expected = sorted((s, hashlib.sha256(files[s].read_bytes()).hexdigest()) for s in files)
    assert sorted(book) == expected  # every accepted submission once, none twice, none lost
    signed = json.loads((course["out"] / LESSON / "results" / "s00.json").read_text())
    assert state["status"] == "done" and (state["score"], state["max_score"]) == (signed["score"], signed["max_score"])
    assert signed["submitted_as"]["receipt"] == {k: accepted["s00"][k] for k in ("id", "sha256", "received_at")}
    # lateness is the receive time against the due date: two and a half days and a moment, so 3 days (a part of a
    # day counts), 30 %
    import datetime as dt
    import math

    late = (dt.datetime.fromisoformat(accepted["s00"]["received_at"]) - course["due"]).total_seconds() / 86400
    assert signed["manual"]["late"]["days"] == math.ceil(late) == 3
    assert signed["manual"]["late"]["percent"] == 30


def test_a_deadline_burst_is_taken_whole_each_admitted_in_turn_and_graded_once(course: dict[str, Any]) -> None:
    """Every student of the class and a second copy from each of three, all sent at the same moment (one connection
    each): no 5xx, a receipt each, and with `max_graded = 1` exactly one copy of each of those three graded and the
    other saved (429), though copies that arrive together are kept in one transaction. Then each graded
    submission is in the gradebook once."""
    with (course["home"] / "course.toml").open("a") as toml:
        toml.write(f"[lessons.{LESSON}.submissions]\nmax_graded = 1\n")
    files = {s: _copy_for(s, course["tmp"]) for s in course["students"]}
    twice = course["students"][:3]
    again = course["tmp"] / "again"
    again.mkdir()
    seconds = {s: _copy_for(s, again, f"# {s}'s second copy") for s in twice}
    sends = [(s, files[s]) for s in course["students"]] + [(s, seconds[s]) for s in twice]
    answers: list[tuple[str, int, dict[str, Any]]] = []
    gate = threading.Barrier(len(sends))

    def send(student: str, path: Path) -> None:
        with httpx.Client(timeout=60) as client:
            gate.wait(30)
            got = client.post(f"{url}/api/submissions", params={"lesson": LESSON}, content=path.read_bytes(),
                              headers={"Authorization": f"Bearer {course['tokens'][student]}"})
        answers.append((student, got.status_code, got.json()))

    with serving(course) as (url, _):
        threads = [threading.Thread(target=send, args=pair) for pair in sends]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(90)
        assert sorted(code for _, code, _ in answers) == [202] * len(course["students"]) + [429] * len(twice)
        taken = {student: said for student, code, said in answers if code == 202}
        assert sorted(taken) == sorted(course["students"])  # one graded copy of each, the second of three saved
        saved = [said for student, code, said in answers if code == 429]
        assert all("all 1 graded submissions" in said["error"] and said["saved"]["id"] for said in saved)
        ids = {said["id"] for said in taken.values()} | {said["saved"]["id"] for said in saved}
        assert len(ids) == len(sends)  # a receipt each, none shared
        rows = _wait_done(str(course["home"] / "private" / "queue.sqlite"), {said["id"] for said in taken.values()})
    assert {row["state"] for row in rows} == {"done"}
    book = sorted(_gradebook_rows(course["out"]))
    assert book == sorted((student, said["sha256"]) for student, said in taken.items())  # each once, the graded copy


def test_a_grading_worker_killed_mid_job_is_graded_again_and_not_counted(course: dict[str, Any]) -> None:
    database = str(course["home"] / "private" / "queue.sqlite")
    slow = _copy_for("s00", course["tmp"], "import time\ntime.sleep(6)")
    with serving(course) as (url, _):
        receipt = _submit(url, course["tokens"]["s00"], slow).json()
        pid = _running_pid(database, receipt["id"])
        os.kill(pid, signal.SIGKILL)
        (row,) = _wait_done(database, {receipt["id"]})
        queue = httpx.get(f"{url}/api/queue", headers={"Authorization": f"Bearer {course['tokens']['prof']}"},
                          timeout=10).json()
    assert row["state"] == "done" and row["tries"] == 2 and row["status"] == "graded"
    assert queue["counts"]["done"] == 1 and queue["grade_s"]["n"] == 1
    assert len(_gradebook_rows(course["out"])) == 1


def _parent(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


def test_a_server_stalled_past_its_lease_writes_nothing_over_the_new_holders_grade(course: dict[str, Any]) -> None:
    """Server A's lesson host stops (SIGSTOP) mid-grade; its lease runs out and server B grades the job; when A
    wakes, its stale grade is dropped: B's result file and report stay as B wrote them."""
    database = str(course["home"] / "private" / "queue.sqlite")
    slow = _copy_for("s00", course["tmp"], "import time\ntime.sleep(4)")
    result = course["out"] / LESSON / "results" / "s00.json"
    report = course["out"] / LESSON / "reports" / "s00.html"
    with serving(course) as (one, first):
        receipt = _submit(one, course["tokens"]["s00"], slow).json()
        pid = _running_pid(database, receipt["id"])
        host = _parent(pid)  # the lesson host that holds the lease (its worker grades)
        os.kill(host, signal.SIGSTOP)
        try:
            with serving(course) as (_, _):
                (row,) = _wait_done(database, {receipt["id"]})
            assert row["state"] == "done", (row["state"], row["error"])
            assert not (row["worker"] or "").startswith(f"{socket.gethostname()}:{first.pid}/")  # B graded it
            seen = {p: (p.stat().st_ino, p.stat().st_mtime_ns, p.read_bytes()) for p in (result, report)}
        finally:
            os.kill(host, signal.SIGCONT)
        said: list[str] = []

        def read() -> None:  # the server's lines, read beside the wait: a server that never says it cannot hang us
            with contextlib.suppress(ValueError, OSError):  # its pipe closed when the server is stopped
                said.extend(iter(first.stdout.readline, "") if first.stdout else ())

        threading.Thread(target=read, daemon=True).start()
        deadline = time.monotonic() + 60
        while not any("this grade is dropped" in line for line in said) and time.monotonic() < deadline:
            time.sleep(0.2)
    assert any(f"submission {receipt['id']} of s00 was graded here after its lease passed" in line for line in said)
    assert {p: (p.stat().st_ino, p.stat().st_mtime_ns, p.read_bytes()) for p in (result, report)} == seen
    assert len(_gradebook_rows(course["out"])) == 1 and row["tries"] == 2


def test_a_slow_lms_delays_no_grade_and_every_grade_reaches_it_once(course: dict[str, Any]) -> None:
    """An LMS that takes 10 s over each score (40 s was seen): the grades go out from the outbox beside the
    grading, so no lease runs out while the LMS thinks (sent from the host's loop, the other job's did: tried
    twice), and each grade reaches the LMS once."""
    import re

    import uvicorn
    from lti_platform import CLIENT_ID, INSTRUCTOR, ISSUER, LEARNER, Platform, member, registration
    from test_lti import _form

    from grader.service.lti import keys as lti_keys

    platform = Platform([member("prof-1", "prof", "Pat Prof", [INSTRUCTOR]),
                         *(member(f"user-{s}", s, s.upper(), [LEARNER]) for s in ("s00", "s01"))])
    platform.slow_scores = 10.0
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    platform.url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    lms = uvicorn.Server(uvicorn.Config(platform.app(), log_level="warning", lifespan="off"))
    thread = threading.Thread(target=lms.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    (course["home"] / "lti.json").write_text(json.dumps(registration(platform.url)))
    with (course["home"] / "course.toml").open("a") as toml:
        toml.write(f"[lessons.{LESSON}.submissions]\nsend_grades = true\n")
    lti_keys.make_key()
    database = str(course["home"] / "private" / "queue.sqlite")
    try:
        with serving(course) as (url, _):
            platform.tool = url
            signed = {}
            for user in ("prof-1", "user-s00", "user-s01"):  # the instructor binds the course; each student launches
                with httpx.Client(timeout=30) as browser:
                    login = browser.get(f"{url}/lti/login", params={"iss": ISSUER, "login_hint": user,
                                                                     "client_id": CLIENT_ID})
                    action, fields = _form(browser.get(login.headers["location"]).text)
                    page = browser.post(action, data=fields).text
                signed[user] = re.search(r'"grader-(?:token|instructor)", "([^"]+)"', page)[1]
            ids = {_submit(url, signed[f"user-{s}"], _copy_for(s, course["tmp"])).json()["id"] for s in ("s00", "s01")}
            rows = _wait_done(database, ids)
            deadline = time.monotonic() + 90
            while len(platform.scores) < 2 and time.monotonic() < deadline:
                time.sleep(0.5)
            time.sleep(1.0)  # a second post of either would be seen by now
    finally:
        lms.should_exit = True
        thread.join(10)
    assert [(r["state"], r["tries"]) for r in rows] == [("done", 1), ("done", 1)]  # no lease ran out
    assert sorted(s["userId"] for s in platform.scores) == ["user-s00", "user-s01"]  # each grade once


# -- two servers, one PostgreSQL queue --------------------------------------------------------------------------
def test_servers_starting_at_the_same_moment_on_an_empty_database_all_start(postgres: str) -> None:
    """PostgreSQL's CREATE TABLE IF NOT EXISTS races with itself (UniqueViolation on pg_type); the tables are made
    under one advisory lock."""
    from grader.service.jobs import Queue

    gate = threading.Barrier(8)
    failures: list[str] = []

    def start(n: int) -> None:
        gate.wait(30)
        try:
            Queue(f"{postgres}?application_name=server{n}").close()
        except Exception as err:  # any failure to start is what this test looks for
            failures.append(f"{type(err).__name__}: {err}")

    threads = [threading.Thread(target=start, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert failures == []


def _session_of(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[3])


def _sqlite_files(folder: Path) -> list[str]:
    """Every file under `folder` that is a SQLite database (by its header, whatever its name)."""
    found = []
    for path in folder.rglob("*"):
        if path.is_file() and not path.is_symlink():
            with path.open("rb") as head:
                if head.read(16) == b"SQLite format 3\x00" or path.name.endswith(("-wal", "-shm", "-journal")):
                    found.append(str(path.relative_to(folder)))
    return found


def test_two_servers_on_one_postgresql_database_and_one_out_share_everything_through_a_kill(
        course: dict[str, Any], postgres: str) -> None:
    """Two servers started at the same moment on an empty PostgreSQL database and one shared --out: a burst of 100
    split between them, one killed with SIGKILL while it grades and started again; every receipt ends done with its
    submission in the gradebook once, each student's result file holds the gradebook's grade, no SQLite file is made
    under --out, and a token issued again is refused by both servers within 5 s."""
    import concurrent.futures as cf

    import psycopg

    from grader.classroom.batch_folder import BatchFolder
    from grader.service import tokens

    with pytest.raises(psycopg.OperationalError, match="password"):  # the cluster asks, and PGPASSFILE answers
        psycopg.connect(postgres, connect_timeout=10, passfile="/nonexistent").close()
    students = [f"b{i:03d}" for i in range(100)]
    issued = {p.who: t for p, t in tokens.issue([(s, s.upper()) for s in students], "student")}
    files = {s: _copy_for(s, course["tmp"]) for s in students}
    one, two = _started(course, "--database", postgres), _started(course, "--database", postgres)
    try:
        for url, proc in (one, two):
            _answering(url, proc)

        def send(i: int, student: str) -> tuple[str, int, dict[str, Any]]:
            got = _submit((one, two)[i % 2][0], issued[student], files[student])
            return student, got.status_code, got.json()

        with cf.ThreadPoolExecutor(32) as pool:
            answers = list(pool.map(send, range(len(students)), students))
        assert [code for _, code, _ in answers] == [202] * len(students), [a for a in answers if a[1] != 202][:3]
        receipts = {student: said for student, _, said in answers}
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:  # the first server grading: killed in the middle of it
            running = [j for j in _jobs(postgres) if j["state"] == "running" and j["pid"]]
            mine = [j for j in running if _pid_in(j["pid"], one[1].pid)]
            if mine:
                break
            time.sleep(0.1)
        else:
            raise AssertionError("the first server never graded")
        _stop(one[1])  # SIGKILL to the server and every process of its session
        one = _started(course, "--database", postgres)
        _answering(*one)
        rows = _wait_done(postgres, {said["id"] for said in receipts.values()}, 400)
        assert {row["state"] for row in rows} == {"done"}
        home = course["home"] / "private"
        assert (home / "tokens.address").read_text().strip() == postgres  # the tokens are the database's now
        before = (home / "tokens.json").read_bytes()
        with psycopg.connect(postgres) as db:
            assert db.execute("SELECT COUNT(*) FROM held WHERE kind='token'").fetchone()[0] == 113  # 100 + 12 + prof
        old = issued["b000"]
        new = tokens.issue([("b000", "B000")], "student")[0][1]  # `grader tokens` for one student, again
        assert (home / "tokens.json").read_bytes() == before  # issued into the database, not the file
        deadline = time.monotonic() + 5.0
        while time.monotonic() < deadline and any(_mine(url, old) != 401 for url, _ in (one, two)):
            time.sleep(0.1)
        assert [_mine(url, old) for url, _ in (one, two)] == [401, 401]
        assert [_mine(url, new) for url, _ in (one, two)] == [200, 200]
    finally:
        for _, proc in (one, two):
            _stop(proc)
    assert len({row["worker"].rsplit("/", 1)[0] for row in rows}) >= 2  # both servers graded from the one queue
    book = _gradebook_rows(course["out"])
    assert sorted(book) == sorted((s, receipts[s]["sha256"]) for s in students)  # each once, none lost
    folder = BatchFolder(course["out"] / LESSON)
    with folder.open_gradebook() as gradebook:
        latest = {data["student"]: data for data in gradebook.rows(LESSON)}
    for student in students:
        written = json.loads(folder.result(student).read_text())
        assert (written["score"], written["digest"]) == (latest[student]["score"], latest[student]["digest"])
    assert _sqlite_files(course["out"]) == []
    assert folder.gradebook_address.read_text().strip() == postgres


def _pid_in(pid: int, session: int) -> bool:
    """Whether a process (a grading worker) belongs to a server's session."""
    try:
        return _session_of(pid) == session
    except (OSError, IndexError, ValueError):
        return False


def _mine(url: str, token: str) -> int:
    return httpx.get(f"{url}/api/submissions", headers={"Authorization": f"Bearer {token}"}, timeout=10).status_code


@pytest.mark.browser
def test_in_chromium_a_student_submits_and_sees_the_receipt_then_the_feedback_and_the_instructor_the_queue(
        course: dict[str, Any]) -> None:
    playwright = pytest.importorskip("playwright.sync_api")
    chromium = shutil.which("chromium")
    if chromium is None:
        pytest.skip("Debian's chromium is not installed")
    notebook = _copy_for("s03", course["tmp"])
    shots = course["tmp"] / "screenshots"
    shots.mkdir()
    with serving(course) as (url, _), playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": 1000, "height": 1100}, timezone_id="America/New_York")
            page.goto(url + "/")
            page.fill("#token", "gs_not-a-token")
            page.click("#signin-button")
            playwright.expect(page.locator("#signin-error")).to_contain_text("no valid token")
            page.fill("#token", course["tokens"]["s03"])
            page.click("#signin-button")
            playwright.expect(page.locator("#who")).to_contain_text("S03")
            page.set_input_files("#file", str(notebook))
            page.click("#send")
            playwright.expect(page.locator("#r-sha")).to_have_text(hashlib.sha256(notebook.read_bytes()).hexdigest())
            # the receipt's moment in the reader's zone (New York) and the course's (UTC), never raw ISO
            playwright.expect(page.locator("#r-at")).to_contain_text("(your time; ")
            playwright.expect(page.locator("#r-at")).to_contain_text(" UTC)")
            playwright.expect(page.locator("#f-score")).to_contain_text("Score:", timeout=120_000)
            playwright.expect(page.locator("#history")).to_contain_text("done")
            page.screenshot(path=str(shots / "student.png"), full_page=True)
            report = page.locator("#f-report a").get_attribute("href")
            assert page.request.get(f"{url}/{report}").status == 200  # the report, through the page's sign-in
            teacher = browser.new_page(viewport={"width": 1200, "height": 1000})
            teacher.goto(url + "/instructor")
            teacher.fill("#token", course["tokens"]["s03"])
            teacher.click("#signin-button")
            playwright.expect(teacher.locator("#signin-error")).to_contain_text("a student's token")
            teacher.fill("#token", course["tokens"]["prof"])
            teacher.click("#signin-button")
            playwright.expect(teacher.locator("#counts")).to_contain_text("1 done")
            playwright.expect(teacher.locator("#recent")).to_contain_text("s03")
            assert teacher.locator("#recent td", has_text=" UTC").count() >= 1  # received, in the course's zone
            teacher.fill("#student", "s03")
            teacher.click("#lookup")
            link = teacher.locator("#history a", has_text="report")  # a student's history links to their report
            playwright.expect(link).to_have_count(1)
            assert teacher.request.get(f"{url}/{link.get_attribute('href')}").status == 200
            graded_on = teacher.locator("#history tr").nth(1).locator("td").nth(6).inner_text()
            assert graded_on == socket.gethostname()  # where it was graded, not a worker's process id
            teacher.screenshot(path=str(shots / "instructor.png"), full_page=True)
        finally:
            browser.close()
    from PIL import Image

    for name in ("student.png", "instructor.png"):
        with Image.open(shots / name) as image:
            assert len(image.convert("L").getcolors(256) or ()) > 20, f"{name} looks blank"


def test_a_regrade_through_the_service_replays_the_recorded_seeds_at_low_priority(course: dict[str, Any]) -> None:
    database = str(course["home"] / "private" / "queue.sqlite")
    files = {s: _copy_for(s, course["tmp"]) for s in course["students"][:2]}
    prof = {"Authorization": f"Bearer {course['tokens']['prof']}"}
    with serving(course) as (url, _):
        first = {_submit(url, course["tokens"][s], p).json()["id"] for s, p in files.items()}
        _wait_done(database, first)
        before = {s: json.loads((course["out"] / LESSON / "results" / f"{s}.json").read_text()) for s in files}
        assert httpx.post(f"{url}/api/regrade", params={"lesson": LESSON},
                          headers={"Authorization": f"Bearer {course['tokens']['s00']}"}, timeout=10).status_code == 403
        asked = httpx.post(f"{url}/api/regrade", params={"lesson": LESSON}, headers=prof, timeout=30)
        assert asked.status_code == 202 and asked.json()["queued"] == 2
        again = {j["id"] for j in _jobs(database) if j["regrade"] == asked.json()["regrade"]}
        rows = _wait_done(database, again)
        def finished() -> bool:  # changes.csv, then the gradebook's regrade finished (dispatch._regrade_finished)
            if not (course["out"] / LESSON / "changes.csv").exists():
                return False
            with contextlib.closing(sqlite3.connect(course["out"] / LESSON / "gradebook.sqlite")) as db:
                return db.execute("SELECT COUNT(*) FROM regrades").fetchone()[0] == 0

        deadline = time.monotonic() + 30
        while not finished() and time.monotonic() < deadline:
            time.sleep(0.2)  # written when the lesson's queue empties
    assert {(r["state"], r["priority"]) for r in rows} == {("done", 1)}
    after = {s: json.loads((course["out"] / LESSON / "results" / f"{s}.json").read_text()) for s in files}
    for student in files:
        assert after[student]["seed"] == before[student]["seed"]  # the recorded seed, replayed
        assert after[student]["submitted_as"]["receipt"] == before[student]["submitted_as"]["receipt"]
    with contextlib.closing(sqlite3.connect(course["out"] / LESSON / "gradebook.sqlite")) as db:
        assert db.execute("SELECT COUNT(*) FROM grades WHERE regrade=?", (asked.json()["regrade"],)).fetchone()[0] == 2
        assert db.execute("SELECT COUNT(*) FROM history").fetchone()[0] == 2  # the first grades, kept
        assert db.execute("SELECT COUNT(*) FROM regrades").fetchone()[0] == 0  # the regrade finished
    assert (course["out"] / LESSON / "changes.csv").read_text().splitlines()[1:] == []  # nobody moved
    # the class's files are the batch's, by one recipe: similarity.html too, which the dashboard links to
    dashboard = (course["out"] / LESSON / "index.html").read_text()
    assert 'href="similarity.html"' in dashboard and (course["out"] / LESSON / "similarity.html").is_file()
    # the served folder is its owner's alone, whatever the umask: the class's grades, files and notebooks
    assert course["out"].stat().st_mode & 0o077 == 0
    made = list((course["out"] / LESSON).rglob("*"))
    names = {p.name for p in made}
    assert {"grades.csv", "gradebook.sqlite", "results", "received", "notebooks"} <= names
    assert [str(p) for p in made if p.stat().st_mode & 0o077] == []


def test_the_service_and_a_batch_write_the_same_class_files_for_the_same_files(course: dict[str, Any]) -> None:
    """One lesson host (classroom/host.py) under both: the same three files graded by `grader serve` and by
    `grader batch` give the same grades.csv, and both write the dashboard and similarity.html."""
    import csv

    (course["home"] / "course.toml").write_text('name = "served"\ntimezone = "UTC"\n')  # no due date: no lateness
    database = str(course["home"] / "private" / "queue.sqlite")
    folder = course["tmp"] / "class"
    folder.mkdir()
    files = {s: _copy_for(s, folder) for s in course["students"][:3]}
    with serving(course) as (url, _):
        ids = {_submit(url, course["tokens"][s], path).json()["id"] for s, path in files.items()}
        _wait_done(database, ids)
        served = course["out"] / LESSON
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not (served / "grades.csv").is_file():
            time.sleep(0.5)  # the host writes the class's files once it is idle
    batched = course["tmp"] / "batched"
    done = subprocess.run([sys.executable, "-m", "grader", "batch", str(folder), "--lesson", LESSON, "--out",
                           str(batched)], capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert done.returncode == 0, done.stdout + done.stderr

    def rows(out: Path) -> list[dict[str, str]]:
        with (out / "grades.csv").open(newline="") as handle:
            return sorted(csv.DictReader(handle), key=lambda row: row["student"])

    assert rows(served) == rows(batched) and [r["student"] for r in rows(batched)] == sorted(files)
    for page in ("index.html", "similarity.html"):
        assert (served / page).is_file() and (batched / page).is_file(), page


def test_grader_submit_wait_says_why_an_exercise_failed_as_the_page_does(course: dict[str, Any]) -> None:
    """`grader submit --wait` printed `deadline: failed` alone; the reason the page shows is printed beside it."""
    sample = ROOT / "samples" / LESSON / "ben.py"  # a sample whose deadline exercise fails
    with serving(course) as (url, _):
        done = subprocess.run([sys.executable, "-m", "grader", "submit", str(sample), "--lesson", LESSON, "--server",
                               url, "--token", course["tokens"]["s05"], "--wait"], capture_output=True, text=True,
                              timeout=300, cwd=ROOT)
        as_json = subprocess.run([sys.executable, "-m", "grader", "submit", str(sample), "--lesson", LESSON,
                                  "--server", url, "--token", course["tokens"]["s06"], "--wait", "--json"],
                                 capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    (line,) = [line for line in done.stdout.splitlines() if line.startswith("  deadline: failed")]
    (exercise,) = [e for e in json.loads(as_json.stdout)["feedback"]["exercises"] if e["id"] == "deadline"]
    assert exercise["messages"] and line == f"  deadline: failed ({exercise['messages'][0][:300]})"
    missing = subprocess.run([sys.executable, "-m", "grader", "submit", str(course["tmp"] / "gone.ipynb"), "--lesson",
                              LESSON, "--server", "http://127.0.0.1:9", "--token", "x"], capture_output=True, text=True,
                             timeout=60, cwd=ROOT)
    assert missing.returncode == 2 and missing.stderr.count("\n") == 1 and "nothing was sent" in missing.stderr
