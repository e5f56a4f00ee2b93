"""One lesson hosted for a class: what `grader batch` and each lesson host of `grader serve` (and the cluster's path
under either) do alike, written once.

A host holds the lesson, its batch folder and its gradebook connection. It prepares the lesson once where the
grades run here (workers.prepare: the warm template, the prepared lesson; forked workers inherit them), decides
each student's draw and how to run it (`Draws`: the course secret read here, never by a worker), replays a
regrade's recorded seeds (`regrade_started`, `replayed`), records a grade in the one way (how it arrived and the
instructor's decisions joined, then the batch folder; a student's data that cannot be recorded is recorded as
why, never stopping the class), and writes the class's files by the one recipe (review_join.class_files:
grades.csv, changes.csv with names, similarity.html, the dashboard). Who calls it decides only where work comes
from (a class's folder, or the service's queue) and how it is waited on; where grades run is workers.py.
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from grader import grading
from grader.authoring import validate
from grader.base import database
from grader.base.options import Options
from grader.classroom import review_join, review_store, workers
from grader.classroom.batch_folder import BatchFolder, Recorded, digest, entry_digest
from grader.intake import layouts, roster as class_list
from grader.lesson import catalog, course, draw as drawing
from grader.lesson.draw import Draw, Given
from grader.report import finish
from grader.result import gradebook, regrade as regrades, sign
from grader.result.parts import Submitted


class Draws:
    """Each student's draw as a class's parent decides it (a batch's, a service's lesson host), so that its workers
    and a cluster's never read the course secret: read once here, with whether the course grades the lesson per
    student; `given` is what the command line fixes, with the class's template hash seed."""

    def __init__(self, lesson: catalog.Lesson, options: Options, given: drawing.Given) -> None:
        self.lesson, self.options, self.given = lesson, options, given
        self.secret = drawing.course_secret()
        self.per_student = drawing.enabled(lesson.id)

    def of(self, student: str, recorded: dict[str, Any] | None = None) -> tuple[Options, drawing.Draw]:
        """(how to run it, the draw) for one student; `recorded`: their result a regrade replays."""
        options, given = regrades.replayed(self.options, self.given, recorded)
        return options, drawing.decide(self.lesson, student, given, public_only=options.public_only,
                                       secret=self.secret, per_student=self.per_student)


@dataclasses.dataclass(frozen=True)
class Replay:
    """A regrade begun in the gradebook: its id, the recorded results it replays by student, the students whose
    recorded seeds cannot be trusted, and the hash seed most of them were graded with (the class's template's)."""

    regrading: str | None = None
    recorded: dict[str, Any] = dataclasses.field(default_factory=dict)
    untrusted: frozenset[str] = frozenset()
    hash_seed: int | None = None


def regrade_started(lesson: catalog.Lesson, book: gradebook.Gradebook, force: bool) -> Replay:
    """A regrade begun in the gradebook; refused, in one line, where validate.before_regrade objects and it is not
    forced."""
    if not force:
        validate.before_regrade(lesson, book.recorded(lesson.id))
    regrading = book.start_regrade(lesson.id)
    key = sign.signing_key()
    recorded, untrusted = regrades.trusted(book.recorded(lesson.id), key.public_key() if key is not None else None)
    return Replay(regrading, recorded, frozenset(untrusted), regrades.batch_hash_seed(recorded))


def to_grade(found: tuple[layouts.Entry, ...], book: gradebook.Gradebook, lesson_id: str,
            regrading: str | None = None) -> tuple[list[layouts.Entry], list[layouts.Entry], list[str]]:
    """(to grade, to reject: several files or a refused entry, the students recorded already: unchanged, or in a
    regrade, graded by this regrade already)."""
    todo, clashes, skipped = [], [], []
    for entry in found:
        if book.has(lesson_id, entry.student, entry_digest(entry), regrading):
            skipped.append(entry.student)
        elif len(entry.paths) == 1 and not entry.refused:
            todo.append(entry)
        else:
            clashes.append(entry)
    return todo, clashes, skipped


def submitted_as(layout: str, entry: layouts.Entry, members: class_list.Roster | None) -> Submitted:
    """How the submission arrived: the layout, the platform's name and late mark, and the roster's match."""
    member = members.find(entry.student) if members else None
    return Submitted(layout, tuple(p.name for p in entry.paths), (member.name if member else "") or entry.name,
                     entry.late, None if members is None else member is not None, member.section if member else "",
                     entry.submitted_at)


def served(name: str, received_at: str, receipt: tuple[tuple[str, str], ...]) -> Submitted:
    """How a submission the service received arrived: its name, when, and the receipt the student was given."""
    return Submitted("service", (name,), submitted_at=received_at, receipt=receipt)


class LessonHost:
    """One lesson's class: its folder, its gradebook, each student's draw, the record and the class's files."""

    def __init__(self, lesson: catalog.Lesson, out: BatchFolder, book: gradebook.Gradebook, options: Options,
                 given: Given, grades_here: bool) -> None:
        self.lesson, self.out, self.book = lesson, out, book
        self.draws = Draws(lesson, options, given)
        self.signing = sign.signing_key() is not None  # read now: a bad key stops the class before any grade
        self.replaying: tuple[str | None, dict[str, dict[str, Any]]] = (None, {})
        if grades_here:
            workers.prepare(lesson, options, given.hash_seed or 0)

    @classmethod
    def serving(cls, lesson_id: str, out: BatchFolder, options: Options, jobs: int, given: Given,
                grades_here: bool) -> LessonHost:
        """A lesson host of the service: the lesson looked up, the folder's gradebook opened, the template's hash
        seed decided for the lesson as a batch's is."""
        lesson = catalog.get(lesson_id)
        given = dataclasses.replace(given, hash_seed=drawing.batch_hash_seed_for(lesson.id, given.hash_seed))
        return cls(lesson, out, out.open_gradebook(), dataclasses.replace(options, jobs_at_once=jobs), given,
                   grades_here)

    def drawn(self, student: str, recorded: dict[str, Any] | None = None) -> tuple[Options, Draw]:
        """How to run one student's grade and their draw (`recorded`: their result a regrade replays)."""
        return self.draws.of(student, recorded)

    def record(self, student: str, path: Path, graded: finish.Graded, arrived: Submitted, regrade: str | None,
               members: class_list.Roster | None = None, store: review_store.Store | None = None) -> Recorded:
        """A grade recorded: how it arrived and the instructor's decisions joined, then the batch folder (the course
        key read for this record and dropped, never held while workers fork)."""
        graded = dataclasses.replace(graded, result=dataclasses.replace(graded.result, submitted_as=arrived))
        joined = review_join.graded(graded, self.lesson, review_join.decisions(store, self.lesson, student, members))
        key = sign.signing_key()
        try:
            return self.out.store(self.book, student, path, joined, key, regrade, self.lesson)
        except (OSError, ValueError, TypeError) + database.errors() as err:
            if isinstance(err, OSError) and err.errno in (errno.ENOSPC, errno.EDQUOT, errno.EROFS):
                raise  # the grader's disk, not the student: stop with the reason
            named = student.encode("utf-8", "backslashreplace").decode("utf-8")
            reason = f"the result could not be recorded ({type(err).__name__}: {str(err)[:160]})"
            safe = dataclasses.replace(grading.rejected(path, reason, joined.result.lesson, named),
                                       digest=joined.result.digest or digest(path), submitted_as=arrived)
            return self.out.store(self.book, named, path, finish.Graded(safe), key, regrade, self.lesson)

    def replayed(self, regrade: str) -> dict[str, dict[str, Any]]:
        """The results a regrade under way replays, by student (read once per regrade; a seed whose signature fails
        is not replayed)."""
        if self.replaying[0] != regrade:
            key = sign.signing_key()
            trusted, _ = regrades.trusted(self.book.recorded(self.lesson.id),
                                          key.public_key() if key is not None else None)
            self.replaying = (regrade, trusted)
        return self.replaying[1]

    @contextlib.contextmanager
    def decisions(self) -> Iterator[review_store.Store | None]:
        """The instructor's review decisions (None where there are none yet), open while grades are recorded."""
        store = self.out.decisions_made()
        try:
            yield store
        finally:
            review_store.close(store)

    def rejected(self, path: Path, reason: str, student: str, **fields: Any) -> finish.Graded:
        """The result of a submission refused before any grade (several files, an entry refused), with `fields`."""
        return finish.Graded(dataclasses.replace(grading.rejected(path, reason, self.lesson.id, student), **fields))

    def kept_roster(self) -> class_list.Roster | None:
        """The roster kept beside the gradebook, if the class was given one."""
        return review_join.members_of(self.out)

    @property
    def sends_grades(self) -> bool:
        """Whether the course sends this lesson's grades back to its LMS."""
        return course.current().policy(self.lesson.id).submissions.send_grades

    def moved(self, unchanged: list[str], store: review_store.Store | None,
              members: class_list.Roster | None) -> list[str]:
        """Recorded grades that a changed policy, due date, extension or decision moves, joined again (no kernel)."""
        return review_join.moved(self.out, self.lesson, unchanged, store, members or self.kept_roster(), self.book)

    def class_files(self, members: class_list.Roster | None, moved: Any = None) -> None:
        """grades.csv, changes.csv (with names; a regrade's `moved`), similarity.html and the dashboard."""
        review_join.class_files(self.out, self.lesson, self.book, members, moved)

    def class_done(self, members: class_list.Roster | None, regrading: str | None, complete: bool) -> ClassDone:
        """The class's files from the gradebook's latest rows, and what a summary says of them; a regrade that
        `complete`d with no grader failure left to retry is finished in the gradebook."""
        latest = self.book.latest(self.lesson.id)
        unsigned = sorted(s for s, data in self.book.recorded(self.lesson.id).items()
                          if not data.get(sign.SIGNATURE)) if self.signing else []  # only said with a key
        moved = regrades.changes(self.book.changed_by(self.lesson.id, regrading)) if regrading else None
        self.class_files(members, moved)
        if moved is not None and complete:
            self.book.finish_regrade(self.lesson.id)
        return ClassDone(review_join.absent(members, latest, self.lesson.id), unsigned,
                         None if moved is None else [change.line() for change in moved])


@dataclasses.dataclass(frozen=True)
class ClassDone:
    """A class's files written: the roster's students with no submission, the results recorded unsigned, and the
    grades a regrade changed (one line each; None without a regrade)."""

    absent: list[dict[str, Any]]
    unsigned: list[str]
    changed: list[str] | None
