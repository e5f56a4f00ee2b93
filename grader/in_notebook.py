"""`grader.check()` inside a notebook: the self-check, without leaving JupyterLab, Notebook 7 or VS Code.

It checks the notebook as saved on disk, exactly as `grader check` does: a
fresh kernel of its own runs the saved cells (sandboxed when `grader check`
is), and the verdict is reached outside that kernel, in a process of its own,
never in the student's kernel that called it. The notebook is found from the
session (JupyterLab's and Notebook 7's `__session__`, VS Code's
`__vsc_ipynb_file__`, the server's `JPY_SESSION_NAME`), or named. It warns when
the cells just run are not in the saved file ("save first"), comparing cells
as cells (Jupyter stores a cell's source as a list of lines).

While it runs, a line in the cell's output says so and counts the seconds; then
that line becomes the verdicts: a compact table (one row per exercise, its
verdict, its first message and hint; the written questions as "not graded yet")
in JupyterLab, VS Code and Colab, plain text in a terminal. The returned
`Checked` holds the data as attributes.
"""

from __future__ import annotations

import html
import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

SECONDS = 900
LEFT = " style='text-align:left'"


def session_notebook() -> Path:
    try:
        namespace = get_ipython().user_ns  # type: ignore[name-defined]
    except NameError:
        namespace = {}
    for found in (namespace.get("__session__"), namespace.get("__vsc_ipynb_file__"), os.environ.get("JPY_SESSION_NAME")):
        if isinstance(found, str) and found.endswith((".ipynb", ".py")) and Path(found).is_file():
            return Path(found)
    raise FileNotFoundError("this kernel does not say which notebook it runs: name it, grader.check(\"hw.ipynb\")")


def saved_cells(path: Path) -> set[str]:
    """The code cells of the saved notebook, each as one stripped text (a list of lines joined, as Jupyter means)."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError:
        return set()
    if path.suffix == ".py":
        from grader.intake import load

        return {cell.source.strip() for cell in load.notebook_from_script(text).cells if cell.cell_type == "code"}
    try:
        cells = json.loads(text).get("cells", [])
    except (ValueError, AttributeError):
        return set()
    found = set()
    for cell in cells if isinstance(cells, list) else []:
        if isinstance(cell, dict) and cell.get("cell_type") == "code":
            source = cell.get("source", "")
            found.add(("".join(source) if isinstance(source, list) else str(source)).strip())
    return found


def unsaved(recent: list[str], saved: set[str]) -> bool:
    """Whether a cell run lately is missing from the saved cells (the grader's own cells aside)."""
    from grader.intake.load import is_grader_cell

    return any(text.strip() and not is_grader_cell(text) and text.strip() not in saved for text in recent)


def recent_cells() -> list[str]:
    try:
        inputs = get_ipython().user_ns.get("In", [])  # type: ignore[name-defined]
    except NameError:
        return []
    return list(inputs)[-4:-1]


@dataclass
class Checked:
    """What `grader.check()` found: shown as a table in a notebook, as text in a terminal; the data as attributes."""

    result: dict[str, Any]
    notebook: str
    warning: str = ""
    _just_shown: bool = field(default=False, repr=False)

    @property
    def exercises(self) -> list[dict[str, Any]]:
        return list(self.result.get("exercises", []))

    @property
    def passed(self) -> int:
        return sum(1 for e in self.exercises if e.get("status") == "passed")

    @property
    def all_passed(self) -> bool:
        return bool(self.exercises) and self.passed == len(self.exercises)

    def __getitem__(self, key: str) -> Any:  # the result's fields, as the dict it used to be
        return self.result[key]

    def __repr__(self) -> str:
        from grader.report import render_text
        from grader.result import record

        return "\n".join(([self.warning, ""] if self.warning else []) + [render_text.result_text(record.read_result(self.result))])

    def _repr_html_(self) -> str:
        colours = {"passed": "#1a7f37", "failed": "#c62828", "error": "#b26a00", "missing": "#6a1b9a", "timeout": "#b26a00"}
        rows = []
        for e in self.exercises:
            colour = colours.get(str(e.get("status")), "#444")
            first = (e.get("messages") or [""])[0] if e.get("status") != "passed" else ""  # its hint, in brackets
            rows.append(f"<tr><td{LEFT}><code>{html.escape(str(e.get('id')))}</code></td>"
                        f"<td style='text-align:left;color:{colour};font-weight:600'>{html.escape(str(e.get('status')))}"
                        f"</td><td{LEFT}>{html.escape(first[:300])}</td></tr>")
        written = [f"<tr><td{LEFT}>{html.escape(str(q))}</td><td style='text-align:left;color:#666'>not graded yet</td>"
                   f"<td{LEFT}>graded by your instructor's rubric</td></tr>" for q in self.result.get("written_questions", [])]
        warning = f"<p style='color:#b26a00'><strong>{html.escape(self.warning)}</strong></p>" if self.warning else ""
        head = (f"<p><strong>{html.escape(self.notebook)}</strong>: {self.passed} of {len(self.exercises)} exercises "
                "pass the public checks. Hidden cases are drawn when your notebook is graded.</p>")
        notes = "".join(f"<li>{html.escape(str(n))}</li>" for n in self.result.get("notes", []))
        return (f"<div class='grader-check'>{warning}{head}<table><tr><th{LEFT}>exercise</th><th{LEFT}>verdict</th>"
                f"<th{LEFT}>what to look at</th></tr>{''.join(rows + written)}</table>"
                + (f"<ul>{notes}</ul>" if notes else "") + "</div>")

    def bundle(self) -> dict[str, str]:
        """The display's forms: a table where HTML is shown (JupyterLab, VS Code, Colab), text elsewhere."""
        return {"text/html": self._repr_html_(), "text/plain": repr(self)}

    def _ipython_display_(self) -> None:
        if self._just_shown:  # shown in place of the progress line already: the cell's value adds nothing
            self._just_shown = False
            return
        from IPython.display import display

        display(self.bundle(), raw=True)


class _Progress:
    """A line in the cell's output that counts the seconds (in a notebook), then becomes the verdicts."""

    def __init__(self, path: Path) -> None:
        self.path, self.started, self.handle = path, time.monotonic(), None
        try:
            from IPython import get_ipython
            from IPython.display import display

            if getattr(get_ipython(), "kernel", None) is not None:  # a notebook's kernel, not a terminal
                self.handle = display(self._line(), display_id=True, raw=True)
        except ImportError:
            pass

    def _line(self) -> dict[str, str]:
        said = (f"checking {self.path.name}: running the saved notebook in a fresh kernel, "
                f"{time.monotonic() - self.started:.0f} s")
        return {"text/html": f"<p style='color:#555'>{html.escape(said)}</p>", "text/plain": said}

    def tick(self) -> None:
        if self.handle is not None:
            self.handle.update(self._line(), raw=True)

    def done(self, bundle: dict[str, str]) -> bool:
        """Show `bundle` in the progress line's place; whether it was shown."""
        if self.handle is None:
            return False
        self.handle.update(bundle, raw=True)
        return True


def check(path: str | Path | None = None, exercise: str | None = None, lesson: str | None = None) -> Checked | None:
    """Check a saved notebook (default: the one this kernel runs) against the public cases and show the verdicts
    (of one exercise where named). Returns them (`Checked`), or None when it could not be checked."""
    path = Path(path) if path else session_notebook()
    warning = ""
    if unsaved(recent_cells(), saved_cells(path)):
        warning = f"save first: {path.name} on disk does not hold the cells you just ran, and this checks the saved file"
    progress = _Progress(path)
    running = subprocess.Popen([sys.executable, "-m", "grader.in_notebook", str(path), lesson or ""],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL)
    deadline = time.monotonic() + SECONDS
    while True:
        try:
            out, err = running.communicate(timeout=1.0)
            break
        except subprocess.TimeoutExpired:
            if time.monotonic() > deadline:
                running.kill()
                out, err = running.communicate()
                break
            progress.tick()
    if running.returncode != 0 or not out.strip():
        said = (err.strip().splitlines() or ["grader: the check did not finish"])[-1]
        if not progress.done({"text/html": f"<p>{html.escape(said)}</p>", "text/plain": said}):
            print(said)
        return None
    result = json.loads(out)
    if exercise:
        known = [e["id"] for e in result.get("exercises", [])]
        if exercise not in known:
            print(f"no exercise {exercise!r} in this lesson (its exercises: {', '.join(known)})")
            return None
        result["exercises"] = [e for e in result["exercises"] if e["id"] == exercise]
    checked = Checked(result, path.name, warning)
    checked._just_shown = progress.done(checked.bundle())
    if not checked._just_shown and not hasattr(sys, "ps1"):  # a script: said now; a REPL shows what is returned
        print(repr(checked))
    return checked


def _main(argv: list[str]) -> int:
    """In a process of its own: `grader check` of one file, its result as JSON on standard output (with the
    lesson's written questions, shown as not graded yet)."""
    from grader import grading
    from grader.base.errors import GraderError
    from grader.lesson import catalog

    try:
        result = grading.grade(argv[0], argv[1] or None, grading.Options(public_only=True, sandbox="none"))
    except GraderError as err:
        print(f"grader: {err}", file=sys.stderr)
        return 2
    data = result.to_dict()
    if result.lesson:
        data["written_questions"] = [q.title for q in catalog.get(result.lesson).written]
    sys.stdout.write(json.dumps(data, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(_main(sys.argv[1:]))
