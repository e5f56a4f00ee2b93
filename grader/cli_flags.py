"""What every command shares: the sandbox and time-limit flags, the terminal-safe echo, and the one place user
errors become a line on stderr and an exit code (`Main.invoke`: a `GraderError` is one line and exit 2, Ctrl-C one
line and exit 130; anything else is a grader bug and keeps its traceback).
"""
from __future__ import annotations

import math
import os
import sys
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from grader.base import escape
from grader.base.errors import GraderError
from grader.base.limits import Limits
from grader.base.options import MAX_HASH_SEED, MAX_SEED, Options
from grader.kernel.devices import DEVICES

EXIT_OK = 0
EXIT_UNSOUND = 1
EXIT_FAILING = 1  # `check`: a public check fails, as test runners exit, so a class repository's CI can use it
EXIT_BAD_INPUT = 2
EXIT_INTERRUPTED = 130  # as a shell reports a process ended by Ctrl-C
FILE = click.Path(exists=False, dir_okay=False, path_type=Path)


class Finite(click.FloatRange):
    """click's FloatRange, refusing `nan` and `inf` (its bounds let nan through: every comparison with it is false)."""

    def convert(self, value: Any, param: Any, ctx: Any) -> Any:
        number = super().convert(value, param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number", param, ctx)
        return number


SECONDS = Finite(min=0, min_open=True)

if TYPE_CHECKING:
    from grader.result.record import GradeResult


def options_from(*, sandbox: str | None = None, default_sandbox: str = "auto", cell_timeout: float | None = None,
             notebook_timeout: float | None = None, per_cell: tuple[tuple[str, float], ...] = (),
             **fields: Any) -> Options:
    """Options from the flags of `sandbox_options` (the remaining flags are fields of `Options`)."""
    limits = Limits(cell_timeouts=per_cell)
    if cell_timeout is not None:
        limits = replace(limits, cell_timeout=cell_timeout, probe_timeout=cell_timeout)
    if notebook_timeout is not None:
        limits = replace(limits, notebook_timeout=notebook_timeout)
    return Options(limits=limits, sandbox=sandbox or default_sandbox, **fields)


def given_from(flags: dict[str, Any]) -> Any:
    """What `--seed` and `--hash-seed` fix of each student's draw (lesson/draw.py's Given), taken out of `flags`."""
    from grader.lesson.draw import Given

    return Given(seed=flags.pop("seed", None), hash_seed=flags.pop("hash_seed", None))


def echo(text: Any = "", err: bool = False) -> None:
    """Every line the CLI prints: student-controlled text (file names, messages) cannot drive the terminal."""
    click.echo(escape.terminal(text), err=err)


def warn_sandbox(result: GradeResult) -> None:
    box = result.sandbox
    if box is not None and box.missing:
        echo(f"grader: warning: isolation layers missing ({', '.join(box.missing)}): {box.missing_reason}", err=True)


class Interrupted(GraderError):
    """Ctrl-C, with what is kept and how to go on."""


class Main(click.Group):
    """The one place user errors become a line on stderr and an exit code."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except Interrupted as err:
            # Leave at once: every record is already on disk, workers and kernels die with this process
            # (PDEATHSIG, bwrap --die-with-parent), and an orderly exit could wait on a pool's threads.
            echo(f"\ngrader: {err}", err=True)
            for stream in (sys.stdout, sys.stderr):
                stream.flush()
            os._exit(EXIT_INTERRUPTED)
        except KeyboardInterrupt:
            echo("\ngrader: interrupted", err=True)
            sys.exit(EXIT_INTERRUPTED)
        except GraderError as err:
            echo(f"grader: {err}", err=True)
            sys.exit(EXIT_BAD_INPUT)


class CellBudget(click.ParamType):
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
        if not cell_id or not 0 < budget < math.inf:
            self.fail(f"{value!r} is not ID=SECONDS with SECONDS > 0", param, ctx)
        return cell_id, budget


def sandbox_options(fn: Any) -> Any:
    fn = click.option("--cell-timeout-for", "per_cell", type=CellBudget(), multiple=True,
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
    fn = click.option("--cell-timeout", type=SECONDS, help="Seconds per cell and per exercise probe (default 30).")(fn)
    fn = click.option("--notebook-timeout", type=SECONDS, help="Seconds for the whole run (default 300).")(fn)
    return fn


def course_option(ctx: click.Context, param: Any, value: Path | None) -> Path | None:
    if value is not None:
        if not any((value / name).exists() for name in ("lessons", "solutions", "course.toml")):
            raise click.BadParameter(f"{value} holds no course.toml, lessons/ or solutions/: not a course folder")
        os.environ["GRADER_COURSE"] = str(value.resolve())  # batch workers and cluster tasks inherit it
    return value
