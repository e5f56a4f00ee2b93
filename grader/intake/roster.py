"""Load (a class list): who should have submitted.

`--roster FILE` is a plain CSV of student ids (one per line, or a column named
`student`, `student_id`, `id` or `login`), or the gradebook CSV Canvas exports
(`Student`, `ID`, `SIS User ID`, `SIS Login ID`, `Section`, ...), which also
gives names, SIS ids and sections. A submission matches a member by any of
their ids.
"""

from __future__ import annotations

import csv
import io
import re
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from grader.base import files
from grader.base.errors import GraderError
from grader.intake import layouts

MAX_BYTES = 16 * 1024**2
"""A class list is kilobytes; Canvas's export of a large course a few MiB."""
MAX_FIELD = 1024
"""A name, an id or a section is short; a longer field means the file is not a class list."""

CANVAS_COLUMNS = ("Student", "ID", "SIS User ID", "SIS Login ID", "Section")
"""A batch given --roster keeps a copy in its OUTDIR, so exports need not be told again."""
PLAIN_HEADERS = ("student", "student_id", "id", "login", "username")
ASSIGNMENT = re.compile(r".+ \((\d+)\)")
"""A Canvas gradebook column of an assignment: its name, then its id in brackets."""


@dataclass(frozen=True)
class Member:
    """One student of the class."""

    student: str
    """The id submissions are matched on (Canvas: the user id)."""
    name: str = ""
    """Display name (Canvas: "Last, First")."""
    sis_user_id: str = ""
    """Canvas's SIS User ID."""
    sis_login_id: str = ""
    """Canvas's SIS Login ID."""
    section: str = ""
    """Canvas's section."""
    extension_days: float = 0.0
    """Days added to the due date for this student (a column named `extension...`, in either kind of roster)."""
    email: str = ""
    """The full email address a plain roster lists (a column `email`): an LMS user who shares nothing else is matched
    on it, and only on it."""
    hub_user: str = ""
    """The JupyterHub user this student signs in as (a plain roster's column `hub_user`; `grader serve --hub`)."""

    def ids(self) -> set[str]:
        """Every id a submission may carry for this student."""
        return {i for i in (self.student, self.sis_user_id, self.sis_login_id) if i}


@dataclass(frozen=True)
class Roster:
    """The class list."""

    members: tuple[Member, ...]
    """In the file's order."""
    canvas: bool = False
    """Read from a Canvas gradebook export (so it can be exported back)."""
    assignments: tuple[tuple[str, str], ...] = ()
    """A Canvas export's assignment columns, as (column header, assignment id): `Lab 3 (77)` is ("Lab 3 (77)", "77")."""

    def find(self, student: str) -> Member | None:
        """The member a submission's student id belongs to."""
        return next((m for m in self.members if student in m.ids()), None)


def read(path: str | Path) -> Roster:
    """Read a roster file, or raise GraderError with the reason."""
    path = Path(path)
    try:
        raw = files.read_regular(path, MAX_BYTES)
        text = raw.decode("utf-8-sig")
    except (OSError, UnicodeDecodeError) as err:
        raise GraderError(f"cannot read the roster {path}: {getattr(err, 'strerror', None) or err}") from None
    text = unicodedata.normalize("NFC", text)  # ids are compared as `layouts.student_id` gives them
    if len(raw) > MAX_BYTES:
        raise GraderError(f"the roster {path} is over {MAX_BYTES >> 20} MiB: not a class list")
    if "\0" in text or text.lstrip()[:1] in ("{", "["):
        raise GraderError(f"the roster {path} is not a CSV (it looks like JSON or a binary file): pass the class "
                          "list or Canvas's gradebook export")
    try:
        rows = [row for row in csv.reader(io.StringIO(text)) if any(cell.strip() for cell in row)]
    except csv.Error as err:
        raise GraderError(f"the roster {path} is not a CSV this tool can read ({err})") from None
    if not rows:
        raise GraderError(f"the roster {path} names no students")
    for number, row in enumerate(rows, 1):
        if any(len(cell) > MAX_FIELD for cell in row):
            raise GraderError(f"the roster {path}: row {number} has a field over {MAX_FIELD} characters; "
                              "not a class list")
    header = [cell.strip() for cell in rows[0]]
    if all(column in header for column in CANVAS_COLUMNS[:2]):
        at = {column: header.index(column) for column in CANVAS_COLUMNS if column in header}
        members = []
        for row in rows[1:]:
            cell = lambda column, row=row: row[at[column]].strip() if column in at and at[column] < len(row) else ""  # noqa: E731
            if "Points Possible" in cell("Student") or not cell("ID") or cell("Student") == "Student, Test":
                continue  # Canvas's points row and its test student are not students
            members.append(Member(_id(cell("ID"), path), cell("Student"), cell("SIS User ID"), cell("SIS Login ID"),
                                  cell("Section"), _extension(row, header, path)))
        assignments = tuple((column, match[1]) for column in header[len(CANVAS_COLUMNS):]
                            if (match := ASSIGNMENT.fullmatch(column)))
        return Roster(tuple(members), canvas=True, assignments=assignments)
    lowered = [cell.lower() for cell in header]
    column = next((lowered.index(h) for h in PLAIN_HEADERS if h in lowered), None)
    body = rows[1:] if column is not None else rows
    column = column or 0
    mail = lowered.index("email") if "email" in lowered and body is not rows else None
    hub = lowered.index("hub_user") if "hub_user" in lowered and body is not rows else None
    listed = tuple(Member(_id(row[column], path), extension_days=_extension(row, header, path) if body is not rows else 0.0,
                          email=row[mail].strip() if mail is not None and mail < len(row) else "",
                          hub_user=row[hub].strip() if hub is not None and hub < len(row) else "")
                   for row in body if len(row) > column and row[column].strip())
    if not listed:
        raise GraderError(f"the roster {path} names no students")
    return Roster(listed)


def _id(raw: str, path: Path) -> str:
    """A roster's student id, checked as every id from outside is (it names the student's files)."""
    return layouts.checked_id(raw, f"the roster {path}: student id")


def who(names: dict[str, str], student: Any) -> str:
    """A student as people know them: `Name (id)` where the roster or the platform gives a name, else the id."""
    return f"{names[student]} ({student})" if names.get(student) else str(student)


def _extension(row: list[str], header: list[str], path: Path) -> float:
    """The row's extension in days (a column whose header begins `extension`), 0 where there is none."""
    at = next((i for i, name in enumerate(header) if name.strip().lower().startswith("extension")), None)
    text = row[at].strip() if at is not None and at < len(row) else ""
    if not text:
        return 0.0
    try:
        days = float(text)
    except ValueError:
        days = -1.0
    if not 0 <= days <= 366:
        raise GraderError(f"the roster {path}: extension {text[:40]!r} for {row[0][:40]!r} is not a number of days "
                          "from 0 to 366")
    return days
