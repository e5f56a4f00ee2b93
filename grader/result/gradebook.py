"""The gradebook: one row per (lesson, student, submission digest), its history, and the CSV and summaries drawn
from it; SQLite in the batch folder, or the PostgreSQL database several servers share (`grader serve --database`).

A batch that is interrupted and restarted grades only what is missing and
loses nothing: a row is added once, and only a grader failure is ever
replaced (a regrade first moves the student's earlier rows to the history).
"""

from __future__ import annotations

import json
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from grader.base import database, escape, files
from grader.base.errors import GradebookError
from grader.judge import mistakes
from grader.result.record import INTERNAL_ERROR, SCHEMA, GradeResult, dumps, read_result

WRITING = 0x67726b62  # "grkb": the advisory lock a gradebook's writers take on PostgreSQL
_ROW = "status, score, max_score, graded_at, result_json"
PAGE = 100
"""Results read back at once (about 3 MB of capacity results)."""


class Gradebook:
    """The gradebook: one row per (lesson, student, digest), at a SQLite path or a `postgresql://` address."""

    def __init__(self, where: str | Path) -> None:
        self.path = Path(where) if not database.is_address(where) else None
        self.db = database.Database(where, "gradebook", GradebookError)
        try:
            with self.db.schema() as db:
                db.execute("CREATE TABLE IF NOT EXISTS grades (lesson TEXT NOT NULL, student TEXT NOT NULL, digest TEXT "
                           "NOT NULL, status TEXT NOT NULL, score DOUBLE PRECISION, max_score DOUBLE PRECISION, "
                           f"graded_at TEXT, result_json TEXT NOT NULL{self.db.serial_column}, "
                           "PRIMARY KEY (lesson, student, digest))")
                self._upgrade(db)
        except database.errors() as err:  # another file under the gradebook's name: leave it as it is
            self.db.close()
            raise GradebookError(f"{where} is not a gradebook this tool can use ({err})") from None

    def _upgrade(self, db: database.Cursor) -> None:
        """Regrades (a gradebook of an earlier version gains these on open; its rows stay as they were): the
        regrade that wrote a row, earlier grades a regrade replaced, and a regrade under way per lesson."""
        if "regrade" not in self.db.columns(db, "grades"):
            db.execute("ALTER TABLE grades ADD COLUMN regrade TEXT")
        db.execute("CREATE TABLE IF NOT EXISTS history (lesson TEXT NOT NULL, student TEXT NOT NULL, digest TEXT NOT "
                   "NULL, status TEXT NOT NULL, score DOUBLE PRECISION, max_score DOUBLE PRECISION, graded_at TEXT, "
                   f"result_json TEXT NOT NULL, replaced_by TEXT NOT NULL{self.db.serial_column})")
        db.execute("CREATE TABLE IF NOT EXISTS regrades (lesson TEXT PRIMARY KEY, id TEXT NOT NULL)")

    def start_regrade(self, lesson: str) -> str:
        """The regrade of this lesson under way (resumed), or a new one."""
        with self.db.writing(WRITING) as db:
            row = db.one("SELECT id FROM regrades WHERE lesson=?", (lesson,))
            if row:
                return str(row[0])
            regrade = uuid.uuid4().hex
            db.execute("INSERT INTO regrades (lesson, id) VALUES (?, ?)", (lesson, regrade))
        return regrade

    def finish_regrade(self, lesson: str) -> None:
        """Every submission was graded again: the next `--regrade` starts a new one."""
        with self.db.writing(WRITING) as db:
            db.execute("DELETE FROM regrades WHERE lesson=?", (lesson,))

    def recorded(self, lesson: str) -> dict[str, dict[str, Any]]:
        """Each student's latest result (in full), for a regrade's seeds."""
        latest: dict[str, dict[str, Any]] = {}
        for data in self.rows(lesson):
            latest[data["student"]] = data
        return latest

    def changed_by(self, lesson: str, regrade: str) -> list[tuple[dict[str, Any], dict[str, Any]]]:
        """(the grade a regrade replaced, the grade it recorded), per student it regraded, by student."""
        pairs = []
        with self.db.transaction() as db:
            for (student, text) in db.all("SELECT student, result_json FROM grades WHERE lesson=? AND regrade=? "
                                          "ORDER BY student", (lesson, regrade)):
                old = db.one("SELECT result_json FROM history WHERE lesson=? AND student=? AND replaced_by=? "
                             f"ORDER BY graded_at DESC, {self.db.order} DESC LIMIT 1", (lesson, student, regrade))
                if old:
                    pairs.append((json.loads(old[0]), json.loads(text)))
        return pairs

    def has(self, lesson: str, student: str, digest: str, regrade: str | None = None) -> bool:
        """Whether this exact submission is already recorded (by the regrade `regrade`, when one is under way);
        a grader failure does not count."""
        row = self._stored((lesson, student, digest), regrade)
        return row is not None and not _retryable(*row)

    def add(self, data: dict[str, Any], digest: str, regrade: str | None = None, text: str | None = None) -> bool:
        """Record a result once; only a grader failure is ever replaced. True if added. `text`: the result's JSON
        as its file already holds it (`record.dumps(data)`), so a batch does not encode it twice.

        In a regrade, the student's earlier rows of this lesson move to the history table first (a grader
        failure of this very regrade is simply replaced), so the row holds the current grade."""
        key = (data.get("lesson") or "", data["student"], digest)
        values = (data["status"], data.get("score"), data.get("max_score"), data.get("graded_at"),
                  dumps(data) if text is None else text)
        with self.db.writing(WRITING) as db:
            if regrade is not None:
                db.execute(f"INSERT INTO history (lesson, student, digest, {_ROW}, replaced_by) SELECT lesson, "
                           f"student, digest, {_ROW}, ? FROM grades WHERE lesson=? AND student=? AND regrade IS "
                           "DISTINCT FROM ?", (regrade,) + key[:2] + (regrade,))
                db.execute("DELETE FROM grades WHERE lesson=? AND student=?", key[:2])
            added = db.execute(f"INSERT INTO grades (lesson, student, digest, {_ROW}, regrade) VALUES (?, ?, ?, ?, ?, "
                               "?, ?, ?, ?) ON CONFLICT DO NOTHING", key + values + (regrade,))
            stored = db.one("SELECT status, result_json FROM grades WHERE lesson=? AND student=? AND digest=?", key) \
                if added != 1 else None
            if stored is not None and _retryable(*stored):
                added = db.execute("UPDATE grades SET status=?, score=?, max_score=?, graded_at=?, result_json=? "
                                   "WHERE lesson=? AND student=? AND digest=?", values + key)
        return added == 1

    def _stored(self, key: tuple[str, str, str], regrade: str | None = None) -> tuple[str, str] | None:
        """(status, result JSON) of the row for (lesson, student, digest) (written by the regrade `regrade`, where
        one is named), if any."""
        query = "SELECT status, result_json FROM grades WHERE lesson=? AND student=? AND digest=?"
        with self.db.transaction() as db:
            row = db.one(query + " AND regrade=?", key + (regrade,)) if regrade is not None else db.one(query, key)
        return (str(row[0]), str(row[1])) if row else None

    def rows(self, lesson: str | None = None) -> Iterator[dict[str, Any]]:
        """Every stored result, oldest first."""
        # Sort the row ids only, then read the results a page at a time: sorting the results themselves made SQLite
        # hold every one of them at once (a class of 1,000 capacity results is about 30 MB of JSON), and a query
        # per row cost PostgreSQL a round trip each.
        order = self.db.order
        query = f"SELECT {order} FROM grades" + (" WHERE lesson=?" if lesson else "") + f" ORDER BY graded_at, {order}"
        with self.db.transaction() as db:
            ids = [rowid for (rowid,) in db.all(query, (lesson,) if lesson else ())]
        for start in range(0, len(ids), PAGE):
            page = ids[start:start + PAGE]
            with self.db.transaction() as db:
                found = dict(db.all(f"SELECT {order}, result_json FROM grades WHERE {order} IN "
                                    f"({', '.join('?' * len(page))})", tuple(page)))
            yield from (json.loads(found[rowid]) for rowid in page if rowid in found)

    def results(self, lesson: str | None = None) -> Iterator[GradeResult]:
        """Every stored result as the typed record (the file edge: readers take these, never the JSON)."""
        return (read_result(data) for data in self.rows(lesson))

    def latest(self, lesson: str | None = None) -> list[dict[str, Any]]:
        """The latest result per (lesson, student), trimmed to what the CSV and dashboard read.

        Trimming keeps the parent's memory flat as the class grows: a full
        result carries every sample and answer, a summary about a kilobyte.
        """
        latest: dict[tuple[str, str], dict[str, Any]] = {}
        for data in self.rows(lesson):
            latest[(data.get("lesson") or "", data["student"])] = row_summary(data)
        return [latest[key] for key in sorted(latest)]

    def update(self, data: dict[str, Any], digest: str, text: str | None = None) -> None:
        """Replace the recorded result of (lesson, student, digest) with the same grade joined with the instructor's
        part (review.py): the row stays where it is, its score and result change. `text`: as in `add`."""
        key = (data.get("lesson") or "", data["student"], digest)
        with self.db.writing(WRITING) as db:
            changed = db.execute("UPDATE grades SET status=?, score=?, max_score=?, result_json=? WHERE lesson=? AND "
                                 "student=? AND digest=?", (data["status"], data.get("score"), data.get("max_score"),
                                                           dumps(data) if text is None else text, *key))
        if changed != 1:
            raise GradebookError(f"no recorded grade of {data['student']!r} for this submission to update")

    def score_of(self, lesson: str, student: str, digest: str,
                 regrade: str | None = None) -> tuple[str, float, float, GradeResult] | None:
        """(status, score, max score, the result) of this exact submission's row (written by the regrade `regrade`,
        where one is named), if it is recorded and not a grader failure (the submission service asks before it
        grades: never twice into one gradebook)."""
        row = self._stored((lesson, student, digest), regrade)
        if row is None or _retryable(*row):
            return None
        result = read_result(json.loads(row[1]))
        return result.status, result.score, result.max_score, result

    def close(self) -> None:
        """Close the database."""
        self.db.close()

    def __enter__(self) -> Gradebook:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


def _retryable(status: str, text: str) -> bool:
    return status == "rejected" and (json.loads(text).get("error") or "").startswith(INTERNAL_ERROR)


UNSUMMARISED = ("measured", "simulated", "cells", "explanations")
"""The parts of a result its summary never reads (the student's values, the run's cells, their words): the bulk of
a stored row, left unread when the gradebook summarises its rows."""


def row_summary(data: dict[str, Any]) -> dict[str, Any]:
    """The summary of a stored row's JSON: read back at this edge, without the parts a summary never reads."""
    return summary(read_result({k: v for k, v in data.items() if k not in UNSUMMARISED}))


def summary(result: GradeResult) -> dict[str, Any]:
    """The fields of a result that the CSV and the dashboard use (a row of plain data, about a kilobyte)."""
    graded = result.status == "graded"
    keep: dict[str, Any] = {"schema": SCHEMA, "status": result.status, "lesson": result.lesson, "student": result.student,
                            "score": result.score, "max_score": result.max_score, "error": result.error,
                            "graded_at": result.graded_at}
    keep["isolated"] = result.sandbox.isolated if graded and result.sandbox is not None else None
    keep["differing_outputs"] = len(result.as_submitted) if graded else 0
    env = result.environment
    keep["host"] = f"{env.get('cpu_model') or '?'} ({env.get('cpu_count') or '?'} cores)" if env else None
    keep["device"] = f"{env.get('jax_backend') or '?'}: {env.get('jax_device_kind') or '?'}" if env else None
    arrived = result.submitted_as
    manual = result.manual if graded else None
    late = manual.late if manual is not None else None  # late by the platform's mark, or by its time against due
    keep.update(name=arrived.name if arrived else "", late=bool(arrived and arrived.late) or bool(late and late.days),
                on_roster=arrived.on_roster if arrived else None, section=arrived.section if arrived else "",
                handout_of=result.handout_of if graded else None)
    # The dashboard reads the first message of an exercise that did not pass, and nothing else of the messages;
    # ids, statuses and kinds repeat in every row, so each is kept once (interned).
    overridden = {o.exercise: o for o in manual.overrides} if manual is not None else {}
    keep["exercises"] = [{"id": _once(e.id), "status": _once(e.status),
                          "score": overridden[e.id].score if e.id in overridden else e.score,
                          "kind": _once(e.kind), "override": overridden[e.id].reason if e.id in overridden else None,
                          "messages": list(e.messages[:1]) if e.status != "passed" else []}
                         for e in result.exercises]
    keep["manual"] = {"written": {w.question: w.points for w in manual.written},
                      "penalty": late.points if late else None, "late_percent": late.percent if late else None,
                      "days_late": late.days if late else None,
                      "before_penalty": manual.before_penalty} if manual is not None else None
    keep["mistakes"] = mistakes.of_result(result.exercises)  # distinct, and few per exercise: the rows stay small
    return keep


def _once(value: Any) -> Any:
    return sys.intern(value) if isinstance(value, str) else value


def write_csv(results: list[dict[str, Any]], exercise_ids: list[str], path: str | Path,
              absent: list[dict[str, Any]] | tuple[()] = (), written_ids: tuple[str, ...] = ()) -> None:
    """One row per student: status, total and one column per exercise (an overridden one with the instructor's
    score); roster students with no submission get a row whose status is `missing`. Where the lesson has written
    questions or a result carries a late penalty, a column per written question (empty until graded) and the
    points the penalty took follow."""
    manual = bool(written_ids) or any((r.get("manual") or {}).get("penalty") for r in results)
    extra = [f"written:{q}" for q in written_ids] + ["late_penalty"] if manual else []
    rows = [["student", "lesson", "status", "score", "max_score", *exercise_ids, *extra, "error", "name", "late"]]
    for data in results:
        scores = {e["id"]: e["score"] for e in data.get("exercises", [])}
        part = data.get("manual") or {}
        points = part.get("written") or {}
        added = [_cell(points.get(q)) for q in written_ids] + [_cell(part.get("penalty"))] if manual else []
        rows.append([data["student"], data.get("lesson") or "", data["status"], data.get("score", 0),
                     data.get("max_score", 0), *[scores.get(i, "") for i in exercise_ids], *added,
                     data.get("error") or "", data.get("name") or "", "late" if data.get("late") else ""])
    for row in absent:
        rows.append([row["student"], row.get("lesson", ""), "missing", "", "", *[""] * (len(exercise_ids) + len(extra)),
                     "no submission", row.get("name", ""), ""])
    files.write_text(path, escape.csv_text(rows))


def _cell(value: Any) -> Any:
    return "" if value is None else value
