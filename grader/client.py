"""Submitting to a course's server: `grader submit` and `grader.submit()` in a notebook, over HTTP (httpx).

Both send the saved file with the student's token and print the receipt (the
id, the file's SHA-256, when the server received it, the place in the queue
and an estimate); `--wait` (or `wait=True`) then follows the submission
until it is graded and prints the feedback the course shows. In a notebook the
server comes from GRADER_SERVER, the token from GRADER_TOKEN or the token file
(`token_file`: ~/.config/inference-grader/token), and the lesson from the notebook's own
metadata; the notebook must be saved first, as for `grader.check()`. A token
written into the file itself (`token="gs_..."` in a cell) is removed before
the file is sent, and the server removes any it finds: no stored submission
keeps one.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path
from typing import Any

from grader.base import escape, files, host
from grader.base.errors import GraderError

WAIT_S = 900.0
"""How long `--wait` follows a submission before it gives up (the submission itself stays queued)."""


def _client(server: str) -> Any:
    import httpx

    return httpx.Client(base_url=server.rstrip("/"), timeout=httpx.Timeout(30.0, connect=10.0))


def _said(response: Any) -> str:
    try:
        return str(response.json().get("error") or response.text)[:300]
    except ValueError:
        return response.text[:300]


def token_file() -> Path:
    """Where a student keeps their token so that no notebook holds it: GRADER_TOKEN_FILE, else the grader's config
    folder (~/.config/inference-grader/token)."""
    named = os.environ.get("GRADER_TOKEN_FILE")
    return Path(named).expanduser() if named else host.config_root() / "token"


def stored_token(server: str = "") -> str:
    """The token of GRADER_TOKEN, else of the token file, else (inside a JupyterHub user's server, sending to the
    grader the hub named in GRADER_SERVER) the hub's token of that server, JUPYTERHUB_API_TOKEN ("" when none)."""
    if os.environ.get("GRADER_TOKEN"):
        return os.environ["GRADER_TOKEN"].strip()
    try:
        return files.read_regular(token_file(), 4096).decode("utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return hub_token(server)


def hub_token(server: str) -> str:
    """JUPYTERHUB_API_TOKEN, for the grader the hub set up for this user's server and for no other: the hub's token
    opens the user's own server, so it goes only to the address GRADER_SERVER names ("" for any other)."""
    token = os.environ.get("JUPYTERHUB_API_TOKEN", "").strip()
    named = os.environ.get("GRADER_SERVER", "").strip().rstrip("/")
    return token if token and named and server.strip().rstrip("/") == named else ""


def authorization(token: str) -> str:
    """The Authorization header for a token: a grader token (gs_, gi_, gl_) as a Bearer, a hub's as `token`."""
    return f"Bearer {token}" if token.startswith(("gs_", "gi_", "gl_")) else f"token {token}"


def submit(path: Path, server: str, token: str, lesson: str) -> tuple[dict[str, Any], str]:
    """Send the file, any token in it removed; the receipt (checked against the SHA-256 of what was sent) and the
    server's count of graded submissions (its `Graded-Submissions` header), or one line saying why not."""
    import httpx

    try:
        body = escape.redact(files.read_regular(path, 64 << 20))
    except OSError as err:  # missing, a folder, a link, unreadable: said in one line, nothing sent
        raise GraderError(f"cannot read {path}: {err.strerror or err}; nothing was sent") from None
    kind = "text/x-python" if path.suffix.lower() == ".py" else "application/x-ipynb+json"
    try:
        with _client(server) as http:
            response = http.post("/api/submissions", params={"lesson": lesson, "name": path.name}, content=body,
                                 headers={"Authorization": authorization(token), "Content-Type": kind})
    except httpx.HTTPError as err:
        raise GraderError(f"the server at {server} could not be reached ({type(err).__name__}): nothing was "
                          "submitted") from None
    used = attempts_text(response.headers.get("graded-submissions"))
    if response.status_code == 429:  # the reason says when to submit again; the receipt is of a copy kept
        raise GraderError(_said(response) + (f" ({used})" if used else ""))
    if response.status_code != 202:
        raise GraderError(f"not submitted ({response.status_code}): {_said(response)}")
    receipt: dict[str, Any] = response.json()
    if receipt.get("sha256") != hashlib.sha256(body).hexdigest():
        raise GraderError("the server's receipt names other bytes than the file sent: submit again")
    return receipt, response.headers.get("graded-submissions", "")


def follow(server: str, token: str, submission: str, timeout: float = WAIT_S) -> dict[str, Any]:
    """Poll the submission until it is done or failed (or `timeout` passes); its last state."""
    import httpx

    deadline = time.monotonic() + timeout
    delay = 0.5
    with _client(server) as http:
        while True:
            try:
                response = http.get(f"/api/submissions/{submission}", headers={"Authorization": authorization(token)})
            except httpx.HTTPError:
                response = None
            if response is not None and response.status_code != 200:
                raise GraderError(f"the submission cannot be followed ({response.status_code}): {_said(response)}")
            state: dict[str, Any] = response.json() if response is not None else {"status": "unknown"}
            if state.get("status") in ("done", "failed") or time.monotonic() > deadline:
                return state
            time.sleep(delay)
            delay = min(5.0, delay * 1.5)


def receipt_text(receipt: dict[str, Any], used: str = "") -> str:
    said = (f"submitted: id {receipt['id']}, sha256 {receipt['sha256']}, received_at {receipt['received_at']}"
            f"{local_time(receipt['received_at'])}, position {receipt['position']} in the queue, eta_s about "
            f"{receipt['eta_s']:g}")
    return said + "\n" + attempts_text(used) if attempts_text(used) else said


def local_time(iso: Any) -> str:
    """` (14:03:12 CET, your time)` for a receipt's UTC moment, or "" where it is not one."""
    import datetime as dt

    try:
        moment = dt.datetime.fromisoformat(str(iso)).astimezone()
    except ValueError:
        return ""
    return f" ({moment.strftime('%Y-%m-%d %H:%M:%S %Z')}, your time)"


def attempts_text(header: str | None) -> str:
    """The server's `Graded-Submissions` header (`used=1; of=4`) as `graded submissions: 1 of 4 used` ("" where
    the server said nothing readable)."""
    parts = dict(p.strip().partition("=")[::2] for p in (header or "").split(";") if "=" in p)
    if not parts.get("used", "").isdigit():
        return ""
    return f"graded submissions: {parts['used']}" + (f" of {parts['of']}" if parts.get("of", "").isdigit() else "") \
        + " used"


def feedback_text(state: dict[str, Any]) -> str:
    """The followed submission as lines for a terminal (what the course shows of it)."""
    from grader.base import escape, spelling

    if state.get("status") != "done":
        return f"{state.get('status')}: {escape.terminal(str(state.get('error') or 'not graded yet'))}"
    lines = []
    if state.get("score") is not None:
        lines.append(f"score {spelling.score(state['score'])} of {spelling.score(state['max_score'])}")
    if state.get("graded") != "graded":
        lines.append(f"rejected: {escape.terminal(str(state.get('error')))}")
    for exercise in state.get("exercises") or []:
        public = exercise.get("public") or []
        passed = sum(case.get("outcome") == "passed" for case in public)
        verdict = exercise.get("status") or f"{passed} of {len(public)} public checks passed"
        why = _why(exercise) if verdict != "passed" else ""
        lines.append(f"  {escape.terminal(str(exercise.get('id')))}: {escape.terminal(str(verdict))}"
                     + (f" ({escape.terminal(why)})" if why else ""))
    return "\n".join(lines)


def _why(exercise: dict[str, Any]) -> str:
    """The reason the page shows beside an exercise that did not pass: its first message the course shows, else
    the first public check's that failed ("" where the course shows neither)."""
    said = exercise.get("messages") or [case.get("message") for case in exercise.get("public") or []
                                        if case.get("outcome") != "passed" and case.get("message")]
    return str(said[0])[:300] if said else ""


class Sent(dict[str, Any]):
    """What `grader.submit()` returns: the receipt (with `wait=True`, also the graded state) as a dict, shown as one
    line where a notebook displays a cell's value: the receipt and the feedback were printed just above it, and a
    cell's output is saved into the notebook."""

    def line(self) -> str:
        state = self.get("state") or {}
        said = str(state.get("status") or "received")
        if state.get("score") is not None and state.get("max_score") is not None:
            from grader.base import spelling

            said += f", {spelling.score(state['score'])} of {spelling.score(state['max_score'])}"
        return f"submission {self['receipt'].get('id', '?')}: {said}"

    def __repr__(self) -> str:
        return f"<{self.line()}>"

    def _repr_html_(self) -> str:
        import html

        return f"<code>{html.escape(self.line())}</code>"


def from_notebook(path: str | Path | None, server: str | None, token: str | None, lesson: str | None,
                  wait: bool) -> Sent | None:
    """`grader.submit()`: submit the saved notebook this kernel runs (or the one named); print the receipt."""
    from grader import in_notebook

    notebook = Path(path) if path else in_notebook.session_notebook()
    if in_notebook.unsaved(in_notebook.recent_cells(), in_notebook.saved_cells(notebook)):
        print(f"save first: {notebook.name} on disk does not hold the cells you just ran; nothing was submitted")
        return None
    server = server or os.environ.get("GRADER_SERVER", "")
    token = token or stored_token(server)
    lesson = lesson or _lesson_of(notebook)
    missing = [what for what, value in (("server", server), ("token", token), ("lesson", lesson)) if not value]
    if missing:
        print(f"grader.submit() needs the {' and the '.join(missing)}: set GRADER_SERVER, and put your token in "
              f"{token_file()} (or GRADER_TOKEN) rather than in the notebook; or pass server=..., lesson=...")
        return None
    try:
        receipt, used = submit(notebook, server, token, lesson or "")
        print(receipt_text(receipt, used))
        if wait:
            state = follow(server, token, receipt["id"])
            print(feedback_text(state))
            return Sent(receipt=receipt, state=state)
    except GraderError as err:
        print(str(err))
        return None
    return Sent(receipt=receipt)


def _lesson_of(notebook: Path) -> str:
    try:
        data = json.loads(files.read_regular(notebook, 64 << 20))
        meta = data.get("metadata", {}).get("grader", {})
        return str(meta.get("lesson") or "") if isinstance(meta, dict) else ""
    except (OSError, ValueError, AttributeError):
        return ""
