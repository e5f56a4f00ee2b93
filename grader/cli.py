"""Command line: grade, check, release, validate, course, new, build-solution and keys here; the class's commands (batch,
similarity, export, review, portfolio, cluster, verify and the hidden gradescope-run) in cli_class.py; the service's (serve,
tokens, submit, lti, hub) in cli_service.py. Each command calls one
library function and one renderer, importing only what it uses (`batch` starts its kernel template before the grading
machinery, so the two overlap). User errors are caught in one place, `cli_flags.Main.invoke`.
"""
from __future__ import annotations

import gc
import os
import sys
from pathlib import Path
from typing import Any

import click

from grader import cli_class, cli_service
from grader.base.errors import GraderError
from grader.cli_flags import (
    EXIT_FAILING,
    EXIT_OK,
    EXIT_UNSOUND,
    FILE,
    SECONDS,
    Main,
    course_option,
    echo,
    given_from,
    options_from,
    sandbox_options,
    warn_sandbox,
)


@click.group(cls=Main)
@click.option("--course", type=click.Path(exists=True, file_okay=False, path_type=Path), callback=course_option,
              expose_value=False, is_eager=True,
              help="The course folder (course.toml, lessons/, solutions/, templates/, private/); default: "
                   "GRADER_COURSE, else the nearest course.toml above the working directory, else the checkout.")
def main() -> None:
    """Grade notebooks of the inference-serving course."""


@main.command("grade")
@click.argument("submission", type=FILE)
@click.option("--lesson", "lesson_id", help="Lesson id (default: read from the notebook's metadata).")
@click.option("--json", "json_path", help="Write the result JSON here ('-' for standard output).")
@click.option("--html", "html_path", type=FILE, help="Write the evidence report here.")
@click.option("--md", "md_path", type=FILE, help="Write the evidence report as Markdown here.")
@click.option("--notebook", "notebook_path", type=FILE,
              help="Write the freshly executed notebook here (a portfolio picks up RESULT.executed.ipynb beside RESULT.json).")
@click.option("--student", help="Whose work it is (default: the handout's owner, else the file's name); said when used.")
@sandbox_options
def grade_cmd(submission: Path, lesson_id: str | None, json_path: str | None, html_path: Path | None,
              md_path: Path | None, notebook_path: Path | None, student: str | None, **flags: Any) -> None:
    """Grade one .ipynb or .py submission."""
    from grader import grading
    from grader.report import finish, render_text

    given = given_from(flags)
    options = options_from(**flags)
    if student is not None:
        echo(f"grader: graded as {student} (--student), whatever the file or its handout says", err=True)
    try:
        result = grading.grade(submission, lesson_id, options, student, given)
    except GraderError as err:  # the reason is also a `rejected` result where one was asked for
        finish.emit(grading.rejected(submission, str(err), lesson_id), json_path, html_path, md_path)
        raise
    warn_sandbox(result)
    finish.emit(result, json_path, html_path, md_path, notebook_path)
    if json_path != "-":
        echo(render_text.result_text(result))


@main.command("check")
@click.argument("submission", type=FILE)
@click.option("--lesson", "lesson_id", help="Lesson id (default: read from the notebook).")
@click.option("--sandbox", "sandbox", flag_value="bwrap",
              help="Run your code in the bubblewrap sandbox, as grading does; refuse if this machine cannot.")
@click.option("--cell-timeout", type=SECONDS, help="Seconds per cell (default 30).")
@click.option("--watch", is_flag=True,
              help="Check again on every save, printing only what changed (Ctrl-C to stop).")
def check_cmd(submission: Path, lesson_id: str | None, sandbox: str | None, cell_timeout: float | None,
              watch: bool) -> None:
    """Self-check before submitting: public checks only, readable feedback."""
    from grader import grading
    from grader.report import render_text

    options = options_from(sandbox=sandbox, default_sandbox="none", cell_timeout=cell_timeout, public_only=True)
    if watch:
        from grader import watch as watching

        try:
            watching.run(submission, lesson_id, options, echo)
        except KeyboardInterrupt:
            echo("stopped watching")
            raise SystemExit(130) from None
    result = grading.grade(submission, lesson_id, options)
    echo(render_text.result_text(result))
    sys.exit(EXIT_OK if all(e.status == "passed" for e in result.exercises) else EXIT_FAILING)


@main.command("release")
@click.argument("lesson_id")
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False, path_type=Path))
@click.option("--variants", "per_student", is_flag=True,
              help="Numbers of their own for each student (needs --roster or --student); the lesson is then graded "
                   "per student.")
@click.option("--roster", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="--variants: one notebook per student of this class list, named by their id.")
@click.option("--student", "students", multiple=True, help="--variants: this student's notebook (repeatable).")
def release_cmd(lesson_id: str, out_dir: Path, per_student: bool, roster: Path | None, students: tuple[str, ...]) -> None:
    """Write the student notebook of a lesson (no reference code in it); with --variants, one per student."""
    from grader.lesson import handout
    from grader.result import variants

    if per_student or roster or students:
        echo(variants.release(lesson_id, out_dir, roster, students, per_student))
        return
    written = handout.release(lesson_id, out_dir)
    echo(f"{written}\nnext: hand it out; students self-check with `grader check {written.name}` (or grader.check())")


@main.command("validate")
@click.argument("lesson_id")
@click.option("--draws", type=click.IntRange(1, 1000), default=20, show_default=True,
              help="Every hidden case of N draws is asked of the reference and must be answered as it says.")
@click.option("--seeds", type=click.IntRange(1, 200), default=5, show_default=True,
              help="Each mistake the lesson declares is graded under this many seeds' hidden cases (one kernel run).")
@click.option("--under-load", "runs", type=click.IntRange(2, 50),
              help="Instead: grade the reference and a declared mistake N times each beside busy processes, and say "
                   "when a score moves.")
@click.option("--busy", type=click.IntRange(0, 64), default=2, show_default=True,
              help="--under-load: how many spinning processes.")
@click.option("--mistake", help="--under-load: the declared mistake to grade (default: the first).")
@sandbox_options
def validate_cmd(lesson_id: str, draws: int, seeds: int, runs: int | None, busy: int, mistake: str | None,
                 **flags: Any) -> None:
    """Prove a lesson sound: reference full marks, scaffold zero, nothing crashes; --under-load N: no point moves
    with the machine's load."""
    from grader.authoring import validate
    from grader.report import render_text

    if runs:
        from grader.authoring import steady

        given_from(flags)  # a run under load draws its own seeds
        held = steady.under_load(lesson_id, options_from(**flags), runs, busy, mistake)
        echo(render_text.steadiness_text(held))
        sys.exit(EXIT_UNSOUND if held.problems else EXIT_OK)
    given = given_from(flags)
    outcome = validate.validate(lesson_id, options_from(**flags), draws=draws, seeds=seeds, given=given)
    echo(render_text.validation_text(outcome))
    sys.exit(EXIT_UNSOUND if outcome.problems else EXIT_OK)


@main.group("keys")
def keys_group() -> None:
    """The course signing key: every result the grader writes is signed with it."""


@keys_group.command("init")
@click.option("--dir", "folder", type=click.Path(file_okay=False, path_type=Path),
              help="Where to make course.key and course.pub (default: the course's private/ folder).")
def keys_init_cmd(folder: Path | None) -> None:
    """Make the course key pair (Ed25519) and the course secret; an existing one is never overwritten."""
    from grader.result import sign

    echo("\n".join(sign.init_course(folder)))


@main.command("course")
def course_cmd() -> None:
    """The course in force: its folder, where each piece of its private state lives, and its policy per lesson."""
    from dataclasses import replace

    from grader.report import render_text
    from grader.result import state
    from grader.service.lti import courses as lti_course

    echo(render_text.course_text(replace(state.describe(), lms=tuple(lti_course.describe()))))


@main.command("new")
@click.argument("lesson_id")
@click.option("--exercise", "exercises", multiple=True, help="An exercise id (repeatable; default first-exercise).")
def new_cmd(lesson_id: str, exercises: tuple[str, ...]) -> None:
    """Start a lesson: its files with one worked exercise per id, valid as written (docs/authoring.md)."""
    from grader.authoring import new_lesson

    echo("\n".join(map(str, new_lesson.create(lesson_id, exercises))) + f"\nnext: grader validate {lesson_id}")


@main.command("build-solution")
@click.argument("lesson_id")
def build_solution_cmd(lesson_id: str) -> None:
    """Instructors: regenerate solutions/<id>/solution.ipynb from the scaffold and answers.py."""
    from grader.authoring import new_lesson

    echo(str(new_lesson.build_solution(lesson_id)))


UNUSED_FORMAT_CHECKERS = ("fqdn", "isoduration", "jsonpointer", "rfc3339_validator", "rfc3986_validator", "rfc3987",
                          "uri_template", "webcolors")
"""Packages jsonschema imports where installed (JupyterLab brings them) only for its FormatChecker, which the grader
never passes (nbformat neither; shapes.Shape checks with fastjsonschema first and jsonschema only explains): 30-50 ms
of every grader process that reads a notebook. idna stays (httpx uses it); rfc3987_syntax is kept out by the
package itself (grader/__init__.py)."""


def run() -> None:
    """The `grader` process (its console script and `python -m grader`): the command line, then an exit without the
    collector's last walk over every object the command made (about 0.1 s after a batch of twenty, with one core
    idle): the operating system takes that memory back anyway. atexit handlers still run, and every file is written
    and closed before a command returns (base.files).

    The grader's own numpy uses one OpenBLAS thread unless told otherwise: its arrays are small, and the threads
    OpenBLAS starts at import spin for about 80 ms of CPU on a batch's busiest second (kernels are given one
    thread by launch.kernel_env whatever is set here). jsonschema's unused format checkers are not imported."""
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    if "jsonschema" not in sys.modules:
        for name in UNUSED_FORMAT_CHECKERS:
            sys.modules.setdefault(name, None)  # type: ignore[arg-type]
    try:
        main()
    finally:
        gc.freeze()


__all__ = ["main", "run"]


for _command in cli_class.COMMANDS + cli_service.COMMANDS:
    main.add_command(_command)
