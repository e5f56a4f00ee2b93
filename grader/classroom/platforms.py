"""Export: hand grades and feedback back to the platform a course already uses.

- `canvas`: the gradebook CSV Canvas imports (`Student`, `ID`, `SIS User ID`,
  `SIS Login ID`, `Section`, then `<assignment> (<id>)`, after a
  `Points Possible` row), from a Canvas roster; and one feedback file per
  student, named as Canvas names a bulk download (`<name>_<user id>_<submission
  id>_<file>`), for its bulk upload of submission comments.
- `prairielearn`: one external-grader `results.json` per submission
  (`gradable`, `score` in 0..1, `message`, `tests[]` with `points`, `max_points`).
- `gradescope`: the results format of Gradescope's autograder (`score`,
  `execution_time`, `output`, `tests[]`), and a bundle (`setup.sh`,
  `run_autograder`, the grader, the lesson and its solutions) that writes it
  inside Gradescope's container layout.

Each exercise becomes a test of its public cases (visible at once) and, where
it has hidden cases, a test of those (after the due date); the two tests'
scores sum to the exercise's (`_platform_tests`), on Gradescope and PrairieLearn alike.
"""

from __future__ import annotations

import csv
import io
import json
import re
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from grader.base import escape, files, spelling
from grader.base.errors import GraderError
from grader.classroom import gradescope
from grader.classroom.batch_folder import BatchFolder
from grader.intake import layouts, roster as class_list
from grader.lesson import catalog
from grader.report import render_text
from grader.report.platform_results import prairielearn_results
from grader.result.record import GradeResult

# ---- exports over a batch's gradebook ----

def batch_lesson(batch_dir: Path) -> str:
    """The one lesson a batch's gradebook holds results of (else one line saying to pass --lesson)."""
    return _latest(BatchFolder(Path(batch_dir)), None)[1]


def _latest(folder: BatchFolder, lesson_id: str | None) -> tuple[list[GradeResult], str]:
    if not folder.is_batch():
        raise GraderError(f"{folder.root} holds no gradebook: run `grader batch ... --out {folder.root}` first")
    book = folder.open_gradebook()
    try:
        rows = list(book.results(lesson_id))
    finally:
        book.close()
    ids = sorted({r.lesson or "" for r in rows} - {""})
    if not rows or (lesson_id is None and len(ids) != 1):
        raise GraderError(f"{folder.root}: {'no results' if not rows else 'results of several lessons: pass --lesson'}")
    latest: dict[str, GradeResult] = {}
    for result in rows:
        latest[result.student] = result
    return [latest[s] for s in sorted(latest)], lesson_id or ids[0]


@dataclass(frozen=True)
class Asked:
    """What the export command was asked beyond the format and the folder (each export reads what it needs)."""

    lesson_id: str | None = None
    roster: Path | None = None
    assignment: str = ""
    assignment_id: str = ""


@dataclass(frozen=True)
class Export:
    """One platform a batch's grades go back to: its name, the options it reads, how it writes, what it wrote.

    A new platform is one of these in EXPORTS (the command lists them, and refuses any other in one line)."""

    name: str
    options: tuple[str, ...]
    """The command's options it reads, beyond --to and --lesson."""
    write: Callable[[BatchFolder, Path, Asked], Path]
    describe: Callable[[Path], str]


def _write_prairielearn(folder: BatchFolder, target: Path, asked: Asked) -> Path:
    results, _ = _latest(folder, asked.lesson_id)
    for result in results:
        if result.submitted_as is not None and result.submitted_as.on_roster is False:
            continue  # not of the class the roster lists (a platform's test student, say)
        files.write_text(target / result.student / "results.json", json.dumps(prairielearn_results(result), indent=2))
    return target


def _write_canvas(folder: BatchFolder, target: Path, asked: Asked) -> Path:
    results, lesson_id = _latest(folder, asked.lesson_id)
    roster = asked.roster if asked.roster is not None or not folder.roster.is_file() else folder.roster
    return _canvas(results, lesson_id, target, roster, asked.assignment, asked.assignment_id)


def _write_gradescope(folder: BatchFolder, target: Path, asked: Asked) -> Path:
    return gradescope.bundle(asked.lesson_id or batch_lesson(folder.root), target)


def _describe_canvas(target: Path) -> str:
    rows = list(csv.reader(io.StringIO((target / "gradebook.csv").read_text(encoding="utf-8"))))
    scored = sum(1 for row in rows[2:] if row[-1].strip())
    unscored = [f"{row[0]} ({row[1]})" if row[0] else row[1] for row in rows[2:] if not row[-1].strip()]
    with zipfile.ZipFile(target / "comments.zip") as bundle:
        comments = len(bundle.namelist())
    return (f"{target / 'gradebook.csv'}: column {rows[0][-1]!r}, {scored} of {len(rows) - 2} students scored "
            "(Canvas: Grades > Import)"
            + (f"; left blank (no graded submission): {', '.join(unscored[:20])}" if unscored else "")
            + (f" and {len(unscored) - 20} more" if len(unscored) > 20 else "")
            + f"\n{target / 'comments.zip'}: {comments} feedback files named as Canvas's "
            "bulk download names them (Canvas: the assignment's bulk upload of submission comments)")


def _describe_prairielearn(target: Path) -> str:
    written = sorted(target.glob("*/results.json"))
    return f"{target}: {len(written)} results.json, one folder per student (PrairieLearn's external-grader results)"


def _describe_gradescope(target: Path) -> str:
    return (f"{target / 'autograder.zip'}: Gradescope's autograder bundle (setup.sh, run_autograder, the grader, "
            "the lesson and its solutions): upload it in the assignment's Configure Autograder page")


EXPORTS = {export.name: export for export in (
    Export("canvas", ("roster", "assignment", "assignment_id"), _write_canvas, _describe_canvas),
    Export("prairielearn", (), _write_prairielearn, _describe_prairielearn),
    Export("gradescope", (), _write_gradescope, _describe_gradescope),
)}


def exporter(fmt: str) -> Export:
    """The export of this name, or one line naming those there are."""
    if fmt not in EXPORTS:
        raise GraderError(f"unknown export format {fmt!r} (known: {', '.join(EXPORTS)})")
    return EXPORTS[fmt]


def export(fmt: str, batch_dir: str | Path, out: str | Path | None = None, lesson_id: str | None = None,
           roster: str | Path | None = None, assignment: str = "", assignment_id: str = "") -> Path:
    """Write `fmt`'s files for the batch in `batch_dir` (default: its export folder); returns the folder written."""
    folder, chosen = BatchFolder(Path(batch_dir)), exporter(fmt)
    asked = Asked(lesson_id, Path(roster) if roster else None, assignment, assignment_id)
    ignored = [f"--{name.replace('_', '-')}" for name in ("roster", "assignment", "assignment_id")
               if getattr(asked, name) and name not in chosen.options]
    if ignored:
        raise GraderError(f"the {fmt} export reads no {' or '.join(ignored)} (it reads: "
                          f"{', '.join('--' + o.replace('_', '-') for o in chosen.options) or 'only --to and --lesson'})")
    return chosen.write(folder, Path(out) if out else folder.export(fmt), asked)


def describe(fmt: str, target: Path) -> str:
    """What an export wrote, read back from the files themselves, and where each goes."""
    return exporter(fmt).describe(target)


def _canvas(results: list[GradeResult], lesson_id: str, target: Path, roster: str | Path | None,
            assignment: str, assignment_id: str) -> Path:
    if roster is None:
        raise GraderError("the canvas export needs --roster: the gradebook CSV exported from Canvas (it holds the ids)")
    members = class_list.read(roster)
    if not members.canvas:
        raise GraderError(f"{roster} is not a Canvas gradebook export (no Student and ID columns)")
    lesson = catalog.get(lesson_id)
    column = _canvas_column(members, roster, assignment, assignment_id, lesson.title)
    by_id: dict[str, GradeResult] = {}
    for result in results:
        member = members.find(result.student)
        if member:
            by_id[member.student] = result
    rows = [["Student", "ID", "SIS User ID", "SIS Login ID", "Section", column],
            ["    Points Possible", "", "", "", "", spelling.score(lesson.max_score)]]
    for m in members.members:
        found = by_id.get(m.student)
        score = spelling.score(found.score) if found and found.status == "graded" else ""
        rows.append([m.name, m.student, m.sis_user_id, m.sis_login_id, m.section, score])
    files.write_text(target / "gradebook.csv", escape.csv_text(rows))
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as bundle:
        for result in results:
            bundle.writestr(zipfile.ZipInfo(_comment_name(result), date_time=(2026, 1, 1, 0, 0, 0)),
                            render_text.result_text(result) + "\n")
    files.write_bytes(target / "comments.zip", buffer.getvalue())
    return target


def _canvas_column(members: class_list.Roster, roster: str | Path, assignment: str, assignment_id: str,
                   title: str) -> str:
    """The gradebook column to fill: the roster's own column of the assignment, found by id, by name, or as the
    only assignment the roster holds; a roster without assignment columns gets a new one for --assignment-id."""
    known = members.assignments
    if assignment_id and not assignment_id.isdigit():
        raise GraderError(f"--assignment-id {assignment_id!r} is not a number: pass the number in the assignment's "
                          "Canvas URL")
    chosen = [c for c in known if c[1] == assignment_id] if assignment_id else \
        [c for c in known if c[0].startswith(assignment + " (")] if assignment else list(known)
    if len(chosen) == 1:
        return chosen[0][0]
    if assignment_id and (assignment or not known):
        return f"{assignment or title} ({assignment_id})"  # a new column Canvas creates on import
    listed = "; ".join(c[0] for c in known) or "none"
    if not chosen and (assignment_id or assignment):
        raise GraderError(f"{roster} has no assignment {assignment_id or assignment!r} (its assignments: {listed}); "
                          "pass both --assignment and --assignment-id to add a new column")
    if not known:
        raise GraderError(f"{roster} holds no assignment column: pass --assignment-id, the number in the "
                          "assignment's Canvas URL")
    raise GraderError(f"{roster} holds {len(known)} assignments ({listed}): pick one with --assignment-id")


def _comment_name(result: GradeResult) -> str:
    """Canvas matches bulk-uploaded comment files by the bulk download's name: keep its ids."""
    arrived = result.submitted_as
    original = arrived.files[0] if arrived and arrived.files else ""
    match = layouts.CANVAS.match(original)
    if match:
        return f"{match['name']}{match['late'] or ''}_{match['user']}_{match['submission']}_feedback.txt"
    return f"{re.sub(r'[^A-Za-z0-9._-]', '_', result.student)}_feedback.txt"
