"""A batch's worker: what the parent does once before its workers fork (`prepare`), and the task each worker runs
per submission (`grade_one`): the spine's grade, then its reports drawn, never an exception.

Local workers (batch.py) and a cluster's (cluster.py) run the same task; the
Gradescope container runs it for its one submission.
"""

from __future__ import annotations

import dataclasses
import os
import time
from pathlib import Path

from grader import grading
from grader.base import host
from grader.base.errors import GraderError
from grader.base.options import Options
from grader.intake import load
from grader.kernel import warm_start
from grader.lesson import catalog, folders, handout, staff_code
from grader.report import finish
from grader.result.record import INTERNAL_ERROR
from grader.run import probe


def prepare(lesson: catalog.Lesson, options: Options) -> None:
    """Do once what every grade of a batch would otherwise repeat in each worker.

    Fills the lesson's compilation cache if this machine has none yet, starts
    the shared zygote in the background, and meanwhile asks the reference for
    every public case, loads the checks, compiles the JSON shape checks, reads
    the host's facts and imports the report code; worker processes forked
    afterwards inherit all of it. Nothing here is required: a worker does
    whatever is missing itself.
    """
    starting = warm_start.start(lesson, options)
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


def grade_one(path: str | Path, lesson_id: str, options: Options, student: str | None = None) -> finish.Graded:
    """The per-submission task of a batch (local worker or cluster): a result, never an exception."""
    import traceback

    started = time.monotonic()  # CLOCK_MONOTONIC: one clock for every process of the host
    try:
        result = grading.grade(path, lesson_id, options, student)
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
