"""The JAX compilation work every kernel would repeat for a lesson's given code, done once.

A lesson may name `compile_warmup` code. Once per machine and setting, the
grader runs the lesson's given cells and then that code in a process with
the kernels' own environment (the same XLA flags, platform and versions: all
of them enter JAX's cache key), writing every compiled executable to a fresh
cache folder, which is then made read-only for everyone and moved into place
in one rename. Every bubblewrap kernel sees that folder read-only and never
writes to it (its write threshold is never reached); a compile that misses
simply compiles. Nothing a student runs can enter the cache, and no kernel's
work reaches another's.

The folder's name is a digest of everything the cache depends on, so a
changed lesson, library, flag or processor gets a new one.
"""

from __future__ import annotations

import hashlib
import json
import platform
import shutil
import subprocess
import sys
import tempfile
from importlib import metadata
from pathlib import Path

from grader.base import files, host
from grader.kernel import devices, launch
from grader.lesson import catalog

FILL_TIMEOUT = 300.0
"""Seconds the filling process may take."""

# Runs the given cells in order (a cell that fails, such as one that reads a student's answer, is passed over),
# then the warm-up code; exits 1 if the warm-up itself failed.
_FILL = r'''
import json, sys
cells, warmup = json.load(open(sys.argv[1]))
space = {"__name__": "__main__"}
for source in cells:
    try:
        exec(compile(source, "<given cell>", "exec"), space)
    except BaseException as err:
        print(f"given cell passed over: {type(err).__name__}: {err}", file=sys.stderr)
exec(compile(warmup, "<compile_warmup>", "exec"), space)
'''


def root() -> Path:
    """Where filled caches live: $GRADER_CACHE/compile, else the user's cache folder's."""
    return host.cache_root() / "compile"


def _version(name: str) -> str:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return ""


def folder_for(lesson: catalog.Lesson, device: str) -> Path:
    """The cache folder this lesson, device and machine would use (it may not exist yet)."""
    env = launch.kernel_env(Path("/tmp"), devices.KernelStart(device=device))
    # The scaffold's text stands for its given cells (it holds them, and a change anywhere in it only refills the
    # cache once): no notebook is read, so a batch names the cache, and starts its template, before importing nbformat.
    scaffold = (lesson.folder / "scaffold.py").read_text(encoding="utf-8")
    facts = {"scaffold": scaffold, "warmup": lesson.compile_warmup,
             "jax": _version("jax"), "jaxlib": _version("jaxlib"), "python": sys.version, "machine": platform.machine(),
             "processor": host.cpu_flags(), "env": {k: v for k, v in env.items() if k.startswith(("XLA", "JAX"))}}
    digest = hashlib.sha256(json.dumps(facts, sort_keys=True).encode()).hexdigest()[:24]
    return root() / f"{lesson.id}-{digest}"


def existing(lesson: catalog.Lesson, device: str) -> str:
    """The filled cache for this lesson and device, or "" when there is none."""
    if not lesson.compile_warmup:
        return ""
    folder = folder_for(lesson, device)
    return str(folder) if folder.is_dir() else ""


def ensure(lesson: catalog.Lesson, device: str) -> str:
    """The filled cache, filling it first if needed; "" when the lesson has none or filling failed (grading then
    simply compiles in every kernel)."""
    found = existing(lesson, device)
    if found or not lesson.compile_warmup:
        return found
    target = folder_for(lesson, device)
    files.make_dirs(target.parent)
    work = Path(tempfile.mkdtemp(prefix=".filling-", dir=target.parent))
    try:
        cache = work / "cache"
        cache.mkdir()
        program = work / "cells.json"
        from grader.lesson import handout  # only to fill (once per machine): naming a cache reads no notebook

        program.write_text(json.dumps([handout.given_cells_in_order(lesson), lesson.compile_warmup]))
        env = dict(launch.kernel_env(work, devices.KernelStart(device=device)),
                   **launch.compile_cache_env(str(cache), writer=True))
        env["PATH"] = f"{Path(sys.prefix).resolve()}/bin:/usr/bin:/bin"
        try:
            done = subprocess.run([launch.python(), "-c", _FILL, str(program)], cwd=work, env=env,
                                  stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                  timeout=FILL_TIMEOUT, check=False)
        except (OSError, subprocess.TimeoutExpired):
            return ""
        if done.returncode != 0 or not any(cache.iterdir()):
            return ""
        return str(files.install_folder(cache, target))
    finally:
        shutil.rmtree(work, ignore_errors=True)
