"""Several courses on one hub (`grader serve --hub --courses ROOT`): one service of the hub in front of a server per
course folder, each at /services/grader/<course>/.

Every folder under ROOT that holds a course.toml is a course, served by its own `grader serve --hub` (its
policy, queue, gradebook, instructors group and LTI registration; its grades in OUT/<course>/) on a Unix
socket in this front's own 0700 folder; a folder added under ROOT is served within seconds, with no restart of the hub or of
this service, and a course server that stops is started again. The front passes each request under
/services/grader/<course>/ to its course as it came (the hub's proxy does the same for the front), so the
course's own pages, API, sign-in and LTI are the single course's, unchanged.

The front itself answers three things: its page, listing the courses the signed-in hub user is in (asked of
each course with the user's own hub token, so a course decides who is in it); `/api/courses` (the same, for a
token); and `/api/submissions` with no course named, which goes to the one course the user is in that serves
the lesson (the notebook's lesson, as `grader.submit()` sends it), so a student's server needs only
GRADER_SERVER. The browser's sign-in at the hub returns to the one callback the hub knows
(/services/grader/oauth_callback): the state cookie names the course the sign-in began at, and the callback
goes to it.
"""

from __future__ import annotations

import asyncio
import hashlib
import html
import json
import logging
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from grader.base.errors import GraderError
from grader.service import hub

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.responses import Response

log = logging.getLogger(__name__)

NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
"""A course folder's name as a path part of its address (anything else under ROOT is not served)."""
SCAN_S = 1.0
"""How often ROOT is looked at for a new course folder (and a stopped course server started again)."""
MEMBER_S = 30.0
"""How long whether a token's user is in a course is kept."""
MAX_BODY = 64 << 20
"""The largest request body passed on (a course's own limit is far lower, and it refuses in one line)."""
HOP = {"connection", "keep-alive", "transfer-encoding", "te", "upgrade", "proxy-authorization", "host",
       "content-length", "content-encoding"}
COOKIE = "grader-hub-front"
"""The front page's sign-in: the hub token its OAuth gave this browser (HttpOnly, the service's path)."""


@dataclass
class Course:
    """One course folder and the server that serves it."""

    name: str
    folder: Path
    socket: Path = Path()
    """The Unix socket its server answers on, in the front's own 0700 folder."""
    proc: subprocess.Popen[bytes] | None = None
    started: float = 0.0


@dataclass(frozen=True)
class Lessons:
    """A course as one of its members sees it: its name, its lessons, and those its course.toml sets."""

    title: str
    served: tuple[str, ...]
    declared: tuple[str, ...]


@dataclass
class Front:
    """The courses under ROOT and their servers; the front's routes."""

    root: Path
    out: Path
    place: hub.Place
    args: tuple[str, ...] = ()
    """What `grader serve` was given beside --hub/--courses/--out (--jobs, the sandbox's flags), for each course."""
    sockets: Path = Path()
    """A 0700 folder of the front's own, where each course's server answers on a Unix socket."""
    courses: dict[str, Course] = field(default_factory=dict)
    members: dict[tuple[str, str], tuple[float, Lessons | None]] = field(default_factory=dict)

    # -- the course servers -------------------------------------------------------------------------------------
    def watch(self, stop: threading.Event) -> None:
        """Start a server for every course folder, now and whenever one is added; again for one that stopped. A
        folder that cannot be read, or a server that cannot be started, is said in the log and tried again; the
        watch itself never stops before the front does (its servers stop with it)."""
        while not stop.is_set():
            try:
                folders = sorted(self.root.iterdir())
            except OSError as err:
                log.warning(f"the courses under {self.root} cannot be listed ({err})")
                folders = []
            for folder in folders:
                try:
                    self._keep(folder)
                except OSError as err:
                    log.warning(f"the course {folder.name[:64]!r} is not served ({err})")
            stop.wait(SCAN_S)
        for course in list(self.courses.values()):
            if course.proc is not None and course.proc.poll() is None:
                course.proc.terminate()

    def _keep(self, folder: Path) -> None:
        if not NAME.fullmatch(folder.name) or folder.is_symlink() or not (folder / "course.toml").is_file():
            return
        course = self.courses.get(folder.name) or Course(folder.name, folder)
        if course.proc is None or (course.proc.poll() is not None and time.monotonic() - course.started > 5):
            self._start(course)
        self.courses = {**self.courses, folder.name: course}  # a new dict: the routes read it as it is

    def _start(self, course: Course) -> None:
        course.socket = self.sockets / f"{course.name}.sock"
        prefix = f"{self.place.prefix}{course.name}/"
        env = dict(os.environ, JUPYTERHUB_SERVICE_PREFIX=prefix, GRADER_HUB_COURSE=course.name,
                   GRADER_HUB_SOCKET=str(course.socket), GRADER_HUB_PARENT=str(os.getpid()))
        command = [sys.executable, "-m", "grader", "--course", str(course.folder), "serve", "--hub", "--out",
                   str(self.out / course.name), *self.args]
        course.proc = subprocess.Popen(command, env=env, stdin=subprocess.DEVNULL)
        course.started = time.monotonic()
        log.info(f"serving the course {course.name} at {prefix}")

    # -- the routes ---------------------------------------------------------------------------------------------
    def routes(self) -> list[Any]:
        from starlette.routing import Route

        return [Route("/", self.index), Route("/hub/login", self.login), Route("/oauth_callback", self.callback),
                Route("/api/courses", self.mine), Route("/api/submissions", self.submit, methods=["POST"]),
                Route("/api/submissions/{id}", self.follow),
                Route("/{course}/{path:path}", self.passed, methods=["GET", "HEAD", "POST", "PUT", "DELETE"])]

    async def passed(self, request: Request) -> Response:
        """A request under /services/grader/<course>/, passed to that course's server as it came."""
        course = self.courses.get(request.path_params["course"])
        if course is None or course.proc is None:
            return _said(404, f"no course {request.path_params['course'][:64]!r} here")
        return await self._pass(request, course, request.url.path)

    async def _pass(self, request: Request, course: Course, path: str) -> Response:
        import httpx
        from starlette.responses import Response

        # a body streams through as it arrives (the course's own upload limits count it and stop it); a read has none
        body = _streamed(request) if request.method in ("POST", "PUT", "PATCH") else None
        headers = [(k, v) for k, v in request.headers.items() if k.lower() not in HOP and not
                   k.lower().startswith("x-forwarded-")]
        headers.append(("x-forwarded-for", request.client.host if request.client else ""))  # as uvicorn saw it
        url = f"http://{course.name}{path}" + (f"?{request.url.query}" if request.url.query else "")
        try:
            async with _client(course, httpx.Timeout(300.0, connect=5.0)) as http:
                answer = await http.request(request.method, url, content=body, headers=headers)
        except (httpx.ConnectError, FileNotFoundError):
            return _said(503, f"the course {course.name} is starting: try again in a few seconds")
        except TooLarge:
            return _said(413, "the request is too large")
        except httpx.HTTPError as err:
            return _said(502, f"the course {course.name} did not answer ({type(err).__name__}): try again")
        response = Response(answer.content, answer.status_code)
        response.raw_headers = [(k.encode("latin-1"), v.encode("latin-1")) for k, v in answer.headers.multi_items()
                                if k.lower() not in HOP] + [(b"content-length", str(len(answer.content)).encode())]
        return response

    # -- who is in which course ---------------------------------------------------------------------------------
    async def lessons_of(self, authorization: str, course: Course) -> Lessons | None:
        """The lessons of `course`, if the user of this Authorization is in it (None: not in it)."""
        import httpx

        key = (hashlib.sha256(authorization.encode()).hexdigest(), course.name)
        kept = self.members.get(key)
        if kept is not None and time.monotonic() - kept[0] < MEMBER_S:
            return kept[1]
        if len(self.members) > 10_000:  # what has run out is let go
            now = time.monotonic()
            self.members = {k: v for k, v in self.members.items() if now - v[0] < MEMBER_S}
        try:
            async with _client(course, httpx.Timeout(30.0)) as http:
                answer = await http.get(f"http://{course.name}{self.place.prefix}{course.name}/api/lessons",
                                        headers={"Authorization": authorization})
        except (httpx.HTTPError, OSError):
            return None  # a course still starting is not counted
        said = answer.json() if answer.status_code == 200 else None
        found = Lessons(str(said.get("course") or course.name), tuple(str(x["id"]) for x in said["lessons"]),
                        tuple(str(x["id"]) for x in said["lessons"] if x.get("declared"))) if said else None
        self.members[key] = (time.monotonic(), found)
        return found

    async def _in(self, authorization: str) -> dict[str, Lessons]:
        if authorization[:6].lower() not in ("token ", "bearer") or len(authorization) > 600:
            return {}
        running = [c for c in self.courses.values() if c.proc is not None and c.proc.poll() is None]
        found = await asyncio.gather(*(self.lessons_of(authorization, c) for c in running))
        return {c.name: lessons for c, lessons in zip(running, found, strict=True) if lessons is not None}

    async def mine(self, request: Request) -> Response:
        """The courses the token's user is in, with their lessons."""
        authorization = request.headers.get("authorization", "")
        courses = await self._in(authorization) if authorization else {}
        return _json({"courses": [{"course": name, "title": seen.title, "url": f"{self.place.prefix}{name}/",
                                   "lessons": list(seen.served)} for name, seen in sorted(courses.items())]})

    async def submit(self, request: Request) -> Response:
        """A submission that names no course: to the one course the user is in that serves its lesson (of several,
        the one whose course.toml sets that lesson)."""
        lesson = request.query_params.get("lesson", "")
        courses = await self._in(request.headers.get("authorization", ""))
        serving = sorted(name for name, seen in courses.items() if lesson in seen.served)
        setting = [name for name in serving if lesson in courses[name].declared]
        serving = setting if len(serving) > 1 and setting else serving
        if not courses:
            return _said(401, "you are in no course served here (send your hub token: Authorization: token ...)")
        if len(serving) != 1:
            where = ", ".join(f"{self.place.prefix}{n}/" for n in serving) or ", ".join(sorted(courses))
            return _said(404 if not serving else 409, f"lesson {lesson[:60]!r} is in {len(serving)} of your courses "
                         f"({where}): set GRADER_SERVER to the course's address")
        name = serving[0]
        return await self._pass(request, self.courses[name], f"{self.place.prefix}{name}/api/submissions")

    async def follow(self, request: Request) -> Response:
        """A submission's state, from whichever of the user's courses holds it."""
        for name in sorted(await self._in(request.headers.get("authorization", ""))):
            answer = await self._pass(request, self.courses[name],
                                      f"{self.place.prefix}{name}/api/submissions/{request.path_params['id']}")
            if answer.status_code != 404:
                return answer
        return _said(404, "no such submission of yours")

    # -- the front page and its sign-in -------------------------------------------------------------------------
    async def login(self, request: Request) -> Response:
        return hub.to_hub(request, self.place)

    async def callback(self, request: Request) -> Response:
        """The hub's answer to a sign-in: to the course it began at, or (begun at the front page) the front's."""
        from starlette.responses import RedirectResponse

        course = self.courses.get(hub.began_at(request))
        if course is not None:
            return await self._pass(request, course, f"{self.place.prefix}{course.name}/oauth_callback")
        token = await hub.code_taken(request)
        if token is None:
            return _said(403, hub.NOT_COMPLETED)
        response = RedirectResponse(self.place.prefix, 302)
        response.set_cookie(COOKIE, token, max_age=3600, path=self.place.prefix, httponly=True, samesite="lax",
                            secure=request.url.scheme == "https")
        response.delete_cookie(hub.STATE_COOKIE, path=self.place.prefix)
        return response

    async def index(self, request: Request) -> Response:
        """The courses the signed-in hub user is in, each a link to its page."""
        from starlette.responses import HTMLResponse, RedirectResponse

        token = request.cookies.get(COOKIE, "")
        try:  # a sign-in the hub no longer knows (expired, revoked, another person's) signs in again
            known = bool(token) and bool(await hub.oauth().user_for_token(token, sync=False))
        except hub.HUB_ERRORS as err:
            return _said(503, f"the hub could not be asked who you are ({type(err).__name__}): try again in a minute")
        if not known:
            again = RedirectResponse(f"{self.place.prefix}hub/login", 302)
            again.delete_cookie(COOKIE, path=self.place.prefix)
            return again
        courses = await self._in(f"token {token}")
        return HTMLResponse(page(self.place.prefix, {name: seen.title for name, seen in courses.items()}),
                            headers={"Cache-Control": "no-store",
                                     "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'"})


def _client(course: Course, timeout: Any) -> Any:
    """An HTTP client that reaches the course's server on its Unix socket."""
    import httpx

    return httpx.AsyncClient(transport=httpx.AsyncHTTPTransport(uds=str(course.socket)), timeout=timeout)


def page(prefix: str, titles: dict[str, str]) -> str:
    """The front page: the courses a hub user is in (folder name -> the course's name), each a link to its page;
    every name escaped."""
    items = "".join(f'<li><a href="{html.escape(prefix + name)}/">{html.escape(title or name)}</a></li>'
                    for name, title in sorted(titles.items())) or "<li>You are in no course graded here.</li>"
    return ('<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" '
            'content="width=device-width, initial-scale=1"><title>Your courses</title><style>body { font: 16px/1.5 '
            'system-ui, sans-serif; margin: 2em; color: #1d2330; } a { color: #0b4f9c; }</style></head><body><main>'
            f'<h1>Your courses</h1><ul>{items}</ul></main></body></html>')


class TooLarge(Exception):
    """A request body past MAX_BODY: stopped as it arrives."""


async def _streamed(request: Request) -> AsyncIterator[bytes]:
    """The request's body as it arrives, stopped past MAX_BODY."""
    sent = 0
    async for chunk in request.stream():
        sent += len(chunk)
        if sent > MAX_BODY:
            raise TooLarge
        yield chunk


def _json(data: Any, status: int = 200) -> Any:
    from starlette.responses import Response

    return Response(json.dumps(data), status, media_type="application/json", headers={"Cache-Control": "no-store"})


def _said(status: int, why: str) -> Any:
    return _json({"error": why}, status)


def serve(root: Path, out: Path, args: tuple[str, ...], ready: Any = None) -> None:
    """Serve every course under `root` as one service of the hub, until the hub stops it (SIGTERM) or ends."""
    import uvicorn
    from starlette.applications import Starlette
    from starlette.routing import Mount

    place = hub.Place.from_environment()
    if not root.is_dir():
        raise GraderError(f"--courses {root}: not a folder of course folders")
    hub.stops_with_parent()
    said = logging.StreamHandler(sys.stderr)
    said.setFormatter(logging.Formatter("grader serve: %(message)s"))
    log.handlers[:] = [said]
    log.setLevel(logging.INFO)
    import tempfile

    front = Front(root.absolute(), out.absolute(), place, args, Path(tempfile.mkdtemp(prefix="grader-courses-")))
    stop = threading.Event()
    watching = threading.Thread(target=front.watch, args=(stop,), name="grader-courses", daemon=True)
    watching.start()
    app = Starlette(routes=[Mount(place.prefix.rstrip("/"), routes=front.routes())])
    from grader.service import server as single  # the front door's limits, as one course's server has them

    single.quiet_floods()
    server = uvicorn.Server(uvicorn.Config(app, host=place.host, port=place.port or 8000, log_level="warning",
                                           lifespan="off", timeout_graceful_shutdown=5,
                                           http=single.protocol(single.limits(0)),
                                           timeout_keep_alive=single.KEEP_ALIVE_S))
    if ready is not None:
        ready(f"http://{place.host}:{place.port}{place.prefix}")
    try:
        server.run()
    finally:
        stop.set()
        watching.join(10)
        shutil.rmtree(front.sockets, ignore_errors=True)
