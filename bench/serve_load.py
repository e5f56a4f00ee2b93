"""The submission service under a class's load, on loopback, against `grader batch` on the same files.

N students (default 300) each submit one notebook of lesson inference-capacity
(the bundled samples, cycled, each made the student's own by a markdown cell),
spread evenly over S seconds (default 60), open loop: a slow answer never
delays the next submission. S = 0 is the deadline: every submission at the same
moment, 64 at a time on connections opened beforehand (a closed burst, one
asyncio client, so that the client's own threads do not take the cores the
server needs). While grading runs, every receipt's time is taken. Then `grader
batch` grades the same N files with the same --jobs on the same machine. Prints
the receipts' p50/p95/p99/max, the 5xx count, how many were accepted and graded
(each exactly once: the gradebook's rows), the time from the first submission to
the last feedback, the batch's wall time and their ratio. Figures, not a test:
nothing is asserted. JOBS 0: the default --jobs of both. RUNS: how many in a row.

Usage: python bench/serve_load.py [students=300] [seconds=60] [jobs=0] [runs=1]
"""

from __future__ import annotations

import asyncio
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


CONCURRENT = 64
"""Submissions in flight at once in a burst (S = 0)."""


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
        latencies, statuses, first, last = (burst(url, made, paths, seconds) if seconds > 0 else
                                             asyncio.run(at_once(url, made, paths, CONCURRENT)))
        queue = home / "private" / "queue.sqlite"
        last_done = wait_all(queue, n)
    finally:
        os.killpg(server.pid, signal.SIGKILL)
        server.wait()
    with sqlite3.connect(work / "served" / LESSON / "gradebook.sqlite") as db:
        rows = db.execute("SELECT COUNT(*), COUNT(DISTINCT student || digest) FROM grades").fetchone()

    began = time.monotonic()
    subprocess.run([*GRADER, "batch", str(folder), "--lesson", LESSON, "--out", str(work / "batch"),
                    *(["--jobs", str(jobs)] if jobs else [])], check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    batch_s = time.monotonic() - began

    ms = sorted(x * 1000 for x in latencies)
    pct = lambda q: ms[min(len(ms) - 1, round(q * (len(ms) - 1)))]  # noqa: E731
    serve_s = last_done - first
    how = f"over {seconds:g} s" if seconds > 0 else f"at once, {CONCURRENT} in flight"
    print(f"{n} students {how} (submissions sent in {last - first:.1f} s), --jobs {jobs or 'default'}, "
          f"{os.cpu_count()} cores")
    others = {code: count for code, count in statuses.items() if code != 202}
    failed = sum(count for code, count in statuses.items() if code >= 500 or code == 0)
    print(f"receipts: {statuses.get(202, 0)} accepted (202) of {n}; other answers {others}; 5xx or none: {failed}")
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
        server = subprocess.Popen([*GRADER, "serve", "--out", str(out), "--port", str(port),
                                   *(["--jobs", str(jobs)] if jobs else [])],
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


async def at_once(url: str, made: dict[str, str], paths: dict[str, Path],
                  concurrent: int) -> tuple[list[float], dict[int, int], float, float]:
    """Every student's submission at the same moment, `concurrent` in flight on keep-alive connections opened
    beforehand; (latencies, statuses, first send, last send). The requests are written as bytes on plain sockets:
    an HTTP client library's own work (several milliseconds of CPU a request) would take the cores the server
    needs, and be measured as the server's. A request that gets no answer counts as status 0."""
    host, port = url.removeprefix("http://").split(":")
    latencies: list[float] = []
    statuses: dict[int, int] = {}
    sent: list[float] = []
    requests = [_request(host, int(port), paths[s].name, paths[s].read_bytes(), made[s]) for s in paths]
    todo = iter(requests)

    async def connection() -> None:
        reader, writer = await asyncio.open_connection(host, int(port))
        try:
            for request in todo:
                began = time.monotonic()
                sent.append(began)
                try:
                    writer.write(request)
                    head = await reader.readuntil(b"\r\n\r\n")
                    code = int(head.split(b" ", 2)[1])
                    length = next((int(line.split(b":", 1)[1]) for line in head.split(b"\r\n")
                                   if line.lower().startswith(b"content-length:")), 0)
                    await reader.readexactly(length)
                except (OSError, asyncio.IncompleteReadError, ValueError):
                    code = 0
                latencies.append(time.monotonic() - began)
                statuses[code] = statuses.get(code, 0) + 1
                if code == 0:
                    return
        finally:
            writer.close()

    await asyncio.gather(*(connection() for _ in range(concurrent)))
    return latencies, statuses, min(sent), max(sent)


def _request(host: str, port: int, name: str, body: bytes, token: str) -> bytes:
    """One submission as the bytes of an HTTP/1.1 request (keep-alive)."""
    from urllib.parse import urlencode

    head = (f"POST /api/submissions?{urlencode({'lesson': LESSON, 'name': name})} HTTP/1.1\r\n"
            f"Host: {host}:{port}\r\nAuthorization: Bearer {token}\r\nContent-Type: application/octet-stream\r\n"
            f"Content-Length: {len(body)}\r\n\r\n")
    return head.encode() + body


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
    for _ in range(int(args[3]) if len(args) > 3 else 1):
        main(int(args[0]) if args else 300, args[1] if len(args) > 1 else 60.0, int(args[2]) if len(args) > 2 else 0)
