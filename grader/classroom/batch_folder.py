"""The batch folder, as a noun: the one owner of its layout and of the one write that records a student.

A batch folder is what `grader batch` fills and what `review`, `similarity`,
the exports, portfolios, `regrade` and the submission service read and
update:

    results/<student>.json      the signed result (the record edge: JSON from here on)
    reports/<student>.html .md  the student's evidence report
    notebooks/<student>.ipynb   the freshly executed notebook
    gradebook.sqlite            every grade, its history and the regrades (or, for a course served from
    gradebook.address             PostgreSQL, where they are: no SQLite file in a folder several hosts share)
    grades.csv  changes.csv     the class's grades; who a regrade moved
    index.html  similarity.html the dashboard; similar submissions
    roster.csv  course.json     the roster a batch was given; the course that grades the folder
    review.sqlite               the instructor's decisions on written answers (in the gradebook's database
                                  where that is PostgreSQL)
    agreement.json              how far two graders agreed on the answers graded twice
    unpacked/   profile.json    a zip's safe unpacking; a profiled batch's phases
    received/<sha256>/<name>    the submission service's received files, by digest

Only this module spells those names (tests/test_house.py refuses them
elsewhere). Recording a student is one method, `record`, used by a batch, a
regrade, the review's re-joins and the service alike: the notebook, then the
reports, then the signed result, then the gradebook row, in that order, so a
crash leaves a result the gradebook can be rebuilt from, never a row without
its files.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from grader.base import database, files
from grader.base.errors import GraderError
from grader.classroom.review_store import Store
from grader.intake import layouts
from grader.lesson import catalog, course
from grader.report import finish
from grader.result import record, sign
from grader.result.gradebook import Gradebook
from grader.result.record import GradeResult

MAX_RESULT_BYTES = 64 * 1024**2
"""The largest result read back (a result holds its run's evidence, never this much)."""


def digest(path: Path) -> str:
    """SHA-256 of a submitted file, as load.read computes it (never through a link; "" for what cannot be read)."""
    try:
        return hashlib.sha256(files.read_regular(path)).hexdigest()
    except OSError:
        return ""


def entry_digest(entry: layouts.Entry) -> str:
    """The gradebook's key for what a student handed in: a digest of its file (or files), or of why none was read."""
    if entry.refused:
        return hashlib.sha256(entry.refused.encode("utf-8", "backslashreplace")).hexdigest()
    if len(entry.paths) == 1:
        return digest(entry.paths[0])
    return hashlib.sha256("".join(digest(p) for p in sorted(entry.paths)).encode()).hexdigest()  # several files


def _leaves_folder(student: str) -> bool:
    """Whether a student id would name a file outside its folder, or none (the edges' rule, layouts.checked_id, is
    stricter: a name from a zip may keep a backslash, shown for a control character)."""
    return not student or "/" in student or "\0" in student or student in (".", "..")


def _named(student: str) -> str:
    """A student id as a file's name: the last guard of every id from outside, which the edges checked already; a
    file of the folder is never named outside it."""
    if _leaves_folder(student):
        raise GraderError(f"student id {layouts.printable(student)[:60]!r} cannot name a file of the batch: it is "
                          "empty, `.` or `..`, or holds a `/`")
    return student


@dataclass(frozen=True)
class Recorded:
    """What one record wrote: the typed result (what readers take) and its signed JSON (what the files hold)."""

    result: GradeResult
    signed: dict[str, Any]


@dataclass(frozen=True)
class BatchFolder:
    """One batch's output folder."""

    root: Path

    def __post_init__(self) -> None:
        object.__setattr__(self, "root", Path(self.root))

    # -- where each thing lives -------------------------------------------------------------------------------
    @property
    def results(self) -> Path:
        return self.root / "results"

    @property
    def reports(self) -> Path:
        return self.root / "reports"

    @property
    def notebooks(self) -> Path:
        return self.root / "notebooks"

    def result(self, student: str) -> Path:
        return self.results / f"{_named(student)}.json"

    def report(self, student: str, suffix: str = "html") -> Path:
        return self.reports / f"{_named(student)}.{suffix}"

    def notebook(self, student: str) -> Path:
        return self.notebooks / f"{_named(student)}.ipynb"

    @property
    def gradebook(self) -> Path:
        return self.root / "gradebook.sqlite"

    @property
    def gradebook_address(self) -> Path:
        return self.root / "gradebook.address"

    @property
    def grades_csv(self) -> Path:
        return self.root / "grades.csv"

    @property
    def changes_csv(self) -> Path:
        return self.root / "changes.csv"

    @property
    def dashboard(self) -> Path:
        return self.root / "index.html"

    @property
    def similarity(self) -> Path:
        return self.root / "similarity.html"

    @property
    def roster(self) -> Path:
        return self.root / "roster.csv"

    @property
    def course_record(self) -> Path:
        return self.root / "course.json"

    @property
    def review_store(self) -> Path:
        return self.root / "review.sqlite"

    @property
    def agreement(self) -> Path:
        return self.root / "agreement.json"

    @property
    def unpacked(self) -> Path:
        return self.root / "unpacked"

    @property
    def profile(self) -> Path:
        return self.root / "profile.json"

    def received(self, sha256: str, name: str) -> Path:
        """Where the submission service keeps a received file to grade: by its digest, under the name given."""
        return self.root / "received" / sha256 / name

    def page(self, address: str) -> Path | None:
        """The folder's own page a browser asks for by its address inside the folder (the dashboard, similarity,
        a student's report, as their links spell them), or None for any other address: nothing outside the
        folder, and nothing but these pages inside it, is ever named by one."""
        folder, _, student = address.removesuffix(".html").partition("/")
        if address in (self.dashboard.name, self.similarity.name):
            return self.root / address
        ok = folder == self.reports.name and address.endswith(".html") and not _leaves_folder(student)
        return self.report(student) if ok else None

    def export(self, fmt: str) -> Path:
        """Where an export to a platform goes by default."""
        return self.root / "export" / fmt

    # -- what it holds ----------------------------------------------------------------------------------------
    def is_batch(self) -> bool:
        """Whether a batch has graded into this folder (it has a gradebook)."""
        return self.gradebook.is_file() or self.gradebook_address.is_file()

    def result_files(self) -> Iterator[Path]:
        """Every recorded result, in student order."""
        return iter(sorted(self.results.glob("*.json")))

    def read_all(self) -> Iterator[tuple[str, GradeResult]]:
        """Every recorded result that reads back, typed (by its file's student name); one that does not is left out
        (a batch cut short mid-write), never a stop."""
        for path in self.result_files():
            try:
                data = sign.strict_loads(files.read_regular(path, MAX_RESULT_BYTES).decode("utf-8"))
                if isinstance(data, dict):
                    yield path.stem, record.read_result(data)
            except (OSError, ValueError, TypeError, KeyError, AttributeError):
                continue

    def notebook_files(self) -> Iterator[Path]:
        """Every executed notebook kept, in student order."""
        return iter(sorted(self.notebooks.glob("*.ipynb")))

    def open_gradebook(self) -> Gradebook:
        return Gradebook(kept_in(self) or self.gradebook)

    def open_decisions(self) -> Store:
        """The instructor's decisions, where this folder keeps them (made where there are none yet)."""
        return Store(kept_in(self) or self.review_store)

    def decisions_made(self) -> Store | None:
        """The instructor's decisions, or None while a SQLite folder has none (nothing is made)."""
        return self.open_decisions() if kept_in(self) or self.review_store.is_file() else None

    def make(self) -> None:
        """The folders a batch writes into."""
        files.make_dirs(self.results)
        files.make_dirs(self.reports)

    def read_text(self, path: Path) -> str:
        """A file of the folder as text ("" when absent), never through a link."""
        return files.read_regular(path).decode("utf-8") if path.is_file() else ""

    def recorded(self, student: str, lesson_id: str) -> tuple[GradeResult, dict[str, Any]]:
        """A student's recorded result, read at the file edge: (the typed result, its signed JSON)."""
        path = self.result(student)
        try:
            data = sign.strict_loads(files.read_regular(path, MAX_RESULT_BYTES).decode("utf-8"))
        except (OSError, ValueError) as err:
            raise GraderError(f"{path}: cannot be read back ({type(err).__name__}); rerun the batch") from None
        if not isinstance(data, dict) or data.get("lesson") != lesson_id or data.get("student") != student:
            raise GraderError(f"{path} is not {student}'s result of lesson {lesson_id}")
        try:
            return record.read_result(data), data
        except (TypeError, ValueError, KeyError, AttributeError) as err:
            raise GraderError(f"{path}: not a result this grader wrote ({type(err).__name__}); rerun the batch") from None

    # -- the one write ----------------------------------------------------------------------------------------
    def record(self, book: Gradebook, student: str, graded: finish.Graded, key: Any = None,
               regrading: str | None = None, replacing: str | None = None,
               on_disk: frozenset[str] = frozenset(), lesson: catalog.Lesson | None = None) -> Recorded:
        """Record one student: notebook, reports, the signed result, then the gradebook row; returns what was recorded
        (the typed result and its signed JSON).

        `replacing`: the digest of the recorded grade this one joins again (a review decision, a changed policy):
        the row is updated in place; otherwise a new row is added (a regrade moves the old one to history).
        `on_disk`: the parts (`notebook`, `reports`) that `graded` holds as read back from this folder, only to be
        signed over: not written again. `lesson`: the lesson graded, where the caller holds it (see sign.stamp).
        """
        if graded.notebook and "notebook" not in on_disk:
            files.write_text(self.notebook(student), graded.notebook)
        if graded.report_html and "reports" not in on_disk:
            files.write_text(self.report(student, "html"), graded.report_html)
            files.write_text(self.report(student, "md"), graded.report_md)
        data = graded.sealed(key, lesson)  # the record edge: JSON from here on
        text = record.dumps(data)  # encoded once: the file and the gradebook's row hold the same text
        files.write_text(self.result(student), text)
        if replacing is not None:
            book.update(data, replacing, text)
        else:
            book.add(data, data["digest"], regrading, text)
        return Recorded(graded.result, data)

    def store(self, book: Gradebook, student: str, path: Path, graded: finish.Graded, key: Any = None,
              regrading: str | None = None, lesson: catalog.Lesson | None = None) -> Recorded:
        """A batch's grade made whole (its digest, its time, a rejection in the parent drawn), then recorded."""
        result = graded.result
        if not result.digest:
            result = replace(result, digest=digest(path))
        if not result.graded_at:
            result = replace(result, graded_at=result.environment.get("graded_at"))
        drawn = finish.drawn(result) if not graded.report_html else graded  # a rejection in the parent is drawn here
        graded = replace(graded, result=result, report_html=drawn.report_html, report_md=drawn.report_md)
        return self.record(book, student, graded, key, regrading, lesson=lesson)


def claim(folder: BatchFolder) -> None:
    """Record which course grades this folder (its first batch), or refuse in one line to grade into a folder
    another course graded (its seeds, key and policy are that course's); nothing is written when refused."""
    here = course.current()
    mine = {"course": here.name or (here.root.name if here.root else ""), "root": str(here.root or "")}
    path = folder.course_record
    try:
        before = json.loads(files.read_regular(path, 1 << 16))
    except FileNotFoundError:
        before = None
    except (OSError, ValueError):
        raise GraderError(f"{path} cannot be read: this folder's course is unknown; grade into another folder") \
            from None
    if isinstance(before, dict) and before.get("course") != mine["course"]:
        raise GraderError(f"{folder.root} was graded by course {before.get('course')!r} ({before.get('root')}); the "
                          f"course in force is {mine['course']!r} ({mine['root']}): grade into another folder, or "
                          f"pass --course {before.get('root')}")
    if before != mine:
        files.write_text(path, json.dumps(mine, indent=1) + "\n")


def kept_in(folder: BatchFolder) -> str | None:
    """The PostgreSQL address this folder's gradebook and decisions are kept at (None: its SQLite files)."""
    if not folder.gradebook_address.is_file():
        return None
    address = files.read_regular(folder.gradebook_address, 4096).decode("utf-8", "replace").strip()
    if not database.is_address(address) or "\n" in address:
        raise GraderError(f"{folder.gradebook_address} does not name a PostgreSQL database (postgresql://...)")
    return address


def keep_in(folder: BatchFolder, address: str) -> None:
    """Keep this folder's gradebook and decisions in the PostgreSQL database at `address` (the service's
    `--database`; a SQLite queue's address leaves them in the folder); refused, in one line, where they are
    already kept elsewhere."""
    if not database.is_address(address):
        return
    if folder.gradebook.exists() or folder.review_store.exists():
        raise GraderError(f"{folder.root} keeps its grades in SQLite files ({folder.gradebook.name}); a course served "
                          "from PostgreSQL keeps them in the database: serve into another --out")
    if kept_in(folder) not in (None, address):
        raise GraderError(f"{folder.root}'s grades are kept in another database ({folder.gradebook_address} names it)")
    if kept_in(folder) is None:
        files.write_text(folder.gradebook_address, address + "\n")


def keep_received(out: BatchFolder, sha256: str, name: str, body: bytes) -> Path:
    """The service's received bytes kept as a file to grade, by digest (its name the one the student gave, made
    safe), written once."""
    path = out.received(sha256, name)
    if not path.is_file():
        files.write_bytes(path, body)
    return path
