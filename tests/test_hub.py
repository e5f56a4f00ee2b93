"""The grader as a JupyterHub service, against the real thing: `jupyterhub` (DummyAuthenticator with a password,
the SimpleLocalProcessSpawner) and npm's `configurable-http-proxy` on loopback, the grader started by the hub as
a managed service from `grader hub config`'s own lines, every request through the hub's proxy.

The course: hub group `teachers` (prof) opens the instructor's side; the roster's `hub_user` column makes hub user
ada the student s001; ben is a student of his own name (`grader tokens` issued him one); cleo is a student as a
member of the `learners` group; zed is signed in to the hub but in none of these. The hub is started once for the
module and stopped (SIGTERM, so that it stops its service; then the whole session killed) at the end.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from conftest import answering

ROOT = Path(__file__).parent.parent
SAMPLE = ROOT / "samples" / "inference-capacity" / "ada.ipynb"
LESSON = "inference-capacity"
TESTER = "tester-" + "0123456789abcdef" * 2
ACCESS = "access:services!service=grader"
pytestmark = pytest.mark.kernel


def _port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _proxy() -> str | None:
    """npm's configurable-http-proxy: on PATH, or where `make test` installs it (.venv/node)."""
    local = ROOT / ".venv" / "node" / "node_modules" / ".bin" / "configurable-http-proxy"
    return shutil.which("configurable-http-proxy") or (str(local) if local.exists() else None)


def _course(folder: Path) -> Path:
    home = folder / "course"
    home.mkdir()
    (home / "course.toml").write_text('name = "hubbed"\ntimezone = "UTC"\n[hub]\ninstructors = "teachers"\n'
                                      'students = "learners"\nroster = "roster.csv"\n')
    (home / "roster.csv").write_text("student,name,hub_user\ns001,Ada Lovelace,ada\n")
    subprocess.run([sys.executable, "-m", "grader", "--course", str(home), "tokens", "--roster",
                    str(_write(folder / "ben.csv", "student\nben\n")), "--out", str(folder / "tokens.csv")],
                   check=True, capture_output=True, timeout=60)
    return home


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def _config(folder: Path, course: list[str], courses: list[str]) -> str:
    """`grader [--course C] hub config [--courses ROOT]`'s lines for a service at a free loopback port."""
    return subprocess.run([sys.executable, "-m", "grader", *course, "hub", "config", "--url",
                           f"http://127.0.0.1:{_port()}", "--out", str(folder / "served"), *courses], check=True,
                          capture_output=True, text=True, timeout=60).stdout


@contextlib.contextmanager
def _running(folder: Path, lines: str, groups: dict[str, list[str]], ready: str) -> Iterator[str]:
    """A JupyterHub on loopback running `grader hub config`'s lines, until the block ends; yields its address."""
    pytest.importorskip("jupyterhub")
    proxy = _proxy()
    if proxy is None:
        pytest.skip("npm's configurable-http-proxy is not installed (`make test` installs it)")
    url = _configured(folder, lines, groups, proxy)
    proc = _hub(folder)
    try:
        answering(url + ready, proc, 120, lambda: (folder / "hub.log").read_text()[-3000:])
        yield url
    finally:
        _stop_hub(proc, folder)


def _configured(folder: Path, lines: str, groups: dict[str, list[str]], proxy: str) -> str:
    """jupyterhub_config.py written into `folder` (the hub on free loopback ports); the hub's address."""
    port = _port()
    (folder / "jupyterhub_config.py").write_text(f"""c = get_config()  # noqa
c.JupyterHub.ip = "127.0.0.1"
c.JupyterHub.port = {port}
c.JupyterHub.hub_ip = "127.0.0.1"
c.JupyterHub.hub_port = {_port()}
c.ConfigurableHTTPProxy.api_url = "http://127.0.0.1:{_port()}"
c.ConfigurableHTTPProxy.command = [{proxy!r}]
c.JupyterHub.authenticator_class = "dummy"
c.DummyAuthenticator.password = "hub-test-password"
c.Authenticator.allow_all = True
c.JupyterHub.spawner_class = "simple"
c.SimpleLocalProcessSpawner.home_dir_template = {str(folder / "home" / "{username}")!r}
c.Spawner.args = ["--allow-root"] if {os.geteuid() == 0} else []
c.JupyterHub.db_url = "sqlite:///{folder / 'hub.sqlite'}"
c.JupyterHub.cookie_secret_file = "{folder / 'cookie_secret'}"
c.JupyterHub.load_groups = {{name: {{"users": users}} for name, users in {groups!r}.items()}}
{lines}
c.JupyterHub.services[0]["command"] += ["--jobs", "1"]
c.JupyterHub.services[0]["environment"] = {{"GRADER_CACHE": {os.environ.get("GRADER_CACHE", "")!r}}}
c.JupyterHub.services.append({{"name": "tester", "api_token": {TESTER!r}}})
c.JupyterHub.load_roles.append({{"name": "tester", "services": ["tester"],
                                "scopes": ["admin:users", "tokens", "admin:servers", "access:servers"]}})
""")
    return f"http://127.0.0.1:{port}"


def _hub(folder: Path) -> subprocess.Popen[bytes]:
    """The hub of `folder`'s configuration started (its log appended to hub.log), in a session of its own."""
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}")
    with (folder / "hub.log").open("a") as log:
        return subprocess.Popen([sys.executable, "-m", "jupyterhub", "-f", str(folder / "jupyterhub_config.py")],
                                cwd=folder, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)


def _stop_hub(proc: subprocess.Popen[bytes], folder: Path) -> None:
    """SIGTERM, so that the hub stops its service and the servers it spawned; then its whole session killed, and
    its proxy (which the hub starts in a session of its own) wherever a hub left one."""
    with contextlib.suppress(ProcessLookupError):
        proc.send_signal(signal.SIGTERM)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(30)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(10)
    _stop_proxy(folder)


def _stop_proxy(folder: Path) -> None:
    """The proxy a hub of `folder` started, killed if it still runs (its pid is in jupyterhub-proxy.pid)."""
    with contextlib.suppress(OSError, ValueError):
        pid = int((folder / "jupyterhub-proxy.pid").read_text().strip())
        if b"configurable-http-proxy" in Path(f"/proc/{pid}/cmdline").read_bytes():
            os.kill(pid, signal.SIGKILL)


@pytest.fixture(scope="module")
def hub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    folder = tmp_path_factory.mktemp("hub")
    home = _course(folder)
    lines = _config(folder, ["--course", str(home)], [])
    groups = {"teachers": ["prof"], "learners": ["cleo"], "others": ["ada", "ben", "zed", "s001"]}
    with _running(folder, lines, groups, "/services/grader/") as url:
        service = lines.split("'url': '", 1)[1].split("'", 1)[0]
        yield {"url": url, "folder": folder, "home": home, "service": service, "lines": lines}


def _token(hub: dict[str, Any], user: str, scopes: list[str] | None = None) -> str:
    """A hub API token of `user` (made through the hub's API by the tester service), with these scopes."""
    made = httpx.post(f"{hub['url']}/hub/api/users/{user}/tokens", headers={"Authorization": f"token {TESTER}"},
                      json={"scopes": [ACCESS] if scopes is None else scopes, "note": "test"}, timeout=30)
    assert made.status_code == 201, made.text
    return str(made.json()["token"])


def _api(hub: dict[str, Any], token: str, path: str, **kw: Any) -> httpx.Response:
    method = "POST" if "content" in kw else "GET"
    return httpx.request(method, f"{hub['url']}/services/grader{path}", headers={"Authorization": f"token {token}"},
                         timeout=60, **kw)


def _done(hub: dict[str, Any], token: str, job: str, seconds: float = 240) -> dict[str, Any]:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        state: dict[str, Any] = _api(hub, token, f"/api/submissions/{job}").json()
        if state["status"] in ("done", "failed"):
            return state
        time.sleep(0.5)
    raise AssertionError(f"{job} was not graded in {seconds} s")


def test_hub_config_prints_the_service_its_roles_and_the_servers_address(hub: dict[str, Any]) -> None:
    scope: dict[str, Any] = {}
    exec("from traitlets.config import Config\nc = Config()\n" + hub["lines"], scope)
    config = scope["c"]
    (service,) = config.JupyterHub.services
    assert service["name"] == "grader" and service["url"] == hub["service"]
    assert service["command"][1:] == ["-m", "grader", "--course", str(hub["home"]), "serve", "--hub", "--out",
                                      str(hub["folder"] / "served")]
    roles = {role["name"]: role for role in config.JupyterHub.load_roles}
    assert roles["grader-service"]["services"] == ["grader"]
    assert set(roles["grader-service"]["scopes"]) == {"read:users", "read:groups"}
    assert ACCESS in roles["user"]["scopes"] and "self" in roles["user"]["scopes"]
    assert ACCESS in roles["server"]["scopes"]  # a user's server may submit for them
    # added to what the hub's configuration gives user servers already, never replacing it
    assert config.Spawner.environment.get_value({"LANG": "C"}) == {"LANG": "C",
                                                                   "GRADER_SERVER": hub["service"] + "/services/grader"}
    refused = subprocess.run([sys.executable, "-m", "grader", "--course", str(hub["home"]), "hub", "config", "--url",
                              "http://127.0.0.1"], capture_output=True, text=True, timeout=60)
    assert refused.returncode != 0 and "with its port" in refused.stderr and "Traceback" not in refused.stderr


def test_a_students_hub_token_submits_through_the_proxy_and_nobody_else_reads_it(hub: dict[str, Any]) -> None:
    ada, ben = _token(hub, "ada"), _token(hub, "ben")
    taken = _api(hub, ada, f"/api/submissions?lesson={LESSON}", content=SAMPLE.read_bytes())
    assert taken.status_code == 202, taken.text
    job = taken.json()["id"]
    assert _api(hub, ben, f"/api/submissions/{job}").status_code == 404  # as one that does not exist
    assert _api(hub, ben, "/api/submissions").json() == {"submissions": []}
    state = _done(hub, ada, job)
    assert state["status"] == "done" and state["score"] is not None
    recorded = json.loads((hub["folder"] / "served" / LESSON / "results" / "s001.json").read_text())
    assert recorded["student"] == "s001"  # ada, by the roster's hub_user column
    assert recorded["submitted_as"]["receipt"]["id"] == job


def test_an_instructor_group_member_reads_the_queue_and_a_student_cannot(hub: dict[str, Any]) -> None:
    queue = _api(hub, _token(hub, "prof"), "/api/queue")
    assert queue.status_code == 200 and "counts" in queue.json()
    refused = _api(hub, _token(hub, "cleo"), "/api/queue")  # cleo: a student, by the learners group
    assert refused.status_code == 403 and refused.json() == {"error": "an instructor's token is needed"}
    assert _api(hub, _token(hub, "cleo"), "/api/submissions").status_code == 200


def test_whom_the_hub_vouches_for_but_the_course_does_not_know_is_told_so_in_one_line(hub: dict[str, Any]) -> None:
    zed = _api(hub, _token(hub, "zed"), "/api/submissions")
    assert zed.status_code == 401
    assert zed.json()["error"] == "the hub user zed is not in this course: ask your instructor to add you to its roster"
    narrow = _api(hub, _token(hub, "ada", ["read:users:name!user"]), "/api/submissions")
    assert narrow.status_code == 401 and "access:services!service=grader" in narrow.json()["error"]
    unknown = _api(hub, "not-a-hub-token", "/api/submissions")
    assert unknown.status_code == 401 and unknown.json()["error"].startswith("the hub does not know this token")
    # the roster gives the id s001 to hub user ada: a hub user named s001 is not s001 (nor anyone here)
    taken = _api(hub, _token(hub, "s001"), "/api/submissions")
    assert taken.status_code == 401 and "the hub user s001 is not in this course" in taken.json()["error"]
    # a sign-in's answer with a code the hub never gave: one line, not a server error
    junk = httpx.get(f"{hub['url']}/services/grader/oauth_callback", params={"state": "abc", "code": "junk"},
                     cookies={"grader-hub-state": "abc."}, timeout=30)
    assert junk.status_code == 403 and "could not be completed" in junk.text


@pytest.mark.browser
def test_in_chromium_a_student_signs_in_through_the_hub_and_submits_on_the_page(hub: dict[str, Any]) -> None:
    playwright = pytest.importorskip("playwright.sync_api")
    chromium = shutil.which("chromium")
    if chromium is None:
        pytest.skip("Debian's chromium is not installed")
    notebook = hub["folder"] / "ben.ipynb"
    data = json.loads(SAMPLE.read_text())
    data["cells"].append({"cell_type": "markdown", "metadata": {}, "source": "Ben's own copy."})
    notebook.write_text(json.dumps(data))
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        try:
            page = browser.new_page()
            page.goto(f"{hub['url']}/services/grader/")  # not signed in: the page sends the browser to the hub
            page.wait_for_url("**/hub/login**")
            page.fill("#username_input", "ben")
            page.fill("#password_input", "hub-test-password")
            page.click("#login_submit")
            page.wait_for_url(f"{hub['url']}/services/grader/")
            playwright.expect(page.locator("#who")).to_contain_text("ben")
            assert page.locator("#token").count() == 0  # nothing to paste
            page.set_input_files("#file", str(notebook))
            page.select_option("#lesson", LESSON)
            page.click("#send")
            playwright.expect(page.locator("#f-score")).to_contain_text("Score:", timeout=120_000)
            teacher = browser.new_page()
            teacher.goto(f"{hub['url']}/services/grader/instructor")
            teacher.wait_for_url("**/hub/login**")
            teacher.fill("#username_input", "prof")
            teacher.fill("#password_input", "hub-test-password")
            teacher.click("#login_submit")
            playwright.expect(teacher.locator("#recent")).to_contain_text("ben", timeout=30_000)
        finally:
            browser.close()


def _run_cell(hub: dict[str, Any], token: str, notebook: str, code: str, seconds: float = 300) -> str:
    """Run `code` in a kernel of ada's server, started for `notebook` as JupyterLab starts one (a session, so the
    kernel knows its notebook); the text it printed. Jupyter's kernel protocol over the server's websocket."""
    import asyncio
    import uuid

    from tornado.httpclient import HTTPRequest
    from tornado.websocket import websocket_connect

    headers = {"Authorization": f"token {token}"}
    made = httpx.post(f"{hub['url']}/user/ada/api/sessions", headers=headers, timeout=60,
                      json={"path": notebook, "type": "notebook", "name": notebook, "kernel": {"name": "python3"}})
    assert made.status_code == 201, made.text
    kernel = made.json()["kernel"]["id"]
    ask = str(uuid.uuid4())

    async def run() -> str:
        ws_url = hub["url"].replace("http://", "ws://") + f"/user/ada/api/kernels/{kernel}/channels"
        conn = await websocket_connect(HTTPRequest(ws_url, headers=headers, connect_timeout=30))
        conn.write_message(json.dumps({
            "header": {"msg_id": ask, "username": "ada", "session": str(uuid.uuid4()), "msg_type": "execute_request",
                       "version": "5.3"},
            "parent_header": {}, "metadata": {}, "channel": "shell", "buffers": [],
            "content": {"code": code, "silent": False, "store_history": True, "user_expressions": {},
                        "allow_stdin": False, "stop_on_error": True}}))
        said, replied, idle = [], False, False
        while not (replied and idle):
            message = json.loads(await asyncio.wait_for(conn.read_message(), seconds))
            if message.get("parent_header", {}).get("msg_id") != ask:
                continue
            kind, content = message["msg_type"], message["content"]
            if kind == "stream":
                said.append(content["text"])
            elif kind == "error":
                said.append("\n".join(content["traceback"]))
            replied = replied or kind == "execute_reply"
            idle = idle or (kind == "status" and content["execution_state"] == "idle")
        conn.close()
        return "".join(said)

    return asyncio.run(run())


def test_in_a_students_server_spawned_by_the_hub_grader_submit_needs_no_token(hub: dict[str, Any]) -> None:
    tester = {"Authorization": f"token {TESTER}"}
    started = httpx.post(f"{hub['url']}/hub/api/users/ada/server", headers=tester, timeout=60)
    assert started.status_code in (201, 202), started.text
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            model = httpx.get(f"{hub['url']}/hub/api/users/ada", headers=tester, timeout=30).json()
            if (model.get("servers") or {}).get("", {}).get("ready"):
                break
            time.sleep(0.5)
        else:
            raise AssertionError(f"ada's server did not start: {(hub['folder'] / 'hub.log').read_text()[-3000:]}")
        data = json.loads(SAMPLE.read_text())
        data["cells"].append({"cell_type": "markdown", "metadata": {}, "source": "Handed in from the hub."})
        cell = "import grader\nsent = grader.submit(wait=True)"
        data["cells"].append({"cell_type": "code", "metadata": {}, "source": cell, "outputs": [],
                              "execution_count": None})
        (hub["folder"] / "home" / "ada" / "hw.ipynb").write_text(json.dumps(data))
        said = _run_cell(hub, _token(hub, "ada", ["access:servers!user=ada"]), "hw.ipynb", cell)
        assert "submitted: id " in said, said  # the receipt, with no token pasted anywhere
        assert "score " in said and "measure:" in said, said  # then the feedback
        assert "token" not in (hub["folder"] / "home" / "ada" / "hw.ipynb").read_text().lower()
    finally:
        httpx.delete(f"{hub['url']}/hub/api/users/ada/server", headers=tester, timeout=60)


# -- several courses on one hub (`grader serve --hub --courses ROOT`) ---------------------------------------------

ALPHA = ('name = "Alpha"\ntimezone = "UTC"\n[hub]\ninstructors = "teachers-a"\nstudents = "learners-a"\n'
         f'[lessons.{LESSON}]\n')  # alpha sets the lesson; beta only serves it
BETA = 'name = "Beta"\ntimezone = "UTC"\n[hub]\ninstructors = "teachers-b"\nstudents = "learners-b"\n'


@pytest.fixture(scope="module")
def courses(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """A hub whose grader serves every course folder under ROOT: alpha from the start, beta once a test adds it."""
    folder = tmp_path_factory.mktemp("courses")
    root = folder / "courses"
    (root / "alpha").mkdir(parents=True)
    (root / "alpha" / "course.toml").write_text(ALPHA)
    (root / "not a course").mkdir()  # no course.toml, and a name no address holds: never served
    lines = _config(folder, [], ["--courses", str(root)])
    groups = {"teachers-a": ["prof"], "learners-a": ["ada"], "teachers-b": ["pat"], "learners-b": ["ada", "ben"],
              "others": ["zed"]}
    with _running(folder, lines, groups, "/services/grader/alpha/") as url:
        yield {"url": url, "folder": folder, "root": root}


def _beta(courses: dict[str, Any]) -> float:
    """Add the course folder beta under ROOT (once); the seconds until its page answered through the hub."""
    if "beta" in courses:
        return float(courses["beta"])
    (courses["root"] / "beta").mkdir()
    (courses["root"] / "beta" / "course.toml").write_text(BETA)
    began = time.monotonic()
    deadline = began + 10.0  # the promise: served within 10 s, with no restart of the hub or the service
    while time.monotonic() < deadline:
        with contextlib.suppress(httpx.HTTPError):
            if httpx.get(f"{courses['url']}/services/grader/beta/", timeout=2).status_code == 200:
                courses["beta"] = time.monotonic() - began
                return float(courses["beta"])
        time.sleep(0.2)
    raise AssertionError(f"beta was not served within 10 s: {(courses['folder'] / 'hub.log').read_text()[-2000:]}")


def test_a_course_folder_added_under_courses_is_served_with_its_own_instructors(courses: dict[str, Any]) -> None:
    _beta(courses)
    base = f"{courses['url']}/services/grader"
    pat, prof = _token(courses, "pat"), _token(courses, "prof")
    assert _api(courses, pat, "/beta/api/queue").status_code == 200  # beta's instructors group
    assert _api(courses, prof, "/alpha/api/queue").status_code == 200
    told = _api(courses, pat, "/alpha/api/queue")
    assert told.status_code == 401 and "the hub user pat is not in this course" in told.json()["error"]
    assert _api(courses, prof, "/beta/api/queue").status_code == 401
    assert httpx.get(f"{base}/not%20a%20course/", timeout=10).status_code == 404
    import stat
    import tempfile

    # each course answers on a Unix socket in the front's own folder, not on a loopback port another user could take
    sockets = list(Path(tempfile.gettempdir()).glob("grader-courses-*/beta.sock"))
    assert sockets and all(stat.S_ISSOCK(s.stat().st_mode) and s.parent.stat().st_mode & 0o077 == 0 for s in sockets)
    assert not (courses["folder"] / "served" / "not a course").exists()


def test_a_student_sees_only_their_courses_and_a_submission_finds_its_course(courses: dict[str, Any]) -> None:
    _beta(courses)
    ada, ben, zed = _token(courses, "ada"), _token(courses, "ben"), _token(courses, "zed")
    mine = {who: [c["course"] for c in _api(courses, token, "/api/courses").json()["courses"]]
            for who, token in (("ada", ada), ("ben", ben), ("zed", zed))}
    assert mine == {"ada": ["alpha", "beta"], "ben": ["beta"], "zed": []}
    # grader submit inside a user's server: GRADER_SERVER the service's address, the hub's token, no course named
    env = dict(os.environ, GRADER_SERVER=f"{courses['url']}/services/grader", JUPYTERHUB_API_TOKEN=ben)
    env.pop("GRADER_TOKEN", None)
    said = subprocess.run([sys.executable, "-m", "grader", "submit", str(SAMPLE), "--lesson", LESSON, "--wait",
                           "--json"], env=env, capture_output=True, text=True, timeout=300)
    assert said.returncode == 0, said.stderr
    sent = json.loads(said.stdout)
    assert sent["feedback"]["status"] == "done"
    assert _api(courses, ben, f"/beta/api/submissions/{sent['id']}").status_code == 200  # graded by ben's course
    assert (courses["folder"] / "served" / "beta" / LESSON / "results" / "ben.json").is_file()
    # ada is in both, and the lesson is alpha's (its course.toml sets it): hers goes there
    taken = _api(courses, ada, f"/api/submissions?lesson={LESSON}", content=SAMPLE.read_bytes())
    assert taken.status_code == 202, taken.text
    assert _api(courses, ada, f"/alpha/api/submissions/{taken.json()['id']}").status_code == 200
    assert _api(courses, ada, f"/beta/api/submissions/{taken.json()['id']}").status_code == 404
    # one sent to beta by its own address: followed through the front too (alpha asked first, then beta)
    direct = _api(courses, ada, f"/beta/api/submissions?lesson={LESSON}", content=SAMPLE.read_bytes())
    assert direct.status_code == 202, direct.text
    followed = _api(courses, ada, f"/api/submissions/{direct.json()['id']}")
    assert followed.status_code == 200 and followed.json()["id"] == direct.json()["id"]
    assert _api(courses, ben, f"/api/submissions/{direct.json()['id']}").status_code == 404  # not ben's
    refused = _api(courses, zed, f"/api/submissions?lesson={LESSON}", content=SAMPLE.read_bytes())
    assert refused.status_code == 401 and "no course served here" in refused.json()["error"]


def _signed_in_page(url: str, user: str, path: str) -> httpx.Response:
    """What a browser that signs in to the hub as `user` at `path` ends on (the hub's own login form, its cookies)."""
    import html
    import re

    with httpx.Client(follow_redirects=True, timeout=60) as browser:
        form = browser.get(url + path)
        action = html.unescape(re.search(r'action="([^"]+)"', form.text)[1])  # type: ignore[index]
        xsrf = re.search(r'name="_xsrf" value="([^"]+)"', form.text)
        return browser.post(url + action, data={"username": user, "password": "hub-test-password",
                                                 "_xsrf": xsrf[1] if xsrf else ""})


def test_the_front_page_lists_the_signed_in_users_courses_and_a_course_signs_in_its_own(
        courses: dict[str, Any]) -> None:
    _beta(courses)
    ada = _signed_in_page(courses["url"], "ada", "/services/grader/")
    assert ada.url.path == "/services/grader/" and ">Alpha</a>" in ada.text and ">Beta</a>" in ada.text
    ben = _signed_in_page(courses["url"], "ben", "/services/grader/")
    assert ">Beta</a>" in ben.text and "Alpha" not in ben.text
    zed = _signed_in_page(courses["url"], "zed", "/services/grader/")
    assert "You are in no course graded here." in zed.text
    landed = _signed_in_page(courses["url"], "pat", "/services/grader/beta/hub/login")
    assert 'data-role="instructor"' in landed.text and '"grader-instructor:beta"' in landed.text
    assert 'location.replace("/services/grader/beta/instructor")' in landed.text


def _service_pids(home: Path) -> set[int]:
    """The processes of the grader service the hub started for the course `home` (found by their command line)."""
    found = set()
    for pid in filter(str.isdigit, os.listdir("/proc")):
        with contextlib.suppress(OSError):
            line = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            if b"grader" in line and b"--hub" in line and str(home).encode() in line:
                found.add(int(pid))
    return found


def test_the_service_ends_with_the_hub_and_the_hubs_next_start_starts_it_again(tmp_path: Path) -> None:
    """The hub killed outright (no chance to stop its services): the grader stops too, freeing its port, and the
    hub's next start starts it again there, with the queue and the grades as they were."""
    pytest.importorskip("jupyterhub")
    proxy = _proxy()
    if proxy is None:
        pytest.skip("npm's configurable-http-proxy is not installed (`make test` installs it)")
    home = _course(tmp_path)
    url = _configured(tmp_path, _config(tmp_path, ["--course", str(home)], []), {"others": ["ben"]}, proxy)
    said = lambda: (tmp_path / "hub.log").read_text()[-3000:]  # noqa: E731
    first = _hub(tmp_path)
    second = None
    try:
        answering(f"{url}/services/grader/", first, 120, said)
        ben = _token({"url": url}, "ben")
        taken = _api({"url": url}, ben, f"/api/submissions?lesson={LESSON}", content=SAMPLE.read_bytes())
        assert taken.status_code == 202, taken.text
        service = _service_pids(home)
        assert service, said()
        first.kill()  # SIGKILL to the hub alone
        first.wait(10)
        deadline = time.monotonic() + 30
        while service & _service_pids(home) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not service & _service_pids(home)  # the service ended with the hub that started it
        second = _hub(tmp_path)
        answering(f"{url}/services/grader/", second, 120, said)
        assert not service & _service_pids(home) and _service_pids(home)  # a new service, on the same port
        mine = _api({"url": url}, ben, "/api/submissions").json()["submissions"]
        assert taken.json()["id"] in [s["id"] for s in mine]  # nothing accepted was lost
    finally:
        if second is not None:
            _stop_hub(second, tmp_path)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(first.pid, signal.SIGKILL)
        _stop_proxy(tmp_path)  # what the killed hub left, if no second hub ended it
        for pid in _service_pids(home):  # and its service, where it did not stop with the hub (this test failing)
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def test_the_hubs_token_goes_only_to_the_grader_the_hub_named(monkeypatch: pytest.MonkeyPatch) -> None:
    """JUPYTERHUB_API_TOKEN opens the user's own server: `grader submit` and grader.submit() send it to the address
    GRADER_SERVER names (the hub's configuration sets it) and to no other."""
    from grader import client

    monkeypatch.delenv("GRADER_TOKEN", raising=False)
    monkeypatch.setenv("JUPYTERHUB_API_TOKEN", "hub-secret")
    monkeypatch.setenv("GRADER_SERVER", "http://127.0.0.1:10101/services/grader")
    assert not client.token_file().exists()
    assert client.stored_token("http://127.0.0.1:10101/services/grader/") == "hub-secret"
    assert client.stored_token("http://grader.example.org/services/grader") == ""
    assert client.stored_token("") == ""
    assert client.authorization("hub-secret") == "token hub-secret"
    assert client.authorization("gs_abc") == "Bearer gs_abc"


def test_a_roster_that_gives_one_hub_user_to_two_students_is_refused_in_one_line(tmp_path: Path) -> None:
    from grader.base.errors import GraderError
    from grader.service.hub import Roster

    fine = Roster.read(_write(tmp_path / "fine.csv", "student,hub_user\ns001,Ada\ns002,\nben,\n"))
    assert sorted(fine.by_hub_user) == ["ada", "ben", "s002"] and fine.claimed == frozenset({"s001"})
    with pytest.raises(GraderError, match="gives the hub user 'ben' to two students \\(s003, ben\\)"):
        Roster.read(_write(tmp_path / "twice.csv", "student,hub_user\ns003,ben\nben,\n"))


def test_several_courses_refuse_one_database_for_all(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from grader import cli

    said = CliRunner().invoke(cli.main, ["serve", "--hub", "--courses", str(tmp_path), "--database",
                                         "postgresql://grader@127.0.0.1:1/courses"])
    assert said.exit_code != 0 and "go with one course each" in said.output and "Traceback" not in said.output



def test_a_hub_name_that_cannot_be_an_id_is_nobody_here_even_in_the_students_group(own_course: Any) -> None:
    """The students group's members become students of their own names, and so files' names: a name that is no
    id (`..`, `../x`) is not in the course, whatever group holds it."""
    import asyncio
    import time as clock

    from grader.service import hub as hubs
    from grader.service.tokens import Book

    home = own_course()
    (home / "course.toml").write_text('name = "named"\ntimezone = "UTC"\n[hub]\nstudents = "learners"\n')
    served = object.__new__(hubs.Hub)  # no hub is asked: the group's members are already known
    served.book, served.members, served.rows = Book(), {}, (clock.monotonic(), hubs.Roster({}, frozenset()))
    served.members["learners"] = (clock.monotonic(), frozenset({"..", "../x", "ada"}))
    found = {name: asyncio.run(served.person(name)) for name in ("..", "../x", "ada")}
    assert found[".."] is None and found["../x"] is None
    assert found["ada"] is not None and (found["ada"].who, found["ada"].role) == ("ada", "student")
