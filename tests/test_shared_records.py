"""The gradebook and the instructor's decisions kept in PostgreSQL behave as they do in a batch folder's SQLite files.

Each test runs on both: a SQLite file, and a throwaway PostgreSQL cluster
started by the `postgres` fixture (conftest.py), where two connections stand
for two servers of one course. Expected values are worked out by hand from
the operations each test makes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from grader.base.errors import GradebookError, GraderError
from grader.classroom.batch_folder import BatchFolder, keep_in, kept_in
from grader.classroom.review_store import Stale, Store
from grader.result.gradebook import Gradebook
from grader.result.manual import Override, WrittenGrade
from grader.result.record import INTERNAL_ERROR

LESSON = "inference-capacity"


@pytest.fixture(params=["sqlite", "postgresql"])
def where(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """Where the records are kept: a SQLite file, or a PostgreSQL address."""
    if request.param == "sqlite":
        return str(tmp_path / "records.sqlite")
    return str(request.getfixturevalue("postgres"))


def _row(student: str, score: float, at: str, status: str = "graded", error: str | None = None) -> dict[str, Any]:
    return {"lesson": LESSON, "student": student, "status": status, "score": score, "max_score": 10.0,
            "graded_at": at, "error": error}


def test_a_grade_is_added_once_only_a_grader_failure_is_replaced_and_a_regrade_keeps_history(where: str) -> None:
    with Gradebook(where) as book, Gradebook(where) as other:  # two servers of one course
        assert book.add(_row("ada", 3.0, "2026-12-01T10:00:00"), "d1") is True
        assert other.add(_row("ada", 9.0, "2026-12-01T10:00:05"), "d1") is False  # the same submission: kept once
        failed = _row("ada", 0.0, "2026-12-01T11:00:00", "rejected", INTERNAL_ERROR + " the kernel died")
        assert book.add(failed, "d2") is True
        assert other.has(LESSON, "ada", "d2") is False  # a grader failure is not a grade
        assert other.add(_row("ada", 5.0, "2026-12-01T11:00:10"), "d2") is True  # and it is replaced
        assert [(r["score"], r["graded_at"]) for r in book.rows(LESSON)] == [(3.0, "2026-12-01T10:00:00"),
                                                                             (5.0, "2026-12-01T11:00:10")]
        regrade = book.start_regrade(LESSON)
        assert other.start_regrade(LESSON) == regrade  # one regrade under way, whichever server asks
        assert other.add(_row("ada", 4.0, "2026-12-02T09:00:00"), "d2", regrade) is True
        assert [r["score"] for r in book.rows(LESSON)] == [4.0]  # the earlier rows moved to the history
        assert [(old["score"], new["score"]) for old, new in book.changed_by(LESSON, regrade)] == [(5.0, 4.0)]
        assert book.has(LESSON, "ada", "d2", regrade) and not book.has(LESSON, "ada", "d1", regrade)
        book.update(_row("ada", 4.5, "2026-12-02T09:00:00"), "d2")
        assert other.recorded(LESSON)["ada"]["score"] == 4.5
        with pytest.raises(GradebookError, match="no recorded grade of 'ada'"):
            other.update(_row("ada", 1.0, "x"), "d9")
        book.finish_regrade(LESSON)
        assert other.start_regrade(LESSON) != regrade


def test_a_decision_made_on_one_server_makes_the_others_stale_page_refused(where: str) -> None:
    one, two = Store(where), Store(where)
    try:
        mark = one.latest()
        first = one.decide(LESSON, ["ada"], WrittenGrade("prediction", ("right",), None, 1.0, "", "kim",
                                                         "2026-12-03T10:15:00"), seen={"ada": 0})
        assert first["ada"] > mark
        with pytest.raises(Stale, match="kim changed ada's answer at 10:15"):  # page two still showed version 0
            two.decide(LESSON, ["ada"], WrittenGrade("prediction", ("wrong",), None, 0.0, "", "lee", "x"),
                       seen={"ada": 0})
        second = two.decide(LESSON, ["ada"], WrittenGrade("prediction", ("wrong",), None, 0.0, "", "lee",
                                                          "2026-12-03T10:20:00"), seen=first)
        assert second["ada"] > first["ada"]
        assert one.written(LESSON)[("ada", "prediction")].items == ("wrong",)
        assert one.changes(LESSON, first["ada"]) == (two.latest(), [("ada", "prediction")])
        two.override(LESSON, "ada", Override("e1", 2.5, "a typo", "lee", "2026-12-03T10:30:00"), "e1", "lee")
        one.override(LESSON, "ada", Override("e1", 3.0, "a second look", "kim", "2026-12-03T10:31:00"), "e1", "kim")
        assert [(o.score, o.grader) for o in two.decisions(_lesson(), "ada").overrides.values()] == [(3.0, "kim")]
        assert [what for _, _, _, what, _ in one.log(LESSON)] == ["written prediction", "written prediction",
                                                                   "override e1", "override e1"]
    finally:
        one.close()
        two.close()


def _lesson() -> Any:
    from grader.lesson import catalog

    return catalog.get(LESSON)


def test_a_folder_served_from_postgresql_names_its_database_and_holds_no_sqlite_file(postgres: str,
                                                                                     tmp_path: Path) -> None:
    folder = BatchFolder(tmp_path / "out" / LESSON)
    folder.make()
    keep_in(folder, postgres)
    assert kept_in(folder) == postgres and folder.is_batch()
    with folder.open_gradebook() as book:
        book.add(_row("ada", 7.0, "2026-12-01T10:00:00"), "d1")
    decisions = folder.open_decisions()
    assert decisions is not None
    decisions.close()
    with Gradebook(postgres) as shared:  # what another server reads
        assert [r["score"] for r in shared.rows(LESSON)] == [7.0]
    assert sorted(p.name for p in folder.root.rglob("*") if p.is_file()) == ["gradebook.address"]
    keep_in(folder, postgres)  # the same database again: nothing changes
    with pytest.raises(GraderError, match="another database"):
        keep_in(folder, postgres.replace("/postgres", "/other"))


def test_a_folder_graded_into_sqlite_is_not_served_from_postgresql(tmp_path: Path) -> None:
    folder = BatchFolder(tmp_path / "out")
    Gradebook(folder.gradebook).close()
    with pytest.raises(GraderError, match="keeps its grades in SQLite files .*serve into another --out"):
        keep_in(folder, "postgresql://grader@127.0.0.1:1/course")
    assert not folder.gradebook_address.exists()


def test_every_row_is_read_back_oldest_first_across_pages(where: str) -> None:
    """More rows than one page of reading: each read once, in the order they were graded (ties: as added)."""
    with Gradebook(where) as book:
        for i in range(250):  # graded at minutes 249, 248, ... 0, and two at minute 7
            book.add(_row(f"s{i:03d}", float(i), f"2026-12-01T{(249 - i) // 60:02d}:{(249 - i) % 60:02d}:00"), f"d{i}")
        book.add(_row("late", 1.0, "2026-12-01T00:07:00"), "dx")
        students = [r["student"] for r in book.rows(LESSON)]
    expected = [f"s{i:03d}" for i in range(249, -1, -1)]
    expected.insert(expected.index("s242") + 1, "late")  # minute 7 is s242's; the later row follows it
    assert students == expected
