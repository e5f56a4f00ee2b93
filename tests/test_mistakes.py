"""mistakes: the same failing check on the same kind of input is one group, with who made it and one message
as a student saw it, numbers kept."""

from __future__ import annotations

import re
import subprocess

import pytest
from test_render import CHROME_FLAGS, CHROMIUM

from grader.judge import mistakes
from grader.judge.verdict import CaseVerdict, ExerciseResult
from grader.lesson import catalog
from grader.report import render
from grader.result import gradebook
from grader.result.record import GradeResult


def _result(student, *exercises):
    return GradeResult(status="graded", lesson="inference-capacity", student=student, exercises=exercises)


def _grouped(results):
    """The mistakes grouped as the batch's dashboard groups them: from the gradebook's summaries."""
    return mistakes.grouped([gradebook.summary(r) for r in results])


def _queue(*cases, status="failed"):
    return ExerciseResult("queue-hand-check", status, 0.0, 1.0, "simulated", ("first message",), tuple(cases))


def _case(label, outcome, detail, hidden=False):
    prefix = f"hidden case {label}" if hidden else label
    return CaseVerdict(label, hidden, outcome, f"{prefix}: {detail}" if outcome != "passed" else "")


def test_alike_mistakes_group_with_their_students_and_keep_one_real_message():
    rows = [
        _result("ada", _queue(_case("`simulate(a, 2.0)`", "failed", "expected 4.0 for position [2], got 3.5 in [1, 2, 3.5]"))),
        _result("ben", _queue(_case("`simulate(a, 2.0)`", "failed", "expected 4.0 for position [2], got 3.0 in [1, 2, 3.0]"))),
        _result("cy", _queue(_case("`simulate(a, 2.0)`", "error", "raised KeyError: 'x'"))),
        _result("dee", _queue(_case("`simulate(a, 2.0)`", "passed", ""), status="passed")),
    ]
    (first, second), = _grouped(rows).values()
    assert first.students == ["ada", "ben"] and first.outcome == "failed" and first.input == "`simulate(a, 2.0)`"
    assert first.message == "`simulate(a, 2.0)`: expected 4.0 for position [2], got 3.5 in [1, 2, 3.5]"  # numbers kept
    assert second.students == ["cy"] and second.outcome == "error"


def test_hidden_cases_are_one_kind_of_input_whatever_each_student_drew():
    rows = [_result("ada", _queue(_case("`f(0.31)`", "failed", "your answer (2.0) differs from the reference", True),
                                  _case("`f(0.77)`", "failed", "your answer (5.5) differs from the reference", True))),
            _result("ben", _queue(_case("`f(0.12)`", "failed", "your answer (1.0) differs from the reference", True)))]
    (group,), = _grouped(rows).values()
    assert group.students == ["ada", "ben"] and group.input == "hidden cases"  # ada's two are one mistake of hers
    assert group.message == "hidden case `f(0.31)`: your answer (2.0) differs from the reference"


def test_an_exercise_not_judged_case_by_case_is_one_mistake_and_a_summary_keeps_them():
    missing = ExerciseResult("burst", "missing", 0.0, 1.0, "simulated", ("`burst` is not defined: define it",))
    rows = [_result("ada", missing), _result("ben", missing)]
    (group,), = _grouped(rows).values()
    assert group.students == ["ada", "ben"] and group.outcome == "missing" and group.input == ""
    summaries = [gradebook.summary(row) for row in rows]  # what the batch's dashboard reads
    assert mistakes.grouped(summaries)["burst"][0].students == ["ada", "ben"]


def test_the_dashboard_shows_each_group_with_its_students():
    rows = [_result(s, _queue(_case("`simulate(a, 2.0)`", "failed", f"expected 4.0, got {v}")))
            for s, v in (("ada", 3.5), ("ben<b>", 3.0))]
    html = render.dashboard_html([gradebook.summary(r) for r in rows], catalog.get("inference-capacity"))
    section = html[html.index('id="mistakes"'):]
    assert "expected 4.0, got 3.5" in section and "ben&lt;b&gt;" in section and "ben<b>" not in html
    assert re.search(r"<td>2</td><td><span class=\"failed\">failed</span></td>", section)
    assert "#" not in re.sub(r'href="[^"]*"|id="[^"]*"|&#\d+;', "", section.split("</table>")[0])  # numbers are kept


@pytest.mark.browser
@pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed (.ci/run installs it)")
def test_the_grouped_mistakes_render_in_chromium(tmp_path):
    rows = [_result(s, _queue(_case("`simulate(a, 2.0)`", "failed", f"expected 4.0, got {v}")))
            for s, v in (("ada", 3.5), ("ben", 3.0))]
    page = tmp_path / "index.html"
    page.write_text(render.dashboard_html([gradebook.summary(r) for r in rows], catalog.get("inference-capacity")))
    done = subprocess.run([CHROMIUM, *CHROME_FLAGS, f"--user-data-dir={tmp_path / 'profile'}", "--dump-dom",
                           page.as_uri()], capture_output=True, text=True, timeout=120)
    dom = done.stdout
    assert "Mistakes, grouped" in dom and "expected 4.0, got 3.5" in dom
    rendered = dom[dom.index('id="mistakes-queue-hand-check"'):]
    assert 'href="reports/ada.html"' in rendered and 'href="reports/ben.html"' in rendered
    console = [line for line in done.stderr.splitlines() if "CONSOLE" in line or "Refused to" in line]
    assert console == [], console


def test_one_bug_on_several_public_inputs_is_one_row():
    from grader.judge import mistakes

    cases = tuple(CaseVerdict(f"`f({n})`", False, "failed", f"`f({n})`: expected {n}, got {n + 1}") for n in (1, 2, 3))
    rows = mistakes.of_result((ExerciseResult("ex", "failed", 0.0, 1.0, "simulated", (),
                                              cases + (CaseVerdict("`g()`", False, "error", "`g()`: raised KeyError"),)),))
    assert [(r["input"], r["outcome"]) for r in rows] == [("`f(1)`", "failed"), ("`g()`", "error")]
