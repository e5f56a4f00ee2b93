"""Grading time with and without the sandbox, alternating runs.

Usage: python bench/sandbox_overhead.py [rounds]

Run it as root (bubblewrap builds the namespaces, the kernel drops to
`nobody`) and as a normal user (bubblewrap inside a user namespace): the
first line says which. `.ci/rootless` sets up such a user and its venv.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import nbformat
from common import median, timed

from grader import grading
from grader.base.limits import Limits
from grader.kernel import sandbox
from grader.lesson import catalog, handout
from grader.lesson.draw import Given


def main(rounds: int) -> None:
    report = sandbox.plan(Limits())
    if report.mode != "bwrap":
        sys.exit("bubblewrap is not available here; nothing to compare")
    print("sandbox: bubblewrap " + ("in a user namespace, grader running as a normal user" if report.rootless
                                    else "run by root, kernel dropped to nobody")
          + f"; every kernel in a user namespace of its own: {report.budgets['own_user_namespace']}")
    with tempfile.TemporaryDirectory() as tmp:
        for lesson_id in ("inference-capacity", "inference-scaling"):
            path = Path(tmp) / f"{lesson_id}.ipynb"
            nbformat.write(handout.solution_notebook(catalog.get(lesson_id)), str(path))
            runs: dict[str, list[float]] = {"bwrap": [], "none": []}
            for i in range(rounds):
                modes = ["bwrap", "none"] if i % 2 == 0 else ["none", "bwrap"]
                for mode in modes:
                    runs[mode].append(timed(lambda: grading.grade(path, lesson_id, grading.Options(sandbox=mode), None, Given(seed=i))))
            b, n = median(runs["bwrap"]), median(runs["none"])
            print(f"{lesson_id}: sandboxed median {b:.2f} s, unsandboxed median {n:.2f} s, ratio {b / n:.3f} "
                  f"({rounds} alternating rounds)")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 9)
