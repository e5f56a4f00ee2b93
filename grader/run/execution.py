"""Run: execute a notebook afresh, then the probe cells, in a fresh kernel (attempt.py runs one kernel).

Errors in a cell do not stop the run (`allow_errors`); a cell past its timeout
is interrupted (message-mode interrupt) and later cells still run; a kernel
that ignores the interrupt, or dies, is replaced and the notebook is run once
more without the cell or probe that caused it. A whole-notebook watchdog kills
the kernel at the deadline. Output kept is capped per cell and per notebook,
and ZMQ messages larger than a bound end the run as an output flood.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from grader.base.limits import Limits
from grader.kernel.managers import SandboxKernelManager
from grader.run.attempt import Attempt, AttemptRun, Plan
from grader.run.cells import CellRun, ProbeOutcome, cell_name
from grader.run.sections import Sectioned


@dataclass(frozen=True)
class Executed:
    """The outcome of running one submission."""

    cells: tuple[CellRun, ...]
    """Student cells, in notebook order."""
    tail: dict[str, ProbeOutcome]
    """Per probe key, what its cell (or its section) came to."""
    notebook: Any
    """The freshly executed notebook (probe cells removed), outputs capped."""
    attempts: int
    """Kernels started (1 unless a kernel died or hung)."""
    dropped: tuple[str, ...]
    """What was left out of later attempts and why."""
    seconds: float
    """Wall time of the whole run."""
    flood: bool = False
    """A message over the size bound arrived: the kernel was stopped."""
    deadline_hit: bool = False
    """The whole-notebook watchdog fired."""
    timings: dict[str, float] = field(default_factory=dict)
    """Seconds spent starting kernels, in cells and in probes."""


def execute(
    notebook: Any,
    tail: list[tuple[str, str | Sectioned]],
    limits: Limits,
    make_kernel: Callable[[], SandboxKernelManager],
    given: frozenset[int] = frozenset(),
    warm: frozenset[int] = frozenset(),
) -> Executed:
    """Run the notebook's cells, then each (key, source) tail cell, in a fresh kernel.

    A tail cell's source may be `Sectioned`: its outcomes are then reported per section key.

    `given` holds the indices of cells that are the lesson's own given code,
    unchanged: they get `limits.given_cell_timeout`. `warm` holds the leading
    given cells whose run the kernel starts with (a zygote ran them once,
    without output): they are counted as run, and not sent.
    """
    budgets = cell_budgets(notebook, limits, given)
    return asyncio.run(_execute(notebook, tail, limits, make_kernel, budgets, warm))


def cell_budgets(notebook: Any, limits: Limits, given: frozenset[int]) -> dict[int, float]:
    """Seconds each cell may run: its own override, else a given cell's budget, else `cell_timeout`."""
    overrides = dict(limits.cell_timeouts)
    budgets = {}
    for index, cell in enumerate(notebook.cells):
        if cell.get("id") in overrides:
            budgets[index] = overrides[cell["id"]]
        elif index in given:
            budgets[index] = max(limits.cell_timeout, limits.given_cell_timeout)
        else:
            budgets[index] = limits.cell_timeout
    return budgets


async def _execute(notebook: Any, tail: list[tuple[str, str | Sectioned]], limits: Limits,
                   make_kernel: Callable[[], SandboxKernelManager], budgets: dict[int, float],
                   warm: frozenset[int] = frozenset()) -> Executed:
    began = time.monotonic()
    deadline = began + limits.notebook_timeout
    skip_cells: dict[int, str] = {}
    skip_tail: dict[str, str] = {}
    dropped: list[str] = []
    attempt = Attempt()
    attempts = 0
    timings = {"startup": 0.0, "cells": 0.0, "probes": 0.0}
    flooded = False
    while attempts < limits.attempts:
        attempts += 1
        plan = Plan(notebook, tail, limits, make_kernel, dict(skip_cells), dict(skip_tail), deadline, budgets, warm)
        attempt = await AttemptRun(plan).run()
        timings["startup"] += attempt.startup
        timings["cells"] += attempt.cell_seconds
        timings["probes"] += attempt.probe_seconds
        flooded = flooded or attempt.flood
        if attempt.killer is None or attempt.deadline_hit:
            break
        where, key = attempt.killer
        if where == "cell":
            status = attempt.cells[key].status
            skip_cells[key] = status if status == "timeout" else (attempt.cells[key].evalue or "killed the kernel")
            dropped.append(f"{cell_name(notebook, key)} "
                           + ("ignored the interrupt after its timeout" if status == "timeout"
                              else attempt.cells[key].evalue or "killed the kernel"))
        else:
            skip_tail[key] = attempt.tail[key].status
            dropped.append(f"the probe of exercise '{key}' "
                           + ("ignored the interrupt after its timeout" if skip_tail[key] == "timeout" else "killed the kernel"))
    cells = tuple(attempt.cells[i] for i in range(len(notebook.cells)))
    return Executed(cells=cells, tail=attempt.tail, notebook=attempt.notebook, attempts=attempts,
                    dropped=tuple(dropped), seconds=time.monotonic() - began, flood=flooded,
                    deadline_hit=attempt.deadline_hit, timings=timings)
