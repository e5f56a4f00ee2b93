"""Step 2, sandbox: a fresh, single-use kernel for every submission.

The kernel talks to the grader over jupyter_client's `ipc` transport (Unix
sockets in a per-run directory), so it needs no TCP. Where bubblewrap is
available the kernel also runs in its own network, pid, ipc and uts
namespaces, sees a read-only whitelist of the filesystem (the Python
installation and the project's environment, never the checkout, `solutions/`,
outputs or gradebook), writes only a private scratch directory and private
size-limited /tmp and /dev/shm, runs as an unprivileged user with no
capabilities and no-new-privileges, and under rlimits. Ending its pid namespace
ends everything the notebook started. Where a layer is missing the report says
so, and `require` turns that into `SandboxUnavailable`.
"""

from __future__ import annotations

import os
import platform
import shutil
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from jupyter_client.manager import AsyncKernelManager
from jupyter_client.kernelspec import KernelSpec

from grader.errors import SandboxUnavailable
from grader.limits import Limits

NOBODY = 65534
STALE_SECONDS = 6 * 3600
LAYERS = ("network", "filesystem", "user", "pid_namespace", "rlimits", "ipc_transport")


def run_root() -> Path:
    """Short root for per-run dirs (Unix socket paths must stay under 107 bytes)."""
    env = os.environ.get("GRADER_RUNROOT")
    return Path(env) if env else Path("/tmp") / f"grader-{os.getuid()}"


@dataclass(frozen=True)
class SandboxReport:
    """Which isolation layers were in force for a grade."""

    mode: str
    """`bwrap` (full isolation), `bwrap+zygote` (the same, forked warm) or `process` (a plain local kernel)."""
    layers: dict[str, bool]
    """Each layer of architecture section 3 and whether it held."""
    limits: dict[str, Any] = field(default_factory=dict)
    """The numeric limits applied."""
    missing_reason: str = ""
    """Why layers are missing, when some are."""

    def to_dict(self) -> dict[str, Any]:
        """Plain data for the result JSON."""
        return {"mode": self.mode, "layers": dict(self.layers), "limits": dict(self.limits),
                "missing": [name for name, held in self.layers.items() if not held],
                "missing_reason": self.missing_reason}


def bwrap_path() -> str | None:
    """The bubblewrap binary, if this host has it and can use it."""
    if platform.system() != "Linux":
        return None
    return shutil.which("bwrap")


def plan(limits: Limits, want: str = "auto", require: bool = False) -> SandboxReport:
    """Decide the isolation for this grade: `auto`, `bwrap` or `none`."""
    tool = bwrap_path() if want in ("auto", "bwrap") else None
    helpers = all(shutil.which(name) for name in ("setpriv", "prlimit"))
    limit_data = {"memory_bytes": limits.memory_bytes, "processes": limits.processes,
                  "file_bytes": limits.file_bytes, "open_files": limits.open_files,
                  "cpu_seconds": limits.cpu_seconds, "cell_timeout": limits.cell_timeout,
                  "notebook_timeout": limits.notebook_timeout,
                  "cell_output_chars": limits.cell_output_chars, "max_message_bytes": limits.max_message_bytes}
    if tool and helpers and os.geteuid() == 0:
        return SandboxReport("bwrap", {name: True for name in LAYERS}, limit_data)
    if want == "none":
        reason = "isolation switched off (--no-sandbox)"
    elif not tool:
        reason = "bubblewrap (bwrap) is not installed on this host" if platform.system() == "Linux" else f"no sandbox on {platform.system()}"
    elif not helpers:
        reason = "setpriv/prlimit (util-linux) are missing"
    else:
        reason = "the grader is not running as root, so it cannot drop to a separate user"
    layers = {name: name == "ipc_transport" and os.name == "posix" for name in LAYERS}
    report = SandboxReport("process", layers, limit_data, missing_reason=reason)
    if require:
        raise SandboxUnavailable(f"sandbox required but unavailable: {reason}")
    return report


def sweep_stale(root: Path | None = None) -> None:
    """Remove run and scratch dirs, and zygote homes, left by a grader that was killed."""
    root = root or run_root()
    now = time.time()
    for sub in ("run", "scratch"):
        folder = root / sub
        if not folder.is_dir():
            continue
        for entry in folder.iterdir():
            try:
                if now - entry.stat().st_mtime > STALE_SECONDS:
                    shutil.rmtree(entry, ignore_errors=True)
            except FileNotFoundError:
                pass
    for home in root.glob("zygote-*"):  # zygote homes are named zygote-<owner pid>-<random>
        owner = home.name.split("-")[1]
        if owner.isdigit() and not Path(f"/proc/{owner}").exists():
            shutil.rmtree(home, ignore_errors=True)


class _SandboxKernelManager(AsyncKernelManager):
    """A single-use kernel: ipc transport, private dirs, optional bwrap wrapper."""

    provisioner_factory: Callable[[Any], Any] | None = None
    """Set to launch the kernel another way (the zygote); None runs the kernel command."""

    async def _async_wait(self, pollinterval: float = 0.1) -> None:
        # jupyter_client polls every 0.1 s for a killed kernel to vanish; a single-use
        # kernel is usually gone within milliseconds, and every grade pays this wait
        await super()._async_wait(pollinterval=0.005)

    async def _async_pre_start_kernel(self, **kw: Any) -> Any:
        if self.provisioner is None and self.provisioner_factory is not None:
            self.kernel_id = self.kernel_id or str(uuid.uuid4())
            self.provisioner = self.provisioner_factory(self)
        return await super()._async_pre_start_kernel(**kw)

    def __init__(self, *, report: SandboxReport, limits: Limits, **kwargs: Any) -> None:
        super().__init__(kernel_name="python3", **kwargs)
        self.report = report
        self.grade_limits = limits
        rid = uuid.uuid4().hex[:10]
        root = run_root()
        self.rundir = root / "run" / rid
        self.scratch = root / "scratch" / rid
        for folder in (root, root / "run", root / "scratch"):
            folder.mkdir(mode=0o755, exist_ok=True)
            folder.chmod(0o755)
        for folder in (self.rundir, self.scratch):
            folder.mkdir(mode=0o700)
            if report.mode.startswith("bwrap"):
                os.chown(folder, NOBODY, NOBODY)
        self.transport = "ipc"
        self.ip = str(self.rundir / "k")
        self.connection_file = str(self.rundir / "kernel.json")
        self._kernel_spec = KernelSpec(
            argv=[sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
            display_name="Python 3 (grader)", language="python", interrupt_mode="message",
        )

    @property
    def kernel_spec(self) -> KernelSpec:  # the notebook never picks the kernel
        return self._kernel_spec

    def format_kernel_cmd(self, extra_arguments: list[str] | None = None) -> list[str]:
        cmd = super().format_kernel_cmd(extra_arguments)
        if not self.report.mode.startswith("bwrap"):
            return cmd
        os.chown(self.connection_file, NOBODY, NOBODY)
        return bwrap_argv(self.rundir, self.scratch, self.grade_limits) + cmd

    def start_kwargs(self) -> dict[str, Any]:
        """Keyword arguments for `start_kernel`: clean environment, scratch cwd, quiet stdio."""
        import subprocess

        env = kernel_env(self.scratch)
        if not self.report.mode.startswith("bwrap"):
            env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), "/usr/bin", "/bin"])
        return {"env": env, "cwd": str(self.scratch), "stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}

    def remove_dirs(self) -> None:
        """Delete this kernel's run and scratch dirs."""
        for folder in (self.rundir, self.scratch):
            shutil.rmtree(folder, ignore_errors=True)


def kernel_env(scratch: Path) -> dict[str, str]:
    """The kernel's whole environment: nothing of the grader's leaks in."""
    return {
        "PATH": "/usr/bin:/bin", "HOME": str(scratch), "TMPDIR": "/tmp", "LANG": "C.UTF-8",
        "IPYTHONDIR": "/tmp/.ipython", "MPLCONFIGDIR": "/tmp/.mpl", "XDG_CACHE_HOME": "/tmp/.cache",
        "JAX_PLATFORMS": "cpu", "MALLOC_ARENA_MAX": "2", "PYTHONNOUSERSITE": "1",
        "PYTHONDONTWRITEBYTECODE": "1", "OPENBLAS_NUM_THREADS": "1",
        "XLA_FLAGS": "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1",
    }


def _parents(path: Path) -> list[str]:
    return [str(p) for p in reversed(path.parents) if str(p) != "/"]


def _bwrap_base(writable: list[Path], workdir: Path, env: dict[str, str], drop_caps: bool) -> list[str]:
    """The read-only whitelist every kernel sees, plus `writable` dirs bound at their own paths."""
    venv = Path(sys.prefix).resolve()
    base = Path(sys.base_prefix).resolve()
    argv = [bwrap_path() or "bwrap", "--die-with-parent", "--unshare-net", "--unshare-pid", "--unshare-ipc",
            "--unshare-uts", "--unshare-cgroup-try", "--hostname", "sandbox"]
    if drop_caps:
        argv += ["--cap-drop", "ALL", "--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID",
                 "--cap-add", "CAP_SETPCAP", "--cap-add", "CAP_DAC_OVERRIDE"]
    argv += ["--ro-bind", "/usr", "/usr", "--symlink", "usr/bin", "/bin", "--symlink", "usr/sbin", "/sbin",
             "--symlink", "usr/lib", "/lib", "--symlink", "usr/lib64", "/lib64", "--perms", "0755", "--dir", "/etc"]
    for name in ("passwd", "group", "nsswitch.conf", "ld.so.cache", "ld.so.conf", "ld.so.conf.d",
                 "localtime", "hosts", "alternatives", "ssl"):
        argv += ["--ro-bind-try", f"/etc/{name}", f"/etc/{name}"]
    argv += ["--proc", "/proc", "--dev", "/dev",
             "--perms", "1777", "--size", str(256 * 1024**2), "--tmpfs", "/tmp",
             "--perms", "1777", "--size", str(64 * 1024**2), "--tmpfs", "/dev/shm"]
    made: set[str] = {"/tmp", "/etc", "/usr", "/dev", "/proc"}
    for target in (base, venv, *writable):
        for parent in _parents(target):
            if parent not in made and not parent.startswith("/usr"):
                argv += ["--perms", "0755", "--dir", parent]
                made.add(parent)
    if not str(base).startswith("/usr"):
        argv += ["--ro-bind", str(base), str(base)]
    if venv != base:
        argv += ["--ro-bind", str(venv), str(venv)]
    for folder in writable:
        argv += ["--bind", str(folder), str(folder)]
    argv += ["--chdir", str(workdir), "--clearenv"]
    for key, value in env.items():
        argv += ["--setenv", key, f"{venv}/bin:/usr/bin:/bin" if key == "PATH" else value]
    return argv


def bwrap_argv(rundir: Path, scratch: Path, limits: Limits) -> list[str]:
    """bubblewrap -> setpriv -> prlimit prefix for a fresh kernel's command."""
    return _bwrap_base([rundir, scratch], scratch, kernel_env(scratch), drop_caps=True) + [
        "--", "setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups",
        "--inh-caps=-all", "--bounding-set=-all", "--no-new-privs",
        "--", "prlimit", f"--as={limits.memory_bytes}", f"--nproc={limits.processes}",
        f"--fsize={limits.file_bytes}", f"--nofile={limits.open_files}", "--core=0",
        f"--cpu={limits.cpu_seconds}", "--"]


def bwrap_zygote_argv(home: Path, limits: Limits) -> list[str]:
    """bubblewrap prefix for the kernel zygote: root keeps its capabilities to build each child's namespaces.

    Process-start settings (malloc arenas, JAX platform, BLAS threads, hash
    seed) are fixed here, since forked kernels inherit them.
    """
    root = run_root()
    env = dict(kernel_env(Path("/tmp")), PYDEVD_DISABLE_FILE_VALIDATION="1")
    return _bwrap_base([root / "run", root / "scratch", home], Path("/tmp"), env, drop_caps=False) + ["--"]


def kernel_manager(report: SandboxReport, limits: Limits, **kwargs: Any) -> _SandboxKernelManager:
    """A new single-use kernel manager for one run of one submission."""
    return _SandboxKernelManager(report=report, limits=limits, **kwargs)
