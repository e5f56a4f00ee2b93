"""The LTI endpoints of `grader serve`: the tool's keys, the login, the launch, and deep linking's choice.

    GET  /lti/jwks            the tool's public keys (lti_keys.jwks)
    GET|POST /lti/login       third-party initiated login -> the platform's auth URL (lti_launch.Launches.login)
    POST /lti/launch          the id_token checked; a learner's page or the instructor's opens, signed in for the
                              session; a deep-linking request lists the lessons
    POST /lti/deep-link       the lesson chosen: a signed LtiDeepLinkingResponse, posted back to the platform

A refusal is one line on the page and in the server's log, never a traceback.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from typing import TYPE_CHECKING, Any

from grader.base import database
from grader.lesson import catalog
from grader.service.lti import keys as lti_keys, launch as lti_launch
from grader.service.lti.keys import LtiRefused
from grader.service.tokens import Book, Identity

if TYPE_CHECKING:
    from starlette.requests import Request

log = logging.getLogger(__name__)
"""The server's log (`grader serve` sets where it goes: stderr, one line a record)."""

HEADERS = {"Cache-Control": "no-store", "Referrer-Policy": "no-referrer"}


def routes(served: Any) -> list[Any]:
    """The LTI routes of a served course (app.Served: its tokens, its lessons, its public address)."""
    from starlette.routing import Route

    pages = _Pages(served.book, served.lessons, served.public_url, database.Held(served.queue))
    return [Route("/lti/jwks", pages.jwks), Route("/lti/login", pages.login, methods=["GET", "POST"]),
            Route("/lti/launch", pages.launch, methods=["POST"]),
            Route("/lti/deep-link", pages.deep_link, methods=["POST"])]


def page(title: str, page: str, status: int = 200, **values: Any) -> Any:
    """One of the LTI pages (templates/lti.html.j2), every value escaped by the template."""
    from starlette.responses import HTMLResponse

    from grader.report import render

    text = render.environment().get_template("lti.html.j2").render(title=title, page=page, **values)
    return HTMLResponse(text, status,
                        headers=dict(HEADERS, **{"Content-Security-Policy": "default-src 'none'; style-src "
                                                 "'unsafe-inline'; script-src 'unsafe-inline'; form-action *"}))


def _refused(err: LtiRefused) -> Any:
    log.info(f"LTI refused: {err}")
    return page("Refused", "refused", 400, why=str(err))


def _cookie(state: str) -> str:
    """The name of the cookie that binds a login's state to its browser (one per login: two tabs may launch)."""
    return "grader_lti_" + hashlib.sha256(state.encode()).hexdigest()[:16]


class _Pages:
    def __init__(self, book: Book, lessons: tuple[str, ...], public_url: str, held: database.Held) -> None:
        self.book, self.lessons, self.public_url = book, lessons, public_url
        self.launches = lti_launch.Launches(held)  # what a login, a launch and a choice leave for the next request

    def base(self, request: Request) -> str:
        """The tool's address as configured (`grader serve --url`), else the address this server listens on: never
        the request's Host header, which the client chooses."""
        if self.public_url:
            return self.public_url
        host, port = request.scope.get("server") or ("127.0.0.1", 80)
        return f"{request.url.scheme}://{f'[{host}]' if ':' in str(host) else host}:{port}/"

    async def jwks(self, request: Request) -> Any:
        from starlette.responses import JSONResponse

        try:
            return JSONResponse(lti_keys.jwks(), headers={"Cache-Control": "max-age=300"})
        except LtiRefused as err:
            return JSONResponse({"error": str(err)}, 503)

    async def login(self, request: Request) -> Any:
        from starlette.responses import RedirectResponse

        params = dict(request.query_params)
        if request.method == "POST":
            params |= {k: v for k, v in (await request.form()).items() if isinstance(v, str)}
        base = self.base(request)
        try:
            url, state, binding = self.launches.login(params, f"{base}lti/launch")
        except LtiRefused as err:
            return _refused(err)
        response = RedirectResponse(url, 302, headers=HEADERS)
        secure = base.startswith("https:")  # a framed launch's cookie crosses sites: SameSite=None needs Secure
        response.set_cookie(_cookie(state), binding, max_age=int(lti_launch.STATE_S), path="/lti/", httponly=True,
                            secure=secure, samesite="none" if secure else "lax")
        return response

    async def launch(self, request: Request) -> Any:
        form = await request.form()
        state = str(form.get("state") or "")
        try:
            launch = self.launches.launch(str(form.get("id_token") or ""), state,
                                          request.cookies.get(_cookie(state), ""))
        except LtiRefused as err:
            return _refused(err)
        if launch.message_type == "LtiDeepLinkingRequest":
            return self._choose(launch)
        token = self.book.session(Identity(launch.student, launch.name, launch.role))
        lesson = self._lesson_of(launch)
        target = "/instructor" if launch.role == "instructor" else "/" + (
            f"?lesson={lesson}" if lesson in self.lessons else "")
        slot = "grader-instructor" if launch.role == "instructor" else "grader-token"
        return page("Signed in", "launched", student=launch.student, role=launch.role,
                     name=launch.name or launch.student, slot=slot, token=token, target=target)

    def _lesson_of(self, launch: lti_launch.Launch) -> str | None:
        """The lesson a launch is for: its deep link's (`custom.lesson`), else the one its resource link's title
        names (by id or title, whatever the case), else none (the page asks the student to choose, never guesses)."""
        custom = launch.claims.get(lti_launch.LTI + "custom") or {}
        if isinstance(custom, dict) and custom.get("lesson") in self.lessons:
            return str(custom["lesson"])
        link = launch.claims.get(lti_launch.LTI + "resource_link") or {}
        title = str(link.get("title") or "").strip().casefold() if isinstance(link, dict) else ""
        named = [i for i in self.lessons if title and title in (i.casefold(), catalog.get(i).title.casefold())]
        return named[0] if len(named) == 1 else None

    def _choose(self, launch: lti_launch.Launch) -> Any:
        if launch.role != "instructor":
            return _refused(LtiRefused("only an instructor links a lesson into the course"))
        link = self.launches.offer(launch)
        lessons = [{"id": i, "title": catalog.get(i).title, "points": catalog.get(i).max_score} for i in self.lessons]
        return page("Link a lesson", "choose", link=link, lessons=lessons)

    async def deep_link(self, request: Request) -> Any:
        form = await request.form()
        held = await asyncio.to_thread(self.launches.chosen, str(form.get("link") or "")[:64])
        lesson = str(form.get("lesson") or "")
        if held is None:
            return _refused(LtiRefused("this choice answers no deep-linking request (used or expired): start again "
                                       "from the LMS"))
        if lesson not in self.lessons:
            return _refused(LtiRefused(f"no lesson {lesson[:60]!r} here"))
        chosen = catalog.get(lesson)
        try:
            back, jwt_text = lti_launch.deep_link_response(held, lesson, chosen.title, chosen.max_score,
                                                           f"{self.base(request)}lti/launch")
        except LtiRefused as err:
            return _refused(err)
        return page("Linked", "linked", back=back, jwt=jwt_text)
