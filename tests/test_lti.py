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
from lti_platform import CLIENT_ID, INSTRUCTOR, ISSUER, LEARNER, Platform, member, registration

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
def lms(own_course: Any, tmp_path: Path) -> Iterator[dict[str, Any]]:
    """A course registering the loopback platform, the tool served beside it; both stopped at the end."""
    from grader.service import app, lti_keys, tokens
    from grader.service.jobs import Queue

    members = [member(INSTRUCTOR_ID, "example.edu:71ee7e42", "Jane Q. Public", [INSTRUCTOR], "jane@platform.example.edu")]
    members += [member(f"user-{s}", s, f"{s.title()} Student", [LEARNER], f"{s}@example.edu") for s in LEARNERS]
    members.append(member("user-nosis", None, "Noel Nobody", [LEARNER]))  # shares no SIS id, login or email
    platform = Platform(members)
    platform_url, *platform_server = _serve(platform.app())
    platform.url = platform_url
    home = own_course()
    (home / "lti.json").write_text(json.dumps(registration(platform_url)))
    kid = lti_keys.make_key()
    served = app.Served(Queue(tmp_path / "q.sqlite"), tokens.Book(), tmp_path / "served", (LESSON,), jobs=1, min_free=0)
    tool_url, *tool_server = _serve(app.app(served))
    platform.tool = tool_url
    try:
        yield {"platform": platform, "tool": tool_url, "kid": kid, "home": home, "tmp": tmp_path}
    finally:
        for server, thread in (platform_server, tool_server):
            server.should_exit = True
            thread.join(10)


def _form(page: str) -> tuple[str, dict[str, str]]:
    action = html.unescape(re.search(r'action="([^"]+)"', page)[1])
    fields = {m[1]: html.unescape(m[2]) for m in re.finditer(r'name="?([\w]+)"? value="([^"]*)"', page)}
    return action, fields


def _launch(lms: dict[str, Any], user: str) -> tuple[httpx.Response, dict[str, str]]:
    """The whole flow as a browser makes it: the platform starts the login, the tool redirects to the platform's
    auth URL, the platform answers with a form that posts the id_token to the tool."""
    login = httpx.get(f"{lms['tool']}/lti/login", params={"iss": ISSUER, "login_hint": user, "client_id": CLIENT_ID,
                                                           "target_link_uri": f"{lms['tool']}/lti/launch",
                                                           "lti_message_hint": "xy"})
    assert login.status_code == 302, login.text
    action, fields = _form(httpx.get(login.headers["location"]).text)
    return httpx.post(action, data=fields), fields


def _refusal(response: httpx.Response) -> str:
    assert response.status_code == 400
    return html.unescape(re.search(r"<p>(.*)</p>", response.text)[1])


def test_a_learner_and_an_instructor_launch_into_their_own_pages_signed_in(lms: dict[str, Any]) -> None:
    learner, _ = _launch(lms, "user-ada")
    assert learner.status_code == 200, learner.text
    assert 'data-student="ada"' in learner.text and 'data-role="student"' in learner.text
    assert 'location.replace("/?lesson=inference-scaling")' in learner.text  # the lesson the link names
    token = re.search(r'"grader-token", "([^"]+)"', learner.text)[1]
    mine = httpx.get(f"{lms['tool']}/api/submissions", headers={"Authorization": f"Bearer {token}"})
    assert mine.status_code == 200 and mine.json() == {"submissions": []}
    assert httpx.get(f"{lms['tool']}/api/queue", headers={"Authorization": f"Bearer {token}"}).status_code == 401
    teacher, _ = _launch(lms, INSTRUCTOR_ID)
    assert 'data-role="instructor"' in teacher.text and 'location.replace("/instructor")' in teacher.text
    staff = re.search(r'"grader-instructor", "([^"]+)"', teacher.text)[1]
    assert httpx.get(f"{lms['tool']}/api/queue", headers={"Authorization": f"Bearer {staff}"}).status_code == 200
    contexts = json.loads((lms["home"] / "private" / "lti" / "contexts.json").read_text())
    (recorded,) = contexts.values()
    assert recorded["lineitems"] == f"{lms['platform'].url}/lineitems"
    assert recorded["memberships"] == f"{lms['platform'].url}/memberships"


def test_every_wrong_launch_is_refused_in_one_line(lms: dict[str, Any]) -> None:
    platform = lms["platform"]
    first, fields = _launch(lms, "user-ben")
    assert first.status_code == 200
    replayed = httpx.post(f"{lms['tool']}/lti/launch", data=fields)
    assert "answers no login of this tool" in _refusal(replayed)
    # the same id_token under a fresh login's state: its nonce was used
    login = httpx.get(f"{lms['tool']}/lti/login", params={"iss": ISSUER, "login_hint": "user-ben"})
    state = re.search(r"state=([^&]+)", login.headers["location"])[1]
    again = httpx.post(f"{lms['tool']}/lti/launch", data={"id_token": fields["id_token"], "state": state})
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
    assert "no SIS id, login or email for user 'user-nosis' (Noel Nobody)" in nobody
    unknown = httpx.get(f"{lms['tool']}/lti/login", params={"iss": "https://elsewhere.example", "login_hint": "x"})
    assert "is registered in the course's lti.json" in _refusal(unknown)


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
    from grader.service import lti_setup

    _launch(lms, "user-ada")  # the launch records the memberships URL
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
    from grader.service import lti_setup

    _launch(lms, "user-ada")
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
    from grader.service import lti_services

    recorded = dict(BatchFolder(graded_samples).read_all())
    assert lti_services.send_one(recorded["ada"], LESSON, "t", 6) == "ada: nothing new for the LMS"
    assert lti_services.send_one(recorded["fay"], LESSON, "t", 6) == (
        "fay is not in the LMS (no launch, not on its roster): the grade was not sent")
