"""Sandbox: the isolation of the fresh, single-use kernel of every submission, planned by trial (`plan`).

The kernel talks to the grader over jupyter_client's `ipc` transport (Unix
sockets in a per-run directory), so it needs no TCP. Where bubblewrap is
available the kernel also runs in its own network, pid, ipc and uts
namespaces, sees a read-only whitelist of the filesystem (the Python
installation and the project's environment, never the checkout, `solutions/`,
outputs or gradebook), writes only a private scratch directory and private
size-limited /tmp and /dev/shm, runs as an unprivileged user with no
capabilities and no-new-privileges, and under rlimits. Ending its pid namespace
ends everything the notebook started. Where a layer is missing the report says
so, and `require` turns that into `SandboxUnavailable`. The kernels themselves are started in managers.py.
"""

from __future__ import annotations

import functools
import os
import platform
import shutil
from pathlib import Path
from typing import Any

from grader.base.errors import SandboxUnavailable
from grader.base.limits import Limits
from grader.kernel.isolation import LAYERS, NOBODY, SandboxReport, as_nobody, run_root
from grader.kernel.launch import bwrap_argv, bwrap_path, python, setpriv_argv


@functools.cache
def _works(*argv: str) -> bool:
    """Whether a short probe command exits 0 (the kernel or a policy may forbid a namespace)."""
    import subprocess

    try:
        return subprocess.run(list(argv), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, timeout=20).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


def _userns_for_nobody(tool: str) -> bool:
    """As root: can a kernel that became `nobody` enter a user namespace of its own?"""
    return _works(tool, "--unshare-pid", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--",
                  "setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", "--no-new-privs",
                  "--", "unshare", "--user", "--map-current-user", "--", "true")


def _userns_rootless(tool: str) -> bool:
    """As a normal user: can bubblewrap build its sandbox in a user namespace?"""
    return _works(tool, "--unshare-user", "--unshare-net", "--unshare-pid", "--ro-bind", "/", "/",
                  "--proc", "/proc", "--dev", "/dev", "--", "true")


def _cgroup_reason() -> str:
    if not Path("/sys/fs/cgroup/cgroup.controllers").is_file():
        return "this host has no unified (v2) cgroup hierarchy delegated to the grader; memory is bounded per process (RLIMIT_AS)"
    return "cgroup caps are not applied by this grader; memory is bounded per process (RLIMIT_AS)"


def plan(limits: Limits, want: str = "auto", require: bool = False) -> SandboxReport:
    """Decide the isolation for this grade: `auto`, `bwrap` (insist: raise SandboxUnavailable when bubblewrap
    cannot start a sandbox here) or `none`.

    As root, bubblewrap builds the namespaces and the kernel drops to
    `nobody`; as a normal user, bubblewrap builds them inside a user
    namespace that maps the kernel's user to the grader's. Either way each
    kernel gets a user namespace of its own, so RLIMIT_NPROC is its own
    budget. `require` raises when an ISOLATION layer is missing.
    """
    tool = bwrap_path() if want in ("auto", "bwrap") else None
    limit_data = _recorded_limits(limits)
    root = os.geteuid() == 0
    reasons = {"cgroup": _cgroup_reason()}
    reason = ""
    if want == "none":
        reason = "isolation switched off (--no-sandbox)"
    elif not tool:
        reason = ("bubblewrap (bwrap) is not installed on this host" if platform.system() == "Linux"
                  else f"no sandbox on {platform.system()}")
    elif not shutil.which("prlimit") or (root and not shutil.which("setpriv")):
        reason = "setpriv/prlimit (util-linux) are missing"
    elif not root and not _userns_rootless(tool):
        reason = "this host does not let a normal user create user namespaces (run as root, or allow them)"
    if not reason:
        own = _userns_for_nobody(tool) if root and tool else True
        if not own:
            reasons["own_user_namespace"] = "the kernel's user cannot create a user namespace; all kernels share one process budget"
        report = SandboxReport("bwrap", dict.fromkeys(LAYERS, True), limit_data, rootless=not root,
                               budgets={"own_user_namespace": own, "cgroup": False}, reasons=reasons)
        failed = _trial(not root, own)
        if not failed:
            return report
        reason = f"bubblewrap is installed but could not start a sandbox here ({failed})"
    if want == "bwrap":  # --sandbox insists: never a weaker mode in its place
        raise SandboxUnavailable(f"--sandbox: the bubblewrap sandbox is unavailable: {reason}; "
                                 "install bubblewrap, or leave out --sandbox to grade with what this host has")
    layers = {name: name == "ipc_transport" and os.name == "posix" for name in LAYERS}
    layers["session"] = True  # jupyter_client starts every kernel in a new session
    mode = "process"
    if root and want != "none" and shutil.which("setpriv") and shutil.which("prlimit") and _works(
            *setpriv_argv(), "prlimit", "--core=0", "--", python(), "-c", "import ipykernel"):
        # No namespaces here (a container without user namespaces, say), but root can still make the kernel
        # `nobody`, with no capabilities and under rlimits: files only root can read stay unreadable to it.
        mode = "nobody"
        layers.update(user=True, rlimits=True)
        reason += "; the kernel still runs as nobody, with no capabilities, under rlimits"
    elif root and want != "none":
        reason += ("; nobody cannot run this Python installation, and the kernel is never run as root unless "
                   "asked (--no-sandbox): make the installation readable by others")
    reasons.update({name: reason for name, held in layers.items() if not held})
    if mode == "nobody":
        reasons.update(NOBODY_GAPS)
    reasons["own_user_namespace"] = reason
    report = SandboxReport(mode, layers, limit_data, missing_reason=reason, rootless=not root,
                           budgets={"own_user_namespace": False, "cgroup": False}, reasons=reasons)
    if require:
        raise SandboxUnavailable(f"sandbox required but unavailable: {reason}")
    return report


def _recorded_limits(limits: Limits) -> dict[str, Any]:
    """The limits a grade's record states."""
    return {"memory_bytes": limits.memory_bytes, "processes": limits.processes, "file_bytes": limits.file_bytes,
            "open_files": limits.open_files, "cpu_seconds": limits.cpu_seconds, "cell_timeout": limits.cell_timeout,
            "notebook_timeout": limits.notebook_timeout, "cell_output_chars": limits.cell_output_chars,
            "max_message_bytes": limits.max_message_bytes}


NOBODY_GAPS = {
    "network": "no network namespace here: the kernel can reach the host's loopback and its network",
    "pid_namespace": "no pid namespace here: the kernel sees the host's processes and their command lines; "
                     "every process it leaves is killed before the result is written",
    "filesystem": "no mount namespace here: the kernel reads whatever the user nobody may read",
}
"""What does not hold when root runs the kernel as nobody without namespaces, layer by layer."""


TRIAL = "import importlib.util, sys; sys.exit(importlib.util.find_spec('ipykernel') is None)"
"""What the trial sandbox runs: the kernel's interpreter finds the kernel's package (a read, not an import)."""


@functools.cache
def _trial(rootless: bool, own_user_namespace: bool) -> str:
    """Start a short sandbox exactly as a kernel's (the same binds, user and limits) and import the kernel's
    package in it; "" if that worked, else why not. Once per process: bubblewrap can be installed where the
    host (a container, a policy) denies it the namespaces it needs."""
    import subprocess
    import tempfile

    report = SandboxReport("bwrap", dict.fromkeys(LAYERS, True), rootless=rootless,
                           budgets={"own_user_namespace": own_user_namespace, "cgroup": False})
    root = run_root()
    root.mkdir(mode=0o755, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=root, prefix="trial-") as tmp:
        rundir, scratch = Path(tmp) / "run", Path(tmp) / "scratch"
        for folder in (rundir, scratch):
            folder.mkdir()
            if as_nobody(report):
                os.chown(folder, NOBODY, NOBODY)
        os.chmod(tmp, 0o755)
        argv = bwrap_argv(rundir, scratch, Limits(), report) + [python(), "-c", TRIAL]
        try:
            done = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60,
                                  errors="replace")
        except (OSError, subprocess.SubprocessError) as err:
            return f"{type(err).__name__}: {err}"
    if done.returncode == 0:
        return ""
    said = " ".join(done.stderr.split())[-160:]
    return f"exit {done.returncode}" + (f": {said}" if said else "")
