"""`grader.check()` inside a notebook: the self-check, without leaving JupyterLab, Notebook 7 or VS Code.

It checks the notebook as saved on disk, exactly as `grader check` does: a
fresh kernel of its own runs the saved cells (sandboxed when `grader check`
is), and the verdict is reached outside that kernel, in a process of its own,
never in the student's kernel that called it. The notebook is found from the
session (JupyterLab's and Notebook 7's `__session__`, VS Code's
`__vsc_ipynb_file__`, the server's `JPY_SESSION_NAME`), or named. It warns when
the cells just run are not in the saved file ("save first").
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

SECONDS = 900


def _session_notebook() -> Path:
    try:
        namespace = get_ipython().user_ns  # type: ignore[name-defined]
    except NameError:
        namespace = {}
    for found in (namespace.get("__session__"), namespace.get("__vsc_ipynb_file__"), os.environ.get("JPY_SESSION_NAME")):
        if isinstance(found, str) and found.endswith((".ipynb", ".py")) and Path(found).is_file():
            return Path(found)
    raise FileNotFoundError("this kernel does not say which notebook it runs: name it, grader.check(\"hw.ipynb\")")


def _unsaved(path: Path) -> bool:
    """Whether a cell run in this kernel lately (before this one) is missing from the saved notebook."""
    try:
        inputs = get_ipython().user_ns.get("In", [])  # type: ignore[name-defined]
    except NameError:
        return False
    try:
        saved = path.read_text(encoding="utf-8")
    except OSError:
        return False
    recent = [text.strip() for text in list(inputs)[-4:-1] if text.strip() and "grader.check" not in text]
    return any(json.dumps(text)[1:-1] not in saved and text not in saved for text in recent)


def check(path: str | Path | None = None, exercise: str | None = None, lesson: str | None = None) -> dict[str, Any] | None:
    """Check a saved notebook (default: the one this kernel runs) against the public cases, and print the verdicts
    (of one exercise where named). Returns the result as data, or None when it could not be checked."""
    from grader.report import render_text

    path = Path(path) if path else _session_notebook()
    if _unsaved(path):
        print(f"save first: {path.name} on disk does not hold the cells you just ran, and this checks the saved file")
    done = subprocess.run([sys.executable, "-m", "grader.in_notebook", str(path), lesson or ""], capture_output=True,
                          text=True, timeout=SECONDS, stdin=subprocess.DEVNULL)
    if done.returncode != 0 or not done.stdout.strip():
        print((done.stderr.strip().splitlines() or ["grader: the check did not finish"])[-1])
        return None
    result = json.loads(done.stdout)
    if exercise:
        known = [e["id"] for e in result.get("exercises", [])]
        if exercise not in known:
            print(f"no exercise {exercise!r} in this lesson (its exercises: {', '.join(known)})")
            return None
        result["exercises"] = [e for e in result["exercises"] if e["id"] == exercise]
    print(render_text.result_text(result))
    print("These are the public checks only: the hidden cases are drawn when your notebook is graded.")
    return result


def _main(argv: list[str]) -> int:
    """In a process of its own: `grader check` of one file, its result as JSON on standard output."""
    from grader import grading
    from grader.base.errors import GraderError

    try:
        result = grading.grade(argv[0], argv[1] or None, grading.Options(public_only=True, sandbox="none"))
    except GraderError as err:
        print(f"grader: {err}", file=sys.stderr)
        return 2
    sys.stdout.write(json.dumps(result.to_dict(), default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(_main(sys.argv[1:]))
