"""Grade a folder of submissions in parallel; only the parent writes records.

Each submission is graded in a worker process (two jobs per core by default, fewer if memory is short). The parent
writes `results/<student>.json` and `reports/<student>.html` atomically, then the gradebook row; a submission already
in the gradebook with the same digest is skipped, so an interrupted batch resumes where it stopped. A submission that
cannot be graded becomes a `rejected` row.
"""

from __future__ import annotations

import contextlib
import gc
import itertools
import json
import resource
import shutil
import time
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from grader.base import files, host as machine
from grader.base.errors import GraderError
from grader.base.options import Options
from grader.classroom import batch_folder, host as hosting, workers
from grader.classroom.batch_folder import BatchFolder, entry_digest
from grader.intake import layouts, roster as class_list
from grader.lesson import catalog, draw as drawing
from grader.lesson.draw import Draw, Given
from grader.report import render_text
from grader.report.finish import Graded
from grader.result import record
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


@dataclass
class _Plan:
    """A batch decided before its first grade: what to grade, with which options, into which gradebook."""

    found: layouts.Class
    host: hosting.LessonHost
    """The lesson hosted for this class: its gradebook, each student's draw, the one record, the class's files."""
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


def _plan(folder: str | Path, lesson: catalog.Lesson, out: BatchFolder, jobs: int | None, options: Options,
          scheduler: str | None, regrade: bool, force: bool = False, given: Given = Given()) -> _Plan:
    found = layouts.read(folder, out.unpacked)
    out.make()
    book = out.open_gradebook()
    try:
        replay = hosting.regrade_started(lesson, book, force) if regrade else hosting.Replay()
        todo, clashes, skipped = hosting.to_grade(found.entries, book, lesson.id, replay.regrading)
        jobs = max(1, jobs or workers.default_jobs(options.device))
        if todo:
            workers.refuse_without_isolation(options)
        # One hash seed for the whole batch: the warm template's interpreter fixes it for every kernel it forks
        # (a cluster's workers fork from templates of their own, workers.TemplatePlugin, with this one too).
        given = replace(given, hash_seed=drawing.batch_hash_seed_for(lesson.id, given.hash_seed, replay.hash_seed))
        options = replace(options, jobs_at_once=min(jobs, max(1, len(todo))))
        host = hosting.LessonHost(lesson, out, book, options, given, grades_here=bool(todo) and scheduler is None)
    except GraderError:  # refused before any grade: the gradebook is closed, nothing recorded
        book.close()
        raise
    per_student = {e.student: host.drawn(e.student, replay.recorded.get(e.student)) for e in todo}
    return _Plan(found, host, todo, clashes, skipped, jobs, options, host.signing, replay.regrading, per_student,
                 [e.student for e in todo if e.student in replay.untrusted], hash_seed=given.hash_seed or 0)


def run(request: Request) -> Summary:
    """Grade every submission the request names into its batch folder; resumable (see Request)."""
    began = request.began if request.began is not None else time.monotonic()
    scheduler, roster = request.scheduler, request.roster
    if scheduler:
        workers.check_address(scheduler, request.tls)
    out = BatchFolder(Path(request.out))
    lesson = request.lesson if isinstance(request.lesson, catalog.Lesson) else catalog.get(request.lesson)
    members = class_list.read(roster) if roster else None
    with _removed_if_refused(out.root):
        batch_folder.claim(out)  # one course per batch folder
        plan = replace(_plan(request.submissions, lesson, out, request.jobs, request.options, scheduler,
                             request.regrade, request.force, request.given), tls=request.tls)
        if roster:  # kept beside the gradebook: an export finds it without --roster again
            files.write_bytes(out.roster, files.read_regular(roster, class_list.MAX_BYTES))
    counts = {"graded": 0, "rejected": 0}  # rejected includes grader failures; the rest are counted from `named`
    named: dict[str, list[str]] = {"errors": [], "timeouts": [], "rejected": [], "failures": [],
                                   "untrusted": plan.untrusted}
    bar = render_text.Progress(len(plan.todo) + len(plan.clashes)) if request.progress else None
    profile: list[dict[str, Any]] = []
    cpu_before, submitted = machine.cpu_times(), time.monotonic()
    complete, host = False, plan.host
    try:
        with host.decisions() as store:  # the instructor's decisions, which a rerun keeps
            for entry, graded in itertools.chain(_clash_results(host, plan.clashes), _results(plan, lesson.id, scheduler)):
                worker, storing = graded.worker, time.monotonic()
                done = host.record(entry.student, entry.paths[0], graded,
                                   hosting.submitted_as(plan.found.layout, entry, members), plan.regrading, members, store)
                profile.append({"student": entry.student, "record": round(time.monotonic() - storing, 3),
                                "worker": worker.get("pid"), **{k: round(worker[k] - submitted, 3)
                                                                for k in ("start", "end") if k in worker},
                                **dict(done.result.run.timings if done.result.run else ())})
                _tally(counts, named, entry.student, done.result)
                if bar:
                    bar.step(entry.student, done.result)
            if not plan.regrading:  # a changed late policy, due date, extension or decision applies without a kernel
                named["moved"] = host.moved(plan.skipped, store, members)
        complete = True
    finally:
        absent = _class_files(plan, members, named, complete)
        if profile:
            files.write_text(out.profile, json.dumps(
                {"jobs": plan.jobs, "seconds": round(time.monotonic() - submitted, 3),
                 "cpu": machine.cpu_use(cpu_before, machine.cpu_times()), "submissions": profile}, indent=1))
        gc.unfreeze()  # frozen by workers.graded before they forked; a full collection now is the caller's to pay
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


def _class_files(plan: _Plan, members: class_list.Roster | None, named: dict[str, list[str]],
                 complete: bool) -> list[dict[str, Any]]:
    """grades.csv, a regrade's changes.csv and the dashboard from the gradebook's latest rows; returns the roster's
    absent students. A regrade that graded everything (no grader failure left to retry) is finished."""
    try:
        done = plan.host.class_done(members, plan.regrading, complete and not named["failures"])
        if plan.signing:  # graded before the course key existed: say so, and how to sign them
            named["unsigned"] = done.unsigned
        if done.changed is not None:
            named["changed"] = done.changed
    finally:
        plan.host.book.close()
    return done.absent


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


def _clash_results(host: hosting.LessonHost, clashes: list[layouts.Entry]) -> Iterator[tuple[layouts.Entry, Graded]]:
    """A student with more than one file is rejected without guessing which one counts; one whose files could not
    be read safely (a link, a device, a refused zip entry) is rejected with why."""
    for entry in clashes:
        names = ", ".join(layouts.printable(p.name) for p in entry.paths)
        reason = entry.refused or (f"{len(entry.paths)} files for student {entry.student!r} ({names}): keep one "
                                   "and rerun the batch")
        yield entry, host.rejected(entry.paths[0], reason, entry.student, submission=names, digest=entry_digest(entry))


def _results(plan: _Plan, lesson_id: str, scheduler: str | None) -> Iterator[tuple[layouts.Entry, Graded]]:
    """Each submission to grade, with its result as it comes (workers forked here, or the cluster's)."""
    by_path = {str(entry.paths[0]): entry for entry in plan.todo}
    for path, graded in workers.graded([(e.paths[0], e.student) for e in plan.todo], lesson_id, plan.options,
                                       plan.per_student, plan.jobs, scheduler, plan.hash_seed, plan.tls):
        yield by_path[str(path)], graded
