"""Who an LMS launch is, and for which course: roles, the course's LMS contexts, and the platform's users.

**Roles.** LTI 1.3's roles claim mixes three vocabularies: context roles
(`http://purl.imsglobal.org/vocab/lis/v2/membership#Instructor`, and sub-roles
such as `membership/Instructor#TeachingAssistant`), institution roles
(`.../institution/person#Instructor`: someone who teaches *some* course) and
system roles (`.../system/person#Administrator`). Only a context role says who
someone is in *this* course: an instructor holds one that course.toml's `[lti]
instructor_roles` lists (`Instructor` unless it says more: `TeachingAssistant`,
`ContentDeveloper`, `Administrator`, `Mentor`); a `Learner` is a student;
anyone else (a Mentor, who observes; an administrator with no role in the
course) is refused by name. A simple name (`Instructor`) counts as a context
role, as LTI 1.3 allows; institution and system roles never count.

**Contexts.** A course is bound to the LMS contexts (courses) course.toml lists
(`[lti] contexts`) and to the one its first instructor launch came from, kept
per (platform, deployment, context) with the service URLs its launches give
(line items, memberships): grades go to these and nowhere else. A launch from
any other context, or a learner's before the course is bound, is refused in
one line.

**Users.** A platform user is recorded once, by (issuer, `sub`): the student
id their first launch matched stays theirs. It is matched on the SIS id, else
the platform's login, else their full email where the course's roster (`[lti]
roster`) lists it, never an email's local part; it is checked as a class zip's
names are (layouts.checked_id); an id another platform user holds already is
refused, so two LMS accounts never share a student's work.
"""

from __future__ import annotations

import dataclasses
import json
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from grader.base import files
from grader.base.errors import GraderError
from grader.intake import layouts
from grader.lesson import course
from grader.service.lti import keys as lti_keys
from grader.service.lti.keys import LtiRefused, Platform

LTI = "https://purl.imsglobal.org/spec/lti/claim/"
AGS = "https://purl.imsglobal.org/spec/lti-ags/claim/endpoint"
NRPS = "https://purl.imsglobal.org/spec/lti-nrps/claim/namesroleservice"
MEMBERSHIP = "http://purl.imsglobal.org/vocab/lis/v2/membership"
CONTEXTS = "contexts.json"
USERS = "users.json"

_RECORD_LOCK = threading.Lock()


# -- roles -------------------------------------------------------------------------------------------------------
def context_roles(roles: Any) -> set[str]:
    """The context roles among a roles claim, by name (`Instructor`, `TeachingAssistant`, `Learner`, ...)."""
    found = set()
    for role in roles if isinstance(roles, list) else []:
        text = str(role)
        if text.startswith(MEMBERSHIP + "#"):
            found.add(text.split("#", 1)[1])
        elif text.startswith(MEMBERSHIP + "/") and "#" in text:  # a sub-role: membership/Instructor#TeachingAssistant
            found.add(text.rsplit("#", 1)[1])
        elif text and "/" not in text and "#" not in text and ":" not in text:  # LTI 1.3's simple context names
            found.add(text)
    return found


def role(roles: Any) -> str:
    """`instructor` or `student` for this course, from the context roles alone; one line for anyone else."""
    held = context_roles(roles)
    if held & set(course.current().lti.instructor_roles):
        return "instructor"
    if "Learner" in held:
        return "student"
    if "Mentor" in held:
        raise LtiRefused("an observer (Mentor) of the LMS course has no access here: course.toml's [lti] "
                         "instructor_roles does not list Mentor")
    shown = ", ".join(sorted(held)) or "none"
    raise LtiRefused(f"the launch gives no role of a learner or an instructor in this LMS course (context roles: "
                     f"{shown}); institution and system roles open nothing here")


# -- contexts ----------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Context:
    """One LMS course this course is bound to, and where its services are."""

    issuer: str
    client_id: str
    deployment_id: str
    id: str
    title: str = ""
    lineitems: str = ""
    memberships: str = ""
    how: str = ""
    """How it was bound: `course.toml`, or the first instructor launch (who, when)."""

    @property
    def key(self) -> str:
        return f"{self.issuer} {self.deployment_id} {self.id}"

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Context:
        return cls(*(str(data.get(k) or "") for k in ("issuer", "client_id", "deployment_id", "id", "title",
                                                        "lineitems", "memberships", "how")))


def bound() -> list[Context]:
    """The contexts this course is bound to (by course.toml or its first instructor launch), as recorded."""
    return [Context.from_dict(entry) for entry in read_record(CONTEXTS).values()
            if isinstance(entry, dict) and entry.get("how") and entry.get("id")]


def admit(claims: dict[str, Any], where: Platform, who: str, as_role: str) -> Context:
    """The context of a checked launch if it is this course's (binding it at the first instructor launch, and
    keeping the service URLs it gives); one line otherwise."""
    given = claims.get(LTI + "context")
    if not isinstance(given, dict) or not str(given.get("id") or ""):
        raise LtiRefused("the launch names no LMS course (no context): open the tool from inside the course")
    ags, nrps = claims.get(AGS), claims.get(NRPS)
    found = Context(where.issuer, where.client_id, str(claims.get(LTI + "deployment_id") or ""),
                    str(given["id"]), str(given.get("title") or given.get("label") or "")[:200],
                    str(ags.get("lineitems") or "") if isinstance(ags, dict) else "",
                    str(nrps.get("context_memberships_url") or "") if isinstance(nrps, dict) else "")
    listed = course.current().lti.contexts
    with _RECORD_LOCK:
        kept = read_record(CONTEXTS)
        ours = [Context.from_dict(e) for e in kept.values() if isinstance(e, dict) and e.get("how")]
        if found.key in {c.key for c in ours}:
            how = next(c.how for c in ours if c.key == found.key)
        elif found.id in listed:
            how = "course.toml"
        elif not ours and not listed and as_role == "instructor":
            how = f"the first instructor launch ({who}, {time.strftime('%Y-%m-%d %H:%M', time.gmtime())} UTC)"
        elif not ours:
            raise LtiRefused("this course is not bound to its LMS course yet: its instructor opens the tool from "
                             "the LMS course once, which binds it")
        else:
            names = "; ".join([f"{c.title or c.id} ({c.id})" for c in ours] + [i for i in listed if i not in
                                                                               {c.id for c in ours}])
            raise LtiRefused(f"the launch comes from the LMS course {found.title or found.id!r} ({found.id[:80]}), "
                             f"which this course is not bound to ({names}): open the tool from this course's own "
                             "LMS course, or add the context id to [lti] contexts in course.toml")
        entry = {**dataclasses.asdict(found), "how": how}
        before = kept.get(found.key)
        old: dict[str, Any] = before if isinstance(before, dict) else {}
        entry.update({k: old.get(k) for k in ("lineitems", "memberships") if not entry[k] and old.get(k)})
        kept = {k: v for k, v in kept.items() if isinstance(v, dict) and v.get("how")}  # records of old kinds go
        kept[found.key] = entry
        write_record(CONTEXTS, kept)
    return Context.from_dict(entry)


def describe() -> list[str]:
    """`grader course`'s lines of the LMS: the LMS courses this course is bound to, and who its instructors are."""
    here = course.current()
    if here.private is None:
        return []
    kept = bound() if (here.private / lti_keys.KEYS / CONTEXTS).is_file() else []
    lines = [f"LMS course: {c.title or c.id} (context {c.id}, {c.issuer}, deployment {c.deployment_id}): bound by "
             f"{c.how}; grades go to {c.lineitems or 'no line items yet'}" for c in kept]
    lines += [f"LMS course: context {i} (listed in course.toml; no launch from it yet)" for i in here.lti.contexts
              if i not in {c.id for c in kept}]
    if not lines:
        lines = ["LMS course: none bound yet (the first instructor launch from the LMS course binds it, or list its "
                 "context id in course.toml's [lti] contexts)"]
    lines.append(f"LMS instructors: the context roles {', '.join(here.lti.instructor_roles)} (institution and system "
                 "roles never); learners: Learner")
    return lines


# -- users -------------------------------------------------------------------------------------------------------
def identify(claims: dict[str, Any], issuer: str) -> str:
    """The student id of the launch's user: recorded for (issuer, sub), else matched (module note); one line
    when nothing matches, or when the id matched is another platform user's."""
    users = read_record(USERS)
    known = users.get(_user_key(issuer, claims.get("sub")))
    if isinstance(known, dict) and known.get("student"):
        return str(known["student"])
    raw = _matched(claims.get(LTI + "lis"), claims.get(LTI + "ext") or claims.get("ext"), claims.get("email"))
    if not raw:
        raise LtiRefused(f"the platform sent no SIS id or login for user {str(claims.get('sub'))[:60]!r} "
                         f"({str(claims.get('name') or '')[:60]}), and no roster of the course lists their email: "
                         "nobody of the course can be matched; ask the LMS administrator to share them with the tool")
    try:
        student = layouts.checked_id(raw, "the LMS's id for this user")
    except GraderError as err:
        raise LtiRefused(str(err)) from None
    if any(isinstance(u, dict) and u.get("student") == student for u in users.values()):
        raise LtiRefused(f"the student id {student!r} is another LMS user's already: the launch was not let in "
                         "(ask the instructor)")
    return student


def remember(claims: dict[str, Any], issuer: str, student: str, name: str, as_role: str, context: Context) -> None:
    """The user's student id, kept for (issuer, sub) from now on, and their role in the context."""
    with _RECORD_LOCK:
        users = read_record(USERS)
        users = {k: v for k, v in users.items() if isinstance(v, dict) and v.get("student")}  # old kinds go
        key = _user_key(issuer, claims.get("sub"))
        entry = users.get(key) or {"student": student, "issuer": issuer, "sub": str(claims.get("sub"))}
        entry["name"] = name
        entry["contexts"] = {**(entry.get("contexts") or {}), context.key: as_role}
        users[key] = entry
        write_record(USERS, users)


def users(context: Context) -> dict[str, str]:
    """The platform's user id (`sub`) of each student who launched from this context as a learner."""
    return {str(u["student"]): str(u["sub"]) for u in read_record(USERS).values()
            if isinstance(u, dict) and u.get("issuer") == context.issuer and u.get("student") and u.get("sub")
            and (u.get("contexts") or {}).get(context.key) == "student"}


def member_id(member: dict[str, Any], issuer: str) -> str:
    """A roster member's (NRPS) student id, by the rules of a launch; "" where none is safe to give."""
    known = read_record(USERS).get(_user_key(issuer, member.get("user_id")))
    if isinstance(known, dict) and known.get("student"):
        return str(known["student"])
    raw = _matched({"person_sourcedid": member.get("lis_person_sourcedid")},
                   {"user_username": member.get("ext_user_username") or member.get("login_id")}, member.get("email"))
    try:
        return layouts.checked_id(raw, "the LMS's id") if raw else ""
    except GraderError:
        return ""


def _user_key(issuer: str, sub: Any) -> str:
    return f"{issuer} {sub}"


def _matched(lis: Any, ext: Any, email: Any) -> str:
    for found in (lis.get("person_sourcedid") if isinstance(lis, dict) else None,
                  ext.get("user_username") if isinstance(ext, dict) else None):
        if isinstance(found, str) and found.strip():
            return found.strip()
    roster = course.current().lti.roster
    if isinstance(email, str) and "@" in email and roster is not None:
        from grader.intake import roster as class_list

        try:
            listed = class_list.read(roster).members
        except GraderError:
            return ""
        return next((m.student for m in listed if m.email and m.email.casefold() == email.strip().casefold()), "")
    return ""


# -- records -----------------------------------------------------------------------------------------------------
def record_path(name: str) -> Path:
    return lti_keys.folder() / name


def read_record(name: str) -> dict[str, Any]:
    try:
        data = json.loads(files.read_regular(record_path(name), 16 << 20))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def write_record(name: str, kept: dict[str, Any]) -> None:
    files.write_text(record_path(name), json.dumps(kept, indent=1, sort_keys=True) + "\n", private=True)
