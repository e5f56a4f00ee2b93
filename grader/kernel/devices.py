"""Accelerators: which `--device` a kernel may ask for, what the host has, and what a kernel starts with.

Device nodes are looked for under /dev (or GRADER_DEVICE_DIR, for tests) and
bound into a sandbox only when a grade asks for that device.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from grader.base import host
from grader.base.limits import Limits

DEVICES = {"cpu": "cpu", "gpu": "cuda", "tpu": "tpu", "auto": None}
"""`--device` choices and the JAX_PLATFORMS each sets (auto: none, JAX uses what it finds)."""


@dataclass(frozen=True)
class KernelStart:
    """What a kernel's interpreter fixes when it starts; a zygote fixes it for every kernel it forks."""

    hash_seed: int = 0
    """PYTHONHASHSEED."""
    device: str = "cpu"
    """A key of DEVICES."""
    warm_imports: tuple[str, ...] = ()
    """Modules a zygote imports before it forks kernels (the lesson's `warm_imports`)."""
    compile_cache: str = ""
    """A filled JAX compilation cache on the host (see compile_cache), bound read-only at COMPILE_CACHE_TARGET;
    only bubblewrap sandboxes get one."""
    warm_cells: tuple[str, ...] = ()
    """Sources of the lesson's `warm_cells`, which a zygote runs once (handout.warm_sources)."""


COMPILE_CACHE_TARGET = "/var/cache/grader-compile"
"""Where a kernel sees the compilation cache: read-only, outside the /tmp each kernel gets afresh."""


def device_dir() -> Path:
    """Where the host's device nodes are looked for: /dev, or GRADER_DEVICE_DIR (a folder of stand-in nodes a test
    can make without touching a real one); each is bound into the sandbox at its /dev path."""
    return Path(os.environ.get("GRADER_DEVICE_DIR") or "/dev")


def device_files(device: str) -> list[str]:
    """The host's device nodes an accelerator kernel needs (bound into its sandbox at /dev/<the same name>)."""
    patterns = {"gpu": ("nvidia*", "dri/*", "kfd"), "tpu": ("accel*", "vfio/*")}.get(device, ())
    return sorted({str(p) for pattern in patterns for p in device_dir().glob(pattern)})


def accelerator_count(device: str) -> int:
    """How many accelerators of this kind the host has: numbered device nodes (nvidia0, accel1, ...)."""
    import re

    numbered = re.compile(r"^(nvidia|accel)\d+$")
    return sum(1 for node in device_files(device) if numbered.match(Path(node).name))


def driver_library_dirs() -> list[str]:
    """The grader's LD_LIBRARY_PATH folders (where a GPU host often keeps its driver's libraries), absolute only."""
    return [d for d in os.environ.get("LD_LIBRARY_PATH", "").split(":") if d.startswith("/") and Path(d).is_dir()]


def memory_bound(device: str, limits: Limits) -> str:
    """Which bound holds a kernel's memory, in words, for the result."""
    words = f"{memory_rlimit(device)} of {limits.memory_bytes / 2**30:g} GiB per process"
    if memory_rlimit(device) == "RLIMIT_DATA":
        words += " (an address-space limit breaks an accelerator's driver); no cgroup"
    return words


def memory_rlimit(device: str) -> str:
    """The rlimit that bounds a kernel's memory: the address space on the CPU; the data segment (heap and
    anonymous memory) with an accelerator, whose driver reserves far more address space than it uses (CUDA fails
    to start under a 4 GiB RLIMIT_AS) while RLIMIT_DATA still stops a memory bomb."""
    return "RLIMIT_AS" if device == "cpu" else "RLIMIT_DATA"


def device_available(device: str) -> bool:
    """Whether this host has the device `--device` asks for (cpu and auto always)."""
    return device in ("cpu", "auto") or bool(device_files(device))


KERNEL_MEMORY_BYTES = 512 * 2**20
"""Memory to keep free per job when choosing the default (a JAX kernel with its lesson data stays well below)."""
ACCELERATOR_JOBS = 4
"""Jobs per accelerator at most: each kernel allocates what it uses on it (no preallocation), and the CPU work
of a grade still dominates."""


def default_jobs(device: str = "cpu") -> int:
    """Two jobs per core, fewer if memory is short; on an accelerator, also at most ACCELERATOR_JOBS per device.

    A job alternates between its grading process and its kernel, and waits on every round trip between them:
    with one job per core the cores sat 15-24 % idle (vmstat during a batch on 2 cores); with one per core plus
    one, 6-8 %; two per core graded the bench's 40 submissions 5-9 % faster again. Kernels already run
    single-threaded (XLA and BLAS; launch.kernel_env), so more jobs do not oversubscribe the cores.
    """
    cores = os.cpu_count() or 1
    available = host.memory_bytes("MemAvailable") or (cores + 1) * KERNEL_MEMORY_BYTES
    jobs = max(1, min(2 * cores, available // KERNEL_MEMORY_BYTES))
    if device != "cpu":
        jobs = min(jobs, ACCELERATOR_JOBS * max(1, accelerator_count(device)))
    return jobs
