"""A student's evidence portfolio: one zip, readable offline, verifiable with the course's public key.

Inputs are result JSON files (from `grade --json` or a batch's `results/`) or
submissions, which are self-checked (public checks, no reference needed). Per
lesson the zip holds the result exactly as it was recorded (signed where the
course key signed it), the reports and the executed notebook the grader wrote
beside it (their digests are in the signed result), or, where those files are
not at hand, reports rebuilt from the result. The index page is always built
here, without the key: `grader verify` checks it, and every rebuilt report,
against the signed results.
"""

from __future__ import annotations

import json
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from grader import grading
from grader.base import files
from grader.base.errors import GraderError
from grader.base.options import Options
from grader.base.shapes import mapping
from grader.intake import roster as class_list
from grader.report import finish, render
from grader.result import record, sign

MAX_MEMBERS = 1000
MAX_BYTES = 512 * 1024**2
"""A portfolio holds a few files per lesson; one past these bounds is refused before it is read."""
MANIFEST = "manifest.json"
"""Every file of the portfolio, its digest, the student and the lessons; signed where the course key is at hand."""


@dataclass
class Entry:
    """One lesson's files in the portfolio."""

    folder: str
    data: dict[str, Any]
    result_text: str
    report: str
    markdown: str
    notebook: str | None


def _beside(source: Path, *names: str) -> str | None:
    """The first of `names` beside `source` that is a regular file (never read through a link), as text."""
    for name in names:
        try:
            return files.read_regular(source.parent / name, MAX_BYTES).decode("utf-8", "replace")
        except OSError:
            continue
    return None


def _entry(source: Path, lesson_id: str | None) -> Entry:
    if source.suffix.lower() == ".json":
        try:
            text = source.read_text(encoding="utf-8")
            data = json.loads(text)
        except (OSError, ValueError) as err:
            raise GraderError(f"{source.name}: not a readable result JSON ({err})") from None
        if not isinstance(data, dict) or data.get("schema") != record.SCHEMA or "student" not in data:
            raise GraderError(f"{source.name}: not a grader result (schema {record.SCHEMA})")
        stem = source.stem
        # beside it, as `grade --json X.json --html X.html --md X.md --notebook X.executed.ipynb` writes them,
        # or in a batch's folders (results/, reports/, notebooks/)
        report = _beside(source, f"{stem}.html", f"../reports/{stem}.html")
        markdown = _beside(source, f"{stem}.md", f"../reports/{stem}.md")
        if report is None or markdown is None:  # drawn again from the typed record of this very JSON
            try:
                result = record.read_result(data)
            except (TypeError, ValueError, KeyError, AttributeError) as err:
                raise GraderError(f"{source.name}: not a result this grader wrote ({type(err).__name__})") from None
            report, markdown = report or render.report_html(result), markdown or render.report_md(result)
        notebook = _beside(source, f"{stem}.executed.ipynb", f"../notebooks/{stem}.ipynb")
        digests = mapping(data, "digests")
        if notebook is None and digests.get("notebook"):
            raise GraderError(f"{source.name} records an executed notebook, but none is beside it: grade again with "
                              f"--notebook {stem}.executed.ipynb, or put that file beside {source.name}")
        return Entry(data.get("lesson") or stem, data, text, report, markdown, notebook)
    graded = finish.drawn(grading.grade(source, lesson_id, Options(public_only=True, sandbox="auto")))
    data = graded.sealed(sign.signing_key())
    return Entry(data["lesson"], data, record.dumps(data), graded.report_html, graded.report_md, graded.notebook)


def index_html(entries: list[Entry]) -> str:
    """The portfolio's index page, from the results alone (so a verifier can rebuild it and compare)."""
    students = sorted({class_list.who({str(e.data.get("student")): str(mapping(e.data, "submitted_as").get("name") or "")},
                                      str(e.data.get("student"))) for e in entries})
    stamps = sorted({(e.data.get(sign.SIGNATURE) or {}).get("key", "") for e in entries} - {""})
    return render.portfolio_index(students, [{"folder": e.folder, "data": e.data, "has_notebook": e.notebook is not None}
                                             for e in entries], stamps)


def build(sources: list[Path], out: Path, lesson_id: str | None = None) -> list[str]:
    """Write the portfolio zip; returns the lessons whose results are unsigned (nothing vouches for those)."""
    entries: list[Entry] = []
    for source in sources:
        entry = _entry(source, lesson_id)
        if any(e.folder == entry.folder for e in entries):
            raise GraderError(f"two inputs are for lesson '{entry.folder}'; a portfolio holds one result per lesson")
        entries.append(entry)
    students = sorted({str(e.data.get("student")) for e in entries})
    if len(students) > 1:
        raise GraderError(f"these results belong to different students ({', '.join(students)}); "
                          "a portfolio holds one student's work")
    written: dict[str, bytes] = {}
    for e in entries:
        written[f"{e.folder}/result.json"] = e.result_text.encode("utf-8")
        written[f"{e.folder}/report.html"] = e.report.encode("utf-8")
        written[f"{e.folder}/report.md"] = e.markdown.encode("utf-8")
        if e.notebook is not None:
            written[f"{e.folder}/notebook.ipynb"] = e.notebook.encode("utf-8")
    written["index.html"] = index_html(entries).encode("utf-8")
    key = sign.signing_key()
    listing = manifest(students[0] if students else "", [e.folder for e in entries], written)
    written[MANIFEST] = record.dumps(sign.sign(listing, key) if key is not None else sign.unsigned(listing)).encode()
    with files.replacing(out) as tmp, zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, body in written.items():
            archive.writestr(name, body)
    return [e.folder for e in entries if not e.data.get(sign.SIGNATURE)]


def manifest(student: str, lessons: list[str], members: dict[str, bytes]) -> dict[str, Any]:
    """What binds a portfolio together: its student, its lessons, and every other file with its SHA-256."""
    return {"schema": record.SCHEMA, "kind": "portfolio-manifest", "student": student, "lessons": sorted(lessons),
            "files": {name: sign.digest(body) for name, body in sorted(members.items()) if name != MANIFEST}}


UNICODE_EXTRAS = (0x7075, 0x6375)
"""Info-ZIP's Unicode Path and Unicode Comment extra fields: an unzip tool may write the entry under the name the
field gives, not the one a reader checked."""


def _extra_ids(extra: bytes) -> list[int]:
    """The header ids of a zip entry's extra fields."""
    ids, at = [], 0
    while at + 4 <= len(extra):
        ids.append(int.from_bytes(extra[at:at + 2], "little"))
        at += 4 + int.from_bytes(extra[at + 2:at + 4], "little")
    return ids


def unsafe_entry(info: zipfile.ZipInfo) -> str:
    """Why an entry is not one the grader wrote and a reader reads as named ("" when it is): a folder entry (it
    may carry data), a Unicode-path extra field, a name with `\\`, NUL or another control character, an absolute
    path or `..`."""
    name = info.filename
    if info.is_dir():
        return "a folder entry (a portfolio holds files only; an unzip tool may write its data elsewhere)"
    if any(ident in UNICODE_EXTRAS for ident in _extra_ids(info.extra)):
        return "it carries a Unicode-path extra field: an unzip tool would write it under another name"
    if "\\" in name or any(not ch.isprintable() for ch in name):
        return "a backslash or control character in its name: readers disagree on where it goes"
    if name.startswith("/") or ".." in name.split("/"):
        return "a path outside the portfolio"
    return ""


def read(path: Path) -> tuple[list[Entry], dict[str, bytes], list[tuple[str, str]]]:
    """A portfolio's entries (as far as their results parse), every member's bytes, and the entries no reader
    should trust, with why: a name twice (or twice but for case: one folder on macOS and Windows), or one
    `unsafe_entry` names (an unzip tool would show one thing, the reader another), for `verify`."""
    try:
        with zipfile.ZipFile(path) as archive:
            infos = archive.infolist()
            if len(infos) > MAX_MEMBERS or sum(info.file_size for info in infos) > MAX_BYTES:
                raise GraderError(f"{path.name}: more than {MAX_MEMBERS} files or {MAX_BYTES >> 20} MiB unpacked: "
                                  "not a portfolio")
            untrusted = [(info.filename, why) for info in infos if (why := unsafe_entry(info))]
            infos = [info for info in infos if not unsafe_entry(info)]
            members = {info.filename: archive.read(info) for info in infos}
    except (OSError, zipfile.BadZipFile, NotImplementedError, EOFError) as err:
        raise GraderError(f"{path.name}: not a portfolio zip ({err})") from None
    names = [info.filename for info in infos]
    folded = [name.casefold() for name in names]
    untrusted += [(name, "the zip holds two entries of this name: readers would disagree on which counts")
                  for name in sorted(set(names)) if names.count(name) > 1]
    untrusted += [(name, "another entry differs from it only in case: both land in one file on macOS and Windows")
                  for name in sorted(set(names)) if names.count(name) == 1 and folded.count(name.casefold()) > 1]
    entries = []
    for name in sorted(members):
        folder, _, leaf = name.rpartition("/")
        if leaf != "result.json" or not folder:
            continue
        text = members[name].decode("utf-8", "replace")
        try:
            data = sign.strict_loads(text)
        except ValueError:
            data = {}
        if isinstance(data, dict):
            def member(leaf_name: str, folder: str = folder) -> str | None:
                raw = members.get(f"{folder}/{leaf_name}")
                return raw.decode("utf-8", "replace") if raw is not None else None
            entries.append(Entry(folder, data, text, member("report.html") or "", member("report.md") or "",
                                 member("notebook.ipynb")))
    return entries, members, untrusted
