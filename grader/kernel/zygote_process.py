"""The zygote: a warm template process that forks one isolated kernel per request.

This file runs on its own (it imports nothing from the grader) as root inside
one long-lived bubblewrap with the kernel environment. It imports the heavy
libraries once, never runs student code and never reads grader data. For each
request `{"connection_file", "rundir", "scratch", "limits"}` it forks a child
that enters fresh mount, pid, net, ipc and uts namespaces, rebuilds /tmp,
/dev/shm and /proc so that only its own run and scratch dirs are visible, and
forks the kernel, which drops every capability, applies rlimits, becomes the
unprivileged user and starts ipykernel in-process. The grader receives a pidfd
of the child over the socket (SCM_RIGHTS) and can poll and kill it.
"""

import ctypes
import gc
import importlib
import json
import logging
import os
import pdb  # noqa: F401
import pydoc  # noqa: F401
import signal
import socket
import sqlite3  # noqa: F401
import sys

# A grading kernel is never debugged: without debugpy, ipykernel gives it no debugger (its import, about 55 ms of
# the template's start, and a debugger object in every kernel are spared).
sys.modules["debugpy"] = None

# What IPKernelApp.initialize would otherwise import in every kernel (0.27 s of its 0.33 s; faulthandler, the
# logger and tornado's asyncio platform, about 3.5 ms, are what a forked kernel still imported)
import faulthandler  # noqa: F401

import ipykernel.debugger
import ipykernel.ipkernel
import ipykernel.zmqshell  # noqa: F401
import IPython.core.completerlib
import IPython.core.debugger
import IPython.core.logger
import IPython.core.oinspect
import IPython.extensions.storemagic  # noqa: F401
import tornado.platform.asyncio  # noqa: F401
from ipykernel.kernelapp import IPKernelApp

CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC = 0x00020000, 0x04000000, 0x08000000
CLONE_NEWPID, CLONE_NEWNET = 0x20000000, 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_MOVE, MS_REC, MS_PRIVATE = 32, 4096, 8192, 16384, 1 << 18
MNT_DETACH = 2
PR_SET_PDEATHSIG, PR_SET_DUMPABLE, PR_CAPBSET_DROP, PR_SET_NO_NEW_PRIVS = 1, 4, 24, 38
CLONE_NEWUSER = 0x10000000
PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL = 47, 4
NOBODY = 65534
libc = ctypes.CDLL(None, use_errno=True)


class GradingKernelApp(IPKernelApp):
    """ipykernel's app as a grading kernel needs it: one client asking one thing at a time.

    Without the shell-channel thread (ipykernel's home for subshells, which no
    grade asks for) the main thread reads the shell socket itself: one thread
    hand-off less per request, as ipykernel runs a kernel that has no such
    thread. Its log keeps warnings only (they go to /dev/null): ipykernel's
    debug lines otherwise build four records a cell that nothing prints. Its
    settings arrive as config and its connection file as a trait, so it has
    no command line to parse (traitlets builds a parser of every flag of
    every configurable class for it: about 3 ms of each kernel's start).
    """

    def parse_command_line(self, argv=None):
        if argv:
            return super().parse_command_line(argv)
        self.argv = []

    def init_sockets(self):
        super().init_sockets()
        self.shell_channel_thread = None

    def init_kernel(self):
        self.log.setLevel(logging.WARNING)
        super().init_kernel()


def _check(result, what):
    if result != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def _mount(source, target, fstype, flags, data=None):
    _check(libc.mount(source.encode() if source else None, target.encode(),
                      fstype.encode() if fstype else None, ctypes.c_ulong(flags),
                      data.encode() if data else None), f"mount {target}")


def _umount(target):
    _check(libc.umount2(target.encode(), MNT_DETACH), f"umount {target}")


def _loopback_up():
    import fcntl
    import struct

    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        request = struct.pack("16sH14x", b"lo", 0)
        flags = struct.unpack("16sH14x", fcntl.ioctl(s.fileno(), 0x8913, request))[1]  # SIOCGIFFLAGS
        fcntl.ioctl(s.fileno(), 0x8914, struct.pack("16sH14x", b"lo", flags | 1))     # SIOCSIFFLAGS, IFF_UP


def _private_filesystem(rundir, scratch, keep_readonly=()):
    """Only this request's run and scratch dirs stay visible under a fresh /tmp.

    `keep_readonly` lists read-only paths that live under /tmp (a Python
    environment checked out there): they are carried over, still read-only.
    """
    os.umask(0o022)  # the grader's umask may be 077: nobody must still traverse the folders made here
    _mount(None, "/", None, MS_REC | MS_PRIVATE)
    _mount("tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, "size=64m,mode=1777")
    holders = []
    for index, path in enumerate((rundir, scratch, *keep_readonly)):
        holder = f"/dev/shm/.hold{index}"
        os.mkdir(holder)
        _mount(path, holder, None, MS_BIND)
        holders.append((holder, path))
    _umount("/tmp")
    _mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "size=256m,mode=1777")
    for holder, path in holders:
        parent = os.path.dirname(path)
        os.makedirs(parent, mode=0o755, exist_ok=True)
        os.mkdir(path)
        _mount(holder, path, None, MS_MOVE)
        os.rmdir(holder)
        if path in keep_readonly:
            _mount(None, path, None, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV)
    # The new proc is mounted while the old one is still there: in a user namespace the kernel
    # allows a proc mount only where one is already fully visible. Then it takes the old one's place.
    os.mkdir("/dev/shm/.proc")
    _mount("proc", "/dev/shm/.proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    _umount("/proc")
    _mount("/dev/shm/.proc", "/proc", None, MS_MOVE)
    os.rmdir("/dev/shm/.proc")
    for sub in ("/proc/sys", "/proc/irq", "/proc/bus"):
        if os.path.isdir(sub):
            _mount(sub, sub, None, MS_BIND | MS_REC)
            _mount(None, sub, None, MS_BIND | MS_REMOUNT | MS_RDONLY)


def _drop_capabilities():
    """Empty the bounding, ambient, inheritable, permitted and effective sets."""
    with open("/proc/sys/kernel/cap_last_cap") as f:
        last_cap = int(f.read())
    for cap in range(last_cap + 1):
        libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0)
    libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
    header = (ctypes.c_uint32 * 2)(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3, this thread
    data = (ctypes.c_uint32 * 6)()                 # two {effective, permitted, inheritable}, all zero
    _check(libc.capset(header, data), "capset")


def _own_user_namespace():
    """Enter a user namespace of this kernel's own, mapping its user to itself.

    RLIMIT_NPROC counts processes per user per user namespace: in its own
    namespace a kernel's thread or fork bomb exhausts only its own budget.
    The namespace gives capabilities inside it, which are dropped again.
    """
    uid, gid = os.geteuid(), os.getegid()
    libc.prctl(PR_SET_DUMPABLE, 1, 0, 0, 0)  # after setuid the kernel is not, and could not write its maps
    _check(libc.unshare(CLONE_NEWUSER), "unshare user namespace")
    for name, text in (("setgroups", "deny"), ("uid_map", f"{NOBODY} {uid} 1"), ("gid_map", f"{NOBODY} {gid} 1")):
        with open(f"/proc/self/{name}", "w") as handle:
            handle.write(text)


def _become_kernel(request):
    import resource

    if request.get("become_nobody", True):  # real root: drop to nobody
        with open("/proc/sys/kernel/cap_last_cap") as f:
            last_cap = int(f.read())
        for cap in range(last_cap + 1):
            libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0)
        libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
        os.setgroups([])
        os.setresgid(NOBODY, NOBODY, NOBODY)
        os.setresuid(NOBODY, NOBODY, NOBODY)  # from root to nobody: every capability set is cleared
    # Otherwise K is root of the zygote's user namespace, which maps only the grader's user: it keeps
    # that id (the only one there is) and its rights until its own namespace is made (mapping a parent's
    # uid 0 needs CAP_SETFCAP at that moment); a process has no rights in a parent namespace.
    if request.get("own_user_namespace"):
        _own_user_namespace()
    _drop_capabilities()  # in whichever namespace the kernel now is
    # Limits come after the user namespace: its budget is fixed from the limit in force when it is made.
    limits = request["limits"]
    for name, value in ((limits.get("memory_rlimit", "RLIMIT_AS"), limits["memory_bytes"]), ("RLIMIT_NPROC", limits["processes"]),
                        ("RLIMIT_FSIZE", limits["file_bytes"]), ("RLIMIT_NOFILE", limits["open_files"]),
                        ("RLIMIT_CORE", 0), ("RLIMIT_CPU", limits["cpu_seconds"])):
        resource.setrlimit(getattr(resource, name), (value, value))
    _check(libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")
    environment = dict(request["env"])
    os.environ.clear()
    os.environ.update(environment)
    os.chdir(request["scratch"])
    if "numpy" in sys.modules:
        sys.modules["numpy"].random.seed()  # its legacy global generator: fresh per kernel
    sys.argv = ["ipykernel_launcher"]
    app = GradingKernelApp.instance(config=_kernel_config(), connection_file=request["connection_file"])
    warm = bool(request.get("warm_cells")) and WARM_NAMESPACE is not None
    if warm:  # the kernel's globals are the very namespace the warm cells' functions were defined in
        app.user_ns = WARM_NAMESPACE
    app.initialize([])
    if warm:  # as if the kernel had run them: In[1..n] and the next execution count
        history = app.shell.history_manager
        for number, source in enumerate(WARM_SOURCES, start=1):
            history.input_hist_parsed.append(source)
            history.input_hist_raw.append(source)
            WARM_NAMESPACE[f"_i{number}"] = source
        app.shell.execution_count += len(WARM_SOURCES)
    app.start()
    os._exit(0)


def _child(request):
    """C1: a new session (no controlling terminal), new namespaces, fork the reaper (pid 1), exit with it."""
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    os.setsid()
    _check(libc.unshare(CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS), "unshare")
    reaper = os.fork()
    if reaper:
        _, status = os.waitpid(reaper, 0)
        os._exit(os.waitstatus_to_exitcode(status) & 0xFF)
    # C2: pid 1 of the new pid namespace; dies with C1, and its exit ends the namespace
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    try:
        _private_filesystem(request["rundir"], request["scratch"], tuple(request.get("keep_readonly", ())))
        _loopback_up()
        socket.sethostname("sandbox")
    except OSError:
        os._exit(70)
    kernel = os.fork()
    if kernel == 0:
        try:
            _become_kernel(request)
        finally:
            os._exit(71)
    while True:
        try:
            pid, status = os.waitpid(-1, 0)
        except ChildProcessError:
            os._exit(0)
        if pid == kernel:
            os._exit(os.waitstatus_to_exitcode(status) & 0xFF)


def _reap(signum, frame):
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def _warm_tracebacks():
    """Do once what a kernel's first traceback does: import IPython's traceback machinery and index every
    loaded module's file for inspect.getmodule (90-150 ms of each kernel's CPU, most of it that index).

    Both are caches of the template's own, public state; a kernel adds to them only what it imports itself.
    """
    import inspect

    from IPython.core import ultratb

    inspect.getmodule(compile("", "<zygote warm-up>", "exec"))
    try:
        raise ValueError("warm-up")
    except ValueError:
        ultratb.AutoFormattedTB(mode="Context", theme_name="linux").text(*sys.exc_info())


def _warm_kernel_start():
    """Do once what every kernel's start repeats on its first use: the regular expressions, lazy imports and
    per-class caches of making IPython's shell (several ms of each kernel's 25 ms in `initialize`). A throwaway
    shell is made and cleared, and what it changed of the process's globals (`__main__`, two builtins, an exit
    hook) is put back. It starts no thread (its history is in memory), so the template still forks safely.
    """
    import atexit
    import builtins

    from ipykernel.zmqshell import ZMQInteractiveShell

    main, added = sys.modules.get("__main__"), set(builtins.__dict__)
    try:
        atexit.unregister(ZMQInteractiveShell.instance(user_ns={}, config=_kernel_config()).atexit_operations)
    finally:
        ZMQInteractiveShell.clear_instance()
        sys.modules["__main__"] = main
        for name in set(builtins.__dict__) - added:
            del builtins.__dict__[name]


def _kernel_config():
    """What every kernel is told besides its connection file: its history is kept in memory, never on disk."""
    from traitlets.config import Config

    return Config({"HistoryManager": {"hist_file": ":memory:"}})


WARM_SOURCES = ()
WARM_NAMESPACE = None
"""The namespace of the lesson's warm cells, run once here; None if there are none or one failed or wrote."""


def _run_warm_cells(sources):
    """Run the lesson's leading given cells once, as a kernel would run them first.

    They are course code, never a student's. A cell that raises or writes
    anything leaves the namespace unused (every kernel then runs the cells
    itself). Their source is entered in linecache, so tracebacks through
    their functions still show it.
    """
    import builtins
    import contextlib
    import io
    import linecache

    namespace = {"__name__": "__main__", "__builtin__": builtins, "__builtins__": builtins}
    written = io.StringIO()
    try:
        with contextlib.redirect_stdout(written), contextlib.redirect_stderr(written):
            for number, source in enumerate(sources, start=1):
                name = f"<given cell {number}>"
                linecache.cache[name] = (len(source), None, source.splitlines(True), name)
                exec(compile(source, name, "exec"), namespace)
    except BaseException:
        return None
    return None if written.getvalue() else namespace


def serve(path):
    """Accept requests on a Unix socket; answer each with a pidfd of a fresh kernel child."""
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path)
    os.chmod(path, 0o600)
    server.listen(16)
    signal.signal(signal.SIGCHLD, _reap)
    gc.freeze()
    sys.stdout.write("ready warm-cells\n" if WARM_NAMESPACE is not None else "ready\n")
    sys.stdout.flush()
    while True:
        try:
            conn, _ = server.accept()
        except InterruptedError:
            continue
        with conn:
            data = b""
            while not data.endswith(b"\n"):
                chunk = conn.recv(65536)
                if not chunk:
                    break
                data += chunk
            if not data:
                continue
            request = json.loads(data)
            pid = os.fork()
            if pid == 0:
                try:
                    server.close()
                    conn.close()
                    os.closerange(3, 65536)
                    null = os.open("/dev/null", os.O_RDWR)
                    for fd in (0, 1, 2):
                        os.dup2(null, fd)
                    _child(request)
                finally:
                    os._exit(72)
            pidfd = os.pidfd_open(pid)
            try:
                socket.send_fds(conn, [b"ok"], [pidfd])
            finally:
                os.close(pidfd)


if __name__ == "__main__":
    # The lesson's warm imports (numpy, jax, ...), named by the grader; a failing one only costs its warmth.
    for _name in json.loads(sys.argv[2]) if len(sys.argv) > 2 else []:
        try:
            importlib.import_module(_name)
        except Exception:
            pass
    for _warm in (_warm_tracebacks, _warm_kernel_start):
        try:
            _warm()
        except Exception:
            pass
    WARM_SOURCES = tuple(json.loads(sys.argv[3])) if len(sys.argv) > 3 else ()
    WARM_NAMESPACE = _run_warm_cells(WARM_SOURCES) if WARM_SOURCES else None
    serve(sys.argv[1])
