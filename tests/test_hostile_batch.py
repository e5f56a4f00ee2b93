"""The hostile suite in batch mode: one class, every attack beside honest neighbours, on a terminal.

The batch runs under a pseudo-terminal (`script`), forks its kernels from the
warm zygote and grades several at once, so the attacks that need company
(a thread bomb, a marker written for a concurrent searcher) get it. The
neighbours' verdicts must be those of a class without the attackers, nothing
may reach the terminal, and everyone must be recorded. Every attack is bounded
(rlimits, short holds, tight timeouts on the looping cell) and targets only
loopback; the test checks the host afterwards.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import socket
import sqlite3
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from conftest import TIGHT_CELL, patched_solution, statuses, submission, write

from grader.base.limits import Limits
from grader.kernel import sandbox
from grader.lesson import catalog, handout

LESSON = "inference-capacity"
HERE = Path(__file__).parent
HOSTILE = HERE / "submissions" / "hostile"
SUBS = HERE / "submissions" / LESSON
needs_bwrap = pytest.mark.skipif(sandbox.plan(Limits()).mode != "bwrap",
                                 reason="bubblewrap sandbox unavailable on this host (CI installs it)")
needs_script = pytest.mark.skipif(shutil.which("script") is None, reason="util-linux `script` is not installed")
pytestmark = [pytest.mark.sandbox, pytest.mark.kernel, needs_bwrap, needs_script]
FLAGS = ["--cell-timeout", "30", "--cell-timeout-for", f"{TIGHT_CELL}=3", "--notebook-timeout", "120"]


def _fill(text: str, fills: dict[str, str]) -> str:
    for key, value in fills.items():
        text = text.replace(f"__{key}__", value)
    assert not re.search(r"__[A-Z]+__", text), "a placeholder was left unfilled"
    return text


def _honest(folder: Path) -> None:
    write(handout.solution_notebook(catalog.get(LESSON)), folder / "ada.ipynb")
    write(patched_solution(LESSON, submission(LESSON, "deadline-counts-equal-as-missed")), folder / "ben.ipynb")


def _in_terminal(argv: list[str], timeout: float) -> subprocess.CompletedProcess[str]:
    """Run a command with a pseudo-terminal as its controlling terminal; its output is what the terminal showed."""
    return subprocess.run(["script", "-qec", shlex.join(argv), "/dev/null"], stdin=subprocess.DEVNULL, capture_output=True,
                          text=True, errors="replace", timeout=timeout)


def _batch(folder: Path, out: Path, jobs: int, timeout: float = 900) -> subprocess.CompletedProcess[str]:
    grader = str(Path(sys.executable).with_name("grader"))
    return _in_terminal([grader, "batch", str(folder), "--lesson", LESSON, "--out", str(out), "--jobs", str(jobs),
                         *FLAGS], timeout)


def _result(out: Path, student: str) -> dict:
    return json.loads((out / "results" / f"{student}.json").read_text())


def _host_files_named(name: str) -> list[str]:
    found = []
    for top in ("/tmp", "/dev/shm", "/var/tmp"):
        for root, dirs, files in os.walk(top):
            dirs[:] = [d for d in dirs if not os.path.islink(os.path.join(root, d))]
            if name in files:
                found.append(root)
    return found


def test_the_terminal_check_sees_typed_input():
    """Control: the pseudo-terminal check does see bytes pushed with TIOCSTI, so the tests below can fail."""
    program = ("import fcntl, os, termios\n"
               "tty = os.open('/dev/tty', os.O_RDWR)\n"
               "[fcntl.ioctl(tty, termios.TIOCSTI, bytes([b])) for b in b'echo CONTROL-MARK\\n']\n")
    try:
        shown = _in_terminal([sys.executable, "-c", program], 60)
    except subprocess.TimeoutExpired:
        pytest.skip("no pseudo-terminal here")
    if shown.returncode != 0 and "Operation not permitted" in shown.stdout + shown.stderr:
        pytest.skip("this kernel forbids TIOCSTI for everyone")
    assert "CONTROL-MARK" in shown.stdout


@pytest.fixture(scope="module")
def hostile_class(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """Grade, once, a class of two honest students and every hostile submission, and a class of the two alone."""
    base = tmp_path_factory.mktemp("hostile-class")
    mark = f"grader-mark-{uuid.uuid4().hex[:8]}"
    sleep_mark = f"31{uuid.uuid4().int % 10**6:06d}"
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    listener.setblocking(False)
    out, folder = base / "out", base / "class"
    folder.mkdir()
    (out / "results").mkdir(parents=True)
    fills = {"PORT": str(listener.getsockname()[1]), "ANSWERS": str((catalog.get(LESSON).solutions / "answers.py").resolve()),
             "HOME": os.path.expanduser("~"), "OUT": str(out), "GRADEBOOK": str(out / "gradebook.sqlite"),
             "MARK": mark, "HOLD": "15"}
    daemon_fills = dict(fills, MARK=sleep_mark)
    _honest(folder)
    # The thread bomb and the marker pair sort first, so they run beside each other and beside ada.
    (folder / "a1-thread-bomb.py").write_text(_fill((HOSTILE / "thread-bomb.py").read_text(), fills))
    (folder / "a2-writes-markers.py").write_text(_fill((HOSTILE / "writes-markers.py").read_text(), fills))
    (folder / "a3-searches-markers.py").write_text(_fill((HOSTILE / "searches-markers.py").read_text(), fills))
    patches = ["allocates-60-gb", "connects-to-host-loopback", "copies-the-reference", "daemon-with-new-session",
               "exits-and-crashes", "floods-output", "ignores-interrupt", "writes-outside-scratch", "huge-numbers",
               "types-into-the-terminal", "replaces-json", "huge-error-message", "garbles-kernel-messages"]
    for name in patches:
        text = _fill((HOSTILE / f"{name}.py").read_text(), daemon_fills if name.startswith("daemon") else fills)
        write(patched_solution(LESSON, text), folder / f"{name}.ipynb")
    broken = json.loads((folder / "ada.ipynb").read_text())
    broken["cells"][1]["metadata"] = ["not", "an", "object"]
    (folder / "malformed-metadata.ipynb").write_text(json.dumps(broken))
    try:
        shown = _batch(folder, out, jobs=4)
        neighbours_alone = base / "alone"
        neighbours_alone.mkdir()
        _honest(neighbours_alone)
        alone = _batch(neighbours_alone, base / "alone-out", jobs=2)
        with pytest.raises(BlockingIOError):
            listener.accept()  # no kernel ever reached the host's loopback
    finally:
        listener.close()
        for pid in [int(p.name) for p in Path("/proc").iterdir() if p.name.isdigit()]:
            try:
                if sleep_mark in (Path("/proc") / str(pid) / "cmdline").read_bytes().decode(errors="replace"):
                    os.kill(pid, 9)
            except OSError:
                pass
    return {"out": out, "folder": folder, "shown": shown, "alone": alone, "alone_out": base / "alone-out",
            "mark": mark, "sleep_mark": sleep_mark, "students": sorted(p.stem for p in folder.iterdir())}


def test_the_class_is_graded_to_the_end_and_everyone_is_recorded(hostile_class):
    shown, out = hostile_class["shown"], hostile_class["out"]
    assert shown.returncode == 0, shown.stdout[-3000:]
    assert "Traceback" not in shown.stdout
    with sqlite3.connect(str(out / "gradebook.sqlite")) as db:
        rows = dict(db.execute("SELECT student, status FROM grades").fetchall())
    assert sorted(rows) == hostile_class["students"]
    assert sorted(p.stem for p in (out / "reports").glob("*.html")) == hostile_class["students"]
    assert rows["malformed-metadata"] == "rejected"
    assert "cell 2, field 'metadata' is not an object" in _result(out, "malformed-metadata")["error"]
    assert not any((_result(out, s).get("error") or "").startswith("internal grader error") for s in rows)


def test_the_neighbours_verdicts_are_those_of_a_class_without_attackers(hostile_class):
    out, alone = hostile_class["out"], hostile_class["alone_out"]
    assert hostile_class["alone"].returncode == 0
    for student in ("ada", "ben"):
        assert statuses(_result(out, student)) == statuses(_result(alone, student)), student
    assert _result(out, "ada")["score"] == 9.0


def test_nothing_reaches_the_instructors_terminal(hostile_class):
    assert hostile_class["mark"] not in hostile_class["shown"].stdout
    kernel_saw = _result(hostile_class["out"], "types-into-the-terminal")
    assert statuses(kernel_saw)["p95-interpolation"] == "passed"  # the attempt failed quietly; the grade went on


def test_the_summary_names_the_students_with_errors(hostile_class):
    summary = hostile_class["shown"].stdout
    errors_line = next(line for line in summary.splitlines() if line.strip().startswith("with errors:"))
    for student in ("exits-and-crashes", "replaces-json", "allocates-60-gb"):
        assert student in errors_line
    assert "malformed-metadata" in next(line for line in summary.splitlines() if line.strip().startswith("rejected:"))


def test_numbers_no_float_holds_cost_only_their_own_exercises(hostile_class):
    result = _result(hostile_class["out"], "huge-numbers")
    got = statuses(result)
    assert got["p95-interpolation"] in ("failed", "error") and got["deadline"] in ("failed", "error")
    assert {ex: st for ex, st in got.items() if ex not in ("p95-interpolation", "deadline")} == {
        ex: "passed" for ex in got if ex not in ("p95-interpolation", "deadline")}
    report = (hostile_class["out"] / "reports" / "huge-numbers.html").read_text()
    assert "huge-numbers" in report and "p95-interpolation" in report


def test_forged_probe_answers_are_that_students_errors(hostile_class):
    result = _result(hostile_class["out"], "replaces-json")
    assert result["status"] == "graded"
    assert set(statuses(result).values()) == {"error"}
    messages = " ".join(m for e in result["exercises"] for m in e["messages"])
    assert "could not be checked" in messages and "internal grader error" not in messages


def test_a_garbled_kernel_protocol_is_that_students_error(hostile_class):
    result = _result(hostile_class["out"], "garbles-kernel-messages")
    got = statuses(result)
    assert result["status"] == "graded" and got["p95-interpolation"] == got["replica-plan"] == "error"
    assert got["queue-hand-check"] == "passed"
    assert "broke the kernel protocol" in " ".join(m for e in result["exercises"] for m in e["messages"])


def test_a_thread_bomb_starves_only_itself(hostile_class):
    notebook = json.loads((hostile_class["out"] / "notebooks" / "a1-thread-bomb.ipynb").read_text())
    printed = "".join("".join(o.get("text", "")) for c in notebook["cells"] for o in c.get("outputs", []))
    held = int(printed.split("threads held:")[1].split()[0])
    assert 100 < held < 1000  # stopped by its own process budget (512 with the kernel's own threads)
    assert _result(hostile_class["out"], "ada")["score"] == 9.0


def test_a_marker_written_everywhere_is_found_nowhere_else(hostile_class):
    notebook = json.loads((hostile_class["out"] / "notebooks" / "a3-searches-markers.ipynb").read_text())
    printed = "".join("".join(o.get("text", "")) for c in notebook["cells"] for o in c.get("outputs", []))
    assert "found: []" in printed
    writer = json.loads((hostile_class["out"] / "notebooks" / "a2-writes-markers.ipynb").read_text())
    wrote = "".join("".join(o.get("text", "")) for c in writer["cells"] for o in c.get("outputs", []))
    assert int(wrote.split("written:")[1].split()[0]) >= 3  # it did write (scratch, /tmp, /dev/shm at least)
    assert _host_files_named(hostile_class["mark"]) == []


def test_a_multi_megabyte_error_is_kept_short(hostile_class):
    out = hostile_class["out"]
    assert _result(out, "huge-error-message")["score"] == 9.0
    assert (out / "results" / "huge-error-message.json").stat().st_size < 1_000_000
    assert (out / "notebooks" / "huge-error-message.ipynb").stat().st_size < 2_000_000


def test_the_other_attacks_keep_their_single_grade_verdicts(hostile_class):
    out = hostile_class["out"]
    assert statuses(_result(out, "allocates-60-gb"))["replica-plan"] == "error"
    crashes = statuses(_result(out, "exits-and-crashes"))
    assert crashes["replica-plan"] == crashes["deadline"] == crashes["p95-interpolation"] == "error"
    assert statuses(_result(out, "ignores-interrupt"))["batch-collection"] == "timeout"
    assert _result(out, "floods-output")["run"]["flood"] is True
    stolen = statuses(_result(out, "copies-the-reference"))
    assert stolen["queue-hand-check"] in ("failed", "error")
    assert _result(out, "writes-outside-scratch")["score"] == 9.0
    assert not (out / "results" / "forged.json").exists()
    with sqlite3.connect(str(out / "gradebook.sqlite")) as db:
        assert db.execute("SELECT max(score) FROM grades").fetchone()[0] <= 9.0
