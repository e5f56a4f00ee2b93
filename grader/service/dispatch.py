"""The service's grading side: claim queued jobs, grade them with the batch's engine, record each exactly once.

`grader serve` forks a supervisor before it starts serving HTTP; the supervisor
puts back jobs whose lease ran out (jobs.Queue.reap) and starts one lesson
host per lesson with work waiting. A lesson host does what a batch's parent
does (host.prepare: the warm template, the reference, the checks), then
forks its pool of workers and loops: claim what it has room for, grade each
claim in a worker (host.grade_one), renew its leases, and record each grade
into the lesson's batch folder (`OUT/<lesson>/`) before it marks the job done.
Only the holder of a job's current lease records it: a host that stalled past
its lease (stopped, swapped out) while another server graded the job finds its
fencing token stale at the write and drops its grade (jobs.Queue.holds).
A job whose digest the gradebook holds already (a server that died between
the two) is marked done without a second grade: a submission is graded into
the gradebook once. A worker that dies fails the pool: its jobs go back to the
queue (the grader's failure, never the student's) and a new pool is forked.
A host with nothing to do for IDLE_S stops, its template with it. A grade the
LMS should have (course.toml's `send_grades`) goes into the outbox, which a
process of its own beside the hosts sends (passback): the LMS never holds up a
host, whose leases would run out while it waited.
"""

from __future__ import annotations

import concurrent.futures as cf
import dataclasses
import logging
import multiprocessing
import os
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from grader.base.errors import GraderError
from grader.base.options import Options
from grader.classroom import batch, review_store
from grader.classroom.batch_folder import BatchFolder
from grader.classroom.host import LessonHost, grade_one
from grader.intake import roster as class_list
from grader.lesson import catalog, course, draw as drawing
from grader.lesson.draw import Draw, Given
from grader.report import finish
from grader.result import record, regrade as regrades, sign
from grader.result.parts import Submitted
from grader.service import policy
from grader.service.jobs import Job, Outbox, Passback, Queue

log = logging.getLogger(__name__)
"""The server's log (`grader serve` sets where it goes: stderr, one line a record)."""

IDLE_S = 300.0
"""A lesson host with nothing to grade for this long stops (the next submission starts it again)."""
CLASS_FILES_S = 120.0
"""grades.csv, the dashboard and similarity are rewritten whenever the lesson's queue empties, and at most this often
while it does not (they read every grade of the class)."""
PASSBACK_LEASE_S = 600.0
"""How long a grade being sent stays the sender's before another may send it (an LMS may take 120 s a call)."""
NICE = 5
"""The grading side's niceness (its kernels inherit it): the HTTP side, at the server's own, is served first."""


@dataclass(frozen=True, kw_only=True)
class Setup:
    """What the grading side of one server needs (picklable: it crosses a fork)."""

    database: str
    out: Path
    jobs: int
    options: Options
    lease_s: float = 30.0
    server: str = ""
    """This server's name in the queue (host and pid): which jobs it holds."""
    scheduler: str | None = None
    """The course's Dask cluster (`tls://`), with its certificates in `tls`: grades run there, not here."""
    tls: Path | None = None
    given: Given = Given()
    """What the command line fixes of every student's draw (`--seed`, `--hash-seed`)."""


def received(out: BatchFolder, job: Job, body: bytes) -> Path:
    """The submission's bytes as a file to grade, by digest (its name the one the student gave, made safe)."""
    path = out.received(job.sha256, job.name)
    if not path.is_file():
        from grader.base import files

        files.write_bytes(path, body)
    return path


def supervise(setup: Setup, lessons: tuple[str, ...]) -> None:
    """The supervisor's loop (a process of its own): reap expired leases, start a host per lesson with work."""
    batch.die_with_parent()
    os.nice(NICE)  # the HTTP side answers first: a receipt never waits behind a grade
    queue = Queue(setup.database)
    hosts: dict[str, Any] = {}
    sender: Any = None
    context = multiprocessing.get_context("fork")
    while True:
        if any(course.current().policy(lesson).submissions.send_grades for lesson in lessons) and (
                sender is None or not sender.is_alive()):
            if sender is not None:
                sender.join(0)
            sender = context.Process(target=passback, args=(setup,), name="grader-passback")
            sender.start()
        queue.reap()
        waiting = queue.waiting() & set(lessons)
        for lesson in waiting:
            host = hosts.get(lesson)
            if host is None or not host.is_alive():
                if host is not None:
                    host.join(0)
                hosts[lesson] = context.Process(target=host_lesson, args=(setup, lesson), name=f"grader-{lesson}")
                hosts[lesson].start()
        time.sleep(0.5)


def passback(setup: Setup) -> None:
    """The outbox's sender, a process of its own beside the lesson hosts: each waiting grade goes to the LMS (the
    student's latest recorded one), retried with a backoff; an LMS that takes 40 s a score delays no grade."""
    batch.die_with_parent()
    outbox = Outbox(setup.database)
    worker = f"{setup.server}/passback"
    while True:
        taken = outbox.take(worker, 4, PASSBACK_LEASE_S)
        for row in taken:
            done, said = _sent(setup, row)
            outbox.settle(row, worker, done, said)
            log.info("%s", said)
        if not taken:
            time.sleep(1.0)


def _sent(setup: Setup, row: Passback) -> tuple[bool, str]:
    from grader.service.lti import services as lti_services

    lesson = catalog.get(row.lesson)
    try:
        result, _ = BatchFolder(setup.out / row.lesson).recorded(row.student, row.lesson)
        return lti_services.send_one(result, lesson.id, lesson.title, lesson.max_score)
    except Exception as err:  # the grade stays recorded and is tried again; the sender goes on
        return False, f"{row.student}'s grade was not sent to the LMS ({type(err).__name__}: {str(err)[:200]})"


def host_lesson(setup: Setup, lesson_id: str) -> None:
    """One lesson's host: prepare once, then grade its queue until idle."""
    batch.die_with_parent()
    lesson = catalog.get(lesson_id)
    options = replace(setup.options, jobs_at_once=setup.jobs)
    given = replace(setup.given, hash_seed=drawing.batch_hash_seed_for(lesson.id, setup.given.hash_seed))
    _Host(setup, lesson, options, given).loop()


class _Host:
    def __init__(self, setup: Setup, lesson: catalog.Lesson, options: Options, given: Given) -> None:
        self.setup, self.lesson, self.options = setup, lesson, options
        self.queue = Queue(setup.database)
        self.out = BatchFolder(setup.out / lesson.id)
        self.out.make()
        self.out.claim()
        self.book = self.out.open_gradebook()  # the host's one connection: it records one job at a time
        # the lesson prepared (where grades run here), each student's draw, the one record, the class's files: as
        # `grader batch` does them (classroom/host.py); the course secret is read there, never by a worker
        self.host = LessonHost(lesson, self.out, self.book, options, given, grades_here=setup.scheduler is None)
        self.worker = f"{setup.server}/{lesson.id}"
        self.running: dict[cf.Future[finish.Graded], Job] = {}
        self.pool = self._pool()
        self.written = time.monotonic()
        self.dirty = False
        self.regrade_seen: tuple[str | None, dict[str, dict[str, Any]]] = (None, {})
        self.outbox: Outbox | None = None

    def _pool(self) -> cf.Executor:
        if self.setup.scheduler is not None:  # each job a task of the cluster, waited on by a thread here
            return cf.ThreadPoolExecutor(max_workers=self.setup.jobs)
        return cf.ProcessPoolExecutor(max_workers=self.setup.jobs, initializer=batch.die_with_parent)

    def loop(self) -> None:
        last_work = time.monotonic()
        renewed = 0.0
        while True:
            for job in self.queue.claim([self.lesson.id], self.worker, self.setup.jobs - len(self.running),
                                        self.setup.lease_s):
                self._start(job)
            if self.running:
                last_work = time.monotonic()
                done, _ = cf.wait(list(self.running), timeout=0.25, return_when=cf.FIRST_COMPLETED)
                for future in done:
                    self._finish(future, self.running.pop(future))
            else:
                self._class_files(idle=True)
                if time.monotonic() - last_work > IDLE_S:
                    return
                time.sleep(0.2)
            if time.monotonic() - renewed > self.setup.lease_s / 3:
                self.queue.renew(self.worker, self.setup.lease_s)
                renewed = time.monotonic()
            self._class_files(idle=False)

    def _start(self, job: Job) -> None:
        known = self.book.score_of(job.lesson, job.student, job.sha256, job.regrade)
        if known is not None:  # graded into the gradebook before its server died: never graded twice
            status, score, max_score, data = known
            self.queue.done(job, self.worker, status, score, max_score, data.error,
                            policy.verdicts(data))
            return
        path = received(self.out, job, self.queue.body(job.sha256))
        # the student's draw; a regrade's with the recorded seeds, as `grader batch --regrade` replays them
        run_as, chosen = self.host.drawn(job.student, self._recorded(job.regrade).get(job.student)
                                         if job.regrade is not None else None)
        if self.setup.scheduler is not None:
            future = self.pool.submit(_on_cluster, self.setup, path, self.lesson.id, run_as, job.student, chosen,
                                      self.host.draws.given.hash_seed or 0)
        else:
            future = self.pool.submit(_graded, self.setup.database, job.id, str(path), self.lesson.id, run_as,
                                      job.student, chosen)
        self.running[future] = job

    def _finish(self, future: cf.Future[finish.Graded], job: Job) -> None:
        try:
            graded = future.result()
        except cf.process.BrokenProcessPool:
            self._broken()
            self.queue.failed(job, self.worker, "a grading worker died")
            return
        except Exception as err:  # the grader's own failure: retried, never the student's attempt
            self.queue.failed(job, self.worker, f"{type(err).__name__}: {err}")
            return
        if (graded.result.error or "").startswith(record.INTERNAL_ERROR):
            self.queue.failed(job, self.worker, graded.result.error or "")
            return
        if not self.queue.holds(job, self.worker, self.setup.lease_s):  # the fencing token, checked at the write
            log.warning(f"submission {job.id} of {job.student} was graded here after its lease passed to "
                  "another server: this grade is dropped, the holder's is kept")
            return
        result = self._record(job, graded)
        self.queue.done(job, self.worker, result.status, result.score, result.max_score, result.error,
                        policy.verdicts(result))
        self.dirty = True
        if course.current().policy(self.lesson.id).submissions.send_grades and job.regrade is None:
            self.outbox = self.outbox or Outbox(self.setup.database)  # sent beside the grading (passback)
            self.outbox.put(self.lesson.id, job.student, result.digest)

    def _recorded(self, regrade: str) -> dict[str, dict[str, Any]]:
        """The results a regrade replays (read once per regrade; a seed whose signature fails is not replayed)."""
        if self.regrade_seen[0] != regrade:
            key = sign.signing_key()
            trusted, _ = regrades.trusted(self.book.recorded(self.lesson.id),
                                          key.public_key() if key is not None else None)
            self.regrade_seen = (regrade, trusted)
        return self.regrade_seen[1]

    def _broken(self) -> None:
        """A worker died: every job of the pool goes back to the queue, and a new pool is forked."""
        for other, job in list(self.running.items()):
            self.running.pop(other)
            self.queue.failed(job, self.worker, "a grading worker died")
        self.pool.shutdown(wait=False, cancel_futures=True)
        self.pool = self._pool()

    def _record(self, job: Job, graded: finish.Graded) -> Any:
        receipt = (("id", job.origin or job.id), ("sha256", job.sha256), ("received_at", job.received_at))
        arrived = Submitted("service", (job.name,), submitted_at=job.received_at, receipt=receipt)
        store = review_store.Store(self.out.review_store) if self.out.review_store.is_file() else None
        try:
            return self.host.record(job.student, self.out.received(job.sha256, job.name), graded, arrived,
                                    job.regrade, None, store).result
        finally:
            review_store.close(store)

    def _class_files(self, idle: bool) -> None:
        if not self.dirty or (not idle and time.monotonic() - self.written < CLASS_FILES_S):
            return
        self.dirty, self.written = False, time.monotonic()
        try:
            moved = self._regrade_done(self.book) if idle else None
            members = class_list.read(self.out.roster) if self.out.roster.is_file() else None
            self.host.class_files(members, moved)
            if moved is not None:  # changes.csv is written: the gradebook's regrade is finished
                self.book.finish_regrade(self.lesson.id)
                self.regrade_seen = (None, {})
        except (OSError, GraderError) as err:  # the class's files wait for the next grade; the grades are kept
            log.warning(f"the class files of {self.lesson.id} were not rewritten ({err})")

    def _regrade_done(self, book: Any) -> Any:
        """Who a regrade whose every job is done moved (None while it runs, or without one)."""
        regrade = self.regrade_seen[0]
        if regrade is None or self.queue.regrading(self.lesson.id, regrade):
            return None
        return regrades.changes(book.changed_by(self.lesson.id, regrade))


def _on_cluster(setup: Setup, path: Path, lesson_id: str, options: Options, student: str, chosen: Draw,
                hash_seed: int) -> finish.Graded:
    """One job graded on the course's Dask cluster (classroom/cluster.py), as a batch's would be."""
    from grader.classroom import cluster

    assert setup.scheduler is not None
    for _, graded in cluster.results(setup.scheduler, [(path, student)], lesson_id, options,
                                     {student: (options, chosen)}, hash_seed, setup.tls):
        return graded
    raise GraderError("the cluster returned no result")


_WORKER_QUEUE: list[Queue] = []


def _graded(database: str, job_id: str, path: str, lesson_id: str, options: Options, student: str,
            chosen: Draw) -> finish.Graded:
    """A pool worker's task: say which process grades the job, then grade it as a batch's worker does."""
    try:
        if not _WORKER_QUEUE:
            _WORKER_QUEUE.append(Queue(database))
        _WORKER_QUEUE[0].running_on(job_id, os.getpid())
    except GraderError:
        pass  # shown to the instructor only; the grade goes on
    graded = grade_one(path, lesson_id, options, student, chosen)
    return dataclasses.replace(graded, worker={})
