"""A non-editable install carries lessons/ and templates/, never solutions/, and works from any folder."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The package built as a wheel and unpacked as a site folder of its own (dependencies from this environment)."""
    out = tmp_path_factory.mktemp("wheel")
    source = tmp_path_factory.mktemp("source")  # the tracked files only: a stale build/ in the checkout cannot ship
    tracked = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, check=True, capture_output=True).stdout
    for name in filter(None, tracked.decode().split("\0")):
        if (ROOT / name).is_file():
            (source / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, source / name)
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--wheel-dir", str(out),
                            str(source)], check=True, timeout=300, capture_output=True, text=True)
    assert "would be ignored" not in built.stdout + built.stderr  # every shipped folder is declared: a quiet build
    (wheel,) = out.glob("*.whl")
    site = out / "site"
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        assert not [n for n in names if "solutions" in n or "hidden.py" in n or "answers.py" in n], names
        archive.extractall(site)
    return site


def _grader(site: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "GRADER_COURSE"}
    env["PYTHONPATH"] = str(site)
    code = "import grader, sys; assert grader.__file__.startswith(sys.argv[1]), grader.__file__; " \
           "from grader.cli import main; sys.argv = ['grader'] + sys.argv[2:]; main()"
    return subprocess.run([sys.executable, "-c", code, str(site), *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=300)


def test_the_wheel_holds_every_lesson_and_template(installed):
    lessons = {p.parent.name for p in (installed / "grader" / "course" / "lessons").glob("*/lesson.toml")}
    assert lessons == {p.parent.name for p in (ROOT / "lessons").glob("*/lesson.toml")}
    assert (installed / "grader" / "course" / "templates" / "report.html.j2").is_file()


@pytest.mark.kernel
def test_release_and_check_from_another_folder(installed, tmp_path):
    released = _grader(installed, tmp_path, "release", "dynamic-batching", "--out", ".")
    assert released.returncode == 0, released.stderr
    checked = _grader(installed, tmp_path, "check", "dynamic-batching.ipynb", "--cell-timeout", "60")
    assert checked.returncode == 1, checked.stderr  # the bare handout passes no public check
    assert "Self-check of dynamic-batching.ipynb for lesson dynamic-batching" in checked.stdout
    assert "0 of 4 exercises pass the public checks" in checked.stdout
    # grading needs the instructor's solutions/: without a course folder it says where to point
    graded = _grader(installed, tmp_path, "grade", "dynamic-batching.ipynb", "--lesson", "dynamic-batching")
    assert graded.returncode == 2 and "--course DIR" in graded.stderr, graded.stderr
    # ... and with the course folder named, it grades (the bare scaffold scores zero)
    graded = _grader(installed, tmp_path, "--course", str(ROOT), "grade", "dynamic-batching.ipynb",
                     "--lesson", "dynamic-batching", "--cell-timeout", "60")
    assert graded.returncode == 0, graded.stderr
    assert "dynamic-batching: 0 / 7" in graded.stdout  # four exercises and three written points (not graded yet)


def test_a_course_folder_must_hold_a_course_toml_lessons_or_solutions(installed, tmp_path):
    bad = _grader(installed, tmp_path, "--course", str(tmp_path), "validate", "dynamic-batching")
    assert bad.returncode == 2 and "holds no course.toml, lessons/ or solutions/" in bad.stderr
