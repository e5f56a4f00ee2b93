"""The front door's limits, which uvicorn leaves to a reverse proxy: how long a client may take over a request's
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

import logging
import resource
import time
from dataclasses import dataclass
from typing import Any

HEAD_S = 10.0
"""Seconds a client has to send a request's head (the request line and its headers)."""
BODY_S = 150.0
"""Seconds a request's body may take to arrive once its head has (an upload's own limit is shorter: upload.py)."""
RESERVE_FILES = 128
"""Open files kept for the server's own use (its queue, its logs, the files it serves) beside its connections."""
KEEP_ALIVE_S = 5
"""Seconds an idle kept-alive connection stays open between requests."""


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
