"""record: atomic JSON, a gradebook that never replaces a row, the CSV."""

from __future__ import annotations

import csv
import json

from grader import record


def _result(student, score, when):
    return {"schema": 1, "status": "graded", "lesson": "l", "student": student, "score": score, "max_score": 2.0,
            "graded_at": when, "exercises": [{"id": "a", "score": score, "status": "passed"}]}


def test_write_json_is_atomic_and_leaves_no_temp_files(tmp_path):
    target = tmp_path / "r" / "x.json"
    record.write_json({"a": float("nan")}, target)
    record.write_json({"a": 1}, target)
    assert json.loads(target.read_text()) == {"a": 1}
    assert [p.name for p in target.parent.iterdir()] == ["x.json"]


def test_gradebook_keeps_one_row_per_digest_and_the_latest_per_student(tmp_path):
    book = record.Gradebook(tmp_path / "g.sqlite")
    assert book.add(_result("amy", 1.0, "2026-01-01T00:00:00"), "d1")
    assert not book.add(_result("amy", 2.0, "2026-01-01T00:00:01"), "d1")  # same digest: never replaced
    assert book.add(_result("amy", 2.0, "2026-01-02T00:00:00"), "d2")
    assert book.has("l", "amy", "d1") and not book.has("l", "amy", "d3")
    assert [r["score"] for r in book.latest()] == [2.0]
    assert len(list(book.rows())) == 2
    book.close()


def test_csv_has_one_column_per_exercise(tmp_path):
    out = tmp_path / "grades.csv"
    record.write_csv([_result("amy", 1.0, "t"), {"student": "bob", "status": "rejected", "error": "empty"}], ["a"], out)
    with out.open() as handle:
        rows = list(csv.reader(handle))
    assert rows[0] == ["student", "lesson", "status", "score", "max_score", "a", "error"]
    assert rows[1][:6] == ["amy", "l", "graded", "1.0", "2.0", "1.0"]
    assert rows[2][0] == "bob" and rows[2][-1] == "empty"
