"""The service's grading side: claim queued jobs, grade them with the batch's engine, record each exactly once.

`grader serve` forks a supervisor before it starts serving HTTP; the supervisor
puts back jobs whose lease ran out (jobs.Queue.reap) and starts one lesson
host per lesson with work waiting. A lesson host does what a batch's parent
does (workers.prepare: the warm template, the prepared lesson), then
forks its pool of workers and loops: claim what it has room for, grade each
claim in a worker (workers.grade_one), renew its leases, and record each grade
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
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from grader.base.errors import GraderError
from grader.base.options import Options
from grader.classroom import batch_folder, host as hosting, workers
from grader.classroom.batch_folder import BatchFolder, keep_received
from grader.lesson import catalog, course
from grader.lesson.draw import Draw, Given
from grader.report.finish import Graded
from grader.service import jobs, policy
from grader.service.jobs import HOST_IDLE_S, Job, Queue
from grader.service.lti.services import Outbox, Passback, send_one

log = logging.getLogger(__name__)
"""The server's log (`grader serve` sets where it goes: stderr, one line a record)."""

IDLE_S = HOST_IDLE_S
CLASS_FILES_S = 120.0
"""grades.csv, the dashboard and similarity are rewritten whenever the lesson's queue empties, and at most this often
while it does not (they read every grade of the class)."""
PASSBACK_LEASE_S = 600.0
"""How long a grade being sent stays the sender's before another may send it (an LMS may take 120 s a call)."""
NICE = 19
"""The grading side's niceness (its kernels inherit it): the HTTP side, at the server's own, is served first. The
lowest priority costs a grade nothing while the HTTP side is idle (a niceness only weighs processes that want the
same core); in a deadline burst on 2 cores, nice 5 left receipts at p99 243-304 ms where 19 gives 184-219 ms."""


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


def supervise(setup: Setup, lessons: tuple[str, ...], parent: int | None = None) -> None:
    """The supervisor's loop (a process of its own): reap expired leases, start a host per lesson with work."""
    workers.die_with_parent(parent)
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
            sender = context.Process(target=passback, args=(setup, os.getpid()), name="grader-passback")
            sender.start()
        queue.reap()
        waiting = queue.waiting() & set(lessons)
        for lesson in waiting:
            host = hosts.get(lesson)
            if host is None or not host.is_alive():
                if host is not None:
                    host.join(0)
                hosts[lesson] = context.Process(target=host_lesson, args=(setup, lesson, os.getpid()),
                                                name=f"grader-{lesson}")
                hosts[lesson].start()
        time.sleep(0.5)


def passback(setup: Setup, parent: int | None = None) -> None:
    """The outbox's sender, a process of its own beside the lesson hosts: each waiting grade goes to the LMS (the
    student's latest recorded one), retried with a backoff; an LMS that takes 40 s a score delays no grade."""
    workers.die_with_parent(parent)
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
    lesson = catalog.get(row.lesson)
    try:
        result, _ = BatchFolder(setup.out / row.lesson).recorded(row.student, row.lesson)
        return send_one(result, lesson.id, lesson.title, lesson.max_score)
    except Exception as err:  # the grade stays recorded and is tried again; the sender goes on
        return False, f"{row.student}'s grade was not sent to the LMS ({type(err).__name__}: {str(err)[:200]})"


def host_lesson(setup: Setup, lesson_id: str, parent: int | None = None) -> None:
    """One lesson's host: prepare once, then grade its queue until idle."""
    workers.die_with_parent(parent)
    _Host(setup, lesson_id).loop()


class _Host:
    def __init__(self, setup: Setup, lesson_id: str) -> None:
        self.setup = setup
        self.queue = Queue(setup.database)
        self.out = BatchFolder(setup.out / lesson_id)
        self.out.make()
        batch_folder.claim(self.out)
        batch_folder.keep_in(self.out, setup.database)  # several servers: the grades in their database, never in --out
        # the lesson prepared (where grades run here), each student's draw, the one record, the class's files: as
        # `grader batch` does them (classroom/host.py); the course secret is read there, never by a worker. The
        # gradebook connection is the host's one: it records one job at a time.
        began = time.monotonic()
        self.host = hosting.LessonHost.serving(lesson_id, self.out, setup.options, setup.jobs, setup.given,
                                               grades_here=setup.scheduler is None)
        # how long a start takes here: the first receipt of a cold lesson counts it in its estimate (jobs._warming)
        jobs.started(self.queue, lesson_id, time.monotonic() - began)
        self.lesson = self.host.lesson
        self.worker = f"{setup.server}/{lesson_id}"
        self.running: dict[cf.Future[Graded], Job] = {}
        self.pool = workers.pool(setup.jobs, setup.scheduler)
        self.written = time.monotonic()
        self.dirty = False
        self.outbox: Outbox | None = None

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
        known = self.host.book.score_of(job.lesson, job.student, job.sha256, job.regrade)
        if known is not None:  # graded into the gradebook before its server died: never graded twice
            status, score, max_score, data = known
            self.queue.done(job, self.worker, status, score, max_score, data.error,
                            policy.verdicts(data))
            return
        path = keep_received(self.out, job.sha256, job.name, self.queue.body(job.sha256))
        # the student's draw; a regrade's with the recorded seeds, as `grader batch --regrade` replays them
        run_as, chosen = self.host.drawn(job.student, self.host.replayed(job.regrade).get(job.student)
                                         if job.regrade is not None else None)
        if self.setup.scheduler is not None:
            future = self.pool.submit(workers.one_on_cluster, self.setup.scheduler, self.setup.tls, path,
                                      self.lesson.id, run_as, job.student, chosen, self.host.draws.given.hash_seed or 0)
        else:
            future = self.pool.submit(_graded, self.setup.database, job.id, str(path), self.lesson.id, run_as,
                                      job.student, chosen)
        self.running[future] = job

    def _finish(self, future: cf.Future[Graded], job: Job) -> None:
        try:
            graded = future.result()
        except cf.process.BrokenProcessPool:
            self._broken()
            self.queue.failed(job, self.worker, "a grading worker died")
            return
        except Exception as err:  # the grader's own failure: retried, never the student's attempt
            self.queue.failed(job, self.worker, f"{type(err).__name__}: {err}")
            return
        if graded.grader_failed:
            self.queue.failed(job, self.worker, graded.result.error or "")
            return
        if not self.queue.holds(job, self.worker, self.setup.lease_s):  # the fencing token, checked at the write
            log.warning(f"submission {job.id} of {job.student} was graded here after its lease passed to "
                  "another server: this grade is dropped, the holder's is kept")
            return
        receipt = (("id", job.origin or job.id), ("sha256", job.sha256), ("received_at", job.received_at))
        with self.host.decisions() as store:
            result = self.host.record(job.student, self.out.received(job.sha256, job.name), graded,
                                      hosting.served(job.name, job.received_at, receipt), job.regrade, None,
                                      store).result
        self.queue.done(job, self.worker, result.status, result.score, result.max_score, result.error,
                        policy.verdicts(result))
        self.dirty = True
        if self.host.sends_grades and job.regrade is None:
            self.outbox = self.outbox or Outbox(self.setup.database)  # sent beside the grading (passback)
            self.outbox.put(self.lesson.id, job.student, result.digest, policy.scores_shown_from(self.lesson.id))

    def _broken(self) -> None:
        """A worker died: every job of the pool goes back to the queue, and a new pool is forked."""
        for other, job in list(self.running.items()):
            self.running.pop(other)
            self.queue.failed(job, self.worker, "a grading worker died")
        self.pool.shutdown(wait=False, cancel_futures=True)
        self.pool = workers.pool(self.setup.jobs, self.setup.scheduler)

    def _class_files(self, idle: bool) -> None:
        if not self.dirty or (not idle and time.monotonic() - self.written < CLASS_FILES_S):
            return
        self.dirty, self.written = False, time.monotonic()
        try:
            regrade = self.host.replaying[0]
            done = idle and regrade is not None and not self.queue.regrading(self.lesson.id, regrade)
            self.host.class_done(self.host.kept_roster(), regrade if done else None, complete=done)
            if done:  # changes.csv is written: the gradebook's regrade is finished
                self.host.replaying = (None, {})
        except (OSError, GraderError) as err:  # the class's files wait for the next grade; the grades are kept
            log.warning(f"the class files of {self.lesson.id} were not rewritten ({err})")


_WORKER_QUEUE: list[Queue] = []


def _graded(database: str, job_id: str, path: str, lesson_id: str, options: Options, student: str,
            chosen: Draw) -> Graded:
    """A pool worker's task: say which process grades the job, then grade it as a batch's worker does."""
    try:
        if not _WORKER_QUEUE:
            _WORKER_QUEUE.append(Queue(database))
        _WORKER_QUEUE[0].running_on(job_id, os.getpid())
    except GraderError:
        pass  # shown to the instructor only; the grade goes on
    graded = workers.grade_one(path, lesson_id, options, student, chosen)
    return dataclasses.replace(graded, worker={})
