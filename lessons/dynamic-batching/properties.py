"""Consistency checks for the measured exercise, run in the grader process.

They judge how the live replay was recorded, never how fast it was: one record
per request of the trace, each record's timestamps in order, batches that agree
with their sizes and the policy, and `measured` recomputed from the records.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

FIELDS = ("id", "scheduled_ms", "sent_ms", "enqueued_ms", "dispatched_ms", "compute_start_ms", "compute_end_ms",
          "received_ms", "batch_id", "batch_size")
ORDER = ("enqueued_ms", "dispatched_ms", "compute_start_ms", "compute_end_ms", "received_ms")
LATE_START_SLACK_MS = 1.0
OVERLAP_MS = 1.0       # request i overlaps when scheduled at least this long before reply i-1 arrived
MIN_OVERLAPS = 10      # fewer overlapping requests than this say nothing about the client's order of events


def _number(value: Any) -> float | None:
    try:
        number = float(np.asarray(value, dtype=float))
    except (TypeError, ValueError, OverflowError):
        return None
    return number if math.isfinite(number) else None


def _records(answer: Any) -> tuple[list[dict[str, float]], list[str]]:
    if not isinstance(answer, list) or not answer:
        return [], ["`live` should be the non-empty list of records `replay` returned"]
    rows = []
    for index, record in enumerate(answer):
        if not isinstance(record, dict):
            return [], [f"record {index} is a {type(record).__name__}, not a dict"]
        missing = [key for key in FIELDS if key not in record]
        if missing:
            return [], [f"record {index} has no {', '.join(missing)}"]
        row = {key: _number(record[key]) for key in FIELDS}
        bad = [key for key, value in row.items() if value is None]
        if bad:
            return [], [f"record {index}: {', '.join(bad)} should be finite numbers"]
        rows.append(row)
    return rows, []


def live_records(asked: Any, answer: Any) -> list[str]:
    """`live` holds one consistent record per request of the trace, under the student's policy."""
    policy, trace = asked.args
    rows, problems = _records(answer)
    if problems:
        return problems
    trace = np.asarray(trace, dtype=float).ravel()
    if len(rows) != trace.size:
        return [f"`live` has {len(rows)} records; the trace has {trace.size} requests (one record each)"]
    if sorted(int(r["id"]) for r in rows) != list(range(trace.size)):
        return ["every request id 0..n-1 should appear exactly once in `live`"]
    try:
        max_batch = float(policy[0])
    except (TypeError, IndexError, ValueError):
        return ["`policy` should be the (max_batch, max_wait_ms) pair `live` was replayed with"]
    problems = []
    for r in rows:
        where = f"record {int(r['id'])}"
        if r["scheduled_ms"] != trace[int(r["id"])]:
            problems.append(f"{where}: scheduled_ms {r['scheduled_ms']:g} is not its arrival in the trace")
        if r["sent_ms"] < r["scheduled_ms"] - LATE_START_SLACK_MS:
            problems.append(f"{where}: sent_ms is more than {LATE_START_SLACK_MS:g} ms before scheduled_ms")
        times = [r[key] for key in ORDER]
        if any(later < earlier for earlier, later in zip(times, times[1:])):
            problems.append(f"{where}: the timestamps are out of order (enqueued <= dispatched <= compute_start"
                            " <= compute_end <= received)")
        if r["batch_size"] > max_batch or r["batch_size"] < 1:
            problems.append(f"{where}: batch_size {r['batch_size']:g} is outside 1..max_batch ({max_batch:g})")
        if problems:
            return problems
    batches: dict[float, list[dict[str, float]]] = {}
    for r in rows:
        batches.setdefault(r["batch_id"], []).append(r)
    for batch_id, members in batches.items():
        sizes = {m["batch_size"] for m in members}
        if len(sizes) != 1 or sizes != {float(len(members))}:
            return [f"batch {batch_id:g}: batch_size {sorted(sizes)} differs from the {len(members)} records "
                    "sharing its batch_id"]
        for key in ("dispatched_ms", "compute_start_ms", "compute_end_ms"):
            if len({m[key] for m in members}) != 1:
                return [f"batch {batch_id:g}: its records disagree on {key}"]
    return open_loop(rows)


def open_loop(rows: list[dict[str, float]]) -> list[str]:
    """The contract's open-loop evidence: requests due before the previous reply were mostly sent before it.

    In the order of `scheduled_ms` (ties by id), request i overlaps when it was
    scheduled at least OVERLAP_MS before the reply to request i - 1 arrived.
    With at least MIN_OVERLAPS of them, at least half must have been sent before
    that reply; a client that waits for each reply sends none of them early.
    This checks the order of events, never their speed.
    """
    ordered = sorted(rows, key=lambda r: (r["scheduled_ms"], r["id"]))
    overlapping = [(before, after) for before, after in zip(ordered, ordered[1:])
                   if after["scheduled_ms"] + OVERLAP_MS <= before["received_ms"]]
    if len(overlapping) < MIN_OVERLAPS:
        return []
    early = sum(1 for before, after in overlapping if after["sent_ms"] < before["received_ms"])
    if 2 * early >= len(overlapping):
        return []
    return [f"the replay is closed-loop: of the {len(overlapping)} requests due before the previous reply arrived, "
            f"only {early} were sent before it (at least half must be); send every request at its scheduled time "
            "whether or not earlier ones have returned, as the given `replay` does"]


def measured_summary(asked: Any, answer: Any) -> list[str]:
    """`measured` is the latency summary of the records' latencies counted from scheduled_ms."""
    (records,) = asked.args
    rows, problems = _records(records)
    if problems:
        return ["`measured` cannot be checked: " + problems[0]]
    latencies = np.array([r["received_ms"] - r["scheduled_ms"] for r in rows])
    want = {"p50": np.percentile(latencies, 50), "p95": np.percentile(latencies, 95),
            "p99": np.percentile(latencies, 99), "max": latencies.max(), "count": latencies.size}
    if not isinstance(answer, dict):
        return [f"`measured` should be the dict latency_summary returns, got {type(answer).__name__}"]
    for key, value in want.items():
        got = _number(answer.get(key))
        if got is None or abs(got - float(value)) > 1e-9 + 1e-6 * abs(float(value)):
            return [f"measured['{key}'] = {answer.get(key)!r} is not the {key} of received_ms - scheduled_ms "
                    f"over `live` ({float(value):.6g})"]
    return []
