"""Hidden cases for lesson inference-capacity, drawn from the grade's recorded seed.

Each case has the same form as a public case in lesson.toml; where no `expect`
is given, the judge asks the reference namespace for the answer on the same input.
"""

from __future__ import annotations

from typing import Any

import numpy as np


def _arrivals(rng: np.random.Generator, n: int) -> list[float]:
    """Non-negative, non-decreasing arrivals with ties and idle gaps."""
    gaps = rng.choice([0.0, 0.0, 0.5, 1.0, 2.5, 7.0], size=n) * rng.uniform(0.5, 1.5, size=n)
    gaps = np.round(gaps, 3)
    return np.cumsum(gaps).round(3).tolist()


def _queue(arrivals: list[float], service: float) -> dict[str, Any]:
    return {"call": "simulate_queue", "args": [{"array": arrivals}, service]}


def _invalid(arrivals: Any, service: float) -> dict[str, Any]:
    return dict(_queue(arrivals, service), raises="ValueError")


def cases(rng: np.random.Generator) -> dict[str, list[dict[str, Any]]]:
    """Draw every exercise's hidden cases."""
    service = lambda: float(np.round(rng.uniform(0.5, 5.0), 2))  # noqa: E731
    drawn: dict[str, list[dict[str, Any]]] = {}

    drawn["measure"] = [
        {"call": "measure", "args": [int(rng.integers(2, 17))], "kwargs": {"repeats": int(rng.integers(3, 12))},
         "property": "measure_report"},
        {"call": "infer", "args": [{"array": rng.normal(size=(int(rng.integers(1, 6)), 64)).tolist()}],
         "property": "infer_output"},
    ]

    queue = [_queue(_arrivals(rng, int(rng.integers(3, 12))), service()) for _ in range(5)]
    queue.append(_queue([0.0, 0.0, 0.0, 10.0, 10.0], 1.5))          # ties, then an idle gap
    queue.append(_queue([3.25], service()))                           # one request, arriving late
    drawn["queue-hand-check"] = queue

    drawn["burst"] = [_queue([0.0] * int(n), service()) for n in rng.choice(np.arange(2, 10), size=3, replace=False)]

    pairs = []
    for _ in range(2):
        n, s = int(rng.integers(3, 9)), service()
        spacing = float(np.round(s * rng.uniform(1.1, 2.0), 2))
        pairs += [_queue((spacing * np.arange(n)).round(3).tolist(), s), _queue([0.0] * n, s)]
    drawn["burst-sensitivity"] = pairs

    ordered = sorted(_arrivals(rng, 5))
    drawn["invalid-timeline"] = [
        _invalid(ordered[::-1] if ordered[0] != ordered[-1] else [3.0, 1.0], service()),  # out of order
        _invalid([0.0, 1.0, 2.0], 0.0),
        _invalid([0.0, 1.0, 2.0], -float(np.round(rng.uniform(0.5, 3.0), 2))),
        _invalid([0.0, 1.0], float("nan")),
        _invalid([0.0, 1.0], float("inf")),
        _invalid([0.0, float("nan"), 2.0], 1.0),
        _invalid([0.0, 1.0, float("inf")], 1.0),
        _invalid([[0.0, 1.0], [2.0, 3.0]], 1.0),
        dict(_queue([1.0, 1.0, 1.0], service()), accepts=True),                         # ties are valid
        dict(_queue([float(np.round(rng.uniform(0, 9), 2))], service()), accepts=True),  # so is one request
    ]

    deadline = []
    for _ in range(4):
        limit = float(rng.integers(2, 12))
        latencies = rng.choice([limit - 1.5, limit - 0.25, limit, limit, limit + 0.25, limit + 3.0], size=int(rng.integers(4, 10)))
        deadline.append({"call": "count_missed", "args": [{"array": latencies.tolist()}, limit]})
    drawn["deadline"] = deadline

    plans = []
    while len(plans) < 5:
        arrival, capacity = float(rng.integers(50, 5000)), float(rng.integers(20, 900))
        utilization = float(np.round(rng.uniform(0.3, 1.0), 2))
        ratio = arrival / (utilization * capacity)
        if abs(ratio - round(ratio)) > 1e-6:  # whole-number ratios make ceil ambiguous under rounding
            plans.append({"call": "plan_replicas", "args": [arrival, capacity, utilization]})
    plans += [
        {"call": "plan_replicas", "args": [0.0, 200.0, 0.7], "raises": "ValueError"},
        {"call": "plan_replicas", "args": [300.0, -5.0, 0.7], "raises": "ValueError"},
        {"call": "plan_replicas", "args": [300.0, 200.0, 0.0], "raises": "ValueError"},
        {"call": "plan_replicas", "args": [300.0, 200.0, float(np.round(rng.uniform(1.05, 2.0), 2))], "raises": "ValueError"},
    ]
    drawn["replica-plan"] = plans
    return drawn
