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

import functools
import os
import platform
import shutil
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from jupyter_client.kernelspec import KernelSpec

from grader import upstream
from grader.errors import SandboxUnavailable
from grader.limits import Limits

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


def bwrap_path() -> str | None:
    """The bubblewrap binary, if this host has it."""
    if platform.system() != "Linux":
        return None
    return shutil.which("bwrap")


@functools.lru_cache(maxsize=None)
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
    limit_data = {"memory_bytes": limits.memory_bytes, "processes": limits.processes,
                  "file_bytes": limits.file_bytes, "open_files": limits.open_files,
                  "cpu_seconds": limits.cpu_seconds, "cell_timeout": limits.cell_timeout,
                  "notebook_timeout": limits.notebook_timeout,
                  "cell_output_chars": limits.cell_output_chars, "max_message_bytes": limits.max_message_bytes}
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
        own = _userns_for_nobody(tool) if root else True
        if not own:
            reasons["own_user_namespace"] = "the kernel's user cannot create a user namespace; all kernels share one process budget"
        report = SandboxReport("bwrap", {name: True for name in LAYERS}, limit_data, rootless=not root,
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
            *_setpriv(), "prlimit", "--core=0", "--", python(), "-c", "import ipykernel"):
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


NOBODY_GAPS = {
    "network": "no network namespace here: the kernel can reach the host's loopback and its network",
    "pid_namespace": "no pid namespace here: the kernel sees the host's processes and their command lines; "
                     "every process it leaves is killed before the result is written",
    "filesystem": "no mount namespace here: the kernel reads whatever the user nobody may read",
}
"""What does not hold when root runs the kernel as nobody without namespaces, layer by layer."""


TRIAL = "import importlib.util, sys; sys.exit(importlib.util.find_spec('ipykernel') is None)"
"""What the trial sandbox runs: the kernel's interpreter finds the kernel's package (a read, not an import)."""


@functools.lru_cache(maxsize=None)
def _trial(rootless: bool, own_user_namespace: bool) -> str:
    """Start a short sandbox exactly as a kernel's (the same binds, user and limits) and import the kernel's
    package in it; "" if that worked, else why not. Once per process: bubblewrap can be installed where the
    host (a container, a policy) denies it the namespaces it needs."""
    import subprocess
    import tempfile

    report = SandboxReport("bwrap", {name: True for name in LAYERS}, rootless=rootless,
                           budgets={"own_user_namespace": own_user_namespace, "cgroup": False})
    root = run_root()
    root.mkdir(mode=0o755, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=root, prefix="trial-") as tmp:
        rundir, scratch = Path(tmp) / "run", Path(tmp) / "scratch"
        for folder in (rundir, scratch):
            folder.mkdir()
            if _as_nobody(report):
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


def become_subreaper() -> bool:
    """Make this process the child subreaper of what it starts (Linux): an orphaned descendant, even one that
    started a session of its own, is reparented here rather than to init, so it can be found and ended."""
    import ctypes

    try:
        return ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0) == 0  # PR_SET_CHILD_SUBREAPER
    except (OSError, AttributeError):
        return False


def _descendants(of: int) -> dict[int, int]:
    """{pid: uid} of every live descendant of `of` (from /proc: a parent's pid, a real uid)."""
    children: dict[int, list[int]] = {}
    uids: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat_line = (entry / "stat").read_text()
            status = (entry / "status").read_text()
        except OSError:
            continue
        fields = stat_line[stat_line.rfind(")") + 2:].split()
        if len(fields) < 2 or fields[0] == "Z":
            continue
        uid = next((int(line.split()[1]) for line in status.splitlines() if line.startswith("Uid:")), -1)
        children.setdefault(int(fields[1]), []).append(int(entry.name))
        uids[int(entry.name)] = uid
    found: dict[int, int] = {}
    todo = list(children.get(of, []))
    while todo:
        pid = todo.pop()
        if pid not in found:
            found[pid] = uids.get(pid, -1)
            todo += children.get(pid, [])
    return found


def end_leftovers(uid: int, rounds: int = 50) -> int:
    """Kill every descendant of this process that runs as `uid` (a kernel's leftovers), until none is left
    (a process can fork while its siblings die; RLIMIT_NPROC bounds how many it can make); returns how many."""
    import signal

    killed: set[int] = set()
    for _ in range(rounds):
        targets = [pid for pid, owner in _descendants(os.getpid()).items() if owner == uid]
        if not targets:
            break
        for pid in targets:
            try:
                os.kill(pid, signal.SIGKILL)
                killed.add(pid)
            except OSError:
                pass
        time.sleep(0.01)
    for pid in killed:  # those reparented here are ours to reap
        try:
            os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            pass
    return len(killed)


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


class SandboxKernelManager(upstream.QuickKernelManager):
    """A single-use kernel: ipc transport, private dirs, optional bwrap wrapper."""

    on_interrupt: Callable[[], None] | None = None
    """Called before each interrupt nbclient sends on a cell's timeout (run.py: a second one means stuck)."""

    async def interrupt_kernel(self) -> None:  # type: ignore[override]
        if self.on_interrupt is not None:
            self.on_interrupt()
        await super().interrupt_kernel()

    def __init__(self, *, report: SandboxReport, limits: Limits, start: KernelStart = None, **kwargs: Any) -> None:
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
            if _as_nobody(report):
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
        if _as_nobody(self.report):
            os.chown(self.connection_file, NOBODY, NOBODY)
        if self.report.mode == "nobody":
            return _setpriv() + _prlimit(self.grade_limits, self.start.device) + cmd
        if not self.report.mode.startswith("bwrap"):
            return cmd
        return bwrap_argv(self.rundir, self.scratch, self.grade_limits, self.report, self.start) + cmd

    def start_kwargs(self) -> dict[str, Any]:
        """Keyword arguments for `start_kernel`: clean environment, scratch cwd, quiet stdio."""
        import subprocess

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
    """Sources of the lesson's `warm_cells`, which a zygote runs once (lessons.warm_sources)."""


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


def kernel_env(scratch: Path, start: KernelStart | None = None) -> dict[str, str]:
    """The kernel's whole environment: nothing of the grader's leaks in.

    PYTHONHASHSEED fixes set and dict-of-str iteration order, so a grade
    replays exactly; it is read when an interpreter starts (for a zygote,
    once for every kernel it forks).
    """
    start = start or KernelStart()
    env = {"PYTHONHASHSEED": str(start.hash_seed),
        "PATH": "/usr/bin:/bin", "HOME": str(scratch), "TMPDIR": "/tmp", "LANG": "C.UTF-8",
        "IPYTHONDIR": "/tmp/.ipython", "MPLCONFIGDIR": "/tmp/.mpl", "XDG_CACHE_HOME": "/tmp/.cache",
        "JAX_PLATFORMS": DEVICES.get(start.device) or "", "MALLOC_ARENA_MAX": "2", "PYTHONNOUSERSITE": "1",
        "PYTHONDONTWRITEBYTECODE": "1", "OPENBLAS_NUM_THREADS": "1",
        "XLA_FLAGS": "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1",
        # full float32 matmuls on every device: an accelerator's default precision is far from the seed's
        # tolerance (max relative error 0.26 on an H200), and notebooks already handed out do not ask for it
        "JAX_DEFAULT_MATMUL_PRECISION": "highest",
    }
    if start.device != "cpu":  # jobs sharing an accelerator each allocate what they use, none 75 % of it up front
        env["XLA_PYTHON_CLIENT_PREALLOCATE"] = "false"
        if driver_library_dirs():
            env["LD_LIBRARY_PATH"] = ":".join(driver_library_dirs())
    if not env["JAX_PLATFORMS"]:
        del env["JAX_PLATFORMS"]  # auto: JAX uses whatever it finds
    if start.compile_cache:
        env.update(compile_cache_env(COMPILE_CACHE_TARGET, writer=False))
    return env


def compile_cache_env(folder: str, writer: bool) -> dict[str, str]:
    """JAX settings for a compilation cache in `folder`. A reader never writes (its threshold is never reached);
    the writer keeps every compile. No XLA side caches: their paths would enter the cache key."""
    return {"JAX_COMPILATION_CACHE_DIR": folder,
            "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0" if writer else "1e9",
            "JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES": "-1", "JAX_PERSISTENT_CACHE_ENABLE_XLA_CACHES": "none"}


def python() -> str:
    """This interpreter as the sandbox sees it: an absolute path without `..` (only bound folders exist there)."""
    return os.path.abspath(sys.executable)


def _parents(path: Path) -> list[str]:
    return [str(p) for p in reversed(path.parents) if str(p) != "/"]


def _bwrap_base(writable: list[Path], workdir: Path, env: dict[str, str], rootless: bool, keep_caps: bool,
                devices: list[str] = (), readonly: dict[str, str] | None = None) -> list[str]:
    """The read-only whitelist every kernel sees, plus `writable` dirs bound at their own paths.

    Every sandbox starts a new session (no controlling terminal: nothing can
    be typed into the grader's terminal with TIOCSTI). As a normal user the
    sandbox is built inside a user namespace: the kernel's user (`nobody`, or
    root for the zygote, which needs its capabilities to build each kernel's
    namespaces) maps to the grader's own user and holds no rights outside.
    """
    venv = Path(sys.prefix).resolve()
    base = Path(sys.base_prefix).resolve()
    argv = [bwrap_path() or "bwrap", "--die-with-parent", "--new-session"]
    if rootless:
        uid = 0 if keep_caps else NOBODY
        argv += ["--unshare-user", "--uid", str(uid), "--gid", str(uid)]
    argv += ["--unshare-net", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
             "--hostname", "sandbox"]
    if rootless and keep_caps:
        argv += ["--cap-add", "ALL"]
    elif rootless:
        argv += ["--cap-drop", "ALL"]
    elif not keep_caps:
        argv += ["--cap-drop", "ALL", "--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID",
                 "--cap-add", "CAP_SETPCAP", "--cap-add", "CAP_DAC_OVERRIDE"]
    argv += ["--ro-bind", "/usr", "/usr", "--symlink", "usr/bin", "/bin", "--symlink", "usr/sbin", "/sbin",
             "--symlink", "usr/lib", "/lib", "--symlink", "usr/lib64", "/lib64", "--perms", "0755", "--dir", "/etc"]
    for name in ("passwd", "group", "nsswitch.conf", "ld.so.cache", "ld.so.conf", "ld.so.conf.d",
                 "localtime", "hosts", "alternatives", "ssl"):
        argv += ["--ro-bind-try", f"/etc/{name}", f"/etc/{name}"]
    argv += ["--proc", "/proc", "--dev", "/dev"]
    for node in devices:  # an accelerator's device nodes, only when --device asks for one
        argv += ["--dev-bind", node, "/dev/" + str(Path(node).relative_to(device_dir()))]
    if devices:  # and what its driver reads: the device tree, and the folders its libraries were found in
        argv += ["--ro-bind-try", "/sys", "/sys"]
        for folder in driver_library_dirs():
            argv += ["--ro-bind-try", folder, folder]
    argv += [
             "--perms", "1777", "--size", str(256 * 1024**2), "--tmpfs", "/tmp",
             "--perms", "1777", "--size", str(64 * 1024**2), "--tmpfs", "/dev/shm"]
    made: set[str] = {"/tmp", "/etc", "/usr", "/dev", "/proc"}
    readonly = readonly or {}
    for target in (base, venv, *writable, *map(Path, readonly.values())):
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
    for source, target in readonly.items():
        argv += ["--ro-bind", source, target]
    # The root and the folders made on it (/etc, the parents of the binds) are read-only: as a normal user
    # they belong to the sandbox's own user, and a zygote's are shared by every kernel it forks.
    argv += ["--remount-ro", "/", "--chdir", str(workdir), "--clearenv"]
    for key, value in env.items():
        argv += ["--setenv", key, f"{venv}/bin:/usr/bin:/bin" if key == "PATH" else value]
    return argv


def _as_nobody(report: SandboxReport) -> bool:
    """The kernel drops from root to nobody (its run and scratch folders must be nobody's)."""
    return report.mode == "nobody" or (report.mode.startswith("bwrap") and not report.rootless)


def _setpriv() -> list[str]:
    return ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", "--inh-caps=-all",
            "--bounding-set=-all", "--no-new-privs", "--"]


def _prlimit(limits: Limits, device: str = "cpu") -> list[str]:
    memory = "--as" if memory_rlimit(device) == "RLIMIT_AS" else "--data"
    return ["prlimit", f"{memory}={limits.memory_bytes}", f"--nproc={limits.processes}",
            f"--fsize={limits.file_bytes}", f"--nofile={limits.open_files}", "--core=0",
            f"--cpu={limits.cpu_seconds}", "--"]


def bwrap_argv(rundir: Path, scratch: Path, limits: Limits, report: SandboxReport,
               start: KernelStart | None = None) -> list[str]:
    """The prefix of a fresh kernel's command.

    As root: bubblewrap -> setpriv (nobody, no capabilities, no new
    privileges) -> unshare (a user namespace of the kernel's own, so that
    RLIMIT_NPROC counts this kernel alone; set after it, so the budget is
    not the shared one) -> prlimit. As a normal user: bubblewrap in a user
    namespace of its own (which also drops every capability and sets no new
    privileges, and refuses further user namespaces) -> prlimit.
    """
    start = start or KernelStart()
    argv = _bwrap_base([rundir, scratch], scratch, kernel_env(scratch, start), rootless=report.rootless,
                       keep_caps=False, devices=device_files(start.device), readonly=_cache_bind(start))
    if report.rootless:
        return argv + ["--disable-userns", "--"] + _prlimit(limits, start.device)
    argv += ["--", *_setpriv()]
    if report.budgets.get("own_user_namespace"):
        argv += ["unshare", "--user", "--map-current-user", "--"]
    return argv + _prlimit(limits, start.device)


def bwrap_zygote_argv(home: Path, limits: Limits, rootless: bool, start: KernelStart | None = None) -> list[str]:
    """bubblewrap prefix for the kernel zygote: root (of its own user namespace, as a normal user)
    keeps its capabilities to build each child's namespaces.

    Process-start settings (malloc arenas, JAX platform, BLAS threads, hash
    seed) are fixed here, since forked kernels inherit them.
    """
    root = run_root()
    start = start or KernelStart()
    env = dict(kernel_env(Path("/tmp"), start), PYDEVD_DISABLE_FILE_VALIDATION="1")
    return _bwrap_base([root / "run", root / "scratch", home], Path("/tmp"), env, rootless=rootless,
                       keep_caps=True, devices=device_files(start.device), readonly=_cache_bind(start)) + ["--"]


def _cache_bind(start: KernelStart) -> dict[str, str]:
    return {start.compile_cache: COMPILE_CACHE_TARGET} if start.compile_cache else {}


def kernel_manager(report: SandboxReport, limits: Limits, start: KernelStart | None = None,
                   **kwargs: Any) -> SandboxKernelManager:
    """A new single-use kernel manager for one run of one submission."""
    return SandboxKernelManager(report=report, limits=limits, start=start, **kwargs)
