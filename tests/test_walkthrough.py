"""What a student and an instructor meet off the happy path, checked without a kernel where one is not needed.

Open-loop evidence and partial credit by cases are worked by hand from the
contract's rules; the platform splits from the arithmetic each platform states
(Gradescope's and PrairieLearn's tests carry points that sum to the total).
"""

from __future__ import annotations

import csv
import io
import re
import zipfile
from pathlib import Path

import pytest
from conftest import typed

from grader import grading
from grader.base import escape
from grader.base.errors import GraderError, LessonError, SandboxUnavailable
from grader.base.limits import Limits
from grader.classroom import platforms
from grader.judge import verdict
from grader.judge.verdict import CaseVerdict, ExerciseResult
from grader.kernel import sandbox
from grader.lesson import catalog, handout, staff_code
from grader.report import absent, figure, platform_results, render
from grader.result import gradebook
from grader.result.evidence import Evidence
from grader.result.parts import Submitted
from grader.result.record import GradeResult

HERE = Path(__file__).parent


# ---- open-loop evidence (lesson dynamic-batching's `live_records`) ----

def _open_loop():
    return staff_code.properties(catalog.get("dynamic-batching"))["live_records"].__globals__["open_loop"]


def _records(sent_after_reply: bool, count: int = 30):
    """Requests every 2 ms, each answered 5 ms after it was sent; closed-loop: each sent once the last reply came."""
    rows, clock = [], 0.0
    for i in range(count):
        scheduled = 2.0 * i
        sent = max(scheduled, clock) if sent_after_reply else scheduled
        rows.append({"id": float(i), "scheduled_ms": scheduled, "sent_ms": sent, "received_ms": sent + 5.0})
        clock = sent + 5.0
    return rows


def test_a_client_that_waits_for_each_reply_is_closed_loop():
    # closed-loop: request i is due at 2i, the reply to i-1 comes at 5i; from i = 1 every request overlaps
    # (2i + 1 <= 5i) and none is sent before that reply: 0 of 29
    problems = _open_loop()(_records(sent_after_reply=True))
    assert len(problems) == 1 and "closed-loop" in problems[0] and "0 were sent" in problems[0]
    assert "of the 29 requests" in problems[0]
    # open-loop: the reply to i-1 comes at 2(i-1) + 5 = 2i + 3, so request i (due at 2i) overlaps and was sent first
    assert _open_loop()(_records(sent_after_reply=False)) == []


def test_too_few_overlapping_requests_say_nothing_about_the_client():
    # spaced 10 ms apart, answered after 5 ms: no request is due before the previous reply
    rows = [{"id": float(i), "scheduled_ms": 10.0 * i, "sent_ms": 10.0 * i, "received_ms": 10.0 * i + 5.0}
            for i in range(50)]
    assert _open_loop()(rows) == []
    # closed-loop but only 9 overlapping requests (fewer than the contract's 10): not judged
    assert _open_loop()(_records(sent_after_reply=True, count=10)) == []


def test_half_of_the_overlapping_requests_sent_early_is_enough():
    rows = _records(sent_after_reply=False, count=21)  # 20 overlapping requests, all sent early
    for row in rows[1:11]:  # 10 of the 20 are now sent after the previous reply (5 ms after their own schedule)
        row["sent_ms"] = row["scheduled_ms"] + 4.0
        row["received_ms"] = row["sent_ms"] + 5.0
    later = _open_loop()(rows)
    overlapping = sum(1 for a, b in zip(rows, rows[1:]) if b["scheduled_ms"] + 1 <= a["received_ms"])
    early = sum(1 for a, b in zip(rows, rows[1:]) if b["scheduled_ms"] + 1 <= a["received_ms"]
                and b["sent_ms"] < a["received_ms"])
    assert (2 * early >= overlapping) == (later == [])


# ---- partial credit by cases ----

def _verdicts(*outcomes: str, hidden_from: int = 1):
    return [CaseVerdict(f"c{i}", i >= hidden_from, outcome) for i, outcome in enumerate(outcomes)]


def test_scored_by_cases_earns_the_share_passed_and_excused_cases_count_in_neither():
    sim = catalog.get("dynamic-batching").exercise("batcher-sim")
    assert sim.scoring == "cases"
    verdicts = _verdicts("passed", "passed", "failed", "excused", "passed")
    assert verdict.earned(sim, verdicts, "failed") == pytest.approx(3 / 4)  # 3 passed of 4 counted
    fit = catalog.get("dynamic-batching").exercise("service-fit")
    assert fit.scoring == "all"
    assert verdict.earned(fit, verdicts, "failed") == 0.0
    assert verdict.earned(fit, _verdicts("passed", "excused"), "passed") == 1.0


def test_a_lesson_names_its_scoring_or_is_refused(tmp_path, monkeypatch):
    with pytest.raises(LessonError, match="scoring must be one of"):
        catalog._exercise("x", {"id": "e", "scoring": "some"})


def _exercise(outcomes, scoring="cases", points=1.0, status=None):
    cases = [{"label": f"c{i}", "hidden": hidden, "outcome": outcome, "message": f"c{i}: {outcome}"}
             for i, (hidden, outcome) in enumerate(outcomes)]
    counted = [c for c in cases if c["outcome"] != "excused"]
    passed = sum(c["outcome"] == "passed" for c in counted)
    status = status or ("passed" if passed == len(counted) else "failed")
    score = points * passed / len(counted) if scoring == "cases" else (points if status == "passed" else 0.0)
    return ExerciseResult.from_dict({"id": "e", "kind": "simulated", "status": status, "score": score, "max_score": points,
                                     "scoring": scoring, "public_cases": sum(not h for h, _ in outcomes),
                                     "hidden_cases": sum(h for h, _ in outcomes), "messages": [], "cases": cases})


def test_platform_tests_split_a_score_by_cases_over_public_and_hidden():
    # 2 public (1 passed) and 3 hidden (2 passed, 1 excused) of 2 points: 4 counted, 2 passed -> 1 point;
    # public test 2 * 1/4 of max 2 * 2/4, hidden test 2 * 1/4 of max 2 * 2/4
    exercise = _exercise([(False, "passed"), (False, "failed"), (True, "passed"), (True, "excused"),
                          (True, "failed")], points=2.0)
    public, hidden = platform_results._platform_tests(exercise)
    assert (public.score, public.max_score, hidden.score, hidden.max_score) == (0.5, 1.0, 0.5, 1.0)
    assert not public.passed and not hidden.passed and "c1: failed" in public.output


def test_platform_tests_all_or_nothing_put_the_points_on_the_hidden_test_or_the_only_one():
    both = platform_results._platform_tests(_exercise([(False, "passed"), (True, "passed")], scoring="all"))
    assert [(t.score, t.max_score, t.hidden) for t in both] == [(0.0, 0.0, False), (1.0, 1.0, True)]
    public_failed = platform_results._platform_tests(_exercise([(False, "failed"), (True, "passed")], scoring="all"))
    assert public_failed[1].score == 0.0 and "public checks must pass first" in public_failed[1].output
    only_public = platform_results._platform_tests(_exercise([(False, "passed"), (False, "passed")], scoring="all"))
    assert [(t.score, t.max_score, t.hidden) for t in only_public] == [(1.0, 1.0, False)]  # no empty hidden test


def test_gradescope_total_equals_the_result_and_prairielearn_has_the_same_points():
    exercises = [_exercise([(False, "passed"), (True, "failed"), (True, "passed")]),
                 _exercise([(False, "passed"), (True, "passed")], scoring="all")]
    data = GradeResult(status="graded", lesson="l", student="s", score=2 / 3 + 1.0, max_score=2.0, exercises=tuple(exercises))
    gradescope = platform_results.gradescope_results(data)
    assert sum(t["score"] for t in gradescope["tests"]) == pytest.approx(gradescope["score"]) == pytest.approx(5 / 3)
    prairielearn = platform_results.prairielearn_results(data)
    assert [t["points"] for t in prairielearn["tests"]] == [t["score"] for t in gradescope["tests"]]
    assert prairielearn["score"] == pytest.approx(5 / 6) and prairielearn["message"] == "1.67 / 2"


# ---- Canvas: the roster's own column, comments for everyone (a rejected student's says why), zipped ----

def _canvas_roster(path: Path, assignments: list[str]) -> Path:
    rows = [["Student", "ID", "SIS User ID", "SIS Login ID", "Section", *assignments],
            ["    Points Possible", "", "", "", "", *["4"] * len(assignments)],
            ["Lovelace, Ada", "1001", "S1", "ada", "A"], ["Bitdiddle, Ben", "1002", "S2", "ben", "A"]]
    path.write_text(escape.csv_text(rows), encoding="utf-8")
    return path


def _gradebook(folder: Path) -> Path:
    book = gradebook.Gradebook(folder / "gradebook.sqlite")
    graded = {"status": "graded", "lesson": "dynamic-batching", "student": "1001", "score": 3 + 27 / 28,
              "max_score": 4.0, "exercises": [], "notes": [], "seed": 1, "hash_seed": 2, "graded_at": "now",
              "submitted_as": {"files": ["lovelaceada_1001_7001_lab.ipynb"], "name": "Lovelace, Ada"}}
    rejected = grading.rejected(Path("bitdiddleben_1002_7002_lab.pdf"), "two files for one student: lab.pdf and "
                                "lab.ipynb; keep the notebook only", "dynamic-batching", "1002").to_dict()
    rejected["submitted_as"] = {"files": ["bitdiddleben_1002_7002_lab.pdf"], "name": "Bitdiddle, Ben"}
    book.add(graded, "d1")
    book.add(rejected, "d2")
    book.close()
    return folder


def test_canvas_export_uses_the_rosters_column_and_says_why_a_student_was_not_graded(tmp_path):
    roster = _canvas_roster(tmp_path / "roster.csv", ["Lab 3: batching (77)"])
    target = platforms.export("canvas", _gradebook(tmp_path), tmp_path / "canvas", roster=roster)  # no --assignment-id
    rows = list(csv.reader(io.StringIO((target / "gradebook.csv").read_text())))
    assert rows[0][5] == "Lab 3: batching (77)"
    assert {row[1]: row[5] for row in rows[2:]} == {"1001": "3.96", "1002": ""}
    with zipfile.ZipFile(target / "comments.zip") as bundle:
        comments = {name: bundle.read(name).decode() for name in bundle.namelist()}
    ben = comments["bitdiddleben_1002_7002_feedback.txt"]
    assert "not graded: two files for one student" in ben and "0 / 0" not in ben and "seed None" not in ben
    assert "3.96 / 4" in comments["lovelaceada_1001_7001_feedback.txt"]
    said = platforms.describe("canvas", target)
    assert "'Lab 3: batching (77)', 1 of 2 students scored" in said and "2 feedback files" in said


def test_canvas_export_asks_which_assignment_only_when_the_roster_holds_several(tmp_path):
    roster = _canvas_roster(tmp_path / "roster.csv", ["Lab 2 (76)", "Lab 3 (77)"])
    with pytest.raises(GraderError, match=r"holds 2 assignments \(Lab 2 \(76\); Lab 3 \(77\)\): pick one"):
        platforms.export("canvas", _gradebook(tmp_path), tmp_path / "x", roster=roster)
    target = platforms.export("canvas", tmp_path, tmp_path / "y", roster=roster, assignment_id="76")
    assert (target / "gradebook.csv").read_text().splitlines()[0].endswith("Lab 2 (76)")
    with pytest.raises(GraderError, match="has no assignment '78'"):
        platforms.export("canvas", tmp_path, tmp_path / "z", roster=roster, assignment_id="78")


# ---- reports: Markdown shown as written, the comparison's absence explained, bars that show ----

def test_the_markdown_report_escapes_for_markdown_not_html():
    data = grading.rejected(Path("x.ipynb"), 'a "quoted" <b>reason</b> | with a pipe', "dynamic-batching",
                            "a_b").to_dict()
    text = render.report_md(typed(data))
    assert "&lt;" not in text and "&#34;" not in text and "&quot;" not in text
    assert '"quoted" \\<b\\>reason\\</b\\> \\| with a pipe' in text
    assert escape.md_text("x\ny") == "x y" and escape.md_text("[link](u)") == "[link\\](u)"


def test_the_markdown_sandbox_section_puts_each_statement_on_its_own_line():
    data = {"status": "graded", "lesson": "inference-scaling", "student": "s", "score": 0.0, "max_score": 3.0,
            "exercises": [], "notes": [], "mode": "grade", "graded_at": "t", "seed": None, "as_submitted": [],
            "explanations": [], "environment": {}, "measured": {}, "simulated": {},
            "sandbox": {"mode": "bwrap", "missing": [], "budgets": {"cgroup": False}, "reasons": {"cgroup": "no cgroup here"}}}
    text = render.report_md(typed(data))
    assert "Mode: bwrap\n\n- budget not held, cgroup: no cgroup here" in text


def test_a_report_says_why_the_comparison_is_absent():
    spec = catalog.get("dynamic-batching").figure
    data = {"status": "graded", "measured": {"values": {"service_measured": None}},
            "simulated": {"values": {"service_simulated": None}},
            "exercises": [{"id": "live-replay", "status": "failed", "messages": ["closed-loop"], "score": 0,
                           "max_score": 1, "kind": "measured"},
                          {"id": "service-fit", "status": "passed", "messages": ["all passed"], "score": 1,
                           "max_score": 1, "kind": "simulated"}]}
    why = absent.comparison_absent(typed(data), spec)
    assert why.startswith("No table or figure of Measured service (loopback) beside the simulation on this run")
    assert "`service_measured` and `service_simulated` undefined" in why and "live-replay (failed)" in why
    data["measured"]["values"]["service_measured"] = {"total": [1.0]}
    data["simulated"]["values"]["service_simulated"] = {"total": [1.0]}
    assert absent.comparison_absent(typed(data), spec) == ""


def test_compute_bars_stay_visible_beside_a_backlogged_total():
    spec = catalog.get("dynamic-batching").figure
    sides = {"service_measured": {"wait": [2900.0] * 5, "compute": [2.0] * 5, "overhead": [5.0] * 5,
                                  "total": [3000.0] * 5}}
    data = {"measured": {"values": sides},
            "simulated": {"values": {"service_simulated": {"wait": [3.0] * 5, "compute": [2.0] * 5,
                                                           "overhead": [0.0] * 5, "total": [5.0] * 5}}}}
    panel = figure.layout(Evidence.of(typed(data)), spec).panels[-1]
    compute_bars = [b for b in panel.bars if b.width and abs(b.x - panel.xticks[1][0]) < 60]
    assert compute_bars and min(b.height for b in compute_bars) > 20  # on a linear 0-3000 axis: under 0.5 px
    assert "log scale" in panel.ylabel and [label for _, label in panel.yticks][:2] == ["0.1", "1"]


# ---- the command line: --sandbox insists, unknown lessons get a suggestion, a refused batch leaves nothing ----

def test_sandbox_insisted_on_is_refused_where_bubblewrap_is_missing(monkeypatch):
    monkeypatch.setattr(sandbox, "bwrap_path", lambda: None)
    with pytest.raises(SandboxUnavailable, match="--sandbox: the bubblewrap sandbox is unavailable: bubblewrap"):
        sandbox.plan(Limits(), "bwrap")
    assert sandbox.plan(Limits(), "auto").mode != "bwrap"  # without --sandbox the grade goes on, and says so


def test_an_unknown_lesson_suggests_the_one_meant():
    with pytest.raises(LessonError, match="unknown lesson 'dynamic_batching'; did you mean 'dynamic-batching'"):
        catalog.get("dynamic_batching")


def test_a_refused_batch_leaves_no_folder_behind(tmp_path, monkeypatch):
    from grader.classroom import batch

    folder = tmp_path / "class"
    folder.mkdir()
    (folder / "ada.ipynb").write_bytes((HERE.parent / "samples" / "inference-scaling" / "ada.ipynb").read_bytes())
    out = tmp_path / "out"
    with pytest.raises(GraderError, match="refusing to grade a class without isolation"):
        monkeypatch.setattr(sandbox, "bwrap_path", lambda: None)
        monkeypatch.setattr(sandbox, "_works", lambda *argv: False)  # nor as nobody
        batch.run(batch.Request(folder, "inference-scaling", out, options=grading.Options(), progress=False))
    assert not out.exists()
    out.mkdir()
    (out / "kept.txt").write_text("earlier work")
    with pytest.raises(GraderError):
        batch.run(batch.Request(folder, "inference-scaling", out, options=grading.Options(), progress=False))
    assert (out / "kept.txt").read_text() == "earlier work"


def test_a_notebook_of_an_older_release_is_told_so():
    notebook = handout.scaffold(catalog.get("dynamic-batching"))
    assert catalog.released_version(notebook) == 2
    notebook.metadata["grader"]["version"] = 1
    assert catalog.released_version(notebook) == 1
    notebook.metadata["grader"]["version"] = True
    assert catalog.released_version(notebook) is None


def test_scores_for_people_have_at_most_two_decimals():
    from grader.base import spelling

    assert [spelling.score(v) for v in (3 + 27 / 28, 4.0, 0.5, 1 / 3, -0.25)] == ["3.96", "4", "0.5", "0.33", "-0.25"]
    assert re.fullmatch(r"\d+", spelling.score(2.0))
    assert [spelling.score(v) for v in (None, "auto", True)] == ["None", "auto", "True"]  # not numbers: as they are


def test_check_and_grade_with_sandbox_refuse_in_one_line_where_bubblewrap_is_missing(tmp_path, monkeypatch):
    from click.testing import CliRunner

    from grader import cli

    monkeypatch.setattr(sandbox, "bwrap_path", lambda: None)
    notebook = HERE.parent / "samples" / "inference-scaling" / "ada.ipynb"
    for command in (["check", str(notebook), "--sandbox"], ["grade", str(notebook), "--lesson", "inference-scaling",
                                                            "--sandbox"]):
        done = CliRunner().invoke(cli.main, command)
        assert done.exit_code == 2, (command, done.output)
        lines = [line for line in done.output.splitlines() if line.strip()]
        assert len(lines) == 1 and "the bubblewrap sandbox is unavailable" in lines[0], done.output


def test_progress_lines_cut_a_long_reason_between_words_and_name_the_student():
    from grader.report import render_text

    stream = io.StringIO()
    reason = "the notebook could not be read as JSON " * 5
    rejected = GradeResult(status="rejected", lesson="l", student="1002", error=reason,
                           submitted_as=Submitted("flat", name="Bitdiddle, Ben"))
    render_text.Progress(1, stream).step("1002", rejected)
    line = stream.getvalue().strip()
    assert "Bitdiddle, Ben (1002)" in line
    shown = line.split("rejected: ")[1].rsplit(" (eta", 1)[0]
    assert shown.endswith(" ...") and reason.startswith(shown[:-4]) and reason[len(shown) - 4] == " "


def test_the_dashboard_gives_a_rejected_student_the_reason_not_a_score():
    lesson = catalog.get("inference-scaling")
    html = render.dashboard_html([{"student": "1002", "status": "rejected", "error": "two files for one student",
                                   "exercises": [], "score": 0.0, "max_score": 0.0, "name": "Bitdiddle, Ben"}], lesson)
    row = html.split("Bitdiddle, Ben (1002)")[-1].split("</tr>")[0]  # the student list, after the rejected table
    assert "not graded: two files for one student" in row and "0 / 0" not in row
