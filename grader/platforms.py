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

Each exercise becomes two Gradescope tests: its public cases (visible at once)
and its hidden cases (after the due date); the exercise's points sit on the
hidden test and are earned only when both pass.
"""

from __future__ import annotations

import io
import json
import re
import zipfile
from pathlib import Path
from typing import Any

from grader import escape, files, layouts, lessons, record, render
from grader import roster as class_list
from grader.errors import GraderError

FORMATS = layouts.EXPORTS


# ---- per-result conversions (plain data in, plain data out) ----

def _split(exercise: dict[str, Any]) -> tuple[bool, list[str], bool, list[str]]:
    """(public passed, public messages, hidden passed, hidden messages) of one exercise verdict."""
    cases = exercise.get("cases") or []
    if exercise.get("status") in ("missing", "timeout", "error") and not cases:
        messages = list(exercise.get("messages") or [])
        return False, messages, False, messages
    public = [c for c in cases if not c.get("hidden")]
    hidden = [c for c in cases if c.get("hidden")]
    public_bad = [c["message"] for c in public if c.get("outcome") != "passed"]
    hidden_bad = [c["message"] for c in hidden if c.get("outcome") != "passed"]
    return not public_bad, public_bad, not hidden_bad and exercise.get("status") == "passed", hidden_bad


def gradescope_results(data: dict[str, Any], seconds: float = 0.0) -> dict[str, Any]:
    """A result in Gradescope's autograder results format."""
    if data.get("status") != "graded":
        return {"score": 0.0, "execution_time": round(seconds), "output": f"Not graded: {data.get('error')}",
                "visibility": "visible", "stdout_visibility": "hidden", "tests": []}
    tests, public = [], []
    for exercise in data["exercises"]:
        public_ok, public_msgs, hidden_ok, hidden_msgs = _split(exercise)
        kind = exercise.get("kind", "simulated")
        public.append(f"{'PASS' if public_ok else 'FAIL'} {exercise['id']}" + "".join(f"\n    {m}" for m in public_msgs))
        tests.append({"name": f"{exercise['id']}: public checks ({kind})", "score": 0.0, "max_score": 0.0,
                      "status": "passed" if public_ok else "failed", "visibility": "visible",
                      "output": "\n".join(public_msgs) or "every public case passed"})
        earned = exercise["max_score"] if public_ok and hidden_ok else 0.0
        tests.append({"name": f"{exercise['id']}: hidden cases ({kind})", "score": float(earned),
                      "max_score": float(exercise["max_score"]), "status": "passed" if earned else "failed",
                      "visibility": "after_due_date",
                      "output": "\n".join(hidden_msgs) or ("every hidden case passed" if hidden_ok else
                                                           "the public checks must pass first")})
    # Visible now: the public checks only. The score and the hidden tests wait for the due date.
    return {"score": float(sum(t["score"] for t in tests)), "execution_time": round(seconds),
            "output": "Public checks (everything else is graded and shown after the due date):\n" + "\n".join(public)
                      + isolation_text(data.get("sandbox") or {}),
            "visibility": "after_due_date", "stdout_visibility": "hidden", "tests": tests}


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
    """A result in PrairieLearn's external-grader format."""
    if data.get("status") != "graded":
        return {"gradable": False, "score": 0.0, "message": f"Not graded: {data.get('error')}", "tests": []}
    tests = [{"name": e["id"], "points": float(e["score"]), "max_points": float(e["max_score"]),
              "message": "; ".join(e.get("messages") or [])[:2000], "output": e.get("status", "")}
             for e in data["exercises"]]
    total = float(data.get("max_score") or 0)
    return {"gradable": True, "score": float(data.get("score") or 0) / total if total else 0.0,
            "message": f"{data.get('score', 0):g} / {total:g}", "tests": tests}


# ---- exports over a batch's gradebook ----

def _latest(batch_dir: Path, lesson_id: str | None) -> tuple[list[dict[str, Any]], str]:
    path = batch_dir / "gradebook.sqlite"
    if not path.is_file():
        raise GraderError(f"{batch_dir} holds no gradebook.sqlite: run `grader batch ... --out {batch_dir}` first")
    book = record.Gradebook(path)
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
    """Write `fmt`'s files for the batch in `batch_dir`; returns the folder written."""
    batch_dir = Path(batch_dir)
    target = Path(out) if out else batch_dir / "export" / fmt
    if fmt == "gradescope":
        return gradescope_bundle(lesson_id or _latest(batch_dir, None)[1], target)
    results, lesson_id = _latest(batch_dir, lesson_id)
    if fmt == "prairielearn":
        for data in results:
            files.write_text(target / data["student"] / "results.json", json.dumps(prairielearn_results(data), indent=2))
        return target
    if fmt == "canvas":
        return _canvas(results, lesson_id, target, roster, assignment, assignment_id)
    raise GraderError(f"unknown export format {fmt!r} (known: {', '.join(FORMATS)})")


def _canvas(results: list[dict[str, Any]], lesson_id: str, target: Path, roster: str | Path | None,
            assignment: str, assignment_id: str) -> Path:
    if roster is None:
        raise GraderError("the canvas export needs --roster: the gradebook CSV exported from Canvas (it holds the ids)")
    members = class_list.read(roster)
    if not members.canvas:
        raise GraderError(f"{roster} is not a Canvas gradebook export (no Student and ID columns)")
    if not assignment_id.isdigit():
        raise GraderError("the canvas export needs --assignment-id: the number in the assignment's Canvas URL")
    lesson = lessons.get(lesson_id)
    column = f"{assignment or lesson.title} ({assignment_id})"
    by_id: dict[str, dict[str, Any]] = {}
    for data in results:
        member = members.find(data["student"])
        if member:
            by_id[member.student] = data
    rows = [["Student", "ID", "SIS User ID", "SIS Login ID", "Section", column],
            ["    Points Possible", "", "", "", "", f"{lesson.max_score:g}"]]
    for m in members.members:
        data = by_id.get(m.student)
        score = f"{data['score']:g}" if data and data.get("status") == "graded" else ""
        rows.append([m.name, m.student, m.sis_user_id, m.sis_login_id, m.section, score])
    files.write_text(target / "gradebook.csv", escape.csv_text(rows))
    for data in results:
        files.write_text(target / "comments" / _comment_name(data), render.result_text(data) + "\n")
    return target


def _comment_name(data: dict[str, Any]) -> str:
    """Canvas matches bulk-uploaded comment files by the bulk download's name: keep its ids."""
    arrived = data.get("submitted_as") or {}
    original = (arrived.get("files") or [""])[0]
    match = layouts.CANVAS.match(original)
    if match:
        return f"{match['name']}{match['late'] or ''}_{match['user']}_{match['submission']}_feedback.txt"
    return f"{re.sub(r'[^A-Za-z0-9._-]', '_', data['student'])}_feedback.txt"


# ---- the Gradescope bundle ----

RUN_AUTOGRADER = """#!/usr/bin/env bash
# Gradescope calls this once per submission. AUTOGRADER_ROOT and GRADER_PYTHON exist for tests only.
# Student code never runs as root: export GRADER_ALLOW_ROOT_KERNEL=1 here only for a container where the kernel can
# run neither in bubblewrap nor as nobody (every result then says so).
set -u
ROOT="${{AUTOGRADER_ROOT:-/autograder}}"
PY="${{GRADER_PYTHON:-$ROOT/venv/bin/python}}"
mkdir -p "$ROOT/results"
exec "$PY" -m grader --course "$ROOT/source/course" gradescope-run --root "$ROOT" --lesson {lesson}
"""

SETUP_SH = """#!/usr/bin/env bash
# Gradescope runs this once, as root, when the image is built.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
apt-get update
apt-get install -y software-properties-common bubblewrap
add-apt-repository -y ppa:deadsnakes/ppa      # the images ship an older Python than the grader needs
apt-get update
apt-get install -y python3.11 python3.11-venv
python3.11 -m venv /autograder/venv
/autograder/venv/bin/pip install --upgrade pip
/autograder/venv/bin/pip install /autograder/source/grader-src
# Kernels run as nobody (in bubblewrap where the container allows it, else under setpriv): the interpreter, the
# grader, the lessons and the templates are readable by others, the solutions by root only.
chmod a+rx /autograder /autograder/source /autograder/source/course
chmod -R a+rX /autograder/venv /autograder/source/grader-src /autograder/source/course/lessons \
  /autograder/source/course/templates
chown -R root:root /autograder/source/course/solutions
chmod -R go-rwx /autograder/source/course/solutions
"""


def gradescope_bundle(lesson_id: str, target: Path) -> Path:
    """`autograder.zip`: setup.sh, run_autograder, the grader's source, the lesson, its templates and solutions."""
    lesson = lessons.get(lesson_id)
    if not (lesson.solutions / "hidden.py").is_file():
        raise GraderError(f"the Gradescope bundle needs the instructor's solutions/{lesson.id}: run from the course "
                          "checkout or pass --course DIR")
    package = Path(__file__).resolve().parent
    checkout = package.parent
    entries: dict[str, bytes | Path] = {
        "setup.sh": SETUP_SH.encode(), "run_autograder": RUN_AUTOGRADER.format(lesson=lesson.id).encode()}
    for path in sorted(package.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts and path.suffix in (".py", ".typed"):
            entries[f"grader-src/grader/{path.relative_to(package)}"] = path
    if (checkout / "pyproject.toml").is_file():
        entries["grader-src/pyproject.toml"] = checkout / "pyproject.toml"
        entries["grader-src/README.md"] = checkout / "README.md"
    for name, folder in (("lessons", lesson.folder), ("solutions", lesson.solutions)):
        for path in sorted(folder.rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts:
                entries[f"course/{name}/{lesson.id}/{path.relative_to(folder)}"] = path
    templates = lessons.course_folder("templates")
    for path in sorted(templates.rglob("*.j2")):
        entries[f"course/templates/{path.relative_to(templates)}"] = path
        entries[f"grader-src/templates/{path.relative_to(templates)}"] = path
    for path in sorted(lessons.course_folder("lessons").rglob("*")):  # the package ships every lesson's public part
        if path.is_file() and "__pycache__" not in path.parts:
            entries[f"grader-src/lessons/{path.relative_to(lessons.course_folder('lessons'))}"] = path
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as bundle:
        for name, source in entries.items():
            info = zipfile.ZipInfo(name, date_time=(2026, 1, 1, 0, 0, 0))
            info.external_attr = (0o755 if name in ("setup.sh", "run_autograder") else 0o644) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            bundle.writestr(info, source if isinstance(source, bytes) else source.read_bytes())
    files.write_bytes(target / "autograder.zip", buffer.getvalue())
    return target


def unpack_bundle(bundle: Path, root: Path) -> None:
    """Lay a bundle out as Gradescope does (`<root>/source/...`), keeping the scripts executable (tests, dry runs);
    unpacked by the one safe unpacker, like a class zip."""
    folder, refused = layouts.unzip(bundle, root / "source")
    if refused or folder != root / "source":
        raise GraderError(f"{bundle.name} is not a Gradescope bundle of this grader ({len(refused)} entries refused)")
    with zipfile.ZipFile(bundle) as archive:
        for info in archive.infolist():
            if (info.external_attr >> 16) & 0o111:
                (root / "source" / info.filename).chmod(0o755)
