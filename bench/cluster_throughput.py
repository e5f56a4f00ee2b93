"""Batch throughput through a Dask cluster against the local batch, on the same machine, alternating rounds.

The cluster is started as a course would start it, as separate processes with
the course's certificates (mutual TLS, `grader cluster certs`): `dask scheduler
--protocol tls ...`, then `dask worker ADDRESS --nworkers 2 --nthreads 1 ...`;
the local batch runs `grader batch --jobs 2`. With TLS=0 in the environment the
cluster runs plain tcp (for a tree from before TLS was required). Each round grades the same
submissions of the capacity lesson (solutions, scaffolds and bugs) into a
fresh folder; the figures are each path's median wall time and the ratio
cluster/local of their throughputs.
Usage: python bench/cluster_throughput.py [submissions=40] [rounds=3] [TREE]
(TREE: a checkout of the grader to run, default this one; `git worktree add /tmp/old <commit>` makes one).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import median, mixed_set

LESSON = "inference-capacity"


def _batch(tree: Path, folder: Path, out: Path, env: dict[str, str], *extra: str) -> float:
    shutil.rmtree(out, ignore_errors=True)
    began = time.perf_counter()
    subprocess.run([sys.executable, "-m", "grader", "batch", str(folder), "--lesson", LESSON, "--out", str(out),
                    *extra], check=True, cwd=tree, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - began


def _tls(tls: Path | None, role: str) -> list[str]:
    guard = ["--preload", "grader.classroom.cluster_guard"] + (
        ["--preload-nanny", "grader.classroom.cluster_guard"] if role == "worker" else [])
    return [] if tls is None else ["--tls-ca-file", str(tls / "ca.pem"), "--tls-cert", str(tls / f"{role}.pem"),
                                   "--tls-key", str(tls / f"{role}-key.pem"), *guard]


def _cluster(tree: Path, tmp: Path, env: dict[str, str], tls: Path | None) -> tuple[str, list[subprocess.Popen]]:
    """A scheduler and a worker command with 2 single-threaded worker processes; the scheduler's address."""
    dask = str(Path(sys.executable).with_name("dask"))
    address_file = tmp / "scheduler.json"
    scheduler = subprocess.Popen([dask, "scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
                                  *(["--protocol", "tls"] if tls else []), *_tls(tls, "scheduler"),
                                  "--scheduler-file", str(address_file)], cwd=tree, env=env, start_new_session=True,
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    workers = subprocess.Popen([dask, "worker", "--scheduler-file", str(address_file), "--nworkers", "2",
                                "--nthreads", "1", "--no-dashboard", *_tls(tls, "worker")], cwd=tree, env=env,
                               start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    from distributed import Client, Security

    deadline = time.monotonic() + 60
    while not address_file.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    security = Security() if tls is None else Security(tls_ca_file=str(tls / "ca.pem"), tls_client_cert=str(
        tls / "client.pem"), tls_client_key=str(tls / "client-key.pem"), require_encryption=True)
    with Client(scheduler_file=str(address_file), timeout=30, security=security) as client:
        client.wait_for_workers(2, timeout=60)
        return client.scheduler.address, [scheduler, workers]


def main() -> None:
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 40
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    tree = Path(sys.argv[3]).resolve() if len(sys.argv) > 3 else Path(__file__).resolve().parent.parent
    env = dict(os.environ, PYTHONPATH=str(tree))
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        folder = mixed_set(tmp / "in", count)[LESSON][0].parent
        shutil.rmtree(tmp / "in" / "inference-scaling", ignore_errors=True)
        tls = None if os.environ.get("TLS") == "0" else tmp / "tls"
        if tls:
            subprocess.run([sys.executable, "-m", "grader", "cluster", "certs", str(tls)], check=True, cwd=tree,
                           env=env, stdout=subprocess.DEVNULL)
        address, processes = _cluster(tree, tmp, env, tls)
        try:
            times: dict[str, list[float]] = {"local": [], "cluster": []}
            for round_ in range(rounds):
                for path in ("local", "cluster") if round_ % 2 == 0 else ("cluster", "local"):
                    extra = ("--jobs", "2") if path == "local" else (
                        "--scheduler", address, *(("--tls", str(tls)) if tls else ()))
                    times[path].append(_batch(tree, folder, tmp / path, env, *extra))
        finally:
            for process in processes:
                os.killpg(process.pid, signal.SIGTERM)
            for process in processes:
                try:
                    process.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    os.killpg(process.pid, signal.SIGKILL)
    print(f"tree {tree}: {count} submissions of {LESSON}, {rounds} rounds, alternating")
    for path, spent in times.items():
        print(f"{path:8s} median {median(spent):.2f} s ({count / median(spent):.2f}/s); rounds {[round(t, 2) for t in spent]}")
    print(f"throughput cluster/local: {median(times['local']) / median(times['cluster']):.3f}")


if __name__ == "__main__":
    main()
