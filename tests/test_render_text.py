"""render_text: the terminal's view of a result, the same for grade, check and a batch's students."""

from __future__ import annotations

from grader.judge.verdict import ExerciseResult
from grader.report import render_text
from grader.result.parts import Differing
from grader.result.record import GradeResult


def _graded(mode="grade"):
    return GradeResult(
        status="graded", lesson="inference-capacity", student="ada", score=2.5, max_score=4.0, mode=mode, seed=None if mode == "check" else 17,
        hash_seed=3, submission="ada.ipynb", notes=("a note",), as_submitted=(Differing("c", "x", ""),),
        exercises=(ExerciseResult("queue", "passed", 2.0, 2.0, "simulated"),
                   ExerciseResult("fit", "failed", 0.5, 2.0, "measured", ("27 of 28 cases passed", "`fit`: expected 1"))),
    )


def test_a_grade_shows_score_seeds_each_exercise_and_what_to_fix():
    lines = render_text.result_text(_graded()).splitlines()
    assert lines[0] == "ada · inference-capacity: 2.5 / 4 (seed 17, hash seed 3)"
    assert "note: a note" in lines and any("1 stored output(s) differ" in line for line in lines)
    assert "PASS     queue                2/2" in lines
    assert "FAIL     fit                  0.5/2" in lines
    assert "         `fit`: expected 1" in lines  # a failing exercise's messages, indented under it
    assert lines[-1] == render_text.LEGEND


def test_a_self_check_shows_no_points_and_says_hidden_cases_come_later():
    text = render_text.result_text(_graded(mode="check"))
    assert text.startswith("Self-check of ada.ipynb for lesson inference-capacity (public checks only)")
    assert "PASS     queue" in text
    assert "2/2" not in text and "1 of 2 exercises pass the public checks." in text


def test_a_rejection_is_one_line_with_its_reason():
    data = GradeResult(status="rejected", lesson="l", student="eli", error="the file is empty")
    assert render_text.result_text(data) == "eli · l: not graded: the file is empty"
