"""Who may ask a course cluster for what: a Dask preload for the scheduler, every worker and every nanny.

TLS with the course CA decides who may connect at all; it cannot decide who may
submit work, since a grading machine's certificate and key are on that machine.
This guard reads the role of every connection from its peer's certificate (the
role `grader cluster certs` wrote into its common name) and lets each role ask
only for what that role needs:

- the course's client (the machine that runs `grader batch`) and the scheduler: everything;
- a worker: on the scheduler, joining, heartbeats, leaving and logging; on another worker, its data; on its
  nanny, closing. Never `register-client` (submitting work), `run_function`, `broadcast`, `proxy`, plugins
  (code on the scheduler or the workers), nor `scatter`/`gather` (other students' grades).
- anything else (no certificate, another role): nothing.

A refused request is logged on the server with the peer's address and role, and
the caller gets an error. Start every process with it:

    dask scheduler --preload grader.classroom.cluster_guard ...
    dask worker --preload grader.classroom.cluster_guard --preload-nanny grader.classroom.cluster_guard ...

`grader batch --scheduler` refuses a scheduler, or a worker, that runs without it.
"""

from __future__ import annotations

import logging
from typing import Any

MODULE = "grader.classroom.cluster_guard"
LOCAL_CLUSTER = {"scheduler_kwargs": {"preload": [MODULE]}, "preload": [MODULE], "preload_nanny": [MODULE]}
"""distributed.LocalCluster's keywords that start its scheduler, workers and nannies guarded (tests, benches)."""
PREFIX = "inference-grader "
TRUSTED = ("client", "scheduler")
"""Roles that may ask for anything."""
WORKER_MAY = {
    "Scheduler": frozenset({"register-worker", "heartbeat_worker", "unregister", "register_nanny", "log_event",
                            "identity", "versions", "get_metadata", "set_metadata", "who_has", "has_what",
                            "retire_workers"}),
    "Worker": frozenset({"get_data", "identity", "versions"}),
    "Nanny": frozenset({"close_gracefully", "identity"}),
}
"""What a worker's certificate may ask of each kind of server."""
_log = logging.getLogger("grader.cluster_guard")
_ACTIVE = False


def role(comm: Any) -> str:
    """The role in the peer certificate's common name (`client`, `worker`, `scheduler`), or "" without one."""
    cert = (getattr(comm, "extra_info", None) or {}).get("peercert") or {}
    for rdn in cert.get("subject", ()):
        for key, value in rdn:
            if key == "commonName" and isinstance(value, str) and value.startswith(PREFIX):
                return value[len(PREFIX):]
    return ""


def allowed(server_kind: str, peer: str, op: str) -> bool:
    """Whether a peer of this role may call `op` on this kind of server."""
    if peer in TRUSTED:
        return True
    return peer == "worker" and op in WORKER_MAY.get(server_kind, frozenset())


def _guarded(kind: str, op: str, handler: Any) -> Any:
    from distributed.core import _expects_comm
    from distributed.utils import has_keyword

    takes_comm, takes_serializers = _expects_comm(handler), has_keyword(handler, "serializers")

    def guarded(comm: Any, serializers: Any = None, **msg: Any) -> Any:
        peer = role(comm)
        if not allowed(kind, peer, op):
            _log.warning("refused %r from %s (%s): not for that certificate's role", op,
                         getattr(comm, "peer_address", "?"), f"role {peer}" if peer else "no course certificate")
            raise PermissionError(f"{op}: refused by the course cluster's guard for "
                                  f"{'a ' + peer if peer else 'a peer without a course certificate'}")
        if takes_serializers:
            msg["serializers"] = serializers
        return handler(comm, **msg) if takes_comm else handler(**msg)

    guarded.__name__ = getattr(handler, "__name__", op)
    return guarded


def dask_setup(server: Any) -> None:
    """Guard every handler of this server (the scheduler, a worker or a nanny)."""
    global _ACTIVE
    kind = type(server).__name__
    for op, handler in list(server.handlers.items()):
        server.handlers[op] = _guarded(kind, op, handler)
    _ACTIVE = True


def active() -> bool:
    """Whether this process's server runs guarded (asked of the scheduler and each worker by the batch)."""
    return _ACTIVE
