"""`grader check --watch`: re-check a notebook on every save, from a warm template, printing what changed.

Each re-check is a whole `check`: a fresh kernel, the student's cells, the
public cases, and the verdict reached here, outside the kernel. What makes it
fast is kept between checks: where bubblewrap works, the lesson's warm
template (its imports done once), from which each check's kernel is forked
and isolated as a batch's are; and in this process, the lesson, its checks
and the grader's own imports. Without bubblewrap each check runs in a fresh
unsandboxed kernel, as `check` does, and the watcher says so once.

A save is seen by polling the file's size, time and inode (editors that save
by renaming a new file over the old one included). A notebook caught mid-save
(JSON that does not parse yet) is skipped silently until it does. The file is
read as the grader reads every submission: never through a link, never
blocking on a FIFO or device, never past the submission limit; such a file is
refused at the start (one line) and skipped, said once, when it appears later.
"""

from __future__ import annotations

import dataclasses
import json
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from grader import grading
from grader.base import files
from grader.base.errors import GraderError
from grader.base.options import Options
from grader.intake import load
from grader.kernel import leftovers, sandbox, zygote
from grader.report import render_text
from grader.result.record import GradeResult

POLL_SECONDS = 0.25


def watch_options(options: Options) -> tuple[Options, str]:
    """The options of every re-check (warm and sandboxed where bubblewrap works here), and what to say once
    when it does not ("" when it does)."""
    report = sandbox.plan(options.limits, "bwrap" if options.sandbox == "bwrap" else "auto")
    if report.mode == "bwrap":
        return dataclasses.replace(options, sandbox="bwrap", zygote=True), ""  # a check's hash seed: 0
    if options.sandbox == "bwrap":  # --sandbox insists, as `check --sandbox` does
        sandbox.plan(options.limits, "bwrap", require=True)
    return (dataclasses.replace(options, zygote=False),
            f"grader: watching without a sandbox ({report.missing_reason or 'bubblewrap is not in use'}): each "
            "re-check runs your code in a fresh kernel of your own, as `grader check` does")


def _signature(path: Path) -> tuple[int, int, int, int] | None:
    try:
        info = os.lstat(path)  # the entry itself: a link put in the notebook's place is seen as a link
    except OSError:
        return None
    return info.st_mtime_ns, info.st_size, info.st_ino, info.st_mode


def refusal(path: Path) -> str:
    """Why the file in the notebook's place is not read ("" when it is a regular file within the limit)."""
    try:
        info = os.lstat(path)
    except OSError as err:
        return f"{path} cannot be read ({err.strerror})"
    kind = files.kind_of(info.st_mode)
    if kind != "a regular file":
        return f"{path} is {kind}, not a regular file; it is not read"
    if info.st_size > load.MAX_BYTES:
        return f"{path} is over the {load.MAX_BYTES >> 20} MiB limit; it is not read"
    return ""


def _complete(path: Path) -> bool:
    """Whether the file reads as a whole (a notebook mid-save is JSON cut short), read as the grader reads."""
    try:
        data = files.read_regular(path, load.MAX_BYTES)
        if path.suffix.lower() == ".ipynb":
            json.loads(data)
    except (OSError, ValueError, RecursionError):
        return False
    return True


def _verdicts(result: GradeResult) -> dict[str, tuple[str, tuple[str, ...]]]:
    return {e.id: (e.status, e.messages) for e in result.exercises}


def changes(before: GradeResult | None, after: GradeResult) -> str:
    """What a re-check changed, for the terminal: the whole check the first time, then only the exercises whose
    status or messages moved (or that nothing did), with the count that pass."""
    if before is None or before.status != "graded" or after.status != "graded":
        return render_text.result_text(after)
    old, new = _verdicts(before), _verdicts(after)
    passing = sum(1 for status, _ in new.values() if status == "passed")
    lines = [f"re-checked at {time.strftime('%H:%M:%S')}: {passing} of {len(new)} exercises pass the public checks"]
    for exercise, (status, messages) in new.items():
        was = old.get(exercise)
        if was == (status, messages):
            continue
        mark = render_text.MARKS.get(status, status.upper())
        lines.append(f"{mark:<8} {exercise}" + (f" (was {render_text.MARKS.get(was[0], was[0])})" if was and was[0] != status else ""))
        lines += [f"         {m}" for m in messages] if status != "passed" else []
    if len(lines) == 1:
        lines.append("no change")
    return "\n".join(lines)


class Watcher:
    """One notebook watched: `poll` re-checks it when it changed and returns what to print (None: nothing)."""

    def __init__(self, path: Path, lesson_id: str | None, options: Options) -> None:
        self.path, self.lesson_id, self.options = Path(path), lesson_id, options
        self.seen: tuple[int, int, int, int] | None = None
        self.last: GradeResult | None = None

    def poll(self) -> str | None:
        signature = _signature(self.path)
        if signature is None or signature == self.seen:
            return None  # unchanged, or gone for a moment: looked at again on the next poll
        why = refusal(self.path)
        if why:
            self.seen = signature  # said once, until the entry changes again
            return f"skipped: {why}"
        if not _complete(self.path):
            return None  # mid-save
        self.seen = signature
        return self.check()

    def check(self) -> str:
        """Check the notebook now; what changed since the last check."""
        try:
            result = grading.grade(self.path, self.lesson_id, self.options)
        except GraderError as err:
            result = grading.rejected(self.path, str(err), self.lesson_id)
        text = changes(self.last, result)
        self.last = result
        return text

    def close(self) -> None:
        """End the warm template and every kernel, the one of a check under way included."""
        zygote.stop_shared()
        leftovers.end_leftovers(None)


def _in_thread(work: Callable[[], Any]) -> Any:
    """`work()` in a thread of its own, waited for here: Ctrl-C reaches this thread, never nbclient's handler
    (which shuts a kernel down under a check and fails it), and stops the watcher even mid-check."""
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = work()
        except BaseException as err:
            box["error"] = err

    thread = threading.Thread(target=target, name="grader-check", daemon=True)
    thread.start()
    while thread.is_alive():
        thread.join(0.1)
    if "error" in box:
        raise box["error"]
    return box.get("value")


def run(path: Path, lesson_id: str | None, options: Options, say: Callable[[str], None],
        poll_seconds: float = POLL_SECONDS) -> None:
    """Watch until interrupted (Ctrl-C); nothing this started is left running afterwards."""
    why = refusal(Path(path))
    if why:
        raise GraderError(why)
    leftovers.become_subreaper()  # what a kernel leaves behind is reparented here, to be ended with the rest
    options, note = watch_options(options)
    if note:
        say(note)
    watcher = Watcher(path, lesson_id, options)
    try:
        say(f"watching {path} (Ctrl-C to stop)")
        while True:
            text = _in_thread(watcher.poll)
            if text is not None:
                say(text)
            time.sleep(poll_seconds)
    finally:
        watcher.close()
