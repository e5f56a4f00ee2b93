"""The LTI endpoints of `grader serve`: the tool's keys, the login, the launch, and deep linking's choice.

    GET  /lti/jwks            the tool's public keys (lti_keys.jwks)
    GET|POST /lti/login       third-party initiated login -> the platform's auth URL (lti_launch.Launches.login)
    POST /lti/launch          the id_token checked; a learner's page or the instructor's opens, signed in for the
                              session; a deep-linking request lists the lessons
    POST /lti/deep-link       the lesson chosen: a signed LtiDeepLinkingResponse, posted back to the platform

A refusal is one line on the page and in the server's log, never a traceback.
"""

from __future__ import annotations

import hashlib
import html
import json
import logging
import secrets
import time
from typing import TYPE_CHECKING, Any

from grader.base import spelling
from grader.lesson import catalog
from grader.service import lti_keys, lti_launch
from grader.service.lti_keys import LtiRefused
from grader.service.tokens import Book, Identity

if TYPE_CHECKING:
    from starlette.requests import Request

log = logging.getLogger(__name__)
"""The server's log (`grader serve` sets where it goes: stderr, one line a record)."""

PAGE = ("<!doctype html><html lang=en><head><meta charset=utf-8><title>{title}</title><style>body{{font:15px/1.45 "
        "system-ui,sans-serif;margin:2em;color:#1d2330}}button{{font:inherit;margin:4px 0;padding:4px 12px}}"
        "</style></head><body>{body}</body></html>")
HEADERS = {"Cache-Control": "no-store", "Referrer-Policy": "no-referrer"}


def routes(served: Any) -> list[Any]:
    """The LTI routes of a served course (app.Served: its tokens, its lessons, its public address)."""
    from starlette.routing import Route

    pages = _Pages(served.book, served.lessons, served.public_url)
    return [Route("/lti/jwks", pages.jwks), Route("/lti/login", pages.login, methods=["GET", "POST"]),
            Route("/lti/launch", pages.launch, methods=["POST"]),
            Route("/lti/deep-link", pages.deep_link, methods=["POST"])]


def _page(title: str, body: str, status: int = 200) -> Any:
    from starlette.responses import HTMLResponse

    return HTMLResponse(PAGE.format(title=html.escape(title), body=body), status,
                        headers=dict(HEADERS, **{"Content-Security-Policy": "default-src 'none'; style-src "
                                                 "'unsafe-inline'; script-src 'unsafe-inline'; form-action *"}))


def _refused(err: LtiRefused) -> Any:
    log.info(f"LTI refused: {err}")
    return _page("Refused", f"<p>The LMS launch was refused: {html.escape(str(err))}</p>", 400)


def _cookie(state: str) -> str:
    """The name of the cookie that binds a login's state to its browser (one per login: two tabs may launch)."""
    return "grader_lti_" + hashlib.sha256(state.encode()).hexdigest()[:16]


class _Pages:
    def __init__(self, book: Book, lessons: tuple[str, ...], public_url: str) -> None:
        self.book, self.lessons, self.public_url = book, lessons, public_url
        self.launches = lti_launch.Launches()
        self.linking: dict[str, tuple[lti_launch.Launch, float]] = {}

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
        custom = launch.claims.get(lti_launch.LTI + "custom") or {}
        lesson = custom.get("lesson") if isinstance(custom, dict) else None
        target = "/instructor" if launch.role == "instructor" else "/" + (
            f"?lesson={lesson}" if lesson in self.lessons else "")
        slot = "grader-instructor" if launch.role == "instructor" else "grader-token"
        script = (f"<script>sessionStorage.setItem({json.dumps(slot)}, {json.dumps(token)});"
                  f"location.replace({json.dumps(target)});</script>")
        said = f"Signed in as {html.escape(launch.name or launch.student)} ({launch.role})"
        return _page("Signed in", f"<p id=launched data-student=\"{html.escape(launch.student)}\" "
                                  f"data-role=\"{launch.role}\">{said}.</p>{script}")

    def _choose(self, launch: lti_launch.Launch) -> Any:
        if launch.role != "instructor":
            return _refused(LtiRefused("only an instructor links a lesson into the course"))
        link = secrets.token_urlsafe(16)
        now = time.monotonic()
        self.linking = {k: v for k, v in self.linking.items() if v[1] > now}
        self.linking[link] = (launch, now + lti_launch.STATE_S)
        buttons = "".join(
            f"<form method=post action=\"/lti/deep-link\"><input type=hidden name=link value=\"{link}\">"
            f"<input type=hidden name=lesson value=\"{html.escape(i)}\"><button>{html.escape(catalog.get(i).title)} "
            f"({spelling.score(catalog.get(i).max_score)} points)</button></form>" for i in self.lessons)
        return _page("Link a lesson", f"<h1>Link a lesson into the course</h1>{buttons}")

    async def deep_link(self, request: Request) -> Any:
        form = await request.form()
        held = self.linking.pop(str(form.get("link") or ""), None)
        lesson = str(form.get("lesson") or "")
        if held is None or held[1] < time.monotonic():
            return _refused(LtiRefused("this choice answers no deep-linking request (used or expired): start again "
                                       "from the LMS"))
        if lesson not in self.lessons:
            return _refused(LtiRefused(f"no lesson {lesson[:60]!r} here"))
        chosen = catalog.get(lesson)
        try:
            back, jwt_text = lti_launch.deep_link_response(held[0], lesson, chosen.title, chosen.max_score,
                                                           f"{self.base(request)}lti/launch")
        except LtiRefused as err:
            return _refused(err)
        body = (f"<form id=back method=post action=\"{html.escape(back)}\"><input type=hidden name=JWT "
                f"value=\"{html.escape(jwt_text)}\"><noscript><button>Return to the LMS</button></noscript></form>"
                "<script>document.getElementById('back').submit();</script>")
        return _page("Linked", body)
