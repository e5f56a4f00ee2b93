"""Run lesson dynamic-batching's given server and replayer in a process of their own; print what was seen as JSON.

The tests run this as a subprocess: JAX, uvicorn and their threads then never
live in the test process (whose later tests fork).
Usage: python tests/batching_server_check.py
"""

from __future__ import annotations

import json
import os
import sys
import threading
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from grader.judge import expectations
from grader.lesson import catalog, handout, staff_code
from grader.lesson.catalog import Case
from grader.run import wire

LESSON = "dynamic-batching"


def given() -> dict:
    namespace: dict = {"__name__": "given_dynamic_batching"}
    for cell in handout.scaffold(catalog.get(LESSON)).cells:
        if cell.cell_type == "code" and "given" in cell.metadata.get("tags", []) and cell["id"] not in (
                "given-comparison", "given-hand-check"):
            exec(compile(cell.source, cell["id"], "exec"), namespace)
    return namespace


def sockets() -> int:
    count = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            count += os.readlink(f"/proc/self/fd/{fd}").startswith("socket:")
        except OSError:
            continue
    return count


def main() -> None:
    ns = given()
    ns["warm_shapes"]()  # JAX's own threads start here, before the counts below
    # and so do the HTTP client's for the life of the process (aiohttp's resolver: with aiodns installed, as
    # jupyterhub installs it, pycares starts one shutdown thread on its first use): a first short replay. A thread
    # the replay leaves each time still shows below, under a name the first run did not use.
    ns["replay_with_status"](ns["TRACE_OVERLOADED"][:2], 1, 0.0, queue_limit=3)
    seen: dict = {}
    threads, open_sockets = {t.name for t in threading.enumerate()}, sockets()
    records = ns["replay_with_status"](ns["TRACE_OVERLOADED"], 1, 0.0, queue_limit=3)
    seen["overloaded"] = {"count": len(records), "trace": len(ns["TRACE_OVERLOADED"]),
                          "statuses": sorted({str(r["status"]) for r in records}),
                          "retry_after": sorted({str(r["retry_after"]) for r in records if r["status"] == 503}),
                          "threads_left": sorted({t.name for t in threading.enumerate()} - threads),
                          "sockets_before": open_sockets, "sockets_after": sockets()}
    policy = staff_code.reference(catalog.get(LESSON))["policy"]
    live = ns["replay"](ns["TRACE_OVERLOADED"], *policy)
    case = expectations.asked(Case(name="live", mode="value", args=tuple(wire.encode([list(policy), ns["TRACE_OVERLOADED"]]))))
    check = staff_code.properties(catalog.get(LESSON))["live_records"]
    broken = [dict(r) for r in live]
    broken[5]["compute_end_ms"] = broken[5]["compute_start_ms"] - 1
    seen["replayed"] = {"problems": check(case, live), "broken_problems": check(case, broken),
                        "max_batch_size": max(r["batch_size"] for r in live), "policy": list(policy),
                        "keys": sorted(live[0])}
    refusals = []
    for trace in (np.zeros(401), np.array([0.0, 10_000.25]), np.array([2.0, 1.0])):
        try:
            ns["replay"](trace, 4, 1.0)
            refusals.append("accepted")
        except ValueError as err:
            refusals.append(str(err))
    seen["refusals"] = refusals
    seen["traces"] = {name: {"count": int(ns[name].size), "last": float(ns[name][-1]),
                             "sorted": bool(np.all(np.diff(ns[name]) >= 0)),
                             "quarters": bool(np.all(ns[name] * 4 == np.round(ns[name] * 4)))}
                      for name in ("TRACE_STABLE", "TRACE_OVERLOADED", "TRACE_BURST")}
    print(json.dumps(seen))


if __name__ == "__main__":
    main()
