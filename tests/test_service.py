"""The submission service without a kernel: the queue's moves, the HTTP contract, tokens and the course's policy.

The HTTP tests drive the real Starlette application on uvicorn, on loopback in a
thread of the test (httpx as the client); the grading side is not started, so
every answer here is what the HTTP side decides by itself. The live tests (test_service_live.py)
grade for real.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from pathlib import Path
from typing import Any

import pytest

from grader.service import jobs as jobs_module
from grader.service.jobs import Queue

NOTEBOOK = Path(__file__).parent.parent / "samples" / "inference-capacity" / "ada.ipynb"


def _q(tmp_path: Path) -> Queue:
    return Queue(tmp_path / "queue.sqlite")


def _add(q: Queue, student: str, lesson: str = "inference-capacity", body: bytes = b"x", priority: int = 0) -> Any:
    digest = hashlib.sha256(body + student.encode()).hexdigest()
    return q.add(lesson, student, digest, "hw.ipynb", body, "2026-12-06T00:00:00+00:00", True, 2, priority)


# -- the queue ----------------------------------------------------------------------------------------------------
def test_receipts_count_the_queue_ahead_and_a_resubmission_supersedes_the_queued_one(tmp_path: Path) -> None:
    q = _q(tmp_path)
    _, first = _add(q, "ada", body=b"a1")
    _, second = _add(q, "ben")
    assert (first.position, second.position) == (1, 2)
    job, third = _add(q, "ada", body=b"a2")  # ada's first is dropped: the newest counts, and she keeps her turn
    assert q.get(first.id).state == "superseded" and q.get(first.id).superseded_by == third.id
    assert third.position == 2  # ben (received earlier) and then her new one
    assert q.counts()["queued"] == 2
    # no grade yet and no host running: its start (15 s before one is measured) and the 10 s default per round of
    # 2 jobs; position 2 is the first round
    assert third.eta_s == 15.0 + 10.0


def test_students_take_turns_and_one_student_never_runs_two_jobs_of_a_lesson_at_once(tmp_path: Path) -> None:
    q = _q(tmp_path)
    _add(q, "ada", "inference-capacity")
    _add(q, "ada", "inference-scaling")  # ada already waits: this one is her second turn
    _add(q, "ben", "inference-scaling")
    _add(q, "cleo", "inference-capacity", priority=1)  # a regrade: after everyone else
    order = [(j.student, j.lesson) for j in q.claim(["inference-capacity", "inference-scaling"], "s/1", 4, 30)]
    assert order == [("ada", "inference-capacity"), ("ben", "inference-scaling"), ("ada", "inference-scaling"),
                     ("cleo", "inference-capacity")]
    _add(q, "ben", "inference-scaling", body=b"again")  # ben's job of that lesson is running: this one waits
    assert q.claim(["inference-scaling"], "s/1", 4, 30) == []


def test_a_lease_that_runs_out_puts_the_job_back_and_the_third_failure_is_dead(tmp_path: Path) -> None:
    q = _q(tmp_path)
    _, receipt = _add(q, "ada")
    for attempt in range(1, jobs_module.TRIES + 1):
        (job,) = q.claim(["inference-capacity"], f"s/{attempt}", 1, lease_s=-1)  # leased into the past: expired
        assert job.tries == attempt
        assert q.reap() == 1
        back = q.get(receipt.id)
        if attempt < jobs_module.TRIES:
            assert back.state == "queued"
            # backoff: 5 s, then 10 s (BACKOFF_S doubled), before another server may take it
            assert back.not_before - time.time() == pytest.approx(5.0 * 2 ** (attempt - 1), abs=2)
            with q.transaction() as db:
                db.execute("UPDATE jobs SET not_before=0 WHERE id=?", (receipt.id,))
    assert q.get(receipt.id).state == "dead"
    assert "died" in q.get(receipt.id).error
    assert q.rerun(receipt.id).state == "queued" and q.get(receipt.id).tries == 0


def test_only_the_holder_of_a_job_finishes_it(tmp_path: Path) -> None:
    q = _q(tmp_path)
    _add(q, "ada")
    (job,) = q.claim(["inference-capacity"], "s/one", 1, 30)
    assert not q.done(job, "s/other", "graded", 1.0, 2.0, None, "{}")
    assert q.done(job, "s/one", "graded", 1.0, 2.0, None, "{}")
    assert q.get(job.id).state == "done" and q.get(job.id).score == 1.0
    assert not q.done(job, "s/one", "graded", 2.0, 2.0, None, "{}")  # never twice
    assert q.get(job.id).score == 1.0


def test_a_clean_stop_hands_running_jobs_back_without_counting_a_try(tmp_path: Path) -> None:
    q = _q(tmp_path)
    _add(q, "ada")
    (job,) = q.claim(["inference-capacity"], "host:1/inference-capacity", 1, 30)
    q.release("host:1")
    back = q.get(job.id)
    assert (back.state, back.tries, back.worker) == ("queued", 0, None)


# -- the HTTP contract --------------------------------------------------------------------------------------------
def _auth(client: Any, who: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {client.tokens[who]}"}


def test_a_submission_is_answered_202_with_a_receipt_of_its_own_bytes(service: Any) -> None:
    body = NOTEBOOK.read_bytes()
    got = service.post("/api/submissions?lesson=inference-capacity", content=body, headers=_auth(service, "ada"))
    assert got.status_code == 202, got.text
    receipt = got.json()
    assert set(receipt) == {"id", "sha256", "received_at", "position", "eta_s"}
    assert receipt["sha256"] == hashlib.sha256(body).hexdigest()
    assert receipt["position"] == 1
    assert abs(time.time() - _epoch(receipt["received_at"])) < 60
    state = service.get(f"/api/submissions/{receipt['id']}", headers=_auth(service, "ada")).json()
    assert state["status"] == "queued" and "score" not in state


def _epoch(text: str) -> float:
    import datetime as dt

    return dt.datetime.fromisoformat(text).timestamp()


def test_no_token_or_a_wrong_one_is_401_and_nothing_is_kept(service: Any) -> None:
    body = NOTEBOOK.read_bytes()
    assert service.post("/api/submissions?lesson=inference-capacity", content=body).status_code == 401
    wrong = {"Authorization": "Bearer gs_" + "x" * 43}
    assert service.post("/api/submissions?lesson=inference-capacity", content=body, headers=wrong).status_code == 401
    assert service.get("/api/queue", headers=_auth(service, "ada")).status_code == 403  # a student is no instructor
    assert sum(service.served.queue.counts().values()) == 0


def test_a_pages_cookie_signs_reads_only_and_each_refusal_says_whose_token_is_missing(service: Any) -> None:
    body = NOTEBOOK.read_bytes()
    signed = service.post("/api/session", headers=_auth(service, "ada"))
    assert signed.status_code == 200 and signed.json()["who"] == "ada"
    assert "grader_session" in service.cookies  # httpx keeps it, as a browser would
    assert service.get("/api/lessons").status_code == 200  # a read, by the cookie alone
    assert service.get("/api/submissions").json()["submissions"] == []
    taken = service.post("/api/submissions?lesson=inference-capacity", content=body)  # a change, by the cookie alone
    assert taken.status_code == 401 and taken.json()["error"].startswith("no valid token")
    assert sum(service.served.queue.counts().values()) == 0
    assert service.post("/api/session").status_code == 401  # nor does the cookie sign a page in again
    refused = service.get("/api/queue")  # ada, signed in by her cookie, is no instructor
    assert refused.status_code == 403 and refused.json() == {"error": "an instructor's token is needed"}
    assert service.delete("/api/session").json() == {"signed_out": True}
    assert "grader_session" not in service.cookies
    assert service.get("/api/lessons").json()["error"].startswith("no valid token")
    # an instructor may do what any member may (read the lessons), and what only an instructor may
    assert service.get("/api/lessons", headers=_auth(service, "prof")).status_code == 200
    assert service.get("/api/queue", headers=_auth(service, "prof")).status_code == 200
    assert service.get("/no/such/route").json() == {"error": "Not Found"}


def test_inside_the_cooldown_the_file_is_saved_but_not_graded_429_with_retry_after(service: Any) -> None:
    first = service.post("/api/submissions?lesson=inference-capacity", content=NOTEBOOK.read_bytes(),
                         headers=_auth(service, "ada"))
    assert first.status_code == 202
    again = service.post("/api/submissions?lesson=inference-capacity&name=v2.ipynb", content=NOTEBOOK.read_bytes(),
                         headers=_auth(service, "ada"))
    assert again.status_code == 429
    assert 590 <= int(again.headers["Retry-After"]) <= 600  # cooldown_minutes = 10
    saved = again.json()["saved"]
    assert service.served.queue.get(saved["id"]).state == "saved"
    # another student, and another lesson, are not held back by ada's cooldown
    assert service.post("/api/submissions?lesson=inference-capacity", content=NOTEBOOK.read_bytes(),
                        headers=_auth(service, "ben")).status_code == 202
    scaling = NOTEBOOK.parent.parent / "inference-scaling" / "ada.ipynb"
    assert service.post("/api/submissions?lesson=inference-scaling", content=scaling.read_bytes(),
                        headers=_auth(service, "ada")).status_code == 202


def test_too_large_is_413_and_not_a_submission_is_422_with_the_readers_reason(service: Any) -> None:
    big = b"{" + b" " * 500_000 + b"}"
    assert service.post("/api/submissions?lesson=inference-capacity", content=big,
                        headers=_auth(service, "ada")).status_code == 413
    bad = service.post("/api/submissions?lesson=inference-capacity", content=b"hello, not json",
                       headers=_auth(service, "ada"))
    assert bad.status_code == 422 and "not valid notebook JSON" in bad.json()["error"]
    text = service.post("/api/submissions?lesson=inference-capacity&name=essay.docx", content=b"words",
                        headers=_auth(service, "ada"))
    assert text.status_code == 422 and ".ipynb" in text.json()["error"]
    other = service.post("/api/submissions?lesson=inference-scaling", content=NOTEBOOK.read_bytes(),
                         headers=_auth(service, "ada"))  # the capacity handout, sent to another lesson
    assert other.status_code == 422 and "lesson 'inference-capacity'" in other.json()["error"]
    assert sum(service.served.queue.counts().values()) == 0


def test_multipart_uploads_are_taken_and_named_safely(service: Any) -> None:
    body = NOTEBOOK.read_bytes()
    got = service.post("/api/submissions?lesson=inference-capacity", headers=_auth(service, "ada"),
                       files={"file": ("../../etc/my hw;rm -rf.ipynb", body, "application/json")})
    assert got.status_code == 202, got.text
    job = service.served.queue.get(got.json()["id"])
    assert job.name == "my_hw_rm_-rf.ipynb" and job.sha256 == hashlib.sha256(body).hexdigest()


def test_another_students_submission_is_404_and_the_instructor_sees_every_one(service: Any) -> None:
    receipt = service.post("/api/submissions?lesson=inference-capacity", content=NOTEBOOK.read_bytes(),
                           headers=_auth(service, "ada")).json()
    assert service.get(f"/api/submissions/{receipt['id']}", headers=_auth(service, "ben")).status_code == 404
    assert service.get("/api/submissions/0000000000000000", headers=_auth(service, "ben")).status_code == 404
    assert service.get("/api/submissions", headers=_auth(service, "ben")).json()["submissions"] == []
    seen = service.get(f"/api/submissions/{receipt['id']}", headers=_auth(service, "prof")).json()
    assert seen["student"] == "ada"
    queue = service.get("/api/queue", headers=_auth(service, "prof")).json()
    assert queue["counts"]["queued"] == 1 and queue["wait_s"] == {"p50": None, "p95": None, "n": 0}


def test_a_full_disk_refuses_new_uploads_in_one_line_and_keeps_what_was_accepted(service: Any) -> None:
    kept = service.post("/api/submissions?lesson=inference-capacity", content=NOTEBOOK.read_bytes(),
                        headers=_auth(service, "ada")).json()
    service.served.min_free = 1 << 62  # more than any disk has: this disk is "full"
    refused = service.post("/api/submissions?lesson=inference-capacity", content=NOTEBOOK.read_bytes(),
                           headers=_auth(service, "ben"))
    assert refused.status_code == 507 and "\n" not in refused.json()["error"]
    assert service.served.queue.counts()["queued"] == 1 and service.served.queue.get(kept["id"]).state == "queued"


def test_feedback_follows_the_policy_before_and_after_the_due_date(own_course: Any) -> None:
    from grader.service import policy
    from grader.service.jobs import Job

    own_course(toml='[lessons.inference-capacity]\ndue = 2030-01-01\n[lessons.inference-capacity.submissions]\n'
                    'before_due = "public"\n')
    feedback = json.dumps({"exercises": [{"id": "burst", "status": "failed", "score": 0.0, "max_score": 1.0,
                                          "messages": ["off by one"], "hidden": [1, 3],
                                          "public": [{"label": "burst(3)", "outcome": "passed", "message": ""}]}]})
    job = Job("j1", "inference-capacity", "ada", "0" * 64, "hw.ipynb", "2026-12-06T00:00:00+00:00", 0.0, "done",
              status="graded", score=4.0, max_score=9.0, feedback=feedback)
    student = policy.shown(job, "student")
    assert student["score"] is None and student["exercises"] == [{"id": "burst", "public": [
        {"label": "burst(3)", "outcome": "passed", "message": ""}]}]
    assert policy.shown(job, "instructor")["score"] == 4.0
    other = Job(**{**job.__dict__, "lesson": "inference-scaling"})  # no due date: after_due's default, the score
    assert policy.shown(other, "student")["score"] == 4.0


def test_tokens_are_kept_hashed_and_a_new_one_replaces_the_old(own_course: Any, tmp_path: Path) -> None:
    from grader.service import tokens

    home = own_course()
    roster = tmp_path / "roster.csv"
    roster.write_text("student,name\nada,Ada\n=cmd,Eve\n")
    made = tokens.for_roster(roster)
    out = tmp_path / "tokens.csv"
    tokens.write_csv(made, out)
    stored = (home / "private" / "tokens.json").read_text()
    assert all(token not in stored for _, token in made)
    assert (home / "private" / "tokens.json").stat().st_mode & 0o077 == 0 and out.stat().st_mode & 0o077 == 0
    assert "'=cmd" in out.read_text()  # a roster field is never a formula in a spreadsheet
    book = tokens.Book()
    assert book.who(made[0][1]).who == "ada"
    again = tokens.issue([("ada", "Ada")], "student")[0][1]
    fresh = tokens.Book()
    assert fresh.who(made[0][1]) is None and fresh.who(again).who == "ada"


def test_a_token_issued_again_is_refused_by_every_running_server_within_seconds(own_course: Any) -> None:
    """Two servers of one course (each its own token book, reading the course folder they share): `grader tokens`
    issuing a student's token again is seen by both, the old token refused and the new one taken, within 5 s."""
    from grader.service import tokens

    own_course()
    old = tokens.issue([("ada", "Ada")], "student")[0][1]
    servers = [tokens.Book(), tokens.Book()]
    assert all(book.who(old).who == "ada" for book in servers)
    new = tokens.issue([("ada", "Ada")], "student")[0][1]
    deadline = time.monotonic() + 5.0
    while time.monotonic() < deadline and any(book.who(old) is not None for book in servers):
        time.sleep(0.1)
    assert all(book.who(old) is None and book.who(new).who == "ada" for book in servers)


def test_a_regrade_queues_each_students_latest_graded_submission_last_with_its_receive_time(tmp_path: Path) -> None:
    q = _q(tmp_path)
    for student, body in (("ada", b"a1"), ("ada", b"a2"), ("ben", b"b1")):
        _add(q, student, body=body)
        (job,) = q.claim(["inference-capacity"], "s/1", 1, 30)
        q.done(job, "s/1", "graded", 1.0, 2.0, None, "{}")
    latest = {j.student: j for j in q.recent(("done",)) if j.sha256 in (  # ada's second and ben's only one
        hashlib.sha256(b"a2ada").hexdigest(), hashlib.sha256(b"b1ben").hexdigest())}
    assert q.regrade("inference-capacity", "r1") == 2
    _add(q, "cleo")  # a student's new submission, after the regrade was asked for: graded first
    order = q.claim(["inference-capacity"], "s/1", 3, 30)
    assert [j.student for j in order] == ["cleo", "ada", "ben"]
    for job in order[1:]:
        assert (job.priority, job.regrade, job.sha256, job.received_at) == (
            1, "r1", latest[job.student].sha256, latest[job.student].received_at)
    assert q.regrading("inference-capacity", "r1") == 2


def test_past_the_limit_of_graded_submissions_a_file_is_saved_and_waiting_does_not_help(service: Any) -> None:
    batching = NOTEBOOK.parent.parent / "dynamic-batching" / "ada.ipynb"
    assert service.post("/api/submissions?lesson=dynamic-batching", content=batching.read_bytes(),
                        headers=_auth(service, "ada")).status_code == 202
    again = service.post("/api/submissions?lesson=dynamic-batching", content=batching.read_bytes() + b"\n",
                         headers=_auth(service, "ada"))
    assert again.status_code == 429 and "Retry-After" not in again.headers  # max_graded = 1: waiting does not help
    assert "all 1 graded submissions" in again.json()["error"]
    assert service.served.queue.get(again.json()["saved"]["id"]).state == "saved"
    # the grader's own failure gives the attempt back: the first job dies, and the next one is graded
    queue = service.served.queue
    for _ in range(jobs_module.TRIES):
        (job,) = queue.claim(["dynamic-batching"], "s/1", 1, 30)
        queue.failed(job, "s/1", "the kernel would not start")
        with queue.transaction() as db:  # the backoff, skipped
            db.execute("UPDATE jobs SET not_before=0 WHERE id=?", (job.id,))
    assert queue.get(job.id).state == "dead"
    third = service.post("/api/submissions?lesson=dynamic-batching", content=batching.read_bytes() + b"\n\n",
                         headers=_auth(service, "ada"))
    assert third.status_code == 202, third.text


def test_the_printed_receipt_names_every_field_and_the_whole_digest() -> None:
    from grader import client

    receipt = {"id": "a1b2", "sha256": "f" * 64, "received_at": "2026-12-06T08:00:00.000+00:00", "position": 3,
               "eta_s": 12.5}
    line = client.receipt_text(receipt)
    assert all(f"{key} " in line for key in receipt) and "f" * 64 in line and "\n" not in line


def test_the_outbox_keeps_one_waiting_grade_per_student_and_retries_a_refused_one_with_backoff(tmp_path: Path) -> None:
    from grader.service.lti.services import PASSBACK_TRIES, Outbox

    box = Outbox(tmp_path / "queue.sqlite")
    box.put("lab", "ada", "d1")
    box.put("lab", "ada", "d2")  # graded again before the first was sent: the newer one waits in its place
    box.put("lab", "ben", "b1")
    ada, ben = box.take("s/p", 10, 60)
    assert [(t.student, t.digest, t.tries) for t in (ada, ben)] == [("ada", "d2", 1), ("ben", "b1", 1)]
    box.settle(ada, "s/p", False, "the LMS answered 503")
    box.settle(ben, "s/p", True, "ben's grade sent to the LMS")
    assert box.take("s/p", 10, 60) == []  # ada's waits out its backoff (5 s)
    assert box.counts() == {"waiting": 1, "sent": 1}
    box.put("lab", "cleo", "c1")
    (dead,) = box.take("s/dead", 10, lease_s=-1)  # its sender died: the lease runs out, another sends it
    (cleo,) = box.take("s/q", 10, 60)
    assert (cleo.student, cleo.tries) == ("cleo", 2)
    box.settle(dead, "s/dead", True, "too late")  # the dead sender's word is not taken
    assert box.counts()["sending"] == 1
    for tries in range(2, PASSBACK_TRIES + 1):  # refused every time: kept as failed after the last try
        with box.transaction() as db:
            db.execute("UPDATE outbox SET not_before=0", ())
        (ada,) = [t for t in box.take("s/p", 10, 60) if t.student == "ada"]
        assert ada.tries == tries
        box.settle(ada, "s/p", False, "the LMS answered 503")
    assert box.counts()["failed"] == 1


def test_a_full_database_is_told_by_its_code_not_its_text(tmp_path: Path) -> None:
    import sqlite3

    import psycopg

    from grader.base import database

    connection = sqlite3.connect(tmp_path / "small.sqlite")
    connection.execute("CREATE TABLE t (x BLOB)")
    connection.execute("PRAGMA max_page_count = 8")  # a real SQLite that runs out of room after a few pages
    with pytest.raises(sqlite3.OperationalError) as full:
        for _ in range(64):
            connection.execute("INSERT INTO t VALUES (?)", (b"x" * 4096,))
    assert database.disk_full(full.value)
    with pytest.raises(sqlite3.OperationalError) as other:
        connection.execute("INSERT INTO missing VALUES (1)")
    assert not database.disk_full(other.value)
    assert not database.disk_full(sqlite3.OperationalError("the disk is full, says a student's file name"))
    assert database.disk_full(psycopg.errors.DiskFull("could not extend file"))
    assert not database.disk_full(psycopg.errors.UniqueViolation("duplicate key"))
    connection.close()


def test_grader_submit_says_how_many_graded_submissions_are_used_and_when_to_submit_again(service: Any,
                                                                                         tmp_path: Path) -> None:
    """The real CLI against the service on loopback: the receipt says "1 of 1 used" (dynamic-batching's
    max_graded = 1 in this course), a second graded try is refused saying all are used, and inside a cooldown the
    reason says once when to submit again and that the kept copy is not graded."""
    import subprocess
    import sys

    def submit(lesson: str, path: Path, who: str = "ada") -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "grader", "submit", str(path), "--lesson", lesson, "--server",
                               str(service.base_url), "--token", service.tokens[who]], capture_output=True,
                              text=True, timeout=120)

    batching = NOTEBOOK.parent.parent / "dynamic-batching" / "ada.ipynb"
    first = submit("dynamic-batching", batching)
    assert first.returncode == 0 and first.stdout.splitlines()[-1] == "graded submissions: 1 of 1 used", first.stdout
    copy = tmp_path / "again.ipynb"
    copy.write_bytes(batching.read_bytes() + b"\n")
    refused = submit("dynamic-batching", copy)
    assert refused.returncode == 2 and refused.stderr.strip().endswith(
        "all 1 graded submissions of dynamic-batching are used (graded submissions: 1 of 1 used)"), refused.stderr
    assert submit("inference-capacity", NOTEBOOK, "ben").stdout.splitlines()[-1] == "graded submissions: 1 used"
    second = tmp_path / "v2.ipynb"
    second.write_bytes(NOTEBOOK.read_bytes() + b" ")
    wait = submit("inference-capacity", second, "ben")  # inside the 10-minute cooldown
    said = wait.stderr.strip()
    assert wait.returncode == 2 and "this copy is kept but not graded; submit again in" in said
    assert len(re.findall(r"\d+ s\b", said)) == 1 and said.endswith("(graded submissions: 1 used)"), said


def test_what_grader_submit_returns_shows_as_one_line_where_a_notebook_displays_it() -> None:
    """The receipt and the feedback are printed above; the cell's value (saved into the notebook) is one line, not
    the whole state (about 150 lines before), as IPython's own formatter, which a kernel uses, renders it."""
    from IPython.core.formatters import DisplayFormatter

    from grader import client

    exercises = [{"id": f"ex{i}", "status": "passed", "public": [{"label": "x", "outcome": "passed"}] * 5}
                 for i in range(12)]
    sent = client.Sent(receipt={"id": "ab12", "sha256": "0" * 64}, state={"status": "done", "score": 9.0,
                                                                           "max_score": 12.0, "exercises": exercises})
    shown, _ = DisplayFormatter().format(sent)
    assert shown["text/plain"] == "<submission ab12: done, 9 of 12>"
    assert shown["text/html"] == "<code>submission ab12: done, 9 of 12</code>"
    assert sent["state"]["exercises"][11]["id"] == "ex11"  # still the dict it was, for code that reads it
    assert repr(client.Sent(receipt={"id": "cd34"})) == "<submission cd34: received>"


def test_the_clis_receipt_gives_its_moment_in_the_students_own_time(monkeypatch: pytest.MonkeyPatch) -> None:
    import time as clock

    from grader import client

    monkeypatch.setenv("TZ", "Europe/Berlin")
    clock.tzset()
    try:
        said = client.receipt_text({"id": "ab12", "sha256": "0" * 64, "received_at": "2026-12-07T13:00:00.250+00:00",
                                    "position": 1, "eta_s": 10.0})
    finally:
        monkeypatch.undo()
        clock.tzset()
    assert "received_at 2026-12-07T13:00:00.250+00:00 (2026-12-07 14:00:00 CET, your time)" in said  # UTC+1 in December


def test_the_student_page_asks_which_lesson_and_knows_the_courses_time_zone(service: Any) -> None:
    """Several lessons served: none is picked for the student (a handout names its own; the page asks otherwise),
    and the page has the course's zone to show each moment in it beside the reader's own."""
    page = service.get("/").text
    assert '<select id="lesson"><option value="" selected>choose the lesson</option>' in page
    assert '<body data-zone="UTC">' in page and 'data-due=""' in page  # this course sets no due date
    assert "choose the lesson this file is for first" in page


def test_a_cold_lessons_first_estimate_counts_its_hosts_start(tmp_path: Path) -> None:
    """No grade yet, no host running: the estimate is the host's start (15 s before one was measured, then the
    measured one) plus a grade (10 s before one is timed); with a host running, no start is counted."""
    from grader.service import jobs

    q = jobs.Queue(tmp_path / "q.sqlite")
    _, first = q.add("inference-capacity", "ada", "a" * 64, "hw.ipynb", b"x", "2026-12-06T00:00:00+00:00", True, 2)
    assert first.eta_s == 15.0 + 10.0  # position 1 of 2 workers: one round
    jobs.started(q, "inference-capacity", 7.5)
    _, second = q.add("inference-capacity", "ben", "b" * 64, "hw.ipynb", b"y", "2026-12-06T00:00:01+00:00", True, 2)
    assert second.eta_s == 7.5 + 10.0
    assert q.claim(["inference-capacity"], "here", 1, 30)  # a host runs now: the next grade waits for no start
    _, third = q.add("inference-capacity", "cleo", "c" * 64, "hw.ipynb", b"z", "2026-12-06T00:00:02+00:00", True, 2)
    assert third.eta_s == 10.0
