"""The submission service under a class's load, on loopback, against `grader batch` on the same files.

N students (default 300) each submit one notebook of lesson inference-capacity
(the bundled samples, cycled, each made the student's own by a markdown cell),
spread evenly over S seconds (default 60), open loop: a slow answer never
delays the next submission. While grading runs, every receipt's time is
taken. Then `grader batch` grades the same N files with the same --jobs on
the same machine. Prints the receipts' p50/p95/p99/max, how many were
accepted and graded (each exactly once: the gradebook's rows), the time from
the first submission to the last feedback, the batch's wall time and their
ratio. Figures, not a test: nothing is asserted.

Usage: python bench/serve_load.py [students=300] [seconds=60] [jobs=4]
"""

from __future__ import annotations

import concurrent.futures as cf
import json
import os
import signal
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "samples" / "inference-capacity"
LESSON = "inference-capacity"
GRADER = [sys.executable, "-m", "grader"]


def files_for(students: list[str], folder: Path) -> dict[str, Path]:
    """One submission per student: the samples in turn, each with a line of its own (a digest of its own)."""
    from grader.base.errors import GraderError
    from grader.intake import load

    samples = []
    for sample in sorted(p for p in SAMPLES.iterdir() if p.suffix in (".ipynb", ".py")):
        try:
            if load.read(sample).lesson_hint in (None, LESSON):
                samples.append(sample)  # the samples the server takes (one is a file no grader can read)
        except GraderError:
            continue
    made = {}
    for i, student in enumerate(students):
        sample = samples[i % len(samples)]
        path = folder / f"{student}{sample.suffix}"
        if sample.suffix == ".py":
            path.write_text(sample.read_text() + f"\n# %% [markdown]\n# Submitted by {student}.\n")
        else:
            notebook = json.loads(sample.read_text())
            notebook["cells"].append({"cell_type": "markdown", "metadata": {}, "source": f"Submitted by {student}."})
            path.write_text(json.dumps(notebook))
        made[student] = path
    return made


def main(n: int, seconds: float, jobs: int) -> None:
    work = Path(tempfile.mkdtemp(prefix="grader-serve-load-"))
    home = work / "course"
    home.mkdir()
    (home / "course.toml").write_text('name = "load"\ntimezone = "UTC"\n')
    os.environ["GRADER_COURSE"] = str(home)
    from grader.service import tokens

    students = [f"student{i:03d}" for i in range(n)]
    made = {p.who: t for p, t in tokens.issue([(s, s) for s in students], "student")}
    folder = work / "class"
    folder.mkdir()
    paths = files_for(students, folder)

    url, server = start_server(work / "served", jobs, dict(os.environ), work / "serve.log")
    try:
        latencies, statuses, first, last = burst(url, made, paths, seconds)
        queue = home / "private" / "queue.sqlite"
        last_done = wait_all(queue, n)
    finally:
        os.killpg(server.pid, signal.SIGKILL)
        server.wait()
    with sqlite3.connect(work / "served" / LESSON / "gradebook.sqlite") as db:
        rows = db.execute("SELECT COUNT(*), COUNT(DISTINCT student || digest) FROM grades").fetchone()

    began = time.monotonic()
    subprocess.run([*GRADER, "batch", str(folder), "--lesson", LESSON, "--out", str(work / "batch"), "--jobs",
                    str(jobs)], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    batch_s = time.monotonic() - began

    ms = sorted(x * 1000 for x in latencies)
    pct = lambda q: ms[min(len(ms) - 1, round(q * (len(ms) - 1)))]  # noqa: E731
    serve_s = last_done - first
    print(f"{n} students over {seconds:g} s (submissions sent in {last - first:.1f} s), --jobs {jobs}, "
          f"{os.cpu_count()} cores")
    others = {code: count for code, count in statuses.items() if code != 202}
    print(f"receipts: {statuses.get(202, 0)} accepted (202) of {n}; other answers {others}")
    print(f"receipt time while grading: p50 {statistics.median(ms):.1f} ms, p95 {pct(0.95):.1f} ms, "
          f"p99 {pct(0.99):.1f} ms, max {ms[-1]:.1f} ms")
    print(f"graded: {rows[0]} gradebook rows, {rows[1]} distinct submissions")
    print(f"first submission -> last feedback: {serve_s:.1f} s; grader batch on the same {n} files: {batch_s:.1f} s; "
          f"ratio {serve_s / batch_s:.2f}x")
    print(f"(work folder {work})")


def start_server(out: Path, jobs: int, env: dict[str, str], log: Path) -> tuple[str, subprocess.Popen[bytes]]:
    """`grader serve` on a free loopback port (its output to `log`, never a pipe nobody reads), once it answers."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"http://127.0.0.1:{port}"
    with log.open("w") as sink:
        server = subprocess.Popen([*GRADER, "serve", "--out", str(out), "--port", str(port), "--jobs", str(jobs)],
                                  env=env, stdout=sink, stderr=subprocess.STDOUT, start_new_session=True)
    while True:
        try:
            if httpx.get(url + "/", timeout=2).status_code == 200:
                return url, server
        except httpx.HTTPError:
            time.sleep(0.2)


def burst(url: str, made: dict[str, str], paths: dict[str, Path], seconds: float) -> tuple[list[float], dict[int, int], float, float]:
    """Every student's submission at its own moment, open loop; (latencies, statuses, first send, last send)."""
    latencies: list[float] = []
    statuses: dict[int, int] = {}
    lock = threading.Lock()
    local = threading.local()

    def send(student: str, at: float) -> float:
        time.sleep(max(0.0, at - time.monotonic()))
        client = getattr(local, "client", None) or httpx.Client(timeout=30)
        local.client = client
        began = time.monotonic()
        got = client.post(f"{url}/api/submissions", params={"lesson": LESSON, "name": paths[student].name},
                          content=paths[student].read_bytes(), headers={"Authorization": f"Bearer {made[student]}"})
        took = time.monotonic() - began
        with lock:
            latencies.append(took)
            statuses[got.status_code] = statuses.get(got.status_code, 0) + 1
        return began

    start = time.monotonic() + 0.5
    step = seconds / len(paths)
    with cf.ThreadPoolExecutor(max_workers=32) as pool:
        sent = list(pool.map(lambda pair: send(pair[1], start + pair[0] * step), enumerate(paths)))
    return latencies, statuses, min(sent), max(sent)


def wait_all(queue: Path, n: int) -> float:
    """When the last job finished (monotonic clock), once all n are done."""
    while True:
        with sqlite3.connect(queue) as db:
            done, = db.execute("SELECT COUNT(*) FROM jobs WHERE state IN ('done', 'dead')").fetchone()
        if done >= n:
            with sqlite3.connect(queue) as db:
                finished, = db.execute("SELECT MAX(finished) FROM jobs").fetchone()
            return time.monotonic() - (time.time() - finished)
        time.sleep(0.5)


if __name__ == "__main__":
    args = [float(a) for a in sys.argv[1:]]
    main(int(args[0]) if args else 300, args[1] if len(args) > 1 else 60.0, int(args[2]) if len(args) > 2 else 4)
