"""Resource limits for one grade.

Precedence, stated once: a command-line flag overrides the value given to
`Limits(...)` by the caller, which overrides the defaults below.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Limits:
    """Time, memory and output bounds applied to one submission."""

    cell_timeout: float = 30.0
    """Seconds one student cell may run before it is interrupted."""
    given_cell_timeout: float = 120.0
    """Seconds for a cell that is the lesson's given code, unchanged: a cold kernel's first imports and
    compiles must fit (the larger of this and `cell_timeout` applies)."""
    cell_timeouts: tuple[tuple[str, float], ...] = ()
    """Per-cell budgets by cell id, `(id, seconds)`, over the two above (`--cell-timeout-for ID=SECONDS`)."""
    probe_timeout: float = 30.0
    """Seconds the probe of one exercise may run."""
    notebook_timeout: float = 300.0
    """Seconds the whole run (all cells and probes) may take before the kernel is killed."""
    startup_timeout: float = 60.0
    """Seconds to wait for a new kernel to answer."""
    cell_output_chars: int = 1_000_000
    """Characters of output kept per cell; the rest is replaced by a note."""
    notebook_output_chars: int = 8_000_000
    """Characters of output kept over the whole notebook."""
    probe_payload_bytes: int = 8_000_000
    """Largest probe answer accepted from the kernel."""
    max_message_bytes: int = 16 * 1024 * 1024
    """Largest single ZMQ message the grader will receive (a bigger one is a flood)."""
    memory_bytes: int = 4 * 1024**3
    """Address-space limit of the kernel process (RLIMIT_AS)."""
    processes: int = 512
    """Processes and threads of the kernel's user (RLIMIT_NPROC)."""
    file_bytes: int = 256 * 1024**2
    """Largest file the kernel may write (RLIMIT_FSIZE)."""
    open_files: int = 1024
    """Open file descriptors of the kernel (RLIMIT_NOFILE)."""
    cpu_seconds: int = 600
    """CPU seconds of the kernel over its life (RLIMIT_CPU), a backstop behind the timeouts."""
    attempts: int = 3
    """Runs of the notebook at most: a kernel death drops the cell or probe that caused it."""
