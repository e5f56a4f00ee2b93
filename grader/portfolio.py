"""A student's evidence portfolio: one zip, readable offline.

Inputs are result JSON files (from `grade --json` or a batch's `results/`) or
submissions, which are self-checked (public checks, no reference needed). The
zip holds an index page and, per lesson, the HTML and Markdown reports, the
result JSON and the freshly executed notebook when one is available.
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path
from typing import Any

import nbformat

from grader import files, grading, record, render
from grader.errors import GraderError


def _entry(source: Path, lesson_id: str | None) -> tuple[dict[str, Any], str | None]:
    if source.suffix.lower() == ".json":
        try:
            data = json.loads(source.read_text(encoding="utf-8"))
        except (OSError, ValueError) as err:
            raise GraderError(f"{source.name}: not a readable result JSON ({err})") from None
        if not isinstance(data, dict) or data.get("schema") != record.SCHEMA or "student" not in data:
            raise GraderError(f"{source.name}: not a grader result (schema {record.SCHEMA})")
        executed = source.parent.parent / "notebooks" / f"{source.stem}.ipynb"
        return data, executed.read_text(encoding="utf-8") if executed.is_file() else None
    options = grading.Options(public_only=True, sandbox="auto")
    result = grading.grade(source, lesson_id, options)
    return result.to_dict(), nbformat.writes(result.notebook) if result.notebook is not None else None


def build(sources: list[Path], out: Path, lesson_id: str | None = None) -> Path:
    """Write the portfolio zip; returns its path."""
    entries = []
    for source in sources:
        data, notebook = _entry(source, lesson_id)
        folder = data.get("lesson") or source.stem
        if any(e["folder"] == folder for e in entries):
            raise GraderError(f"two inputs are for lesson '{folder}'; a portfolio holds one result per lesson")
        entries.append({"folder": folder, "data": data, "notebook": notebook})
    students = sorted({str(e["data"]["student"]) for e in entries})
    if len(students) > 1:
        raise GraderError(f"these results belong to different students ({', '.join(students)}); "
                          "a portfolio holds one student's work")
    with files.replacing(out) as tmp, zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for e in entries:
            archive.writestr(f"{e['folder']}/report.html", render.report_html(e["data"]))
            archive.writestr(f"{e['folder']}/report.md", render.report_md(e["data"]))
            archive.writestr(f"{e['folder']}/result.json", record.dumps(e["data"]))
            if e["notebook"]:
                archive.writestr(f"{e['folder']}/notebook.ipynb", e["notebook"])
        archive.writestr("index.html", render.portfolio_index(
            students, [{"folder": e["folder"], "data": e["data"], "has_notebook": bool(e["notebook"])} for e in entries]))
    return out
