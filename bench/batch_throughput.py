"""Batch throughput: plain sequential nbclient vs `grader batch --jobs 1` vs `grader batch`.

Grades the same mixed set of submissions of both lessons three ways, the ways
alternating round by round, and prints each median wall time and the
throughput ratios against the baseline (plain sequential nbclient execution of
each notebook in a fresh kernel, which neither probes, judges nor sandboxes).
Usage: python bench/batch_throughput.py [per_lesson=20] [rounds=3]
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import median, mixed_set, plain_run

GRADER = [sys.executable, "-m", "grader"]


def batch(folders: dict[str, list[Path]], out: Path, jobs: list[str]) -> float:
    began = time.perf_counter()
    for lesson_id, paths in folders.items():
        target = out / lesson_id
        shutil.rmtree(target, ignore_errors=True)
        subprocess.run([*GRADER, "batch", str(paths[0].parent), "--lesson", lesson_id, "--out", str(target), *jobs],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - began


def baseline(folders: dict[str, list[Path]]) -> float:
    began = time.perf_counter()
    for paths in folders.values():
        for path in paths:
            plain_run(path)
    return time.perf_counter() - began


def main(per_lesson: int, rounds: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folders = mixed_set(Path(tmp) / "in", per_lesson)
        count = sum(len(v) for v in folders.values())
        ways = {"plain nbclient, sequential": lambda: baseline(folders),
                "grader batch --jobs 1": lambda: batch(folders, Path(tmp) / "out", ["--jobs", "1"]),
                "grader batch (default jobs)": lambda: batch(folders, Path(tmp) / "out", [])}
        times: dict[str, list[float]] = {name: [] for name in ways}
        names = list(ways)
        for r in range(rounds):
            for name in names[r % 3:] + names[:r % 3]:
                times[name].append(ways[name]())
                print(f"round {r + 1}: {name}: {times[name][-1]:.1f} s", flush=True)
        base = median(times[names[0]])
        print(f"\n{count} submissions ({per_lesson} per lesson), {rounds} alternating rounds")
        for name in names:
            m = median(times[name])
            print(f"{name:<30} median {m:7.1f} s  {count / m:5.2f} submissions/s  throughput x{base / m:.2f}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 20, int(sys.argv[2]) if len(sys.argv) > 2 else 3)
