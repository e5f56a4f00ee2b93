"""The kernel managers a grade uses: one single-use kernel in the sandbox (sandbox.py plans it, launch.py builds
its command), started by its own command (`started`) or forked warm by this process's template (`forked`,
zygote.py). Here, not in those modules, because this is where jupyter_client comes in: planning the sandbox and
starting the template need none of it, so a batch starts its template before importing it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

from jupyter_client.kernelspec import KernelSpec
from jupyter_client.provisioning import LocalProvisioner

from grader.base.limits import Limits
from grader.kernel import upstream, zygote
from grader.kernel.devices import KernelStart, memory_rlimit
from grader.kernel.isolation import NOBODY, SandboxReport, as_nobody, run_root
from grader.kernel.launch import bwrap_argv, kernel_env, prlimit_argv, python, setpriv_argv
from grader.kernel.leftovers import become_subreaper, end_leftovers


class SandboxKernelManager(upstream.QuickKernelManager):
    """A single-use kernel: ipc transport, private dirs, optional bwrap wrapper."""

    on_interrupt: Callable[[], None] | None = None
    """Called before each interrupt nbclient sends on a cell's timeout (execution.py: a second one means stuck)."""

    async def interrupt_kernel(self) -> None:  # type: ignore[override]
        if self.on_interrupt is not None:
            self.on_interrupt()
        await super().interrupt_kernel()

    def __init__(self, *, report: SandboxReport, limits: Limits, start: KernelStart | None = None, **kwargs: Any) -> None:
        super().__init__(kernel_name="python3", client_class=upstream.CLIENT_CLASS, **kwargs)
        self.report = report
        self.grade_limits = limits
        self.start = start or KernelStart()
        rid = uuid.uuid4().hex[:10]
        root = run_root()
        self.rundir = root / "run" / rid
        self.scratch = root / "scratch" / rid
        for folder in (root, root / "run", root / "scratch"):
            folder.mkdir(mode=0o755, exist_ok=True)
            folder.chmod(0o755)
        for folder in (self.rundir, self.scratch):
            folder.mkdir(mode=0o700)
            if as_nobody(report):
                os.chown(folder, NOBODY, NOBODY)
        self.transport = "ipc"
        self.ip = str(self.rundir / "k")
        self.connection_file = str(self.rundir / "kernel.json")
        self.grader_kernel_spec = KernelSpec(
            argv=[python(), "-m", "ipykernel_launcher", "-f", "{connection_file}"],
            display_name="Python 3 (grader)", language="python", interrupt_mode="message",
        )

    @property
    def kernel_spec(self) -> KernelSpec:  # the notebook never picks the kernel
        return self.grader_kernel_spec

    def format_kernel_cmd(self, extra_arguments: list[str] | None = None) -> list[str]:
        cmd = super().format_kernel_cmd(extra_arguments)
        if as_nobody(self.report):
            os.chown(self.connection_file, NOBODY, NOBODY)
        if self.report.mode == "nobody":
            return setpriv_argv() + prlimit_argv(self.grade_limits, self.start.device) + cmd
        if not self.report.mode.startswith("bwrap"):
            return cmd
        return bwrap_argv(self.rundir, self.scratch, self.grade_limits, self.report, self.start) + cmd

    def start_kwargs(self) -> dict[str, Any]:
        """Keyword arguments for `start_kernel`: clean environment, scratch cwd, quiet stdio."""
        if self.report.mode == "nobody":
            become_subreaper()  # what the kernel leaves behind is reparented here, to be ended after it

        env = kernel_env(self.scratch, self.start)
        if not self.report.mode.startswith("bwrap"):
            env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), "/usr/bin", "/bin"])
        return {"env": env, "cwd": str(self.scratch), "stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}

    def remove_dirs(self) -> None:
        """After the kernel: end every process it left behind (a kernel as nobody has no pid namespace whose end
        ends them), then delete its run and scratch dirs."""
        if self.report.mode == "nobody":
            end_leftovers(NOBODY)
        for folder in (self.rundir, self.scratch):
            shutil.rmtree(folder, ignore_errors=True)


def started(report: SandboxReport, limits: Limits, start: KernelStart | None = None,
            **kwargs: Any) -> SandboxKernelManager:
    """A new single-use kernel manager for one run of one submission, whose kernel starts by its own command."""
    return SandboxKernelManager(report=report, limits=limits, start=start, **kwargs)


class ZygoteProvisioner(LocalProvisioner):
    """Launches the kernel by asking the zygote instead of running a command."""

    template: zygote.Zygote | None = None
    request: dict[str, Any] = {}

    async def launch_kernel(self, cmd: list[str], **kwargs: Any) -> Any:
        assert self.template is not None
        spawned = self.template.spawn(self.request)
        self.process = spawned  # type: ignore[assignment]  # a pidfd-backed process answers as Popen does
        self.pid = spawned.pid
        self.pgid = None
        self.cwd = kwargs.get("cwd")
        await self._sockets_bound()
        return self.connection_info

    async def _sockets_bound(self, timeout: float = 30.0) -> None:
        """Return once the kernel has bound its ipc sockets, so the client's first connect succeeds
        (otherwise zmq backs off and retries); a dead kernel or the timeout returns early too."""
        import asyncio

        info = self.connection_info
        paths = [Path(f"{info['ip']}-{info[key]}") for key in
                 ("shell_port", "iopub_port", "stdin_port", "control_port", "hb_port") if key in info]
        deadline = time.monotonic() + timeout
        while not all(path.exists() for path in paths) and time.monotonic() < deadline:
            if self.process is None or self.process.poll() is not None:
                return
            await asyncio.sleep(0.005)


def request_for(km: Any, limits: Limits) -> dict[str, Any]:
    """What the zygote needs to start one kernel (no secrets: the key stays in the connection file)."""
    env = kernel_env(km.scratch, km.start)
    env["PATH"] = f"{Path(sys.prefix).resolve()}/bin:/usr/bin:/bin"
    prefixes = {str(Path(sys.prefix).resolve()), str(Path(sys.base_prefix).resolve())}
    report = km.report
    return {"connection_file": km.connection_file, "rundir": str(km.rundir), "scratch": str(km.scratch),
            "keep_readonly": sorted(p for p in prefixes if p.startswith("/tmp/")),
            "become_nobody": not report.rootless, "own_user_namespace": bool(report.budgets.get("own_user_namespace")),
            "env": env, "limits": dict({k: v for k, v in asdict(limits).items()
                                        if k in ("memory_bytes", "processes", "file_bytes", "open_files", "cpu_seconds")},
                                       memory_rlimit=memory_rlimit(km.start.device))}


def forked(report: SandboxReport, limits: Limits, start: KernelStart | None = None,
           warm_cells: bool = False) -> SandboxKernelManager:
    """A single-use kernel manager whose kernel is forked by this process's zygote; with `warm_cells`, the kernel
    starts in the namespace of the zygote's run of the lesson's warm cells (only if that run succeeded)."""
    km = started(report, limits, start)
    template = zygote.shared(limits, start)

    def provisioner(manager: Any) -> ZygoteProvisioner:
        made = ZygoteProvisioner(kernel_id=manager.kernel_id, kernel_spec=manager.kernel_spec, parent=manager)
        made.template = template
        made.request = dict(request_for(manager, limits), warm_cells=warm_cells and template.warm_cells)
        return made

    km.provisioner_factory = provisioner
    return km
