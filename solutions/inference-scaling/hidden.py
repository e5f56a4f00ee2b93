"""Hidden cases for lesson inference-scaling, drawn from the grade's recorded seed."""

from __future__ import annotations

from typing import Any

import numpy as np

SEED_SIZES = {1, 2, 4, 8, 16, 32, 64, 128, 200}
SEED_CLASSES = ([60, 4], [300, 1])


def _sizes(rng: np.random.Generator, count: int) -> list[int]:
    pool = np.array([s for s in range(1, 201) if s not in SEED_SIZES])
    return sorted(int(s) for s in rng.choice(pool, size=count, replace=False))


def _classes(rng: np.random.Generator) -> tuple[list[int], list[int]]:
    """A cost pair with a crossover: the accelerator costs more per call, less per request."""
    general = [int(rng.integers(10, 200)), int(rng.integers(3, 12))]
    accel = [general[0] + int(rng.integers(20, 900)), int(rng.integers(0, general[1]))]
    return general, accel


def cases(rng: np.random.Generator) -> dict[str, list[dict[str, Any]]]:
    """Draw every exercise's hidden cases."""
    decimals = {"rows_per_prediction": 2, "avg_wait": 2, "accuracy": 4}
    sweep = [{"call": "sweep", "args": [size], "decimals": decimals} for size in _sizes(rng, 4)]

    crossover: list[dict[str, Any]] = []
    for _ in range(4):
        general, accel = _classes(rng)
        crossover.append({"call": "crossover_point", "args": [general, accel]})
    for _ in range(2):  # no crossover: the accelerator's unit cost is equal or higher
        general, accel = _classes(rng)
        accel[1] = general[1] + int(rng.integers(0, 3))
        crossover.append({"call": "crossover_point", "args": [general, accel], "raises": "ValueError"})
    for _ in range(3):
        crossover.append({"call": "realized_group_size",
                          "args": [int(rng.integers(50, 1000)), int(rng.integers(1, 300))]})
    # requested and realised sizes disagree here: 200 requests, size 81..99, seed classes
    crossover.append({"call": "cheaper_class", "args": [200, int(rng.integers(81, 100)), *SEED_CLASSES]})
    for _ in range(4):
        general, accel = _classes(rng)
        crossover.append({"call": "cheaper_class",
                          "args": [int(rng.integers(20, 800)), int(rng.integers(1, 250)), general, accel]})
    general, accel = _classes(rng)
    accel[1] = general[1] + 1  # never raises, even without a crossover
    crossover.append({"call": "cheaper_class", "args": [300, 50, general, accel]})

    cache = []
    for _ in range(3):
        length = int(rng.integers(40, 400))
        popular = int(rng.integers(20, 200))
        stream = [f"A{int(i) + 1:03d}" for i in rng.integers(0, popular, size=length)]
        cache.append({"call": "cache_batching_factors", "args": [stream, int(rng.integers(2, 64))]})
    calls = [f"A{int(i) + 1:03d}" for i in rng.integers(0, 200, size=int(rng.integers(10, 120)))]
    cache.append({"call": "cost", "args": [calls, int(rng.integers(1, 40))]})
    cache.append({"call": "cost", "args": [calls[:25], int(rng.integers(1, 10)), "2026-11"]})
    return {"batch-sweep": sweep, "crossover": crossover, "cache-product": cache}
