"""Shared helpers for the benchmarks: sample submissions and a plain nbclient run."""

from __future__ import annotations

import contextlib
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from conftest import patched_solution

from grader.lesson import catalog, handout


def mixed_set(folder: Path, per_lesson: int) -> dict[str, list[Path]]:
    """Write solution, scaffold and bug notebooks of both lessons, `per_lesson` each."""
    out: dict[str, list[Path]] = {}
    for lesson_id in ("inference-capacity", "inference-scaling"):
        lesson = catalog.get(lesson_id)
        bugs = sorted((ROOT / "tests" / "submissions" / lesson_id).glob("*.py"))
        bugs = [b for b in bugs if "infinite-loop" not in b.name]
        made = []
        target = folder / lesson_id
        target.mkdir(parents=True, exist_ok=True)
        for i in range(per_lesson):
            kind = i % (len(bugs) + 2)
            if kind == 0:
                nb = handout.solution_notebook(lesson)
            elif kind == 1:
                nb = handout.scaffold(lesson)
            else:
                nb = patched_solution(lesson_id, bugs[kind - 2])
            path = target / f"s{i:03d}.ipynb"
            nbformat.write(nb, str(path))
            made.append(path)
        out[lesson_id] = made
    return out


def plain_run(path: Path, timeout: int = 60) -> float:
    """Run a notebook with stock nbclient in a fresh default kernel; seconds. Kernel chatter is muted."""
    began = time.perf_counter()
    nb = nbformat.read(str(path), as_version=4)
    with quiet_stderr():
        NotebookClient(nb, timeout=timeout, allow_errors=True, kernel_name="python3").execute()
    return time.perf_counter() - began


@contextlib.contextmanager
def quiet_stderr():
    """Send file descriptor 2 to /dev/null for the duration (stock kernels warn on every start)."""
    sys.stderr.flush()
    saved = os.dup(2)
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(null)


def timed(fn: Callable[[], Any]) -> float:
    began = time.perf_counter()
    fn()
    return time.perf_counter() - began


def bytecode(tree: Path | None = None) -> str:
    """Compile the grader's modules (those `import grader` finds, or `tree`'s) to bytecode, as an installed grader
    has them, and say so: where PYTHONDONTWRITEBYTECODE is set (it is on the course's build machines) a checkout is
    otherwise compiled again by every grader process that starts (about 0.15 s), which is no cost of the grader's."""
    import compileall

    if tree is None:
        import grader

        folder = Path(grader.__file__).parent
    else:
        folder = tree / "grader"
    compileall.compile_dir(str(folder), quiet=1)
    setting = os.environ.get("PYTHONDONTWRITEBYTECODE")
    return f"grader modules compiled to bytecode first ({folder}; PYTHONDONTWRITEBYTECODE={setting or 'unset'})"


def median(values: list[float]) -> float:
    return statistics.median(values)
