"""Things worth saying once per command, on stderr, beside whatever the command prints (a fallback in force, a
setting that will change): never on standard output, which `--json -` keeps for one JSON document."""

from __future__ import annotations

import sys

from grader.base import escape

_said: set[str] = set()


def once(text: str) -> None:
    """Say `text` on stderr as a note, the first time only."""
    if text in _said:
        return
    _said.add(text)
    sys.stderr.write(f"grader: note: {escape.terminal(text)}\n")
    sys.stderr.flush()
