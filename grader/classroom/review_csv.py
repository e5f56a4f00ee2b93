"""The review through a spreadsheet: `grader review OUT --export FILE` writes one row per student and written question
(`student,question,points,max_points,rubric,comment,grader`), and `--import FILE` takes it back: every row is checked
first (one bad row is refused in one line naming it, and nothing changes), and what the export neutralised for a
spreadsheet (a cell that starts like a formula) comes back as it was written.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Any

from grader.base import escape, files, spelling
from grader.base.errors import GraderError
from grader.classroom.review import Review
from grader.result import joining

CSV_COLUMNS = ("student", "question", "points", "max_points", "rubric", "comment", "grader")
MAX_CSV_BYTES = 32 * 1024**2


def export_csv(self: Review, path: Path) -> int:
    """One row per student and written question (`student,question,points,max_points,rubric,comment,grader`)."""
    rows: list[list[Any]] = [list(CSV_COLUMNS)]
    item_points = self.store.item_points(self.lesson.id)
    for question in self.lesson.written:
        for student, answer in sorted(self.answers[question.cell].items()):
            d = answer.decision
            rows.append([student, question.cell,
                         "" if d is None else joining.written_points(self.lesson, d, item_points), question.points,
                         ";".join(d.items) if d else "", d.comment if d else "", d.grader if d else ""])
    files.write_text(path, escape.csv_text(rows))
    return len(rows) - 1

def import_csv(self: Review, path: Path) -> int:
    """Decisions from a filled export (points from the rubric items where given, else the points column).
    Every row is checked first: one bad row is refused in one line naming it, and nothing changes."""
    parsed = _rows(path)
    planned = []
    for number, row in parsed:
        planned.append(_planned(self, number, row))
    for cell, student, items, points, comment, grader in planned:
        self.decide(cell, [student], items, comment, points, grader)
    return len(planned)

def _planned(self: Review, number: int, row: dict[str, str]) -> tuple[str, str, list[str], float | None, str, str]:
    where = f"row {number}"
    cell, student = row["question"].strip(), row["student"].strip()
    question = next((q for q in self.lesson.written if q.cell == cell), None)
    if question is None:
        raise GraderError(f"{where}: no written question {cell[:60]!r} in lesson {self.lesson.id}")
    if student not in self.answers[cell]:
        raise GraderError(f"{where}: no graded result for student {student[:60]!r}")
    items = [i.strip() for i in row["rubric"].split(";") if i.strip()]
    bad = [i for i in items if question.item(i) is None]
    if bad:
        raise GraderError(f"{where}: question {cell!r} has no rubric item {bad[0][:60]!r}")
    points = None
    if not items and row["points"].strip():
        try:
            points = float(row["points"])
        except ValueError:
            raise GraderError(f"{where}: points {row['points'][:40]!r} is not a number") from None
        if not 0 <= points <= question.points:
            raise GraderError(f"{where}: {spelling.score(points)} points is outside question {cell!r}'s range 0 to "
                              f"{spelling.score(question.points)}")
    if not items and points is None:
        raise GraderError(f"{where}: neither rubric items nor points for {student[:60]!r} on {cell!r}")
    return cell, student, items, points, row["comment"], row["grader"].strip() or self.grader


def _rows(path: Path) -> list[tuple[int, dict[str, str]]]:
    """The import's rows (numbered as a spreadsheet numbers them), or one line saying why the file is not one."""
    try:
        text = files.read_regular(path, MAX_CSV_BYTES).decode("utf-8-sig")
    except (OSError, UnicodeDecodeError) as err:
        raise GraderError(f"{path}: cannot be read as a UTF-8 CSV ({type(err).__name__})") from None
    if len(text) > MAX_CSV_BYTES:
        raise GraderError(f"{path}: over {MAX_CSV_BYTES >> 20} MiB; not a review export")
    reader = csv.DictReader(io.StringIO(text))
    missing = [c for c in CSV_COLUMNS if c not in (reader.fieldnames or [])]
    if missing:
        raise GraderError(f"{path}: no column {missing[0]!r} (columns: {','.join(CSV_COLUMNS)})")
    rows = []
    for number, row in enumerate(reader, start=2):
        rows.append((number, {k: escape.csv_uncell(str(row.get(k) or "")) for k in CSV_COLUMNS}))
    return rows
