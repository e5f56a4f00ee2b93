"""Step 7, export: hand grades and feedback back to the platform a course already uses.

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
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from grader.base import escape, files, spelling
from grader.base.errors import GraderError
from grader.base.shapes import mapping
from grader.classroom.batch_folder import BatchFolder
from grader.intake import layouts, roster as class_list
from grader.lesson import lessons
from grader.report import render_text

FORMATS = layouts.EXPORTS


# ---- per-result conversions (plain data in, plain data out) ----

@dataclass(frozen=True)
class PlatformTest:
    """One test a grading platform shows: an exercise's public checks, or its hidden cases."""

    name: str
    score: float
    max_score: float
    passed: bool
    hidden: bool
    output: str


def _platform_tests(exercise: dict[str, Any]) -> list[PlatformTest]:
    """An exercise as a platform's tests: its public checks (visible at once) and, where it has any, its hidden
    cases (after the due date), their scores summing to the exercise's.

    All or nothing: the points sit on the hidden test (on the public one where there are no hidden cases) and are
    earned only when every case passes. Scored by cases: each test carries the points times its share of the
    counted cases, and earns the points times its passed cases over all counted cases; excused cases count in
    neither.
    """
    cases = exercise.get("cases") or []
    public = [c for c in cases if not c.get("hidden")]
    hidden = [c for c in cases if c.get("hidden")]
    blocked = not cases and exercise.get("status") != "passed"
    shared = list(exercise.get("messages") or []) if blocked else []
    public_bad = shared or [c["message"] for c in public if c.get("outcome") not in ("passed", "excused")]
    hidden_bad = shared or [c["message"] for c in hidden if c.get("outcome") not in ("passed", "excused")]
    has_hidden = bool(hidden) or int(exercise.get("hidden_cases") or 0) > 0
    kind, points, score = exercise.get("kind", "simulated"), float(exercise["max_score"]), float(exercise["score"])
    if exercise.get("scoring") == "cases" and not blocked:
        counted = [c for c in cases if c.get("outcome") != "excused"]
        public_counted = [c for c in public if c.get("outcome") != "excused"]
        public_max = points * len(public_counted) / len(counted) if counted and has_hidden else points
        public_score = (points * sum(c.get("outcome") == "passed" for c in public_counted) / len(counted)
                        if counted and has_hidden else score)
        shares = ((public_score, public_max), (score - public_score, points - public_max))
    elif has_hidden:
        shares = ((0.0, 0.0), (score, points))
    else:
        shares = ((score, points), (0.0, 0.0))
    tests = [PlatformTest(f"{exercise['id']}: public checks ({kind})", shares[0][0], shares[0][1], not public_bad,
                          False, "\n".join(public_bad) or "every public case passed")]
    if has_hidden:
        hidden_ok = not hidden_bad and exercise.get("status") == "passed"
        if exercise.get("scoring") != "cases" and not hidden_bad and not hidden_ok:
            hidden_bad = ["the public checks must pass first"]
        tests.append(PlatformTest(f"{exercise['id']}: hidden cases ({kind})", shares[1][0], shares[1][1],
                                  not hidden_bad, True, "\n".join(hidden_bad) or "every hidden case passed"))
    return tests


def gradescope_results(data: dict[str, Any], seconds: float = 0.0) -> dict[str, Any]:
    """A result in Gradescope's autograder results format."""
    if data.get("status") != "graded":
        why = layouts.printable(str(data.get("error")))  # one line: a name cannot forge PASS lines or markup
        return {"score": 0.0, "execution_time": round(seconds), "output": f"Not graded: {why}",
                "output_format": "text", "visibility": "visible", "stdout_visibility": "hidden", "tests": []}
    tests, public = [], []
    for exercise in data["exercises"]:
        for test in _platform_tests(exercise):
            tests.append({"name": test.name, "score": test.score, "max_score": test.max_score,
                          "status": "passed" if test.passed else "failed",
                          "visibility": "after_due_date" if test.hidden else "visible", "output": test.output})
            if not test.hidden:
                lines = "".join(f"\n    {m}" for m in test.output.splitlines()) if not test.passed else ""
                public.append(f"{'PASS' if test.passed else 'FAIL'} {exercise['id']}{lines}")
    # Visible now: the public checks only. The score and the hidden tests wait for the due date.
    return {"score": float(data.get("score") or 0.0), "execution_time": round(seconds),
            "output": "Public checks (everything else is graded and shown after the due date):\n" + "\n".join(public)
                      + isolation_text(data.get("sandbox") or {}),
            "output_format": "text", "test_output_format": "text",
            "visibility": "after_due_date", "stdout_visibility": "hidden", "tests": tests,
            "extra_data": {"student": data.get("student"), "seed": data.get("seed"), "seed_from": data.get("seed_from"),
                           "release": data.get("release")}}


def isolation_text(box: dict[str, Any]) -> str:
    """What held around the kernel, for the instructor: the mode, whom it ran as, and each layer that did not."""
    if not box:
        return ""
    text = f"\n\nIsolation: sandbox {box.get('mode')}, the kernel ran as {box.get('kernel_as')}"
    if box.get("kernel_as") == "root":
        text += " (without isolation: GRADER_ALLOW_ROOT_KERNEL=1 allowed it)"
    reasons = box.get("reasons") or {}
    for layer in box.get("missing") or []:
        text += f"\n  not held: {layer}: {reasons.get(layer) or box.get('missing_reason') or ''}"
    return text


def prairielearn_results(data: dict[str, Any]) -> dict[str, Any]:
    """A result in PrairieLearn's external-grader format: the same per-test points as Gradescope's."""
    if data.get("status") != "graded":
        return {"gradable": False, "score": 0.0, "message": f"Not graded: {data.get('error')}", "tests": []}
    tests = [{"name": test.name, "points": test.score, "max_points": test.max_score,
              "message": test.output[:2000], "output": "passed" if test.passed else "failed"}
             for exercise in data["exercises"] for test in _platform_tests(exercise)]
    tests += _instructors_tests(data)
    total = float(data.get("max_score") or 0)
    return {"gradable": True, "score": float(data.get("score") or 0) / total if total else 0.0,
            "message": f"{spelling.score(data.get('score', 0))} / {spelling.score(total)}", "tests": tests}


def _instructors_tests(data: dict[str, Any]) -> list[dict[str, Any]]:
    """The instructor's part as tests of their own, so that the tests add up to the score and its maximum: each
    written question (its points, or 0 of them until graded), each override (what it moved), the late penalty."""
    part = mapping(data, "manual")
    tests = []
    for w in part.get("written") or []:
        if isinstance(w, dict):
            graded = w.get("points") is not None
            tests.append({"name": f"written: {w.get('question')}", "points": float(w.get("points") or 0.0),
                          "max_points": float(w.get("max_points") or 0.0),
                          "message": "graded by rubric" if graded else "not graded yet",
                          "output": "graded" if graded else "not graded yet"})
    for o in part.get("overrides") or []:
        if isinstance(o, dict):
            moved = float(o.get("score") or 0.0) - float(o.get("autograded") or 0.0)
            tests.append({"name": f"override: {o.get('exercise')}", "points": moved, "max_points": 0.0,
                          "message": str(o.get("reason") or "")[:2000], "output": "overridden"})
    late = mapping(part, "late")
    if late.get("points"):
        tests.append({"name": "late penalty", "points": -float(late["points"]), "max_points": 0.0,
                      "message": f"{late.get('days')} day(s) late: -{late.get('percent')}%", "output": "late"})
    return tests


# ---- exports over a batch's gradebook ----

def batch_lesson(batch_dir: Path) -> str:
    """The one lesson a batch's gradebook holds results of (else one line saying to pass --lesson)."""
    return _latest(BatchFolder(Path(batch_dir)), None)[1]


def _latest(folder: BatchFolder, lesson_id: str | None) -> tuple[list[dict[str, Any]], str]:
    path = folder.gradebook
    if not folder.is_batch():
        raise GraderError(f"{folder.root} holds no {path.name}: run `grader batch ... --out {folder.root}` first")
    book = folder.open_gradebook()
    try:
        rows = list(book.rows(lesson_id))
    finally:
        book.close()
    ids = sorted({r.get("lesson") or "" for r in rows} - {""})
    if not rows or (lesson_id is None and len(ids) != 1):
        raise GraderError(f"{path}: {'no results' if not rows else 'results of several lessons: pass --lesson'}")
    latest: dict[str, dict[str, Any]] = {}
    for data in rows:
        latest[data["student"]] = data
    return [latest[s] for s in sorted(latest)], lesson_id or ids[0]


def export(fmt: str, batch_dir: str | Path, out: str | Path | None = None, lesson_id: str | None = None,
           roster: str | Path | None = None, assignment: str = "", assignment_id: str = "") -> Path:
    """Write `fmt`'s files (canvas, prairielearn) for the batch in `batch_dir`; returns the folder written.
    Gradescope's is the autograder bundle (`gradescope.bundle`), not a batch's grades."""
    folder = BatchFolder(Path(batch_dir))
    target = Path(out) if out else folder.export(fmt)
    results, lesson_id = _latest(folder, lesson_id)
    if fmt == "prairielearn":
        for data in results:
            if mapping(data, "submitted_as").get("on_roster") is False:
                continue  # not of the class the roster lists (a platform's test student, say)
            files.write_text(target / data["student"] / "results.json", json.dumps(prairielearn_results(data), indent=2))
        return target
    if fmt == "canvas":
        kept = folder.roster
        return _canvas(results, lesson_id, target, roster if roster is not None or not kept.is_file() else kept,
                       assignment, assignment_id)
    raise GraderError(f"unknown export format {fmt!r} (known: {', '.join(FORMATS)})")


def describe(fmt: str, target: Path) -> str:
    """What an export wrote, read back from the files themselves, and where each goes."""
    if fmt == "canvas":
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
    if fmt == "prairielearn":
        written = sorted(target.glob("*/results.json"))
        return f"{target}: {len(written)} results.json, one folder per student (PrairieLearn's external-grader results)"
    return (f"{target / 'autograder.zip'}: Gradescope's autograder bundle (setup.sh, run_autograder, the grader, "
            "the lesson and its solutions): upload it in the assignment's Configure Autograder page")


def _canvas(results: list[dict[str, Any]], lesson_id: str, target: Path, roster: str | Path | None,
            assignment: str, assignment_id: str) -> Path:
    if roster is None:
        raise GraderError("the canvas export needs --roster: the gradebook CSV exported from Canvas (it holds the ids)")
    members = class_list.read(roster)
    if not members.canvas:
        raise GraderError(f"{roster} is not a Canvas gradebook export (no Student and ID columns)")
    lesson = lessons.get(lesson_id)
    column = _canvas_column(members, roster, assignment, assignment_id, lesson.title)
    by_id: dict[str, dict[str, Any]] = {}
    for data in results:
        member = members.find(data["student"])
        if member:
            by_id[member.student] = data
    rows = [["Student", "ID", "SIS User ID", "SIS Login ID", "Section", column],
            ["    Points Possible", "", "", "", "", spelling.score(lesson.max_score)]]
    for m in members.members:
        found = by_id.get(m.student)
        score = spelling.score(found['score']) if found and found.get("status") == "graded" else ""
        rows.append([m.name, m.student, m.sis_user_id, m.sis_login_id, m.section, score])
    files.write_text(target / "gradebook.csv", escape.csv_text(rows))
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as bundle:
        for data in results:
            bundle.writestr(zipfile.ZipInfo(_comment_name(data), date_time=(2026, 1, 1, 0, 0, 0)),
                            render_text.result_text(data) + "\n")
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


def _comment_name(data: dict[str, Any]) -> str:
    """Canvas matches bulk-uploaded comment files by the bulk download's name: keep its ids."""
    arrived = data.get("submitted_as") or {}
    original = (arrived.get("files") or [""])[0]
    match = layouts.CANVAS.match(original)
    if match:
        return f"{match['name']}{match['late'] or ''}_{match['user']}_{match['submission']}_feedback.txt"
    return f"{re.sub(r'[^A-Za-z0-9._-]', '_', data['student'])}_feedback.txt"
