"""record: atomic JSON, a gradebook that never replaces a grade, the CSV."""

from __future__ import annotations

import csv
import json

import pytest

from grader.result import gradebook, record


def _result(student, score, when):
    return {"schema": 1, "status": "graded", "lesson": "l", "student": student, "score": score, "max_score": 2.0,
            "graded_at": when, "exercises": [{"id": "a", "score": score, "max_score": 2.0, "kind": "simulated", "status": "passed"}]}


def test_write_json_is_atomic_and_leaves_no_temp_files(tmp_path):
    target = tmp_path / "r" / "x.json"
    record.write_json({"a": float("nan")}, target)
    record.write_json({"a": 1}, target)
    assert json.loads(target.read_text()) == {"a": 1}
    assert [p.name for p in target.parent.iterdir()] == ["x.json"]


def test_gradebook_keeps_one_row_per_digest_and_the_latest_per_student(tmp_path):
    book = gradebook.Gradebook(tmp_path / "g.sqlite")
    assert book.add(_result("amy", 1.0, "2026-01-01T00:00:00"), "d1")
    assert not book.add(_result("amy", 2.0, "2026-01-01T00:00:01"), "d1")  # same digest: never replaced
    assert book.add(_result("amy", 2.0, "2026-01-02T00:00:00"), "d2")
    assert book.has("l", "amy", "d1") and not book.has("l", "amy", "d3")
    assert [r["score"] for r in book.latest()] == [2.0]
    assert len(list(book.rows())) == 2
    book.close()


def test_rows_come_oldest_first_and_summaries_keep_only_what_the_dashboard_reads(tmp_path):
    book = gradebook.Gradebook(tmp_path / "g.sqlite")
    for student, when in (("cat", "2026-01-03T00:00:00"), ("amy", "2026-01-01T00:00:00"), ("bob", "2026-01-02T00:00:00")):
        data = _result(student, 1.0, when)
        data["exercises"] = [{"id": "a", "score": 1.0, "max_score": 1.0, "kind": "simulated", "status": "passed",
                              "messages": ["all 3 cases passed"]},
                             {"id": "b", "score": 0.0, "max_score": 1.0, "kind": "simulated", "status": "failed",
                              "messages": ["first reason", "second"]}]
        book.add(data, f"d-{student}")
    assert [r["student"] for r in book.rows()] == ["amy", "bob", "cat"]
    kept = book.latest()[0]["exercises"]
    assert [e["messages"] for e in kept] == [[], ["first reason"]]
    book.close()


def _refused(student, reason):
    return {"schema": 1, "status": "rejected", "lesson": "l", "student": student, "error": reason,
            "graded_at": "2026-01-01T00:00:00"}


def test_a_grader_failure_is_kept_until_a_rerun_replaces_it_but_a_rejection_of_the_file_is_final(tmp_path):
    book = gradebook.Gradebook(tmp_path / "g.sqlite")
    assert book.add(_refused("amy", "internal grader error: AssertionError: "), "d1")
    assert book.add(_refused("bob", "not a notebook: line 1"), "d2")
    assert not book.has("l", "amy", "d1")  # a rerun grades amy again...
    assert book.has("l", "bob", "d2")  # ...but bob's file stays rejected until it changes
    assert book.add(_result("amy", 2.0, "2026-01-01T00:00:05"), "d1")
    assert book.has("l", "amy", "d1")
    assert not book.add(_result("amy", 0.0, "2026-01-01T00:00:09"), "d1")  # now a grade: never replaced
    assert not book.add(_result("bob", 2.0, "2026-01-01T00:00:09"), "d2")
    assert sorted((r["student"], r["status"], r.get("score")) for r in book.rows()) == [
        ("amy", "graded", 2.0), ("bob", "rejected", None)]
    book.close()


def test_csv_has_one_column_per_exercise(tmp_path):
    out = tmp_path / "grades.csv"
    gradebook.write_csv([_result("amy", 1.0, "t"), {"student": "bob", "status": "rejected", "error": "empty"}], ["a"], out)
    with out.open() as handle:
        rows = list(csv.reader(handle))
    assert rows[0] == ["student", "lesson", "status", "score", "max_score", "a", "error", "name", "late"]
    assert rows[1][:6] == ["amy", "l", "graded", "1.0", "2.0", "1.0"]
    assert rows[2][0] == "bob" and rows[2][6] == "empty"


def test_csv_gives_roster_students_without_a_submission_a_missing_row(tmp_path):
    out = tmp_path / "grades.csv"
    gradebook.write_csv([_result("amy", 1.0, "t")], ["a"], out, absent=[{"student": "eve", "name": "Eve Gone"}])
    with out.open() as handle:
        rows = list(csv.DictReader(handle))
    assert [(r["student"], r["status"], r["score"], r["name"]) for r in rows] == [
        ("amy", "graded", "1.0", ""), ("eve", "missing", "", "Eve Gone")]


def test_files_are_readable_by_others_under_the_usual_umask_and_keys_are_not(tmp_path):
    import os
    import stat

    from grader.base import files

    old = os.umask(0o022)
    try:
        report = files.write_text(tmp_path / "deep" / "er" / "report.html", "<p>hi</p>")
        key = files.write_bytes(tmp_path / "course.key", b"secret", private=True)
        with files.replacing(tmp_path / "bundle.zip") as tmp:
            tmp.write_bytes(b"PK")
    finally:
        os.umask(old)
    mode = lambda p: stat.S_IMODE(p.stat().st_mode)  # noqa: E731
    assert mode(report) == 0o644 and mode(tmp_path / "bundle.zip") == 0o644
    assert mode(tmp_path / "deep") == 0o755 and mode(tmp_path / "deep" / "er") == 0o755
    assert mode(key) == 0o600
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no temporary file left


def test_a_failed_write_leaves_the_old_file_whole(tmp_path):
    from grader.base import files

    target = files.write_text(tmp_path / "result.json", "old")
    with pytest.raises(RuntimeError), files.replacing(target) as tmp:
        tmp.write_text("half of the ne")
        raise RuntimeError("disk gone")
    assert target.read_text() == "old" and len(list(tmp_path.iterdir())) == 1


@pytest.mark.kernel
def test_a_written_result_reads_back_into_the_same_typed_record(graded):
    """Every part of a real grade is a record of its own, and a written result reads back into the same record."""
    from grader.result.parts import CellFacts, Explanation, RunFacts, SandboxFacts, Section

    for lesson_id in ("inference-capacity", "inference-scaling"):
        data = graded.solution(lesson_id)
        back = record.read_result(data)
        assert isinstance(back.run, RunFacts) and back.run.attempts == 1 and dict(back.run.timings)["cells"] >= 0
        assert back.cells and all(isinstance(c, CellFacts) for c in back.cells)
        assert isinstance(back.simulated, Section) and back.simulated.answers
        assert isinstance(back.sandbox, SandboxFacts) and back.sandbox.mode == data["sandbox"]["mode"]
        assert back.explanations and all(isinstance(e, Explanation) for e in back.explanations)
        assert json.dumps(back.to_dict(), sort_keys=True) == json.dumps(data, sort_keys=True)
        assert record.read_result(back.to_dict()) == back
    capacity = record.read_result(graded.solution("inference-capacity"))
    assert capacity.measured is not None and capacity.measured.how is not None  # the lesson measures timings


def test_a_stored_row_is_summarised_as_its_whole_result_is():
    """The gradebook leaves a row's bulky parts unread when it summarises it: none of them is one the summary reads."""
    from grader.judge.verdict import CaseVerdict, ExerciseResult
    from grader.result.manual import LateCharge, Manual, Override, WrittenGrade
    from grader.result.parts import CellFacts, Differing, Explanation, SandboxFacts, Section, Submitted

    cases = (CaseVerdict("`f(1)`", False, "failed", "`f(1)`: expected 2, got 3"), CaseVerdict("`f(7)`", True, "error"))
    result = record.GradeResult(
        status="graded", lesson="l", student="ada", score=0.5, max_score=2.0, graded_at="2026-01-01T00:00:00",
        exercises=(ExerciseResult("a", "failed", 0.0, 1.0, "simulated", ("first", "second"), cases),
                   ExerciseResult("b", "passed", 1.0, 1.0, "measured", ("all passed",))),
        measured=Section(values=(("t", [1.0]),)), simulated=Section(values=(("q", 2),)),
        environment={"cpu_model": "x86", "cpu_count": 2, "jax_backend": "cpu", "jax_device_kind": "cpu"},
        sandbox=SandboxFacts("bwrap", "root", "nobody", False, True), cells=(CellFacts(0, "c", "ok"),),
        as_submitted=(Differing("c", "1", "2"),), explanations=(Explanation("e", "explanation", "why"),),
        handout_of="ben", submitted_as=Submitted("flat", ("ada.ipynb",), name="Ada", late=True, on_roster=True),
        manual=Manual(1.0, 0.6, (WrittenGrade("q1", points=None, max_points=1.0),),
                      (Override("b", 0.5, "partly", autograded=1.0),), LateCharge(2.0, 20.0, 0.1)))
    whole = gradebook.summary(result)
    assert gradebook.row_summary(result.to_dict()) == whole
    assert whole["late"] and whole["differing_outputs"] == 1 and whole["exercises"][1]["score"] == 0.5
    assert whole["manual"]["written"] == {"q1": None} and [m["input"] for m in whole["mistakes"]] == ["`f(1)`", "hidden cases"]
