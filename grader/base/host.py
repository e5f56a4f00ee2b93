"""The host, read once: installed versions, processor, memory, cores' load; every /proc file the grader reads
about the machine is read here, each reading falling back to nothing where the file is absent."""

from __future__ import annotations

import datetime as _dt
import functools
import os
import platform
import time
from importlib import metadata
from pathlib import Path
from typing import Any


def cache_root() -> Path:
    """Where this user's grader keeps what it can rebuild (JAX's compilations, Jinja's compiled templates):
    $GRADER_CACHE, else the user's cache folder."""
    explicit = os.environ.get("GRADER_CACHE")
    if explicit:
        return Path(explicit)
    return Path(os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")) / "grader"


SLOWDOWN_PROBE_S = 0.01
"""CPU seconds the slowdown probe spins for (about a hundredth of a second of a grade's ones)."""


def slowdown(probe_s: float = SLOWDOWN_PROBE_S) -> float:
    """How much slower than its own pace a process runs on this machine right now: the wall time a spin of
    `probe_s` CPU seconds took, over those CPU seconds (1.0 where a core is free; about 3.0 where three runnable
    processes share each core). Measured, never assumed from the load average, which lags by a minute."""
    wall, cpu = time.perf_counter(), time.thread_time()
    while time.thread_time() - cpu < probe_s and time.perf_counter() - wall < 20 * probe_s:
        pass
    return (time.perf_counter() - wall) / max(time.thread_time() - cpu, 1e-6)


def config_root() -> Path:
    """This user's config folder for the grader (XDG): a student's token, and keys kept before a course had its own."""
    return Path(os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")) / "inference-grader"


def private_folder(path: Path) -> Path | None:
    """`path` made if missing (mode 0700), or None unless it is a folder of this user's that nobody else can
    write: for files the grader will execute (compiled templates), never one another user could plant."""
    import stat

    try:
        path.mkdir(parents=True, mode=0o700, exist_ok=True)
        st = path.lstat()
    except OSError:
        return None
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & 0o022:
        return None
    return path


def proc_fields(name: str) -> dict[str, str]:
    """`key: value` lines of a /proc file (meminfo, cpuinfo's first processor, self/status); {} if unreadable."""
    fields: dict[str, str] = {}
    try:
        lines = Path("/proc", name).read_text().splitlines()
    except OSError:
        return fields
    for line in lines:
        key, colon, value = line.partition(":")
        if colon and key.strip() not in fields:
            fields[key.strip()] = value.strip()
    return fields


def memory_bytes(field: str) -> int | None:
    """A /proc/meminfo figure (MemTotal, MemAvailable) in bytes."""
    try:
        return int(proc_fields("meminfo")[field].split()[0]) * 1024
    except (KeyError, ValueError, IndexError):
        return None


def cpu_model() -> str:
    return proc_fields("cpuinfo").get("model name") or platform.processor() or ""


def cpu_flags() -> str:
    """The processor's feature line (x86 `flags`, ARM `Features`): what compiled code may rely on."""
    fields = proc_fields("cpuinfo")
    for key in ("flags", "Features"):
        if key in fields:
            return f"{key}\t: {fields[key]}"
    return platform.processor()


def cpu_times() -> list[list[int]]:
    """Per core: (busy, total) jiffies from /proc/stat (empty where there is none)."""
    try:
        lines = Path("/proc/stat").read_text().splitlines()
    except OSError:
        return []
    cores = []
    for line in lines:
        if line.startswith("cpu") and line[3:4].isdigit():
            values = [int(v) for v in line.split()[1:]]
            idle = values[3] + (values[4] if len(values) > 4 else 0)
            cores.append([sum(values) - idle, sum(values)])
    return cores


def cpu_use(before: list[list[int]], after: list[list[int]]) -> list[float]:
    """Share of each core that was busy between two readings (every process on the host, not only ours)."""
    return [round((a[0] - b[0]) / max(1, a[1] - b[1]), 3) for b, a in zip(before, after)]


def environment(jobs_at_once: int, course_root: Path) -> dict[str, Any]:
    """Where and when a grade ran (the kernel uses the same environment)."""
    return dict(facts(course_root), graded_at=_dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
                jobs_at_once=jobs_at_once)


@functools.lru_cache(maxsize=4)
def facts(course_root: Path) -> dict[str, Any]:
    """The host's facts, read once per process (installed versions, processor, memory, OS)."""
    return {
        "python": platform.python_version(), "jax": version("jax"), "jaxlib": version("jaxlib"),
        "numpy": version("numpy"), "ipykernel": version("ipykernel"), "nbclient": version("nbclient"),
        "grader": version("inference-grader"), "grader_commit": commit(course_root),
        "os": f"{platform.system()} {platform.release()}", "os_release": _os_release(),
        "machine": platform.machine(), "cpu_model": cpu_model(), "cpu_count": os.cpu_count(),
        "memory_bytes": memory_bytes("MemTotal"),
    }


def version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


@functools.lru_cache(maxsize=4)
def commit(course_root: Path) -> str | None:
    """The course checkout's git commit, when the grader runs from one."""
    import subprocess

    try:
        done = subprocess.run(["git", "-C", str(course_root), "rev-parse", "--short=12", "HEAD"],
                              capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() or None if done.returncode == 0 else None


def _os_release() -> str | None:
    try:
        return platform.freedesktop_os_release().get("PRETTY_NAME")
    except OSError:
        return None
