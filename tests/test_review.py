"""The instructor's part of a grade: written answers by rubric (page and spreadsheet), overrides, late policy.

One batch of inference-scaling (quick kernels) is graded once per module; each
test reviews a copy of it. Expected scores are worked by hand from the lesson's
rubric (lessons/inference-scaling/lesson.toml) and its three autograded points.
"""

from __future__ import annotations

import csv
import json
import shutil
import subprocess
import sys
import threading
import zipfile
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import FAST

LESSON = "inference-scaling"
ROOT = Path(__file__).resolve().parent.parent
SAME = "No: both gains come from the same repeated rows, so they overlap and do not multiply."
ANSWERS = {"ada": SAME, "ben": SAME, "cleo": "They will multiply, 0.17 times 0.5.", "dev": None}
"""The prediction each student wrote (None: left as the handout's prompt)."""


def _notebooks(folder: Path, answers: dict[str, str | None], names: dict[str, str] | None = None) -> Path:
    import nbformat

    from grader.lesson import catalog, handout

    folder.mkdir(parents=True, exist_ok=True)
    for student, text in answers.items():
        notebook = handout.solution_notebook(catalog.get(LESSON))
        if text is not None:
            next(c for c in notebook.cells if c.get("id") == "prediction").source = "## Your prediction\n\n" + text
        nbformat.write(notebook, str(folder / f"{(names or {}).get(student, student)}.ipynb"))
    return folder


def _batch(folder: Path, out: Path, *extra: str) -> None:
    from grader import cli

    done = CliRunner().invoke(cli.main, ["batch", str(folder), "--lesson", LESSON, "--out", str(out),
                                         "--cell-timeout", str(FAST.cell_timeout), *extra])
    assert done.exit_code == 0, done.output


@pytest.fixture(scope="module")
def batch(tmp_path_factory, course_key_module):
    """A signed batch of four solutions whose predictions differ (two identical, one other, one untouched)."""
    root = tmp_path_factory.mktemp("review")
    _batch(_notebooks(root / "in", ANSWERS), root / "out")
    return root / "out"


@pytest.fixture(scope="module")
def course_key_module(tmp_path_factory):
    """A course key for the module (results are signed, so a re-signed one can be verified)."""
    home = tmp_path_factory.mktemp("signed-course")
    (home / "course.toml").write_text('name = "signed course"\ntimezone = "UTC"\n')
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("GRADER_COURSE", str(home))
        patch.delenv("GRADER_KEY", raising=False)
        from grader import cli

        made = CliRunner().invoke(cli.main, ["keys", "init"])
        assert made.exit_code == 0, made.output
        yield home / "private"


@pytest.fixture
def out(batch, tmp_path):
    copy = tmp_path / "out"
    shutil.copytree(batch, copy)
    return copy


def _review(out: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "grader", "review", str(out), *args], capture_output=True, text=True,
                          timeout=300, cwd=ROOT)


def _state(out: Path) -> dict[str, bytes]:
    """Every file of the batch folder, to see that a refused import changed nothing."""
    return {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}


@pytest.mark.kernel
def test_a_batch_of_a_lesson_with_written_questions_counts_their_points_as_pending(batch):
    data = json.loads((batch / "results" / "ada.json").read_text())
    # three autograded points (the solution passes them) out of 3 + 1 + 2 (the two written questions' points)
    assert (data["score"], data["max_score"]) == (3.0, 6.0)
    assert [(w["question"], w["points"], w["max_points"]) for w in data["manual"]["written"]] == [
        ("prediction", None, 1.0), ("explanation", None, 2.0)]
    rows = list(csv.DictReader((batch / "grades.csv").read_text().splitlines()))
    assert rows[0]["written:prediction"] == "" and rows[0]["score"] == "3.0"


@pytest.mark.kernel
def test_review_export_fill_import_joins_the_manual_points_and_the_result_stays_signed(out, course_key_module):
    done = _review(out, "--export", str(out.parent / "export.csv"))
    assert done.returncode == 0, done.stderr
    with (out.parent / "export.csv").open(newline="") as handle:  # an answer's lines stay in its cell
        rows = list(csv.DictReader(handle))
    assert list(rows[0]) == ["student", "name", "question", "answer", "points", "max_points", "rubric", "comment",
                             "grader"]
    assert sorted((r["student"], r["question"]) for r in rows) == sorted(
        (s, q) for s in ANSWERS for q in ("prediction", "explanation"))
    answers = {r["student"]: r["answer"] for r in rows if r["question"] == "prediction"}
    assert answers["ada"].endswith("\n" + ANSWERS["ada"]) and answers["dev"] == ""  # to grade from; dev's is blank
    for row in rows:  # by rubric for the predictions; points outright for the explanations
        row["grader"] = "someone else"  # the CSV's column: never who decided (the importer is)
        if row["question"] == "prediction":
            row["rubric"] = {"ada": "no-overlap;reason", "ben": "no-overlap", "cleo": "", "dev": ""}[row["student"]]
            row["points"] = {"cleo": "0", "dev": "0"}.get(row["student"], "")
        else:
            row["points"], row["comment"] = "1.5", "name the column you pay with"
    filled = out.parent / "filled.csv"
    with filled.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    bad = out.parent / "bad.csv"
    bad.write_text(filled.read_text() + "zed,,prediction,,1,1,,,\n")
    before = _state(out)
    refused = _review(out, "--import", str(bad))
    assert refused.returncode == 2 and refused.stderr.strip() == "grader: row 10: no graded result for student 'zed'"
    assert _state(out) == before  # a bad row changes nothing
    done = _review(out, "--import", str(filled), "--grader", "ta1")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("8 decisions taken from")
    again = _review(out, "--import", str(filled), "--grader", "ta2")  # the same sheet twice: nothing to apply
    assert again.stdout.startswith(f"0 decisions taken from {filled}; 8 rows changed nothing; 0 rows")
    # by hand: 3 autograded + prediction (ada 0.5 + 0.5, ben 0.5, cleo and dev 0) + explanation 1.5
    expected = {"ada": 5.5, "ben": 5.0, "cleo": 4.5, "dev": 4.5}
    csv_rows = {r["student"]: r for r in csv.DictReader((out / "grades.csv").read_text().splitlines())}
    for student, score in expected.items():
        data = json.loads((out / "results" / f"{student}.json").read_text())
        assert data["score"] == score and data["max_score"] == 6.0, student
        assert float(csv_rows[student]["score"]) == score and csv_rows[student]["written:explanation"] == "1.5"
        written = {w["question"]: w for w in data["manual"]["written"]}
        assert written["explanation"]["grader"] == "ta1" and written["explanation"]["comment"].startswith("name")
    assert {w["question"]: w["items"] for w in json.loads((out / "results" / "ada.json").read_text())["manual"]
            ["written"]}["prediction"] == ["no-overlap", "reason"]
    checked = subprocess.run([sys.executable, "-m", "grader", "verify", str(out / "results" / "ada.json"), "--key",
                              str(course_key_module / "course.pub")], capture_output=True, text=True, timeout=120)
    assert checked.returncode == 0 and "intact" in checked.stdout, checked.stdout + checked.stderr
    assert "5.5 / 6" in (out / "reports" / "ada.html").read_text()


@pytest.mark.kernel
def test_a_rubric_item_changed_later_rescores_every_answer_that_used_it(out):
    from grader.classroom.review import Review

    review = Review(out, "ta2")
    try:
        review.decide("prediction", ["ada", "ben"], ["no-overlap"])
        assert review.set_item_points("prediction", "no-overlap", 1.0) == ["ada", "ben"]
    finally:
        review.close()
    for student in ("ada", "ben"):  # 3 autograded + the item now worth 1 (the question's whole point)
        assert json.loads((out / "results" / f"{student}.json").read_text())["score"] == 4.0


@pytest.mark.kernel
def test_identical_blank_and_untouched_answers_are_grouped_and_one_decision_grades_a_group(out):
    from grader.classroom.review import Review

    review = Review(out, "ta")
    try:
        groups = {g.key: sorted(a.student for a in g.answers) for g in review.groups("prediction")}
        assert groups["blank"] == ["dev"]  # left as the handout's prompt
        assert ["ada", "ben"] in groups.values() and ["cleo"] in groups.values()
        same = next(g for g in review.groups("prediction") if len(g.answers) == 2)
        review.decide("prediction", [a.student for a in same.answers], ["no-overlap", "reason"])
        assert review.progress()["prediction"] == (2, 4)
        with pytest.raises(Exception, match="no rubric item 'nope'"):
            review.decide("prediction", ["cleo"], ["nope"])
        with pytest.raises(Exception, match="outside question 'prediction'"):
            review.decide("prediction", ["cleo"], [], points=2.0)
    finally:
        review.close()


def _course_with_late_policy(tmp_path: Path) -> Path:
    course = tmp_path / "course"
    shutil.copytree(ROOT / "lessons" / LESSON, course / "lessons" / LESSON)
    shutil.copytree(ROOT / "solutions" / LESSON, course / "solutions" / LESSON)
    (course / "course.toml").write_text(f'name = "late course"\ntimezone = "Europe/Vienna"\n'
                                        f'[lessons.{LESSON}.late]\npercent_per_day = 10\ncutoff_days = 3\n')
    return course


@pytest.mark.kernel
def test_an_override_and_a_late_penalty_show_in_the_report_the_dashboard_and_the_canvas_export(tmp_path, monkeypatch):
    from grader import cli
    from grader.lesson import catalog

    monkeypatch.setenv("GRADER_COURSE", str(_course_with_late_policy(tmp_path)))
    catalog.forget()
    try:
        names = {"ada": "lovelaceada_1001_5551_lab", "ben": "hopperben_LATE_1002_5552_lab",
                 "cleo": "conwaycleo_LATE_1003_5553_lab"}
        folder = _notebooks(tmp_path / "canvas", dict.fromkeys(names), names)
        roster = tmp_path / "roster.csv"
        roster.write_text("Student,ID,SIS User ID,SIS Login ID,Section,Extension (days)\n"
                          "\"Lovelace, Ada\",1001,a1,ada,S1,\n\"Hopper, Ben\",1002,b1,ben,S1,\n"
                          "\"Conway, Cleo\",1003,c1,cleo,S1,2\n")
        out = tmp_path / "out"
        _batch(folder, out, "--roster", str(roster))
        late = json.loads((out / "results" / "1002.json").read_text())
        # ben: late by Canvas's mark (one day, no time known): 10% of 3 autograded points
        assert late["score"] == 2.7 and late["manual"]["late"]["percent"] == 10.0
        excused = json.loads((out / "results" / "1003.json").read_text())  # cleo's extension excuses the mark
        assert excused["score"] == 3.0 and excused["manual"]["late"]["percent"] == 0.0
        runner = CliRunner()
        refused = runner.invoke(cli.main, ["review", str(out), "--override", "1001", "crossover", "0.5"])
        assert refused.exit_code == 2 and "needs a reason" in refused.output
        done = runner.invoke(cli.main, ["review", str(out), "--override", "1001", "crossover", "0.5", "--reason",
                                        "hard-coded the seed's crossover"])
        assert done.exit_code == 0, done.output
        ada = json.loads((out / "results" / "1001.json").read_text())
        assert ada["score"] == 2.5 and next(e for e in ada["exercises"] if e["id"] == "crossover")["score"] == 1.0
        report = (out / "reports" / "1001.html").read_text()
        assert "hard-coded the seed&#39;s crossover" in report and "overridden: 0.5" in report
        assert "late −10%" in (out / "index.html").read_text() and "overridden: hard-coded" in (out / "index.html").read_text()
        assert "−10%, 0.3 of 3 points" in (out / "reports" / "1002.html").read_text()
        exported = runner.invoke(cli.main, ["export", "canvas", str(out), "--assignment-id", "77"])
        assert exported.exit_code == 0, exported.output
        book = list(csv.reader((out / "export" / "canvas" / "gradebook.csv").read_text().splitlines()))
        scores = {row[1]: row[-1] for row in book[2:]}
        assert scores == {"1001": "2.5", "1002": "2.7", "1003": "3"}
        with zipfile.ZipFile(out / "export" / "canvas" / "comments.zip") as bundle:
            comments = {name: bundle.read(name).decode() for name in bundle.namelist()}
        assert any("OVERRIDE crossover" in text and "hard-coded" in text for text in comments.values())
        assert any("LATE     1 day(s): -10%" in text for text in comments.values())
    finally:
        catalog.forget()


def test_a_late_policy_counts_days_from_a_submission_time_and_cuts_off():
    import datetime as dt

    from grader.lesson.course import LatePolicy, LessonPolicy

    policy = LessonPolicy(dt.datetime(2026, 12, 1, 23, 59, tzinfo=dt.UTC), LatePolicy(percent_per_day=10, cutoff_days=3))
    assert policy.days_late(False, "2026-12-01T23:00:00+00:00") == 0
    assert policy.days_late(False, "2026-12-02T00:30:00+00:00") == 1  # half an hour late is a day late
    assert policy.days_late(False, "2026-12-04T12:00:00+00:00") == 3
    assert policy.days_late(False, "2026-12-04T12:00:00+00:00", extension_days=2) == 1
    assert policy.days_late(True, "") == 1 and policy.days_late(True, "", extension_days=1) == 0
    assert [policy.late.percent(d) for d in (0, 1, 3, 4)] == [0, 10, 30, 100]  # after three days: nothing left


@pytest.mark.kernel
@pytest.mark.browser
def test_review_page_grades_by_keyboard_groups_and_keeps_decisions_after_a_reload(out):
    playwright = pytest.importorskip("playwright.sync_api")
    chromium = shutil.which("chromium")
    if chromium is None:
        pytest.skip("Debian's chromium is not installed")
    from grader.classroom import review_app

    ready: list[str] = []
    server = threading.Thread(target=review_app.serve, args=(out, "ta-browser"), kwargs={"ready": ready.append},
                              daemon=True)
    server.start()
    for _ in range(200):
        if ready:
            break
        threading.Event().wait(0.05)
    url = ready[0]
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        try:
            page = browser.new_page()
            assert page.goto(url.split("?")[0]).status == 403  # no token, no page
            page.goto(url)
            page.wait_for_selector(".card")
            nav = page.locator("nav button").first
            assert "graded 0 of 4" in nav.inner_text()
            # cards: the blank group (dev), the identical pair (ada, ben), then cleo
            page.keyboard.press("1")  # the blank group: item 1
            playwright.expect(page.locator("nav button").first).to_contain_text("graded 1 of 4")
            page.keyboard.press("j")
            page.keyboard.press("1")
            page.keyboard.press("2")  # the pair: items 1 and 2, one decision for both
            playwright.expect(page.locator("nav button").first).to_contain_text("graded 3 of 4")
            page.keyboard.press("j")
            page.keyboard.press("2")  # cleo: item 2
            playwright.expect(page.locator("nav button").first).to_contain_text("graded 4 of 4")
            page.reload()
            page.wait_for_selector(".card")
            pressed = page.eval_on_selector_all(".card", "cards => cards.map(c => [...c.querySelectorAll("
                                                "'.items button')].map(b => b.getAttribute('aria-pressed')))")
            assert pressed == [["true", "false"], ["true", "true"], ["false", "true"]]
            assert "graded 4 of 4" in page.locator("nav button").first.inner_text()
            page.set_viewport_size({"width": 1100, "height": 900})
            page.mouse.wheel(0, -10000)
            page.screenshot(path=str(out / "review-page.png"))
        finally:
            browser.close()
    # the pair's decision joined both grades: 3 autograded + 0.5 + 0.5
    for student in ("ada", "ben"):
        assert json.loads((out / "results" / f"{student}.json").read_text())["score"] == 4.0


@pytest.mark.kernel
def test_two_graders_at_once_keep_both_decisions_with_who_and_when(out):
    from grader.classroom.review import Review
    from grader.classroom.review_app import page_data

    first, second = Review(out, "ta1"), Review(out, "ta2")
    try:
        first.decide("explanation", ["ada"], [], points=2.0)
        second.decide("explanation", ["ben"], [], points=1.0)
        second.decide("explanation", ["ada"], [], points=1.5, comment="second look")  # the later decision counts
        shown = json.loads(page_data(first))  # the first page, reloaded, sees the second grader's decisions
        answers = {a["student"]: a for q in shown["questions"] if q["cell"] == "explanation"
                   for g in q["groups"] for a in g["answers"]}
        assert (answers["ada"]["points"], answers["ada"]["grader"]) == (1.5, "ta2")
        assert answers["ben"]["points"] == 1.0
        log = [(who, student, what) for _, who, student, what, _ in first.store.log(LESSON)]
        assert log == [("ta1", "ada", "written explanation"), ("ta2", "ben", "written explanation"),
                       ("ta2", "ada", "written explanation")]
    finally:
        first.close()
        second.close()
    assert json.loads((out / "results" / "ada.json").read_text())["score"] == 4.5  # 3 autograded + 1.5


def test_a_lesson_without_written_questions_or_late_policy_grades_exactly_as_before():
    import dataclasses

    from grader.judge.verdict import ExerciseResult
    from grader.lesson import catalog
    from grader.result import joining
    from grader.result.manual import Decisions, Override
    from grader.result.record import GradeResult

    plain = dataclasses.replace(catalog.get(LESSON), written=())
    exercises = tuple(ExerciseResult(ex.id, "passed", 1.0, 1.0, ex.kind) for ex in plain.exercises)
    result = GradeResult(status="graded", lesson=LESSON, student="ada", score=3.0, max_score=3.0, exercises=exercises)
    assert joining.joined(result, plain) is result and "manual" not in result.to_dict()
    overridden = joining.joined(result, plain, Decisions(overrides={"crossover": Override("crossover", 0.25, "why")}))
    assert (overridden.score, overridden.max_score) == (2.25, 3.0)  # by hand: 1 + 0.25 + 1
    assert overridden.manual is not None and overridden.manual.overrides[0].autograded == 1.0
    assert joining.joined(overridden, plain) == dataclasses.replace(result, score=3.0)  # the override taken back


def test_a_written_question_is_refused_when_its_rubric_cannot_reach_its_points_or_names_no_cell(tmp_path):
    from grader.base.errors import LessonError
    from grader.lesson import written

    item = {"id": "a", "points": 0.5, "text": "half"}
    with pytest.raises(LessonError, match="worth 1 points, but its rubric's positive items add up to 0.5"):
        written.questions({"written": [{"cell": "why", "points": 1, "rubric": [item]}]}, "lesson.toml", {"why"})
    with pytest.raises(LessonError, match="names no prediction or explanation cell"):
        written.questions({"written": [{"cell": "nope", "points": 0.5, "rubric": [item]}]}, "lesson.toml", {"why"})
    with pytest.raises(LessonError, match="repeats a rubric item id"):
        written.questions({"written": [{"cell": "why", "points": 0.5, "rubric": [item, item]}]}, "lesson.toml", {"why"})
    assert written.questions({"written": [{"cell": "why", "points": 0.5, "rubric": [item]}]}, "l", {"why"})[0].points == 0.5


@pytest.mark.kernel
def test_a_regrade_of_the_autograded_part_keeps_the_instructors_part(out, batch):
    from grader.classroom.review import Review

    review = Review(out, "ta")
    try:
        review.decide("explanation", ["ada"], [], points=2.0)
        review.override("ben", "crossover", 0.5, "hard-coded the seed's classes")
    finally:
        review.close()
    _batch(batch.parent / "in", out, "--regrade")
    import sqlite3

    with sqlite3.connect(out / "gradebook.sqlite") as db:  # every grade was made again: the old rows are history
        assert db.execute("SELECT count(*) FROM history").fetchone()[0] == len(ANSWERS)
    db.close()
    ada = json.loads((out / "results" / "ada.json").read_text())
    ben = json.loads((out / "results" / "ben.json").read_text())
    assert ada["score"] == 5.0 and ben["score"] == 2.5  # by hand: 3 + 2 written; 3 - 1 + 0.5 overridden
    rows = {r["student"]: r for r in csv.DictReader((out / "grades.csv").read_text().splitlines())}
    assert (rows["ada"]["score"], rows["ben"]["score"]) == ("5.0", "2.5")


@pytest.mark.kernel
def test_what_a_student_wrote_cannot_end_the_pages_script_and_a_linked_store_is_refused(out, tmp_path):
    from grader.base.errors import GraderError
    from grader.classroom.batch_folder import BatchFolder
    from grader.classroom.review import Review
    from grader.classroom.review_app import page_data

    hostile = "</script><script>alert(1)</script> & <!-- \u2028"
    path = out / "results" / "cleo.json"
    data = json.loads(path.read_text())
    next(e for e in data["explanations"] if e["cell_id"] == "prediction")["text"] = hostile
    path.write_text(json.dumps(data))
    review = Review(out, "ta")
    try:
        review.decide("explanation", ["cleo"], [], comment="=HYPERLINK(1)\x1b[2J", points=1.0)
        shown = page_data(review)
    finally:
        review.close()
    said = next(w for w in json.loads(path.read_text())["manual"]["written"] if w["question"] == "explanation")
    assert said["comment"] == "=HYPERLINK(1)\\x1b[2J"  # a grader's escape sequence is kept as visible text
    assert "</script" not in shown and "<!--" not in shown and "&" not in shown.replace("\\u0026", "")
    texts = [a["text"] for q in json.loads(shown)["questions"] for g in q["groups"] for a in g["answers"]]
    assert hostile in texts  # the page shows it as written (as text: the page never parses it as HTML)
    BatchFolder(out).review_store.unlink()
    BatchFolder(out).review_store.symlink_to(tmp_path / "elsewhere.sqlite")
    with pytest.raises(GraderError, match="not a plain file"):
        Review(out, "ta")
    assert not (tmp_path / "elsewhere.sqlite").exists()


@pytest.mark.kernel
def test_a_partly_filled_sheet_applies_its_filled_rows_and_leaves_the_rest_ungraded(out):
    done = _review(out, "--export", str(out.parent / "export.csv"))
    assert done.returncode == 0, done.stderr
    with (out.parent / "export.csv").open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    for row in rows:
        if (row["student"], row["question"]) in (("ada", "prediction"), ("ben", "explanation")):
            row["rubric" if row["question"] == "prediction" else "points"] = \
                "no-overlap" if row["question"] == "prediction" else "2"
    partly = out.parent / "partly.csv"
    with partly.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    done = _review(out, "--import", str(partly), "--grader", "ta3")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == (f"2 decisions taken from {partly}; 0 rows changed nothing; 6 rows without points "
                                   "or rubric items left ungraded")
    graded = {}
    for student in ANSWERS:
        data = json.loads((out / "results" / f"{student}.json").read_text())
        graded[student] = {w["question"]: (w["points"], w["grader"]) for w in data["manual"]["written"]}
    assert graded["ada"]["prediction"] == (0.5, "ta3") and graded["ben"]["explanation"] == (2.0, "ta3")
    assert graded["ada"]["explanation"] == (None, "") and graded["cleo"]["prediction"] == (None, "")
