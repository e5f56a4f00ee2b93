"""The grader as a JupyterHub service (`grader serve --hub`): the hub says who a browser or a token is; the course
says who that is here.

A browser signs in through the hub's OAuth (jupyterhub's `HubOAuth`): `hub/login` sends it to the hub with a
state kept in a cookie of this service's path, and `oauth_callback` checks the state against that cookie, takes
the code for the user's token, asks the hub whose it is and opens a session of this service (`Book.session`),
as an LMS launch does: no grader token is ever pasted. An API call sends `Authorization: token <hub token>`
(inside a user's server, JUPYTERHUB_API_TOKEN): the hub is asked whose it is (cached 60 s) and whether it
holds the scope to reach this service (`access:services!service=grader`).

Who a hub user is here: the student whose roster row names them (`hub_user`, in `[hub] roster`), else the
student of their name (one with a token, on that roster, or in the `[hub] students` group); an instructor is a
member of the `[hub] instructors` group, read with the service's own token (the `read:groups` scope `grader hub
config` grants). Anyone else signed in to the hub is told so in one line. Nothing here writes to the hub.
"""

from __future__ import annotations

import functools
import hmac
import logging
import os
import secrets
import shlex
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, urlencode, urlparse

import httpx
from tornado.web import HTTPError as HubAnswered

from grader.base.errors import GraderError
from grader.intake import layouts, roster as class_list
from grader.lesson import course
from grader.service.tokens import Book, Identity

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.responses import Response

log = logging.getLogger(__name__)

HUB_ERRORS = (HubAnswered, httpx.HTTPError, ValueError, KeyError, OSError, GraderError)
"""What asking the hub may raise (jupyterhub's client raises tornado's HTTPError for the hub's own refusals and
for a hub it cannot reach), each said in one line rather than as a 500."""

SERVICE = "grader"
"""The service's name on the hub: its address is /services/grader/."""
PREFIX = f"/services/{SERVICE}"
STATE_COOKIE = "grader-hub-state"
NOT_COMPLETED = ("this sign-in could not be completed (it was not started in this browser, took over 10 minutes, or "
                 "the hub refused it): open the grader again")
MEMBERS_S = 10.0
"""How long a group's members are kept before the hub is asked again (a member added shows within this long)."""


@dataclass(frozen=True)
class Place:
    """Where the hub put this server: its path prefix (/services/grader/, or /services/grader/<course>/ for one of
    several courses), the address to listen on, and the course's folder name among several ("" alone)."""

    prefix: str
    host: str
    port: int | None
    course: str = ""

    @property
    def root(self) -> str:
        """The service's own prefix (/services/grader/): the hub's OAuth callback and its state cookie are there."""
        return self.prefix[: -len(self.course) - 1] if self.course else self.prefix

    def slot(self, role: str) -> str:
        """The browser's session storage a page of this course keeps its sign-in in (one per course and role)."""
        base = "grader-instructor" if role == "instructor" else "grader-token"
        return f"{base}:{self.course}" if self.course else base

    @classmethod
    def from_environment(cls) -> Place:
        """As the hub gives a service it starts (JUPYTERHUB_SERVICE_PREFIX, JUPYTERHUB_SERVICE_URL); refused in
        one line where the hub gave none of it."""
        if not os.environ.get("JUPYTERHUB_API_TOKEN") or not os.environ.get("JUPYTERHUB_API_URL"):
            raise GraderError("--hub needs the environment JupyterHub gives a service (JUPYTERHUB_API_TOKEN, "
                              "JUPYTERHUB_API_URL, ...): start it from jupyterhub_config.py (`grader hub config`)")
        prefix = "/" + os.environ.get("JUPYTERHUB_SERVICE_PREFIX", f"/services/{SERVICE}/").strip("/") + "/"
        url = urlparse(os.environ.get("JUPYTERHUB_SERVICE_URL", ""))
        return cls(prefix, url.hostname or "127.0.0.1", url.port, os.environ.get("GRADER_HUB_COURSE", ""))


class Hub:
    """The hub this service runs under: its OAuth for browsers, its tokens for API calls, its groups for who is an
    instructor; `person` says who a hub user is in this course."""

    def __init__(self, book: Book, place: Place) -> None:
        self.book = book
        self.place = place
        self.auth = oauth()
        self.members: dict[str, tuple[float, frozenset[str]]] = {}
        self.rows: tuple[float, Roster | str] = (-MEMBERS_S, Roster({}, frozenset()))

    # -- who a token or a hub user is -------------------------------------------------------------------------
    async def identity(self, token: str) -> Identity | Refused:
        """Whom a hub token names in this course, or why nobody, in one line: not the hub's, without access to
        this service, a hub user who is not in this course, or a hub that cannot be asked."""
        try:
            model = await self.auth.user_for_token(token, sync=False) if token and len(token) <= 512 else None
            if not model or model.get("kind", "user") != "user":
                return Refused("the hub does not know this token (send `Authorization: token` with a hub token of a "
                               "user)", unknown=True)
            if not self.auth.check_scopes(self.auth.access_scopes, model):
                return Refused("this hub token may not reach the grader (it needs the scope "
                               f"access:services!service={SERVICE})", unknown=True)
            user = str(model.get("name") or "")
            return await self.person(user) or Refused(f"the hub user {user} is not in this course: ask your "
                                                      "instructor to add you to its roster")
        except HUB_ERRORS as err:
            log.warning(f"the hub could not be asked who a token is ({_said(err)})")
            return Refused(f"the hub could not be asked who you are ({_said(err)}): try again in a minute")

    async def person(self, user: str) -> Identity | None:
        """Who the hub user `user` is in this course (None: signed in to the hub, but not in this course); hub
        names are compared as JupyterHub keeps them, case folded. A student's id that the roster gives to another
        hub user is never taken by a hub user of that name."""
        if not user:
            return None
        try:  # a hub name becomes a student's id, and so a file's name: it must be one, as any id from outside
            layouts.checked_id(user, "hub user")
        except GraderError:
            return None
        policy = course.current().hub
        name = user.casefold()
        if policy.instructors and name in await self._members(policy.instructors):
            return Identity(user, user, "instructor")
        roster = self._roster()
        found = roster.by_hub_user.get(name)
        if found is not None:
            return Identity(found.student, found.name or user, "student")
        if name in roster.claimed:
            return None
        known = self.book.member(user)
        if known is not None and known.role == "student":
            return known
        if policy.students and name in await self._members(policy.students):
            return Identity(user, user, "student")
        return None

    def _roster(self) -> Roster:
        """The `[hub] roster`, read again every MEMBERS_S (a roster that cannot be read is said, in one line, until
        it is mended)."""
        at, kept = self.rows
        path = course.current().hub.roster
        if path is None:
            return Roster({}, frozenset())
        if time.monotonic() - at >= MEMBERS_S:
            try:
                kept = Roster.read(path)
            except GraderError as err:
                kept = str(err)
            self.rows = (time.monotonic(), kept)
        if isinstance(kept, str):
            raise GraderError(kept)
        return kept

    async def _members(self, group: str) -> frozenset[str]:
        """A hub group's members (case folded), asked of the hub with the service's own token (kept MEMBERS_S)."""
        kept = self.members.get(group)
        if kept is not None and time.monotonic() - kept[0] < MEMBERS_S:
            return kept[1]
        async with httpx.AsyncClient(timeout=10) as http:
            answer = await http.get(f"{self.auth.api_url.rstrip('/')}/groups/{quote(group, safe='')}",
                                    headers={"Authorization": f"token {self.auth.api_token}"})
        if answer.status_code == 404:  # no such group on the hub (yet): nobody is in it
            log.warning(f"the hub has no group {group!r} (course.toml's [hub]): nobody is in it")
            users: frozenset[str] = frozenset()
        elif answer.status_code != 200:
            raise GraderError(f"the hub answered {answer.status_code} for the group {group!r} (the service needs the "
                              "scope read:groups: `grader hub config`)")
        else:
            users = frozenset(str(u).casefold() for u in answer.json().get("users") or ())
        self.members[group] = (time.monotonic(), users)
        return users

    # -- the browser's sign-in ----------------------------------------------------------------------------------
    def routes(self) -> list[Any]:
        from starlette.routing import Route

        return [Route("/hub/login", self.login), Route("/oauth_callback", self.callback)]

    async def login(self, request: Request) -> Response:
        return to_hub(request, self.place)

    async def callback(self, request: Request) -> Response:
        """The hub's answer: the state checked against this browser's cookie, the code taken for a token, the
        user looked up in the course, and a session of this course opened."""
        from grader.service.lti import pages

        token = await code_taken(request)
        if token is None:
            return pages.page("Sign-in refused", "hub-refused", 403, why=NOT_COMPLETED)
        try:
            model = await self.auth.user_for_token(token, use_cache=False, sync=False) or {}
            user = str(model.get("name") or "")
            person = await self.person(user)
        except HUB_ERRORS as err:
            return pages.page("Sign-in failed", "hub-refused", 503, why=f"the hub could not be asked who you are "
                              f"({_said(err)}): try again in a minute")
        if person is None:
            return pages.page("Not in this course", "hub-refused", 403, why=f"you are signed in to the hub as {user}, "
                              "who is not in this course: ask your instructor to add you to its roster")
        instructor = person.role == "instructor"
        response = pages.page("Signed in", "launched", 200, student=person.who, name=person.name or person.who,
                              role=person.role, slot=self.place.slot(person.role), token=self.book.session(person),
                              target=self.place.prefix + ("instructor" if instructor else ""))
        response.delete_cookie(STATE_COOKIE, path=self.place.root)
        return response


@functools.cache
def oauth() -> Any:
    """The hub's OAuth client for this service (jupyterhub's HubOAuth, from the environment the hub gave)."""
    try:
        from jupyterhub.services.auth import HubOAuth
    except ImportError:
        raise GraderError("--hub needs jupyterhub's service library: pip install '.[hub]'") from None
    return HubOAuth(api_token=os.environ["JUPYTERHUB_API_TOKEN"], cache_max_age=60)


def to_hub(request: Request, place: Place) -> Response:
    """Send the browser to the hub to sign in; the state, and the course the sign-in began at, kept in a cookie of
    the service's path, where the hub's one callback is."""
    from starlette.responses import RedirectResponse

    state = secrets.token_urlsafe(24)
    response = RedirectResponse(f"{oauth().login_url}&{urlencode({'state': state})}", 302)
    response.set_cookie(STATE_COOKIE, f"{state}.{place.course}", max_age=600, path=place.root, httponly=True,
                        samesite="lax", secure=request.url.scheme == "https")
    return response


def began_at(request: Request) -> str:
    """The course a sign-in began at, as its state cookie says ("" for one course alone, or the front page)."""
    return request.cookies.get(STATE_COOKIE, "").partition(".")[2]


async def code_taken(request: Request) -> str | None:
    """The hub token the hub's answer gives, once its state is this browser's own (None: not its own, no code, or
    a code the hub refused)."""
    state = request.cookies.get(STATE_COOKIE, "").partition(".")[0]
    given = request.query_params.get("state", "")
    code = request.query_params.get("code", "")
    if not state or not code or not hmac.compare_digest(state.encode(), given.encode()):
        return None
    try:
        return str(await oauth().token_for_code(code, sync=False))
    except HUB_ERRORS as err:
        log.info(f"a sign-in's code was refused by the hub ({_said(err)})")
        return None


def _said(err: BaseException) -> str:
    return f"{type(err).__name__}: {str(getattr(err, 'log_message', None) or err)[:160]}"


@dataclass(frozen=True)
class Refused:
    """Why a hub token is nobody here, in one line; `unknown`: the token itself is not good (an address that sends
    many is slowed), not a known user who is not in this course."""

    why: str
    unknown: bool = False


@dataclass(frozen=True)
class Roster:
    """The `[hub] roster`: its students by hub user (case folded), and the ids whose row names another hub user."""

    by_hub_user: dict[str, class_list.Member]
    claimed: frozenset[str]

    @classmethod
    def read(cls, path: Path) -> Roster:
        """Read, or refused in one line where two rows name one hub user."""
        by_hub_user: dict[str, class_list.Member] = {}
        members = class_list.read(path).members
        for member in members:
            key = (member.hub_user or member.student).casefold()
            if key in by_hub_user:
                raise GraderError(f"the roster {path} gives the hub user {key!r} to two students "
                                  f"({by_hub_user[key].student}, {member.student})")
            by_hub_user[key] = member
        claimed = frozenset(m.student.casefold() for m in members if m.hub_user and m.hub_user.casefold() !=
                            m.student.casefold())
        return cls(by_hub_user, claimed)


def stops_with_parent() -> None:
    """A managed service (started by the hub) or a course server (started by the front) is told to stop (SIGTERM:
    its running jobs handed back) when the process that started it ends, however it ends: the hub's next start
    starts it again. An external service, started by a person or a service manager, is left alone."""
    if not sys.platform.startswith("linux"):
        return
    try:
        parent = Path(f"/proc/{os.getppid()}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return
    if not any(part.endswith(b"jupyterhub") for part in parent) and b"--courses" not in parent:
        return
    import ctypes
    import signal

    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    expected = os.environ.get("GRADER_HUB_PARENT", "")
    if expected.isdigit() and os.getppid() != int(expected):  # the front ended before this could be said
        raise SystemExit("grader serve: the front that started this course has ended")


def config_lines(course_root: Path | None, url: str, out: Path, courses: Path | None = None) -> str:
    """The lines for jupyterhub_config.py that run the grader as a managed service of the hub: for one course
    (`course_root`), or for every course folder under `courses`."""
    parsed = urlparse(url)
    if parsed.scheme not in ("http", "https") or not parsed.hostname or parsed.port is None:
        raise GraderError(f"--url {url!r}: give the address the service listens on, with its port "
                          "(http://127.0.0.1:10101)")
    chosen = ["--course", str(course_root.absolute())] if courses is None and course_root is not None else []
    several = ["--courses", str(courses.absolute())] if courses is not None else []
    command = [sys.executable, "-m", "grader", *chosen, "serve", "--hub", *several, "--out", str(out.absolute())]
    scope = f"access:services!service={SERVICE}"
    service = {"name": SERVICE, "url": url, "command": command, "oauth_no_confirm": True}
    roles = [{"name": "grader-service", "services": [SERVICE], "scopes": ["read:users", "read:groups"]},
             {"name": "user", "scopes": ["self", scope]},
             {"name": "server", "scopes": ["users:activity!user", "access:servers!server", scope]}]
    what = (f"the courses under {courses.absolute()}" if courses is not None else
            f"the course {course_root.absolute() if course_root else ''}")
    said = f"# {what} graded by `{' '.join(shlex.quote(c) for c in command)}`\n"
    return (said + f"c.JupyterHub.services = [{service!r}]\n"
            f"c.JupyterHub.load_roles = {roles!r}\n"
            f"c.Spawner.environment.update({{'GRADER_SERVER': {url.rstrip('/') + PREFIX!r}}})\n")
