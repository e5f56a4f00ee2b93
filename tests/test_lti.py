"""LTI 1.3 end to end, against a platform on loopback built from the IMS specifications' own example messages
(tests/lti_platform.py): launches as a learner and as an instructor, each refusal a person can meet, deep linking,
grades sent and sent again (AGS), and a paged roster (NRPS).

lti-consumer-xblock (edX's platform side) installs from the registry but does not run outside Open edX: its LTI
1.3 consumer imports Django's settings, edx-django-utils and the XBlock runtime at import.
"""

from __future__ import annotations

import html
import json
import re
import socket
import threading
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import jwt
import pytest
from lti_platform import (
    CLIENT_ID,
    COURSE,
    INSTITUTION_INSTRUCTOR,
    INSTRUCTOR,
    ISSUER,
    LEARNER,
    MENTOR,
    OTHER_COURSE,
    SYSTEM_ADMINISTRATOR,
    TEACHING_ASSISTANT,
    Platform,
    Recorder,
    member,
    registration,
)

ROOT = Path(__file__).parent.parent
LESSON = "inference-scaling"
INSTRUCTOR_ID = "0ae836b9-7fc9-4060-006f-27b2066ac545"  # NRPS 2.0's example member
LEARNERS = ["ada", "ben", "cleo", "dev", "eli"]


def _serve(app: Any) -> tuple[str, Any, Any]:
    import uvicorn

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    return f"http://127.0.0.1:{sock.getsockname()[1]}", server, thread


@pytest.fixture
def lms(own_course: Any, tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[dict[str, Any]]:
    """A course registering the loopback platform, the tool served beside it; both stopped at the end. The servers'
    database is a SQLite file, or (parametrised "postgresql") a throwaway PostgreSQL cluster."""
    from grader.base import database
    from grader.service import app, tokens
    from grader.service.jobs import Queue
    from grader.service.lti import keys as lti_keys

    members = [member(INSTRUCTOR_ID, "example.edu:71ee7e42", "Jane Q. Public", [INSTRUCTOR], "jane@platform.example.edu")]
    members += [member(f"user-{s}", s, f"{s.title()} Student", [LEARNER], f"{s}@example.edu") for s in LEARNERS]
    members.append(member("user-nosis", None, "Noel Nobody", [LEARNER]))  # shares no SIS id, login or email
    platform = Platform(members)
    platform_url, *platform_server = _serve(platform.app())
    platform.url = platform_url
    home = own_course()
    (home / "lti.json").write_text(json.dumps(registration(platform_url)))
    kid = lti_keys.make_key()

    where = request.getfixturevalue("postgres") if getattr(request, "param", "") == "postgresql" \
        else str(tmp_path / "q.sqlite")

    def book() -> Any:  # as `grader serve` makes it: the sessions launches open kept in the queue's database
        return tokens.Book(held=database.Held(database.Database(where, "queue")))

    served = app.Served(queue=Queue(where), book=book(), out=tmp_path / "served", lessons=(LESSON,),
                        jobs=1, min_free=0)
    tool_url, *tool_server = _serve(app.app(served))
    # a second server of the same course on the same database
    second = app.Served(queue=Queue(where), book=book(), out=tmp_path / "served", lessons=(LESSON,),
                        jobs=1, min_free=0)
    other_url, *other_server = _serve(app.app(second))
    platform.tool = tool_url
    try:
        yield {"platform": platform, "tool": tool_url, "other": other_url, "kid": kid, "home": home, "tmp": tmp_path}
    finally:
        for server, thread in (platform_server, tool_server, other_server):
            server.should_exit = True
            thread.join(10)
        for each in (served, second):
            each.queue.close()
            if each.book.held is not None:
                each.book.held.db.close()


def _form(page: str) -> tuple[str, dict[str, str]]:
    action = html.unescape(re.search(r'action="([^"]+)"', page)[1])
    fields = {m[1]: html.unescape(m[2]) for m in re.finditer(r'name="?([\w]+)"? value="([^"]*)"', page)}
    return action, fields


def _login(lms: dict[str, Any], user: str, browser: httpx.Client) -> tuple[str, dict[str, str]]:
    """The first half of a launch in one browser (its cookies kept): the platform starts the login, the tool
    redirects to the platform's auth URL, the platform answers with the form that would post the id_token."""
    login = browser.get(f"{lms['tool']}/lti/login", params={"iss": ISSUER, "login_hint": user, "client_id": CLIENT_ID,
                                                             "target_link_uri": f"{lms['tool']}/lti/launch",
                                                             "lti_message_hint": "xy"})
    assert login.status_code == 302, login.text
    return _form(browser.get(login.headers["location"]).text)


def _launch(lms: dict[str, Any], user: str) -> tuple[httpx.Response, dict[str, str]]:
    """The whole flow as one browser makes it: the login, then the form posted to the tool."""
    with httpx.Client() as browser:
        action, fields = _login(lms, user, browser)
        return browser.post(action, data=fields), fields


def _refusal(response: httpx.Response) -> str:
    assert response.status_code == 400
    return html.unescape(re.search(r"<p>(.*)</p>", response.text)[1])


def test_a_learner_and_an_instructor_launch_into_their_own_pages_signed_in(lms: dict[str, Any]) -> None:
    teacher_first, _ = _launch(lms, INSTRUCTOR_ID)  # the first instructor launch binds the course to its context
    assert 'data-role="instructor"' in teacher_first.text
    learner, _ = _launch(lms, "user-ada")
    assert learner.status_code == 200, learner.text
    assert 'data-student="ada"' in learner.text and 'data-role="student"' in learner.text
    assert 'location.replace("/?lesson=inference-scaling")' in learner.text  # the lesson the link names
    token = re.search(r'"grader-token", "([^"]+)"', learner.text)[1]
    mine = httpx.get(f"{lms['tool']}/api/submissions", headers={"Authorization": f"Bearer {token}"})
    assert mine.status_code == 200 and mine.json() == {"submissions": []}
    assert httpx.get(f"{lms['tool']}/api/queue", headers={"Authorization": f"Bearer {token}"}).status_code == 403
    teacher, _ = _launch(lms, INSTRUCTOR_ID)
    assert 'data-role="instructor"' in teacher.text and 'location.replace("/instructor")' in teacher.text
    staff = re.search(r'"grader-instructor", "([^"]+)"', teacher.text)[1]
    assert httpx.get(f"{lms['tool']}/api/queue", headers={"Authorization": f"Bearer {staff}"}).status_code == 200
    contexts = json.loads((lms["home"] / "private" / "lti" / "contexts.json").read_text())
    (recorded,) = contexts.values()
    assert recorded["lineitems"] == f"{lms['platform'].url}/{COURSE}/lineitems"
    assert recorded["memberships"] == f"{lms['platform'].url}/{COURSE}/memberships"


def test_every_wrong_launch_is_refused_in_one_line(lms: dict[str, Any]) -> None:
    platform = lms["platform"]
    _launch(lms, INSTRUCTOR_ID)
    first, fields = _launch(lms, "user-ben")
    assert first.status_code == 200
    replayed = httpx.post(f"{lms['tool']}/lti/launch", data=fields)
    assert "answers no login of this tool" in _refusal(replayed)
    # the same id_token under a fresh login's state, in the browser that started that login: its nonce was used
    with httpx.Client() as browser:
        login = browser.get(f"{lms['tool']}/lti/login", params={"iss": ISSUER, "login_hint": "user-ben"})
        state = re.search(r"state=([^&]+)", login.headers["location"])[1]
        again = browser.post(f"{lms['tool']}/lti/launch", data={"id_token": fields["id_token"], "state": state})
    assert _refusal(again) == ("The LMS launch was refused: the launch was replayed (its nonce was used already): "
                               "open the assignment from the LMS again")
    platform.tamper = {"claims": {"aud": "another-tool"}}
    assert "addressed to another tool" in _refusal(_launch(lms, "user-ben")[0])
    platform.tamper = {"claims": {"exp": 1_000_000_000, "iat": 999_999_000}}
    assert "refused: the launch has expired (its exp is past)" in _refusal(_launch(lms, "user-ben")[0])
    platform.tamper = {"foreign": True}
    assert "does not publish: a foreign or retired key" in _refusal(_launch(lms, "user-ben")[0])
    platform.tamper = {"claims": {"https://purl.imsglobal.org/spec/lti/claim/deployment_id": "elsewhere"}}
    assert "deployment 'elsewhere'" in _refusal(_launch(lms, "user-ben")[0])
    nobody = _refusal(_launch(lms, "user-nosis")[0])
    assert "no SIS id or login for user 'user-nosis' (Noel Nobody)" in nobody
    unknown = httpx.get(f"{lms['tool']}/lti/login", params={"iss": "https://elsewhere.example", "login_hint": "x"})
    assert "is registered in the course's lti.json" in _refusal(unknown)


@pytest.mark.parametrize("lms", ["sqlite", "postgresql"], indirect=True)
def test_a_login_on_one_server_launches_on_another_and_is_spent_on_both(lms: dict[str, Any]) -> None:
    """Two servers of one course behind one address: the login lands on one, its launch on the other (what a
    load balancer does), the session it opens is good on both, and the same launch sent again is refused by both."""
    teacher, _ = _launch(lms, INSTRUCTOR_ID)  # the first instructor launch binds the course to its context
    assert 'data-role="instructor"' in teacher.text
    with httpx.Client() as browser:
        _, fields = _login(lms, "user-ada", browser)  # on the first server
        landed = browser.post(f"{lms['other']}/lti/launch", data=fields)  # the launch, on the second
        assert landed.status_code == 200 and 'data-student="ada"' in landed.text, landed.text
        for server in (lms["tool"], lms["other"]):
            assert "answers no login" in _refusal(browser.post(f"{server}/lti/launch", data=fields))
    token = re.search(r'"grader-token", "([^"]+)"', landed.text)[1]
    for server in (lms["tool"], lms["other"]):
        mine = httpx.get(f"{server}/api/submissions", headers={"Authorization": f"Bearer {token}"})
        assert mine.status_code == 200 and mine.json() == {"submissions": []}
    lms["platform"].message = "LtiDeepLinkingRequest"
    choice, _ = _launch(lms, INSTRUCTOR_ID)  # offered on the first server
    action, offered = _form(choice.text)
    linked = httpx.post(f"{lms['other']}{action}", data=offered)  # chosen on the second
    assert linked.status_code == 200 and _form(linked.text)[0] == f"{lms['platform'].url}/deep_links"
    assert "answers no deep-linking request" in _refusal(httpx.post(f"{lms['tool']}{action}", data=offered))


def test_a_launch_without_a_deep_link_finds_its_lesson_by_the_links_title_and_never_guesses(
        lms: dict[str, Any]) -> None:
    from lti_platform import LTI

    from grader.lesson import catalog

    _launch(lms, INSTRUCTOR_ID)
    title = catalog.get(LESSON).title.upper()  # an LMS assignment named as the lesson, whatever its case
    lms["platform"].tamper = {"claims": {LTI + "custom": {}, LTI + "resource_link": {"id": "r1", "title": title}}}
    landed, _ = _launch(lms, "user-ada")
    assert f'location.replace("/?lesson={LESSON}")' in landed.text
    lms["platform"].tamper = {"claims": {LTI + "custom": {}, LTI + "resource_link": {"id": "r2", "title": "Week 3"}}}
    landed, _ = _launch(lms, "user-ben")
    assert 'location.replace("/")' in landed.text  # no lesson named: the page asks, nothing is picked for them


def test_an_instructor_links_a_lesson_by_deep_linking(lms: dict[str, Any]) -> None:
    lms["platform"].message = "LtiDeepLinkingRequest"
    choice, _ = _launch(lms, INSTRUCTOR_ID)
    assert choice.status_code == 200 and "Link a lesson" in choice.text
    action, fields = _form(choice.text)
    back = httpx.post(f"{lms['tool']}{action}", data=fields)
    target, answer = _form(back.text)
    assert target == f"{lms['platform'].url}/deep_links"
    keys = httpx.get(f"{lms['tool']}/lti/jwks").json()["keys"]
    (key,) = [jwt.algorithms.RSAAlgorithm.from_jwk(json.dumps(k)) for k in keys if k["kid"] == lms["kid"]]
    claims = jwt.decode(answer["JWT"], key, algorithms=["RS256"], audience=ISSUER)
    assert claims["iss"] == CLIENT_ID
    assert claims["https://purl.imsglobal.org/spec/lti/claim/message_type"] == "LtiDeepLinkingResponse"
    assert claims["https://purl.imsglobal.org/spec/lti-dl/claim/data"] == "csrftoken:c7fbba78-7b75"
    (item,) = claims["https://purl.imsglobal.org/spec/lti-dl/claim/content_items"]
    spec = tomllib.loads((ROOT / "lessons" / LESSON / "lesson.toml").read_text())
    points = sum(e.get("points", 1) for e in spec["exercises"]) + sum(w["points"] for w in spec.get("written", []))
    assert item["type"] == "ltiResourceLink" and item["custom"] == {"lesson": LESSON}
    assert item["lineItem"]["scoreMaximum"] == points == 6 and item["lineItem"]["resourceId"] == LESSON
    reused = httpx.post(f"{lms['tool']}{action}", data=fields)
    assert "answers no deep-linking request" in _refusal(reused)


def test_the_roster_is_pulled_page_by_page_and_says_who_joined_and_left(lms: dict[str, Any]) -> None:
    from grader.service.lti import commands as lti_setup

    _launch(lms, INSTRUCTOR_ID)  # the launch binds the course and records its memberships URL
    out = lms["tmp"] / "roster.csv"
    said = lti_setup.roster(out, None, None)
    assert said[0] == f"5 students written to {out} (7 members read)"  # 4 pages of 2; the instructor left out
    assert "not matched (no SIS id, login or email shared): Noel Nobody" in said
    from grader.intake import roster as class_list

    assert [m.student for m in class_list.read(out).members] == LEARNERS
    lms["platform"].members = [m for m in lms["platform"].members if m["lis_person_sourcedid"] != "ben"]
    lms["platform"].members.append(member("user-fay", "fay", "Fay Student", [LEARNER]))
    again = lti_setup.roster(out, None, None)
    assert "joined: fay" in again and "left: ben" in again


@pytest.fixture(scope="module")
def graded_samples(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bundled samples of the lesson, graded by `grader batch` (once for the module)."""
    from click.testing import CliRunner

    from grader import cli

    out = tmp_path_factory.mktemp("lti-batch") / "out"
    done = CliRunner().invoke(cli.main, ["batch", str(ROOT / "samples" / LESSON), "--lesson", LESSON, "--out",
                                         str(out)])
    assert done.exit_code == 0, done.output
    return out


@pytest.mark.kernel
def test_grades_go_back_once_and_a_dry_run_lists_every_student(lms: dict[str, Any], graded_samples: Path) -> None:
    from grader.service.lti import commands as lti_setup

    _launch(lms, INSTRUCTOR_ID)
    _launch(lms, "user-ada")
    _add(lms, member("user-hist-kid", "olga", "Olga Student", [LEARNER], context=OTHER_COURSE))
    assert "not bound to" in _refusal(_launch(lms, "user-hist-kid")[0])  # another course's student opens the tool
    results = {p.stem: json.loads(p.read_text()) for p in (graded_samples / "results").glob("*.json")}
    dry = lti_setup.send_grades(graded_samples, LESSON, True, None, None, None)
    print("\n".join(dry))  # what `grader lti send-grades OUT --lesson L --dry-run` prints
    assert dry[0] == f"dry run: 5 of {len(results)} grades of {LESSON} would be sent"
    for student, data in results.items():
        line = next(line for line in dry if line.strip().startswith(student + " "))
        score = data["score"] if data["status"] == "graded" else 0
        assert f"-> {score:>6g} of 6 " in line  # a rejected file is 0 of the lesson's points, never 0 of 0
        assert line.endswith("would send") if student in LEARNERS else line.endswith("no LMS user")
    assert dry[-1] == "not in the LMS (no launch, not on its roster): fay"  # the instructor is nobody's grade
    assert lms["platform"].scores == []  # a dry run sends nothing
    sent = lti_setup.send_grades(graded_samples, LESSON, False, None, None, None)
    assert sent[0] == f"5 grades of {LESSON} sent to {ISSUER}"
    (item,) = lms["platform"].lineitems
    assert item["resourceId"] == LESSON and item["scoreMaximum"] == 6
    assert item["context"] == COURSE and {s["context"] for s in lms["platform"].scores} == {COURSE}
    by_user = {s["userId"]: s for s in lms["platform"].scores}
    assert set(by_user) == {f"user-{s}" for s in LEARNERS}
    ada = by_user["user-ada"]
    assert ada["scoreGiven"] == results["ada"]["score"] and ada["scoreMaximum"] == results["ada"]["max_score"]
    assert ada["activityProgress"] == "Submitted"
    pending = bool(results["ada"].get("manual", {}).get("written")) and any(
        w["points"] is None for w in results["ada"]["manual"]["written"])
    assert ada["gradingProgress"] == ("PendingManual" if pending else "FullyGraded")
    again = lti_setup.send_grades(graded_samples, LESSON, False, None, None, None)
    assert again[0] == f"0 grades of {LESSON} sent to {ISSUER}" and len(lms["platform"].scores) == 5
    assert all(line.endswith("unchanged") for line in again[1:6])
    # the service's passback of one grade as it is recorded (course.toml's send_grades) says what happened
    from grader.classroom.batch_folder import BatchFolder
    from grader.service.lti import services as lti_services

    recorded = dict(BatchFolder(graded_samples).read_all())
    assert lti_services.send_one(recorded["ada"], LESSON, "t", 6) == (True, "ada: nothing new for the LMS")
    assert lti_services.send_one(recorded["fay"], LESSON, "t", 6) == (
        True, "fay is not in the LMS (no launch, not on its roster): the grade was not sent")


# -- who a launch is, and for which course (the front door's trust) ------------------------------------------------
def _add(lms: dict[str, Any], *members: dict[str, Any]) -> None:
    lms["platform"].members.extend(members)


def _token(response: httpx.Response) -> str:
    return re.search(r'"grader-(?:token|instructor)", "([^"]+)"', response.text)[1]


def test_only_a_role_in_this_courses_context_opens_the_instructors_side(lms: dict[str, Any]) -> None:
    _launch(lms, INSTRUCTOR_ID)
    _add(lms, member("user-fay", "fay", "Fay Student", [LEARNER, INSTITUTION_INSTRUCTOR]),  # teaches elsewhere
         member("user-mo", "mo", "Mo Parent", [MENTOR]),  # Canvas's observer
         member("user-root", "root1", "Root Admin", [SYSTEM_ADMINISTRATOR, INSTITUTION_INSTRUCTOR]),
         member("user-tia", "tia", "Tia Assistant", [TEACHING_ASSISTANT]))
    fay, _ = _launch(lms, "user-fay")
    assert 'data-role="student"' in fay.text
    queue = httpx.get(f"{lms['tool']}/api/queue", headers={"Authorization": f"Bearer {_token(fay)}"})
    assert queue.status_code == 403  # an institution's Instructor who is a Learner here sees nobody's work
    assert "an observer (Mentor) of the LMS course has no access here" in _refusal(_launch(lms, "user-mo")[0])
    root = _refusal(_launch(lms, "user-root")[0])
    assert "no role of a learner or an instructor in this LMS course (context roles: none)" in root
    assert "institution and system roles open nothing here" in root
    assert "(context roles: TeachingAssistant)" in _refusal(_launch(lms, "user-tia")[0])  # not unless the course says
    (lms["home"] / "course.toml").write_text('name = "lti"\ntimezone = "UTC"\n[lti]\n'
                                             'instructor_roles = ["Instructor", "TeachingAssistant"]\n')
    tia, _ = _launch(lms, "user-tia")
    assert 'data-role="instructor"' in tia.text


def test_a_course_is_bound_to_its_lms_course_and_another_courses_launch_is_refused(lms: dict[str, Any]) -> None:
    from grader.service.lti import services as lti_services

    early = _refusal(_launch(lms, "user-ada")[0])
    assert "this course is not bound to its LMS course yet: its instructor opens the tool" in early
    _add(lms, member("user-hist-prof", "hprof", "Hal Historian", [INSTRUCTOR], context=OTHER_COURSE),
         member("user-hist-kid", "olga", "Olga Student", [LEARNER], context=OTHER_COURSE))
    teacher, _ = _launch(lms, INSTRUCTOR_ID)
    assert 'data-role="instructor"' in teacher.text
    for other in ("user-hist-prof", "user-hist-kid"):  # one deployment, another course: its instructor is nobody here
        said = _refusal(_launch(lms, other)[0])
        assert f"the launch comes from the LMS course 'Modern History' ({OTHER_COURSE})" in said
        assert f"which this course is not bound to (Economics as a Social Science ({COURSE}))" in said
    assert 'data-role="student"' in _launch(lms, "user-ada")[0].text
    (where,) = lti_services.contexts()  # where grades go: the bound course's line items, whoever launched last
    assert where.lineitems == f"{lms['platform'].url}/{COURSE}/lineitems"
    assert where.memberships == f"{lms['platform'].url}/{COURSE}/memberships"
    from click.testing import CliRunner

    from grader import cli

    shown = CliRunner().invoke(cli.main, ["course"]).output  # what `grader course` prints
    assert f"LMS course: Economics as a Social Science (context {COURSE}, {ISSUER}, deployment " in shown
    assert "bound by the first instructor launch (example.edu:71ee7e42, " in shown
    assert f"grades go to {lms['platform'].url}/{COURSE}/lineitems" in shown
    assert "LMS instructors: the context roles Instructor (institution and system roles never)" in shown
    # a course.toml that names the other course's context lets its launches in too (cross-listed sections)
    (lms["home"] / "course.toml").write_text(f'name = "lti"\ntimezone = "UTC"\n[lti]\ncontexts = ["{OTHER_COURSE}"]\n')
    assert 'data-student="olga"' in _launch(lms, "user-hist-kid")[0].text
    assert {c.title for c in lti_services.contexts()} == {"Economics as a Social Science", "Modern History"}


def test_an_lms_id_that_cannot_name_a_file_is_refused(lms: dict[str, Any], tmp_path: Path) -> None:
    from grader.base.errors import GraderError
    from grader.classroom.batch_folder import BatchFolder

    _launch(lms, INSTRUCTOR_ID)
    _add(lms, member("user-esc", None, "Eve Escaper", [LEARNER], login="../../../escaped"),
         member("user-dot", None, "Dot Dotty", [LEARNER], login=".."))
    said = _refusal(_launch(lms, "user-esc")[0])
    assert "the LMS's id for this user '../../../escaped' cannot be a student id: it holds a path separator" in said
    assert "it begins with a dot" in _refusal(_launch(lms, "user-dot")[0])
    users = json.loads((lms["home"] / "private" / "lti" / "users.json").read_text())
    assert [u["student"] for u in users.values()] == ["example.edu:71ee7e42"]  # nothing kept of the refused
    with pytest.raises(GraderError, match="cannot name a file of the batch"):  # and the folder's own last guard
        BatchFolder(tmp_path / "out").result("../../escaped")


def test_a_user_is_matched_on_stable_ids_never_an_emails_local_part(lms: dict[str, Any]) -> None:
    _launch(lms, INSTRUCTOR_ID)
    _add(lms, member("user-mallory", None, "Mallory", [LEARNER], "ada@attacker.example"),
         member("user-zoe", None, "Zoe Student", [LEARNER], "Zoe@Example.edu"),
         member("user-zed", None, "Zed", [LEARNER], "zoe@attacker.example"),
         member("user-ada-again", "ada", "Ada Twin", [LEARNER]))
    assert "no roster of the course lists their email" in _refusal(_launch(lms, "user-mallory")[0])
    (lms["home"] / "roster.csv").write_text("student,name,email\nzoe,Zoe Student,zoe@example.edu\n")
    (lms["home"] / "course.toml").write_text('name = "lti"\ntimezone = "UTC"\n[lti]\nroster = "roster.csv"\n')
    assert 'data-student="zoe"' in _launch(lms, "user-zoe")[0].text  # the full email, as the roster lists it
    assert "no roster of the course lists their email" in _refusal(_launch(lms, "user-zed")[0])
    assert 'data-student="ada"' in _launch(lms, "user-ada")[0].text
    # ada's sub keeps her id; another platform account whose SIS id says "ada" does not get her work
    assert "the student id 'ada' is another LMS user's already" in _refusal(_launch(lms, "user-ada-again")[0])
    next(m for m in lms["platform"].members if m["user_id"] == "user-ada")["lis_person_sourcedid"] = "ada-2027"
    assert 'data-student="ada"' in _launch(lms, "user-ada")[0].text  # recorded once per (platform, user)


def test_a_login_started_in_one_browser_signs_nobody_in_in_another(lms: dict[str, Any]) -> None:
    _launch(lms, INSTRUCTOR_ID)
    with httpx.Client() as attacker, httpx.Client() as victim:
        action, fields = _login(lms, "user-ben", attacker)  # the attacker's own login, id_token and state...
        posted = victim.post(action, data=fields)  # ...posted by the victim's browser (a form on the attacker's page)
        assert "arrives in another browser than the one its login started in" in _refusal(posted)
        assert "grader-token" not in posted.text
        login = attacker.get(f"{lms['tool']}/lti/login", params={"iss": ISSUER, "login_hint": "user-ben"},
                             headers={"Host": "evil.example"})
    cookie = login.headers["set-cookie"]
    assert "HttpOnly" in cookie and "Path=/lti/" in cookie and "SameSite=lax" in cookie  # plain HTTP: same-site only
    redirect = re.search(r"redirect_uri=([^&]+)", login.headers["location"])[1]
    assert httpx.URL("http://x/?r=" + redirect).params["r"] == f"{lms['tool']}/lti/launch"  # never the Host header


def test_behind_https_the_state_cookie_crosses_the_lms_frame_and_links_use_the_configured_address(
        own_course: Any, tmp_path: Path) -> None:
    from grader.service import app, tokens
    from grader.service.jobs import Queue

    home = own_course()
    (home / "lti.json").write_text(json.dumps(registration("https://lms.example.edu")))
    served = app.Served(queue=Queue(tmp_path / "q.sqlite"), book=tokens.Book(), out=tmp_path / "served", lessons=(LESSON,),
                        jobs=1, min_free=0, public_url="https://grader.example.edu/")  # TLS ends at a proxy in front
    url, server, thread = _serve(app.app(served))
    try:
        login = httpx.get(f"{url}/lti/login", params={"iss": ISSUER, "login_hint": "u"},
                          headers={"Host": "evil.example"})
    finally:
        server.should_exit = True
        thread.join(10)
    assert "SameSite=none" in login.headers["set-cookie"] and "Secure" in login.headers["set-cookie"]
    redirect = httpx.URL(login.headers["location"]).params["redirect_uri"]
    assert redirect == "https://grader.example.edu/lti/launch"


def test_the_roster_is_followed_on_the_platforms_own_origin_only(lms: dict[str, Any]) -> None:
    from grader.service.lti import commands as lti_setup
    from grader.service.lti.keys import LtiRefused

    recorder = Recorder()
    recorder_url, *recorder_server = _serve(recorder.app())
    try:
        _launch(lms, INSTRUCTOR_ID)
        lms["platform"].hostile_link = recorder_url
        with pytest.raises(LtiRefused, match="names its next page on another origin"):
            lti_setup.roster(lms["tmp"] / "roster.csv", None, None)
        assert recorder.seen == []  # the LMS's access token went nowhere else
    finally:
        recorder_server[0].should_exit = True
        recorder_server[1].join(10)


def test_lti_config_prints_the_redirect_uri_canvas_requires_beside_its_json(own_course: Any) -> None:
    """A Canvas admin cannot save the developer key without "Redirect URIs": the command prints it, and it is the
    launch URL the JSON names."""
    from click.testing import CliRunner

    from grader import cli

    own_course()
    said = CliRunner().invoke(cli.main, ["lti", "config", "--url", "https://grader.example.edu"])
    assert said.exit_code == 0, said.output
    assert "  Redirect URIs (a field of the form, above the JSON, required): https://grader.example.edu/lti/launch" \
        in said.output.splitlines()
    canvas = json.loads(said.output.split("then paste:\n", 1)[1].split("\n\n", 1)[0])
    assert canvas["target_link_uri"] == "https://grader.example.edu/lti/launch"
    assert canvas["oidc_initiation_url"] == "https://grader.example.edu/lti/login"


@pytest.mark.kernel
def test_before_the_due_date_the_lms_gets_no_score_students_may_not_see_yet(lms: dict[str, Any],
                                                                             graded_samples: Path) -> None:
    """A course that shows students only verdicts before the due date sends the LMS each submission as pending,
    with no score (so the LMS shows no more than the tool); the dry run says so; after the due date the scores
    go."""
    import datetime as dt

    from grader.service.lti import commands as lti_setup

    _launch(lms, INSTRUCTOR_ID)
    toml = lms["home"] / "course.toml"
    kept = toml.read_text()
    due = dt.datetime.now(dt.UTC) + dt.timedelta(days=3)
    toml.write_text(kept + f'\n[lessons.{LESSON}]\ndue = {due.isoformat(timespec="seconds")}\n'
                           f'[lessons.{LESSON}.submissions]\nbefore_due = "verdicts"\n')
    dry = lti_setup.send_grades(graded_samples, LESSON, True, None, None, None)
    ada = next(line for line in dry if line.strip().startswith("ada "))
    assert "->   held of 6 (Pending): would send" in ada
    assert any(line.startswith("scores held: students see no score") for line in dry)
    lti_setup.send_grades(graded_samples, LESSON, False, None, None, None)
    assert lms["platform"].scores and all("scoreGiven" not in s and s["gradingProgress"] == "Pending"
                                          for s in lms["platform"].scores)
    toml.write_text(kept + f'\n[lessons.{LESSON}]\ndue = {(due - dt.timedelta(days=6)).isoformat(timespec="seconds")}\n'
                           f'[lessons.{LESSON}.submissions]\nbefore_due = "verdicts"\n')
    after = lti_setup.send_grades(graded_samples, LESSON, False, None, None, None)
    assert after[0] == f"5 grades of {LESSON} sent to {ISSUER}"  # the scores, now that students see them
    results = {p.stem: json.loads(p.read_text()) for p in (graded_samples / "results").glob("*.json")}
    latest = {s["userId"]: s for s in lms["platform"].scores}
    assert latest["user-ada"]["scoreGiven"] == results["ada"]["score"]
