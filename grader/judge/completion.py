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

from grader.base import syntax

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
    """One line per timed region, in the functions of `names` or any function of the notebook they call (defined at
    top level in a code cell: a helper such as `_timed_call`), that never waits for completion before its timer
    stops: where, and what to add. A region that calls a function of the notebook that waits, waits."""
    said: list[str] = []
    if not names:  # most exercises time nothing: no cell need be parsed for them
        return said
    functions = _functions(notebook)
    callers: dict[str, str] = {}
    queue = [name for name in names if name in functions]
    reached = list(queue)
    while queue:
        caller = queue.pop(0)
        for called in _calls(functions[caller][1]):
            if called in functions and called not in reached:
                reached.append(called)
                callers[called] = caller
                queue.append(called)
    waiting: dict[str, bool] = {}
    for name in reached:
        index, node = functions[name]
        waits = [c.lineno for c in ast.walk(node) if isinstance(c, ast.Call)
                 and (_called(c) in WAITS or _waits(_called(c), functions, waiting, set()))]
        via = f" (called by `{callers[name]}`)" if name in callers else ""
        for first, stop in _regions(node):
            if not any(first <= line < stop or line == first == stop for line in waits):
                said.append(f"`{name}`{via} (cell {index + 1}, line {stop}): the timer stops without waiting "
                            "for the device: JAX returns before the work is done, so this times the dispatch, "
                            "not the computation. Call `.block_until_ready()` on the result inside the timed "
                            "region (the lesson's first rule; timings are never graded on speed)")
    return said


def _functions(notebook: Any) -> dict[str, tuple[int, ast.FunctionDef]]:
    """The notebook's top-level functions by name (the last definition wins, as it would in the kernel)."""
    found: dict[str, tuple[int, ast.FunctionDef]] = {}
    for index, cell in enumerate(notebook.cells):
        if cell.cell_type != "code":
            continue
        try:
            tree = syntax.parse(cell.source)
        except (SyntaxError, ValueError, RecursionError):
            continue
        for node in tree.body:
            if isinstance(node, ast.FunctionDef):
                found[node.name] = (index, node)
    return found


def _calls(function: ast.FunctionDef) -> list[str]:
    """The plain names a function calls, in order (`helper(x)`)."""
    return [c.func.id for c in ast.walk(function) if isinstance(c, ast.Call) and isinstance(c.func, ast.Name)]


def _waits(name: str, functions: dict[str, tuple[int, ast.FunctionDef]], known: dict[str, bool], seen: set[str]) -> bool:
    """Whether calling the notebook's function `name` waits for completion (itself, or a function it calls)."""
    if name not in functions or name in seen:
        return False
    if name not in known:
        node = functions[name][1]
        known[name] = any(isinstance(c, ast.Call) and _called(c) in WAITS for c in ast.walk(node)) or any(
            _waits(called, functions, known, seen | {name}) for called in _calls(node))
    return known[name]
