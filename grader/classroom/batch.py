"""Grade a folder of submissions in parallel; only the parent writes records.

Each submission is graded in a worker process (two jobs per core by default, fewer if memory is short). The parent
writes `results/<student>.json` and `reports/<student>.html` atomically, then the gradebook row; a submission already
in the gradebook with the same digest is skipped, so an interrupted batch resumes where it stopped. A submission that
cannot be graded becomes a `rejected` row.
"""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import ctypes
import gc
import itertools
import json
import multiprocessing
import os
import resource
import shutil
import signal
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from grader import grading
from grader.authoring import validate
from grader.base import files, host
from grader.base.errors import GraderError, SandboxUnavailable
from grader.base.options import Options
from grader.classroom import certs, review_join, review_store
from grader.classroom.batch_folder import BatchFolder, entry_digest
from grader.classroom.host import LessonHost, grade_one
from grader.intake import layouts, roster as class_list
from grader.kernel import devices
from grader.lesson import catalog, draw as drawing
from grader.lesson.draw import Draw, Given
from grader.report import finish, render_text
from grader.result import gradebook, record, regrade as regrades, sign
from grader.result.parts import Submitted
from grader.result.record import GradeResult


@dataclass(frozen=True)
class Summary:
    """What a batch did."""

    total: int
    """Submissions found."""
    skipped: int
    """Already recorded with the same digest (resumed)."""
    counts: dict[str, int] = field(default_factory=dict)
    """graded / rejected / with errors / with timeouts among those graded now."""
    seconds: float = 0.0
    """Wall time."""
    peak_mb: float = 0.0
    """Peak resident memory of this (parent) process."""
    named: dict[str, list[str]] = field(default_factory=dict)
    """Students behind each count: errors, timeouts, rejected, failures (of the grader), and with a roster
    `missing` (no submission) and `outside` (not on the roster)."""
    layout: str = "flat"
    """The layout the class arrived in (see layouts.LAYOUTS)."""
    ignored: tuple[str, ...] = ()
    """Files that are not submissions, and files that do not fit the layout (with why)."""
    names: dict[str, str] = field(default_factory=dict)
    """Each student's name where the roster or the layout gives one (shown beside the id)."""


@dataclass(frozen=True)
class Request:
    """What a batch is asked to do, as the CLI (or a test, or the service) builds it."""

    submissions: Path
    """The class's files: a folder or a .zip, in any of layouts.LAYOUTS."""
    lesson: str | catalog.Lesson
    """The lesson, as itself (the CLI looked it up once) or by its id."""
    out: Path
    """The batch folder (batch_folder.BatchFolder); rerunning into it resumes."""
    jobs: int | None = None
    options: Options = Options()
    scheduler: str | None = None
    """A Dask cluster's `tls://` address, with the course's certificates in `tls` (certs.py)."""
    tls: Path | None = None
    roster: Path | None = None
    regrade: bool = False
    """Grade every submission again, each with its recorded seeds (regrade.py), and say what changed."""
    force: bool = False
    """Regrade even where validate.before_regrade objects."""
    given: Given = Given()
    """What the command line fixes of every student's draw (`--seed`, and the template's `--hash-seed`)."""
    progress: bool = True
    began: float | None = None
    """When the command started (monotonic clock), so the summary's time counts its start-up too."""


def die_with_parent() -> None:
    """A worker's (or a service's grading process's) start: killed with its parent, deaf to a terminal's Ctrl-C."""
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    # The parent decides on Ctrl-C. A process group of its own keeps a terminal's Ctrl-C from the worker: ignoring
    # SIGINT is not enough, since nbclient installs a SIGINT handler of its own while a kernel runs and would shut
    # that kernel down under the grade.
    os.setpgid(0, 0)
    signal.signal(signal.SIGINT, signal.SIG_IGN)


@dataclass
class _Plan:
    """A batch decided before its first grade: what to grade, with which options, into which gradebook."""

    found: layouts.Class
    book: gradebook.Gradebook
    todo: list[layouts.Entry]
    clashes: list[layouts.Entry]
    skipped: list[str]
    """Students recorded already with the same digest: not graded again, their grade joined again."""
    jobs: int
    options: Options
    signing: bool
    regrading: str | None = None
    """The regrade under way (gradebook.Gradebook.start_regrade), or None."""
    per_student: dict[str, tuple[Options, Draw]] = field(default_factory=dict)
    """Each student's draw (their seeds, a regrade's recorded ones, and numbers), and how to run it (host.Draws)."""
    untrusted: list[str] = field(default_factory=list)
    """Students a regrade grades with freshly derived seeds: their recorded ones could not be trusted."""
    tls: Path | None = None
    """The course's cluster certificates (a `--scheduler` batch)."""
    hash_seed: int = 0
    """The template's hash seed: every kernel it forks has it (a regrade's student whose recorded one differs runs a
    kernel of their own)."""
    host: LessonHost | None = None
    """The lesson hosted for this class: each student's draw, the one record, the class's files."""


def _plan(folder: str | Path, lesson: catalog.Lesson, out: BatchFolder, jobs: int | None, options: Options,
          scheduler: str | None, regrade: bool, force: bool = False, given: Given = Given()) -> _Plan:
    found = layouts.read(folder, out.unpacked)
    out.make()
    signing = sign.signing_key() is not None  # checked now (a bad key stops the batch before any grade)
    book = out.open_gradebook()
    if regrade and not force:
        with _closed_if_refused(book):
            validate.before_regrade(lesson, book.recorded(lesson.id))
    regrading = book.start_regrade(lesson.id) if regrade else None
    key = sign.signing_key() if regrading else None
    recorded, untrusted = regrades.trusted(book.recorded(lesson.id) if regrading else {},
                                           key.public_key() if key is not None else None)
    todo, clashes, skipped = _sorted(found.entries, book, lesson.id, regrading)
    jobs = max(1, jobs or devices.default_jobs(options.device))
    if todo:
        refuse_without_isolation(options)
    # One hash seed for the whole batch: the warm template's interpreter fixes it for every kernel it forks
    # (a cluster's workers fork from templates of their own, cluster.TemplatePlugin, with this one too).
    hash_seed = drawing.batch_hash_seed_for(lesson.id, given.hash_seed, regrades.batch_hash_seed(recorded))
    given = replace(given, hash_seed=hash_seed)
    options = replace(options, jobs_at_once=min(jobs, max(1, len(todo))))
    host = LessonHost(lesson, out, book, options, given, grades_here=bool(todo) and scheduler is None)
    per_student = {e.student: host.drawn(e.student, recorded.get(e.student)) for e in todo}
    return _Plan(found, book, todo, clashes, skipped, jobs, options, signing, regrading, per_student,
                 [e.student for e in todo if e.student in untrusted], hash_seed=hash_seed, host=host)


def run(request: Request) -> Summary:
    """Grade every submission the request names into its batch folder; resumable (see Request)."""
    began = request.began if request.began is not None else time.monotonic()
    scheduler, roster = request.scheduler, request.roster
    if scheduler:
        certs.check_address(scheduler, request.tls)
    out = BatchFolder(Path(request.out))
    lesson = request.lesson if isinstance(request.lesson, catalog.Lesson) else catalog.get(request.lesson)
    members = class_list.read(roster) if roster else None
    with _removed_if_refused(out.root):
        out.claim()  # one course per batch folder
        plan = replace(_plan(request.submissions, lesson, out, request.jobs, request.options, scheduler,
                             request.regrade, request.force, request.given), tls=request.tls)
        if roster:  # kept beside the gradebook: an export finds it without --roster again
            files.write_bytes(out.roster, files.read_regular(roster, class_list.MAX_BYTES))
    counts = {"graded": 0, "rejected": 0}  # rejected includes grader failures; the rest are counted from `named`
    named: dict[str, list[str]] = {"errors": [], "timeouts": [], "rejected": [], "failures": [],
                                   "untrusted": plan.untrusted}
    bar = render_text.Progress(len(plan.todo) + len(plan.clashes)) if request.progress else None
    profile: list[dict[str, Any]] = []
    cpu_before, submitted = host.cpu_times(), time.monotonic()
    complete = False
    store = review_store.Store(out.review_store) if out.review_store.is_file() else None  # decisions a rerun keeps
    try:
        assert plan.host is not None
        for entry, graded in itertools.chain(_clash_results(plan.clashes, lesson.id), _results(plan, lesson.id, scheduler)):
            worker, storing = graded.worker, time.monotonic()
            done = plan.host.record(entry.student, entry.paths[0], graded, _submitted_as(plan.found.layout, entry, members),
                                    plan.regrading, members, store)
            profile.append({"student": entry.student, "record": round(time.monotonic() - storing, 3),
                            "worker": worker.get("pid"), **{k: round(worker[k] - submitted, 3) for k in ("start", "end")
                                                            if k in worker},
                            **dict(done.result.run.timings if done.result.run else ())})
            _tally(counts, named, entry.student, done.result)
            if bar:
                bar.step(entry.student, done.result)
        if not plan.regrading:  # a changed late policy, due date, extension or decision applies without a kernel
            named["moved"] = review_join.moved(out, lesson, plan.skipped, store, members or review_join.members_of(out),
                                               plan.book)
        complete = True
    finally:
        review_store.close(store)
        absent = _class_files(out, plan, lesson, members, named, complete)
        if profile:
            files.write_text(out.profile, json.dumps(
                {"jobs": plan.jobs, "seconds": round(time.monotonic() - submitted, 3),
                 "cpu": host.cpu_use(cpu_before, host.cpu_times()), "submissions": profile}, indent=1))
        gc.unfreeze()  # frozen by _results before its workers forked; a full collection now is the caller's to pay
    return _summary(plan, members, absent, counts, named, began)


def _summary(plan: _Plan, members: class_list.Roster | None, absent: list[dict[str, Any]], counts: dict[str, int],
             named: dict[str, list[str]], began: float) -> Summary:
    entries = {entry.student for entry in plan.found.entries}
    if members:
        named["missing"] = [row["student"] for row in absent]
        named["outside"] = [student for student in entries if members.find(student) is None]
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    counts.update({key: len(named[key]) for key in ("errors", "timeouts", "failures")}, signed=int(plan.signing))
    return Summary(total=len(entries), skipped=len(plan.skipped), counts=counts, seconds=time.monotonic() - began,
                   peak_mb=peak, named=named, layout=plan.found.layout,
                   ignored=plan.found.ignored + plan.found.unread,
                   names={e.student: e.name for e in plan.found.entries if e.name}
                   | {m.student: m.name for m in (members.members if members else ()) if m.name})


def _sorted(found: tuple[layouts.Entry, ...], book: gradebook.Gradebook, lesson_id: str,
            regrading: str | None = None) -> tuple[list[layouts.Entry], list[layouts.Entry], list[str]]:
    """(to grade, to reject: several files or a refused entry, the students recorded already: unchanged, or in a
    regrade, graded by this regrade already)."""
    todo, clashes, skipped = [], [], []
    for entry in found:
        if book.has(lesson_id, entry.student, entry_digest(entry), regrading):
            skipped.append(entry.student)
        elif len(entry.paths) == 1 and not entry.refused:
            todo.append(entry)
        else:
            clashes.append(entry)
    return todo, clashes, skipped


def _tally(counts: dict[str, int], named: dict[str, list[str]], student: str, result: GradeResult) -> None:
    counts["graded" if result.status == "graded" else "rejected"] += 1
    statuses = {e.status for e in result.exercises}
    failed = (result.error or "").startswith(record.INTERNAL_ERROR)
    for key, hit in (("errors", "error" in statuses), ("timeouts", "timeout" in statuses),
                     ("rejected", result.status != "graded" and not failed), ("failures", failed)):
        if hit:
            named[key].append(student)
    if result.handout_of:  # another student's per-student handout, by its owner mark: the instructor is told
        named.setdefault("foreign", []).append(f"{student} handed in {result.handout_of}'s handout")


def _class_files(out: BatchFolder, plan: _Plan, lesson: catalog.Lesson, members: class_list.Roster | None,
                 named: dict[str, list[str]], complete: bool) -> list[dict[str, Any]]:
    """grades.csv, a regrade's changes.csv and the dashboard from the gradebook's latest rows; returns the roster's
    absent students. A regrade that graded everything (no grader failure left to retry) is finished."""
    book = plan.book
    try:
        latest = book.latest(lesson.id)
        absent = review_join.absent(members, latest, lesson.id)
        if plan.signing:  # graded before the course key existed: say so, and how to sign them
            named["unsigned"] = sorted(s for s, data in book.recorded(lesson.id).items() if not data.get(sign.SIGNATURE))
        moved = regrades.changes(book.changed_by(lesson.id, plan.regrading)) if plan.regrading else None
        assert plan.host is not None  # made with the plan
        plan.host.class_files(members, moved)
        if moved is not None:
            named["changed"] = [change.line() for change in moved]
            if complete and not named["failures"]:
                book.finish_regrade(lesson.id)
    finally:
        book.close()
    return absent


def _submitted_as(layout: str, entry: layouts.Entry, members: class_list.Roster | None) -> Submitted:
    """How the submission arrived: the layout, the platform's name and late mark, and the roster's match."""
    member = members.find(entry.student) if members else None
    return Submitted(layout, tuple(p.name for p in entry.paths), (member.name if member else "") or entry.name,
                     entry.late, None if members is None else member is not None, member.section if member else "",
                     entry.submitted_at)


@contextlib.contextmanager
def _closed_if_refused(book: gradebook.Gradebook) -> Iterator[None]:
    try:
        yield
    except GraderError:
        book.close()
        raise


@contextlib.contextmanager
def _removed_if_refused(out: Path) -> Iterator[None]:
    """A batch refused before its first grade (no sandbox, no device, a bad key) leaves no `out` folder behind
    when it made that folder itself; a folder that was already there keeps everything it held."""
    made = not out.exists()
    try:
        yield
    except GraderError:
        if made:
            shutil.rmtree(out, ignore_errors=True)
        raise


def refuse_without_isolation(options: Options) -> None:
    """A class is not graded without isolation unless the instructor said `--no-sandbox`."""
    from grader.kernel import sandbox

    report = sandbox.plan(options.limits, options.sandbox)
    grading.resolve_device(options, report)  # a device that does not work stops the batch before any grade, in a line
    if options.sandbox == "none":
        return
    if not report.isolated:
        raise SandboxUnavailable(f"refusing to grade a class without isolation ({report.missing_reason}); "
                                 "pass --no-sandbox to grade anyway, and student code will be able to read your files")


def _clash_results(clashes: list[layouts.Entry], lesson_id: str) -> Iterator[tuple[layouts.Entry, finish.Graded]]:
    """A student with more than one file is rejected without guessing which one counts; one whose files could not
    be read safely (a link, a device, a refused zip entry) is rejected with why."""
    for entry in clashes:
        names = ", ".join(layouts.printable(p.name) for p in entry.paths)
        reason = entry.refused or (f"{len(entry.paths)} files for student {entry.student!r} ({names}): keep one "
                                   "and rerun the batch")
        result = grading.rejected(entry.paths[0], reason, lesson=lesson_id, student=entry.student)
        yield entry, finish.Graded(replace(result, submission=names, digest=entry_digest(entry)))


def _results(plan: _Plan, lesson_id: str, scheduler: str | None) -> Iterator[tuple[layouts.Entry, finish.Graded]]:
    todo, options, jobs = plan.todo, plan.options, plan.jobs
    if not todo:
        return
    if scheduler:
        from grader.classroom import cluster

        by_path = {str(entry.paths[0]): entry for entry in todo}
        for path, graded in cluster.results(scheduler, [(e.paths[0], e.student) for e in todo], lesson_id, options,
                                            plan.per_student, plan.hash_seed, plan.tls):
            yield by_path[str(path)], graded
        return
    # Even one job runs in a worker process: there nbclient's own SIGINT handler (it shuts the kernel down under
    # the grade, which then fails as a grader error) never sees a terminal's Ctrl-C, and the parent stops the batch.
    others = set(multiprocessing.active_children())  # a caller's own processes, never ours to kill
    # What the workers inherit (imports, the compiled templates, the reference) is frozen out of the collector
    # (until `run` has written the class's files): their full collections then never walk it (about 7 ms per grade)
    # nor write to its pages. No collection first: it held up the first fork by 20-30 ms, and what it would free
    # returns to the collector with the rest when `run` unfreezes.
    gc.freeze()
    pool = cf.ProcessPoolExecutor(max_workers=jobs, initializer=die_with_parent)
    try:
        futures: dict[cf.Future[finish.Graded], layouts.Entry] = {
            pool.submit(grade_one, str(entry.paths[0]), lesson_id, plan.per_student[entry.student][0], entry.student,
                        plan.per_student[entry.student][1]): entry
            for entry in todo}
        for future in cf.as_completed(list(futures)):
            entry = futures.pop(future)  # a finished future holds its whole result: let it go
            yield entry, future.result()
    except BaseException:  # Ctrl-C, or the consumer gave up: nothing still running will be recorded
        # Kill the workers rather than wait for grades nobody stores (workers never write records).
        # The pool then fails every pending future itself; cancelling them first would race with
        # that and crash the pool's manager thread. Do not wait for it either.
        for worker in set(multiprocessing.active_children()) - others:
            worker.kill()
        pool.shutdown(wait=False)
        raise
    pool.shutdown(wait=True)
