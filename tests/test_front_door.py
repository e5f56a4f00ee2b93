"""The front door tried as an attacker would, and at a deadline: every id from outside, every number a setting
reads, every upload and page, and the server's own limits.

The HTTP tests drive the real Starlette application on uvicorn on loopback (test_service.py's `service` fixture);
the server's own limits (a request's head in time, connections within the open files, its folder's mode) are
tried on `grader serve` itself, a process started with a small open-file limit and stopped at the end. Each
expected value comes from the issue's reproduction or a hand count, never from the code under test.
"""

from __future__ import annotations

import contextlib
import gc
import hashlib
import json
import os
import resource
import socket
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import CliRunner
from conftest import answering
from test_service import NOTEBOOK, _auth

from grader import cli
from grader.base.errors import GraderError
from grader.intake import layouts

LESSON = "inference-capacity"
TOKEN = "gs_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8S9t0U1v"  # the shape `grader tokens` issues: gs_ and 43 characters


# -- ids from outside --------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("raw", "why"), [("../../../escaped", "a path separator"), ("a\\b", "a path separator"),
                                          ("..", "begins with a dot"), (".hidden", "begins with a dot"),
                                          ("ada\x1b[2J", "a control character"), ("  ", "it is empty")])
def test_an_id_that_cannot_name_one_file_is_refused_in_one_line(raw: str, why: str) -> None:
    with pytest.raises(GraderError, match=why) as caught:
        layouts.checked_id(raw, "the roster's id")
    assert "\n" not in str(caught.value)


def test_an_id_is_normalised_as_a_class_zips_names_are() -> None:
    assert layouts.checked_id("jose\u0301", "an id") == "jos\u00e9"  # NFC: typed on a Mac or on Linux, one student
    assert layouts.checked_id(" ada ", "an id") == "ada"


def test_a_roster_or_a_token_for_an_unsafe_id_is_refused_and_nothing_is_issued(own_course: Any,
                                                                             tmp_path: Path) -> None:
    from grader.service import tokens

    home = own_course()
    roster = tmp_path / "roster.csv"
    roster.write_text("student,name\nada,Ada\n../escaped,Eve\n")
    with pytest.raises(GraderError, match="student id '../escaped' cannot be a student id: it holds a path"):
        tokens.for_roster(roster)
    with pytest.raises(GraderError, match="instructor id '../prof' cannot be a student id"):
        tokens.issue([("../prof", "Prof")], "instructor")
    assert not (home / "private" / "tokens.json").exists()


# -- numbers that are settings -----------------------------------------------------------------------------------
@pytest.mark.parametrize("setting", ["submissions]\ncooldown_minutes = nan", "submissions]\ncooldown_minutes = inf",
                                     "late]\npercent_per_day = nan", "late]\ncutoff_days = inf",
                                     "review]\ndouble_percent = nan"])
def test_nan_and_inf_in_course_toml_are_refused_by_name(own_course: Any, setting: str) -> None:
    from grader.lesson import course

    own_course(toml=f"[lessons.{LESSON}.{setting}\n")
    with pytest.raises(GraderError, match=r"course.toml: lessons\.inference-capacity\..* is not a finite number"):
        course.current()


def test_nan_and_inf_on_the_command_line_and_in_lti_json_are_refused(own_course: Any) -> None:
    from grader.service.lti import keys as lti_keys

    for flags in (["--lease", "nan"], ["--lease", "inf"], ["--header-timeout", "inf"]):
        said = CliRunner().invoke(cli.main, ["serve", *flags])
        assert said.exit_code == 2 and "is not a finite number" in said.output, said.output
    home = own_course()
    (home / "lti.json").write_text('{"https://lms.example": [{"client_id": "1", "auth_login_url": "a", '
                                   '"auth_token_url": "b", "key_set_url": "c", "weight": NaN}]}')
    with pytest.raises(GraderError, match="lti.json cannot be read as JSON"):
        lti_keys.platforms()


# -- uploads -----------------------------------------------------------------------------------------------------
def test_threads_checking_uploads_at_once_never_fail_on_the_ast_constructor(own_course: Any) -> None:
    """CPython 3.11's AST constructor counts its depth per interpreter (python/cpython#106905): threads parsing at
    once while the collector runs Python code raise SystemError. The service checks uploads in threads."""
    from grader.service import upload

    own_course()
    cells = [{"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
              "source": "x = " + "(" * 60 + "1" + ")" * 60 + "\n" + "\n".join(
                  f"def f{i}(x):\n    return [[(x + {i}) * 2 for _ in range(3)] for _ in range(2)]" for i in range(60))}
             for _ in range(4)]
    body = json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": cells}).encode()
    got = upload.Upload("hw.ipynb", body, hashlib.sha256(body).hexdigest())

    class Cycle:
        def __del__(self) -> None:
            sum(range(50))  # Python code run by the collector, between two threads' parses

    failures: list[str] = []

    def check() -> None:
        for _ in range(12):
            junk = Cycle()
            junk.me = junk  # type: ignore[attr-defined]
            try:
                upload.check(got, LESSON)
            except Exception as err:  # any failure at all is what this test looks for
                failures.append(f"{type(err).__name__}: {err}")
                return

    before, switch = gc.get_threshold(), sys.getswitchinterval()
    gc.set_threshold(50, 5, 5)
    sys.setswitchinterval(1e-6)
    try:
        threads = [threading.Thread(target=check) for _ in range(12)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(120)
    finally:
        gc.set_threshold(*before)
        sys.setswitchinterval(switch)
    assert failures == []


def _chunked_upload(port: int, token: str, total: int) -> tuple[bytes, int]:
    """A chunked multipart upload of `total` bytes over a raw socket, stopped when the server answers; (the answer's
    first bytes, the bytes sent before it came)."""
    boundary = "x" * 24
    head = (f"POST /api/submissions?lesson={LESSON} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {token}\r\n"
            f"Content-Type: multipart/form-data; boundary={boundary}\r\nTransfer-Encoding: chunked\r\n\r\n").encode()
    part = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"hw.ipynb\"\r\n"
            "Content-Type: application/json\r\n\r\n").encode()
    sent = 0
    answer = b""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(head)
        chunk = part + b" " * (256 * 1024 - len(part))
        while sent < total and not answer:
            try:
                sock.sendall(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
            except OSError:
                break  # the server stopped reading and closed: the answer is waiting
            sent += len(chunk)
            chunk = b" " * (256 * 1024)
            sock.setblocking(False)
            with contextlib.suppress(BlockingIOError):
                answer = sock.recv(4096)
            sock.setblocking(True)
        if not answer:
            sock.settimeout(10)
            with contextlib.suppress(OSError):
                answer = sock.recv(4096)
    return answer, sent


def test_a_chunked_upload_past_the_limit_is_stopped_as_it_arrives(service: Any) -> None:
    port = int(str(service.base_url).rsplit(":", 1)[1].strip("/"))
    answer, sent = _chunked_upload(port, service.tokens["ada"], 64 * 1024**2)
    assert answer.startswith(b"HTTP/1.1 413"), answer[:200]
    assert sent < 16 * 1024**2  # the limit is 400,000 bytes: the server read no further than its limit and buffers
    assert sum(service.served.queue.counts().values()) == 0


def test_json_nested_two_hundred_thousand_deep_is_a_4xx_in_one_line(service: Any) -> None:
    for body in (b"[" * 200_000 + b"]" * 200_000, b'{"cells": ' + b"[" * 150_000 + b"]" * 150_000 + b"}"):
        got = service.post(f"/api/submissions?lesson={LESSON}", content=body, headers=_auth(service, "ada"))
        assert got.status_code == 422, got.text
        assert "nested too deeply" in got.json()["error"] and "\n" not in got.json()["error"]
    assert sum(service.served.queue.counts().values()) == 0


def test_a_token_written_into_the_notebook_is_never_kept(service: Any, tmp_path: Path) -> None:
    from grader import client

    notebook = json.loads(NOTEBOOK.read_text())
    notebook["cells"].append({"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
                              "source": f'import grader\ngrader.submit(token="{TOKEN}")'})
    body = json.dumps(notebook).encode()
    got = service.post(f"/api/submissions?lesson={LESSON}", content=body, headers=_auth(service, "ada"))
    assert got.status_code == 202, got.text
    kept = service.served.queue.body(got.json()["sha256"])
    assert TOKEN.encode() not in kept and b"<token removed>" in kept
    assert got.json()["sha256"] == hashlib.sha256(kept).hexdigest()  # the receipt names what was kept
    path = tmp_path / "hw.ipynb"  # `grader submit` and grader.submit() remove it before sending
    path.write_bytes(body.replace(b"Submitted", b"Sent"))
    receipt, _ = client.submit(path, str(service.base_url), service.tokens["ben"], LESSON)
    assert TOKEN.encode() not in service.served.queue.body(receipt["sha256"])


def test_grader_submit_reads_the_token_from_its_file_not_the_notebook(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    from grader import client

    monkeypatch.delenv("GRADER_TOKEN", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    assert client.stored_token() == "" and client.token_file() == tmp_path / "inference-grader" / "token"
    (tmp_path / "inference-grader").mkdir()
    (tmp_path / "inference-grader" / "token").write_text(TOKEN + "\n")
    assert client.stored_token() == TOKEN
    said = CliRunner().invoke(cli.main, ["submit", str(NOTEBOOK), "--server", "http://127.0.0.1:9", "--lesson", LESSON])
    assert "could not be reached" in said.output and "no token" not in said.output  # the file's token was taken


# -- pages and tokens --------------------------------------------------------------------------------------------
def test_files_serves_the_batch_folders_own_pages_and_nothing_else(service: Any, tmp_path: Path) -> None:
    served = service.served.out / LESSON
    (served / "reports").mkdir(parents=True)
    (served / "index.html").write_text("<p>dashboard</p>")
    (served / "reports" / "ada.html").write_text("<p>ada's report</p>")
    secret = tmp_path / "secret.html"
    secret.write_text("<p>another folder</p>")
    prof = _auth(service, "prof")
    assert service.get(f"/files/{LESSON}/index.html", headers=prof).text == "<p>dashboard</p>"
    assert service.get(f"/files/{LESSON}/reports/ada.html", headers=prof).status_code == 200
    for path in (f"/{secret}", f"%2F{str(secret)[1:].replace('/', '%2F')}", "reports/../../../secret.html",
                 "reports/.html", "gradebook.sqlite", f"reports/{'x' * 3}/../index.html"):
        got = service.get(f"/files/{LESSON}/{path}", headers=prof)
        assert got.status_code == 404 and "another folder" not in got.text, path


def test_a_token_issued_again_replaces_the_old_one_on_a_running_server(service: Any) -> None:
    from grader.service import tokens

    old = _auth(service, "ada")
    assert service.get("/api/submissions", headers=old).status_code == 200
    new = tokens.issue([("ada", "Ada")], "student")[0][1]
    deadline = time.monotonic() + 10
    while service.get("/api/submissions", headers=old).status_code == 200 and time.monotonic() < deadline:
        time.sleep(0.2)
    assert service.get("/api/submissions", headers=old).status_code == 401
    assert service.get("/api/submissions", headers={"Authorization": f"Bearer {new}"}).status_code == 200


def test_the_pages_before_sign_in_show_no_folder_of_the_server(service: Any) -> None:
    home = os.environ["GRADER_COURSE"]  # the course folder the fixture made
    for page in ("/", "/instructor"):
        text = service.get(page).text
        assert home not in text and str(service.served.out) not in text and "/tmp/" not in text


def test_before_the_due_date_verdicts_show_no_hidden_cases_input_or_answer(own_course: Any) -> None:
    from grader.judge.verdict import CaseVerdict, ExerciseResult
    from grader.result.record import GradeResult
    from grader.service import policy
    from grader.service.jobs import Job

    own_course(toml=f'[lessons.{LESSON}]\ndue = 2030-01-01\n[lessons.{LESSON}.submissions]\nbefore_due = "verdicts"\n')
    hidden = "hidden case burst(7, [0.5, 9.25]): returned 3.0"
    exercise = ExerciseResult("burst", "failed", 0.0, 1.0, "simulated", (hidden, "burst(3): returned 1"), (
        CaseVerdict("burst(3)", False, "failed", "burst(3): returned 1"),
        CaseVerdict("burst(7, [0.5, 9.25])", True, "failed", hidden),
        CaseVerdict("burst(2, [1.0])", True, "passed")), public_cases=1, hidden_cases=2)
    result = GradeResult("graded", LESSON, "ada", 0.0, 1.0, (exercise,))
    job = Job("j1", LESSON, "ada", "0" * 64, "hw.ipynb", "2026-12-06T00:00:00+00:00", 0.0, "done", status="graded",
              score=0.0, max_score=1.0, feedback=policy.verdicts(result))
    student = json.dumps(policy.shown(job, "student"))
    assert "9.25" not in student and "returned 3.0" not in student  # neither the hidden input nor the answer
    (said,) = policy.shown(job, "student")["exercises"]
    assert said["status"] == "failed" and said["messages"] == ["burst(3): returned 1", "1 of 2 hidden cases passed"]
    assert hidden in policy.shown(job, "instructor")["exercises"][0]["messages"]  # the instructor sees all


# -- the queue's fencing token -----------------------------------------------------------------------------------
def test_only_the_current_leases_holder_may_write_a_jobs_files(tmp_path: Path) -> None:
    from grader.service.jobs import Queue

    q = Queue(tmp_path / "q.sqlite")
    q.add(LESSON, "ada", "1" * 64, "hw.ipynb", b"x", "2026-12-06T00:00:00+00:00", True)
    (stalled,) = q.claim([LESSON], "one/x", 1, lease_s=-1)  # its lease ran out while it was stopped
    assert q.reap() == 1
    with q.transaction() as db:  # the backoff, skipped
        db.execute("UPDATE jobs SET not_before=0", ())
    (current,) = q.claim([LESSON], "two/x", 1, lease_s=30)
    assert not q.holds(stalled, "one/x", 30) and q.holds(current, "two/x", 30)
    assert not q.done(stalled, "one/x", "graded", 1.0, 1.0, None, "{}")


def test_a_queue_made_before_the_fencing_token_gets_its_column(tmp_path: Path) -> None:
    import sqlite3

    from grader.service.jobs import Queue

    old = tmp_path / "q.sqlite"
    with contextlib.closing(sqlite3.connect(old)) as db:  # the jobs table as the previous release made it
        db.execute("CREATE TABLE jobs (id TEXT PRIMARY KEY, lesson TEXT NOT NULL, student TEXT NOT NULL, sha256 TEXT "
                   "NOT NULL, name TEXT NOT NULL, received_at TEXT NOT NULL, received DOUBLE PRECISION NOT NULL, state "
                   "TEXT NOT NULL, priority INTEGER NOT NULL DEFAULT 0, turn INTEGER NOT NULL DEFAULT 0, tries INTEGER "
                   "NOT NULL DEFAULT 0, not_before DOUBLE PRECISION NOT NULL DEFAULT 0, lease_until DOUBLE PRECISION, "
                   "worker TEXT, pid INTEGER, started DOUBLE PRECISION, finished DOUBLE PRECISION, status TEXT, score "
                   "DOUBLE PRECISION, max_score DOUBLE PRECISION, error TEXT, superseded_by TEXT, feedback TEXT, "
                   "regrade TEXT, origin TEXT)")
        db.execute("INSERT INTO jobs (id, lesson, student, sha256, name, received_at, received, state) VALUES "
                   "('kept', 'l', 'ada', 'x', 'hw.ipynb', 't', 1.0, 'queued')")
        db.commit()
    q = Queue(old)
    (job,) = q.claim(["l"], "s/1", 1, 30)
    assert (job.id, job.fence) == ("kept", 1) and q.holds(job, "s/1", 30)


@pytest.mark.kernel
@pytest.mark.sandbox  # as root, and again rootless (.ci/rootless): both fork kernels from the zygote
def test_a_batch_grades_under_a_strict_umask(tmp_path: Path) -> None:
    """A grader run under umask 077 (as `grader serve` now keeps its folder) still lets the sandboxed kernel, which
    runs as nobody, into its own folders."""
    (tmp_path / "class").mkdir()
    (tmp_path / "class" / "ada.ipynb").write_bytes((Path(__file__).parent.parent / "samples" / LESSON / "ada.ipynb")
                                                   .read_bytes())
    done = subprocess.run([sys.executable, "-m", "grader", "batch", str(tmp_path / "class"), "--lesson", LESSON, "--out",
                           str(tmp_path / "out")], capture_output=True, text=True, timeout=300,
                          preexec_fn=lambda: os.umask(0o077), env=dict(os.environ, GRADER_RUNROOT=str(tmp_path / "r")))
    assert done.returncode == 0, done.stdout + done.stderr
    graded = json.loads((tmp_path / "out" / "results" / "ada.json").read_text())
    assert graded["status"] == "graded" and graded["score"] > 0, graded.get("error")


# -- the database password ---------------------------------------------------------------------------------------
def test_a_database_address_with_a_password_is_refused_saying_where_it_goes() -> None:
    pytest.importorskip("psycopg")
    said = CliRunner().invoke(cli.main, ["serve", "--database", "postgresql://grader:s3cret@127.0.0.1:1/grader"])
    assert said.exit_code == 2 and "carries a password" in said.output and "~/.pgpass" in said.output
    assert "s3cret" not in said.output
    said = CliRunner().invoke(cli.main, ["serve", "--database", "postgresql://grader@127.0.0.1:1/g?password=s3cret"])
    assert said.exit_code == 2 and "carries a password" in said.output


# -- the server's own folder and limits --------------------------------------------------------------------------
def test_the_output_folder_is_its_owners_or_a_named_groups_whatever_the_umask(tmp_path: Path) -> None:
    import grp

    from grader.service import server

    script = ("import os, sys; os.umask(0o022); from pathlib import Path; from grader.service import server; "
              "server.keep_private(Path(sys.argv[1]), sys.argv[2] or None); Path(sys.argv[1], 'grades.csv').write_text('x')")
    subprocess.run([sys.executable, "-c", script, str(tmp_path / "own"), ""], check=True, timeout=60)
    assert stat.S_IMODE((tmp_path / "own").stat().st_mode) == 0o700
    assert stat.S_IMODE((tmp_path / "own" / "grades.csv").stat().st_mode) == 0o600
    group = grp.getgrgid(os.getgid()).gr_name
    subprocess.run([sys.executable, "-c", script, str(tmp_path / "shared"), group], check=True, timeout=60)
    assert stat.S_IMODE((tmp_path / "shared").stat().st_mode) == 0o2750
    assert stat.S_IMODE((tmp_path / "shared" / "grades.csv").stat().st_mode) == 0o640
    assert server.Config(out=tmp_path).group is None  # by default: the owner only


@contextlib.contextmanager
def _serve_limited(home: Path, out: Path, open_files: int) -> Iterator[int]:
    """`grader serve` under a small open-file limit (hard too), a 1 s head timeout; its port until the block ends."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]

    def limited() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (open_files, open_files))

    log = out.parent / "serve.log"  # a file, not a pipe: a server never waits on a reader
    with log.open("w") as sink:
        proc = subprocess.Popen([sys.executable, "-m", "grader", "serve", "--out", str(out), "--port", str(port),
                                 "--header-timeout", "1", "--no-sandbox"],
                                env=dict(os.environ, GRADER_COURSE=str(home)), stdout=sink, stderr=subprocess.STDOUT,
                                start_new_session=True, preexec_fn=limited)
    try:
        answering(f"http://127.0.0.1:{port}/", proc, 60, log.read_text)
        yield port
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, 9)
        proc.wait(30)


def test_slow_clients_cannot_starve_the_server_of_connections(own_course: Any, tmp_path: Path) -> None:
    """A slow head is closed after the head timeout, and 300 connections that never finish their head, under an
    open-file limit of 256, still leave room for an honest request (plain uvicorn: it times out)."""
    home = own_course()
    with _serve_limited(home, tmp_path / "served", 256) as port:
        with socket.create_connection(("127.0.0.1", port), timeout=10) as slow:
            slow.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n")  # a head begun and never finished
            slow.settimeout(8)
            assert slow.recv(100) == b""  # closed by the server, not by our timeout (that would raise)
        held = []
        try:
            for _ in range(300):
                conn = socket.create_connection(("127.0.0.1", port), timeout=10)
                conn.sendall(b"GET / HTTP/1.1\r\n")
                held.append(conn)
            honest = httpx.get(f"http://127.0.0.1:{port}/", timeout=30)  # plain uvicorn: never answered
            assert honest.status_code == 200
        finally:
            for conn in held:
                conn.close()


# -- the deadline ------------------------------------------------------------------------------------------------
def test_a_burst_of_300_submissions_from_64_threads_answers_no_5xx(service: Any) -> None:
    from concurrent.futures import ThreadPoolExecutor

    base = json.loads(NOTEBOOK.read_text())
    students = [f"s{i:03d}" for i in range(300)]
    from grader.service import tokens

    made = {p.who: t for p, t in tokens.issue([(s, s) for s in students], "student")}
    time.sleep(1.1)  # the running server reads the new tokens

    def one(student: str) -> int:
        notebook = dict(base, cells=[*base["cells"], {"cell_type": "markdown", "metadata": {}, "source": student}])
        with httpx.Client(base_url=service.base_url, timeout=60) as http:
            return http.post(f"/api/submissions?lesson={LESSON}", content=json.dumps(notebook).encode(),
                             headers={"Authorization": f"Bearer {made[student]}"}).status_code

    with ThreadPoolExecutor(64) as pool:
        codes = list(pool.map(one, students))
    assert [c for c in codes if c >= 500] == []
    assert codes.count(202) == 300 and service.served.queue.counts()["queued"] == 300
