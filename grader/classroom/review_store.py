"""The instructor's decisions for a batch, kept in `OUT/review.sqlite` (or in the PostgreSQL database a served
course keeps its gradebook in): written answers by rubric, overrides, and rubric items' points changed after the
fact.

Each decision is one transaction, saved as it is made, with who made it and
when; every change is also appended to a log that is never rewritten. Writers
take turns (SQLite's write lock, or an advisory lock on PostgreSQL), so two
graders (two browsers, two servers, or the page and an import) may decide at
once: a decision carries the version of the answer its page showed
(the log's row of the answer's latest decision), and one made against an
answer someone decided since is refused with who and when; both pages learn
of every decision from the log (`changes`). A rerun or a regrade of the batch reads these decisions again, so the
manual part of a grade is never lost to the autograder.
"""

from __future__ import annotations

import datetime as _dt
import json
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from grader.base import database
from grader.base.errors import GraderError
from grader.lesson.catalog import Lesson
from grader.result.manual import Decisions, Override, WrittenGrade

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS written (lesson TEXT, student TEXT, question TEXT, items TEXT, points DOUBLE PRECISION, "
    "comment TEXT, grader TEXT, at TEXT, PRIMARY KEY (lesson, student, question))",
    "CREATE TABLE IF NOT EXISTS overrides (lesson TEXT, student TEXT, exercise TEXT, score DOUBLE PRECISION, reason "
    "TEXT, grader TEXT, at TEXT, PRIMARY KEY (lesson, student, exercise))",
    "CREATE TABLE IF NOT EXISTS item_points (lesson TEXT, question TEXT, item TEXT, points DOUBLE PRECISION, grader "
    "TEXT, at TEXT, PRIMARY KEY (lesson, question, item))",
    "CREATE TABLE IF NOT EXISTS log (at TEXT, grader TEXT, lesson TEXT, student TEXT, what TEXT, detail TEXT{serial})",
    "CREATE TABLE IF NOT EXISTS second (lesson TEXT, student TEXT, question TEXT, items TEXT, points DOUBLE PRECISION, "
    "comment TEXT, grader TEXT, at TEXT, PRIMARY KEY (lesson, student, question))",
)
WRITING = 0x67727276  # "grrv": the advisory lock the decisions' writers take on PostgreSQL


def now() -> str:
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")


class Stale(GraderError):
    """A decision made against an answer someone else decided since the page showed it (one line: who, when)."""


class Store:
    """One batch's decisions; open with `BatchFolder.open_decisions()` (a SQLite path or a `postgresql://` address),
    close with `close()` (or use it in a `with`)."""

    def __init__(self, where: str | Path) -> None:
        path = Path(where)
        if not database.is_address(where) and (path.is_symlink() or (path.exists() and not path.is_file())):
            raise GraderError(f"{path} is not a plain file; the review's decisions are kept nowhere else")
        self.db = database.Database(where, "review's database")
        try:
            with self.db.schema() as db:
                for table in _SCHEMA:
                    db.execute(table.format(serial=self.db.serial_column))
                if "grouping" not in self.db.columns(db, "written"):
                    db.execute("ALTER TABLE written ADD COLUMN grouping TEXT")  # a store of an earlier version
        except database.errors() as err:
            self.db.close()
            raise GraderError(f"{where} is not the review's database ({err})") from None
        self.row = self.db.order

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.db.close()

    @contextmanager
    def _writing(self) -> Iterator[database.Cursor]:
        with self.db.writing(WRITING) as db:
            yield db

    def _all(self, sql: str, params: tuple[Any, ...]) -> list[Any]:
        with self.db.transaction() as db:
            return db.all(sql, params)

    def decide(self, lesson: str, students: Iterable[str], decision: WrittenGrade,
               seen: dict[str, int] | None = None) -> dict[str, int]:
        """One decision on a written question, for one student or a group, in one transaction; returns each
        answer's new version. `seen`: the versions the grader's page showed (0: no decision); an answer decided
        by anyone since is refused (Stale), and nothing of the decision is saved."""
        students = list(students)
        with self._writing() as db:
            self._fresh(db, lesson, students, decision.question, seen)
            for student in students:
                grouping = json.dumps({"kind": decision.grouping, "with": [s for s in students if s != student]}) \
                    if decision.grouping else None
                _put(db, "written", ("lesson", "student", "question"), ("items", "points", "comment", "grader", "at",
                                                                         "grouping"),
                     (lesson, student, decision.question, json.dumps(list(decision.items)), decision.points,
                      decision.comment, decision.grader, decision.at, grouping))
                self._log(db, decision.grader, decision.at, lesson, student, f"written {decision.question}",
                          {"items": list(decision.items), "points": decision.points, "comment": decision.comment})
            return {student: self._version(db, lesson, student, decision.question) for student in students}

    def decide_second(self, lesson: str, student: str, decision: WrittenGrade) -> None:
        """A second, blind decision on a sampled answer: kept apart, never joined into the grade."""
        with self._writing() as db:
            _put(db, "second", ("lesson", "student", "question"), ("items", "points", "comment", "grader", "at"),
                 (lesson, student, decision.question, json.dumps(list(decision.items)), decision.points,
                  decision.comment, decision.grader, decision.at))
            self._log(db, decision.grader, decision.at, lesson, student, f"second {decision.question}",
                      {"items": list(decision.items), "points": decision.points})

    def second(self, lesson: str) -> dict[tuple[str, str], WrittenGrade]:
        """Every second decision: (student, question) -> decision."""
        rows = self._all("SELECT student, question, items, points, comment, grader, at FROM second WHERE lesson=?",
                         (lesson,))
        return {(student, question): WrittenGrade(question, tuple(json.loads(items)), points, 0.0, comment, grader, at)
                for student, question, items, points, comment, grader, at in rows}

    def version(self, lesson: str, student: str, question: str) -> int:
        """An answer's version: the log's row of its latest decision or clearing (0: never decided)."""
        with self.db.transaction() as db:
            return self._version(db, lesson, student, question)

    def _version(self, db: database.Cursor, lesson: str, student: str, question: str) -> int:
        row = db.one(f"SELECT MAX({self.row}) FROM log WHERE lesson=? AND student=? AND what IN (?, ?)",
                     (lesson, student, f"written {question}", f"cleared {question}"))
        return int(row[0] or 0)

    def versions(self, lesson: str) -> dict[tuple[str, str], int]:
        """Every decided answer's version: (student, question) -> the log's row (see `version`)."""
        found: dict[tuple[str, str], int] = {}
        for student, what, row in self._all(
                f"SELECT student, what, MAX({self.row}) FROM log WHERE lesson=? AND (what LIKE 'written %' OR what "
                "LIKE 'cleared %') GROUP BY student, what", (lesson,)):
            key = (student, what.split(" ", 1)[1])
            found[key] = max(found.get(key, 0), int(row))
        return found

    def _fresh(self, db: database.Cursor, lesson: str, students: list[str], question: str,
               seen: dict[str, int] | None) -> None:
        for student in students if seen is not None else ():
            version = self._version(db, lesson, student, question)
            if version != int((seen or {}).get(student) or 0):
                at, grader = db.one(f"SELECT at, grader FROM log WHERE {self.row}=?", (version,))
                when = at[11:16] if len(at) >= 16 else at
                raise Stale(f"{grader or 'someone'} changed {student}'s answer at {when} (UTC) since your page "
                            "showed it: reload")

    def changes(self, lesson: str, since: int, kind: str = "written") -> tuple[int, list[tuple[str, str]]]:
        """(the log's latest row, the (student, question) of each written answer decided or cleared after `since`;
        `kind` "second": a blind second grading's decisions instead, and only those)."""
        rows = self._all(f"SELECT {self.row}, student, what FROM log WHERE lesson=? AND {self.row} > ? ORDER BY "
                         f"{self.row}", (lesson, since))
        kinds = ("second ",) if kind == "second" else ("written ", "cleared ")
        changed = [(student, what.split(" ", 1)[1]) for _, student, what in rows if what.startswith(kinds)]
        return max(self.latest(), since), list(dict.fromkeys(changed))

    def latest(self) -> int:
        """The log's latest row (0 when empty): a page asks for the changes after it."""
        return int(self._all(f"SELECT MAX({self.row}) FROM log", ())[0][0] or 0)

    def clear(self, lesson: str, students: Iterable[str], question: str, grader: str,
              seen: dict[str, int] | None = None) -> None:
        """Take a decision back: the answer is ungraded again (the log keeps what it was); `seen` as for decide."""
        at = now()
        students = list(students)
        with self._writing() as db:
            self._fresh(db, lesson, students, question, seen)
            for student in students:
                db.execute("DELETE FROM written WHERE lesson=? AND student=? AND question=?", (lesson, student, question))
                self._log(db, grader, at, lesson, student, f"cleared {question}", {})

    def override(self, lesson: str, student: str, override: Override | None, exercise: str, grader: str) -> None:
        """An exercise's score set by hand with a reason (None: back to the autograder's)."""
        with self._writing() as db:
            if override is None:
                db.execute("DELETE FROM overrides WHERE lesson=? AND student=? AND exercise=?",
                           (lesson, student, exercise))
                self._log(db, grader, now(), lesson, student, f"override {exercise} removed", {})
                return
            _put(db, "overrides", ("lesson", "student", "exercise"), ("score", "reason", "grader", "at"),
                 (lesson, student, exercise, override.score, override.reason, override.grader, override.at))
            self._log(db, override.grader, override.at, lesson, student, f"override {exercise}",
                      {"score": override.score, "reason": override.reason})

    def set_item_points(self, lesson: str, question: str, item: str, points: float, grader: str) -> list[str]:
        """A rubric item's points changed: returns the students whose answers used it (to be rescored)."""
        at = now()
        with self._writing() as db:
            _put(db, "item_points", ("lesson", "question", "item"), ("points", "grader", "at"),
                 (lesson, question, item, points, grader, at))
            self._log(db, grader, at, lesson, "", f"item {question}/{item}", {"points": points})
        rows = self._all("SELECT student, items FROM written WHERE lesson=? AND question=?", (lesson, question))
        return sorted(student for student, items in rows if item in json.loads(items))

    def item_points(self, lesson: str) -> dict[tuple[str, str], float]:
        rows = self._all("SELECT question, item, points FROM item_points WHERE lesson=?", (lesson,))
        return {(question, item): float(points) for question, item, points in rows}

    def written(self, lesson: str) -> dict[tuple[str, str], WrittenGrade]:
        """Every decision on a written answer: (student, question) -> decision."""
        rows = self._all("SELECT student, question, items, points, comment, grader, at, grouping FROM written "
                         "WHERE lesson=?", (lesson,))
        found = {}
        for student, question, items, points, comment, grader, at, grouping in rows:
            group = json.loads(grouping) if grouping else {}
            found[(student, question)] = WrittenGrade(question, tuple(json.loads(items)), points, 0.0, comment, grader,
                                                      at, str(group.get("kind") or ""), tuple(group.get("with") or ()))
        return found

    def decisions(self, lesson: Lesson, student: str, extension_days: float = 0.0) -> Decisions:
        """What was decided for one student, ready to join with their result (joining.joined)."""
        written = {q: d for (s, q), d in self.written(lesson.id).items() if s == student}
        rows = self._all("SELECT exercise, score, reason, grader, at FROM overrides WHERE lesson=? AND student=?",
                         (lesson.id, student))
        overrides = {exercise: Override(exercise, float(score), reason, grader, at)
                     for exercise, score, reason, grader, at in rows}
        return Decisions(written, overrides, self.item_points(lesson.id), extension_days)

    def log(self, lesson: str) -> list[tuple[str, str, str, str, str]]:
        """Every change, oldest first: (when, who, student, what, detail)."""
        return [tuple(row) for row in self._all(f"SELECT at, grader, student, what, detail FROM log WHERE lesson=? "
                                                f"ORDER BY {self.row}", (lesson,))]

    @staticmethod
    def _log(db: database.Cursor, grader: str, at: str, lesson: str, student: str, what: str,
             detail: dict[str, object]) -> None:
        db.execute("INSERT INTO log (at, grader, lesson, student, what, detail) VALUES (?, ?, ?, ?, ?, ?)",
                   (at, grader, lesson, student, what, json.dumps(detail)))


def _put(db: database.Cursor, table: str, key: tuple[str, ...], rest: tuple[str, ...], values: tuple[Any, ...]) -> None:
    """A row of `table` written whole, replacing the one with the same key (both databases' upsert)."""
    names = key + rest
    db.execute(f"INSERT INTO {table} ({', '.join(names)}) VALUES ({', '.join('?' * len(names))}) ON CONFLICT "
               f"({', '.join(key)}) DO UPDATE SET {', '.join(f'{n}=excluded.{n}' for n in rest)}", values)


def close(store: Store | None) -> None:
    if store is not None:
        store.close()
