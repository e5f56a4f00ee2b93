"""The command that starts a kernel: bubblewrap's whitelist, the drop to nobody, the rlimits, the environment.

`bwrap_argv` prefixes a single kernel's command, `bwrap_zygote_argv` the
zygote's (see zygote.py); `kernel_env` is the kernel's whole environment.
"""

from __future__ import annotations

import os
import platform
import shutil
import sys
from pathlib import Path

from grader.base.limits import Limits
from grader.kernel.devices import COMPILE_CACHE_TARGET, DEVICES, KernelStart, device_dir, device_files, driver_library_dirs, memory_rlimit
from grader.kernel.isolation import NOBODY, SandboxReport, run_root


def bwrap_path() -> str | None:
    """The bubblewrap binary, if this host has it."""
    if platform.system() != "Linux":
        return None
    return shutil.which("bwrap")


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
                devices: tuple[str, ...] | list[str] = (), readonly: dict[str, str] | None = None) -> list[str]:
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
    argv += ["--proc", "/proc", "--dev", "/dev", *_device_binds(devices)]
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
    for source_path, target_path in readonly.items():
        argv += ["--ro-bind", source_path, target_path]
    # The root and the folders made on it (/etc, the parents of the binds) are read-only: as a normal user
    # they belong to the sandbox's own user, and a zygote's are shared by every kernel it forks.
    argv += ["--remount-ro", "/", "--chdir", str(workdir), "--clearenv"]
    for key, value in env.items():
        argv += ["--setenv", key, f"{venv}/bin:/usr/bin:/bin" if key == "PATH" else value]
    return argv


def _device_binds(devices: tuple[str, ...] | list[str]) -> list[str]:
    """An accelerator's device nodes (only when --device asks for one), and what its driver reads: the device
    tree, and the folders its libraries were found in."""
    argv: list[str] = []
    for node in devices:
        argv += ["--dev-bind", node, "/dev/" + str(Path(node).relative_to(device_dir()))]
    if devices:
        argv += ["--ro-bind-try", "/sys", "/sys"]
        for folder in driver_library_dirs():
            argv += ["--ro-bind-try", folder, folder]
    return argv


def setpriv_argv() -> list[str]:
    return ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", "--inh-caps=-all",
            "--bounding-set=-all", "--no-new-privs", "--"]


def prlimit_argv(limits: Limits, device: str = "cpu") -> list[str]:
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
        return argv + ["--disable-userns", "--"] + prlimit_argv(limits, start.device)
    argv += ["--", *setpriv_argv()]
    if report.budgets.get("own_user_namespace"):
        argv += ["unshare", "--user", "--map-current-user", "--"]
    return argv + prlimit_argv(limits, start.device)


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
