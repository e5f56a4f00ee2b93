"""`grader review OUT`: the page that grades written answers by question, served on 127.0.0.1 only.

As Jupyter does, the address carries a random token, and every request without
it is refused: a page or a report by the token in its address, a change (a POST)
by the token in a header, so another page in the same browser cannot make one.
No cookie carries it: a browser sends 127.0.0.1's cookies to every port, so any
other local server the browser visits would receive it and could act as the
reviewer. Pages say `Referrer-Policy: no-referrer`, so the address's token goes
nowhere else. Decisions are saved as they are made
(review.py); grades.csv and the dashboard are rewritten a moment after the last
change, and when the server stops.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import json
import secrets
import threading
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from grader.base import files
from grader.base.errors import GraderError
from grader.classroom.review import Answer, Review
from grader.classroom.review_store import Stale
from grader.judge import answer_groups

HEADERS = {"Cache-Control": "no-store", "Referrer-Policy": "no-referrer"}
REFRESH_AFTER = 2.0
"""Seconds after the last change before grades.csv and the dashboard are rewritten."""


def app(review: Review, token: str) -> Any:
    """The Starlette application over one open `Review`."""
    from starlette.applications import Starlette
    from starlette.routing import Route

    served = _Served(review, token)

    @contextlib.asynccontextmanager
    async def lifespan(_: Any) -> AsyncIterator[None]:
        task = asyncio.ensure_future(served.refresher())
        yield
        task.cancel()
        await asyncio.to_thread(_refresh, review, served.lock)

    return Starlette(routes=[Route("/", served.page), Route("/report/{student}", served.report),
                             Route("/api/changes", served.changes),
                             Route("/api/{what}", served.change, methods=["POST"])], lifespan=lifespan)


class _Served:
    """The page's handlers over one review: one change at a time (a lock), the class files rewritten after."""

    def __init__(self, review: Review, token: str) -> None:
        self.review, self.token = review, token
        self.lock = threading.Lock()  # one decision at a time: the page's clicks and an import never interleave
        self.dirty = asyncio.Event()

    def allowed(self, request: Any) -> bool:
        """The token in the address (never a cookie: see the module's note)."""
        given = request.query_params.get("token") or ""
        return hmac.compare_digest(given.encode(), self.token.encode())

    async def page(self, request: Any) -> Any:
        from starlette.responses import HTMLResponse, PlainTextResponse

        from grader.report import render

        if not self.allowed(request):
            return PlainTextResponse("open the address `grader review` printed (it carries the token)", 403)
        asked = request.query_params.get("threshold", "")
        try:
            threshold = min(1.0, max(0.05, float(asked))) if asked else answer_groups.THRESHOLD
        except ValueError:
            threshold = answer_groups.THRESHOLD
        data = await asyncio.to_thread(self._page_data, threshold)
        html = render.environment().get_template("review.html.j2").render(data=data, token=self.token,
                                                                          lesson=self.review.lesson)
        return HTMLResponse(html, headers=dict(HEADERS, **{"Content-Security-Policy": "default-src 'self'; "
                                                           "script-src 'unsafe-inline'; style-src 'unsafe-inline'"}))

    def _page_data(self, threshold: float) -> str:
        with self.lock:
            return page_data(self.review, threshold)

    async def report(self, request: Any) -> Any:
        from starlette.responses import HTMLResponse, PlainTextResponse

        student = request.path_params["student"]
        if not self.allowed(request) or student not in self.review.graded:
            return PlainTextResponse("no such report", 404)
        html = files.read_regular(self.review.folder.report(student, "html")).decode("utf-8")
        return HTMLResponse(html, headers=HEADERS)

    async def changes(self, request: Any) -> Any:
        """What every grader decided since the page's last look (the page asks every two seconds)."""
        from starlette.responses import JSONResponse

        if not self.allowed(request):
            return JSONResponse({"error": "refused: no token"}, 403)
        since = request.query_params.get("since", "0")
        data = await asyncio.to_thread(self._changes, int(since) if since.isdigit() else 0)
        return JSONResponse(data, headers=HEADERS)

    def _changes(self, since: int) -> dict[str, Any]:
        with self.lock:
            return changes(self.review, since)

    async def change(self, request: Any) -> Any:
        from starlette.responses import JSONResponse

        header = request.headers.get("x-review-token", "").encode()
        if not hmac.compare_digest(header, self.token.encode()):
            return JSONResponse({"error": "refused: no token"}, 403)
        try:
            body = await request.json()
        except ValueError:
            body = None
        if not isinstance(body, dict):
            return JSONResponse({"error": "the request was not a JSON object"}, 400)
        try:
            done = await asyncio.to_thread(_apply, self.review, self.lock, request.path_params["what"], body)
        except Stale as err:
            return JSONResponse({"error": str(err), "stale": True}, 409)
        except GraderError as err:
            return JSONResponse({"error": str(err)}, 400)
        self.dirty.set()
        return JSONResponse(done)

    async def refresher(self) -> None:
        while True:
            await self.dirty.wait()
            await asyncio.sleep(REFRESH_AFTER)
            self.dirty.clear()
            await asyncio.to_thread(_refresh, self.review, self.lock)


def _refresh(review: Review, lock: threading.Lock) -> None:
    with lock:
        review.refresh()


def _apply(review: Review, lock: threading.Lock, what: str, body: dict[str, Any]) -> dict[str, Any]:
    """One change from the page, under the lock; returns what the page shows next."""
    def text(key: str) -> str:
        value = body.get(key, "")
        if not isinstance(value, str):
            raise GraderError(f"{key} must be text")
        return value

    def names(key: str) -> list[str]:
        value = body.get(key) or []
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise GraderError(f"{key} must be a list of names")
        return value

    with lock:
        cell = text("question")
        students = names("students") if what in ("decide", "clear") else []
        if what == "decide":
            raw = body.get("points")
            points = float(raw) if isinstance(raw, (int, float)) and not isinstance(raw, bool) else None
            got = review.decide(cell, students, names("items"), text("comment"), points, seen=_seen(body),
                                grouping=text("grouping"))
            return {"points": got, "progress": review.progress(), "versions": _versions(review, cell, students)}
        if what == "clear":
            review.clear(cell, students, _seen(body))
            return {"progress": review.progress(), "versions": _versions(review, cell, students)}
        if what == "item":
            raw = body.get("points")
            if not isinstance(raw, (int, float)) or isinstance(raw, bool):
                raise GraderError("points must be a number")
            return {"rescored": review.set_item_points(cell, text("item"), float(raw))}
    raise GraderError(f"no such change: {what[:40]!r}")


def _seen(body: dict[str, Any]) -> dict[str, int] | None:
    """The versions the page showed (absent: a client that does not say, such as an older page: not checked)."""
    raw = body.get("seen")
    if raw is None:
        return None
    if not isinstance(raw, dict) or not all(isinstance(v, int) and not isinstance(v, bool) for v in raw.values()):
        raise GraderError("seen must map each student to the version the page showed")
    return {str(k): int(v) for k, v in raw.items()}


def _versions(review: Review, cell: str, students: list[str]) -> dict[str, int]:
    return {s: review.store.version(review.lesson.id, s, cell) for s in students}


def serve(out: Path, grader: str, port: int = 0, ready: Any = None, second: bool = False) -> None:
    """Serve the review of `out` on 127.0.0.1 until interrupted; `ready(url)` is called with the address;
    `second`: the blind second grading of the course's sample."""
    import socket

    import uvicorn

    review = Review(out, grader, second)
    token = secrets.token_urlsafe(24)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    sock.listen(128)  # a request made as soon as the address is printed waits for the server, not refused
    url = f"http://127.0.0.1:{sock.getsockname()[1]}/?token={token}"
    server = uvicorn.Server(uvicorn.Config(app(review, token), log_level="warning", lifespan="on"))
    if ready is not None:
        ready(url)
    try:
        server.run(sockets=[sock])
    finally:
        review.close()


def changes(review: Review, since: int) -> dict[str, object]:
    """The answers decided or cleared (by any grader, on any page) since the log's row `since`, as the page shows
    them; the answers kept in memory follow, and so does each changed grade."""
    latest, changed = review.store.changes(review.lesson.id, since, "second" if review.second else "written")
    decided = review.decided()
    versions = review.store.versions(review.lesson.id)
    shown = []
    for student, cell in changed:
        answer = review.answers.get(cell, {}).get(student)
        if answer is None:
            continue
        answer.decision = decided.get((student, cell))
        shown.append({"question": cell, **_shown(answer, versions, cell)})
    return {"since": latest, "answers": shown, "progress": review.progress()}


def _shown(a: Answer, versions: dict[tuple[str, str], int], cell: str) -> dict[str, object]:
    d = a.decision
    return {"student": a.student, "items": list(d.items) if d else None, "points": d.points if d else None,
            "comment": d.comment if d else "", "grader": d.grader if d else "", "at": d.at if d else "",
            "version": versions.get((a.student, cell), 0)}


def _agreement(review: Review) -> dict[str, Any] | None:
    found = None if review.second else review.agreement()
    return found.to_dict() if found is not None else None


def page_data(review: Review, threshold: float = answer_groups.THRESHOLD) -> str:
    """What the page's script starts from, as JSON (escaped for a <script> element), as the store holds it now;
    the answers grouped at this similarity threshold."""
    review.reread()
    item_points = review.store.item_points(review.lesson.id)
    versions = review.store.versions(review.lesson.id)
    questions = [{"cell": q.cell, "title": q.title, "points": q.points,
                  "rubric": [{"id": i.id, "points": item_points.get((q.cell, i.id), i.points), "default": i.points,
                              "text": i.text}
                             for i in q.rubric],
                  "groups": [{"key": g.key, "label": g.label,
                              "answers": [{"name": a.name, "text": a.text[:20000], "blank": a.blank,
                                           **_shown(a, versions, q.cell)} for a in g.answers]}
                             for g in review.groups(q.cell, threshold)]}
                 for q in review.lesson.written]
    data = {"lesson": review.lesson.id, "title": review.lesson.title, "questions": questions,
            "progress": review.progress(), "since": review.store.latest(), "threshold": threshold,
            "second": review.second, "agreement": _agreement(review)}
    return json.dumps(data).replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
