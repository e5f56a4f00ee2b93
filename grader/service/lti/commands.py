"""What `grader lti config`, `send-grades` and `roster` do, as lines for the person who asked."""

from __future__ import annotations

import json
from pathlib import Path

from grader.base import escape, files, spelling
from grader.classroom.batch_folder import BatchFolder
from grader.lesson import catalog
from grader.result.record import GradeResult
from grader.service.lti import courses as lti_course, services as lti_services
from grader.service.lti.keys import LtiRefused


def describe(url: str) -> str:
    """Canvas's developer-key JSON (paste it as "Paste JSON"), then the same for Moodle and any other platform."""
    canvas = {"title": "Course autograder", "description": "Submit notebooks and get graded feedback in seconds",
              "oidc_initiation_url": f"{url}/lti/login", "target_link_uri": f"{url}/lti/launch",
              "public_jwk_url": f"{url}/lti/jwks",
              "scopes": [lti_services.SCOPES[k] for k in ("lineitem", "score", "members")]
              + ["https://purl.imsglobal.org/spec/lti-ags/scope/result.readonly"],
              "extensions": [{"platform": "canvas.instructure.com", "privacy_level": "public",
                              "settings": {"placements": [
                                  {"placement": "assignment_selection", "message_type": "LtiDeepLinkingRequest",
                                   "target_link_uri": f"{url}/lti/launch"},
                                  {"placement": "link_selection", "message_type": "LtiDeepLinkingRequest",
                                   "target_link_uri": f"{url}/lti/launch"}]}}],
              "custom_fields": {}}
    generic = [("Tool URL / target link URI", f"{url}/lti/launch"), ("Initiate login URL", f"{url}/lti/login"),
               ("Redirection URI(s)", f"{url}/lti/launch"), ("Public keyset URL", f"{url}/lti/jwks"),
               ("Services", "IMS LTI Assignment and Grade Services: use this service for grade sync and column "
                            "management; IMS LTI Names and Role Provisioning: use this service; Deep Linking: on"),
               ("Privacy", "share the launcher's name, email and SIS id (lis_person_sourcedid) with the tool")]
    lines = ["Canvas (Admin > Developer Keys > + Developer Key > + LTI Key):",
             f"  Redirect URIs (a field of the form, above the JSON, required): {url}/lti/launch",
             "  Method: Paste JSON, then paste:", json.dumps(canvas, indent=1), "",
             "Moodle (Site administration > Plugins > External tool > Manage tools > configure a tool manually) and "
             "any other LTI 1.3 platform:"]
    lines += [f"  {label}: {value}" for label, value in generic]
    lines += ["", "Then add the platform's issuer, client id, endpoints and deployment id to lti.json in the course "
              "folder (README, \"The LMS\")."]
    return "\n".join(lines)


def send_grades(out: Path, lesson_id: str, dry_run: bool, lineitems: str | None, memberships: str | None,
                issuer: str | None) -> list[str]:
    """Send (or, dry, describe) the latest grade of each student of a batch folder, to each LMS course this course
    is bound to (its own learners' grades to each)."""
    lesson = catalog.get(lesson_id)
    folder = BatchFolder(out / lesson_id if (out / lesson_id).is_dir() and not BatchFolder(out).is_batch() else out)
    if not folder.is_batch():
        raise LtiRefused(f"{out} holds no graded batch of {lesson_id}")
    results = {r.student: r for r in (result for _, result in folder.read_all()) if r.lesson == lesson_id}
    targets = lti_services.contexts(lineitems, memberships, issuer)
    lines: list[str] = []
    for where in targets:
        lines += _send_to(where, lesson, results, dry_run, f" (LMS course {where.title})" if len(targets) > 1 else "")
    return lines


def _send_to(where: lti_services.Context, lesson: catalog.Lesson, results: dict[str, GradeResult],
             dry_run: bool, named: str) -> list[str]:
    """One LMS course's part of `send_grades`: a head line (naming the course where there are several), one line
    per student, who is missing on either side."""
    users = lti_services.users_by_student(where)
    planned = lti_services.plan(where, sorted(results.values(), key=lambda r: r.student), lesson.id, users,
                                lesson.max_score)
    lines = []
    for p in planned:
        new = spelling.score(p.new) if p.new is not None else "held"
        state = ("no LMS user" if p.user_id is None else "unchanged" if not p.send else
                 "would send" if dry_run else "sent")
        most = spelling.score(p.max_score)
        lines.append(f"  {escape.terminal(p.student):<20} {p.old:>6} -> {new:>6} of {most} ({p.progress}): {state}")
    unmatched = sorted(set(users) - set(results))
    if not dry_run:
        sent = lti_services.send(where, lesson.id, lesson.title, lesson.max_score, planned, results)
        head = f"{sent} grades of {lesson.id}{named} sent to {where.platform.issuer}"
    else:
        head = f"dry run: {sum(p.send for p in planned)} of {len(planned)} grades of {lesson.id}{named} would be sent"
    missing = [p.student for p in planned if p.user_id is None]
    held = any(p.new is None for p in planned)
    tail = ([f"scores held: students see no score of {lesson.id} before its due date (course.toml's before_due), so "
             "the LMS is sent each submission as pending, with no score; run send-grades again after the due date"]
            if held else []) + ([f"not in the LMS (no launch, not on its roster): {', '.join(missing)}"] if missing else []) + (
        [f"in the LMS with no grade here: {', '.join(unmatched)}"] if unmatched else [])
    return [head, *lines, *tail]


def roster(out: Path, memberships: str | None, issuer: str | None) -> list[str]:
    """The context's learners as a roster file; who joined and who left since the file was last written."""
    members = [(where, m) for where in lti_services.contexts(None, memberships, issuer)
               for m in lti_services.members(where)]
    rows = [("student", "name", "email", "lti_user_id")]
    unnamed = []
    for where, member in members:
        if not lti_services.learner(member):
            continue
        student = lti_course.member_id(member, where.platform.issuer)
        if student in {row[0] for row in rows}:
            continue  # a member of two of the course's LMS courses is one student
        if not student:
            unnamed.append(str(member.get("name") or member.get("user_id")))
            continue
        rows.append((student, str(member.get("name") or ""), str(member.get("email") or ""),
                     str(member.get("user_id") or "")))
    before = set()
    if out.is_file():
        from grader.intake import roster as class_list

        before = {m.student for m in class_list.read(out).members}
    now = {row[0] for row in rows[1:]}
    files.write_text(out, escape.csv_text(rows, "\n"))
    lines = [f"{len(now)} students written to {out} ({len(members)} members read)"]
    if out.exists() and before:
        lines += [f"joined: {', '.join(sorted(now - before)) or 'nobody'}",
                  f"left: {', '.join(sorted(before - now)) or 'nobody'}"]
    if unnamed:
        lines.append(f"not matched (no SIS id, login or email shared): {', '.join(unnamed)}")
    return lines
