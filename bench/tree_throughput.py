"""Batch throughput of two checkouts of the grader, alternating: did a change (a refactor) cost speed?

Grades the same mixed set of submissions of both lessons (bench/common.mixed_set)
with `grader batch` (default jobs) from each tree in turn, round by round, and
prints each tree's median wall time and the throughput ratio B/A.
Usage: python bench/tree_throughput.py TREE_A TREE_B [per_lesson=20] [rounds=3]
(each TREE is a checkout of the grader; `git worktree add /tmp/old <commit>` makes one).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import bytecode, median, mixed_set


def batch(tree: Path, folders: dict[str, list[Path]], out: Path) -> float:
    env = dict(os.environ, PYTHONPATH=str(tree))
    began = time.perf_counter()
    for lesson_id, paths in folders.items():
        target = out / lesson_id
        shutil.rmtree(target, ignore_errors=True)
        subprocess.run([sys.executable, "-m", "grader", "batch", str(paths[0].parent), "--lesson", lesson_id,
                        "--out", str(target)], check=True, cwd=tree, env=env,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - began


def main() -> None:
    trees = [Path(sys.argv[1]).resolve(), Path(sys.argv[2]).resolve()]
    per_lesson = int(sys.argv[3]) if len(sys.argv) > 3 else 20
    rounds = int(sys.argv[4]) if len(sys.argv) > 4 else 3
    for tree in trees:
        print(bytecode(tree), flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        folders = mixed_set(Path(tmp) / "in", per_lesson)
        count = sum(len(paths) for paths in folders.values())
        times: dict[Path, list[float]] = {tree: [] for tree in trees}
        for round_ in range(rounds):
            for tree in trees if round_ % 2 == 0 else trees[::-1]:
                times[tree].append(batch(tree, folders, Path(tmp) / "out"))
        for name, tree in zip("AB", trees):
            print(f"{name} {tree}: median {median(times[tree]):.2f} s for {count} submissions "
                  f"({count / median(times[tree]):.2f}/s); rounds {[round(t, 2) for t in times[tree]]}")
        print(f"throughput B/A: {median(times[trees[0]]) / median(times[trees[1]]):.3f}")


if __name__ == "__main__":
    main()
