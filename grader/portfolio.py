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


from grader import files, finish, grading, record, render, sign
from grader.errors import GraderError

MEMBERS = ("result.json", "report.html", "report.md", "notebook.ipynb")
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
    for name in names:
        path = source.parent / name
        if path.is_file():
            return path.read_text(encoding="utf-8")
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
        report = _beside(source, f"{stem}.html", f"../reports/{stem}.html") or render.report_html(data)
        markdown = _beside(source, f"{stem}.md", f"../reports/{stem}.md") or render.report_md(data)
        notebook = _beside(source, f"{stem}.executed.ipynb", f"../notebooks/{stem}.ipynb")
        return Entry(data.get("lesson") or stem, data, text, report, markdown, notebook)
    graded = finish.drawn(grading.grade(source, lesson_id, grading.Options(public_only=True, sandbox="auto")))
    data = graded.sealed(sign.signing_key())
    return Entry(data["lesson"], data, record.dumps(data), graded.report_html, graded.report_md, graded.notebook)


def index_html(entries: list[Entry]) -> str:
    """The portfolio's index page, from the results alone (so a verifier can rebuild it and compare)."""
    students = sorted({str(e.data.get("student")) for e in entries})
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


def read(path: Path) -> tuple[list[Entry], dict[str, bytes], list[str]]:
    """A portfolio's entries (as far as their results parse), every member's bytes, and the names that occur more
    than once (an unzip tool would show one of them, the reader another), for `verify`."""
    try:
        with zipfile.ZipFile(path) as archive:
            infos = [info for info in archive.infolist() if not info.is_dir()]
            if len(infos) > MAX_MEMBERS or sum(info.file_size for info in infos) > MAX_BYTES:
                raise GraderError(f"{path.name}: more than {MAX_MEMBERS} files or {MAX_BYTES >> 20} MiB unpacked: "
                                  "not a portfolio")
            names = [info.filename for info in infos]
            members = {info.filename: archive.read(info) for info in infos}
    except (OSError, zipfile.BadZipFile) as err:
        raise GraderError(f"{path.name}: not a portfolio zip ({err})") from None
    duplicates = sorted({name for name in names if names.count(name) > 1})
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
            def member(leaf_name: str) -> str | None:
                raw = members.get(f"{folder}/{leaf_name}")
                return raw.decode("utf-8", "replace") if raw is not None else None
            entries.append(Entry(folder, data, text, member("report.html") or "", member("report.md") or "",
                                 member("notebook.ipynb")))
    return entries, members, duplicates
