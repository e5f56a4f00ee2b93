"""Batch throughput: plain sequential nbclient vs `grader batch --jobs 1` vs `grader batch`.

Grades the same mixed set of submissions of both lessons three ways, the ways
alternating round by round, and prints each median wall time and the
throughput ratios against the baseline (plain sequential nbclient execution of
each notebook in a fresh kernel, which neither probes, judges nor sandboxes),
then the phase profile of the default-jobs batches (medians over every
submission of every round; see phase_profile.py).
Usage: python bench/batch_throughput.py [per_lesson=20] [rounds=3]
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import bytecode, median, mixed_set, plain_run
from phase_profile import PHASES, rows_of

GRADER = [sys.executable, "-m", "grader"]


PROFILES: dict[str, list[dict]] = {}
"""Per lesson: the profile.json of every default-jobs batch."""


def batch(folders: dict[str, list[Path]], out: Path, jobs: list[str]) -> float:
    began = time.perf_counter()
    for lesson_id, paths in folders.items():
        target = out / lesson_id
        shutil.rmtree(target, ignore_errors=True)
        subprocess.run([*GRADER, "batch", str(paths[0].parent), "--lesson", lesson_id, "--out", str(target), *jobs],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    elapsed = time.perf_counter() - began
    if not jobs:
        for lesson_id in folders:
            PROFILES.setdefault(lesson_id, []).append(json.loads((out / lesson_id / "profile.json").read_text()))
    return elapsed


def print_profile() -> None:
    print("\nphase profile of the default-jobs batches: median s per submission (all rounds)")
    print(f"{'phase':<14}" + "".join(f"{lesson_id:>22}" for lesson_id in PROFILES))
    rows = {lesson_id: [r for data in runs for r in rows_of(data)] for lesson_id, runs in PROFILES.items()}
    for phase in PHASES:
        cells = [[r[phase] for r in rows[lesson_id] if r.get(phase) is not None] for lesson_id in PROFILES]
        print(f"{phase:<14}" + "".join(f"{median(c):22.3f}" if c else f"{'-':>22}" for c in cells))
    for lesson_id, runs in PROFILES.items():
        busy = [f"{sum(d['cpu']) / max(1, len(d['cpu'])):.0%}" for d in runs if d.get("cpu")]
        print(f"{lesson_id}: jobs {runs[0]['jobs']}, CPU busy per round {', '.join(busy)}")


def baseline(folders: dict[str, list[Path]]) -> float:
    began = time.perf_counter()
    for paths in folders.values():
        for path in paths:
            plain_run(path)
    return time.perf_counter() - began


def main(per_lesson: int, rounds: int) -> None:
    print(bytecode(), flush=True)
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
        print_profile()


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 20, int(sys.argv[2]) if len(sys.argv) > 2 else 3)
