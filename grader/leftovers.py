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

from grader.isolation import STALE_SECONDS, run_root


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
