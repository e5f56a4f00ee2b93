"""What a kernel leaves behind: processes (ended, by walking /proc) and folders (swept when stale).

A kernel run as nobody without a pid namespace can leave processes that no
namespace ends; this process becomes their subreaper, and ends every one of
them before the result is written.
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

from grader.kernel.isolation import STALE_SECONDS, run_root


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
        if len(fields) < 2 or fields[0] == "Z" and not _live_thread(entry):
            continue  # a zombie whose threads are all gone: nothing left to end (a leader that left by a raw
            # SYS_exit while another thread runs shows as Z too, and is ended with the rest)
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


def _live_thread(entry: Path) -> bool:
    """Whether any thread of a process (its /proc entry) is not a zombie."""
    try:
        tasks = list((entry / "task").iterdir())
    except OSError:
        return False
    for task in tasks:
        try:
            line = (task / "stat").read_text()
        except OSError:
            continue
        if line[line.rfind(")") + 2:].split()[:1] != ["Z"]:
            return True
    return False


def _user_tasks(uid: int) -> list[int]:
    """Every process with a live thread whose real uid is `uid`, found by user (not by ancestry): what a double
    fork, a new session or a leader gone by raw SYS_exit cannot hide from."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            status = (entry / "status").read_text()
        except OSError:
            continue
        owner = next((int(line.split()[1]) for line in status.splitlines() if line.startswith("Uid:")), -1)
        if owner == uid and _live_thread(entry):
            found.append(int(entry.name))
    return found


def end_user(uid: int, rounds: int = 50) -> int:
    """As root, end every process of `uid` on this machine (`kill(-1, SIGKILL)` sent as that user, until none is
    left); returns how many rounds found some. Only where one grade owns the user: a platform's container."""
    import signal

    if os.geteuid() != 0 or uid == 0:
        return 0
    hit = 0
    for _ in range(rounds):
        if not _user_tasks(uid):
            break
        hit += 1
        pid = os.fork()
        if pid == 0:  # the child drops to `uid` and signals everything that user may signal (never root's)
            try:
                os.setgroups([])
                os.setgid(uid)
                os.setuid(uid)
                os.kill(-1, signal.SIGKILL)
            finally:
                os._exit(0)
        os.waitpid(pid, 0)
        time.sleep(0.01)
    _reap()
    return hit


def _reap() -> None:
    """Reap whatever was reparented here (this process is a subreaper) and has died."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def end_leftovers(uid: int | None, rounds: int = 50) -> int:
    """Kill every descendant of this process that runs as `uid` (a kernel's leftovers; None: whoever it runs as),
    until none is left (a process can fork while its siblings die; RLIMIT_NPROC bounds how many it can make);
    returns how many."""
    import signal

    killed: set[int] = set()
    for _ in range(rounds):
        targets = [pid for pid, owner in _descendants(os.getpid()).items() if uid is None or owner == uid]
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
