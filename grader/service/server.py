"""`grader serve`: one process answering HTTP, beside one grading supervisor it forks first.

The grading side is forked before the HTTP side starts any thread, so the
pools it forks later never inherit a lock held by the web server; it dies with
the server (and its lesson hosts and workers with it). The queue is durable,
so a server killed at any moment loses nothing accepted: on restart the jobs
it held come back when their leases run out. The output folder holds one
batch folder per lesson (`OUT/<lesson>/`): `review`, `similarity`, the
exports and portfolios read it as they read a batch's.

The front door's limits (below), which uvicorn leaves to a reverse proxy: how long a client may take over a request's
head and body, how many connections are held at once, and the open files they need.

A client that opens a connection and sends its head a byte at a time (a slow
"slowloris" client) holds an open file for as long as it likes under plain
uvicorn: no timeout runs before the first request's head is complete, and a
thousand such connections use every open file the process may have, so an
honest request cannot even be accepted. Here each connection has HEAD_S to send
a complete head (and again after each response, on a kept-alive connection)
and BODY_S to send its body; past them it is closed. When more connections are
open than the course needs (`limits`: four per student, at least 256, never
more than the open files allow), the connection that has waited longest
without sending a head is closed to make room: a burst of idle connections
never locks out a request. Raising the soft open-file limit to the hard one
comes first.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import multiprocessing
import os
import resource
import shutil
import socket
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from grader.base import database as records, files
from grader.base.errors import GraderError
from grader.base.options import Options
from grader.classroom import workers
from grader.lesson import catalog, course
from grader.lesson.draw import Given
from grader.service import dispatch, hub, tokens
from grader.service.app import Served, app
from grader.service.jobs import Queue
from grader.service.lti.services import Outbox
from grader.service.tokens import Book

log = logging.getLogger(__name__)
"""The server's log (`grader serve` sets where it goes: stderr, one line a record)."""

QUEUE_FILE = "queue.sqlite"

HEAD_S = 10.0
"""Seconds a client has to send a request's head (the request line and its headers)."""
BODY_S = 150.0
"""Seconds a request's body may take to arrive once its head has (an upload's own limit is shorter: upload.py)."""
RESERVE_FILES = 128
"""Open files kept for the server's own use (its queue, its logs, the files it serves) beside its connections."""
KEEP_ALIVE_S = 5
"""Seconds an idle kept-alive connection stays open between requests."""


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
    head_timeout_s: float = HEAD_S
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


def _listening(config: Config, place: hub.Place | None) -> tuple[socket.socket, str]:
    """The socket HTTP is answered on, and its address: the host and port, or, for a course the hub's front serves
    (GRADER_HUB_SOCKET), a Unix socket in the front's own 0700 folder, which no other user of the machine can
    reach or take over as they could a loopback port."""
    unix = os.environ.get("GRADER_HUB_SOCKET", "") if place is not None else ""
    if unix:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(unix)  # a course server's earlier socket, left by its death
        sock.bind(unix)
        sock.listen(512)
        return sock, f"http+unix://{unix}{place.prefix if place else '/'}"
    sock = socket.socket(socket.AF_INET6 if ":" in config.host else socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((config.host, config.port))
    sock.listen(512)
    scheme = "https" if config.ssl_certfile else "http"
    return sock, f"{scheme}://{config.host}:{sock.getsockname()[1]}{place.prefix if place else '/'}"


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
        hub.stops_with_parent()
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
    tokens.keep_in(where)  # several servers: the course's tokens in their database from now on
    keep_private(config.out, config.group)
    name = f"{socket.gethostname()}:{os.getpid()}"
    setup = dispatch.Setup(database=where, out=config.out.absolute(), jobs=config.jobs, options=config.options,
                           lease_s=config.lease_s, server=name, scheduler=config.scheduler, tls=config.tls,
                           given=config.given)
    grading = multiprocessing.get_context("fork").Process(target=dispatch.supervise, args=(setup, lessons, os.getpid()),
                                                          name="grader-supervisor")
    grading.start()
    book = Book(held=records.Held(records.Database(where, "queue")))  # sessions every server sees
    held = limits(len(book.known), config.head_timeout_s)
    quiet_floods()
    sock, url = _listening(config, place)
    served = Served(queue=Queue(where), book=book, out=config.out, lessons=lessons, jobs=config.jobs,
                    min_free=config.min_free_mb * 1024**2, outbox=Outbox(where),
                    public_url=(config.url or url).rstrip("/") + "/", hub=hub.Hub(book, place) if place else None)
    server = uvicorn.Server(uvicorn.Config(app(served), log_level="warning", lifespan="off",
                                           ssl_certfile=config.ssl_certfile, ssl_keyfile=config.ssl_keyfile,
                                           timeout_graceful_shutdown=5, http=protocol(held),
                                           timeout_keep_alive=KEEP_ALIVE_S))
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


# -- the front door's limits ---------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Limits:
    head_s: float = HEAD_S
    body_s: float = BODY_S
    connections: int = 256


def limits(students: int, head_s: float = HEAD_S) -> Limits:
    """The limits for a course of this many students: four connections each, at least 256, within the open files
    this process may hold (raised to the hard limit first)."""
    allowed = open_files()
    wanted = max(256, 4 * students + 64)
    return Limits(head_s, max(head_s, BODY_S), max(16, min(wanted, allowed - RESERVE_FILES)))


def open_files() -> int:
    """The open files this process may hold, the soft limit raised to the hard one (at most 65,536)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = min(hard if hard != resource.RLIM_INFINITY else 65536, 65536)
    if soft != resource.RLIM_INFINITY and soft < target:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            soft = target
        except (ValueError, OSError):
            pass
    return soft if soft != resource.RLIM_INFINITY else 65536


class OncePerMinute(logging.Filter):
    """asyncio logs a traceback for every accept that finds no open file left (and pauses accepting for a second):
    under a flood of connections, thousands a minute, enough to fill a log or a pipe nobody reads. One a minute is
    kept, with how many were left out."""

    MESSAGE = "socket.accept() out of system resource"

    def __init__(self) -> None:
        super().__init__()
        self.last, self.left_out = -60.0, 0

    def filter(self, record: logging.LogRecord) -> bool:
        if not str(record.msg).startswith(self.MESSAGE):
            return True
        now = time.monotonic()
        if now - self.last < 60:
            self.left_out += 1
            return False
        record.msg = (f"{self.MESSAGE}: no open file left for a new connection; accepting again in a second "
                      f"({self.left_out} more such lines left out in the last minute)")
        record.args, record.exc_info, record.exc_text = (), None, None
        self.last, self.left_out = now, 0
        return True


def quiet_floods() -> None:
    """Keep asyncio's log of a connection flood to a line a minute (OncePerMinute)."""
    logger = logging.getLogger("asyncio")
    if not any(isinstance(f, OncePerMinute) for f in logger.filters):
        logger.addFilter(OncePerMinute())


def protocol(held: Limits) -> type[Any]:
    """uvicorn's HTTP/1.1 protocol (h11) with these limits: pass it as uvicorn.Config(http=...)."""
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class Guarded(H11Protocol):
        limits = held

        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            self.idle_since = self.loop.time()
            self.seen: tuple[Any, float] = (None, self.idle_since)
            self.tick = self.loop.call_later(min(self.limits.head_s, self.limits.body_s), self.look)
            self.make_room()

        def connection_lost(self, exc: Exception | None) -> None:
            self.tick.cancel()
            super().connection_lost(exc)

        def on_response_complete(self) -> None:
            super().on_response_complete()
            self.idle_since = self.loop.time()  # the next request's head has its own HEAD_S

        def waiting_for_head(self) -> bool:
            return self.cycle is None or bool(self.cycle.response_complete)

        def look(self) -> None:
            """Close the connection if its head or its body is late; else look again later."""
            now = self.loop.time()
            if self.cycle is not self.seen[0]:
                self.seen = (self.cycle, now)
            if self.waiting_for_head():
                late = now - self.idle_since >= self.limits.head_s
            else:
                late = bool(self.cycle.more_body) and now - self.seen[1] >= self.limits.body_s
            if late:
                self.transport.close()
                return
            self.tick = self.loop.call_later(min(self.limits.head_s, self.limits.body_s), self.look)

        def make_room(self) -> None:
            """Over the limit, the connections idle longest (no head under way) are closed; this one, if none is."""
            excess = len(self.connections) - self.limits.connections
            if excess <= 0:
                return
            idle = sorted((c for c in self.connections if c is not self and isinstance(c, Guarded)
                           and c.waiting_for_head()), key=lambda c: c.idle_since)
            for other in idle[:excess]:
                other.transport.close()
                self.connections.discard(other)
            if len(idle) < excess:
                self.transport.close()

    return Guarded
