"""Per-student variants: each student's handout holds numbers of their own, drawn from the course secret; a grade
uses the owner's numbers whatever the notebook holds, and says whose handout it was."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import nbformat
import pytest
from click.testing import CliRunner
from conftest import full_marks, write

from grader import cli, grading
from grader.classroom import batch
from grader.lesson import catalog, draw, handout
from grader.result import variants

LESSON = "inference-capacity"
STUDENTS = ("1001", "1002", "1003", "1004")


@pytest.fixture
def course(tmp_path, monkeypatch, own_course):
    """A course folder of its own with a secret in its private state (the record of per-student lessons lands
    beside it), and a class list."""
    home = own_course()
    (home / "private").mkdir(mode=0o700)
    (home / "private" / "course.secret").write_text("a secret for the variants tests, long enough\n")
    roster = tmp_path / "roster.csv"
    roster.write_text("id,name\n" + "".join(f"{s},Student {s}\n" for s in STUDENTS))
    return roster


def _variant_cell(notebook) -> str:
    return next(c.source for c in notebook.cells if c.get("id") == "given-variant")


SHIPPED = ("dynamic-batching", "inference-capacity", "inference-scaling")


@pytest.mark.parametrize("lesson_id", [lid for lid in catalog.available() if lid in SHIPPED or catalog.get(lid).variants])
def test_every_lesson_varies_numbers_and_the_seeds_reproduce_its_own_figures(lesson_id):
    from grader.judge import matching

    lesson = catalog.get(lesson_id)
    varying = [(ex.id, i, case) for ex in lesson.exercises for i, case in enumerate(ex.cases) if case.varies]
    assert lesson.variants and varying  # each shipped lesson varies at least one exercise's numbers
    figures = variants.public_figures(lesson, variants.defaults(lesson))
    for ex_id, index, case in varying:
        assert matching.compare(figures[f"{ex_id}/{index}"], case.check.value, case) is None, (ex_id, index)
    assert handout.scaffold(lesson).cells == handout.scaffold(lesson, variants.defaults(lesson)).cells
    others = [variants.public_figures(lesson, dict(zip([n for n, _ in lesson.variants], choice)))
              for choice in zip(*[choices[1:] for _, choices in lesson.variants])]
    assert any(other != figures for other in others)  # other numbers give other figures


def test_inference_capacitys_figures_follow_the_numbers_as_worked_by_hand():
    lesson = catalog.get(LESSON)
    # by hand: 5 requests of 2.5 ms at once finish at 2.5, 5, ..., 12.5; a 7 ms deadline misses 8 and 10
    own = variants.public_figures(lesson, dict(variants.defaults(lesson), BURST_REQUESTS=5, BURST_SERVICE_MS=2.5,
                                               DEADLINE_MS=7.0, BATCH_SIZE=6, SPACING_MS=1.5))
    assert own["burst/0"] == [2.5, 5.0, 7.5, 10.0, 12.5] and own["deadline/1"] == 2
    assert own["batch-collection/0"] == [7.5, 6.0, 4.5, 3.0, 1.5, 0.0]


def test_release_writes_one_handout_per_student_and_records_the_lesson(tmp_path, course):
    done = CliRunner().invoke(cli.main, ["release", LESSON, "--variants", "--roster", str(course), "--out",
                                         str(tmp_path / "handouts")])
    assert done.exit_code == 0, done.output
    books = {s: nbformat.read(tmp_path / "handouts" / f"{s}.ipynb", as_version=4) for s in STUDENTS}
    assert len({_variant_cell(nb) for nb in books.values()}) > 1  # numbers of their own
    assert all(nb.metadata["grader"]["student"] == s for s, nb in books.items())
    assert draw.enabled(LESSON) and not draw.enabled("inference-scaling")
    plain = CliRunner().invoke(cli.main, ["release", LESSON, "--roster", str(course), "--out", str(tmp_path / "x")])
    assert plain.exit_code == 2 and "go with --variants" in plain.stderr
    bad = tmp_path / "bad.csv"
    bad.write_text("id\n../escaped\n")
    refused = CliRunner().invoke(cli.main, ["release", LESSON, "--variants", "--roster", str(bad), "--out",
                                            str(tmp_path / "y")])
    assert refused.exit_code == 2 and "cannot be a student id" in refused.stderr and not (tmp_path / "escaped.ipynb").exists()


def _filled(notebook):
    """A handout with the reference's answer cells in place of its stubs."""
    answers = handout.answer_cells(catalog.get(LESSON))
    for cell in notebook.cells:
        if cell.get("id") in answers:
            cell.source = answers[cell["id"]].source
    return notebook


@pytest.mark.kernel
def test_each_student_gets_full_marks_on_their_numbers_and_a_borrowed_handout_is_graded_on_its_owners(
        tmp_path, course):
    CliRunner().invoke(cli.main, ["release", LESSON, "--variants", "--roster", str(course), "--out",
                                  str(tmp_path / "handouts")])
    lesson = catalog.get(LESSON)
    books = {s: nbformat.read(tmp_path / "handouts" / f"{s}.ipynb", as_version=4) for s in STUDENTS}
    lender = next(s for s in STUDENTS[1:] if _variant_cell(books[s]) != _variant_cell(books["1001"]))
    folder = tmp_path / "class"
    folder.mkdir()
    write(_filled(books["1001"]), folder / "1001.ipynb")
    write(_filled(books[lender]), folder / f"{lender}.ipynb")
    borrower = next(s for s in STUDENTS if s not in ("1001", lender))
    write(_filled(books["1001"]), folder / f"{borrower}.ipynb")  # 1001's handout, handed in by another student
    batch.run(batch.Request(folder, LESSON, tmp_path / "out", jobs=2, options=grading.Options(), progress=False, roster=course))
    results = {s: json.loads((tmp_path / "out" / "results" / f"{s}.json").read_text())
               for s in ("1001", lender, borrower)}
    for student, result in results.items():
        assert full_marks(result), (student, result["exercises"])
        assert result["numbers"] == draw.numbers_for(lesson, student, draw.course_secret())
    assert results["1001"]["numbers"] != results[lender]["numbers"]
    note = " ".join(results[borrower]["notes"])
    assert "holds the numbers of another handout" in note and f"graded on {borrower}'s own numbers" in note
    assert "another student's handout (its owner mark says so)" in note
    report = (tmp_path / "out" / "reports" / f"{borrower}.html").read_text()
    assert not re.search(r"(?<![\d.])1001(?![\d.])", report)  # a student is never shown another student's id ...
    assert results[borrower]["handout_of"] == "1001" and "handout_of" not in results[lender]
    said = f"{borrower} handed in the handout of 1001"  # ... the instructor is, with both names
    assert said in (tmp_path / "out" / "index.html").read_text()
    assert said in (tmp_path / "out" / "similarity.html").read_text()


@pytest.mark.kernel
def test_a_students_self_check_uses_the_figures_of_their_own_handout(tmp_path, course, own_course):
    CliRunner().invoke(cli.main, ["release", LESSON, "--variants", "--roster", str(course), "--out",
                                  str(tmp_path / "handouts")])
    lesson = catalog.get(LESSON)
    own = next(s for s in STUDENTS if nbformat.read(tmp_path / "handouts" / f"{s}.ipynb", as_version=4)
               .metadata["grader"]["public"] != variants.public_figures(lesson, variants.defaults(lesson)))
    path = write(_filled(nbformat.read(tmp_path / "handouts" / f"{own}.ipynb", as_version=4)), tmp_path / "mine.ipynb")
    own_course("student")  # a student's machine: no secret, no record of per-student lessons
    assert not draw.enabled(LESSON)
    result = grading.grade(path, LESSON, grading.Options(public_only=True)).to_dict()
    assert {e["id"]: e["status"] for e in result["exercises"]} == {ex.id: "passed" for ex in lesson.exercises}


def test_similarity_sees_each_students_own_handout_as_the_handout():
    from grader.classroom import similarity

    lesson = catalog.get(LESSON)
    own = dict(variants.defaults(lesson), BURST_REQUESTS=6, DEADLINE_MS=8.0, SPACING_MS=3.0)
    # two students who drew the same numbers, neither writing a word: their handouts' text matches each other's and
    # not the seed's, and is still nobody's own writing
    books = {"1001": handout.scaffold(lesson, own), "1002": handout.scaffold(lesson, own)}
    report = similarity.analyse(books, handout.scaffold(lesson))
    assert [p for p in report.code + report.prose if p.flagged] == []


def test_validate_grades_drawn_variants_each_with_its_own_numbers(tmp_path, monkeypatch):
    from grader.authoring import validate
    from grader.judge.verdict import ExerciseResult
    from grader.result.record import GradeResult

    graded = []

    def grade(path, lesson_id, options, student, chosen):  # stands in for a kernel run: the reference passes, the bare handout not
        book = nbformat.read(path, as_version=4)
        numbers = chosen.numbers if isinstance(chosen, draw.Draw) else None
        graded.append((Path(path).name, numbers, handout.found_numbers(catalog.get(lesson_id), book)[1]))
        passes = "reference" in str(path) and "scaffold" not in str(path)
        return GradeResult(status="graded", lesson=lesson_id, student="x", exercises=(
            ExerciseResult("burst", "passed" if passes else "failed", float(passes), 1.0, "simulated", ()),))

    monkeypatch.setattr(validate, "grade", grade)
    assert validate.validate(LESSON, workdir=tmp_path).problems == ()
    drawn = [(name, dict(numbers), held) for name, numbers, held in graded if numbers is not None]
    assert len(drawn) == 2 * validate.VARIANT_DRAWS
    assert all(numbers == held for _, numbers, held in drawn)  # each handout holds the numbers it is graded on
    assert any(numbers != variants.defaults(catalog.get(LESSON)) for _, numbers, _ in drawn)


@pytest.mark.kernel
def test_a_renamed_handout_is_graded_on_its_owners_numbers_and_the_reports_replay_reproduces_the_score(tmp_path, course):
    import html
    import re
    import shlex
    import subprocess
    import sys

    CliRunner().invoke(cli.main, ["release", LESSON, "--variants", "--roster", str(course), "--out",
                                  str(tmp_path / "handouts")])
    lesson = catalog.get(LESSON)
    secret = draw.course_secret()
    owner = next(s for s in STUDENTS if draw.numbers_for(lesson, s, secret) != variants.defaults(lesson))
    book = _filled(nbformat.read(tmp_path / "handouts" / f"{owner}.ipynb", as_version=4))
    renamed = write(book, tmp_path / f"babbageben_{owner}_55502_{owner}.ipynb")  # the platform's name for the file
    result = grading.grade(renamed, LESSON, grading.Options()).to_dict()
    assert result["student"] == owner and result["numbers"] == draw.numbers_for(lesson, owner, secret)
    assert full_marks(result) and not any("another handout" in n for n in result["notes"])
    assert any(f"graded as {owner}, whose handout this is" in n for n in result["notes"])
    edited = copy.deepcopy(book)  # a handout whose name was edited into another student's is nobody's
    edited.metadata["grader"]["student"] = next(s for s in STUDENTS if s != owner)
    assert variants.handout_owner(lesson, edited, secret) is None

    canvas = tmp_path / "canvas"
    canvas.mkdir()
    write(book, canvas / f"babbageben_{owner}_55502_lab.ipynb")
    batch.run(batch.Request(canvas, LESSON, tmp_path / "out", jobs=1, options=grading.Options(), progress=False))
    graded = json.loads((tmp_path / "out" / "results" / f"{owner}.json").read_text())
    report = (tmp_path / "out" / "reports" / f"{owner}.html").read_text()
    replay = html.unescape(re.search(r"Replay this grade: <code>(.*?)</code>", report)[1])
    argv = shlex.split(replay)
    assert argv[:2] == ["grader", "grade"] and argv[argv.index("--student") + 1] == owner
    unpacked = next((tmp_path / "out" / "unpacked").rglob(argv[2])) if (tmp_path / "out" / "unpacked").exists() \
        else canvas / argv[2]
    again = subprocess.run([sys.executable, "-m", "grader", *argv[1:], "--json", str(tmp_path / "replayed.json")],
                           cwd=unpacked.parent, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr
    replayed = json.loads((tmp_path / "replayed.json").read_text())
    assert (replayed["student"], replayed["score"], replayed["seed"]) == (owner, graded["score"], graded["seed"])
