"""Consistency checks for the measured exercise, run in the grader process.

They judge how a timing was taken, never how fast it was: keys, sample count,
finite positive samples, percentiles recomputed from the returned samples, the
examples-per-second formula, and the network's output against NumPy.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

KEYS = ("batch", "first_call_ms", "samples_ms", "p50_ms", "p95_ms", "steady_examples_per_second")
WEIGHT_SEED = 82


def _close(a: float, b: float) -> bool:
    return abs(a - b) <= 1e-9 + 1e-6 * abs(b)


def _number(value: Any) -> float | None:
    try:
        number = float(np.asarray(value, dtype=float))
    except (TypeError, ValueError):
        return None
    return number


def _report(report: Any, batch: int, repeats: int, where: str) -> list[str]:
    if not isinstance(report, dict):
        return [f"{where} should return a dict, got {type(report).__name__}"]
    missing = [key for key in KEYS if key not in report]
    if missing:
        return [f"{where} is missing the keys {missing}"]
    problems = []
    if _number(report["batch"]) != batch:
        problems.append(f"{where}['batch'] should echo the batch size {batch}, got {report['batch']!r}")
    try:
        samples = np.asarray(report["samples_ms"], dtype=float).ravel()
    except (TypeError, ValueError):
        return problems + [f"{where}['samples_ms'] should be a list of numbers"]
    if samples.size != repeats:
        problems.append(f"{where}['samples_ms'] has {samples.size} samples; expected one per warm call ({repeats})")
    if samples.size == 0 or not np.all(np.isfinite(samples)) or not np.all(samples > 0):
        problems.append(f"{where}['samples_ms'] must be finite and > 0 (milliseconds, completion inside the timer)")
        return problems
    first = _number(report["first_call_ms"])
    if first is None or not math.isfinite(first) or first <= 0:
        problems.append(f"{where}['first_call_ms'] must be a finite time > 0 in milliseconds")
    for key, q in (("p50_ms", 50), ("p95_ms", 95)):
        got, want = _number(report[key]), float(np.percentile(samples, q))
        if got is None or not _close(got, want):
            problems.append(f"{where}['{key}'] = {report[key]!r} is not the linear p{q} of its own samples ({want:.6g})")
    p50, eps = _number(report["p50_ms"]), _number(report["steady_examples_per_second"])
    if p50 and eps is not None and not _close(eps, 1000 * batch / p50):
        problems.append(f"{where}['steady_examples_per_second'] should be 1000 * batch / p50_ms = {1000 * batch / p50:.6g}")
    return problems


def measure_report(asked: Any, answer: Any) -> list[str]:
    """`measure(batch, repeats=r)` returns a consistent report."""
    batch = int(asked.args[0])
    repeats = int(asked.kwargs.get("repeats", 40))
    return _report(answer, batch, repeats, f"measure({batch}, repeats={repeats})")


def measurements(asked: Any, answer: Any) -> list[str]:
    """`measurements` holds consistent reports for batches 1, 8 and 32."""
    if not isinstance(answer, list) or len(answer) != 3:
        return ["`measurements` should be the list [measure(1), measure(8), measure(32)]"]
    problems = []
    for batch, report in zip((1, 8, 32), answer):
        problems += _report(report, batch, 40, f"measurements entry for batch {batch}")
    return problems


def infer_output(asked: Any, answer: Any) -> list[str]:
    """`infer(x)` matches a float64 NumPy computation with the scaffold's weights."""
    weights = np.random.default_rng(WEIGHT_SEED)
    w1 = weights.normal(0, 0.1, (64, 32)).astype(np.float32).astype(np.float64)
    w2 = weights.normal(0, 0.1, (32, 8)).astype(np.float32).astype(np.float64)
    x = np.asarray(asked.args[0], dtype=np.float64)
    want = np.tanh(x @ w1) @ w2
    try:
        got = np.asarray(answer, dtype=np.float64)
    except (TypeError, ValueError):
        return [f"infer returned {type(answer).__name__}, not an array"]
    if got.shape != want.shape:
        return [f"infer returned shape {list(got.shape)}; expected {list(want.shape)}"]
    if not np.allclose(got, want, rtol=2e-5, atol=2e-6):
        return ["infer's output differs from tanh(x @ W1) @ W2 with the given weights (seed 82); leave the given cell unchanged"]
    return []
