"""The submission service's HTTP side (Starlette): receive, answer with a receipt, show each student their own.

    POST /api/submissions?lesson=ID      the notebook (or .py) as the body or a multipart field `file`:
                                         202 and the receipt; 401 no valid token; 429 (+ Retry-After) in the
                                         cooldown or past the limit (saved, not graded); 413 too large;
                                         422 not a submission; 507 the server's disk is full (nothing kept)
    GET  /api/submissions[?lesson=ID]    the caller's submissions, newest first (an instructor: ?student=)
    GET  /api/submissions/{id}           its state and, once done, the feedback the course's policy allows now
    GET  /api/submissions/{id}/report    the evidence report, where the policy shows the score
    POST /api/submissions/{id}/rerun     (instructor) a dead or failed job queued again
    POST /api/regrade?lesson=ID          (instructor) the class's latest submissions again, at low priority
    GET  /api/queue                      (instructor) counts by state, running jobs, p50/p95 of waiting, grading
    GET  /  /instructor  /files/{lesson}/{path}   the student's page, the instructor's, the batch folders' pages
    /lti/...                             LTI 1.3: the tool's keys, login, launch, deep linking (lti/pages.py)

A request carries `Authorization: Bearer TOKEN` (tokens.py); a page signs in once and keeps the token in a
cookie that is HttpOnly and SameSite=Strict, honoured for reading only: a change needs the header. Another
student's submission is a 404, exactly as one that does not exist. Repeated bad tokens from one address are
answered more and more slowly. The HTTP side never grades: it writes the queue and reads what was recorded.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import errno
import hmac
import logging
import shutil
import statistics
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from starlette.authentication import requires

from grader.base import database, files
from grader.base.errors import GraderError
from grader.classroom.batch_folder import BatchFolder
from grader.lesson import catalog, course, handout
from grader.service import jobs, policy, tokens, upload
from grader.service.hub import Hub
from grader.service.jobs import Job, Queue
from grader.service.lti import pages as lti_pages
from grader.service.lti.services import Outbox
from grader.service.tokens import Book, Identity

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.responses import Response

log = logging.getLogger(__name__)
"""The server's log (`grader serve` sets where it goes: stderr, one line a record)."""

HEADERS = {"Cache-Control": "no-store", "Referrer-Policy": "no-referrer", "X-Content-Type-Options": "nosniff"}
PAGE_CSP = "default-src 'self'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; frame-ancestors 'none'"
REPORT_CSP = "default-src 'none'; img-src data:; style-src 'unsafe-inline'; sandbox"
FILES_CSP = "default-src 'self'; img-src data:; style-src 'unsafe-inline'; script-src 'unsafe-inline'"
"""The batch folder's pages, for an instructor: the grader's own pages (every student text in them escaped), whose
links to each other carry the sign-in cookie."""


@dataclass(kw_only=True)
class Served:
    """What the HTTP side serves: the queue, the tokens, the batch folders, the lessons."""

    queue: Queue
    book: Book
    out: Path
    lessons: tuple[str, ...]
    jobs: int
    min_free: int = 64 * 1024**2
    """Bytes a disk must keep free for a new upload to be taken (a full disk refuses in one line)."""
    outbox: Outbox | None = None
    """The grades waiting for the LMS (counted on the instructor's page)."""
    public_url: str = ""
    """The server's address as the LMS knows it (ends in `/`): LTI's redirect_uri and links are built from it; ""
    where none is set: the address the server listens on, never a request's Host header."""
    hub: Hub | None = None
    """The JupyterHub this server is a service of (`--hub`): its users sign in through it, under its prefix."""


def app(served: Served) -> Any:
    """The Starlette application: who asks is settled once per request (tokens.Tokens), each handler says whom it
    serves (`@requires`), and every HTTP error is one line of JSON."""
    from starlette.applications import Starlette
    from starlette.exceptions import HTTPException
    from starlette.middleware import Middleware
    from starlette.middleware.authentication import AuthenticationMiddleware
    from starlette.routing import Route

    h = _Staff(served)
    routes = [
        Route("/", h.student_page), Route("/instructor", h.instructor_page),
        Route("/api/session", h.session, methods=["POST", "DELETE"]),
        Route("/api/lessons", h.lessons),
        Route("/api/submissions", h.submit, methods=["POST"]), Route("/api/submissions", h.history),
        Route("/api/submissions/{id}", h.one), Route("/api/submissions/{id}/report", h.report),
        Route("/api/submissions/{id}/rerun", h.rerun, methods=["POST"]), Route("/api/queue", h.queue_view),
        Route("/api/regrade", h.regrade, methods=["POST"]),
        Route("/files/{lesson}/{path:path}", h.batch_file), *lti_pages.routes(served)]
    if served.hub is not None:  # under the hub's prefix (/services/grader/), its sign-in beside the pages
        from starlette.routing import Mount

        routes = [Mount(served.hub.place.prefix.rstrip("/"), routes=[*routes, *served.hub.routes()])]
    return Starlette(middleware=[Middleware(AuthenticationMiddleware, backend=tokens.Tokens(served.book, served.hub))],
                     exception_handlers={HTTPException: _http_error}, routes=routes)


def _path(request: Request) -> str:
    """The path this server's pages are under: `/`, or the hub's prefix for this service."""
    return str(request.scope.get("root_path") or "").rstrip("/") + "/"


def _json(data: Any, status: int = 200, headers: dict[str, str] | None = None) -> Any:
    from starlette.responses import JSONResponse

    return JSONResponse(data, status, headers=dict(HEADERS, **(headers or {})))


def _refused(status: int, why: str, headers: dict[str, str] | None = None) -> Any:
    return _json({"error": why}, status, headers)


async def _http_error(request: Request, exc: Exception) -> Response:
    """An HTTP error as one line of JSON: where `@requires` refused, a 401 saying whose token is missing, or a 403
    for someone signed in who is no instructor."""
    from starlette.exceptions import HTTPException

    status = exc.status_code if isinstance(exc, HTTPException) else 500
    if status == 401 and request.user.is_authenticated:
        status, why = 403, "an instructor's token is needed"
    elif status == 401:
        why = (request.scope.get("grader.why") or
               "no valid token: send `Authorization: Bearer TOKEN` with the token you were given")
    else:
        why = str(exc.detail) if isinstance(exc, HTTPException) else "the server failed"
    return _refused(status, why)


class _Handlers:
    def __init__(self, served: Served) -> None:
        self.s = served
        self.latest: dict[tuple[str, str], tuple[int | None, str]] = {}
        self.intake = upload.Intake(served.queue, served.jobs)

    # -- pages ------------------------------------------------------------------------------------------------
    async def student_page(self, request: Request) -> Response:
        return self._page("serve_student.html.j2")

    async def instructor_page(self, request: Request) -> Response:
        return self._page("serve_instructor.html.j2")

    def _page(self, template: str) -> Any:
        from starlette.responses import HTMLResponse

        from grader.report import render

        here = course.current()
        lessons = [(i, catalog.get(i).title) for i in self.s.lessons]
        due = {i: moment.isoformat() if (moment := here.policy(i).due) else "" for i in self.s.lessons}
        named = here.name or "the course"  # never the course's folder: the page is public
        names = {i: " ".join(sorted(handout.needed_names(catalog.get(i)))) for i in self.s.lessons}  # the handouts'
        place = self.s.hub.place if self.s.hub is not None else None  # several courses: a sign-in each
        slots = {role: place.slot(role) if place else f"grader-{'token' if role == 'student' else role}"
                 for role in ("student", "instructor")}
        html = render.environment().get_template(template).render(lessons=lessons, course=named, due=due,
                                                                  zone=here.timezone, names=names,
                                                                  hub=self.s.hub is not None, slots=slots)
        return HTMLResponse(html, headers=dict(HEADERS, **{"Content-Security-Policy": PAGE_CSP}))

    async def session(self, request: Request) -> Response:
        """Sign a page in (the token in a cookie a page's links carry, for reading) or out."""
        if request.method == "DELETE":
            response = _json({"signed_out": True})
            response.delete_cookie(tokens.COOKIE, path=_path(request))
            return response
        if not request.user.is_authenticated:  # a POST: only the header signs it (tokens.Tokens)
            return _refused(401, "no valid token: use the one your instructor gave you")
        person = tokens.person(request)
        header = request.headers.get("authorization", "")
        if header[:7].lower() != "bearer ":  # a hub's token: the page signs in through the hub (hub/login)
            return _refused(400, "a page signs in with a grader token, or through the hub's own sign-in")
        response = _json({"who": person.who, "name": person.name, "role": person.role})
        token = header[7:].strip()
        response.set_cookie(tokens.COOKIE, token, httponly=True, samesite="strict", path=_path(request),
                            secure=request.url.scheme == "https")
        return response

    @requires("student", status_code=401)
    async def lessons(self, request: Request) -> Response:
        """The course's name and lessons (`declared`: named in its course.toml, so set for this course)."""
        here = course.current()
        declared = dict(here.policies)
        return _json({"course": here.name, "lessons": [{"id": i, "title": catalog.get(i).title,
                                                        "declared": i in declared} for i in self.s.lessons]})

    # -- submitting -------------------------------------------------------------------------------------------
    @requires("student", status_code=401)
    async def submit(self, request: Request) -> Response:
        person = tokens.person(request)
        lesson = request.query_params.get("lesson", "")
        if lesson not in self.s.lessons:
            return _refused(404, f"no lesson {lesson[:60]!r} here (served: {', '.join(self.s.lessons)})")
        limits = course.current().policy(lesson).submissions
        try:
            got = await upload.read(request, limits.max_bytes)
        except upload.Refused as err:
            return _refused(err.status, str(err))
        try:
            upload.check(got, lesson)  # from memory, under a millisecond: no thread to hop to and back
        except upload.Refused as err:
            return _refused(err.status, str(err))
        except Exception as err:  # the check itself failed (the grader's fault): the file is still taken and graded
            log.warning(f"an upload of {person.who} was taken unchecked ({type(err).__name__}: "
                  f"{str(err)[:200]})")
        if shutil.disk_usage(self.s.out if self.s.out.exists() else self.s.out.parent).free < self.s.min_free:
            return _refused(507, "the server's disk is full: nothing was kept; submit again later")
        try:
            return await self._taken(person, lesson, got)  # kept by the intake's one thread, in arrival order
        except OSError as err:
            if err.errno in (errno.ENOSPC, errno.EDQUOT):
                return _refused(507, "the server's disk is full: nothing was kept; submit again later")
            raise

    async def _taken(self, person: Identity, lesson: str, got: upload.Upload) -> Any:
        now = time.time()
        received_at = dt.datetime.fromtimestamp(now, dt.UTC).isoformat(timespec="milliseconds")
        arrival = jobs.Arrival(lesson, person.who, got.sha256, got.name, got.body, received_at, now)
        try:
            receipt, admission = await asyncio.wrap_future(self.intake.take(arrival))
        except Exception as err:
            if database.disk_full(err):  # the rows were not written
                raise OSError(errno.ENOSPC, "disk full") from None
            raise
        used = admission.header()  # "1 of 4 used", wherever the receipt is shown
        if not admission.graded:
            headers = {"Retry-After": str(admission.retry_after)} if admission.retry_after else {}
            return _json({"error": admission.why, "saved": receipt.to_dict()}, 429, headers | used)
        return _json(receipt.to_dict(), 202, used)

    # -- reading ----------------------------------------------------------------------------------------------
    @requires("student", status_code=401)
    async def history(self, request: Request) -> Response:
        person = tokens.person(request)
        lesson = request.query_params.get("lesson") or None
        student = request.query_params.get("student") if person.role == "instructor" else None
        jobs = await asyncio.to_thread(self.s.queue.of_student, student or person.who, lesson)
        return _json({"submissions": [self._shown(job, person) for job in jobs]})

    def _mine(self, job: Job | None, person: Identity) -> bool:
        return job is not None and (person.role == "instructor" or hmac.compare_digest(job.student, person.who))

    def _shown(self, job: Job, person: Identity) -> dict[str, Any]:
        return policy.shown(job, person.role, report=self._latest(job))

    def _latest(self, job: Job) -> bool:
        """Whether the lesson's batch folder holds this submission's report (its student's latest grade); the
        result is read again only when its file changed."""
        if job.state != "done":
            return False
        folder = BatchFolder(self.s.out / job.lesson)
        try:
            stamp = folder.result(job.student).stat().st_mtime_ns
        except OSError:
            return False
        key = (job.lesson, job.student)
        if self.latest.get(key, (None, ""))[0] != stamp:
            try:
                recorded, _ = folder.recorded(job.student, job.lesson)
            except GraderError:
                return False
            self.latest[key] = (stamp, recorded.digest or "")
        return self.latest[key][1] == job.sha256

    @requires("student", status_code=401)
    async def one(self, request: Request) -> Response:
        person = tokens.person(request)
        job = await asyncio.to_thread(self.s.queue.get, request.path_params["id"][:64])
        if job is None or not self._mine(job, person):
            return _refused(404, "no such submission of yours")
        return _json(await asyncio.to_thread(self._shown, job, person))

    @requires("student", status_code=404)  # another's report, or none: the same 404 as to someone signed out
    async def report(self, request: Request) -> Response:
        from starlette.responses import HTMLResponse

        person = tokens.person(request)
        job = await asyncio.to_thread(self.s.queue.get, request.path_params["id"][:64])
        if job is None or not self._mine(job, person):
            return _refused(404, "no such submission of yours")
        if job.state != "done" or not await asyncio.to_thread(self._latest, job):
            return _refused(404, "only the latest graded submission's report is kept")
        if person.role != "instructor" and policy.level(job.lesson) != "score":
            return _refused(403, "the report is shown after the due date")
        html = files.read_regular(BatchFolder(self.s.out / job.lesson).report(job.student, "html")).decode()
        return HTMLResponse(html, headers=dict(HEADERS, **{"Content-Security-Policy": REPORT_CSP}))



class _Staff(_Handlers):
    """The instructor's handlers, beside the students' (each asks for an instructor's token)."""

    @requires("instructor", status_code=401)
    async def rerun(self, request: Request) -> Response:
        job = await asyncio.to_thread(self.s.queue.rerun, request.path_params["id"][:64])
        if job is None:
            return _refused(404, "no such submission")
        return _json(policy.shown(job, "instructor"))

    @requires("instructor", status_code=401)
    async def regrade(self, request: Request) -> Response:
        """(instructor) The class's latest submissions of a lesson graded again at low priority, with their recorded
        seeds, after a fix to the lesson: students' new submissions still go first; changes.csv says who moved."""
        lesson = request.query_params.get("lesson", "")
        if lesson not in self.s.lessons:
            return _refused(404, f"no lesson {lesson[:60]!r} here")
        try:
            regrade, queued = await asyncio.to_thread(self._regrade, lesson, request.query_params.get("force") == "1")
        except GraderError as err:
            return _refused(409, str(err))
        return _json({"regrade": regrade, "queued": queued}, 202)

    def _regrade(self, lesson_id: str, force: bool) -> tuple[str, int]:
        from grader.authoring import validate

        folder = BatchFolder(self.s.out / lesson_id)
        if not folder.is_batch():
            raise GraderError(f"nothing of {lesson_id} is graded yet")
        with folder.open_gradebook() as book:
            if not force:
                validate.before_regrade(catalog.get(lesson_id), book.recorded(lesson_id))
            regrade = book.start_regrade(lesson_id)
        return regrade, self.s.queue.regrade(lesson_id, regrade)

    @requires("instructor", status_code=401)
    async def queue_view(self, request: Request) -> Response:
        return _json(await asyncio.to_thread(self._queue_data))

    def _queue_data(self) -> dict[str, Any]:
        q = self.s.queue
        waiting, grading = q.durations()
        return {"counts": q.counts(), "running": [policy.shown(j, "instructor") for j in q.recent(("running",))],
                "trouble": [policy.shown(j, "instructor") for j in q.recent(("dead", "failed"), 50)],
                "recent": [policy.shown(j, "instructor") for j in q.recent(("done", "queued"), 30)],
                "wait_s": _percentiles(waiting), "grade_s": _percentiles(grading), "lessons": list(self.s.lessons),
                "out": str(self.s.out), "passback": self.s.outbox.counts() if self.s.outbox is not None else {}}

    @requires("instructor", status_code=401)
    async def batch_file(self, request: Request) -> Response:
        """The batch folders' own pages (the dashboard, the reports, similarity) for an instructor's browser."""
        from starlette.responses import HTMLResponse

        lesson, path = request.path_params["lesson"], request.path_params["path"]
        page = BatchFolder(self.s.out / lesson).page(path) if lesson in self.s.lessons else None
        if page is None:
            return _refused(404, "no such page")
        try:
            html = files.read_regular(page, 64 << 20).decode("utf-8")
        except (OSError, UnicodeDecodeError):
            return _refused(404, "no such page (nothing graded yet?)")
        return HTMLResponse(html, headers=dict(HEADERS, **{"Content-Security-Policy": FILES_CSP}))


def _percentiles(values: list[float]) -> dict[str, float | None]:
    if not values:
        return {"p50": None, "p95": None, "n": 0}
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, int(round(0.95 * (len(ordered) - 1))))]
    return {"p50": round(statistics.median(ordered), 3), "p95": round(p95, 3), "n": len(ordered)}
