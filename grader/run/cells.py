"""What a cell did, in the student's words: its outcome, its name, its error cut to size.

Shared by the attempt that runs the cells and by the judge that reports them.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

TRACEBACK_CHARS = 4000
ERROR_CHARS = 2000
TRUNCATED = "\n[grader: output truncated]\n"


@dataclass(frozen=True)
class CellRun:
    """How one student cell ran in the final attempt."""

    index: int
    """Position in the notebook."""
    cell_id: str
    """The cell's id."""
    status: str
    """`ok`, `error`, `timeout`, `dropped` (killed the kernel), `not-run` or `empty`."""
    ename: str = ""
    """Exception class name, for `error`."""
    evalue: str = ""
    """Exception message, for `error`."""
    traceback: str = ""
    """Plain-text traceback, truncated."""
    seconds: float = 0.0
    """Wall time of the cell."""


def cell_name(notebook: Any, index: int) -> str:
    """A cell as the student sees it: the cell that starts with its first line of code."""
    try:
        lines = [line.strip() for line in notebook.cells[index].source.splitlines()]
    except (AttributeError, IndexError, TypeError):
        return f"cell {index + 1}"
    first = next((line for line in lines if line and not line.startswith("#")), "")
    if not first:
        return f"cell {index + 1}"
    return f'the cell starting "{first[:60]}{"..." if len(first) > 60 else ""}"'


_KERNEL_FILE = re.compile(r"(?:/tmp/ipykernel_\d+/)?\b\d{5,}\.py\b")


def readable(text: str) -> str:
    """ipykernel's internal file names (`/tmp/ipykernel_7/2912668609.py`) as what the student sees: the cell."""
    return _KERNEL_FILE.sub("this cell", text)


def short_error(content: dict[str, Any]) -> dict[str, Any]:
    """An error output cut to the size of a traceback the report shows (a student's message can be megabytes)."""
    lines = [str(line)[:TRACEBACK_CHARS] for line in (content.get("traceback") or [])[-40:]]
    return dict(content, ename=str(content.get("ename", ""))[:200], evalue=str(content.get("evalue", ""))[:ERROR_CHARS],
                traceback=lines)


def whole_seconds(seconds: float) -> int:
    """nbclient takes whole seconds, and reads 0 as no limit: round a limit up, never down to 0."""
    return max(1, math.ceil(seconds))


def plain_traceback(lines: list[str]) -> str:
    text = "\n".join(re.sub(r"\x1b\[[0-9;]*m", "", str(line)[:TRACEBACK_CHARS]) for line in lines[-40:])
    return text if len(text) <= TRACEBACK_CHARS else text[: TRACEBACK_CHARS // 2] + "\n...\n" + text[-TRACEBACK_CHARS // 2:]


def stdout(cell: Any) -> str:
    return "".join(o.get("text", "") for o in cell.get("outputs", []) if o.get("output_type") == "stream"
                   and o.get("name") == "stdout")


@dataclass(frozen=True)
class ProbeOutcome:
    """What one tail cell (or one section of it) came to: how it ended, what it printed, the error it raised, and
    why it ended as it did. `status`: ok, timeout, died or skipped."""

    status: str
    stdout: str = ""
    error: str = ""
    detail: str = ""


SKIPPED = ProbeOutcome("skipped")
"""The outcome of a probe that never ran."""


def left_out(status: str) -> ProbeOutcome:
    """The outcome of a tail cell or section left out of this attempt because it hung or killed the last kernel."""
    return ProbeOutcome(status, detail="left out after it " + ("hung" if status == "timeout" else "killed the kernel"))
