"""Fair grades: the same submission always gets the same hidden cases and score, anywhere it is graded, and two
students meet different ones. Seeds come from the course secret, the lesson and the student."""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from grader.base.options import MAX_SEED
from grader.lesson import draw as seeds

HERE = Path(__file__).parent
SAMPLES = HERE.parent / "samples" / "inference-scaling"
LESSON = "inference-scaling"


@pytest.fixture
def secret(tmp_path, monkeypatch):
    path = tmp_path / "course.secret"
    path.write_bytes(b"a course secret of thirty-two characters\n")
    path.chmod(0o600)
    monkeypatch.setenv("GRADER_SECRET", str(path))
    return path


def test_the_seed_is_an_hmac_of_lesson_and_student_under_the_secret(secret):
    key = b"a course secret of thirty-two characters"
    expected = int.from_bytes(hmac.new(key, b"inference-grader seed\0hidden\0inference-scaling\0ada",
                                       hashlib.sha256).digest()[:8], "big") % (MAX_SEED + 1)
    assert seeds.course_secret() == key
    assert seeds.hidden_seed(LESSON, "ada", key) == expected
    assert seeds.hidden_seed(LESSON, "ben", key) != expected
    assert seeds.hidden_seed("inference-capacity", "ada", key) != expected
    assert seeds.hidden_seed(LESSON, "ada", None) != expected  # without the secret: another, still repeatable


def test_a_secret_too_short_or_unreadable_is_one_line(tmp_path, monkeypatch):
    short = tmp_path / "short"
    short.write_text("abc")
    monkeypatch.setenv("GRADER_SECRET", str(short))
    with pytest.raises(seeds.SecretProblem, match="too short"):
        seeds.course_secret()
    monkeypatch.setenv("GRADER_SECRET", str(tmp_path / "absent"))
    with pytest.raises(seeds.SecretProblem, match="not a file"):
        seeds.course_secret()


def test_keys_init_makes_the_secret_once_and_adds_it_beside_an_older_key(tmp_path, monkeypatch, own_course):
    from click.testing import CliRunner

    from grader import cli

    home = own_course()
    monkeypatch.delenv("GRADER_SECRET", raising=False)
    made = CliRunner().invoke(cli.main, ["keys", "init"])
    path = home / "private" / "course.secret"  # the course's own private folder, owner-only
    assert made.exit_code == 0 and str(path) in made.output and oct(path.stat().st_mode & 0o777) == "0o600"
    assert oct(path.parent.stat().st_mode & 0o777) == "0o700"
    before = path.read_bytes()
    path.unlink()
    again = CliRunner().invoke(cli.main, ["keys", "init"])  # the key exists: only the missing secret is made
    assert again.exit_code == 0 and "added beside the existing key" in again.output and path.read_bytes() != before
    third = CliRunner().invoke(cli.main, ["keys", "init"])
    assert third.exit_code == 2 and "already exists" in third.stderr


def _grade(path: Path, tmp: Path, n: int) -> dict:
    out = tmp / f"r{n}.json"
    done = subprocess.run([sys.executable, "-m", "grader", "grade", str(path), "--lesson", LESSON, "--json", str(out)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(out.read_text())


@pytest.mark.kernel
def test_one_file_graded_three_times_gets_one_seed_and_one_score(tmp_path, secret):
    path = tmp_path / "1002.py"
    shutil.copy(SAMPLES / "ben.py", path)  # 2 of 3: partial credit
    runs = [_grade(path, tmp_path, n) for n in range(3)]
    assert len({r["seed"] for r in runs}) == 1 and len({r["score"] for r in runs}) == 1
    assert 0 < runs[0]["score"] < runs[0]["max_score"]
    assert runs[0]["seed"] == seeds.hidden_seed(LESSON, "1002", seeds.course_secret())
    assert runs[0]["seed_from"] == "course secret"


@pytest.mark.kernel
def test_two_students_with_one_file_meet_different_seeds_and_each_the_same_as_grade_gives(tmp_path, secret):
    from grader import grading
    from grader.classroom import batch

    folder = tmp_path / "class"
    folder.mkdir()
    for student in ("1001", "1002"):
        shutil.copy(SAMPLES / "ben.py", folder / f"{student}.py")
    batch.run(batch.Request(folder, LESSON, tmp_path / "out", jobs=2, options=grading.Options(), progress=False))
    results = {s: json.loads((tmp_path / "out" / "results" / f"{s}.json").read_text()) for s in ("1001", "1002")}
    assert results["1001"]["seed"] != results["1002"]["seed"]
    alone = _grade(folder / "1002.py", tmp_path, 0)
    assert (alone["seed"], alone["score"]) == (results["1002"]["seed"], results["1002"]["score"])


@pytest.mark.kernel
@pytest.mark.sandbox
@pytest.mark.skipif(os.geteuid() != 0, reason="Gradescope's container runs the grader as root")
def test_gradescope_grades_the_same_student_with_the_same_seed(tmp_path, secret):
    from grader.classroom import gradescope

    bundle = gradescope.bundle(LESSON, tmp_path / "gs") / "autograder.zip"
    root = tmp_path / "autograder"
    gradescope.unpack_bundle(bundle, root)
    assert (root / "source" / "course" / "private" / "course.secret").read_bytes() == secret.read_bytes()
    (root / "submission").mkdir()
    shutil.copy(SAMPLES / "ben.py", root / "submission" / "ben.py")
    (root / "submission_metadata.json").write_text(json.dumps({"users": [{"sid": "1002", "email": "b@x.edu"}]}))
    env = {k: v for k, v in os.environ.items() if k != "GRADER_SECRET"}  # the bundle's own secret, nothing else
    env.update(AUTOGRADER_ROOT=str(root), GRADER_PYTHON=sys.executable)
    done = subprocess.run([str(root / "source" / "run_autograder")], env=env, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    scored = json.loads((root / "results" / "results.json").read_text())
    alone = _grade(SAMPLES / "ben.py", tmp_path, 0)  # graded as "ben": another student, another seed
    named = tmp_path / "1002.py"
    shutil.copy(SAMPLES / "ben.py", named)
    same = _grade(named, tmp_path, 1)
    assert scored["score"] == same["score"] and scored["extra_data"]["seed"] == same["seed"]
    assert scored["extra_data"]["student"] == "1002"
    assert seeds.hidden_seed(LESSON, "1002", seeds.course_secret()) == same["seed"] != alone["seed"]
