"""Who may submit: one secret token per student, one per instructor, kept hashed in the course's private folder.

`grader tokens --roster R --out tokens.csv` writes `student,name,token` for the
instructor to hand out, and keeps only each token's SHA-256 (private/tokens.json,
0600): a copy of the course folder gives nobody a way in. A token is 32 random
bytes, so one hash (no slow key derivation) is as safe as a password's would be;
the server compares digests in constant time. Issuing a student a token again
replaces their old one.

Who asks, for every request, in one place (`Tokens`, Starlette's authentication middleware with this course's
tokens): a request is signed in by its `Authorization: Bearer TOKEN` header, or, for a read
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
import hashlib
import hmac
import json
import logging
import secrets
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from starlette.authentication import AuthCredentials, AuthenticationBackend, BaseUser

from grader.base import database, escape, files
from grader.base.errors import GraderError
from grader.intake import layouts, roster as class_list
from grader.lesson import course

if TYPE_CHECKING:
    from starlette.requests import HTTPConnection, Request

log = logging.getLogger(__name__)
"""The server's log (`grader serve` sets where it goes: stderr, one line a record)."""

FILE = "tokens.json"
PREFIX = {"student": "gs_", "instructor": "gi_"}
@dataclass(frozen=True)
class Identity:
    """Whom a token names."""

    who: str
    name: str
    role: str
    """`student` or `instructor`."""


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


def _path() -> Path:
    return course.private_folder() / FILE


def _read(path: Path) -> dict[str, dict[str, str]]:
    try:
        data = json.loads(files.read_regular(path, 16 << 20))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as err:
        raise GraderError(f"{path} cannot be read ({type(err).__name__}): issue the tokens again") from None
    if not isinstance(data, dict):
        raise GraderError(f"{path} is not a token file this tool wrote: issue the tokens again")
    return {str(k): v for k, v in data.items() if isinstance(v, dict)}


ADDRESS = "tokens.address"
"""Names the PostgreSQL database a course served by several servers keeps its tokens in (written by its first
server; the private folder's tokens.json only seeds it): `grader tokens` then issues into it, and every server
asks it for each request, so a token issued again is refused everywhere at once."""
TOKENS_LOCK = 0x67746F6B  # "gtok": the advisory lock of the tokens' writers
FOREVER = 100 * 365 * 86400.0


def kept_in() -> str | None:
    """The database the course's tokens are kept in (None: the token file)."""
    path = course.private_folder() / ADDRESS
    try:
        address = files.read_regular(path, 4096).decode("utf-8", "replace").strip()
    except FileNotFoundError:
        return None
    except OSError as err:
        raise GraderError(f"{path} cannot be read ({err.strerror or err})") from None
    if not database.is_address(address):
        raise GraderError(f"{path} does not name a PostgreSQL database (postgresql://...)")
    return address


def keep_in(address: str) -> None:
    """A course served from the PostgreSQL database at `address` keeps its tokens there from now on: the token
    file's copied in once (by whichever server comes first), and `grader tokens` issues into it. A SQLite queue's
    address leaves them in the file."""
    if not database.is_address(address):
        return
    now = kept_in()
    if now not in (None, address):
        raise GraderError(f"the course's tokens are kept in another database ({ADDRESS} in its private folder)")
    held = database.Held(database.Database(address, "tokens"))
    try:
        with held.db.writing(TOKENS_LOCK) as db:
            if not db.one("SELECT COUNT(*) FROM held WHERE kind='token'", ())[0]:
                for digest, person in _read(_path()).items():
                    kept = [str(person.get(k, "")) for k in ("who", "name", "role")]
                    db.execute("INSERT INTO held (kind, key, value, until) VALUES ('token', ?, ?, ?)",
                               (digest, json.dumps(kept), time.time() + FOREVER))
    finally:
        held.db.close()
    if now is None:
        files.write_text(course.private_folder() / ADDRESS, address + "\n", private=True)


def _issued_into(address: str, people: list[tuple[str, str]], role: str) -> list[tuple[Identity, str]]:
    held = database.Held(database.Database(address, "tokens"))
    made = []
    try:
        with held.db.writing(TOKENS_LOCK) as db:
            rows = [(key, json.loads(value)) for key, value in db.all("SELECT key, value FROM held WHERE kind='token'",
                                                                     ())]
            for raw, name in people:
                who = layouts.checked_id(raw, f"{role} id")
                token = PREFIX[role] + secrets.token_urlsafe(32)
                for key, (earlier, _, as_role) in rows:
                    if earlier == who and as_role == role:
                        db.execute("DELETE FROM held WHERE kind='token' AND key=?", (key,))
                db.execute("INSERT INTO held (kind, key, value, until) VALUES ('token', ?, ?, ?)",
                           (_digest(token), json.dumps([who, name, role]), time.time() + FOREVER))
                made.append((Identity(who, name, role), token))
    finally:
        held.db.close()
    return made


def issue(people: list[tuple[str, str]], role: str) -> list[tuple[Identity, str]]:
    """New tokens for these (id, name) pairs, stored hashed (replacing each one's earlier token), in the course's
    database where its servers keep them there, else in its token file; returns them."""
    address = kept_in()
    if address is not None:
        return _issued_into(address, people, role)
    path = _path()
    stored = _read(path)
    made = []
    for raw, name in people:
        who = layouts.checked_id(raw, f"{role} id")
        token = PREFIX[role] + secrets.token_urlsafe(32)
        stored = {k: v for k, v in stored.items() if not (v.get("who") == who and v.get("role") == role)}
        stored[_digest(token)] = {"who": who, "name": name, "role": role}
        made.append((Identity(who, name, role), token))
    files.write_text(path, json.dumps(stored, indent=1, sort_keys=True) + "\n", private=True)
    return made


def for_roster(roster: Path) -> list[tuple[Identity, str]]:
    """A token for every student on the roster."""
    members = class_list.read(roster)
    people = [(m.student, m.name) for m in members.members]
    if not people:
        raise GraderError(f"{roster}: no students on the roster")
    return issue(people, "student")


def write_csv(made: list[tuple[Identity, str]], out: Path) -> None:
    """student,name,token: the file the instructor hands out (each line to its student only), kept owner-only;
    roster fields are made safe for a spreadsheet."""
    rows = [("student", "name", "token"), *((person.who, person.name, token) for person, token in made)]
    files.write_text(out, escape.csv_text(rows, "\n"), private=True)


SESSION_S = 8 * 3600.0
"""How long a session opened by an LMS launch lasts."""


RELOAD_S = 1.0
"""How often a running server looks whether the token file changed: a token issued again replaces the old one
within this long, with no restart."""


class Book:
    """The tokens the server accepts, read again whenever the token file changes (`grader tokens` on a running
    server), and the sessions LMS launches opened: kept in `held` (the queue's database, so a session opened on one
    server is good on every other, and through a restart), else in this server's memory."""

    def __init__(self, path: Path | None = None, held: database.Held | None = None) -> None:
        self.path = path or _path()
        self.stamp = self._stamp()
        self.known = _read(self.path)
        self.looked = time.monotonic()
        self.held = held
        self.sessions: dict[str, tuple[Identity, float]] = {}
        self.shared = held is not None and held.db.postgres and kept_in() == held.db.where
        """The tokens are in the database the servers share (asked for each request), not in the file."""
        if self.shared:
            self.known = {}

    def _stamp(self) -> tuple[int, ...]:
        try:
            info = self.path.stat()
        except OSError:
            return ()
        return (info.st_mtime_ns, info.st_size, info.st_ino)

    def _fresh(self) -> None:
        """The token file read again if it changed since it was last read (a file that cannot be read now keeps
        the tokens read before; the next change is read)."""
        now = time.monotonic()
        if self.shared or now - self.looked < RELOAD_S:  # shared: the database is asked, never the file
            return
        self.looked = now
        stamp = self._stamp()
        if stamp != self.stamp:
            try:
                self.known = _read(self.path)
            except GraderError as err:
                log.warning(f"the tokens were not read again ({err})")
            self.stamp = stamp

    def session(self, person: Identity) -> str:
        """A token for a person an LMS launch vouched for, good for SESSION_S."""
        token = "gl_" + secrets.token_urlsafe(32)
        if self.held is not None:
            self.held.put("session", _digest(token), json.dumps([person.who, person.name, person.role]), SESSION_S)
            return token
        now = time.monotonic()
        self.sessions = {d: s for d, s in self.sessions.items() if s[1] > now}
        self.sessions[_digest(token)] = (person, now + SESSION_S)
        return token

    def member(self, who: str) -> Identity | None:
        """The person a token was issued to under the id `who` (a student's id, an instructor's name), if any."""
        if self.shared and self.held is not None:
            with self.held.db.transaction() as db:
                kept = [json.loads(v) for (v,) in db.all("SELECT value FROM held WHERE kind='token'", ())]
            return next((Identity(*person) for person in kept if person[0] == who), None)
        self._fresh()
        return next((Identity(who, str(p.get("name", "")), str(p.get("role", ""))) for p in self.known.values()
                     if p.get("who") == who), None)

    def who(self, token: str) -> Identity | None:
        """Whom the token names, or None; the digest is compared in constant time."""
        if not token or len(token) > 200:
            return None
        self._fresh()
        given = _digest(token)
        if (token.startswith("gl_") or self.shared) and self.held is not None:  # looked up by its digest
            kept = self.held.get("session" if token.startswith("gl_") else "token", given)
            return Identity(*json.loads(kept)) if kept else None
        opened = self.sessions.get(given)
        if opened is not None and opened[1] > time.monotonic():
            return opened[0]
        found = None
        for stored, person in self.known.items():  # every digest compared, in constant time: no early answer
            if hmac.compare_digest(stored, given):
                found = Identity(str(person.get("who", "")), str(person.get("name", "")), str(person.get("role", "")))
        return found


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

    def __init__(self, book: Book, hub: Any = None) -> None:
        self.book = book
        self.hub = hub
        """The hub this server runs under (hub.Hub), whose tokens come as `Authorization: token ...`; or None."""
        self.bad: dict[str, list[float]] = defaultdict(list)

    async def authenticate(self, conn: HTTPConnection) -> tuple[AuthCredentials, BaseUser] | None:
        header = conn.headers.get("authorization", "")
        if self.hub is not None and header[:6].lower() == "token ":  # a hub token: the hub says whose it is
            person = await self.hub.identity(header[6:].strip())
            if not isinstance(person, Identity):  # why nobody: said in the 401
                conn.scope["grader.why"] = person.why
                if person.unknown:  # a bad token; a hub user who is simply not in this course is not slowed
                    await self._slowed(conn.client.host if conn.client else "")
                return None
            return AuthCredentials(scopes(person)), Member(person)
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
        if len(self.bad) > 10_000:  # addresses gone quiet a minute ago are forgotten
            self.bad = defaultdict(list, {a: ts for a, ts in self.bad.items() if ts and now - ts[-1] < 60})
        recent = [t for t in self.bad[address] if now - t < 60][-50:] + [now]
        self.bad[address] = recent
        if len(recent) > 5:
            await asyncio.sleep(min(5.0, 0.25 * 2 ** (len(recent) - 6)))


def person(request: Request) -> Identity:
    """The signed-in member a handler under `@requires` serves."""
    user = request.user
    assert isinstance(user, Member), "a handler that reads the person is under @requires"
    return user.person
