"""check --watch: a re-check on every save prints only what changed; a half-saved notebook is skipped; Ctrl-C
leaves nothing running."""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from conftest import patched_solution, write

from grader import watch
from grader.judge.verdict import ExerciseResult
from grader.lesson import catalog, handout
from grader.result.record import GradeResult

LESSON = "inference-capacity"
SUBS = Path(__file__).parent / "submissions" / LESSON


def _result(*statuses):
    return GradeResult(status="graded", lesson=LESSON, student="me", mode="check", submission="me.ipynb",
                       exercises=tuple(ExerciseResult(f"ex{i}", status, 0.0, 1.0, "simulated",
                                                      () if status == "passed" else (f"ex{i}: wrong",))
                                       for i, status in enumerate(statuses)))


def test_the_first_check_is_shown_whole_then_only_what_moved():
    first = watch.changes(None, _result("failed", "passed"))
    assert first.startswith("Self-check of me.ipynb") and "ex0: wrong" in first
    moved = watch.changes(_result("failed", "passed"), _result("passed", "passed")).splitlines()
    assert moved[0].endswith("2 of 2 exercises pass the public checks")
    assert moved[1:] == ["PASS     ex0 (was FAIL)"]  # the unchanged exercise is not repeated
    same = watch.changes(_result("failed", "passed"), _result("failed", "passed")).splitlines()
    assert same[1:] == ["no change"] and same[0].endswith("1 of 2 exercises pass the public checks")


def test_a_notebook_cut_short_mid_save_is_not_complete(tmp_path):
    path = tmp_path / "nb.ipynb"
    path.write_text('{"cells": [')
    assert not watch._complete(path)
    path.write_text('{"cells": []}')
    assert watch._complete(path)
    script = tmp_path / "main.py"
    script.write_text("x = (")  # a script is checked as it is: its syntax error is the student's to see
    assert watch._complete(script)


def _lines(process, into):
    for line in process.stdout:
        into.put(line.rstrip("\n"))


def _read_until(lines, wanted, seconds):
    seen = []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            seen.append(lines.get(timeout=0.2))
        except queue.Empty:
            continue
        if wanted(seen[-1]):
            return seen
    raise AssertionError(f"waited {seconds} s for a line; saw {seen}")


def _left_behind(pid):
    """Processes that belong to the watcher: its template (named by its pid) and anything in its session."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == pid:
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            session = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[4])
        except (OSError, ValueError, IndexError):
            continue
        if f"zygote-{pid}-" in cmdline or session == pid:
            found.append(cmdline[:120])
    return found


@pytest.mark.kernel
def test_a_save_is_rechecked_a_half_save_skipped_and_ctrl_c_mid_check_ends_everything(tmp_path):
    notebook = tmp_path / "mine.ipynb"
    write(patched_solution(LESSON, SUBS / "missing-count-missed.py"), notebook)
    good = tmp_path / "good.ipynb"
    write(handout.solution_notebook(catalog.get(LESSON)), good)
    process = subprocess.Popen([sys.executable, "-m", "grader", "check", "--watch", str(notebook)],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True,
                               cwd=tmp_path)
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=_lines, args=(process, lines), daemon=True).start()
    try:
        first = _read_until(lines, lambda line: line.startswith("PASS every case matched"), 120)  # the legend, last
        assert any(line.startswith("MISSING  deadline") for line in first)
        notebook.write_bytes(good.read_bytes()[:300])  # the editor is half-way through writing
        time.sleep(1.5)
        assert lines.empty(), lines.get()  # nothing said about a notebook that does not parse yet
        os.replace(good, notebook)  # the save completes (a new file renamed over the old, as editors do)
        again = _read_until(lines, lambda line: line.startswith("PASS") or line == "no change", 60)
        assert again[0].endswith("9 of 9 exercises pass the public checks") and again[-1] == "PASS     deadline (was MISSING)"
        looping = tmp_path / "looping.ipynb"  # the next save hangs in a loop: Ctrl-C comes mid-check
        write(patched_solution(LESSON, SUBS / "infinite-loop-in-collection-cell.py"), looping)
        os.replace(looping, notebook)
        time.sleep(3)
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=30) == 130
        assert "stopped watching" in _read_until(lines, lambda line: line == "stopped watching", 5)
        time.sleep(0.5)
        assert _left_behind(process.pid) == []
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=10)
        process.stdout.close()


def test_without_bubblewrap_it_watches_unsandboxed_and_says_so_once(monkeypatch):
    from grader.base.options import Options
    from grader.kernel import sandbox
    from grader.kernel.isolation import SandboxReport

    bare = SandboxReport("process", {}, missing_reason="bubblewrap (bwrap) is not installed on this host")
    monkeypatch.setattr(sandbox, "plan", lambda limits, want="auto", require=False: bare)
    options, note = watch.watch_options(Options(public_only=True, sandbox="none", zygote=True))
    assert not options.zygote and options.sandbox == "none"
    assert note.startswith("grader: watching without a sandbox (bubblewrap (bwrap) is not installed on this host)")
