"""Where a batch's time goes: each phase per submission, medians over the class, and CPU use per core.

Grades the bench's mixed set with `grader batch` and reads the batch's
`profile.json`: queue (a worker idle before taking this submission up), kernel start (fork and
ready), the lesson's given cells, the student's cells, probes, judge, render (worker), record (parent), and each core's busy
share over the batch.
Usage: python bench/phase_profile.py [per_lesson=20] [--jobs N] [--each]
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

from common import median, mixed_set

PHASES = ("queue", "startup", "given_cells", "student_cells", "probes", "judge", "render", "record")


def profile(folder: Path, lesson_id: str, out: Path, jobs: list[str]) -> dict:
    subprocess.run([sys.executable, "-m", "grader", "batch", str(folder), "--lesson", lesson_id, "--out", str(out),
                    *jobs], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return json.loads((out / "profile.json").read_text())


def rows_of(data: dict) -> list[dict]:
    """One row per submission; `queue` is the worker's idle time before it took this one up (after its previous
    grade ended, or after the batch began)."""
    rows, last_end = [], {}
    for item in sorted(data["submissions"], key=lambda i: i.get("start", 0.0)):
        row = {key: item.get(key) for key in PHASES if key in item}
        if "start" in item:
            row["queue"] = item["start"] - last_end.get(item["worker"], 0.0)
            last_end[item["worker"]] = item["end"]
        row["student"] = item["student"]
        rows.append(row)
    return rows


def main(per_lesson: int, jobs: list[str], each: bool) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folders = mixed_set(Path(tmp) / "in", per_lesson)
        for lesson_id, paths in folders.items():
            data = profile(paths[0].parent, lesson_id, Path(tmp) / "out" / lesson_id, jobs)
            rows = rows_of(data)
            print(f"\n{lesson_id}: {len(rows)} submissions, jobs {data['jobs']}, batch {data['seconds']:.1f} s, "
                  f"CPU busy per core {', '.join(f'{c:.0%}' for c in data['cpu'])}")
            print(f"{'phase':<14} {'median s':>9} {'total s':>9}")
            for phase in PHASES:
                values = [r[phase] for r in rows if r.get(phase) is not None]
                if values:
                    print(f"{phase:<14} {median(values):9.3f} {sum(values):9.2f}")
            if each:
                print("  " + " ".join(f"{p:>9}" for p in ("student",) + PHASES))
                for r in rows:
                    print("  " + " ".join(f"{r.get(p, ''):>9}" if not isinstance(r.get(p), float) else f"{r[p]:9.3f}"
                                          for p in ("student",) + PHASES))


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("per_lesson", nargs="?", type=int, default=20)
    parser.add_argument("--jobs", type=int)
    parser.add_argument("--each", action="store_true", help="also print every submission's row")
    args = parser.parse_args()
    main(args.per_lesson, ["--jobs", str(args.jobs)] if args.jobs else [], args.each)
