"""Grading what students wrote, across a batch: answers by question, grouped, decided by rubric; overrides; the
spreadsheet path in and out. The page (review_app.py) and `grader review --export/--import` both use this.

The spreadsheet: `--export FILE` writes one row per student and written question
(`student,question,points,max_points,rubric,comment,grader`), and `--import FILE` takes it back: every row is
checked first (one bad row is refused in one line naming it, and nothing changes), and what the export
neutralised for a spreadsheet (a cell that starts like a formula) comes back as it was written.

Answers are read once from the batch's results (the student's written cells, as
recorded) and grouped: blank answers and answers left as the handout's prompt
in one group, identical answers (by their words, ignoring case and spacing) in
another, so one decision grades a group. Every decision is saved at once
(review_store.py) and joined into that student's grade (review_join.py).
"""

from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from grader.base import escape, files, spelling
from grader.base.errors import GraderError
from grader.classroom import review_join, review_store
from grader.classroom.batch_folder import BatchFolder
from grader.judge import agreement, answer_groups
from grader.lesson import catalog, course
from grader.lesson.written import Question
from grader.result import gradebook, joining
from grader.result.manual import Override, WrittenGrade
from grader.result.parts import Explanation


@dataclass
class Answer:
    """One student's answer to one written question, as the page shows it."""

    student: str
    name: str
    text: str
    untouched: bool
    decision: WrittenGrade | None = None

    @property
    def blank(self) -> bool:
        return self.untouched or not self.text.strip()


@dataclass
class Group:
    """Answers that one decision grades together."""

    key: str
    label: str
    answers: list[Answer] = field(default_factory=list)


class Review:
    """One batch folder under review: its lesson, its students' written answers and the decisions so far."""

    def __init__(self, out: Path, grader: str = "", second: bool = False) -> None:
        self.folder = BatchFolder(Path(out))
        self.second = second
        """A second, blind grading of the course's sample (judge/agreement.py): the first decisions hidden, each
        answer alone, nothing joined into a grade."""
        self.out = self.folder.root
        if not self.folder.is_batch():
            raise GraderError(f"{self.out} holds no gradebook: run `grader batch ... --out {self.out}` first")
        self.book = self.folder.open_gradebook()
        rows = self.book.latest()
        ids = sorted({row.get("lesson") or "" for row in rows} - {""})
        if len(ids) != 1:
            self.book.close()
            raise GraderError(f"{self.out}: a review needs the results of one lesson (found {', '.join(ids) or 'none'})")
        self.lesson = catalog.get(ids[0])
        self.grader = grader
        try:
            self.store = self.folder.open_decisions()
        except GraderError:
            self.book.close()
            raise
        self.members = review_join.members_of(self.folder)
        self.graded = {row["student"]: row for row in rows if row.get("status") == "graded"}
        if second:
            percent = course.current().policy(self.lesson.id).double_percent
            self.graded = {s: row for s, row in self.graded.items() if agreement.sampled(self.lesson.id, s, percent)}
            if not self.graded:
                self.close()
                raise GraderError(f"no answer of {self.lesson.id} is sampled to be graded twice: set [lessons."
                                  f"{self.lesson.id}.review] double_percent in course.toml (now {percent:g})")
        self.answers = self._read_answers()

    def close(self) -> None:
        self.store.close()
        self.book.close()

    def question(self, cell: str) -> Question:
        found = next((q for q in self.lesson.written if q.cell == cell), None)
        if found is None:
            raise GraderError(f"lesson {self.lesson.id} has no written question {cell!r} "
                              f"(its questions: {', '.join(q.cell for q in self.lesson.written) or 'none'})")
        return found

    def _read_answers(self) -> dict[str, dict[str, Answer]]:
        """question -> student -> answer, from each graded student's recorded result."""
        decided = self.decided()
        found: dict[str, dict[str, Answer]] = {q.cell: {} for q in self.lesson.written}
        for student, row in self.graded.items():
            said = {e.cell_id: e for e in self._explanations(student)}
            for cell in found:
                entry = said.get(cell)
                found[cell][student] = Answer(student, str(row.get("name") or ""), entry.text if entry else "",
                                              entry.untouched if entry else True, decided.get((student, cell)))
        return found

    def _explanations(self, student: str) -> tuple[Explanation, ...]:
        """What a student wrote, from their recorded result (nothing when it cannot be read back)."""
        try:
            return self.folder.recorded(student, self.lesson.id)[0].explanations
        except GraderError:
            return ()

    def groups(self, cell: str, threshold: float = answer_groups.THRESHOLD) -> list[Group]:
        """The answers to one question in groups: blank or untouched first, then identical and similar ones
        (judge/answer_groups.py, at this similarity threshold), then the rest."""
        self.question(cell)
        answers = sorted(self.answers[cell].values(), key=lambda a: a.student)
        if self.second:  # a second grading judges each answer on its own
            return [Group("", "answer", [a]) for a in answers]
        found = answer_groups.group([a.text for a in answers], [a.blank for a in answers], threshold)
        labels = {"blank": "blank or left as the handout's prompt", "identical": "identical answers",
                  "similar": f"similar answers (at {threshold:g})", "single": "answer"}
        keys = {"blank": "blank", "identical": "identical", "similar": f"similar at {threshold:g}", "single": ""}
        return [Group(keys[kind], labels[kind], [answers[i] for i in members])
                for members, kind in zip(found.groups, found.kinds, strict=True)]

    def decided(self) -> dict[tuple[str, str], WrittenGrade]:
        """The decisions this review shows: the grades' (first) ones, or a blind second grading's own."""
        return self.store.second(self.lesson.id) if self.second else self.store.written(self.lesson.id)

    def reread(self) -> None:
        """The decisions as the store holds them now (another grader's too: two pages may grade at once); a second
        grading's own, never the first's."""
        decided = self.decided()
        for cell, answers in self.answers.items():
            for student, answer in answers.items():
                answer.decision = decided.get((student, cell))

    def progress(self) -> dict[str, tuple[int, int]]:
        """Per question: (answers graded, answers), of the class: a student the roster leaves out (a platform's test
        student) can be graded, and is not counted."""
        counted = {s for s, row in self.graded.items() if row.get("on_roster") is not False}
        return {cell: (sum(a.decision is not None for s, a in answers.items() if s in counted),
                       sum(1 for s in answers if s in counted)) for cell, answers in self.answers.items()}

    def decide(self, cell: str, students: list[str], items: list[str], comment: str = "",
               points: float | None = None, grader: str | None = None, seen: dict[str, int] | None = None,
               grouping: str = "") -> float:
        """Grade one answer or a group: rubric items (or points outright); saved, then joined into each grade.
        Returns the points each of them now has for this question. `seen`: the answers' versions the page showed
        (review_store.Store.decide refuses a decision on an answer someone decided since)."""
        question = self.question(cell)
        unknown = [s for s in students if s not in self.answers[cell]]
        if not students or unknown:
            raise GraderError(f"no graded result for student {unknown[0]!r}" if unknown else "no student named")
        bad = [i for i in items if question.item(i) is None]
        if bad:
            raise GraderError(f"question {cell!r} has no rubric item {bad[0]!r} "
                              f"(its items: {', '.join(i.id for i in question.rubric)})")
        if points is not None and not 0 <= points <= question.points:
            raise GraderError(f"{spelling.score(points)} points is outside question {cell!r}'s range 0 to "
                              f"{spelling.score(question.points)}")
        decision = WrittenGrade(cell, tuple(dict.fromkeys(items)), None if items else points, question.points,
                                _plain(comment, 4000), _plain(grader or self.grader, 200), review_store.now(),
                                _plain(grouping, 60) if len(students) > 1 else "")
        if self.second:
            for student in students:
                self.store.decide_second(self.lesson.id, student, decision)
                self.answers[cell][student].decision = decision
            return joining.written_points(self.lesson, decision, self.store.item_points(self.lesson.id))
        self.store.decide(self.lesson.id, students, decision, seen)
        for student in students:
            self.answers[cell][student].decision = decision
            self._join(student)
        return joining.written_points(self.lesson, decision, self.store.item_points(self.lesson.id))

    def clear(self, cell: str, students: list[str], seen: dict[str, int] | None = None) -> None:
        self.question(cell)
        if self.second:
            raise GraderError("a second grading is changed by deciding again, not cleared")
        self.store.clear(self.lesson.id, students, cell, self.grader, seen)
        for student in students:
            if student in self.answers[cell]:
                self.answers[cell][student].decision = None
                self._join(student)

    def set_item_points(self, cell: str, item: str, points: float) -> list[str]:
        """Change a rubric item's points: every answer that used it is rescored. Returns those students."""
        question = self.question(cell)
        if question.item(item) is None:
            raise GraderError(f"question {cell!r} has no rubric item {item!r}")
        if not -question.points <= points <= question.points:
            raise GraderError(f"an item of question {cell!r} may be worth {spelling.score(-question.points)} to "
                              f"{spelling.score(question.points)}")
        students = self.store.set_item_points(self.lesson.id, cell, item, points, self.grader)
        for student in students:
            self._join(student)
        return students

    def override(self, student: str, exercise: str, score: float | None, reason: str) -> None:
        """Set an exercise's score by hand, with a reason (None: give it back to the autograder). The student is
        named by the id the batch graded, or any id the roster gives them (a login, an SIS id)."""
        student = self.graded_id(student)
        found = next((ex for ex in self.lesson.exercises if ex.id == exercise), None)
        if found is None:
            raise GraderError(f"lesson {self.lesson.id} has no exercise {exercise!r}")
        if score is not None and not 0 <= score <= found.points:
            raise GraderError(f"{spelling.score(score)} is outside exercise {exercise!r}'s range 0 to {spelling.score(found.points)}")
        if score is not None and not reason.strip():
            raise GraderError("an override needs a reason (--reason), and the report shows it")
        made = (Override(exercise, score, _plain(reason.strip(), 1000), _plain(self.grader, 200), review_store.now())
                if score is not None else None)
        self.store.override(self.lesson.id, student, made, exercise, self.grader)
        self._join(student)

    def graded_id(self, named: str) -> str:
        """The graded student a name stands for: the id itself, or the roster member whose login or SIS id it is."""
        if named in self.graded:
            return named
        member = self.members.find(named) if self.members else None
        if member is not None and member.student in self.graded:
            return member.student
        known = ", ".join(sorted(self.graded)[:12]) + (" ..." if len(self.graded) > 12 else "")
        raise GraderError(f"no graded result for student {named[:60]!r} (graded: {known}; a roster's login or SIS id "
                          "names its student too)")

    def _join(self, student: str) -> None:
        joined = review_join.student(self.folder, self.lesson, student, self.store, self.members, self.book)
        self.graded[student] = gradebook.summary(joined)

    def agreement(self) -> agreement.Agreement | None:
        """The graders' agreement on the answers graded twice (None before any second decision)."""
        second = self.store.second(self.lesson.id)
        if not second:
            return None
        points = self.store.item_points(self.lesson.id)
        return agreement.measure(self.lesson.written, self.store.written(self.lesson.id), second,
                                 lambda d: joining.written_points(self.lesson, d, points))

    def refresh(self) -> None:
        """grades.csv and the dashboard, as the decisions now stand; the graders' agreement beside them."""
        found = self.agreement()
        if found is not None:
            files.write_text(self.folder.agreement, json.dumps(found.to_dict(), indent=1) + "\n")
        review_join.class_files(self.folder, self.lesson, self.book, self.members, agreement=found)

# ---- the spreadsheet path: `grader review OUT --export FILE` and `--import FILE` ----

CSV_COLUMNS = ("student", "name", "question", "answer", "points", "max_points", "rubric", "comment", "grader")
NEEDED = ("student", "question", "points", "rubric", "comment")
"""What an import reads; the rest (name, answer, max_points, grader) are there to grade from, and may be absent."""
MAX_CSV_BYTES = 32 * 1024**2


def export_csv(review: Review, path: Path) -> int:
    """One row per student and written question, with their name and their answer to grade from."""
    rows: list[list[Any]] = [list(CSV_COLUMNS)]
    item_points = review.store.item_points(review.lesson.id)
    for question in review.lesson.written:
        for student, answer in sorted(review.answers[question.cell].items()):
            d = answer.decision
            rows.append([student, answer.name, question.cell, "" if answer.blank else answer.text[:30000],
                         "" if d is None else joining.written_points(review.lesson, d, item_points), question.points,
                         ";".join(d.items) if d else "", d.comment if d else "", d.grader if d else ""])
    files.write_text(path, escape.csv_text(rows))
    return len(rows) - 1


@dataclass(frozen=True)
class Imported:
    """What an import did."""

    applied: int
    unchanged: int
    blank: int

    def line(self, path: Path) -> str:
        return (f"{self.applied} decisions taken from {path}; {self.unchanged} rows changed nothing; {self.blank} rows "
                "without points or rubric items left ungraded")


def import_csv(review: Review, path: Path) -> Imported:
    """Decisions from a filled export (points from the rubric items where given, else the points column), made by
    whoever imports (`--grader`). Every row is checked first: one bad row is refused in one line naming it, and
    nothing changes; a row with neither points nor items stays ungraded, and one that says what is decided already
    is not applied again."""
    planned, blank = [], 0
    for number, row in _rows(path):
        if not row["rubric"].strip() and not row["points"].strip():
            blank += 1
            continue
        planned.append(_planned(review, number, row))
    todo = [p for p in planned if not _same(review, *p)]
    for cell, student, items, points, comment in todo:
        review.decide(cell, [student], items, comment, points)
    return Imported(len(todo), len(planned) - len(todo), blank)


def _same(review: Review, cell: str, student: str, items: list[str], points: float | None, comment: str) -> bool:
    d = review.answers[cell][student].decision
    return d is not None and list(d.items) == items and d.points == (None if items else points) and \
        d.comment == _plain(comment, 4000)


def _planned(review: Review, number: int, row: dict[str, str]) -> tuple[str, str, list[str], float | None, str]:
    where = f"row {number}"
    cell, student = row["question"].strip(), row["student"].strip()
    question = next((q for q in review.lesson.written if q.cell == cell), None)
    if question is None:
        raise GraderError(f"{where}: no written question {cell[:60]!r} in lesson {review.lesson.id}")
    if student not in review.answers[cell]:
        raise GraderError(f"{where}: no graded result for student {student[:60]!r}")
    items = [i.strip() for i in row["rubric"].split(";") if i.strip()]
    bad = [i for i in items if question.item(i) is None]
    if bad:
        raise GraderError(f"{where}: question {cell!r} has no rubric item {bad[0][:60]!r}")
    points = None
    if not items:
        try:
            points = float(row["points"])
        except ValueError:
            raise GraderError(f"{where}: points {row['points'][:40]!r} is not a number") from None
        if not 0 <= points <= question.points:
            raise GraderError(f"{where}: {spelling.score(points)} points is outside question {cell!r}'s range 0 to "
                              f"{spelling.score(question.points)}")
    return cell, student, items, points, row["comment"]


def _rows(path: Path) -> list[tuple[int, dict[str, str]]]:
    """The import's rows (numbered as a spreadsheet numbers them), or one line saying why the file is not one."""
    try:
        text = files.read_regular(path, MAX_CSV_BYTES).decode("utf-8-sig")
    except (OSError, UnicodeDecodeError) as err:
        raise GraderError(f"{path}: cannot be read as a UTF-8 CSV ({type(err).__name__})") from None
    if len(text) > MAX_CSV_BYTES:
        raise GraderError(f"{path}: over {MAX_CSV_BYTES >> 20} MiB; not a review export")
    reader = csv.DictReader(io.StringIO(text))
    missing = [c for c in NEEDED if c not in (reader.fieldnames or [])]
    if missing:
        raise GraderError(f"{path}: no column {missing[0]!r} (an export's columns: {','.join(CSV_COLUMNS)})")
    rows = []
    for number, row in enumerate(reader, start=2):
        rows.append((number, {k: escape.csv_uncell(str(row.get(k) or "")) for k in CSV_COLUMNS}))
    return rows


def _plain(text: str, limit: int) -> str:
    """A grader's words as they will be shown everywhere (reports, CSV, a platform's comments, a terminal): control
    characters made visible text, never obeyed, and a bounded length."""
    return escape.terminal(text[:limit])
