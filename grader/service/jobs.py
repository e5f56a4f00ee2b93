"""The submission service's durable queue: every submission a row, every move of it one transaction.

    saved -> queued -> running -> done                  a grade recorded (or the file's own rejection)
                              \\-> queued (backoff) -> dead   the grader's own failures: retried, then shown to
                                                            the instructor with a rerun
              queued -> superseded                      a newer submission of the same student and lesson came
    saved                                               taken in the cooldown or past the limit: kept, not graded

Embedded by default (SQLite in WAL mode, in the course's private folder);
`postgresql://...` lets several servers share one queue, claiming with
`FOR UPDATE SKIP LOCKED`. A claim holds a lease that its server renews; a
lease that runs out (the server or its worker died) puts the job back in the
queue. The order is fair: low priority (regrades) last, then each student's
turn (a student with work queued or running waits behind those without),
then arrival. A student's second job of one lesson never runs beside the
first, so their latest result is always the latest submission's. Each claim
counts a fencing token (`fence`): only the current lease's holder records.
Beside the jobs, the outbox holds the grades waiting for the LMS (lti/services.py: Outbox).
"""

from __future__ import annotations

import secrets
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from grader.base import database
from grader.base.errors import GraderError

STATES = ("saved", "queued", "running", "done", "failed", "dead", "superseded")
SHOWN = {"saved": "saved", "queued": "queued", "running": "running", "done": "done", "failed": "failed",
         "dead": "failed", "superseded": "failed"}
"""What a student's client is told of each state (the contract's four, and `saved` for a submission not graded)."""
TRIES = 3
"""Tries of a job whose grading failed for the grader's own reasons, before it is dead."""
BACKOFF_S = 5.0
"""The wait before the second try; doubled before each later one."""
_COLUMNS = ("id", "lesson", "student", "sha256", "name", "received_at", "received", "state", "priority", "turn",
            "tries", "not_before", "lease_until", "worker", "pid", "started", "finished", "status", "score",
            "max_score", "error", "superseded_by", "feedback", "regrade", "origin", "fence")


@dataclass(frozen=True)
class Job:
    """One submission as the queue holds it."""

    id: str
    lesson: str
    student: str
    sha256: str
    name: str
    received_at: str
    """When the server received it (UTC, ISO 8601): the time lateness is counted from."""
    received: float
    state: str
    priority: int = 0
    turn: int = 0
    tries: int = 0
    not_before: float = 0.0
    lease_until: float | None = None
    worker: str | None = None
    pid: int | None = None
    started: float | None = None
    finished: float | None = None
    status: str | None = None
    """The grade's status once done (`graded`, or `rejected` for a file the grader could not grade)."""
    score: float | None = None
    max_score: float | None = None
    error: str | None = None
    superseded_by: str | None = None
    feedback: str | None = None
    """The verdicts as JSON (feedback.verdicts), filtered by the course's policy when shown."""
    regrade: str | None = None
    """The gradebook's regrade this job belongs to (low priority, the recorded seeds), or None."""
    origin: str | None = None
    """A regrade's job: the submission it grades again (whose receipt the result keeps)."""
    fence: int = 0
    """Counts the job's claims: the fencing token of its current lease (only its holder writes the job's files)."""


@dataclass(frozen=True)
class Arrival:
    """A submission as it arrived, before it is kept: whose, of which lesson, its bytes, and when."""

    lesson: str
    student: str
    sha256: str
    name: str
    body: bytes
    received_at: str
    received: float


_GRADED_SINCE = ("SELECT COUNT(*), MAX(received) FROM jobs WHERE lesson=? AND student=? AND priority=0 AND "
                 "state IN ('queued', 'running', 'done')")
"""A student's graded submissions of a lesson that count against its limit, and when the latest was received:
queued, running and done ones; the grader's failures and superseded ones never count."""


@dataclass(frozen=True)
class Receipt:
    """What the server answers on receiving a submission (the contract's receipt)."""

    id: str
    sha256: str
    received_at: str
    position: int
    eta_s: float

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "sha256": self.sha256, "received_at": self.received_at, "position": self.position,
                "eta_s": self.eta_s}


_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS uploads (sha256 TEXT PRIMARY KEY, body {blob} NOT NULL)",
    "CREATE TABLE IF NOT EXISTS jobs (id TEXT PRIMARY KEY, lesson TEXT NOT NULL, student TEXT NOT NULL,"
    " sha256 TEXT NOT NULL, name TEXT NOT NULL, received_at TEXT NOT NULL, received DOUBLE PRECISION NOT NULL,"
    " state TEXT NOT NULL, priority INTEGER NOT NULL DEFAULT 0, turn INTEGER NOT NULL DEFAULT 0,"
    " tries INTEGER NOT NULL DEFAULT 0, not_before DOUBLE PRECISION NOT NULL DEFAULT 0,"
    " lease_until DOUBLE PRECISION, worker TEXT, pid INTEGER, started DOUBLE PRECISION, finished DOUBLE PRECISION,"
    " status TEXT, score DOUBLE PRECISION, max_score DOUBLE PRECISION, error TEXT, superseded_by TEXT, feedback TEXT,"
    " regrade TEXT, origin TEXT, fence BIGINT NOT NULL DEFAULT 0)",
    "CREATE TABLE IF NOT EXISTS outbox (id TEXT PRIMARY KEY, lesson TEXT NOT NULL, student TEXT NOT NULL,"
    " digest TEXT, state TEXT NOT NULL, tries INTEGER NOT NULL DEFAULT 0, not_before DOUBLE PRECISION NOT NULL"
    " DEFAULT 0, lease_until DOUBLE PRECISION, worker TEXT, said TEXT, made DOUBLE PRECISION NOT NULL)",
    "CREATE INDEX IF NOT EXISTS jobs_waiting ON jobs (lesson, state, priority, turn, received)",
    "CREATE INDEX IF NOT EXISTS jobs_student ON jobs (student, lesson, state)",
    database.Held.TABLE,
)


class Tables(database.Database):
    """The queue's connection, its tables made (and a queue of an earlier release given its new column)."""

    def __init__(self, where: str | Path) -> None:
        super().__init__(where, "queue")
        with self.schema() as db:
            for statement in _SCHEMA:
                db.execute(statement.format(blob="BYTEA" if self.postgres else "BLOB"))
            if "fence" not in self.columns(db, "jobs"):  # a queue made before the fencing token
                db.execute("ALTER TABLE jobs ADD COLUMN fence BIGINT NOT NULL DEFAULT 0")


class Queue(Tables):
    """The job table: a submission's every move is one transaction."""

    # -- receiving --------------------------------------------------------------------------------------------
    def add(self, lesson: str, student: str, sha256: str, name: str, body: bytes, received_at: str,
            graded: bool, jobs: int = 1, priority: int = 0) -> tuple[Job, Receipt]:
        """Keep one submission (see `take`), graded or only saved as `graded` says; its row and its receipt."""
        arrival = Arrival(lesson, student, sha256, name, body, received_at, time.time())
        receipt = self.take([arrival], lambda *_: graded, jobs, priority)[0]
        job = self.get(receipt.id)
        assert job is not None
        return job, receipt

    def take(self, arrivals: Sequence[Arrival], admit: Callable[[Arrival, int, float | None], bool], jobs: int,
             priority: int = 0) -> list[Receipt]:
        """Keep every arrival in one transaction, in order (one durable write for all that arrived together): its
        bytes by digest, its row `queued` (a queued one of the same student and lesson superseded), or `saved` where
        `admit` (given the student's graded submissions so far, this batch's included, and the latest's receive
        time) says it is not graded now; a receipt each."""
        with self.transaction() as db:
            kept = [_kept(db, a, priority, admit) for a in arrivals]
        typical = {lesson: self._typical(lesson) for lesson in {a.lesson for a in arrivals}}
        return [Receipt(job_id, a.sha256, a.received_at, position, _eta(*typical[a.lesson], position, jobs))
                for a, (job_id, position) in zip(arrivals, kept)]

    def regrade(self, lesson: str, regrade: str) -> int:
        """Every student's latest graded submission of the lesson queued again at low priority, as part of the
        gradebook's regrade `regrade` (its receive time kept: lateness does not move); how many."""
        now = time.time()
        with self.transaction() as db:
            latest: dict[str, tuple[Any, ...]] = {}
            for row in db.all("SELECT student, sha256, name, received_at, received, id FROM jobs WHERE lesson=? AND "
                              "state='done' AND priority=0 ORDER BY received", (lesson,)):
                latest[row[0]] = row
            for student, sha256, name, received_at, received, origin in latest.values():
                db.execute("UPDATE jobs SET state='superseded', superseded_by='regrade' WHERE lesson=? AND student=? "
                           "AND state='queued' AND priority=1", (lesson, student))
                db.execute("INSERT INTO jobs (id, lesson, student, sha256, name, received_at, received, state, "
                           "priority, turn, not_before, regrade, origin) VALUES (?, ?, ?, ?, ?, ?, ?, 'queued', 1, 0, "
                           "?, ?, ?)", (secrets.token_hex(8), lesson, student, sha256, name, received_at, received,
                                        now, regrade, origin))
        return len(latest)

    def regrading(self, lesson: str, regrade: str) -> int:
        """Jobs of this regrade not finished yet."""
        with self.transaction() as db:
            return int(db.one("SELECT COUNT(*) FROM jobs WHERE lesson=? AND regrade=? AND state IN ('queued', "
                              "'running')", (lesson, regrade))[0])

    def body(self, sha256: str) -> bytes:
        """The bytes a submission was received as."""
        with self.transaction() as db:
            row = db.one("SELECT body FROM uploads WHERE sha256=?", (sha256,))
        if row is None:
            raise GraderError(f"no upload with digest {sha256[:12]}")
        return bytes(row[0])

    # -- reading ----------------------------------------------------------------------------------------------
    def get(self, job_id: str) -> Job | None:
        with self.transaction() as db:
            row = db.one(f"SELECT {', '.join(_COLUMNS)} FROM jobs WHERE id=?", (job_id,))
        return Job(*row) if row else None

    def of_student(self, student: str, lesson: str | None = None, limit: int = 200) -> list[Job]:
        """A student's submissions, newest first."""
        return self._select("student=?" + (" AND lesson=?" if lesson else ""),
                            (student, lesson) if lesson else (student,), limit)

    def recent(self, states: Sequence[str], limit: int = 200) -> list[Job]:
        """The newest submissions in these states."""
        marks = ", ".join("?" * len(states))
        return self._select(f"state IN ({marks})", tuple(states), limit)

    def _select(self, where: str, params: tuple[Any, ...], limit: int) -> list[Job]:
        with self.transaction() as db:
            rows = db.all(f"SELECT {', '.join(_COLUMNS)} FROM jobs WHERE {where} ORDER BY received DESC LIMIT ?",
                          (*params, limit))
        return [Job(*row) for row in rows]

    def waiting(self) -> set[str]:
        """The lessons with a job queued."""
        with self.transaction() as db:
            return {str(row[0]) for row in db.all("SELECT DISTINCT lesson FROM jobs WHERE state='queued'", ())}

    def graded_since(self, lesson: str, student: str) -> tuple[int, float | None]:
        """(graded submissions that count against the limit, when the latest of them was received): queued,
        running and done ones; the grader's failures and superseded ones never count."""
        with self.transaction() as db:
            count, last = db.one(_GRADED_SINCE, (lesson, student))
        return int(count), last

    def counts(self) -> dict[str, int]:
        with self.transaction() as db:
            rows = db.all("SELECT state, COUNT(*) FROM jobs GROUP BY state", ())
        return dict.fromkeys(STATES, 0) | {str(state): int(n) for state, n in rows}

    def durations(self, lesson: str | None = None, last: int = 200) -> tuple[list[float], list[float]]:
        """(seconds waiting in the queue, seconds grading) of the latest finished grades."""
        with self.transaction() as db:
            rows = db.all("SELECT started - received, finished - started FROM jobs WHERE state='done' AND "
                          "started IS NOT NULL" + (" AND lesson=?" if lesson else "") + " ORDER BY finished DESC "
                          "LIMIT ?", ((lesson, last) if lesson else (last,)))
        return [max(0.0, r[0]) for r in rows], [max(0.0, r[1]) for r in rows]

    def eta(self, lesson: str, position: int, jobs: int) -> float:
        """Seconds until a job at this position is graded, from the median of recent grades (10 s before any)."""
        return _eta(*self._typical(lesson), position, jobs)

    def _typical(self, lesson: str) -> tuple[float, float]:
        """(the median of the lesson's recent grades, the seconds its host needs to start first, where none runs)."""
        _, grading = self.durations(lesson, 50)
        with self.transaction() as db:
            warming = _warming(db, lesson)
        return statistics.median(grading) if grading else 10.0, warming

    # -- grading ----------------------------------------------------------------------------------------------
    def claim(self, lessons: Sequence[str], worker: str, n: int, lease_s: float) -> list[Job]:
        """Up to `n` queued jobs of these lessons for `worker`, in the fair order, each leased for `lease_s`."""
        if n <= 0 or not lessons:
            return []
        now = time.time()
        marks = ", ".join("?" * len(lessons))
        pick = (f"SELECT id, lesson, student FROM jobs WHERE state='queued' AND lesson IN ({marks}) AND not_before <= ?"
                " AND NOT EXISTS (SELECT 1 FROM jobs r WHERE r.state='running' AND r.lesson=jobs.lesson AND "
                "r.student=jobs.student) ORDER BY priority, turn, received LIMIT ?"
                + (" FOR UPDATE SKIP LOCKED" if self.postgres else ""))
        taken: list[str] = []
        with self.transaction() as db:
            seen: set[tuple[str, str]] = set()
            for job_id, lesson, student in db.all(pick, (*lessons, now, n * 4)):
                if (lesson, student) in seen or len(taken) == n:
                    continue  # one job per student and lesson at a time, even within one claim
                seen.add((lesson, student))
                db.execute("UPDATE jobs SET state='running', worker=?, pid=NULL, lease_until=?, started=?, "
                           "tries=tries+1, fence=fence+1 WHERE id=? AND state='queued'",
                           (worker, now + lease_s, now, job_id))
                taken.append(job_id)
        return [job for job in (self.get(i) for i in taken) if job is not None]

    def renew(self, worker: str, lease_s: float) -> None:
        """The heartbeat: every job `worker` holds is leased again."""
        with self.transaction() as db:
            db.execute("UPDATE jobs SET lease_until=? WHERE worker=? AND state='running'", (time.time() + lease_s, worker))

    def holds(self, job: Job, worker: str, lease_s: float) -> bool:
        """Whether `worker` still holds the job's current lease (the fencing token it claimed it with), its lease
        renewed in the same transaction so that nobody can take the job while its files are written. False for a
        holder that stalled past its lease while another server graded the job: it must write nothing."""
        with self.transaction() as db:
            n = db.execute("UPDATE jobs SET lease_until=? WHERE id=? AND state='running' AND worker=? AND fence=?",
                           (time.time() + lease_s, job.id, worker, job.fence))
        return n == 1

    def running_on(self, job_id: str, pid: int) -> None:
        """Which process grades the job (shown to the instructor)."""
        with self.transaction() as db:
            db.execute("UPDATE jobs SET pid=? WHERE id=? AND state='running'", (pid, job_id))

    def reap(self) -> int:
        """Jobs whose lease ran out (their server or worker died) go back to the queue, or are dead after TRIES."""
        now = time.time()
        with self.transaction() as db:
            expired = db.all("SELECT id, tries FROM jobs WHERE state='running' AND lease_until < ?"
                             + (" FOR UPDATE SKIP LOCKED" if self.postgres else ""), (now,))
            for job_id, tries in expired:
                _retry(db, job_id, tries, "its grading stopped (the server or its worker died)", now)
        return len(expired)

    def failed(self, job: Job, worker: str, why: str) -> None:
        """The grader failed on this job (not the student): try again after a backoff, or dead after TRIES."""
        with self.transaction() as db:
            row = db.one("SELECT tries FROM jobs WHERE id=? AND state='running' AND worker=?", (job.id, worker))
            if row is not None:
                _retry(db, job.id, row[0], why, time.time())

    def done(self, job: Job, worker: str, status: str, score: float, max_score: float, error: str | None,
             feedback: str) -> bool:
        """The job's grade is recorded; False when this worker no longer held it (its lease ran out and another
        took it: that one finishes it)."""
        with self.transaction() as db:
            n = db.execute("UPDATE jobs SET state='done', finished=?, status=?, score=?, max_score=?, error=?, "
                           "feedback=?, lease_until=NULL WHERE id=? AND state='running' AND worker=? AND fence=?",
                           (time.time(), status, score, max_score, error, feedback, job.id, worker, job.fence))
        return n == 1

    def rerun(self, job_id: str) -> Job | None:
        """The instructor's rerun of a dead or failed job: queued again, its tries reset."""
        with self.transaction() as db:
            db.execute("UPDATE jobs SET state='queued', tries=0, not_before=0, error=NULL, worker=NULL WHERE id=? "
                       "AND state IN ('dead', 'failed')", (job_id,))
        return self.get(job_id)

    def release(self, server: str) -> None:
        """A server stopping cleanly hands its running jobs back at once (tries not counted)."""
        prefix = server + "/"
        with self.transaction() as db:
            db.execute("UPDATE jobs SET state='queued', worker=NULL, pid=NULL, lease_until=NULL, tries=tries-1 "
                       "WHERE substr(worker, 1, ?)=? AND state='running'", (len(prefix), prefix))


def _kept(db: database.Cursor, a: Arrival, priority: int, admit: Callable[[Arrival, int, float | None], bool]) -> tuple[str, int]:
    """(its row's id, its place in the lesson's queue) of one arrival, kept in the transaction `db`."""
    count, last = db.one(_GRADED_SINCE, (a.lesson, a.student))
    graded, job_id = admit(a, int(count), last), secrets.token_hex(8)
    db.execute("INSERT INTO uploads (sha256, body) VALUES (?, ?) ON CONFLICT (sha256) DO NOTHING", (a.sha256, a.body))
    turn = 0
    if graded:
        db.execute("UPDATE jobs SET state='superseded', superseded_by=? WHERE lesson=? AND student=? AND "
                   "state='queued' AND priority=?", (job_id, a.lesson, a.student, priority))
        turn = db.one("SELECT COUNT(*) FROM jobs WHERE student=? AND state IN ('queued', 'running')", (a.student,))[0]
    db.execute(f"INSERT INTO jobs (id, lesson, student, sha256, name, received_at, received, state, priority, turn) "
               f"VALUES ({', '.join('?' * 10)})", (job_id, a.lesson, a.student, a.sha256, a.name, a.received_at,
                                                   a.received, "queued" if graded else "saved", priority, turn))
    position = db.one("SELECT COUNT(*) FROM jobs WHERE lesson=? AND state='queued' AND (priority < ? OR "
                      "(priority = ? AND (turn < ? OR (turn = ? AND received <= ?))))",
                      (a.lesson, priority, priority, turn, turn, a.received))[0] if graded else 0
    return job_id, int(position)


def _eta(typical: float, warming: float, position: int, jobs: int) -> float:
    return round(warming + -(-max(1, position) // max(1, jobs)) * typical, 1)


HOST_IDLE_S = 300.0
"""A lesson host with nothing to grade for this long stops (the next submission starts it again)."""
COLD_START_S = 15.0
"""A lesson host's start (its warm template, the prepared lesson) before one was measured on this server."""


def started(queue: Queue, lesson: str, seconds: float) -> None:
    """A lesson host's start, measured: the next receipt of the lesson with no host running counts it in."""
    database.Held(queue).put("host-start", lesson, f"{seconds:.1f}", 30 * 86400)


def _warming(db: database.Cursor, lesson: str) -> float:
    """Seconds before the lesson's next grade can start where no host of it runs (no job of it ran or finished in
    HOST_IDLE_S): its host's last measured start (`started`), else COLD_START_S; else 0."""
    now = time.time()
    if db.one("SELECT COUNT(*) FROM jobs WHERE lesson=? AND (state='running' OR finished > ?)",
              (lesson, now - HOST_IDLE_S))[0]:
        return 0.0
    measured = db.one("SELECT value FROM held WHERE kind='host-start' AND key=?", (lesson,))
    return float(measured[0]) if measured else COLD_START_S


def _retry(db: database.Cursor, job_id: str, tries: int, why: str, now: float) -> None:
    """A job the grader failed on (not the student): queued again after a backoff, or dead after TRIES."""
    if tries >= TRIES:
        db.execute("UPDATE jobs SET state='dead', worker=NULL, error=?, finished=? WHERE id=?", (why[:500], now, job_id))
    else:
        db.execute("UPDATE jobs SET state='queued', worker=NULL, pid=NULL, lease_until=NULL, error=?, "
                   "not_before=? WHERE id=?", (why[:500], now + BACKOFF_S * 2 ** (tries - 1), job_id))
