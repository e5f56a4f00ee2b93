"""Where a class's grades run: worker processes forked here, or an existing Dask distributed cluster.

Every worker runs the same task (`grade_one`: the spine's grade on the student's draw, then its reports drawn,
never an exception) on the lesson prepared once (`prepare`) before the workers fork, or in each cluster worker's
setup. A host (host.py) chooses where once; `grader batch` takes every result as it comes (`graded`), the
service one job at a time (`pool`). The Gradescope container runs the task for its one submission.

Only the course may use the cluster: the scheduler, every worker and the
client speak mutual TLS with certificates of the course CA (certs.py), and a
`tcp://` address is refused. Workers need the project and the course folder
installed: each task carries the submission's bytes (read once, the bytes that
were digested) and name, so no shared filesystem is assumed. Each
worker process keeps a warm template of its own (`TemplatePlugin`, started
when the plugin is registered and again whenever a worker restarts), and
forks every single-use kernel from it exactly as a local batch does, with the
batch's hash seed. A task that lands on a worker without a template still
grades (the template starts on first use). Results come back as
`finish.Graded` records; the parent alone writes the gradebook. A task the
cluster loses for good (a worker that died under it more often than Dask
allows) is that student's grader-failure row, which the next run retries.
"""

from __future__ import annotations

import concurrent.futures as cf
import ctypes
import dataclasses
import gc
import hashlib
import multiprocessing
import os
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from grader import grading
from grader.base import files, host as machine
from grader.base.errors import GraderError, SandboxUnavailable
from grader.base.options import Options
from grader.classroom import certs
from grader.intake import load
from grader.kernel import warm_start
from grader.lesson import catalog, draw as drawing, folders
from grader.lesson.draw import Draw
from grader.report import finish
from grader.result.record import INTERNAL_ERROR
from grader.run import probe

try:
    from distributed.diagnostics.plugin import WorkerPlugin
except ImportError:  # without Dask, `results` says how to install it
    WorkerPlugin = object  # type: ignore[misc,assignment]

def die_with_parent(parent: int | None = None) -> None:
    """A worker's (or a service's grading process's) start: killed with its parent, deaf to a terminal's Ctrl-C.
    `parent`: the pid that forked it; a parent already gone by the time the child asks (killed between the fork
    and here, where no death signal can reach the child any more) ends the child at once."""
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
        if parent is not None and os.getppid() != parent:
            os._exit(1)
    # The parent decides on Ctrl-C. A process group of its own keeps a terminal's Ctrl-C from the worker: ignoring
    # SIGINT is not enough, since nbclient installs a SIGINT handler of its own while a kernel runs and would shut
    # that kernel down under the grade.
    os.setpgid(0, 0)
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def prepare(lesson: catalog.Lesson, options: Options, hash_seed: int) -> None:
    """Do once what every grade of a class would otherwise repeat in each worker.

    Fills the lesson's compilation cache if this machine has none yet and starts the shared zygote in the
    background; meanwhile prepares the lesson (grading.prepared: the handout's cells, the checks, the reference's
    answer to every public case, the names the other lessons need), compiles the JSON
    shape checks, reads the host's facts and imports the report code. Worker processes forked afterwards inherit
    all of it. A lesson that cannot be prepared is not an error here: each grade then says why.
    """
    starting = warm_start.start(lesson, options, hash_seed)
    try:
        grading.prepared(lesson, options.public_only)
    except Exception:  # a scaffold, a reference or another lesson that cannot be read: each grade then says why
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


PLUGIN = "grader-template"
PREPARE_SECONDS = 300.0
"""The longest a task waits for its worker's preparation (a first compilation cache can take a minute)."""
_PREPARING: threading.Thread | None = None


class TemplatePlugin(WorkerPlugin):
    """A Dask worker plugin: prepares the lesson in the worker process (its warm template, its public
    expectations, its compiled checks) in the background, so that the first task finds them ready."""

    name = PLUGIN

    def __init__(self, lesson_id: str, options: Options, hash_seed: int) -> None:
        self.lesson_id = lesson_id
        self.options = options
        self.hash_seed = hash_seed

    def setup(self, worker: Any = None) -> None:
        """Runs in each worker process, now and whenever one (re)starts; never blocks the worker's event loop.
        A task that arrives meanwhile waits for it (`grade_bytes`) rather than start a second template."""
        global _PREPARING
        _PREPARING = threading.Thread(target=self._prepare, name="grader-template", daemon=True)
        _PREPARING.start()

    def _prepare(self) -> None:
        try:
            prepare(catalog.get(self.lesson_id), self.options, self.hash_seed)
        except Exception:
            pass

    def teardown(self, worker: Any = None) -> None:
        """End the template when the worker closes. When the next batch registers the plugin again (the worker
        still running), keep it: that batch's `setup` reuses a template whose lesson and settings still fit
        (zygote.start_shared restarts one that does not), so a standing cluster starts grading at once."""
        from distributed.core import Status

        from grader.kernel import zygote

        if worker is not None and getattr(worker, "status", None) == Status.running:
            return
        zygote.stop_shared()


def grade_bytes(name: str, data: bytes, lesson_id: str, options: Options, student: str,
                chosen: Draw) -> finish.Graded:
    """Worker side: write the submission to a private temp dir and grade it (once the worker's preparation,
    if one is under way, has finished: its template is the one every kernel is forked from)."""
    if _PREPARING is not None:
        _PREPARING.join(PREPARE_SECONDS)
    with tempfile.TemporaryDirectory(prefix="grader-task-") as tmp:
        path = Path(tmp) / name
        path.write_bytes(data)
        return grade_one(path, lesson_id, options, student, chosen)


def lost(path: Path, lesson_id: str, student: str, err: BaseException) -> finish.Graded:
    """The row of a submission whose task the cluster did not bring back: a grader failure, retried next run."""
    why = f"{INTERNAL_ERROR}: the cluster lost this submission's task ({type(err).__name__}: {str(err)[:160]})"
    return finish.Graded(grading.rejected(path, why, lesson_id, student))


def _submission(path: Path) -> tuple[bytes, str]:
    """The bytes a task carries and their digest, read once (never through a link): what is graded is what was
    digested, whatever is put in the file's place afterwards."""
    data = files.read_regular(path, load.MAX_BYTES)
    return data, hashlib.sha256(data).hexdigest()


def _checked(path: Path, lesson_id: str, student: str, sent: str, graded: finish.Graded) -> finish.Graded:
    """A worker's answer, unless it grades other bytes than the ones sent (then a grader failure, retried)."""
    if graded.result.digest and graded.result.digest != sent:
        return lost(path, lesson_id, student, GraderError("the worker graded other bytes than the ones sent"))
    return graded


def _refuse_unguarded(client: Any, address: str) -> None:
    """Refuse, in one line, a cluster whose scheduler or a worker runs without the course's guard: there a worker's
    certificate could submit work or run code."""
    from grader.classroom import cluster_guard

    where = []
    try:
        if not client.run_on_scheduler(cluster_guard.active):
            where.append("the scheduler")
        where += [f"worker {w}" for w, on in client.run(cluster_guard.active).items() if not on]
    except Exception as err:
        raise GraderError(f"cannot ask the cluster at {address} whether it is guarded: {str(err)[:160]}") from None
    if where:
        raise GraderError(f"{', '.join(where[:3])} at {address} run without the course's guard, so a worker's "
                          "certificate could submit work: start them with --preload grader.classroom.cluster_guard "
                          "(workers also --preload-nanny grader.classroom.cluster_guard)")


def on_cluster(address: str, todo: list[tuple[Path, str]], lesson_id: str, options: Options,
            per_student: dict[str, tuple[Options, Draw]], hash_seed: int,
            tls: Path | None = None) -> Iterator[tuple[Path, finish.Graded]]:
    """Submit every submission to the scheduler at `address` (`tls://` with the course's certificates in `tls`),
    each with its student's draw (decided here, in the parent: the workers never see the course secret) and how to
    run it; the workers' templates start with `hash_seed`. Yield results as they finish."""
    certs.check_address(address, tls)
    try:
        from distributed import Client, as_completed
    except ImportError:
        raise GraderError("--scheduler needs Dask: pip install '.[dask]'") from None
    try:
        client = Client(address, timeout=20, security=certs.security(tls, "client"))  # type: ignore[arg-type]
    except (OSError, TimeoutError) as err:
        raise GraderError(f"cannot reach the Dask scheduler at {address} with the course's certificates: "
                          f"{str(err)[:200]}") from None
    with client:
        _refuse_unguarded(client, address)
        client.register_plugin(TemplatePlugin(lesson_id, options, hash_seed), name=PLUGIN)
        futures, sent = {}, {}
        for path, student in todo:
            try:
                data, digest = _submission(path)
            except OSError as err:
                yield path, lost(path, lesson_id, student, err)
                continue
            run_as, chosen = per_student[student]
            future = client.submit(grade_bytes, path.name, data, lesson_id, run_as, student, chosen, pure=False)
            futures[future], sent[future] = (path, student), digest
        for future in as_completed(futures):
            path, student = futures.pop(future)
            try:
                yield path, _checked(path, lesson_id, student, sent.pop(future), future.result())
            except Exception as err:
                yield path, lost(path, lesson_id, student, err)
            future.release()


def check_address(scheduler: str, tls: Path | None) -> None:
    """Refuse, in one line, a cluster address the course's certificates cannot serve (before anything is made)."""
    certs.check_address(scheduler, tls)


def default_jobs(device: str) -> int:
    """How many grades run here at once by default (two per core, fewer where memory or the device is short)."""
    from grader.kernel import devices

    return devices.default_jobs(device)


def refuse_without_isolation(options: Options) -> None:
    """A class is not graded without isolation unless the instructor said `--no-sandbox`."""
    from grader.kernel import sandbox
    from grader.run import submission

    report = sandbox.plan(options.limits, options.sandbox)
    submission.resolve_device(options, report)  # a device that does not work stops the batch before any grade, in a line
    if options.sandbox == "none":
        return
    if not report.isolated:
        raise SandboxUnavailable(f"refusing to grade a class without isolation ({report.missing_reason}); "
                                 "pass --no-sandbox to grade anyway, and student code will be able to read your files")


def graded(todo: list[tuple[Path, str]], lesson_id: str, options: Options,
           per_student: dict[str, tuple[Options, Draw]], jobs: int, scheduler: str | None = None, hash_seed: int = 0,
           tls: Path | None = None) -> Iterator[tuple[Path, finish.Graded]]:
    """Grade every (path, student) of `todo` on their draw, in `jobs` worker processes forked here (or on the
    cluster at `scheduler`); yield each result as it finishes. Workers never write records."""
    if not todo:
        return
    if scheduler:
        yield from on_cluster(scheduler, todo, lesson_id, options, per_student, hash_seed, tls)
        return
    # Even one job runs in a worker process: there nbclient's own SIGINT handler (it shuts the kernel down under
    # the grade, which then fails as a grader error) never sees a terminal's Ctrl-C, and the parent stops the batch.
    others = set(multiprocessing.active_children())  # a caller's own processes, never ours to kill
    # What the workers inherit (imports, the compiled templates, the prepared lesson) is frozen out of the collector
    # (until the batch has written the class's files): their full collections then never walk it (about 7 ms per
    # grade) nor write to its pages. No collection first: it held up the first fork by 20-30 ms, and what it would
    # free returns to the collector with the rest when the batch unfreezes.
    gc.freeze()
    workers = pool(jobs)
    try:
        futures: dict[cf.Future[finish.Graded], Path] = {
            workers.submit(grade_one, str(path), lesson_id, per_student[student][0], student, per_student[student][1]):
            path for path, student in todo}
        for future in cf.as_completed(list(futures)):
            path = futures.pop(future)  # a finished future holds its whole result: let it go
            yield path, future.result()
    except BaseException:  # Ctrl-C, or the consumer gave up: nothing still running will be recorded
        # Kill the workers rather than wait for grades nobody stores (workers never write records).
        # The pool then fails every pending future itself; cancelling them first would race with
        # that and crash the pool's manager thread. Do not wait for it either.
        for worker in set(multiprocessing.active_children()) - others:
            worker.kill()
        workers.shutdown(wait=False)
        raise
    workers.shutdown(wait=True)


def pool(jobs: int, scheduler: str | None = None) -> cf.Executor:
    """The service's pool of one lesson: worker processes forked here, or (on a cluster) threads that each wait on
    one task there (`one_on_cluster`)."""
    if scheduler is not None:
        return cf.ThreadPoolExecutor(max_workers=jobs)
    return cf.ProcessPoolExecutor(max_workers=jobs, initializer=die_with_parent, initargs=(os.getpid(),))


def one_on_cluster(scheduler: str, tls: Path | None, path: Path, lesson_id: str, options: Options, student: str,
                   chosen: Draw, hash_seed: int) -> finish.Graded:
    """One job graded on the course's Dask cluster, as a batch's would be."""
    for _, result in on_cluster(scheduler, [(path, student)], lesson_id, options, {student: (options, chosen)},
                                hash_seed, tls):
        return result
    raise GraderError("the cluster returned no result")
