"""Run a batch's per-submission task on an existing Dask distributed cluster.

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

import hashlib
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from grader import grading
from grader.base import files
from grader.base.errors import GraderError
from grader.base.options import Options
from grader.classroom import certs
from grader.classroom.host import grade_one, prepare
from grader.intake import load
from grader.lesson import catalog
from grader.lesson.draw import Draw
from grader.report import finish
from grader.result.record import INTERNAL_ERROR

try:
    from distributed.diagnostics.plugin import WorkerPlugin
except ImportError:  # without Dask, `results` says how to install it
    WorkerPlugin = object  # type: ignore[misc,assignment]

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


def results(address: str, todo: list[tuple[Path, str]], lesson_id: str, options: Options,
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
