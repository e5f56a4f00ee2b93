"""Autograder for the inference-serving course: grade(), check(), Options and GradeResult.

They are imported on first use: a command that only starts the kernel template
(or prints its help) does not pay for the grading machinery.
"""

from __future__ import annotations

import sys
from typing import Any

if "jsonschema" not in sys.modules:
    # jsonschema imports rfc3987_syntax, where installed (JupyterLab's jupyter_events brings it), only to check the
    # "iri" string format, which no schema of ours or nbformat's uses; that import compiles 39 grammars, 1.1 s of
    # every start of the grader (a batch, a check, a service's grading process) before its first notebook.
    sys.modules.setdefault("rfc3987_syntax", None)  # type: ignore[arg-type]

__all__ = ["grade", "check", "submit", "GradeResult", "Options"]

FLOW = ("base", "intake", "lesson", "kernel", "run", "judge", "result", "report", "grading", "classroom", "service")
"""The order of the flow, written once: stage N is FLOW[N]. A folder of `grader/` is a stage (its docstring says
"Stage N"); `grading` is the spine at the top (load -> run -> probe -> judge -> record for one submission);
`classroom` grades a class with it, and `service` serves the course above both (the submission service and the
LMS). The README's map lists the folders in this order, and no module imports a later stage (tests/test_layering.py)."""
BESIDE_THE_SPINE = ("in_notebook", "watch", "client", "authoring")
"""Beside the spine, for one person: the student's side at the top (`grader.check()`, `check --watch`, `grader
submit`), and the author's in its own folder (validate, the proof of declared mistakes, new lessons)."""
DOOR = ("cli_flags", "cli_class", "cli_service", "cli")
"""The command line, last: it may call every stage."""
ROOMS = FLOW[:FLOW.index("grading") + 1] + BESIDE_THE_SPINE + FLOW[FLOW.index("grading") + 1:] + DOOR
"""Every stage and top-level module in the order imports may go (earlier only)."""


def check(path: str | None = None, exercise: str | None = None, lesson: str | None = None) -> Any:
    """The student's self-check, from inside a notebook: `grader.check()` checks the saved notebook this kernel
    runs (`grader.check("hw.ipynb")` names one, `grader.check("hw.ipynb", "burst")` one exercise) as `grader check`
    does, prints the public verdicts and returns them as data (grader/in_notebook.py)."""
    from grader import in_notebook

    return in_notebook.check(path, exercise, lesson)


def submit(path: str | None = None, server: str | None = None, token: str | None = None, lesson: str | None = None,
           wait: bool = False) -> Any:
    """Submit from inside a notebook: `grader.submit()` sends the saved notebook this kernel runs to the course's
    server (GRADER_SERVER; the token from ~/.config/inference-grader/token or GRADER_TOKEN, so that no notebook holds it),
    prints the receipt and returns it; `wait=True`
    follows it until graded and shows the feedback (grader/client.py)."""
    from grader import client

    return client.from_notebook(path, server, token, lesson, wait)


def __getattr__(name: str) -> Any:
    if name in ("grade", "Options"):
        from grader import grading

        return getattr(grading, name)
    if name == "GradeResult":
        from grader.result.record import GradeResult

        return GradeResult
    raise AttributeError(f"module 'grader' has no attribute {name!r}")
