"""Resource limits for one grade.

Precedence, stated once: a command-line flag overrides the value given to
`Limits(...)` by the caller, which overrides the defaults below.
"""

from __future__ import annotations

from dataclasses import dataclass, replace


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
    load_scaled: bool = True
    """Scale the time limits above by how slow the machine is when a grade starts (busy_factor): a busy machine
    never times out work that fits them on a quiet one. Off, the limits are wall seconds as written."""

    def for_this_machine(self) -> tuple[Limits, float]:
        """(these limits stretched by how busy the machine is now, the factor): measured (host.slowdown) where
        `load_scaled`, else as written (1.0)."""
        if not self.load_scaled:
            return self, 1.0
        from grader.base import host

        factor = busy_factor(host.slowdown())
        return self.scaled(factor), factor

    def scaled(self, factor: float) -> Limits:
        """These limits with every wall-clock budget times `factor` (CPU seconds and sizes unchanged)."""
        if factor == 1.0:
            return self
        return replace(self, cell_timeout=self.cell_timeout * factor, given_cell_timeout=self.given_cell_timeout * factor,
                       cell_timeouts=tuple((cell, seconds * factor) for cell, seconds in self.cell_timeouts),
                       probe_timeout=self.probe_timeout * factor, notebook_timeout=self.notebook_timeout * factor,
                       startup_timeout=self.startup_timeout * factor)


BUSY_FROM = 1.5
"""A measured slowdown below this is the machine's ordinary jitter: the limits stand as written."""
MOST_BUSY = 4.0
"""The most the limits are ever stretched: past it, a grade waits no longer for a machine that slow."""


def busy_factor(slowdown: float) -> float:
    """The factor time limits are scaled by for a measured slowdown (host.slowdown): 1.0 below BUSY_FROM, else the
    slowdown itself, to one decimal, at most MOST_BUSY."""
    return 1.0 if slowdown < BUSY_FROM else min(MOST_BUSY, round(slowdown, 1))
