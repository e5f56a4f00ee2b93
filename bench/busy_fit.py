"""Is lesson dynamic-batching's fit meaningful on a loaded host? (issue: the fit on a busy 2-core machine)

Grades the reference solution of lesson dynamic-batching RUNS times in a batch
with the default jobs, beside three busy kernels (scripts that spin one core
each for the whole replay), then reads the live records of every graded result
and prints, per run: the batch sizes seen, the fitted costs (ordinary least
squares of compute time on batch size, one point per batch), the directly timed
compute per batch size (medians), and p99 of the total latency.

    .venv/bin/python bench/busy_fit.py [RUNS]
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

import nbformat
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from grader.lesson import catalog, handout

BUSY = "import time\nend = time.time() + {seconds}\nwhile time.time() < end:\n    pass\n"


def records(result: dict) -> list[dict]:
    live = next(a for a in result["measured"]["answers"]["live-replay"] if a["name"] == "live")["value"]
    return [dict(r["__dict__"]) for r in live]


def describe(rows: list[dict]) -> str:
    per_batch = {r["batch_id"]: (r["batch_size"], r["compute_end_ms"] - r["compute_start_ms"]) for r in rows}
    sizes = np.array([s for s, _ in per_batch.values()], dtype=float)
    times = np.array([t for _, t in per_batch.values()], dtype=float)
    distinct, counts = np.unique(sizes, return_counts=True)
    if distinct.size > 1:
        per_item, setup = np.polyfit(sizes, times, 1)
        fit = f"fit {setup:.3f} + {per_item:.4f} ms/item"
    else:
        fit = "fit refused (one batch size)"
    timed = ", ".join(f"{int(s)}: {np.median(times[sizes == s]):.2f}" for s in distinct)
    total = np.array([r["received_ms"] - r["scheduled_ms"] for r in rows])
    shown = dict(zip(distinct.astype(int).tolist(), counts.tolist()))
    return (f"{distinct.size} sizes {shown}; {fit}; timed compute median by size {{{timed}}}; "
            f"p99 total {np.percentile(total, 99):.0f} ms")


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    lesson = catalog.get("dynamic-batching")
    solution = handout.solution_notebook(lesson)
    grader = str(Path(sys.executable).with_name("grader"))
    with tempfile.TemporaryDirectory() as tmp:
        cls = Path(tmp) / "class"
        cls.mkdir()
        nbformat.write(solution, str(cls / "reference.ipynb"))
        for n in range(3):
            (cls / f"busy{n}.py").write_text(BUSY.format(seconds=25), encoding="utf-8")
        for run in range(1, runs + 1):
            out = Path(tmp) / f"out{run}"
            done = subprocess.run([grader, "batch", str(cls), "--lesson", "dynamic-batching", "--out", str(out)],
                                  capture_output=True, text=True)
            if done.returncode:
                print(f"run {run}: the batch failed (exit {done.returncode}): {done.stderr[-2000:]}", flush=True)
                continue
            result = json.loads((out / "results" / "reference.json").read_text(encoding="utf-8"))
            print(f"run {run}: score {result['score']:g}/{result['max_score']:g}; {describe(records(result))}",
                  flush=True)


if __name__ == "__main__":
    main()
