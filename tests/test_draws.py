"""What each student meets is pinned: for every lesson and twenty students, the hidden-case seed, where it came from,
the kernel's hash seed, their own numbers, their handout's key and the hidden cases themselves, under one course
secret, as `grade` decides them and as a batch's parent does. tests/goldens/draws.json was written before the draw
became a value of its own (issue 60); a refactor that moves a single draw fails here, naming the student."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import nbformat
import pytest

from grader import grading
from grader.base.options import Options
from grader.classroom.host import Draws
from grader.lesson import catalog, draw as drawing
from grader.result import variants

GOLDEN = Path(__file__).parent / "goldens" / "draws.json"
STUDENTS = tuple(f"s{n:02d}" for n in range(20))
SECRET = b"a course secret for the pinned draws, 32+ bytes long"


def _digest(plans: Any) -> str:
    cases = [[plan.exercise_id, [repr(c) for c in plan.cases]] for plan in plans]
    return hashlib.sha256(json.dumps(cases).encode()).hexdigest()[:16]


def draws(folder: Path) -> dict[str, Any]:
    """Every lesson's draws for every student, as plain data (what the golden file holds)."""
    found: dict[str, Any] = {}
    for lesson_id in catalog.available():
        lesson = catalog.get(lesson_id)
        batch = {"hash_seed": drawing.batch_hash_seed(lesson.id, SECRET)}
        parents = Draws(lesson, Options(), drawing.Given())  # as a batch's parent decides each student's
        for student in STUDENTS:
            path = folder / f"{lesson.id}-{student}.ipynb"
            nbformat.write(variants.student_handout(lesson, student, SECRET), str(path))
            drawn = grading.draw(path, lesson.id, Options(), student)
            _, parent = parents.of(student)
            batch[student] = {"seed": parent.seed, "seed_from": parent.seed_from, "variant": parent.numbers,
                              "handout_key": parent.handout_key}
            found[f"{lesson.id}/{student}"] = {
                "student": drawn.submission.student, "seed": drawn.draw.seed, "seed_from": drawn.draw.seed_from,
                "hash_seed": drawn.draw.hash_seed, "numbers": drawn.numbers, "handout_of": drawn.handout_of,
                "cases": _digest(drawn.plans)}
        found[f"{lesson.id}/batch"] = batch
    return json.loads(json.dumps(found))  # tuples as lists, as the file holds them


def test_every_students_draw_is_as_pinned(own_course, tmp_path, monkeypatch, request):
    toml = "".join(f"[lessons.{lesson_id}]\nvariants = true\n" for lesson_id in catalog.available())
    own_course(toml=toml)
    secret = tmp_path / "course.secret"
    secret.write_bytes(SECRET)
    monkeypatch.setenv("GRADER_SECRET", str(secret))
    now = draws(tmp_path)
    if request.config.getoption("--update-goldens"):
        GOLDEN.write_text(json.dumps(now, indent=1, sort_keys=True) + "\n")
    pinned = json.loads(GOLDEN.read_text())
    moved = [key for key in sorted(set(pinned) | set(now)) if pinned.get(key) != now.get(key)]
    assert not moved, f"{len(moved)} draws moved, first {moved[0]}: {pinned.get(moved[0])} -> {now.get(moved[0])}"
    assert len({d["seed"] for k, d in now.items() if not k.endswith("/batch")}) == len(STUDENTS) * len(
        catalog.available())  # and no two students share a seed
    assert any(d["numbers"] for k, d in now.items() if not k.endswith("/batch"))  # variants are drawn


@pytest.fixture(autouse=True)
def _fresh_catalog():
    catalog.forget()
    yield
    catalog.forget()
