"""Finish: a result made ready to write, its reports drawn and its executed notebook serialised, then sealed.

Every writer of a result (`grade --json`, a batch's parent, a portfolio)
goes through `drawn` and `Graded.sealed`: the reports are drawn from the
typed result the JSON is written from, and the signature binds the result to them.
"""

from __future__ import annotations

import dataclasses
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import nbformat.v4

from grader.base import files
from grader.lesson import catalog
from grader.report import render
from grader.result import record, sign
from grader.result.parts import Section
from grader.result.record import INTERNAL_ERROR, GradeResult


@dataclass(frozen=True)
class Graded:
    """What a batch worker (local or on a cluster) hands its parent: the result, still typed, with its reports
    already drawn and its executed notebook serialised, so the parent only records and writes."""

    result: GradeResult
    """The result (its `notebook` left out: `notebook` below carries it as text)."""
    report_html: str = ""
    """The evidence report ("" when the parent must draw it)."""
    report_md: str = ""
    """The same report as Markdown."""
    notebook: str | None = None
    """The freshly executed notebook as .ipynb text, when the grade ran it."""
    worker: dict[str, float] = dataclasses.field(default_factory=dict)
    """Which worker graded it and when it began and ended (pid, start, end; monotonic clock), for the batch's
    phase profile."""

    @property
    def grader_failed(self) -> bool:
        """Whether the grader itself failed (a bug, a lost task): retried, never counted as the student's attempt."""
        return (self.result.error or "").startswith(INTERNAL_ERROR)

    def sealed(self, key: Any, lesson: catalog.Lesson | None = None) -> dict[str, Any]:
        """The result as written: JSON data, signed with `key` (if any) over itself and the files beside it (and the
        digests of `lesson`'s folders, where the caller holds the lesson the result names)."""
        return sign.stamp(self.result.to_dict(), key, notebook=self.notebook, report=self.report_html,
                          markdown=self.report_md, lesson=lesson)


def drawn(result: GradeResult) -> Graded:
    """A result with its reports drawn and its executed notebook serialised: what every writer of a result
    (`grade`, a batch's worker, a portfolio) needs before it signs and writes."""
    # nbformat.writes would validate the whole notebook first, only to log what it finds: its cells were checked
    # when the submission was read and each output when nbclient made it. The same writer, the same bytes.
    notebook = nbformat.v4.writes_json(result.notebook) if result.notebook is not None else None
    result = dataclasses.replace(result, notebook=None)
    return Graded(result, safe_report(result), safe_report(result, markdown=True), notebook)


def safe_report(result: GradeResult, markdown: bool = False) -> str:
    """The HTML (or Markdown) report; if the student's values break it, the report without them (and a note why)."""
    draw = render.report_md if markdown else render.report_html
    try:
        return draw(result)
    except Exception as err:
        why = f"the notebook's values could not be shown in this report ({type(err).__name__}: {str(err)[:120]})"
        return draw(dataclasses.replace(result, measured=None, simulated=Section(), as_submitted=(), explanations=(),
                                        notes=result.notes + (why,)))


def warm() -> None:
    """Compile the report templates now (a batch parent does this once, before forking)."""
    render.warm()


def emit(result: GradeResult, json_path: str | None, html_path: Path | None, md_path: Path | None = None,
         notebook_path: Path | None = None) -> dict[str, Any]:
    """`grade`'s writer: what was asked for, then the result (`-`: standard output, alone), with the digests of the
    files written beside it, and nothing else (a digest of a file nobody kept could never verify), signed where
    the course key is at hand."""
    graded = drawn(result)
    if html_path:
        files.write_text(html_path, graded.report_html)
    if md_path:
        files.write_text(md_path, graded.report_md)
    if notebook_path and graded.notebook is not None:
        files.write_text(notebook_path, graded.notebook)
    written = dataclasses.replace(graded, report_html=graded.report_html if html_path else "",
                                  report_md=graded.report_md if md_path else "",
                                  notebook=graded.notebook if notebook_path else None)
    data = written.sealed(sign.signing_key())
    if json_path == "-":
        sys.stdout.write(record.dumps(data))
        sys.stdout.flush()
    elif json_path:
        record.write_json(data, json_path)
    return data
