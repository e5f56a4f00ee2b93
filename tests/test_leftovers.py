"""leftovers: what a kernel leaves behind (orphaned processes, run folders of a killed grader) is ended."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from grader.kernel import leftovers
from grader.kernel.isolation import STALE_SECONDS

ORPHANS = textwrap.dedent("""
    import os, subprocess, sys, time
    from grader.kernel import leftovers
    assert leftovers.become_subreaper()
    # a shell that starts two sleepers in the background and exits: they are orphans, reparented to us
    subprocess.run(["sh", "-c", "sleep 30 & sleep 30 & exit 0"], check=True)
    time.sleep(0.2)
    print(leftovers.end_leftovers(os.getuid()), len(leftovers._descendants(os.getpid())))
""")


def test_orphans_are_found_through_the_subreaper_and_ended():
    done = subprocess.run([sys.executable, "-c", ORPHANS], capture_output=True, text=True, timeout=20)
    assert done.returncode == 0, done.stderr
    killed, left = map(int, done.stdout.split())
    assert (killed, left) == (2, 0)


def test_stale_run_folders_and_dead_graders_zygote_homes_are_swept(tmp_path):
    for sub in ("run", "scratch"):
        (tmp_path / sub / "old").mkdir(parents=True)
        (tmp_path / sub / "fresh").mkdir()
        past = time.time() - STALE_SECONDS - 60
        os.utime(tmp_path / sub / "old", (past, past))
    never = int(Path("/proc/sys/kernel/pid_max").read_text()) + 1  # no process can have this pid: its grader is gone
    (tmp_path / f"zygote-{never}-abc").mkdir()
    (tmp_path / f"zygote-{os.getpid()}-abc").mkdir()
    leftovers.sweep_stale(tmp_path)
    assert sorted(p.name for p in (tmp_path / "run").iterdir()) == ["fresh"]
    assert sorted(p.name for p in (tmp_path / "scratch").iterdir()) == ["fresh"]
    assert not (tmp_path / f"zygote-{never}-abc").exists() and (tmp_path / f"zygote-{os.getpid()}-abc").exists()
