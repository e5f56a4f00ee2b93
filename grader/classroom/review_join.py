"""The instructor's decisions joined into a batch's written grades: each student's result re-scored, its report
redrawn, re-signed and recorded; then the class's grades.csv and dashboard.

A batch joins them as it records each grade (so a rerun or a regrade keeps the
manual part); the review page and `--import` join one student's files the
moment a decision is saved.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from grader.base import files, spelling
from grader.base.errors import GraderError
from grader.classroom.batch_folder import BatchFolder
from grader.intake import roster as class_list
from grader.lesson import course
from grader.lesson.catalog import Lesson
from grader.report import finish, render
from grader.result import gradebook, joining, sign
from grader.result.manual import Decisions
from grader.result.record import GradeResult


def members_of(out: BatchFolder) -> class_list.Roster | None:
    """The roster the batch kept beside its gradebook (extensions are read from it), if it was given one."""
    return class_list.read(out.roster) if out.roster.is_file() else None


def decisions(store: Any, lesson: Lesson, student: str, members: class_list.Roster | None) -> Decisions:
    """One student's decisions (none without a review store), with the roster's extension for them."""
    member = members.find(student) if members else None
    extension = member.extension_days if member else 0.0
    if store is None:
        return Decisions(extension_days=extension)
    return store.decisions(lesson, student, extension)


def graded(done: finish.Graded, lesson: Lesson, decided: Decisions) -> finish.Graded:
    """A graded submission with the instructor's part and the course's policy for the lesson (its due date, what
    lateness costs) joined; its reports redrawn only when the grade changed."""
    joined = joining.joined(done.result, lesson, decided, course.current().policy(lesson.id))
    if joined == done.result:
        return done
    drawn = finish.drawn(dataclasses.replace(joined, notebook=None))
    return dataclasses.replace(done, result=drawn.result, report_html=drawn.report_html, report_md=drawn.report_md)


def student(out: BatchFolder, lesson: Lesson, who: str, store: Any, members: class_list.Roster | None,
            book: gradebook.Gradebook) -> GradeResult:
    """Join one student's recorded grade with the decisions now in `store` and the course's policy now: report,
    result and gradebook row; returns the result as recorded now."""
    before, after = _rejoined(out, lesson, who, store, members, book)
    return after if after is not None else before


def _rejoined(out: BatchFolder, lesson: Lesson, who: str, store: Any, members: class_list.Roster | None,
              book: gradebook.Gradebook, only_if_moved: bool = False) -> tuple[GradeResult, GradeResult | None]:
    """(the recorded result, what was recorded now: None when `only_if_moved` and the join moves nothing)."""
    result, data = out.recorded(who, lesson.id)
    joined = graded(finish.Graded(result, notebook=None), lesson, decisions(store, lesson, who, members))
    if only_if_moved and joined.result == result:
        return result, None
    on_disk = {"notebook"}  # read back only to be signed over, as are the reports when the grade did not change
    if not joined.report_html:
        on_disk.add("reports")
        joined = dataclasses.replace(joined, report_html=out.read_text(out.report(who, "html")),
                                     report_md=out.read_text(out.report(who, "md")))
    joined = dataclasses.replace(joined, notebook=out.read_text(out.notebook(who)) or None)
    return result, out.record(book, who, joined, sign.signing_key(), replacing=str(data.get("digest") or ""),
                              on_disk=frozenset(on_disk), lesson=lesson).result


def moved(out: BatchFolder, lesson: Lesson, students: list[str], store: Any, members: class_list.Roster | None,
          book: gradebook.Gradebook) -> list[str]:
    """Recorded grades that a changed late policy, due date, roster extension or decision now moves, joined again
    without running anything (the autograded part stands) and rewritten, re-signed; one line for each that moved
    ("ada: 3 -> 2.7"). A result that cannot be read back is said, never a stop."""
    lines = []
    for who in students:
        try:
            before, after = _rejoined(out, lesson, who, store, members, book, only_if_moved=True)
        except (GraderError, OSError, ValueError) as err:
            lines.append(f"{who}: not joined again ({str(err)[:120]})")
            continue
        if after is not None:
            lines.append(f"{who}: {spelling.score(before.score)} -> {spelling.score(after.score)}")
    return lines


def absent(members: class_list.Roster | None, latest: list[dict[str, Any]], lesson_id: str) -> list[dict[str, Any]]:
    """Rows for the roster's students with no submission at all."""
    present = {row["student"] for row in latest}
    return [{"student": m.student, "name": m.name, "status": "missing", "lesson": lesson_id}
            for m in (members.members if members else ()) if not (m.ids() & present)]


def class_files(out: BatchFolder, lesson: Lesson, book: gradebook.Gradebook, members: class_list.Roster | None,
                moved: Any = None, agreement: Any = None) -> list[dict[str, Any]]:
    """The class's files, one recipe for every way a class is graded (a batch, the service, a review): a
    regrade's changes.csv (`moved`, with the roster's names), similarity.html, grades.csv and the dashboard, from
    the gradebook's rows as they are now; returns the roster's absent students."""
    from grader.classroom import similarity
    from grader.result import regrade

    latest = book.latest(lesson.id)
    missing = absent(members, latest, lesson.id)
    names = {row["student"]: row["name"] for row in [*latest, *missing] if row.get("name")}
    if moved is not None:
        regrade.write_csv(moved, out.changes_csv, names)
    similar = similarity.write(out, lesson, names=names)
    gradebook.write_csv(latest, [ex.id for ex in lesson.exercises], out.grades_csv, missing,
                        tuple(q.cell for q in lesson.written))
    files.write_text(out.dashboard, render.dashboard_html(latest, lesson, missing, moved, similar, agreement))
    return missing
