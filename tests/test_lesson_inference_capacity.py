"""Lesson inference-capacity end to end: the reference, realistic bugs and cheats.

Expected statuses are stated here from the contract, not read from the grader.
"""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pytest
from conftest import FAST, SEED, patched_solution, statuses, submission, typed, write

from grader import grading
from grader.lesson import catalog, handout
from grader.lesson.draw import Given

pytestmark = pytest.mark.kernel
LESSON = "inference-capacity"
ALL = ["measure", "queue-hand-check", "burst", "burst-sensitivity", "invalid-timeline", "deadline",
       "replica-plan", "batch-collection", "p95-interpolation"]

# One realistic bug per exercise; each must fail exactly that exercise.
BUGS = {
    "measure-nearest-rank-p95": "measure",
    "queue-vectorised-shortcut": "queue-hand-check",
    "burst-unpacks-starts": "burst",
    "burst-sensitivity-forgot-spacing": "burst-sensitivity",
    "invalid-accepts-nan-service": "invalid-timeline",
    "deadline-counts-equal-as-missed": "deadline",
    "replica-utilisation-inverted": "replica-plan",
    "collection-off-by-one": "batch-collection",
    "p95-nearest-rank": "p95-interpolation",
}


def test_reference_scores_full_marks(graded):
    result = graded.solution(LESSON)
    assert result["status"] == "graded"
    assert statuses(result) == dict.fromkeys(ALL, "passed")
    assert (result["score"], result["max_score"]) == (9.0, 12.0)  # nine exercises; three written points wait
    kinds = {e["id"]: e["kind"] for e in result["exercises"]}
    assert kinds["measure"] == "measured"
    assert {kinds[ex] for ex in ALL if ex != "measure"} == {"simulated"}


@pytest.mark.parametrize("bug, target", sorted(BUGS.items()))
def test_each_realistic_bug_fails_exactly_its_exercise(graded, bug, target):
    result = graded.patch(LESSON, bug)
    got = statuses(result)
    assert got[target] == "failed", result["exercises"]
    assert {ex: st for ex, st in got.items() if ex != target} == {ex: "passed" for ex in ALL if ex != target}
    assert result["score"] == 8.0


def test_vectorised_shortcut_passes_public_but_not_hidden(graded):
    result = graded.patch(LESSON, "queue-vectorised-shortcut")
    queue = next(e for e in result["exercises"] if e["id"] == "queue-hand-check")
    public = [c for c in queue["cases"] if not c["hidden"]]
    assert public and all(c["outcome"] == "passed" for c in public)
    assert any(c["hidden"] and c["outcome"] == "failed" for c in queue["cases"])
    # a hidden reference answer is never shown
    hidden = [m for m in queue["messages"] if "hidden case" in m]  # said once for the cases it fails
    assert hidden and all("differs from the reference" in m for m in hidden)


def test_hard_coded_public_answers_fail_on_hidden_cases(graded):
    result = graded.patch(LESSON, "hardcodes-public-answers")
    got = statuses(result)
    for ex in ("measure", "queue-hand-check", "burst", "burst-sensitivity", "invalid-timeline", "deadline",
               "replica-plan"):
        assert got[ex] in ("failed", "error"), ex  # error: the fake raises on a valid hidden input
        case_outcomes = [c for e in result["exercises"] if e["id"] == ex for c in e["cases"]]
        assert all(c["outcome"] == "passed" for c in case_outcomes if not c["hidden"]), ex


def test_patched_checkers_do_not_change_the_verdict(graded):
    result = graded.patch(LESSON, "patches-checkers")
    got = statuses(result)
    for ex in ("queue-hand-check", "burst", "burst-sensitivity", "invalid-timeline", "deadline"):
        assert got[ex] in ("failed", "error"), ex
    scores = {e["id"]: e["score"] for e in result["exercises"]}
    assert sum(scores[ex] for ex in ("queue-hand-check", "burst", "burst-sensitivity", "deadline")) == 0


def test_missing_name_is_reported_as_missing(graded):
    result = graded.patch(LESSON, "missing-count-missed")
    deadline = next(e for e in result["exercises"] if e["id"] == "deadline")
    assert deadline["status"] == "missing"
    assert "`count_missed`" in deadline["messages"][0] and "define" in deadline["messages"][0]
    assert sum(1 for st in statuses(result).values() if st == "passed") == 8


def test_a_raising_cell_leaves_the_other_exercises_graded(graded):
    result = graded.patch(LESSON, "raises-in-burst-cell")
    got = statuses(result)
    assert got["burst"] == "error"
    message = next(e for e in result["exercises"] if e["id"] == "burst")["messages"][0]
    assert "ZeroDivisionError" in message and "cell" in message
    assert {ex: st for ex, st in got.items() if ex != "burst"} == {ex: "passed" for ex in ALL if ex != "burst"}


def test_an_infinite_loop_times_out_and_the_grade_completes(graded):
    result = graded.patch(LESSON, "infinite-loop-in-collection-cell")
    got = statuses(result)
    assert got["batch-collection"] == "timeout"
    assert {ex: st for ex, st in got.items() if ex != "batch-collection"} == {
        ex: "passed" for ex in ALL if ex != "batch-collection"}
    assert any(c["status"] == "timeout" for c in result["cells"])


def _fake_outputs(notebook, text):
    for cell in notebook.cells:
        if cell.cell_type == "code":
            cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=text)]
            cell.execution_count = 7
    return notebook


def test_faked_stored_outputs_change_nothing(graded, tmp_path):
    fake = _fake_outputs(handout.scaffold(catalog.get(LESSON)), "PASS: all checks passed, score 9/9\n")
    result = graded.file(write(fake, tmp_path / "faked.ipynb"), LESSON)
    assert result["score"] == 0.0
    assert any("score 9/9" in o["text"] for o in result["as_submitted"])


def test_stale_outputs_on_a_correct_notebook_change_nothing(graded, tmp_path):
    stale = _fake_outputs(handout.solution_notebook(catalog.get(LESSON)), "Traceback: NameError\n")
    result = graded.file(write(stale, tmp_path / "stale.ipynb"), LESSON)
    assert result["score"] == 9.0


def test_doctored_stored_outputs_are_flagged_in_the_summary_the_report_and_the_dashboard(graded, tmp_path):
    from grader.report import render, render_text
    from grader.result import gradebook
    from grader.result.record import read_result

    fake = _fake_outputs(handout.scaffold(catalog.get(LESSON)), "PASS: all checks passed, score 9/9\n")
    result = graded.file(write(fake, tmp_path / "doctored.ipynb"), LESSON)
    assert result["stored_outputs"] > 0 and result["as_submitted"]
    assert f"note: {len(result['as_submitted'])} stored output(s) differ" in render_text.result_text(read_result(result))
    assert "differ from the fresh run" in render.report_html(typed(result)).split("<h2>Exercises</h2>")[0]
    dashboard = render.dashboard_html([gradebook.summary(typed(result))], catalog.get(LESSON))
    assert "Stored outputs that differ from the fresh run" in dashboard and "doctored" in dashboard
    clean = graded.solution(LESSON)  # written by the grader, never run: no stored outputs at all
    assert clean["stored_outputs"] == 0 and "submitted without stored outputs" in render.report_html(typed(clean))


def test_an_unchanged_prompt_is_not_shown_as_the_students_words(graded, tmp_path):
    notebook = handout.solution_notebook(catalog.get(LESSON))
    for cell in notebook.cells:
        if "prediction" in cell.metadata.get("tags", []):
            cell.source = "I predict the queue grows once arrivals outpace the service time."
    result = graded.file(write(notebook, tmp_path / "answered.ipynb"), LESSON)
    kinds = {e["kind"]: e["untouched"] for e in result["explanations"]}
    assert kinds == {"prediction": False, "explanation": True}


def test_an_unfinished_exercise_says_so_once(graded):
    result = graded.file(handout.release(LESSON, graded.folder), LESSON, seed=SEED)
    queue = next(e for e in result["exercises"] if e["id"] == "queue-hand-check")
    assert queue["messages"] == ["8 cases, e.g. `simulate_queue(np.array([0.0, 1.0, 4.0]), 2.0)`: raised "
                                 "NotImplementedError: write simulate_queue(arrival_ms, service_ms)"]


def _as_script(notebook, markers):
    chunks = []
    for cell in notebook.cells:
        if cell.cell_type != "code":
            continue
        chunks.append(("# %%\n" if markers else "") + cell.source)
    return "\n\n".join(chunks) + "\n"


@pytest.mark.parametrize("markers", [True, False], ids=["percent-cells", "plain-script"])
def test_the_same_code_as_a_py_file_scores_the_same(graded, tmp_path, markers):
    notebook = handout.solution_notebook(catalog.get(LESSON))
    script = tmp_path / f"solution-{'cells' if markers else 'plain'}.py"
    script.write_text(_as_script(notebook, markers), encoding="utf-8")
    result = graded.file(script, LESSON)
    assert statuses(result) == statuses(graded.solution(LESSON))
    assert result["score"] == 9.0


def test_a_bug_in_a_plain_script_fails_only_its_exercise(graded, tmp_path):
    notebook = patched_solution(LESSON, Path(__file__).parent / "submissions" / LESSON / "collection-off-by-one.py")
    script = tmp_path / "plain-bug.py"
    script.write_text(_as_script(notebook, markers=False), encoding="utf-8")
    got = statuses(graded.file(script, LESSON))
    assert got["batch-collection"] == "failed"
    assert sum(1 for st in got.values() if st == "passed") == 8


def test_replaying_the_recorded_seed_gives_the_same_result(graded, tmp_path):
    first = graded.solution(LESSON)
    path = tmp_path / "replay.ipynb"
    write(patched_solution(LESSON, submission(LESSON, "queue-vectorised-shortcut")), path)
    one = graded.file(path, LESSON, seed=first["seed"])
    two = grading.grade(path, LESSON, grading.Options(limits=FAST), None, Given(seed=one["seed"])).to_dict()
    strip = lambda r: json.dumps([dict(e) for e in r["exercises"]], sort_keys=True)  # noqa: E731
    assert strip(one) == strip(two)
    other = graded.file(path, LESSON, seed=first["seed"] + 1)
    assert strip(other) != strip(one)  # a fresh seed draws other hidden inputs


def test_check_runs_public_cases_only(graded):
    path = graded.folder / LESSON / "solution.ipynb"
    graded.solution(LESSON)
    result = graded.file(path, LESSON, public_only=True)
    assert result["mode"] == "check" and result["seed"] is None
    assert all(not c["hidden"] for e in result["exercises"] for c in e["cases"])
    assert result["score"] == 9.0


def test_scaffold_scores_zero(graded, tmp_path):
    released = handout.release(LESSON, graded.folder)
    result = graded.file(released, LESSON, seed=SEED)
    assert result["score"] == 0.0
    assert set(statuses(result).values()) <= {"failed", "error"}
