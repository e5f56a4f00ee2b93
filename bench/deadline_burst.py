"""The deadline: a class's submissions all at once against `grader serve` on loopback, several runs in a row.

Each run starts a fresh server (its own course, 300 students with tokens by
default) and sends every student's notebook at the same moment from 64
threads (a closed burst: the worst second of a deadline), while the server's
grading side starts grading them. Prints, per run, the answers by HTTP status
(a 5xx is a failure of the server: no file a calm server accepts may meet one),
how many were queued, and the receipts' p50/p95/max. Figures, not a test:
nothing is asserted. The server's stdout goes to a file in the work folder.

Usage: python bench/deadline_burst.py [students=300] [threads=64] [runs=3]
"""

from __future__ import annotations

import concurrent.futures as cf
import json
import os
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
from serve_load import start_server

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "samples" / "inference-capacity" / "ada.ipynb"
LESSON = "inference-capacity"


def run_once(n: int, threads: int, work: Path) -> dict[str, object]:
    home = work / "course"
    home.mkdir(parents=True)
    (home / "course.toml").write_text('name = "deadline"\ntimezone = "UTC"\n')
    env = dict(os.environ, GRADER_COURSE=str(home))
    students = [f"s{i:03d}" for i in range(n)]
    issued = subprocess.run([sys.executable, "-c", "import sys, json; from grader.service import tokens; "
                             "print(json.dumps({p.who: t for p, t in tokens.issue([(s, s) for s in sys.argv[1:]], "
                             "'student')}))", *students], env=env, capture_output=True, text=True, check=True)
    made = json.loads(issued.stdout)
    base = json.loads(SAMPLE.read_text())
    bodies = {s: json.dumps(dict(base, cells=[*base["cells"], {"cell_type": "markdown", "metadata": {},
                                                                "source": f"Submitted by {s}."}])).encode()
              for s in students}
    url, server = start_server(work / "served", 2, env, work / "serve.log")
    try:
        latencies, statuses = burst(url, made, bodies, threads)
    finally:
        os.killpg(server.pid, signal.SIGKILL)
        server.wait()
    with sqlite3.connect(home / "private" / "queue.sqlite") as db:
        kept = db.execute("SELECT COUNT(*) FROM jobs").fetchone()[0]
    return {"latencies": latencies, "statuses": statuses, "kept": kept}


def burst(url: str, made: dict[str, str], bodies: dict[str, bytes], threads: int) -> tuple[list[float], dict[int, int]]:
    latencies: list[float] = []
    statuses: dict[int, int] = {}

    def send(student: str) -> None:
        began = time.monotonic()
        try:
            with httpx.Client(timeout=120) as client:
                code = client.post(f"{url}/api/submissions", params={"lesson": LESSON}, content=bodies[student],
                                   headers={"Authorization": f"Bearer {made[student]}"}).status_code
        except httpx.HTTPError:
            code = 0  # no answer at all: counted as a failure beside the 5xx
        latencies.append(time.monotonic() - began)
        statuses[code] = statuses.get(code, 0) + 1

    with cf.ThreadPoolExecutor(max_workers=threads) as pool:
        list(pool.map(send, bodies))
    return latencies, statuses


def main(n: int, threads: int, runs: int) -> None:
    print(f"{n} submissions at once from {threads} threads, {runs} runs, {os.cpu_count()} cores")
    for run in range(1, runs + 1):
        work = Path(tempfile.mkdtemp(prefix="grader-deadline-"))
        got = run_once(n, threads, work)
        ms = sorted(x * 1000 for x in got["latencies"])  # type: ignore[attr-defined]
        statuses = got["statuses"]
        failed = sum(count for code, count in statuses.items() if code >= 500 or code == 0)  # type: ignore[attr-defined]
        p95 = ms[min(len(ms) - 1, round(0.95 * (len(ms) - 1)))]
        print(f"run {run}: answers {dict(sorted(statuses.items()))}; 5xx or none: {failed}; queued {got['kept']}; "
              f"receipt p50 {statistics.median(ms):.0f} ms, p95 {p95:.0f} ms, max {ms[-1]:.0f} ms ({work})")


if __name__ == "__main__":
    args = [int(a) for a in sys.argv[1:]]
    main(args[0] if args else 300, args[1] if len(args) > 1 else 64, args[2] if len(args) > 2 else 3)
