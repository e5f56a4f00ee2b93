"""Isolation, as recorded with every grade: which layers held, and the folders kernels run in.

The layers are planned by sandbox.py and built by launch.py; this
module holds only what both, and the records, share.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

NOBODY = 65534
STALE_SECONDS = 6 * 3600
LAYERS = ("network", "filesystem", "user", "pid_namespace", "session", "rlimits", "ipc_transport")
"""Isolation layers, each held or not for a grade."""
ISOLATION = ("network", "filesystem", "user", "pid_namespace")
"""The layers without which student code could reach the instructor's files, network or processes.

`filesystem` is a private mount namespace in which the checkout, `solutions/`,
outputs and gradebook are absent; `user` is no capabilities, no new
privileges and an unprivileged user. `batch` refuses to grade without these
unless told `--no-sandbox`; `--require-sandbox` refuses in every command.
"""
BUDGETS = ("own_user_namespace", "cgroup")
"""What keeps one kernel from starving another: a user namespace of its own
(RLIMIT_NPROC counts per user per user namespace) and a cgroup (memory and
pids caps). Reported, never a reason to refuse."""


def run_root() -> Path:
    """Short root for per-run dirs (Unix socket paths must stay under 107 bytes)."""
    env = os.environ.get("GRADER_RUNROOT")
    return Path(env) if env else Path("/tmp") / f"grader-{os.getuid()}"


@dataclass(frozen=True)
class SandboxReport:
    """Which isolation layers were in force for a grade, and why any were not."""

    mode: str
    """`bwrap` (bubblewrap kernel), `bwrap+zygote` (the same, forked warm), `nobody` (no namespaces; root runs
    the kernel as nobody under rlimits) or `process` (a plain local kernel)."""
    layers: dict[str, bool]
    """Each layer of LAYERS and whether it held."""
    limits: dict[str, Any] = field(default_factory=dict)
    """The numeric limits applied."""
    missing_reason: str = ""
    """Why isolation layers are missing, when some are."""
    rootless: bool = False
    """The grader runs as a normal user: the kernel's user is mapped in a user namespace."""
    budgets: dict[str, bool] = field(default_factory=dict)
    """Each of BUDGETS and whether it held."""
    reasons: dict[str, str] = field(default_factory=dict)
    """Why each layer or budget that did not hold did not."""

    @property
    def isolated(self) -> bool:
        """Whether every layer of ISOLATION held."""
        return all(self.layers.get(name, False) for name in ISOLATION)

    @property
    def kernel_as(self) -> str:
        """Whom the kernel runs as: `nobody` (root dropped it), `user` (the grader's own user, or a user namespace
        mapped to it) or `root` (no isolation, as root: only ever when the instructor asked for it)."""
        if self.mode.startswith("bwrap"):
            return "user" if self.rootless else "nobody"
        if self.mode == "nobody":
            return "nobody"
        return "root" if os.geteuid() == 0 else "user"

    def to_dict(self) -> dict[str, Any]:
        """Plain data for the result JSON."""
        return {"mode": self.mode, "runs_as": "user" if self.rootless else ("root" if os.geteuid() == 0 else "user"),
                "kernel_as": self.kernel_as, "rootless": self.rootless, "isolated": self.isolated,
                "layers": dict(self.layers), "budgets": dict(self.budgets), "limits": dict(self.limits),
                "missing": [name for name, held in self.layers.items() if not held],
                "missing_reason": self.missing_reason, "reasons": dict(self.reasons)}


def as_nobody(report: SandboxReport) -> bool:
    """The kernel drops from root to nobody (its run and scratch folders must be nobody's)."""
    return report.mode == "nobody" or (report.mode.startswith("bwrap") and not report.rootless)
