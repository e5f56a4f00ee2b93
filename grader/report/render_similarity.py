"""The similarity page (`OUTDIR/similarity.html`) and the dashboard's section, from a similarity.Report."""

from __future__ import annotations

from typing import Any

from grader.intake.roster import who
from grader.report.render import environment

CONTEXT_LINES = 2
"""Lines shown around each matching fragment of a flagged pair."""
PAGE_PAIRS = 100
"""Flagged pairs shown side by side on the page, highest scores first (`grader similarity --json` lists all)."""


def _side(student: str, lines: tuple[int, ...], text: list[str]) -> dict[str, Any]:
    """One student's side of a flagged pair: each matching run of lines, with a little context, marked."""
    matched, runs, shown = set(lines), [], -1
    for line in sorted(matched):
        if line <= shown:
            continue
        first, last = max(0, line - CONTEXT_LINES), line
        while any(n in matched for n in range(last + 1, last + CONTEXT_LINES + 1)):  # joins runs a context apart
            last += 1
        last = min(len(text) - 1, last + CONTEXT_LINES)
        runs.append([{"number": n + 1, "text": text[n], "match": n in matched} for n in range(first, last + 1)])
        shown = last
    return {"student": student, "runs": runs}


def similarity_data(report: Any, lesson: Any, others: int = 10) -> dict[str, Any]:
    """What the similarity page and the dashboard's section show (similarity.Report)."""
    kinds = []
    for kind, title, attribute in (("code", "Code", "code"), ("prose", "Explanations", "prose")):
        pairs = getattr(report, kind)
        every = [p for p in pairs if p.flagged]
        flagged = [{"students": p.students, "score": p.score, "shared": p.shared,
                    "sides": [_side(s, lines, getattr(report.students[s], attribute))
                              for s, lines in zip(p.students, p.lines)]} for p in every[:PAGE_PAIRS]]
        kinds.append({"id": kind, "title": title, "flagged": flagged, "more": len(every) - len(flagged),
                      "others": [p for p in pairs if not p.flagged][:others]})
    return {"lesson": lesson.id, "title": lesson.title, "threshold": report.threshold,
            "students": len(report.students), "kinds": kinds, "foreign": list(getattr(report, "foreign", []))}


def similarity_html(report: Any, lesson: Any, names: dict[str, str] | None = None) -> str:
    """`OUTDIR/similarity.html`: each pair flagged for review, side by side, its matching lines highlighted; each
    student shown as `Name (id)` where the roster gave a name (`names`)."""
    return environment().get_template("similarity.html.j2").render(
        s=similarity_data(report, lesson), who=lambda student: who(names or {}, student))
