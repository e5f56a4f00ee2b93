"""The class's commands: batch, similarity, export, review, portfolio, cluster, verify and the hidden gradescope-run
(`cli.main` adds them; each imports only what it uses).
"""
from __future__ import annotations

import os
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import click

from grader.base import spelling
from grader.base.errors import GraderError
from grader.cli_flags import (
    EXIT_OK,
    EXIT_UNSOUND,
    FILE,
    Finite,
    Interrupted,
    echo,
    given_from,
    options_from,
    sandbox_options,
)


@click.command("batch")
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
@sandbox_options
def batch_cmd(folder: Path, lesson_id: str, out_dir: Path, jobs: int | None, scheduler: str | None,
              tls_dir: Path | None, no_zygote: bool, regrade: bool, force: bool, roster: Path | None,
              **flags: Any) -> None:
    """Grade every submission in FOLDER (a folder or a .zip: flat, per-student, nbgrader, Canvas or Moodle
    layout); rerun to resume."""
    began = time.monotonic()
    from grader.kernel import warm_start

    given = given_from(flags)
    options = options_from(zygote=not no_zygote, **flags)
    if options.sandbox == "none":
        echo("grader: warning: --no-sandbox: student code runs without isolation and can read your files", err=True)
    # One hash seed for the whole batch, fixed now: the template's interpreter starts with it (a regrade's takes
    # the one its results recorded, read from the gradebook later). Derived, so a rerun's kernels are the same.
    from grader.lesson import catalog, draw

    lesson = catalog.get(lesson_id)  # the batch's one lookup: the lesson travels as itself from here
    if not regrade:
        given = replace(given, hash_seed=draw.batch_hash_seed_for(lesson.id, given.hash_seed))
    if scheduler is None and not regrade and given.hash_seed is not None:
        warm_start.start(lesson, options, given.hash_seed)  # before the rest of the batch's imports, which it overlaps
    from grader.classroom import batch as batching
    from grader.report import render_text

    try:
        summary = batching.run(batching.Request(Path(folder), lesson, Path(out_dir), jobs, options, scheduler,
                                                Path(tls_dir) if tls_dir else None, Path(roster) if roster else None,
                                                regrade, force, began=began, given=given))
    except KeyboardInterrupt:
        raise Interrupted(f"interrupted; every result recorded in {out_dir} is kept: run the same command "
                           "again to grade the rest") from None
    echo(render_text.report_line(summary))


@click.command("similarity")
@click.argument("out_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--lesson", "lesson_id", help="The batch's lesson (default: read from its results).")
@click.option("--json", "json_path", help="Write the pairs as JSON here ('-' for standard output).")
@click.option("--threshold", type=Finite(0.0, 1.0), help="Flag pairs scoring above this (default 0.6).")
def similarity_cmd(out_dir: Path, lesson_id: str | None, json_path: str | None, threshold: float | None) -> None:
    """Flag pairs of students in a batch's OUT_DIR whose written code or explanations match, for review."""
    from grader.base import files
    from grader.classroom import similarity
    from grader.classroom.batch_folder import BatchFolder
    from grader.lesson import catalog
    from grader.result import record

    folder = BatchFolder(out_dir)
    lesson = catalog.get(lesson_id or similarity.batch_lesson(folder))
    found = similarity.write(folder, lesson, similarity.THRESHOLD if threshold is None else threshold)
    if json_path:  # "-": standard output, and nothing else there
        (sys.stdout.write if json_path == "-" else lambda text: files.write_text(json_path, text))(
            record.dumps(found.as_json()))
    if json_path != "-":
        echo(found.summary() + f"; see {folder.similarity}")


@click.command("portfolio")
@click.argument("sources", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--out", "out_file", required=True, type=FILE, help="The zip to write.")
@click.option("--lesson", "lesson_id", help="Lesson of the submissions given (default: from their metadata).")
def portfolio_cmd(sources: tuple[Path, ...], out_file: Path, lesson_id: str | None) -> None:
    """Export a student's evidence portfolio from results or submissions."""
    from grader.classroom import portfolio

    if unsigned := portfolio.build(list(sources), out_file, lesson_id):
        echo(f"grader: note: unsigned results in this portfolio ({', '.join(unsigned)}): nothing vouches for them", err=True)
    echo(str(out_file))


@click.group("cluster")
def cluster_group() -> None:
    """A Dask cluster only the course can use (mutual TLS)."""


@cluster_group.command("certs")
@click.argument("folder", type=click.Path(file_okay=False, path_type=Path))
def cluster_certs_cmd(folder: Path) -> None:
    """Make the course CA and the scheduler's, workers' and client's certificates in FOLDER."""
    from grader.classroom import certs

    echo("\n".join(map(str, certs.make(folder))) + f"\nthe CA's key: {folder / certs.CA_KEY} (keep it off the workers)")


@click.command("verify")
@click.argument("target", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--key", "key_path", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="The course's public key (default: course.pub beside the course key, where there is one).")
def verify_cmd(target: Path, key_path: Path | None) -> None:
    """Check a result JSON or a portfolio zip against the course's public key, offline."""
    from grader.classroom import verify
    from grader.result import sign

    if key_path is None:
        try:
            key_path = sign.course_public_key_path()
        except sign.KeyProblem:  # a student's own machine: unsigned files verify as unsigned, signed ones unchecked
            echo("grader: note: no course public key here: signed results cannot be checked (pass --key course.pub)",
                 err=True)
    lines = verify.file(target, key_path)
    for line in lines:
        echo(line.text())
    sys.exit(EXIT_OK if all(line.ok for line in lines) else EXIT_UNSOUND)


@click.command("export")
@click.argument("fmt", metavar="FORMAT")
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
    """Hand a batch's grades and feedback back to a platform: FORMAT is canvas, prairielearn (a batch's grades) or
    gradescope (the autograder bundle); OUTDIR: the batch's --out."""
    from grader.classroom import platforms

    echo(platforms.describe(fmt, platforms.export(fmt, batch_dir, target, lesson_id, roster, assignment, assignment_id)))


@click.command("gradescope-run", hidden=True)
@click.option("--root", type=click.Path(file_okay=False, path_type=Path), required=True)
@click.option("--lesson", "lesson_id", required=True)
def gradescope_run_cmd(root: Path, lesson_id: str) -> None:
    """Inside Gradescope's container: grade ROOT/submission, write ROOT/results/results.json (always; see
    gradescope.py). Student code runs as root only where GRADER_ALLOW_ROOT_KERNEL=1, and the output says so."""
    from grader.classroom import gradescope

    allow_root = os.environ.get("GRADER_ALLOW_ROOT_KERNEL") == "1"
    graded, data, results = gradescope.run(root, lesson_id, options_from(sandbox="none" if allow_root else None))
    echo(f"{spelling.score(graded['score'])} points; results in {results / 'results.json'}")
    box = data.get("sandbox") or {}
    if box:
        echo(f"grader: sandbox {box.get('mode')}, kernel as {box.get('kernel_as')}"
              + (f"; not held: {', '.join(box['missing'])}" if box.get("missing") else ""), err=True)


@click.command("review")
@click.argument("out_dir", metavar="OUTDIR", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--export", "export_path", type=FILE, help="Write the written questions' grades to this CSV "
              "(student,name,question,answer,points,max_points,rubric,comment,grader) and stop.")
@click.option("--import", "import_path", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="Take the grades back from a filled export (rubric items decide the points where given); "
                   "a bad row changes nothing.")
@click.option("--override", nargs=3, metavar="STUDENT EXERCISE SCORE",
              help="Set an exercise's score by hand (SCORE `auto` gives it back to the autograder); needs --reason.")
@click.option("--reason", default="", help="Why the score was overridden (the student's report shows it).")
@click.option("--grader", "grader_name", default=lambda: os.environ.get("USER") or "instructor", show_default="$USER",
              help="Who decides (kept with every decision).")
@click.option("--port", type=click.IntRange(0, 65535), default=0, help="Port on 127.0.0.1 (default: any free one).")
@click.option("--second", is_flag=True, help="Grade the course's sample a second time, blind (course.toml: "
                                             "[lessons.<id>.review] double_percent); the agreement shows on the page.")
def review_cmd(out_dir: Path, export_path: Path | None, import_path: Path | None, override: tuple[str, str, str] | None,
               reason: str, grader_name: str, port: int, second: bool) -> None:
    """Grade the written answers of a batch by rubric in the browser (OUTDIR: the batch's --out), or through a CSV;
    override an exercise's score with a reason. Every decision joins the student's grade, re-signed."""
    from grader.classroom import review, review_app

    if export_path or import_path or override:
        if second:
            raise GraderError("--second grades on the page only (not with --export, --import or --override)")
        opened = review.Review(out_dir, grader_name)
        try:
            if override:
                student, exercise, score = override
                opened.override(student, exercise, None if score == "auto" else _score(score), reason)
                echo(f"{student}: {exercise} {'back to the autograder' if score == 'auto' else 'set to ' + score}")
            if import_path:
                echo(review.import_csv(opened, import_path).line(import_path))
            if export_path:
                echo(f"{review.export_csv(opened, export_path)} answers written to {export_path}")
            opened.refresh()
        finally:
            opened.close()
        return
    what = "second grading (blind) of" if second else "review"
    review_app.serve(out_dir, grader_name, port, second=second,
                     ready=lambda url: echo(f"{what} {out_dir}: open {url}\n(Ctrl-C stops it; every decision is saved as "
                                            "it is made)"))


def _score(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise GraderError(f"--override: score {text[:40]!r} is not a number (or `auto`)") from None


COMMANDS = (batch_cmd, similarity_cmd, portfolio_cmd, cluster_group, verify_cmd, export_cmd, gradescope_run_cmd,
            review_cmd)
