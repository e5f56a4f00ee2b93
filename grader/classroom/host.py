"""A batch's worker: what the parent does once before its workers fork (`prepare`), each student's draw as the
parent decides it (`Draws`), and the task each worker runs per submission (`grade_one`): the spine's grade on that
draw, then its reports drawn, never an exception.

Local workers (batch.py) and a cluster's (cluster.py) run the same task; the
Gradescope container runs it for its one submission.
"""

from __future__ import annotations

import dataclasses
import os
import time
from pathlib import Path
from typing import Any

from grader import grading
from grader.base import host
from grader.base.errors import GraderError
from grader.base.options import Options
from grader.intake import load
from grader.kernel import warm_start
from grader.lesson import catalog, draw as drawing, folders, handout, staff_code
from grader.report import finish
from grader.result import regrade as regrades
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
    host.facts(folders.course_root())
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
