"""`grader serve`: one process answering HTTP, beside one grading supervisor it forks first.

The grading side is forked before the HTTP side starts any thread, so the
pools it forks later never inherit a lock held by the web server; it dies with
the server (and its lesson hosts and workers with it). The queue is durable,
so a server killed at any moment loses nothing accepted: on restart the jobs
it held come back when their leases run out. The output folder holds one
batch folder per lesson (`OUT/<lesson>/`): `review`, `similarity`, the
exports and portfolios read it as they read a batch's.
"""

from __future__ import annotations

import dataclasses
import logging
import multiprocessing
import os
import shutil
import socket
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from grader.base import database as records, files
from grader.base.errors import GraderError
from grader.base.options import Options
from grader.classroom import workers
from grader.lesson import catalog, course
from grader.lesson.draw import Given
from grader.service import dispatch, guard, hub
from grader.service.app import Served, app
from grader.service.jobs import Queue
from grader.service.lti.services import Outbox
from grader.service.tokens import Book

log = logging.getLogger(__name__)
"""The server's log (`grader serve` sets where it goes: stderr, one line a record)."""

QUEUE_FILE = "queue.sqlite"


@dataclass(frozen=True, kw_only=True)
class Config:
    out: Path
    host: str = "127.0.0.1"
    port: int = 8000
    jobs: int = 2
    database: str | None = None
    """`postgresql://...` to share one queue between servers; None: SQLite in the course's private folder."""
    options: Options = Options()
    given: Given = Given()
    """What `--seed` and `--hash-seed` fix of each student's draw."""
    lease_s: float = 30.0
    min_free_mb: int = 64
    ssl_certfile: str | None = None
    ssl_keyfile: str | None = None
    scheduler: str | None = None
    """The course's Dask cluster (`tls://`): grades run there (certificates in `tls`)."""
    tls: Path | None = None
    url: str | None = None
    """The address the LMS and students reach the server at (https://...): LTI's redirect and links are built
    from it, never from a request's Host header; None: this server's own address."""
    head_timeout_s: float = guard.HEAD_S
    group: str | None = None
    """A group that may read the output folder (0750); None: its owner only (0700)."""
    hub: bool = False
    """A JupyterHub service (`--hub`): the address, the prefix and who signs in come from the hub."""


def _watch(grading: Any, server: Any) -> None:
    """A server whose grading side died stops, in one line, rather than take submissions nobody grades."""
    grading.join()
    if not server.should_exit:
        log.error(f"the grading side stopped (exit code {grading.exitcode}); stopping. Accepted "
              "submissions are kept in the queue: start the server again to grade them.")
        server.should_exit = True


def _stops_with_parent() -> None:
    """A hub's service is told to stop (SIGTERM: its running jobs handed back) when the hub that started it ends,
    however it ends: the hub's next start starts it again on the same port."""
    if sys.platform.startswith("linux"):
        import ctypes
        import signal

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def database(config: Config) -> str:
    """Where the queue lives: the URL given, else the course's private folder."""
    return config.database or str(course.private_folder() / QUEUE_FILE)


def keep_private(out: Path, group: str | None) -> None:
    """The output folder (every student's work and grade) kept to its owner, 0700, whatever the umask, and every
    file the server and its grading side make from now on too; or, with a group, readable by that group (0750,
    new files inheriting the group)."""
    os.umask(0o077 if group is None else 0o027)
    files.make_dirs(out)
    if group is None:
        out.chmod(0o700)
        return
    try:
        shutil.chown(out, group=group)
    except (LookupError, PermissionError) as err:
        raise GraderError(f"--group {group}: the output folder cannot be given to that group ({err})") from None
    out.chmod(0o2750)


def serve(config: Config, ready: Any = None) -> None:
    """Serve until interrupted (SIGINT or SIGTERM): the grading supervisor is forked first, then HTTP."""
    import uvicorn

    lessons = tuple(catalog.available())
    if not lessons:
        raise GraderError("this course has no lessons to serve")
    place = hub.Place.from_environment() if config.hub else None
    if place is not None:  # a service of the hub: where it expects it, and gone when the hub is
        _stops_with_parent()
        if place.port is not None:
            config = dataclasses.replace(config, host=place.host, port=place.port)
    said = logging.StreamHandler(sys.stderr)  # the service's log, one line a record, inherited by what it forks
    said.setFormatter(logging.Formatter("grader serve: %(message)s"))
    logging.getLogger("grader.service").handlers[:] = [said]
    logging.getLogger("grader.service").setLevel(logging.INFO)
    logging.getLogger("grader.service").propagate = False
    if config.scheduler:
        workers.check_address(config.scheduler, config.tls)
    else:
        workers.refuse_without_isolation(config.options)
    where = database(config)
    Queue(where).close()  # the tables made, and a bad address refused, before anything starts
    keep_private(config.out, config.group)
    name = f"{socket.gethostname()}:{os.getpid()}"
    setup = dispatch.Setup(database=where, out=config.out.absolute(), jobs=config.jobs, options=config.options,
                           lease_s=config.lease_s, server=name, scheduler=config.scheduler, tls=config.tls,
                           given=config.given)
    grading = multiprocessing.get_context("fork").Process(target=dispatch.supervise, args=(setup, lessons, os.getpid()),
                                                          name="grader-supervisor")
    grading.start()
    book = Book(held=records.Held(records.Database(where, "queue")))  # sessions every server sees
    held = guard.limits(len(book.known), config.head_timeout_s)
    guard.quiet_floods()
    sock = socket.socket(socket.AF_INET6 if ":" in config.host else socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((config.host, config.port))
    sock.listen(512)
    scheme = "https" if config.ssl_certfile else "http"
    url = f"{scheme}://{config.host}:{sock.getsockname()[1]}{place.prefix if place else '/'}"
    served = Served(queue=Queue(where), book=book, out=config.out, lessons=lessons, jobs=config.jobs,
                    min_free=config.min_free_mb * 1024**2, outbox=Outbox(where),
                    public_url=(config.url or url).rstrip("/") + "/", hub=hub.Hub(book, place) if place else None)
    server = uvicorn.Server(uvicorn.Config(app(served), log_level="warning", lifespan="off",
                                           ssl_certfile=config.ssl_certfile, ssl_keyfile=config.ssl_keyfile,
                                           timeout_graceful_shutdown=5, http=guard.protocol(held),
                                           timeout_keep_alive=guard.KEEP_ALIVE_S))
    if ready is not None:
        ready(url)
    threading.Thread(target=_watch, args=(grading, server), daemon=True).start()
    try:
        server.run(sockets=[sock])
    finally:
        grading.kill()  # its lesson hosts, their workers and templates die with it (each dies with its parent)
        grading.join(5)
        Queue(where).release(name)  # a clean stop hands its running jobs back now, uncounted
        served.queue.close()
