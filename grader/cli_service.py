"""The service's commands: `grader serve`, `grader tokens`, `grader submit` and `grader lti` (registered by cli.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from grader.base.errors import GraderError
from grader.cli_flags import FILE, Finite, echo, given_from, options_from, sandbox_options


@click.command("serve")
@click.option("--out", "out_dir", default="served", show_default=True,
              type=click.Path(file_okay=False, path_type=Path),
              help="Where grades are recorded: one batch folder per lesson (OUT/<lesson>/).")
@click.option("--host", default="127.0.0.1", show_default=True,
              help="The address to listen on (0.0.0.0 for every one; put TLS in front, or pass --ssl-certfile).")
@click.option("--port", default=8000, show_default=True, type=click.IntRange(0, 65535))
@click.option("--jobs", type=click.IntRange(min=1),
              help="Submissions graded at once, per lesson being graded (default: as many as `grader batch` runs "
                   "on this machine: two per core, fewer where memory is short).")
@click.option("--database", help="postgresql://USER@HOST/DB for a queue shared by several servers (default: SQLite "
                                 "in the course's private folder); the password comes from ~/.pgpass, PGPASSFILE, "
                                 "PGPASSWORD or a service file, never from this address.")
@click.option("--lease", "lease_s", default=30.0, show_default=True, type=Finite(min=1.0),
              help="Seconds a claimed job is held without a heartbeat before another server may take it.")
@click.option("--min-free-mb", default=64, show_default=True, type=click.IntRange(min=0),
              help="Refuse new uploads (507, one line) when the disk has less free space than this.")
@click.option("--ssl-certfile", type=FILE, help="Serve HTTPS with this certificate (PEM)...")
@click.option("--ssl-keyfile", type=FILE, help="...and this key.")
@click.option("--scheduler", help="Grade on the course's Dask cluster at tls://HOST:PORT (needs --tls).")
@click.option("--tls", "tls_dir", type=click.Path(file_okay=False, path_type=Path),
              help="The folder `grader cluster certs` wrote (ca.pem, client.pem, client-key.pem).")
@click.option("--url", help="The address the LMS and students reach the server at (https://grader.example.edu): "
                            "LTI's redirect is built from it, never from a request's Host header.")
@click.option("--header-timeout", "head_s", default=10.0, show_default=True, type=Finite(min=0.5),
              help="Seconds a client has to send a request's head before its connection is closed.")
@click.option("--group", help="A group that may read the output folder (0750); by default only its owner (0700).")
@click.option("--no-zygote", is_flag=True, help="Start every kernel from scratch instead of forking it warm.")
@click.option("--hub", is_flag=True, help="Run as a JupyterHub service (started by the hub: `grader hub config`): "
                                          "its users sign in through the hub, at its address and prefix.")
@click.option("--courses", "courses_root", type=click.Path(file_okay=False, path_type=Path),
              help="With --hub: serve every course folder under this one, each at /services/grader/<course>/ "
                   "(its grades in OUT/<course>/); a folder added here is served within seconds.")
@sandbox_options
def serve_cmd(out_dir: Path, host: str, port: int, jobs: int | None, database: str | None, lease_s: float, min_free_mb: int,
              ssl_certfile: Path | None, ssl_keyfile: Path | None, scheduler: str | None, tls_dir: Path | None,
              url: str | None, head_s: float, group: str | None, no_zygote: bool, hub: bool, courses_root: Path | None,
              **flags: Any) -> None:
    """Serve the course: students submit (web page, `grader submit`, `grader.submit()`) and get feedback as soon
    as it is graded, from a durable queue."""
    import sys

    from grader.classroom import workers
    from grader.service import server

    if courses_root is not None:
        if not hub:
            raise GraderError("--courses serves several courses as one JupyterHub service: add --hub")
        if database or ssl_certfile or scheduler:  # one address for all would mix their queues and sessions
            raise GraderError("--courses gives each course its own queue and sessions, and serves them behind the "
                              "hub's proxy: --database, --ssl-certfile and --scheduler go with one course each")
        from grader.service import front

        front.serve(courses_root, out_dir, _for_each_course(sys.argv),
                    ready=lambda url: echo(f"serving the courses under {courses_root} at {url}<course>/"))
        return

    given = given_from(flags)
    options = options_from(zygote=not no_zygote, **flags)
    jobs = jobs or workers.default_jobs(options.device)  # the same workers a batch would use here
    if url is None and host not in ("127.0.0.1", "localhost", "::1"):
        echo(f"grader: note: no --url: an LMS launch is sent back to http://{host}:{port}/; pass --url with the "
             "address the LMS and students know (https://...)", err=True)
    if options.sandbox == "none":
        echo("grader: warning: --no-sandbox: student code runs without isolation and can read your files", err=True)
    config = server.Config(out=out_dir, host=host, port=port, jobs=jobs, database=database, options=options, given=given,
                           lease_s=lease_s, min_free_mb=min_free_mb, scheduler=scheduler, tls=tls_dir, url=url,
                           ssl_certfile=str(ssl_certfile) if ssl_certfile else None,
                           ssl_keyfile=str(ssl_keyfile) if ssl_keyfile else None, head_timeout_s=head_s, group=group,
                           hub=hub)
    server.serve(config, ready=lambda url: echo(f"serving {url} (students: {url}, instructors: {url}instructor); "
                                                f"grades in {out_dir}/<lesson>/; Ctrl-C stops it"))


@click.command("tokens")
@click.option("--roster", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="A token for every student on this roster (CSV of ids, or Canvas's gradebook export).")
@click.option("--out", "out_path", type=FILE, help="Where the students' tokens go (student,name,token).")
@click.option("--instructor", help="Print a token for this instructor instead.")
def tokens_cmd(roster: Path | None, out_path: Path | None, instructor: str | None) -> None:
    """Issue secret tokens: one per student (written to --out, kept hashed by the course) or an instructor's."""
    from grader.service import tokens

    if instructor:
        (person, token), = tokens.issue([(instructor, instructor)], "instructor")
        echo(token)
        echo(f"an instructor's token for {person.who} (kept hashed in the course's private folder; issuing again "
             "replaces it)", err=True)
        return
    if roster is None or out_path is None:
        raise GraderError("grader tokens needs --roster R --out FILE (the students' tokens) or --instructor NAME")
    made = tokens.for_roster(roster)
    tokens.write_csv(made, out_path)
    echo(f"{len(made)} tokens written to {out_path} (owner-only; hand each student their own line); a running "
         "server accepts them within a second, and refuses any token they replace")


@click.command("submit")
@click.argument("submission", type=FILE)
@click.option("--server", required=True, envvar="GRADER_SERVER", help="The course server's address.")
@click.option("--token", help="Your token (default: GRADER_TOKEN, else the file ~/.config/inference-grader/token).")
@click.option("--lesson", "lesson_id", required=True)
@click.option("--wait", is_flag=True, help="Follow the submission until it is graded, then show the feedback.")
@click.option("--json", "as_json", is_flag=True,
              help="Print the receipt as JSON (with --wait, the feedback too, under `feedback`).")
def submit_cmd(submission: Path, server: str, token: str | None, lesson_id: str, wait: bool, as_json: bool) -> None:
    """Submit a notebook (or .py) to the course's server; prints the receipt."""
    from grader import client

    token = token or client.stored_token(server)
    if not token:
        raise GraderError(f"no token: put the one your instructor gave you in {client.token_file()} (or set "
                          "GRADER_TOKEN), or pass --token (inside a JupyterHub server, the hub's token is used)")

    receipt, used = client.submit(submission, server, token, lesson_id)
    state = client.follow(server, token, receipt["id"]) if wait else None
    if as_json:
        click.echo(json.dumps({**receipt, **({"feedback": state} if state is not None else {})}, indent=1))
        return
    echo(client.receipt_text(receipt, used))
    if state is not None:
        echo(client.feedback_text(state))



@click.group("lti")
def lti_group() -> None:
    """LTI 1.3 with the course's LMS: the tool's keys and configuration, grades back (AGS), the roster in (NRPS)."""


@lti_group.command("keys")
def lti_keys_cmd() -> None:
    """Make the tool's RSA key pair (beside any earlier one, for a rotation); /lti/jwks publishes every one."""
    from grader.service.lti import keys as lti_keys

    kid = lti_keys.make_key()
    echo(f"a new key {kid} in the course's private folder; /lti/jwks publishes it (and any older one until you "
         "remove its file)")


@lti_group.command("config")
@click.option("--url", required=True, help="The address students reach `grader serve` at (https://...).")
def lti_config_cmd(url: str) -> None:
    """Print what the LMS needs: Canvas's developer-key JSON, and the same for Moodle and any other platform."""
    from grader.service.lti import commands as lti_setup

    echo(lti_setup.describe(url.rstrip("/")))


@lti_group.command("send-grades")
@click.argument("out_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--lesson", "lesson_id", required=True)
@click.option("--dry-run", is_flag=True, help="Say who would change, and who is missing on either side; send nothing.")
@click.option("--lineitems", help="The course's line items URL (default: the one the latest launch gave).")
@click.option("--memberships", help="The course's memberships URL (default: the one the latest launch gave).")
@click.option("--issuer", help="The platform (default: the latest launch's, or the only one registered).")
def lti_send_cmd(out_dir: Path, lesson_id: str, dry_run: bool, lineitems: str | None, memberships: str | None,
                 issuer: str | None) -> None:
    """Send the latest grade of every student in a batch folder (OUT or OUT/<lesson>) to the LMS's gradebook."""
    from grader.service.lti import commands as lti_setup

    for line in lti_setup.send_grades(out_dir, lesson_id, dry_run, lineitems, memberships, issuer):
        echo(line)


@lti_group.command("roster")
@click.option("--lesson", "lesson_id", required=True, help="The lesson whose course the roster is of.")
@click.option("--out", "out_path", required=True, type=FILE, help="The roster file (`batch --roster` reads it).")
@click.option("--memberships", help="The course's memberships URL (default: the one the latest launch gave).")
@click.option("--issuer", help="The platform (default: the latest launch's, or the only one registered).")
def lti_roster_cmd(lesson_id: str, out_path: Path, memberships: str | None, issuer: str | None) -> None:
    """Pull the course's members from the LMS into a roster, naming who joined and who left since the last one."""
    from grader.lesson import catalog
    from grader.service.lti import commands as lti_setup

    catalog.get(lesson_id)  # an unknown lesson is said first, with the lessons there are
    for line in lti_setup.roster(out_path, memberships, issuer):
        echo(line)


def _for_each_course(argv: list[str]) -> tuple[str, ...]:
    """What `grader serve --hub --courses` was given that each course's server is given too (--jobs, the sandbox's
    flags, ...): all but where the front itself is and what it serves."""
    rest = argv[argv.index("serve") + 1:] if "serve" in argv else []
    kept: list[str] = []
    skip = False
    for arg in rest:
        name = arg.split("=", 1)[0]
        if skip or name in ("--hub",):
            skip = False
            continue
        if name in ("--courses", "--out", "--port", "--host", "--url"):
            skip = "=" not in arg
            continue
        kept.append(arg)
    return tuple(kept)


@click.group("hub")
def hub_group() -> None:
    """The grader as a JupyterHub service: what to add to jupyterhub_config.py."""


@hub_group.command("config")
@click.option("--url", required=True, help="The address the service listens on, as the hub reaches it "
                                           "(http://127.0.0.1:10101).")
@click.option("--out", "out_dir", default="served", show_default=True,
              type=click.Path(file_okay=False, path_type=Path), help="Where the service records grades.")
@click.option("--courses", "courses_root", type=click.Path(exists=True, file_okay=False, path_type=Path),
              help="Serve every course folder under this one (each at /services/grader/<course>/) instead of one.")
def hub_config_cmd(url: str, out_dir: Path, courses_root: Path | None) -> None:
    """Print the lines for jupyterhub_config.py that run this course's grader as a service of the hub: the
    service, the roles it and the hub's users need, and the address user servers submit to."""
    from grader.lesson import course
    from grader.service import hub

    if courses_root is not None:
        click.echo(hub.config_lines(None, url, out_dir, courses_root), nl=False)
        return
    here = course.current()
    if here.root is None:
        raise GraderError("grader hub config needs the course folder: pass --course C (or set GRADER_COURSE)")
    if not here.hub.instructors:
        echo(f"grader: note: {here.root}/course.toml names no [hub] instructors group: nobody signed in through "
             "the hub opens the instructor's side", err=True)
    click.echo(hub.config_lines(here.root, url, out_dir), nl=False)


COMMANDS = (serve_cmd, tokens_cmd, submit_cmd, lti_group, hub_group)
