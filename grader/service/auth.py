"""Who asks, for every request, in one place: Starlette's authentication middleware with this course's tokens.

A request is signed in by its `Authorization: Bearer TOKEN` header, or, for a read
(GET or HEAD), by the cookie a page's sign-in set (`grader_session`): a cookie never
signs a request that changes something, so another site cannot submit in a
student's name. Everyone signed in holds the scope `student` (what any member of
the course may do: read the lessons, submit, read their own history); an
instructor holds `instructor` too. Handlers say what they need with Starlette's
`@requires("student")` or `@requires("instructor")`, and read `request.user.person`.
A wrong token is answered slowly once an address has sent more than five in a
minute.
"""

from __future__ import annotations

import asyncio
import time
from collections import defaultdict
from typing import TYPE_CHECKING

from starlette.authentication import AuthCredentials, AuthenticationBackend, BaseUser

from grader.service.tokens import Book, Identity

if TYPE_CHECKING:
    from starlette.requests import HTTPConnection, Request

COOKIE = "grader_session"
"""The page's sign-in cookie (HttpOnly, SameSite=Strict): good for reading only."""
READS = frozenset({"GET", "HEAD"})


class Member(BaseUser):
    """A member of the course, signed in: `person` says who and in which role."""

    def __init__(self, person: Identity) -> None:
        self.person = person

    @property
    def is_authenticated(self) -> bool:
        return True

    @property
    def display_name(self) -> str:
        return self.person.name or self.person.who

    @property
    def identity(self) -> str:
        return self.person.who


def scopes(person: Identity) -> list[str]:
    """What a member may do: `student` for everyone signed in, and `instructor` for an instructor."""
    return ["student", "instructor"] if person.role == "instructor" else ["student"]


class Tokens(AuthenticationBackend):
    """The course's tokens (tokens.json, read again when it changes) as Starlette's authentication backend."""

    def __init__(self, book: Book) -> None:
        self.book = book
        self.bad: dict[str, list[float]] = defaultdict(list)

    async def authenticate(self, conn: HTTPConnection) -> tuple[AuthCredentials, BaseUser] | None:
        header = conn.headers.get("authorization", "")
        token = header[7:].strip() if header[:7].lower() == "bearer " else ""
        if not token and conn.scope.get("method") in READS:
            token = conn.cookies.get(COOKIE, "")
        if not token:
            return None
        person = self.book.who(token)
        if person is None:
            await self._slowed(conn.client.host if conn.client else "")
            return None
        return AuthCredentials(scopes(person)), Member(person)

    async def _slowed(self, address: str) -> None:
        now = time.monotonic()
        recent = [t for t in self.bad[address] if now - t < 60][-50:] + [now]
        self.bad[address] = recent
        if len(recent) > 5:
            await asyncio.sleep(min(5.0, 0.25 * 2 ** (len(recent) - 6)))


def person(request: Request) -> Identity:
    """The signed-in member a handler under `@requires` serves."""
    user = request.user
    assert isinstance(user, Member), "a handler that reads the person is under @requires"
    return user.person
