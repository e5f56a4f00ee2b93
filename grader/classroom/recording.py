"""Recording one student in a batch's folder: their files (executed notebook, reports), then the signed result, then
the gradebook row, in that order; the digests a batch's gradebook keys each submission by; and which course the
folder belongs to (`course.json`: a batch folder is graded by one course, with its key, secret and policy).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

from grader import grading
from grader.base import files
from grader.base.errors import GraderError
from grader.intake import layouts
from grader.lesson import course
from grader.report import finish
from grader.result import gradebook, record


def digest(path: Path) -> str:
    """SHA-256 of the file, as load.read computes it (never through a link; "" for what cannot be read)."""
    try:
        return hashlib.sha256(files.read_regular(path)).hexdigest()
    except OSError:
        return ""


def entry_digest(entry: layouts.Entry) -> str:
    """The gradebook's key for what a student handed in: a digest of its file (or files), or of why none was read."""
    if entry.refused:
        return hashlib.sha256(entry.refused.encode("utf-8", "backslashreplace")).hexdigest()
    if len(entry.paths) == 1:
        return digest(entry.paths[0])
    return hashlib.sha256("".join(digest(p) for p in sorted(entry.paths)).encode()).hexdigest()  # several files

def clash_results(clashes: list[layouts.Entry], lesson_id: str) -> Iterator[tuple[layouts.Entry, finish.Graded]]:
    """A student with more than one file is rejected without guessing which one counts; one whose files could not
    be read safely (a link, a device, a refused zip entry) is rejected with why."""
    for entry in clashes:
        names = ", ".join(layouts.printable(p.name) for p in entry.paths)
        reason = entry.refused or (f"{len(entry.paths)} files for student {entry.student!r} ({names}): keep one "
                                   "and rerun the batch")
        result = grading.rejected(entry.paths[0], reason, lesson=lesson_id, student=entry.student)
        yield entry, finish.Graded(replace(result, submission=names, digest=entry_digest(entry)))


def store(out: Path, book: gradebook.Gradebook, student: str, path: Path, graded: finish.Graded,
           key: Any = None, regrading: str | None = None) -> dict[str, Any]:
    """Write one student's files, then the signed result, then the gradebook row; returns what was recorded."""
    result = graded.result
    if not result.digest:
        result = replace(result, digest=digest(path))
    if not result.graded_at:
        result = replace(result, graded_at=result.environment.get("graded_at"))
    drawn = finish.drawn(result) if not graded.report_html else graded  # a rejection in the parent is drawn here
    graded = replace(graded, result=result, report_html=drawn.report_html, report_md=drawn.report_md)
    if graded.notebook:
        files.write_text(out / "notebooks" / f"{student}.ipynb", graded.notebook)
    files.write_text(out / "reports" / f"{student}.html", graded.report_html)
    files.write_text(out / "reports" / f"{student}.md", graded.report_md)
    data = graded.sealed(key)  # the record edge: JSON from here on
    record.write_json(data, out / "results" / f"{student}.json")
    book.add(data, data["digest"], regrading)
    return data


COURSE_RECORD = "course.json"


def claim(out: Path) -> None:
    """Record which course grades the batch folder `out` (its first batch), or refuse in one line to grade into a
    folder another course graded (its seeds, key and policy are that course's); nothing is written when refused."""
    import json

    here = course.current()
    mine = {"course": here.name or (here.root.name if here.root else ""), "root": str(here.root or "")}
    path = Path(out) / COURSE_RECORD
    try:
        before = json.loads(files.read_regular(path, 1 << 16))
    except FileNotFoundError:
        before = None
    except (OSError, ValueError):
        raise GraderError(f"{path} cannot be read: this folder's course is unknown; grade into another folder") from None
    if isinstance(before, dict) and before.get("course") != mine["course"]:
        raise GraderError(f"{out} was graded by course {before.get('course')!r} ({before.get('root')}); the course in "
                          f"force is {mine['course']!r} ({mine['root']}): grade into another folder, or pass --course "
                          f"{before.get('root')}")
    if before != mine:
        files.write_text(path, json.dumps(mine, indent=1) + "\n")
