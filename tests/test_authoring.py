"""Writing a lesson: the guide's own example builds and validates, `grader new` writes a lesson that validates as
written, and `validate` names what an author gets wrong in one line."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
GUIDE = ROOT / "docs" / "authoring.md"


def _course(tmp_path: Path) -> Path:
    """An empty course folder: the templates, no lesson."""
    course = tmp_path / "course"
    shutil.copytree(ROOT / "templates", course / "templates")
    (course / "lessons").mkdir()
    (course / "solutions").mkdir()
    return course


def _grader(course: Path, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, GRADER_COURSE=str(course))
    return subprocess.run([sys.executable, "-m", "grader", *args], capture_output=True, text=True, env=env,
                          timeout=600, cwd=course)


def _guide_files() -> list[tuple[str, str]]:
    return [(name, body) for _, name, body in re.findall(r"```(\w+) file=(\S+)\n(.*?)```", GUIDE.read_text(), re.S)]


def test_the_guide_holds_a_whole_lesson():
    names = {name for name, _ in _guide_files()}
    assert names == {"lessons/kv-cache/lesson.toml", "lessons/kv-cache/scaffold.py", "solutions/kv-cache/answers.py",
                     "solutions/kv-cache/hidden.py", "solutions/kv-cache/mistakes.toml",
                     "solutions/kv-cache/mistakes/zero-tokens-refused.py", "course.toml"}
    text = GUIDE.read_text()
    for form in ("call", "value", "expect", "decimals", "rtol", "atol", "raises", "accepts", "property", "recompute",
                 "scoring", "needs", "points", "kind", "{ array =", "{ normal =", "{ kernel =", "hint", "varies",
                 "[[written]]", "rubric", "[late]", "percent_per_day", "cutoff_days", "due", "timezone",
                 "[submissions]", "cooldown_minutes", "max_graded"):
        assert f"`{form}" in text, form  # every case form and encoding is described


@pytest.mark.kernel
def test_the_guides_example_built_from_its_own_code_blocks_validates(tmp_path):
    course = _course(tmp_path)
    for name, body in _guide_files():
        (course / name).parent.mkdir(parents=True, exist_ok=True)
        (course / name).write_text(body)
    built = _grader(course, "build-solution", "kv-cache")
    assert built.returncode == 0, built.stderr
    checked = _grader(course, "validate", "kv-cache", "--draws", "3")
    assert checked.returncode == 0 and checked.stdout.rstrip().endswith("sound"), checked.stdout + checked.stderr
    # the guide's declared mistake: public cases pass it, the hidden boundary drawn every time catches it
    assert "'no tokens refused as if negative' loses points on cache-bytes under all 5 seeds" in checked.stdout


@pytest.mark.kernel
def test_grader_new_writes_a_lesson_that_validates_and_validate_names_what_an_author_gets_wrong(tmp_path):
    course = _course(tmp_path)
    made = _grader(course, "new", "queue-basics", "--exercise", "arrivals", "--exercise", "waits")
    assert made.returncode == 0, made.stderr
    assert "next: grader validate queue-basics" in made.stdout
    toml = (course / "lessons" / "queue-basics" / "lesson.toml").read_text()
    for table in ("# [variants]", "# [evidence]", "# [report]", "# [[written]]"):  # the skeleton shows them, off
        assert table in toml, table
    mistakes = course / "solutions" / "queue-basics" / "mistakes.toml"
    assert 'patch = "mistakes/arrivals-floor-division.py"' in mistakes.read_text()
    checked = _grader(course, "validate", "queue-basics")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "'the mean by floor division' loses points on arrivals under all 5 seeds" in checked.stdout
    again = _grader(course, "new", "queue-basics")
    assert again.returncode == 2 and "exists already; nothing was written" in again.stderr
    assert _grader(course, "new", "Bad_Id").returncode == 2

    scaffold = course / "lessons" / "queue-basics" / "scaffold.py"
    stub = '    raise NotImplementedError("write arrivals_mean(values)")'
    original = scaffold.read_text()
    right = ("    if not values:\n        raise ValueError('no values')\n    return sum(values) / len(values)")
    scaffold.write_text(original.replace(stub, right))
    answered = _grader(course, "validate", "queue-basics")  # a scaffold with one right answer is unsound
    assert answered.returncode == 1 and "the bare scaffold passes arrivals (1 of 1)" in answered.stdout
    scaffold.write_text(original)
    answers = course / "solutions" / "queue-basics" / "answers.py"
    answers.write_text(answers.read_text().replace("return math.fsum", "return 1.0 * math.fsum"))
    stale = _grader(course, "validate", "queue-basics")
    assert stale.returncode == 1 and "solution.ipynb is stale" in stale.stdout and "build-solution" in stale.stdout

    toml = course / "lessons" / "queue-basics" / "lesson.toml"
    spec = toml.read_text()
    toml.write_text(spec.replace('needs = ["waits_mean"]', 'needs = ["wait_mean"]'))
    typo = _grader(course, "validate", "queue-basics")
    assert typo.returncode == 1 and "exercise waits needs `wait_mean`, which neither the given cells nor the " \
        "reference answers define (a typo in lesson.toml's needs?)" in typo.stdout
    toml.write_text(spec)

    hidden = course / "solutions" / "queue-basics" / "hidden.py"
    hidden.write_text(hidden.read_text().replace("    lists = ", "    raise KeyError('oops')\n    lists = "))
    raised = _grader(course, "validate", "queue-basics")
    line = raised.stderr.strip()
    assert raised.returncode == 2 and len(line.splitlines()) == 1
    assert re.search(r"hidden\.py, line \d+: KeyError: 'oops'", line), line


def test_the_text_quotes_stated_figures_and_needs_are_derived_from_the_stub(tmp_path, monkeypatch):
    from grader.lesson import catalog, handout

    course = _course(tmp_path)
    for name, body in _guide_files():
        (course / name).parent.mkdir(parents=True, exist_ok=True)
        (course / name).write_text(body)
    monkeypatch.setenv("GRADER_COURSE", str(course))
    catalog.forget()
    try:
        lesson = catalog.get("kv-cache")
        assert lesson.exercise("fits").needs == ("fits",)  # the guide's TOML gives none: from `fits = None`
        text = next(c.source for c in handout.scaffold(lesson).cells if c.get("id") == "ex-cache-bytes")
        assert "For 4096 tokens: 2147483648 bytes." in text and "{{" not in text
    finally:
        monkeypatch.delenv("GRADER_COURSE")
        catalog.forget()


def test_the_guides_way_to_try_variants_leaves_the_course_private_folder_alone(tmp_path):
    (block,) = [b for b in re.findall(r"```sh\n(.*?)```", GUIDE.read_text(), re.S) if "keys init --dir" in b]
    private = ROOT / "private"
    before = sorted((p.name, p.stat().st_mtime_ns) for p in private.iterdir()) if private.is_dir() else None
    env = {k: v for k, v in os.environ.items() if not k.startswith("GRADER_")}
    env.update(TMPDIR=str(tmp_path), PATH=f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}")
    ran = subprocess.run(["bash", "-euc", "\n".join(line.strip() for line in block.splitlines())], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=300)
    assert ran.returncode == 0, ran.stderr
    drawn = re.findall(r"BURST_REQUESTS = (\d+)", ran.stdout)
    assert len(drawn) == 2 and all(int(n) in (4, 3, 5, 6) for n in drawn), ran.stdout  # lesson.toml's choices
    made = [p for p in tmp_path.iterdir() if p.is_dir()]
    assert len(made) == 1 and (made[0] / "private" / "variants.json").is_file()  # recorded in the scratch course
    assert (sorted((p.name, p.stat().st_mtime_ns) for p in private.iterdir()) if private.is_dir() else None) == before
