"""A course is a folder that holds what grades it: its course.toml (name, time zone, policy per lesson) and its
private state (key, secret, which lessons vary, 0700). Two courses on one account never change each other's grades,
and a due date is a moment."""

from __future__ import annotations

import datetime as dt
import json
import stat
import zipfile
from pathlib import Path

import nbformat
import pytest
from click.testing import CliRunner
from conftest import FAST, full_marks, write

from grader import cli, grading
from grader.base.errors import GraderError, LessonError
from grader.lesson import catalog, course, draw, handout
from grader.result import sign, variants

LESSON = "inference-capacity"


def _in(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GRADER_COURSE", str(home))


def _release(tmp_path: Path, out: str) -> Path:
    roster = tmp_path / "roster.csv"
    roster.write_text("id,name\n1001,Ada\n1002,Ben\n1003,Cleo\n1004,Dev\n")
    done = CliRunner().invoke(cli.main, ["release", LESSON, "--variants", "--roster", str(roster), "--out",
                                         str(tmp_path / out)])
    assert done.exit_code == 0, done.output
    return tmp_path / out


def test_two_courses_on_one_account_keep_their_own_key_secret_and_variants(tmp_path, monkeypatch, own_course):
    first, second = own_course("first"), own_course("second", use=False)
    assert CliRunner().invoke(cli.main, ["keys", "init"]).exit_code == 0
    _release(tmp_path, "handouts")
    private = first / "private"
    assert stat.S_IMODE(private.stat().st_mode) == 0o700
    assert {p.name for p in private.iterdir()} == {"course.key", "course.pub", "course.secret", "variants.json"}
    assert all(stat.S_IMODE(p.stat().st_mode) == 0o600 for p in private.iterdir() if p.name != "course.pub")
    assert draw.enabled(LESSON)
    secret_first = draw.course_secret()

    _in(second, monkeypatch)  # the same account, another course: nothing of the first is in force here
    assert not draw.enabled(LESSON) and draw.course_secret() is None and sign.signing_key() is None
    assert CliRunner().invoke(cli.main, ["keys", "init"]).exit_code == 0
    assert draw.course_secret() not in (None, secret_first)
    assert not draw.enabled(LESSON)  # the second's keys init turned nothing on


@pytest.mark.kernel
def test_releasing_variants_in_one_course_leaves_the_others_grades_as_they_were(tmp_path, monkeypatch, own_course):
    first, second = own_course("first"), own_course("second", use=False)
    _release(tmp_path, "handouts")
    _in(second, monkeypatch)
    book = write(handout.solution_notebook(catalog.get(LESSON)), tmp_path / "1001.ipynb")  # the seed's numbers
    result = grading.grade(book, LESSON, grading.Options(limits=FAST)).to_dict()
    assert full_marks(result), [(e["id"], e["status"]) for e in result["exercises"]]
    assert "numbers" not in result or not result["numbers"]
    assert (first / "private" / "variants.json").is_file() and not (second / "private").exists()


def test_a_per_student_handout_graded_where_the_course_does_not_vary_the_lesson_is_refused(tmp_path, monkeypatch,
                                                                                          own_course):
    own_course("first")
    handouts = _release(tmp_path, "handouts")
    lesson = catalog.get(LESSON)
    odd = next(p for p in sorted(handouts.glob("*.ipynb"))
               if handout.found_numbers(lesson, nbformat.read(p, as_version=4))[1] != variants.defaults(lesson))
    _in(own_course("second", use=False), monkeypatch)
    with pytest.raises(GraderError, match=r"is a per-student handout of inference-capacity .* but second .* does not "
                                          r"grade inference-capacity per student"):
        grading.grade(odd, LESSON, grading.Options(limits=FAST))
    # the student's own self-check, on a machine with no course at all, still works from the handout's figures
    variants.refuse_elsewhere(lesson, handout.scaffold(lesson), "plain.ipynb")  # a plain handout is never refused


def test_an_accounts_key_still_signs_for_a_course_without_one_and_says_so_once(tmp_path, monkeypatch, own_course,
                                                                                 capsys):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))  # an account of this test's
    config = tmp_path / "config" / "inference-grader"
    sign.init(config)
    draw.make_secret(config)
    own_course("legacy")
    assert sign.key_path() == config / "course.key" and draw.secret_path() == config / "course.secret"
    sign.key_path()
    said = capsys.readouterr().err
    assert said.count("has no key of its own") == 1 and "has no secret of its own" in said
    shown = CliRunner().invoke(cli.main, ["course"])
    assert shown.exit_code == 0
    assert f"signing key: {config / 'course.key'} (this account's, shared by every course without one)" in shown.output


def test_grader_course_prints_the_course_its_state_and_its_policy(own_course):
    home = own_course("term", '[lessons.inference-capacity]\ndue = 2027-01-15T23:59:00\nvariants = true\n'
                              '[lessons.inference-capacity.late]\npercent_per_day = 10\ncutoff_days = 5\n')
    assert CliRunner().invoke(cli.main, ["keys", "init"]).exit_code == 0
    shown = CliRunner().invoke(cli.main, ["course"])
    assert shown.exit_code == 0, shown.output
    text = shown.output
    assert f"course: term ({home})" in text and f"private state: {home / 'private'} (mode 0700" in text
    assert f"signing key: {home / 'private' / 'course.key'} (the course's)" in text
    assert "inference-capacity: due 2027-01-15 23:59 (UTC); 10 % a day late, nothing after 5 days" in text
    assert "(graded per student: course.toml says so)" in text


def test_nothing_of_the_private_state_is_in_a_handout_or_an_export_of_grades(tmp_path, own_course):
    home = own_course("first")
    CliRunner().invoke(cli.main, ["keys", "init"])
    handouts = _release(tmp_path, "handouts")
    secrets_ = [(home / "private" / name).read_bytes() for name in ("course.key", "course.secret")]
    pem_body = secrets_[0].splitlines()[1]
    written = [p for p in handouts.rglob("*") if p.is_file()]
    assert written and not any(secrets_[1].strip() in p.read_bytes() or pem_body in p.read_bytes() for p in written)
    assert not any("private" in p.parts for p in written)


def test_a_due_date_is_a_moment_in_the_courses_time_zone(tmp_path, monkeypatch):
    home = tmp_path / "vienna"
    home.mkdir()
    (home / "course.toml").write_text(
        'name = "vienna"\ntimezone = "Europe/Vienna"\n'
        '[lessons.inference-capacity]\ndue = "2026-01-10T09:00:00"\n[lessons.inference-capacity.late]\npercent_per_day = 20\n'
        '[lessons.inference-scaling]\ndue = 2026-01-10\n[lessons.inference-scaling.late]\n'
        '[lessons.dynamic-batching]\ndue = 2026-01-10T09:00:00Z\n[lessons.dynamic-batching.late]\n')
    _in(home, monkeypatch)
    home = course.current()
    assert home.name == "vienna" and home.timezone == "Europe/Vienna"
    naive = home.policy("inference-capacity")
    # by hand: 09:00 in Vienna in January is 08:00 UTC; 2026-01-12 10:00 UTC is 2 days and 2 hours later: 3 days
    assert naive.due == dt.datetime(2026, 1, 10, 8, 0, tzinfo=dt.UTC)
    assert naive.days_late(False, "2026-01-12T10:00:00+00:00") == 3
    assert naive.late.percent(3) == 60
    # a bare date is due by the end of that day there: 2026-01-10 24:00 Vienna = 23:00 UTC
    bare = home.policy("inference-scaling")
    assert bare.days_late(False, "2026-01-10T22:59:00+00:00") == 0
    assert bare.days_late(False, "2026-01-11T00:30:00+00:00") == 1
    assert home.policy("dynamic-batching").due == dt.datetime(2026, 1, 10, 9, 0, tzinfo=dt.UTC)  # as written
    with pytest.raises(LessonError, match="names no time zone, so it cannot be compared"):
        naive.days_late(False, "2026-01-12T10:00:00")  # never taken as on time


@pytest.mark.parametrize(("toml", "said"), [
    ('name = "c"\n', "timezone"),
    ('name = "c"\ntimezone = "Mars/Olympus"\n', "timezone 'Mars/Olympus' is not a time zone this machine knows"),
    ('name = "c"\ntimezone = "UTC"\n[lessons.x]\ndue = "next friday"\n', "due 'next friday' is not a time"),
    ('name = "c"\ntimezone = "UTC"\n[lessons.x]\nlate_policy = 3\n', "lessons.x: unknown key"),
    ('name = "c"\ntimezone = "UTC"\n[lessons.x.submissions]\nbefore_due = "all"\n', "'all' is not one of"),
])
def test_a_course_toml_that_says_something_wrong_is_refused_in_one_line(tmp_path, monkeypatch, toml, said):
    home = tmp_path / "c"
    home.mkdir()
    (home / "course.toml").write_text(toml)
    _in(home, monkeypatch)
    with pytest.raises(LessonError) as refused:
        course.current()
    assert said in str(refused.value) and "\n" not in str(refused.value) and str(home / "course.toml") in str(refused.value)


def test_a_lesson_may_not_keep_a_due_date_or_a_late_policy(tmp_path, monkeypatch):
    import shutil

    root = Path(__file__).resolve().parent.parent
    home = tmp_path / "c"
    shutil.copytree(root / "lessons" / LESSON, home / "lessons" / LESSON)
    with (home / "lessons" / LESSON / "lesson.toml").open("a") as toml:
        toml.write("\n[late]\npercent_per_day = 10\n")
    _in(home, monkeypatch)
    catalog.forget()
    try:
        with pytest.raises(LessonError, match=r"are the course's, not the lesson's: move \[late\] to course.toml"):
            catalog.get(LESSON)
    finally:
        catalog.forget()


def test_the_course_is_found_from_the_working_directory_upwards(tmp_path, monkeypatch):
    home = tmp_path / "term"
    (home / "week1" / "ada").mkdir(parents=True)
    (home / "course.toml").write_text('name = "term"\ntimezone = "UTC"\n')
    monkeypatch.delenv("GRADER_COURSE")
    monkeypatch.chdir(home / "week1" / "ada")
    assert course.current().root == home and course.current().name == "term"
    assert course.current().private == home / "private"


def test_the_gradescope_bundle_carries_the_secret_root_only_and_never_the_key(tmp_path, own_course):
    from grader.classroom import gradescope

    home = own_course("gs", "[lessons.inference-scaling]\nvariants = false\n")
    CliRunner().invoke(cli.main, ["keys", "init"])
    bundle = gradescope.bundle("inference-scaling", tmp_path / "gs") / "autograder.zip"
    with zipfile.ZipFile(bundle) as archive:
        names = archive.namelist()
        assert "course/private/course.secret" in names and not any(n.endswith("course.key") for n in names)
        assert archive.read("course/private/course.secret") == (home / "private" / "course.secret").read_bytes()
        policy = archive.read("course/course.toml").decode()
    assert 'variants = false' in policy
    assert "chmod -R go-rwx /autograder/source/course/solutions /autograder/source/course/private" in \
        gradescope.SETUP_SH


def test_a_result_names_nothing_of_the_private_state(graded):
    result = graded.solution("inference-scaling")
    text = json.dumps(result)
    assert "course.secret" not in text and "course.key" not in text and "/private" not in text


@pytest.mark.kernel
def test_a_changed_late_policy_or_extension_applies_on_the_next_plain_run_and_says_whose_grade_moved(
        tmp_path, monkeypatch, own_course):
    from grader.classroom import batch

    home = own_course("late")
    folder = tmp_path / "canvas"
    folder.mkdir()
    book = handout.solution_notebook(catalog.get("inference-scaling"))
    write(book, folder / "lovelaceada_1001_5551_lab.ipynb")
    write(book, folder / "hopperben_LATE_1002_5552_lab.ipynb")
    out = tmp_path / "out"
    options = grading.Options(limits=FAST)
    first = batch.run(batch.Request(folder, "inference-scaling", out, jobs=1, options=options, progress=False))
    assert first.counts["graded"] == 2 and not first.named.get("moved")
    score = {s: json.loads((out / "results" / f"{s}.json").read_text())["score"] for s in ("1001", "1002")}
    assert score == {"1001": 3.0, "1002": 3.0}  # no late policy yet: the mark costs nothing

    (home / "course.toml").write_text('name = "late"\ntimezone = "UTC"\n'
                                      '[lessons.inference-scaling.late]\npercent_per_day = 10\n')
    again = batch.run(batch.Request(folder, "inference-scaling", out, jobs=1, options=options, progress=False))
    assert again.skipped == 2 and again.counts["graded"] == 0  # no kernel ran
    assert again.named["moved"] == ["1002: 3 -> 2.7"]  # by hand: one day late (the mark), 10 % of 3 points
    late = json.loads((out / "results" / "1002.json").read_text())
    assert late["score"] == pytest.approx(2.7) and late["manual"]["late"]["percent"] == 10.0
    assert "1002: 3 -> 2.7" in __import__("grader.report.render_text", fromlist=["x"]).report_line(again)

    roster = tmp_path / "roster.csv"
    roster.write_text("Student,ID,SIS User ID,SIS Login ID,Section,Extension (days)\n"
                      "\"Lovelace, Ada\",1001,a1,ada,S1,\n\"Hopper, Ben\",1002,b1,ben,S1,1\n")
    excused = batch.run(batch.Request(folder, "inference-scaling", out, jobs=1, options=options, progress=False, roster=roster))
    assert excused.named["moved"] == ["1002: 2.7 -> 3"]  # the extension excuses the mark
    quiet = batch.run(batch.Request(folder, "inference-scaling", out, jobs=1, options=options, progress=False))
    assert quiet.named["moved"] == []  # the roster kept beside the gradebook still counts; nothing moves again


@pytest.mark.kernel
def test_nothing_of_the_private_state_is_in_results_reports_exports_or_a_portfolio(tmp_path, own_course):
    import shutil

    from grader.classroom import batch, platforms, portfolio

    home = own_course("private")
    assert CliRunner().invoke(cli.main, ["keys", "init"]).exit_code == 0
    key, secret = (home / "private" / "course.key").read_bytes(), (home / "private" / "course.secret").read_bytes()
    needles = [secret.strip(), key.splitlines()[1], str(home / "private").encode()]
    folder = tmp_path / "class"
    folder.mkdir()
    samples = Path(__file__).resolve().parent.parent / "samples" / "inference-scaling"
    for name in ("ada.ipynb", "ben.py"):
        shutil.copy(samples / name, folder / name)
    out = tmp_path / "out"
    batch.run(batch.Request(folder, "inference-scaling", out, jobs=2, options=grading.Options(limits=FAST), progress=False))
    platforms.export("prairielearn", out)
    portfolio.build([out / "results" / "ada.json"], tmp_path / "ada.zip")
    written = [p for p in out.rglob("*") if p.is_file()]
    with zipfile.ZipFile(tmp_path / "ada.zip") as archive:
        inside = [archive.read(name) for name in archive.namelist()]
    assert len(written) > 8 and inside
    for blob in [p.read_bytes() for p in written] + inside:
        assert not any(needle in blob for needle in needles)
    assert json.loads((out / "results" / "ada.json").read_text())["signature"]  # signed with the course's own key


def test_a_batch_folder_records_its_course_and_another_course_cannot_grade_into_it(tmp_path, monkeypatch, own_course):
    from grader.base.errors import GraderError
    from grader.classroom import batch

    first, second = own_course("first"), own_course("second", use=False)
    empty = tmp_path / "class"
    empty.mkdir()
    out = tmp_path / "out"
    batch.run(batch.Request(empty, "inference-scaling", out, jobs=1, progress=False, options=grading.Options(sandbox="none")))
    assert json.loads((out / "course.json").read_text()) == {"course": "first", "root": str(first)}
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    _in(second, monkeypatch)
    with pytest.raises(GraderError, match=r"was graded by course 'first' .*the course in force is 'second'"):
        batch.run(batch.Request(empty, "inference-scaling", out, jobs=1, progress=False, options=grading.Options(sandbox="none")))
    assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before  # nothing written, nothing lost
