"""One lesson hosted for a class: what `grader batch` and each lesson host of `grader serve` (and the cluster's path
under either) do alike, written once.

A host holds the lesson, its batch folder and its gradebook connection. It prepares the lesson once where the
grades run here (`worker.prepare`: the warm template, the reference, the checks; forked workers inherit them),
decides each student's draw and how to run it (`worker.Draws`: the course secret read here, never by a worker),
records a grade in the one way (how it arrived and the instructor's decisions joined, then the batch folder; a
student's data that cannot be recorded is recorded as why, never stopping the class), and writes the class's files
by the one recipe (review_join.class_files: grades.csv, changes.csv with names, similarity.html, the dashboard).
Who calls it decides only where work comes from (a class's folder, or the service's queue) and how it is waited on.

The task each worker runs per submission is here too (`grade_one`): the spine's grade on the student's draw, then
its reports drawn, never an exception. Local workers (batch.py, the service's hosts) and a cluster's (cluster.py)
run the same task; the Gradescope container runs it for its one submission.
"""

from __future__ import annotations

import dataclasses
import errno
import os
import sqlite3
import time
from pathlib import Path
from typing import Any

from grader import grading
from grader.base import host as machine
from grader.base.errors import GraderError
from grader.base.options import Options
from grader.classroom import review_join, review_store
from grader.classroom.batch_folder import BatchFolder, Recorded, digest
from grader.intake import load, roster as class_list
from grader.kernel import warm_start
from grader.lesson import catalog, draw as drawing, folders, handout, staff_code
from grader.lesson.draw import Draw, Given
from grader.report import finish
from grader.result import gradebook, regrade as regrades, sign
from grader.result.parts import Submitted
from grader.result.record import INTERNAL_ERROR
from grader.run import probe


class Draws:
    """Each student's draw as a class's parent decides it (a batch's, a service's lesson host), so that its workers
    and a cluster's never read the course secret: read once here, with whether the course grades the lesson per
    student; `given` is what the command line fixes, with the class's template hash seed."""

    def __init__(self, lesson: catalog.Lesson, options: Options, given: drawing.Given) -> None:
        self.lesson, self.options, self.given = lesson, options, given
        self.secret = drawing.course_secret()
        self.per_student = drawing.enabled(lesson.id)

    def of(self, student: str, recorded: dict[str, Any] | None = None) -> tuple[Options, drawing.Draw]:
        """(how to run it, the draw) for one student; `recorded`: their result a regrade replays."""
        options, given = regrades.replayed(self.options, self.given, recorded)
        return options, drawing.decide(self.lesson, student, given, public_only=options.public_only,
                                       secret=self.secret, per_student=self.per_student)


def prepare(lesson: catalog.Lesson, options: Options, hash_seed: int) -> None:
    """Do once what every grade of a batch would otherwise repeat in each worker.

    Fills the lesson's compilation cache if this machine has none yet, starts
    the shared zygote in the background, and meanwhile asks the reference for
    every public case, loads the checks, compiles the JSON shape checks, reads
    the host's facts and imports the report code; worker processes forked
    afterwards inherit all of it. Nothing here is required: a worker does
    whatever is missing itself.
    """
    starting = warm_start.start(lesson, options, hash_seed)
    if not options.public_only:
        try:
            grading.public_expectations(lesson)
        except Exception:
            pass
    staff_code.properties(lesson)
    try:
        handout.warm(lesson)
    except Exception:  # a scaffold or another lesson that cannot be read: each grade then says why, or does without
        pass
    probe.warm()
    load.warm()
    machine.facts(folders.course_root())
    finish.warm()
    if starting is not None:
        try:
            starting.wait_ready()
        except GraderError:
            pass


def grade_one(path: str | Path, lesson_id: str, options: Options, student: str | None = None,
              chosen: drawing.Draw | drawing.Given = drawing.Given()) -> finish.Graded:
    """The per-submission task of a batch (local worker or cluster), on the student's draw: a result, never an
    exception."""
    import traceback

    started = time.monotonic()  # CLOCK_MONOTONIC: one clock for every process of the host
    try:
        result = grading.grade(path, lesson_id, options, student, chosen)
    except GraderError as err:
        result = grading.rejected(path, str(err), lesson_id, student)
    except Exception as err:  # a grader bug must not stop the class; it is recorded loudly
        traceback.print_exc()
        result = grading.rejected(path, f"{INTERNAL_ERROR}: {type(err).__name__}: {err}", lesson_id, student)
    rendering = time.monotonic()
    graded = finish.drawn(result)
    result = graded.result
    if result.run is not None:
        result = dataclasses.replace(result, run=result.run.timed("render", round(time.monotonic() - rendering, 3)))
    return dataclasses.replace(graded, result=result,
                               worker={"pid": os.getpid(), "start": started, "end": time.monotonic()})


class LessonHost:
    """One lesson's class: its folder, its gradebook, each student's draw, the record and the class's files."""

    def __init__(self, lesson: catalog.Lesson, out: BatchFolder, book: gradebook.Gradebook, options: Options,
                 given: Given, grades_here: bool) -> None:
        self.lesson, self.out, self.book = lesson, out, book
        self.draws = Draws(lesson, options, given)
        sign.signing_key()  # read now: a bad key stops the class before any grade
        if grades_here:
            prepare(lesson, options, given.hash_seed or 0)

    def drawn(self, student: str, recorded: dict[str, Any] | None = None) -> tuple[Options, Draw]:
        """How to run one student's grade and their draw (`recorded`: their result a regrade replays)."""
        return self.draws.of(student, recorded)

    def record(self, student: str, path: Path, graded: finish.Graded, arrived: Submitted, regrade: str | None,
               members: class_list.Roster | None = None, store: review_store.Store | None = None) -> Recorded:
        """A grade recorded: how it arrived and the instructor's decisions joined, then the batch folder (the course
        key read for this record and dropped, never held while workers fork)."""
        graded = dataclasses.replace(graded, result=dataclasses.replace(graded.result, submitted_as=arrived))
        joined = review_join.graded(graded, self.lesson, review_join.decisions(store, self.lesson, student, members))
        key = sign.signing_key()
        try:
            return self.out.store(self.book, student, path, joined, key, regrade, self.lesson)
        except (OSError, ValueError, TypeError, sqlite3.Error) as err:
            if isinstance(err, OSError) and err.errno in (errno.ENOSPC, errno.EDQUOT, errno.EROFS):
                raise  # the grader's disk, not the student: stop with the reason
            named = student.encode("utf-8", "backslashreplace").decode("utf-8")
            reason = f"the result could not be recorded ({type(err).__name__}: {str(err)[:160]})"
            safe = dataclasses.replace(grading.rejected(path, reason, joined.result.lesson, named),
                                       digest=joined.result.digest or digest(path), submitted_as=arrived)
            return self.out.store(self.book, named, path, finish.Graded(safe), key, regrade, self.lesson)

    def class_files(self, members: class_list.Roster | None, moved: Any = None) -> None:
        """grades.csv, changes.csv (with names; a regrade's `moved`), similarity.html and the dashboard."""
        review_join.class_files(self.out, self.lesson, self.book, members, moved)
