"""LTI Advantage services, called by the tool: grades back (AGS) and the roster in (NRPS), and the outbox the
grades wait in to be sent (Outbox).

A call first obtains an access token by the client-credentials grant with a
JWT assertion signed by the tool's key (RFC 7523), scoped to what it needs.
`send_grades` finds the lesson's line item (its `resourceId` is the lesson's
id) or creates it, and posts each student's score as
`application/vnd.ims.lis.v1.score+json`; written answers nobody has graded yet
post `PendingManual`. What was sent is remembered per LMS course by the
result's digest and score, so sending twice posts nothing new. Grades go only
to the LMS courses this course is bound to (lti_course), each student's to the
course they are a member of. `members` follows the container's `Link:
rel="next"` pages on the platform's own origin only: the access token never
goes anywhere else.
"""

from __future__ import annotations

import datetime as dt
import re
import secrets
import time
import uuid
from dataclasses import dataclass
from typing import Any

from grader.base import spelling
from grader.result.record import GradeResult
from grader.service import policy
from grader.service.jobs import BACKOFF_S, Tables
from grader.service.lti import courses as lti_course, keys as lti_keys
from grader.service.lti.keys import LtiRefused, Platform

SCOPES = {"lineitem": "https://purl.imsglobal.org/spec/lti-ags/scope/lineitem",
          "score": "https://purl.imsglobal.org/spec/lti-ags/scope/score",
          "members": "https://purl.imsglobal.org/spec/lti-nrps/scope/contextmembership.readonly"}
LINEITEM = "application/vnd.ims.lis.v2.lineitem+json"
LINEITEMS = "application/vnd.ims.lis.v2.lineitemcontainer+json"
SCORE = "application/vnd.ims.lis.v1.score+json"
MEMBERS = "application/vnd.ims.lti-nrps.v2.membershipcontainer+json"
SENT = "sent.json"


@dataclass(frozen=True)
class Context:
    """Where a course's grades and roster go: a bound LMS course's services (or URLs given on the command line)."""

    platform: Platform
    lineitems: str = ""
    memberships: str = ""
    bound: lti_course.Context | None = None
    """The LMS course these are of (None: URLs given on the command line, for a course not launched yet)."""

    @property
    def key(self) -> str:
        return self.bound.key if self.bound is not None else f"given {self.lineitems or self.memberships}"

    @property
    def title(self) -> str:
        return (self.bound.title or self.bound.id) if self.bound is not None else "the URLs given"


def contexts(lineitems: str | None = None, memberships: str | None = None, issuer: str | None = None) -> list[Context]:
    """The services of every LMS course this course is bound to; or, with URLs given, those alone. One line when
    none is known."""
    bound = lti_course.bound()
    if lineitems or memberships:
        issuers = {c.issuer for c in bound}
        named = issuer or (issuers.pop() if len(issuers) == 1 else _only_issuer())
        return [Context(lti_keys.platform(named), lineitems or "", memberships or "")]
    if issuer:
        bound = [c for c in bound if c.issuer == issuer]
    if not bound:
        raise LtiRefused("this course is bound to no LMS course yet: its instructor launches the tool from the LMS "
                         "course once (or list the context in course.toml's [lti] contexts and launch), or pass "
                         "--lineitems / --memberships")
    return [Context(lti_keys.platform(c.issuer, c.client_id), c.lineitems, c.memberships, c) for c in bound]


def _only_issuer() -> str:
    registered = lti_keys.platforms()
    if len(registered) != 1:
        raise LtiRefused("no launch has happened yet and the course registers "
                         f"{len(registered) or 'no'} platforms: pass --issuer (and --lineitems / --memberships)")
    return registered[0].issuer


def _client() -> Any:
    """An LMS may take long over a call (a score post of 40 s was seen): it is waited for, beside the grading."""
    import httpx

    return httpx.Client(timeout=httpx.Timeout(120.0, connect=10.0))


def token(where: Platform, scopes: list[str]) -> str:
    """An access token for these scopes (client credentials with a signed JWT assertion)."""
    import httpx
    import jwt

    kid, key = lti_keys.signing_key(where.private_key_file or None)
    now = int(time.time())
    assertion = jwt.encode({"iss": where.client_id, "sub": where.client_id,
                            "aud": where.auth_audience or where.auth_token_url, "iat": now, "exp": now + 300,
                            "jti": uuid.uuid4().hex}, key, algorithm="RS256", headers={"kid": kid})
    try:
        with _client() as http:
            got = http.post(where.auth_token_url, data={
                "grant_type": "client_credentials",
                "client_assertion_type": "urn:ietf:params:oauth:client-assertion-type:jwt-bearer",
                "client_assertion": assertion, "scope": " ".join(scopes)})
    except httpx.HTTPError as err:
        raise LtiRefused(f"the platform's token endpoint {where.auth_token_url} could not be reached "
                         f"({type(err).__name__})") from None
    if got.status_code != 200 or "access_token" not in _json(got):
        raise LtiRefused(f"the platform refused the tool a token ({got.status_code}: {got.text[:160]})")
    return str(_json(got)["access_token"])


def _json(response: Any) -> Any:
    try:
        return response.json()
    except ValueError:
        return {}


def members(where: Context) -> list[dict[str, Any]]:
    """Every member of the context, following the pages."""
    if not where.memberships:
        raise LtiRefused("no memberships URL is known: launch the tool from the course once, or pass --memberships")
    bearer = {"Authorization": f"Bearer {token(where.platform, [SCOPES['members']])}", "Accept": MEMBERS}
    found: list[dict[str, Any]] = []
    url: str | None = where.memberships
    with _client() as http:
        for _ in range(1000):  # pages; a platform that loops is stopped here
            if url is None:
                break
            got = http.get(url, headers=bearer)
            if got.status_code != 200:
                raise LtiRefused(f"the platform refused the roster ({got.status_code}: {got.text[:160]})")
            found += [m for m in _json(got).get("members", []) if isinstance(m, dict)]
            url = _next(got.headers.get("link", ""))
            if url is not None and _origin(url) != _origin(where.memberships):
                raise LtiRefused(f"the platform's roster names its next page on another origin ({_origin(url)[:80]}, "
                                 f"not {_origin(where.memberships)}): not followed, and the LMS's token not sent there")
    return found


def _origin(url: str) -> str:
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    port = parts.port or {"https": 443, "http": 80}.get(parts.scheme)
    return f"{parts.scheme}://{(parts.hostname or '').lower()}:{port}"


def _next(link: str) -> str | None:
    for part in link.split(","):
        match = re.match(r'\s*<([^>]+)>\s*;.*rel="?next"?', part)
        if match:
            return match.group(1)
    return None


@dataclass(frozen=True)
class Planned:
    """One student's grade as it would be sent."""

    student: str
    user_id: str | None
    old: str
    new: float | None
    max_score: float
    progress: str
    send: bool


def plan(where: Context, results: list[GradeResult], lesson_id: str, users: dict[str, str],
         points: float) -> list[Planned]:
    """What sending the lesson's grades to this LMS course would do, per student (users: the course id -> the
    platform's user id; points: the lesson's, the maximum of a submission that could not be graded). Where the
    course's policy does not show students their score yet (`before_due` other than "score", before the due date),
    none is sent: the LMS is told the work is submitted and its grade pending, so it shows no more than the tool."""
    sent = _sent(where).get(lesson_id, {})
    hidden = policy.level(lesson_id) != "score"
    planned = []
    for result in results:
        pending = result.manual is not None and bool(result.manual.pending)
        progress = "Pending" if hidden else "PendingManual" if pending else "FullyGraded"
        score = None if hidden else result.score if result.status == "graded" else 0.0
        before = sent.get(result.student) or {}
        same = before.get("digest") == result.digest and before.get("score") == score and \
            before.get("progress") == progress
        old = spelling.score(before["score"]) if "score" in before else "-"
        planned.append(Planned(result.student, users.get(result.student), old, score, result.max_score or points,
                               progress, not same and result.student in users))
    return planned


def send(where: Context, lesson_id: str, title: str, points: float, planned: list[Planned],
         results: dict[str, GradeResult]) -> int:
    """Post every planned score that changed; how many were posted (each remembered at once)."""
    todo = [p for p in planned if p.send]
    if not todo:
        return 0
    bearer = token(where.platform, [SCOPES["lineitem"], SCOPES["score"]])
    item = _line_item(where, bearer, lesson_id, title, points)
    scores = re.sub(r"(\?|$)", r"/scores\1", item, count=1)
    posted = 0
    with _client() as http:
        for p in todo:
            result = results[p.student]
            body: dict[str, Any] = {"userId": p.user_id, "activityProgress": "Submitted", "gradingProgress": p.progress,
                    "timestamp": dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds"),
                    "comment": f"graded by the course's autograder (submission {str(result.digest)[:12]})"}
            if p.new is not None:  # a score students may see now (AGS: no scoreGiven, no grade shown)
                body |= {"scoreGiven": p.new, "scoreMaximum": p.max_score}
            if result.submitted_as is not None and result.submitted_as.submitted_at:
                body["submission"] = {"submittedAt": result.submitted_as.submitted_at}
            got = http.post(scores, json=body, headers={"Authorization": f"Bearer {bearer}", "Content-Type": SCORE})
            if got.status_code not in (200, 201, 204):
                raise LtiRefused(f"the platform refused {p.student}'s score ({got.status_code}: {got.text[:160]}); "
                                 f"{posted} were sent before it")
            _remember(where, lesson_id, p.student, result.digest, p.new, p.progress)
            posted += 1
    return posted


def _line_item(where: Context, bearer: str, lesson_id: str, title: str, points: float) -> str:
    if not where.lineitems:
        raise LtiRefused("no line items URL is known: launch the tool from the course once, or pass --lineitems")
    headers = {"Authorization": f"Bearer {bearer}"}
    with _client() as http:
        got = http.get(where.lineitems, headers=headers | {"Accept": LINEITEMS})
        if got.status_code != 200:
            raise LtiRefused(f"the platform refused its line items ({got.status_code}: {got.text[:160]})")
        for item in _json(got) if isinstance(_json(got), list) else []:
            if isinstance(item, dict) and item.get("resourceId") == lesson_id and item.get("id"):
                return str(item["id"])
        made = http.post(where.lineitems, json={"scoreMaximum": points, "label": title, "resourceId": lesson_id,
                                                "tag": "grader"}, headers=headers | {"Content-Type": LINEITEM})
    if made.status_code not in (200, 201) or not _json(made).get("id"):
        raise LtiRefused(f"the platform did not create the line item ({made.status_code}: {made.text[:160]})")
    return str(_json(made)["id"])


def _sent(where: Context) -> dict[str, Any]:
    """What was sent to this LMS course, by lesson and student."""
    found = lti_course.read_record(SENT).get(where.key)
    return found if isinstance(found, dict) else {}


def _remember(where: Context, lesson_id: str, student: str, digest: str | None, score: float | None,
              progress: str) -> None:
    sent = lti_course.read_record(SENT)
    sent = {k: v for k, v in sent.items() if k.startswith(("http", "given ")) and isinstance(v, dict)}  # old kinds go
    sent.setdefault(where.key, {}).setdefault(lesson_id, {})[student] = {"digest": digest, "score": score,
                                                                        "progress": progress}
    lti_course.write_record(SENT, sent)


def users_by_student(where: Context, roster: bool = True) -> dict[str, str]:
    """The platform's user id of each student of this LMS course: those who launched from it as learners, and
    (with `roster`, where a memberships URL is known) its roster's learners."""
    if where.bound is not None:
        users = lti_course.users(where.bound)
    else:
        users = {str(u["student"]): str(u["sub"]) for u in lti_course.read_record(lti_course.USERS).values()
                 if isinstance(u, dict) and u.get("issuer") == where.platform.issuer and u.get("student")
                 and "student" in (u.get("contexts") or {}).values()}
    if roster and where.memberships:
        issuer = where.platform.issuer
        users |= {lti_course.member_id(m, issuer): str(m.get("user_id")) for m in members(where)
                  if lti_course.member_id(m, issuer) and m.get("user_id") and learner(m)}
    return users


def learner(member: dict[str, Any]) -> bool:
    """Whether a member takes the course (a Learner), not teaches it."""
    return any(str(role).endswith("#Learner") for role in member.get("roles") or [])


def send_one(result: GradeResult, lesson_id: str, title: str, points: float) -> tuple[bool, str]:
    """The service's passback of one recorded grade (course.toml's `send_grades`, from the outbox), to the LMS
    course the student is a member of: (whether it is settled: sent, nothing new, or nobody to send to; a line
    saying what happened); never an exception (the grade is recorded whatever the LMS says)."""
    import httpx

    try:
        said = []
        for where in contexts():
            users = users_by_student(where, roster=False)  # the launches'; the whole roster only for one they lack
            if result.student not in users:
                users = users_by_student(where)
            if result.student not in users:
                continue
            planned = plan(where, [result], lesson_id, users, points)
            sent = send(where, lesson_id, title, points, planned, {result.student: result})
            said.append(f"{result.student}'s grade sent to the LMS" if sent else
                        f"{result.student}: nothing new for the LMS")
    except (LtiRefused, OSError, httpx.HTTPError) as err:
        return False, f"{result.student}'s grade was not sent to the LMS: {str(err) or type(err).__name__}"
    if not said:
        return True, f"{result.student} is not in the LMS (no launch, not on its roster): the grade was not sent"
    return True, "; ".join(said)


@dataclass(frozen=True)
class Passback:
    """A grade to send to the LMS (a row of the outbox): the student's latest recorded grade of the lesson."""

    id: str
    lesson: str
    student: str
    digest: str | None
    tries: int


PASSBACK_TRIES = 8
"""Tries of a grade the LMS would not take (its backoff doubles from BACKOFF_S), before it is kept as failed."""


class Outbox(Tables):
    """The grades to send to the LMS, a row each, drained beside the grading (dispatch.passback): a slow or failing
    LMS delays no grade and re-queues no job. A newer grade of a student replaces one still waiting."""

    def put(self, lesson: str, student: str, digest: str | None, not_before: float = 0.0) -> None:
        """A grade to send, no earlier than `not_before` (the due date, where students see no score before it)."""
        with self.transaction() as db:
            if db.execute("UPDATE outbox SET digest=?, not_before=? WHERE lesson=? AND student=? AND state='waiting'",
                          (digest, not_before, lesson, student)) == 0:
                db.execute("INSERT INTO outbox (id, lesson, student, digest, state, not_before, made) VALUES (?, ?, ?, "
                           "?, 'waiting', ?, ?)", (secrets.token_hex(8), lesson, student, digest, not_before,
                                                  time.time()))

    def take(self, worker: str, n: int, lease_s: float) -> list[Passback]:
        """Up to n waiting grades for `worker`, leased; those whose sender died go back first."""
        now = time.time()
        with self.transaction() as db:
            db.execute("UPDATE outbox SET state='waiting', worker=NULL WHERE state='sending' AND lease_until < ?",
                       (now,))
            rows = db.all("SELECT id, lesson, student, digest, tries FROM outbox WHERE state='waiting' AND "
                          "not_before <= ? ORDER BY made LIMIT ?" + (" FOR UPDATE SKIP LOCKED" if self.postgres
                                                                    else ""), (now, n))
            for row in rows:
                db.execute("UPDATE outbox SET state='sending', worker=?, lease_until=?, tries=tries+1 WHERE id=?",
                           (worker, now + lease_s, row[0]))
        return [Passback(str(row[0]), str(row[1]), str(row[2]), row[3], int(row[4]) + 1) for row in rows]

    def settle(self, passback: Passback, worker: str, done: bool, said: str) -> None:
        """Sent (or nothing to send), or tried again after a backoff, or kept as failed after PASSBACK_TRIES."""
        state = "sent" if done else "failed" if passback.tries >= PASSBACK_TRIES else "waiting"
        wait = 0.0 if done else BACKOFF_S * 2 ** (passback.tries - 1)
        with self.transaction() as db:
            db.execute("UPDATE outbox SET state=?, said=?, not_before=?, worker=NULL WHERE id=? AND worker=? AND "
                       "state='sending'", (state, said[:500], time.time() + wait, passback.id, worker))

    def counts(self) -> dict[str, int]:
        with self.transaction() as db:
            return {str(state): int(n) for state, n in db.all("SELECT state, COUNT(*) FROM outbox GROUP BY state", ())}
