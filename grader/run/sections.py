"""The probe's protocol within one cell: sections run in turn, each announced on stdout and in a journal.

A probe cell that answers several exercises in one round trip is `Sectioned`:
it prints `<marker>begin:<key>` before each section and
`<marker>answer:<key>:<payload>` after it. When its kernel dies or hangs,
`stopped_section` names the section that was running (by the journal, which
outlives the kernel, else by stdout), so that only that section is left out of
the next attempt.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from dataclasses import dataclass

SECTION_BEGIN, SECTION_ANSWER = "begin:", "answer:"
"""After the marker: `begin:<key>` opens a section, `answer:<key>:<payload>` closes it."""

JOURNAL = "probe-journal"
"""A file in the kernel's run dir where a sectioned cell also notes `begin:<key>` and `answer:<key>` with a plain
write(2). Its stdout is sent later by the kernel's IOPub thread, and a kernel that dies (os._exit, a crash) loses
what was not yet sent; a write is on file when it returns, so the journal still names the section that was running."""
JOURNAL_BYTES = 64 * 1024
"""The journal's tail that is read; only the student's own code could make it longer."""


@dataclass(frozen=True)
class Sectioned:
    """One tail cell that runs several sections in turn (one round trip for all of them).

    The cell prints `<marker>begin:<key>` before each section and
    `<marker>answer:<key>:<payload>` after it, notes both in a journal file
    (see JOURNAL), and bounds each section's time itself. If the kernel dies
    or hangs in a section, that section is left out of the next attempt, as a
    cell of its own would be.
    """

    sections: tuple[str, ...]
    """Section keys, in the order the cell runs them."""
    build: Callable[[tuple[str, ...], str], str]
    """The cell's source for these sections, given the journal's path (empty: no journal)."""
    marker: str
    """The per-run nonce that starts every marker line."""
    seconds_each: float
    """Each section's time limit (the cell's own limit is their sum)."""

    def progress(self, text: str) -> tuple[list[str], set[str]]:
        """(sections begun, in order; sections answered) in the cell's output so far."""
        begun, answered = [], set()
        begin, answer = self.marker + SECTION_BEGIN, self.marker + SECTION_ANSWER
        for line in text.splitlines():
            if line.startswith(begin):
                begun.append(line[len(begin):])
            elif line.startswith(answer):
                answered.add(line[len(answer):].split(":", 1)[0])
        return begun, answered


def read_journal(path: str) -> str:
    """The tail of a sectioned cell's journal; empty if it is missing or not a regular file (the kernel could
    have put a FIFO or a link in its place)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return ""
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return ""
        return os.pread(fd, JOURNAL_BYTES, max(0, info.st_size - JOURNAL_BYTES)).decode("utf-8", "replace")
    except OSError:
        return ""
    finally:
        os.close(fd)


def stopped_section(source: Sectioned, keep: tuple[str, ...], text: str, journal: str) -> str:
    """The section a sectioned cell was in when its kernel stopped: the last one begun and not finished, by its
    journal, else by its stdout, else the first not finished."""
    noted_begun, noted_done = source.progress(journal)
    begun, answered = source.progress(text)
    done = noted_done | answered
    for started in (noted_begun, begun):
        running = next((s for s in reversed(started) if s not in done and s in keep), None)
        if running:
            return running
    return next((s for s in keep if s not in done), keep[0])
