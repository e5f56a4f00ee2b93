"""Warm single-use kernels: forked from a zygote that imported the heavy libraries.

`zygote_process.py` runs as root inside one long-lived bubblewrap (network,
pid, ipc and uts namespaces; the same read-only whitelist as a fresh kernel;
only the run and scratch roots writable). For every kernel it forks a child
that isolates itself as strongly as a fresh bubblewrap kernel (see that file)
and becomes the kernel, so the lesson's heavy imports (its `warm_imports`) are paid once per grading process
instead of once per notebook. The grader holds a pidfd of the child: polling
it tells liveness, signalling it ends the child's pid namespace and with it
everything the notebook started. Every kernel still serves one submission.
The kernel manager that asks this template for a kernel is managers.forked.
"""

from __future__ import annotations

import atexit
import json
import os
import select
import shutil
import signal
import socket
import subprocess
import threading
import time
import uuid
from pathlib import Path
from typing import Any

from grader.base.errors import SandboxUnavailable
from grader.base.limits import Limits
from grader.kernel import devices, isolation, launch

SCRIPT = Path(__file__).with_name("zygote_process.py")
START_TIMEOUT = 90.0


class PidfdProcess:
    """A Popen look-alike over a pidfd (the kernel is not the grader's child)."""

    stdin = stdout = stderr = None

    def __init__(self, fd: int) -> None:
        self.fd: int | None = fd
        self.returncode: int | None = None
        self.pid = self._pid(fd)

    @staticmethod
    def _pid(fd: int) -> int:
        try:
            for line in Path(f"/proc/self/fdinfo/{fd}").read_text().splitlines():
                if line.startswith("Pid:"):
                    return int(line.split()[1])
        except (OSError, ValueError):
            pass
        return -1

    def poll(self) -> int | None:
        if self.returncode is None and self.fd is not None:
            ready, _, _ = select.select([self.fd], [], [], 0)
            if ready:
                self.returncode = -1  # only the zygote could wait() for the real status
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if deadline is not None and time.monotonic() > deadline:
                raise subprocess.TimeoutExpired("kernel", timeout or 0)
            if self.fd is not None:
                select.select([self.fd], [], [], 0.1)
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None
        return self.returncode if self.returncode is not None else -1

    def send_signal(self, signum: int) -> None:
        if self.poll() is None and self.fd is not None:
            try:
                signal.pidfd_send_signal(self.fd, signum)
            except ProcessLookupError:
                pass

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)


class Zygote:
    """One warm template process, shared by every grading process forked after it started.

    The process that started it owns it (only the owner stops it); a process
    forked later inherits the handle and watches the zygote through a pidfd.
    """

    def __init__(self, limits: Limits, wait: bool = True, start: devices.KernelStart | None = None) -> None:
        root = isolation.run_root()
        for folder in (root, root / "run", root / "scratch"):
            folder.mkdir(mode=0o755, exist_ok=True)
            folder.chmod(0o755)
        self.owner = os.getpid()
        self.home = root / f"zygote-{os.getpid()}-{uuid.uuid4().hex[:6]}"
        self.home.mkdir(mode=0o700)
        (self.home / "code").mkdir(mode=0o700)
        shutil.copy(SCRIPT, self.home / "code" / SCRIPT.name)
        self.socket_path = self.home / "z.sock"
        self.rootless = os.geteuid() != 0
        self.start = start or devices.KernelStart()  # fixed when its interpreter starts: every kernel it forks has it
        argv = launch.bwrap_zygote_argv(self.home, limits, self.rootless, self.start) + [
            launch.python(), str(self.home / "code" / SCRIPT.name), str(self.socket_path),
            json.dumps(list(self.start.warm_imports)), json.dumps(list(self.start.warm_cells))]
        # A session of its own: no kernel forked from it can reach the grader's terminal.
        self.process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                        stderr=subprocess.DEVNULL, env={"PATH": "/usr/bin:/bin"},
                                        start_new_session=True)
        self.pidfd = os.pidfd_open(self.process.pid)
        self.ready = False
        self._waiting = threading.Lock()
        self.warm_cells = False
        """Whether the zygote ran the lesson's warm cells (a cell that failed or printed leaves them to each kernel)."""
        if wait:
            self.wait_ready()

    def wait_ready(self) -> Zygote:
        """Block until the zygote has imported everything and listens (it starts in the background); threads
        that wait at once (a cluster worker's preparation and its first task) all read the one "ready" line."""
        with self._waiting:
            return self._wait_ready()

    def _wait_ready(self) -> Zygote:
        if not self.ready:
            out = self.process.stdout
            ready, _, _ = select.select([out], [], [], START_TIMEOUT) if out is not None else ([], [], [])
            line = out.readline() if ready and out is not None else b""
            if line.strip() not in (b"ready", b"ready warm-cells"):
                self.stop()
                raise SandboxUnavailable("the kernel zygote did not start")
            self.ready = True
            self.warm_cells = line.strip() == b"ready warm-cells"
        return self

    def alive(self) -> bool:
        """Whether the zygote is still running (works in forked processes too)."""
        if self.pidfd < 0:
            return False
        exited, _, _ = select.select([self.pidfd], [], [], 0)
        return not exited

    def spawn(self, request: dict[str, Any]) -> PidfdProcess:
        """Fork one isolated kernel; returns a handle on it."""
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
            conn.settimeout(30)
            conn.connect(str(self.socket_path))
            conn.sendall(json.dumps(request).encode() + b"\n")
            _, fds, _, _ = socket.recv_fds(conn, 16, 1)
        if not fds:
            raise SandboxUnavailable("the kernel zygote refused a request")
        return PidfdProcess(fds[0])

    def stop(self) -> None:
        """End the zygote (its pid namespace takes every kernel with it); a no-op outside its owner."""
        if os.getpid() != self.owner:
            return
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=10)
        if self.process.stdout:
            self.process.stdout.close()
        if self.pidfd >= 0:
            os.close(self.pidfd)
            self.pidfd = -1
        shutil.rmtree(self.home, ignore_errors=True)


_ZYGOTE: Zygote | None = None
_STARTING = threading.Lock()


def shared(limits: Limits, start: devices.KernelStart | None = None) -> Zygote:
    """This process's zygote (inherited from the process that forked it, if any), started on
    first use and restarted if it died or was started with other settings (hash seed, device)."""
    return start_shared(limits, start).wait_ready()


def start_shared(limits: Limits, start: devices.KernelStart | None = None) -> Zygote:
    """Start this process's zygote in the background, for processes forked later to share.

    Call `shared` (or `Zygote.wait_ready`) before forking them: a handle that
    has not read the zygote's "ready" line cannot be shared.
    """
    global _ZYGOTE
    start = start or devices.KernelStart()
    with _STARTING:  # a worker's background preparation and its first task may ask at once
        if _ZYGOTE is None or not _ZYGOTE.alive() or _ZYGOTE.start != start:
            if _ZYGOTE is not None:
                _ZYGOTE.stop()
            _ZYGOTE = Zygote(limits, wait=False, start=start)
            atexit.register(_ZYGOTE.stop)
        return _ZYGOTE


def stop_shared() -> None:
    """End this process's zygote, if it started one (a cluster worker that is closing)."""
    with _STARTING:
        if _ZYGOTE is not None:
            _ZYGOTE.stop()
