"""Gradescope's container: the autograder bundle (setup.sh, run_autograder, the grader and the lesson) and the
run inside it, which grades the one submitted file and always writes results.json.

Inside the container the kernel runs sandboxed (bubblewrap, chosen by trial) or as nobody; the platform's own
record of the submission is read by the grader and closed to the kernel; whatever runs as nobody when the grade
ends is the student's and is ended, found by user; the visible output is plain text, one line per name.
"""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path
from typing import Any

from grader.base import files
from grader.base.errors import GraderError
from grader.intake import layouts
from grader.lesson import catalog, course, draw, folders
from grader.report.platform_results import gradescope_results
from grader.result import record

RUN_AUTOGRADER = """#!/usr/bin/env bash
# Gradescope calls this once per submission. AUTOGRADER_ROOT and GRADER_PYTHON exist for tests only.
# Student code never runs as root: export GRADER_ALLOW_ROOT_KERNEL=1 here only for a container where the kernel can
# run neither in bubblewrap nor as nobody (every result then says so).
set -u
ROOT="${{AUTOGRADER_ROOT:-/autograder}}"
PY="${{GRADER_PYTHON:-$ROOT/venv/bin/python}}"
mkdir -p "$ROOT/results"
# the course's private state (root only) holds the secret hidden cases are drawn from, so a resubmission, a batch
# and a local grade of the same student's file meet the same hidden cases
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
chown -R root:root /autograder/source/course/solutions /autograder/source/course/private
chmod -R go-rwx /autograder/source/course/solutions /autograder/source/course/private
"""

RESULTS = "results"
"""Gradescope's folder for the autograder's results.json (its layout, not a batch folder's)."""


def bundle(lesson_id: str, target: Path) -> Path:
    """`autograder.zip`: setup.sh, run_autograder, the grader's source, the lesson, its templates and solutions."""
    lesson = catalog.get(lesson_id)
    if not (lesson.solutions / "hidden.py").is_file():
        raise GraderError(f"the Gradescope bundle needs the instructor's solutions/{lesson.id}: run from the course "
                          "checkout or pass --course DIR")
    package = Path(__file__).resolve().parent.parent
    checkout = package.parent
    entries: dict[str, bytes | Path] = {
        "setup.sh": SETUP_SH.encode(),
        "run_autograder": RUN_AUTOGRADER.format(lesson=lesson.id).encode(),
        # the autograder is the course's own grading machine: it takes the course's secret (root only there) and
        # whether the course grades this lesson per student, and nothing else of its private state (no key)
        f"course/{course.COURSE_FILE}": _course_toml(lesson.id)}
    secret = draw.course_secret()
    if secret is not None:
        entries[f"course/{course.PRIVATE}/{draw.SECRET_NAME}"] = secret + b"\n"
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
    templates = folders.course_folder("templates")
    for path in sorted(templates.rglob("*.j2")):
        entries[f"course/templates/{path.relative_to(templates)}"] = path
        entries[f"grader-src/templates/{path.relative_to(templates)}"] = path
    for path in sorted(folders.course_folder("lessons").rglob("*")):  # the package ships every lesson's public part
        if path.is_file() and "__pycache__" not in path.parts:
            entries[f"grader-src/lessons/{path.relative_to(folders.course_folder('lessons'))}"] = path
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as bundle:
        for name, source in entries.items():
            info = zipfile.ZipInfo(name, date_time=(2026, 1, 1, 0, 0, 0))
            info.external_attr = (0o755 if name in ("setup.sh", "run_autograder") else 0o644) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            bundle.writestr(info, source if isinstance(source, bytes) else source.read_bytes())
    files.write_bytes(target / "autograder.zip", buffer.getvalue())
    return target


def _course_toml(lesson_id: str) -> bytes:
    """The course.toml of the bundle: the course's name and zone, and whether it grades the lesson per student."""
    here = course.current()
    return (f"name = {json.dumps(here.name or 'course')}\ntimezone = {json.dumps(here.timezone)}\n"
            f"[lessons.{json.dumps(lesson_id)}]\nvariants = {'true' if draw.enabled(lesson_id) else 'false'}\n"
            ).encode()


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


METADATA = "submission_metadata.json"
"""Gradescope's record of the submission (earlier results, e-mails): read by the grader, closed to the kernel."""


def _student(root: Path) -> str:
    """The student's id from Gradescope's metadata (the first submitter's student id, e-mail or user id), read as
    root and then closed to everyone else; "submission" where there is none. The kernel never reads the file."""
    import os

    path = root / METADATA
    try:
        meta = json.loads(files.read_regular(path, 16 * 1024**2))
    except (OSError, ValueError, RecursionError):
        meta = {}
    finally:
        if os.geteuid() == 0 and path.exists() and not path.is_symlink():
            os.chown(path, 0, 0)
            path.chmod(0o600)
    users = meta.get("users") if isinstance(meta, dict) else None
    first = users[0] if isinstance(users, list) and users and isinstance(users[0], dict) else {}
    for field in ("sid", "email", "id"):
        if isinstance(first.get(field), (str, int)) and not isinstance(first.get(field), bool) and str(first[field]):
            try:
                return layouts.checked_id(str(first[field]), "Gradescope's submitter id")
            except GraderError:
                break  # an id that cannot name a file names nobody here
    return "submission"


def run(root: Path, lesson_id: str, options: Any) -> tuple[dict[str, Any], dict[str, Any], Path]:
    """Inside Gradescope's container: grade ROOT/submission and write ROOT/results/results.json (always, whatever
    happens); (what Gradescope reads, the result, the results folder). The result is written after every process
    of the kernel's user is gone (found by user, not by ancestry), into a folder only root may write."""
    import os
    import time

    from grader import grading
    from grader.classroom import workers as worker
    from grader.kernel import leftovers
    from grader.kernel.isolation import NOBODY

    began = time.monotonic()
    results = files.make_dirs(root / RESULTS)
    if os.geteuid() == 0:
        os.chown(results, 0, 0)
    results.chmod(0o755)  # the kernel's user (nobody) may read the results folder, never write in it
    student = "submission"
    try:
        student = _student(root)
        found = layouts.files_under(root / "submission") if (root / "submission").is_dir() else []
        if len(found) == 1:
            result = worker.grade_one(found[0], lesson_id, options, student=student).result
        else:
            names = ", ".join(layouts.printable(p.name)[:80] for p in found[:5])
            why = ("no file was submitted" if not found else
                   f"{len(found)} files were submitted ({names}): submit one notebook")
            result = grading.rejected(root / "submission", why, lesson_id, student)
    except Exception as err:
        result = grading.rejected(root / "submission", f"{record.INTERNAL_ERROR}: the grader failed "
                                  f"({type(err).__name__}); resubmit, or ask the course staff", lesson_id, student)
    finally:
        leftovers.end_user(NOBODY)  # one grade per container: whatever nobody still runs is the student's
    graded = gradescope_results(result, time.monotonic() - began)
    files.write_text(results / "results.json", json.dumps(graded, indent=2))
    return graded, result.to_dict(), results
