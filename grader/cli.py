"""Command line: grade, check, release, validate, new, build-solution, batch, similarity, export, portfolio, keys,
cluster, verify (and the hidden gradescope-run). Each command calls one library function and one renderer, importing only
what it uses (`batch` starts its kernel template before the grading machinery, so the two overlap). User errors
are caught in one place, the group's `invoke`: a `GraderError` is one stderr line and exit 2, Ctrl-C one line
and exit 130; anything else is a grader bug and keeps its traceback.
"""
from __future__ import annotations

import os
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import click

from grader import escape, layouts
from grader.errors import GraderError
from grader.limits import Limits
from grader.options import MAX_HASH_SEED, MAX_SEED, Options
from grader.devices import DEVICES

EXIT_OK = 0
EXIT_UNSOUND = 1
EXIT_FAILING = 1  # `check`: a public check fails, as test runners exit, so a class repository's CI can use it
EXIT_BAD_INPUT = 2
EXIT_INTERRUPTED = 130  # as a shell reports a process ended by Ctrl-C
_FILE = click.Path(exists=False, dir_okay=False, path_type=Path)
_SECONDS = click.FloatRange(min=0, min_open=True)


def _options(*, sandbox: str | None = None, default_sandbox: str = "auto", cell_timeout: float | None = None,
             notebook_timeout: float | None = None, per_cell: tuple[tuple[str, float], ...] = (),
             **fields: Any) -> Options:
    """Options from the flags of `_sandbox_options` (the remaining flags are fields of `Options`)."""
    limits = Limits(cell_timeouts=per_cell)
    if cell_timeout is not None:
        limits = replace(limits, cell_timeout=cell_timeout, probe_timeout=cell_timeout)
    if notebook_timeout is not None:
        limits = replace(limits, notebook_timeout=notebook_timeout)
    return Options(limits=limits, sandbox=sandbox or default_sandbox, **fields)


def _echo(text: Any = "", err: bool = False) -> None:
    """Every line the CLI prints: student-controlled text (file names, messages) cannot drive the terminal."""
    click.echo(escape.terminal(text), err=err)


def _warn_sandbox(data: dict[str, Any]) -> None:
    box = data.get("sandbox") or {}
    if box.get("missing"):
        _echo(f"grader: warning: isolation layers missing ({', '.join(box['missing'])}): {box.get('missing_reason')}", err=True)


class _Interrupted(GraderError):
    """Ctrl-C, with what is kept and how to go on."""


class _Main(click.Group):
    """The one place user errors become a line on stderr and an exit code."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except _Interrupted as err:
            # Leave at once: every record is already on disk, workers and kernels die with this process
            # (PDEATHSIG, bwrap --die-with-parent), and an orderly exit could wait on a pool's threads.
            _echo(f"\ngrader: {err}", err=True)
            for stream in (sys.stdout, sys.stderr):
                stream.flush()
            os._exit(EXIT_INTERRUPTED)
        except KeyboardInterrupt:
            _echo("\ngrader: interrupted", err=True)
            sys.exit(EXIT_INTERRUPTED)
        except GraderError as err:
            _echo(f"grader: {err}", err=True)
            sys.exit(EXIT_BAD_INPUT)


class _CellBudget(click.ParamType):
    """`ID=SECONDS`: the time one cell (by its id) may run."""

    name = "ID=SECONDS"

    def convert(self, value: Any, param: Any, ctx: Any) -> tuple[str, float]:
        if isinstance(value, tuple):
            return value
        cell_id, _, seconds = str(value).partition("=")
        try:
            budget = float(seconds)
        except ValueError:
            budget = -1.0
        if not cell_id or not budget > 0:
            self.fail(f"{value!r} is not ID=SECONDS with SECONDS > 0", param, ctx)
        return cell_id, budget


def _sandbox_options(fn: Any) -> Any:
    fn = click.option("--cell-timeout-for", "per_cell", type=_CellBudget(), multiple=True,
                      help="Seconds for one cell, by its id (repeatable); overrides --cell-timeout there.")(fn)
    fn = click.option("--device", type=click.Choice(sorted(DEVICES)), default="cpu", show_default=True,
                      help="JAX backend for the kernel (auto: whatever JAX finds).")(fn)
    fn = click.option("--device-fallback", is_flag=True, help="Grade on the CPU when the device asked for is absent.")(fn)
    fn = click.option("--seed", type=click.IntRange(0, MAX_SEED), help="Seed for hidden cases (replays a recorded grade).")(fn)
    fn = click.option("--hash-seed", type=click.IntRange(0, MAX_HASH_SEED),
                      help="The kernel's PYTHONHASHSEED (default: derived from --seed; a batch records its own).")(fn)
    fn = click.option("--no-sandbox", "sandbox", flag_value="none", help="Run the kernel without isolation.")(fn)
    fn = click.option("--sandbox", "sandbox", flag_value="bwrap", help="Insist on the bubblewrap sandbox.")(fn)
    fn = click.option("--require-sandbox", "require_sandbox", is_flag=True, help="Refuse to grade unless every isolation layer holds.")(fn)
    fn = click.option("--cell-timeout", type=_SECONDS, help="Seconds per cell and per exercise probe (default 30).")(fn)
    fn = click.option("--notebook-timeout", type=_SECONDS, help="Seconds for the whole run (default 300).")(fn)
    return fn


def _course(ctx: click.Context, param: Any, value: Path | None) -> Path | None:
    if value is not None:
        if not (value / "lessons").is_dir() and not (value / "solutions").is_dir():
            raise click.BadParameter(f"{value} holds neither lessons/ nor solutions/")
        os.environ["GRADER_COURSE"] = str(value.resolve())  # batch workers and cluster tasks inherit it
    return value


@click.group(cls=_Main)
@click.option("--course", type=click.Path(exists=True, file_okay=False, path_type=Path), callback=_course,
              expose_value=False, is_eager=True,
              help="The course folder (lessons/, solutions/, templates/); default: GRADER_COURSE, else the checkout "
                   "or the installed lessons.")
def main() -> None:
    """Grade notebooks of the inference-serving course."""


@main.command("grade")
@click.argument("submission", type=_FILE)
@click.option("--lesson", "lesson_id", help="Lesson id (default: read from the notebook's metadata).")
@click.option("--json", "json_path", help="Write the result JSON here ('-' for standard output).")
@click.option("--html", "html_path", type=_FILE, help="Write the evidence report here.")
@click.option("--md", "md_path", type=_FILE, help="Write the evidence report as Markdown here.")
@click.option("--notebook", "notebook_path", type=_FILE,
              help="Write the freshly executed notebook here (a portfolio picks up RESULT.executed.ipynb beside RESULT.json).")
@_sandbox_options
def grade_cmd(submission: Path, lesson_id: str | None, json_path: str | None, html_path: Path | None,
              md_path: Path | None, notebook_path: Path | None, **flags: Any) -> None:
    """Grade one .ipynb or .py submission."""
    from grader import finish, grading, render_text

    options = _options(**flags)
    try:
        result = grading.grade(submission, lesson_id, options)
    except GraderError as err:  # the reason is also a `rejected` result where one was asked for
        finish.emit(grading.rejected(submission, str(err), lesson_id), json_path, html_path, md_path)
        raise
    data = result.to_dict()
    _warn_sandbox(data)
    finish.emit(result, json_path, html_path, md_path, notebook_path)
    if json_path != "-":
        _echo(render_text.result_text(data))


@main.command("check")
@click.argument("submission", type=_FILE)
@click.option("--lesson", "lesson_id", help="Lesson id (default: read from the notebook).")
@click.option("--sandbox", "sandbox", flag_value="bwrap",
              help="Run your code in the bubblewrap sandbox, as grading does; refuse if this machine cannot.")
@click.option("--cell-timeout", type=_SECONDS, help="Seconds per cell (default 30).")
@click.option("--watch", is_flag=True,
              help="Check again on every save, printing only what changed (Ctrl-C to stop).")
def check_cmd(submission: Path, lesson_id: str | None, sandbox: str | None, cell_timeout: float | None,
              watch: bool) -> None:
    """Self-check before submitting: public checks only, readable feedback."""
    from grader import grading, render_text

    options = _options(sandbox=sandbox, default_sandbox="none", cell_timeout=cell_timeout, public_only=True)
    if watch:
        from grader import watch as watching

        try:
            watching.run(submission, lesson_id, options, _echo)
        except KeyboardInterrupt:
            _echo("stopped watching")
            raise SystemExit(130) from None
    data = grading.grade(submission, lesson_id, options).to_dict()
    _echo(render_text.result_text(data))
    sys.exit(EXIT_OK if all(e["status"] == "passed" for e in data["exercises"]) else EXIT_FAILING)


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
    from grader import handout, variants

    if per_student or roster or students:
        _echo(variants.release(lesson_id, out_dir, roster, students, per_student))
        return
    written = handout.release(lesson_id, out_dir)
    _echo(f"{written}\nnext: hand it out; students self-check with `grader check {written.name}` (or grader.check())")


@main.command("validate")
@click.argument("lesson_id")
@click.option("--draws", type=click.IntRange(0, 1000), default=0, help="Ask the reference N more hidden draws.")
@_sandbox_options
def validate_cmd(lesson_id: str, draws: int, **flags: Any) -> None:
    """Prove a lesson sound: reference full marks, scaffold zero, nothing crashes."""
    from grader import render_text, validate

    outcome = validate.validate(lesson_id, _options(**flags), draws=draws)
    _echo(render_text.validation_text(outcome))
    sys.exit(EXIT_UNSOUND if outcome.problems else EXIT_OK)


@main.command("batch")
@click.argument("folder", type=click.Path(exists=True, path_type=Path))
@click.option("--lesson", "lesson_id", required=True)
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False, path_type=Path))
@click.option("--jobs", type=click.IntRange(min=1), help="Parallel grading jobs (default: two per core, fewer if memory is short).")
@click.option("--scheduler", help="A Dask scheduler's tls://HOST:PORT (needs the [dask] extra and --tls).")
@click.option("--tls", "tls_dir", type=click.Path(file_okay=False, path_type=Path),
              help="The folder `grader cluster certs` wrote (ca.pem, client.pem, client-key.pem).")
@click.option("--no-zygote", is_flag=True, help="Start every kernel from scratch instead of forking it warm.")
@click.option("--regrade", is_flag=True,
              help="Grade every submission again with its recorded seeds (after fixing a lesson); writes changes.csv.")
@click.option("--force", is_flag=True, help="--regrade even when a changed reference contradicts the lesson.")
@click.option("--roster", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="The class: a CSV of student ids, or Canvas's gradebook export (names, SIS ids, sections).")
@_sandbox_options
def batch_cmd(folder: Path, lesson_id: str, out_dir: Path, jobs: int | None, scheduler: str | None,
              tls_dir: Path | None, no_zygote: bool, regrade: bool, force: bool, roster: Path | None,
              **flags: Any) -> None:
    """Grade every submission in FOLDER (a folder or a .zip: flat, per-student, nbgrader, Canvas or Moodle
    layout); rerun to resume."""
    began = time.monotonic()
    from grader import render_text, warm_start

    options = _options(zygote=not no_zygote, **flags)
    if options.sandbox == "none":
        _echo("grader: warning: --no-sandbox: student code runs without isolation and can read your files", err=True)
    # One hash seed for the whole batch, fixed now: the template's interpreter starts with it (a regrade's takes
    # the one its results recorded, read from the gradebook later). Derived, so a rerun's kernels are the same.
    if options.hash_seed is None and not regrade:
        from grader import seeds

        options = replace(options, hash_seed=seeds.batch_hash_seed(lesson_id, seeds.course_secret()))
    if scheduler is None and not regrade:
        warm_start.start(lesson_id, options)
    from grader import batch as batching

    try:
        summary = batching.run(folder, lesson_id, out_dir, jobs=jobs, options=options, scheduler=scheduler,
                               roster=roster, began=began, regrade=regrade, tls=tls_dir, force=force)
    except KeyboardInterrupt:
        raise _Interrupted(f"interrupted; every result recorded in {out_dir} is kept: run the same command "
                           "again to grade the rest") from None
    _echo(render_text.report_line(summary))


@main.command("similarity")
@click.argument("out_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--lesson", "lesson_id", help="The batch's lesson (default: read from its results).")
@click.option("--json", "json_path", help="Write the pairs as JSON here ('-' for standard output).")
@click.option("--threshold", type=click.FloatRange(0.0, 1.0), help="Flag pairs scoring above this (default 0.6).")
def similarity_cmd(out_dir: Path, lesson_id: str | None, json_path: str | None, threshold: float | None) -> None:
    """Flag pairs of students in a batch's OUT_DIR whose written code or explanations match, for review."""
    from grader import files, lessons, record, render_similarity, similarity

    lesson = lessons.get(lesson_id or similarity.batch_lesson(out_dir))
    found = similarity.of_batch(out_dir, lesson, similarity.THRESHOLD if threshold is None else threshold)
    files.write_text(out_dir / "similarity.html", render_similarity.similarity_html(found, lesson))
    if json_path:  # "-": standard output, and nothing else there
        (sys.stdout.write if json_path == "-" else lambda text: files.write_text(json_path, text))(
            record.dumps(found.as_json()))
    if json_path != "-":
        _echo(found.summary() + f"; see {out_dir / 'similarity.html'}")


@main.command("portfolio")
@click.argument("sources", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--out", "out_file", required=True, type=_FILE, help="The zip to write.")
@click.option("--lesson", "lesson_id", help="Lesson of the submissions given (default: from their metadata).")
def portfolio_cmd(sources: tuple[Path, ...], out_file: Path, lesson_id: str | None) -> None:
    """Export a student's evidence portfolio from results or submissions."""
    from grader import portfolio

    if unsigned := portfolio.build(list(sources), out_file, lesson_id):
        _echo(f"grader: note: unsigned results in this portfolio ({', '.join(unsigned)}): nothing vouches for them", err=True)
    _echo(str(out_file))


@main.group("keys")
def keys_group() -> None:
    """The course signing key: every result the grader writes is signed with it."""


@keys_group.command("init")
@click.option("--dir", "folder", type=click.Path(file_okay=False, path_type=Path),
              help="Where to make course.key and course.pub (default: your config folder).")
def keys_init_cmd(folder: Path | None) -> None:
    """Make the course key pair (Ed25519) and the course secret; an existing one is never overwritten."""
    from grader import seeds

    _echo("\n".join(seeds.init_course(folder)))


@main.group("cluster")
def cluster_group() -> None:
    """A Dask cluster only the course can use (mutual TLS)."""


@cluster_group.command("certs")
@click.argument("folder", type=click.Path(file_okay=False, path_type=Path))
def cluster_certs_cmd(folder: Path) -> None:
    """Make the course CA and the scheduler's, workers' and client's certificates in FOLDER."""
    from grader import certs

    _echo("\n".join(map(str, certs.make(folder))) + f"\nthe CA's key: {folder / certs.CA_KEY} (keep it off the workers)")


@main.command("verify")
@click.argument("target", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--key", "key_path", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="The course's public key (default: course.pub beside the course key, where there is one).")
def verify_cmd(target: Path, key_path: Path | None) -> None:
    """Check a result JSON or a portfolio zip against the course's public key, offline."""
    from grader import sign, verify

    key_path = key_path or sign.course_public_key_path()
    lines = verify.file(target, key_path)
    for line in lines:
        _echo(line.text())
    sys.exit(EXIT_OK if all(line.ok for line in lines) else EXIT_UNSOUND)


@main.command("new")
@click.argument("lesson_id")
@click.option("--exercise", "exercises", multiple=True, help="An exercise id (repeatable; default first-exercise).")
def new_cmd(lesson_id: str, exercises: tuple[str, ...]) -> None:
    """Start a lesson: its files with one worked exercise per id, valid as written (docs/authoring.md)."""
    from grader import new_lesson

    _echo("\n".join(map(str, new_lesson.create(lesson_id, exercises))) + f"\nnext: grader validate {lesson_id}")


@main.command("build-solution")
@click.argument("lesson_id")
def build_solution_cmd(lesson_id: str) -> None:
    """Instructors: regenerate solutions/<id>/solution.ipynb from the scaffold and answers.py."""
    from grader import new_lesson

    _echo(str(new_lesson.build_solution(lesson_id)))


@main.command("export")
@click.argument("fmt", metavar="FORMAT", type=click.Choice(layouts.EXPORTS))
@click.argument("batch_dir", metavar="OUTDIR", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--to", "target", type=click.Path(file_okay=False, path_type=Path),
              help="Where to write (default: OUTDIR/export/FORMAT).")
@click.option("--lesson", "lesson_id", help="The lesson (default: the one lesson in the gradebook).")
@click.option("--roster", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="canvas: the gradebook CSV exported from Canvas (names, ids, sections).")
@click.option("--assignment-id", default="",
              help="canvas: the assignment's number in its Canvas URL (default: the roster's only assignment).")
@click.option("--assignment", default="", help="canvas: the assignment's name, as the roster's column names it.")
def export_cmd(fmt: str, batch_dir: Path, target: Path | None, lesson_id: str | None, roster: Path | None,
               assignment_id: str, assignment: str) -> None:
    """Hand a batch's grades and feedback to Canvas, PrairieLearn or Gradescope (OUTDIR: the batch's --out)."""
    from grader import gradescope, platforms

    written = (gradescope.bundle(lesson_id or platforms.batch_lesson(batch_dir), target or batch_dir / "export" / fmt)
               if fmt == "gradescope" else platforms.export(fmt, batch_dir, target, lesson_id, roster, assignment,
                                                            assignment_id))
    _echo(platforms.describe(fmt, written))


@main.command("gradescope-run", hidden=True)
@click.option("--root", type=click.Path(file_okay=False, path_type=Path), required=True)
@click.option("--lesson", "lesson_id", required=True)
def gradescope_run_cmd(root: Path, lesson_id: str) -> None:
    """Inside Gradescope's container: grade ROOT/submission, write ROOT/results/results.json (always; see
    gradescope.py). Student code runs as root only where GRADER_ALLOW_ROOT_KERNEL=1, and the output says so."""
    from grader import gradescope

    allow_root = os.environ.get("GRADER_ALLOW_ROOT_KERNEL") == "1"
    graded, data, results = gradescope.run(root, lesson_id, _options(sandbox="none" if allow_root else None))
    _echo(f"{graded['score']:g} points; results in {results / 'results.json'}")
    box = data.get("sandbox") or {}
    if box:
        _echo(f"grader: sandbox {box.get('mode')}, kernel as {box.get('kernel_as')}"
              + (f"; not held: {', '.join(box['missing'])}" if box.get("missing") else ""), err=True)


__all__ = ["main"]

