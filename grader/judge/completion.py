"""The lesson's first rule, seen: a timer that stops before the device finished times the dispatch, not the work.

JAX returns from a call as soon as the work is queued. A function a lesson
names in `timed` (`measure`) must wait for completion inside each timed
region: `block_until_ready()`, or a copy to the host (`np.asarray`,
`jax.device_get`, `.item()`, `float(...)`, `.tolist()`). This is read from the
student's source, outside the kernel, and said as feedback naming the line;
it never costs a point (the contract never grades speed).
"""

from __future__ import annotations

import ast
from typing import Any

TIMERS = {"perf_counter", "perf_counter_ns", "monotonic", "monotonic_ns", "time", "time_ns", "process_time"}
WAITS = {"block_until_ready", "device_get", "asarray", "array", "item", "tolist", "float"}


def _called(node: ast.Call) -> str:
    func = node.func
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""


def _regions(function: ast.FunctionDef) -> list[tuple[int, int]]:
    """(first line, stopping line) of each timed region: from a timer read that starts one (`t = perf_counter()`)
    to the next read that stops one (a read inside a subtraction, `perf_counter() - t`)."""
    stops = {id(side) for node in ast.walk(function) if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Sub)
             for side in (node.left, node.right)}
    reads = sorted((c for c in ast.walk(function) if isinstance(c, ast.Call) and _called(c) in TIMERS),
                   key=lambda c: (c.lineno, c.col_offset))
    regions = []
    for index, read in enumerate(reads):
        if id(read) in stops:
            continue
        stop = next((later for later in reads[index + 1:] if id(later) in stops), None)
        if stop is not None:
            regions.append((read.lineno, stop.lineno))
    return regions


def unwaited(notebook: Any, names: tuple[str, ...]) -> list[str]:
    """One line per timed region, in the functions of `names` (defined at top level in a code cell), that never
    waits for completion before its timer stops: where, and what to add."""
    said: list[str] = []
    if not names:  # most exercises time nothing: no cell need be parsed for them
        return said
    for index, cell in enumerate(notebook.cells):
        if cell.cell_type != "code":
            continue
        try:
            tree = ast.parse(cell.source)
        except (SyntaxError, ValueError, RecursionError):
            continue
        for node in tree.body:
            if not isinstance(node, ast.FunctionDef) or node.name not in names:
                continue
            waits = [c.lineno for c in ast.walk(node) if isinstance(c, ast.Call) and _called(c) in WAITS]
            for first, stop in _regions(node):
                if not any(first <= line < stop or line == first == stop for line in waits):
                    said.append(f"`{node.name}` (cell {index + 1}, line {stop}): the timer stops without waiting "
                                "for the device: JAX returns before the work is done, so this times the dispatch, "
                                "not the computation. Call `.block_until_ready()` on the result inside the timed "
                                "region (the lesson's first rule; timings are never graded on speed)")
    return said
