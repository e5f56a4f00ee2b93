"""Load: a submission file becomes one validated nbformat-4 notebook.

`.ipynb` files from JupyterLab, classic Notebook, VS Code or Colab and `.py`
scripts (plain, or with `# %%` cell markers) are accepted. Stored outputs are
set aside as `as_submitted` (shown, never trusted) and cleared. Anything that
cannot be graded raises `SubmissionRejected` with a reason a student can act on.
"""

from __future__ import annotations

import ast
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import nbformat
from nbformat.v4.rwbase import rejoin_lines, strip_transient

from grader.base import files, shapes, syntax
from grader.base.errors import SubmissionRejected
from grader.intake.script import fill_ids, notebook_from_script

MAX_BYTES = 20 * 1024 * 1024
AS_SUBMITTED_CHARS = 4000
KERNEL = {"name": "python3", "display_name": "Python 3", "language": "python"}


@dataclass(frozen=True)
class StoredOutput:
    """A code cell's outputs as the notebook stored them: the student's claim, shown and never trusted."""

    cell_id: str
    text: str


@dataclass(frozen=True)
class Written:
    """A Markdown cell the scaffold tagged for the student's own words (a prediction or an explanation)."""

    cell_id: str
    kind: str
    text: str


@dataclass(frozen=True)
class Submission:
    """One submission, normalised and ready to run."""

    path: str
    """Where the file was read from."""
    student: str
    """Student id: the file name without its suffix, unless given."""
    digest: str
    """SHA-256 of the file's bytes: the gradebook's key for this version."""
    notebook: Any
    """The nbformat-4 notebook to run, outputs cleared, kernel forced to Python."""
    as_submitted: tuple[StoredOutput, ...] = ()
    """Stored outputs per code cell, unverified."""
    notes: tuple[str, ...] = ()
    """What normalisation changed that the student should know about."""
    lesson_hint: str | None = None
    """Lesson id found in the notebook metadata (written by `grader release`)."""
    explanations: tuple[Written, ...] = field(default=())
    """Markdown cells the scaffold tagged for the student's own words."""


def read(path: str | Path, student: str | None = None) -> Submission:
    """Read and normalise one submission, or raise `SubmissionRejected`."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in (".ipynb", ".py") and not path.is_symlink():
        if not path.exists():
            raise SubmissionRejected(f"{path}: no such file")
        raise SubmissionRejected(_not_graded(path.name, suffix))
    raw = _read(path)
    notebook, notes, as_submitted = _parsed(path.name, suffix, raw, quiet=True)
    return Submission(
        path=str(path),
        student=student or path.stem,
        digest=hashlib.sha256(raw).hexdigest(),
        notebook=notebook,
        as_submitted=as_submitted,
        notes=tuple(notes),
        lesson_hint=_lesson_hint(notebook),
        explanations=_explanations(notebook),
    )


def peek(raw: bytes, name: str) -> str | None:
    """What a submission's bytes would give `read` (SubmissionRejected with its reason, or the lesson its metadata
    names), from memory: the service asks it in the request, without a file, a temporary folder or the grader's
    own cells looked for (they change what runs, never whether the file can be read)."""
    suffix = Path(name).suffix.lower()
    if suffix not in (".ipynb", ".py"):
        raise SubmissionRejected(_not_graded(name, suffix))
    notebook, _, _ = _parsed(name, suffix, raw, quiet=False)
    return _lesson_hint(notebook)


def _not_graded(name: str, suffix: str) -> str:
    return f"{name}: '{suffix or 'no suffix'}' files are not graded; submit your .ipynb notebook or a .py script"


def _parsed(name: str, suffix: str, raw: bytes, quiet: bool) -> tuple[Any, list[str], tuple[StoredOutput, ...]]:
    """(the notebook, what normalising it changed, its stored outputs) from a file's bytes; the grader's own cells
    emptied where `quiet`."""
    if not raw.strip():
        raise SubmissionRejected(f"{name}: the file is empty; save your work and submit again")
    if len(raw) > MAX_BYTES:
        raise SubmissionRejected(f"{name}: over the {MAX_BYTES // 1024**2} MiB limit; clear large outputs and save again")
    text = _utf8(name, raw)
    try:
        notebook = notebook_from_script(text) if suffix == ".py" else _notebook_from_json(name, text)
        notes = _force_kernel(notebook)
        if quiet:
            _quiet_grader_cells(notebook)
        as_submitted = _take_outputs(notebook)
        _validate(name, notebook)
    except RecursionError:  # JSON (or code) nested deeper than any notebook is: refused before it costs more
        raise SubmissionRejected(f"{name}: nested too deeply to be a notebook (lists or objects inside each "
                                 "other thousands of levels deep); re-save it from Jupyter") from None
    return notebook, notes, as_submitted


def _lesson_hint(notebook: Any) -> str | None:
    meta = notebook.metadata.get("grader", {})
    return meta.get("lesson") if isinstance(meta, dict) and isinstance(meta.get("lesson"), str) else None


GRADER_CALLS = ("check", "submit")
"""The grader's own functions a notebook calls (`grader.check()`, `grader.submit()`)."""


def is_grader_cell(source: str) -> bool:
    """A cell that only imports the grader and calls its own functions: the grader's, not the student's work."""

    try:
        body = syntax.parse(source).body
    except (SyntaxError, ValueError, RecursionError):
        return False

    def grader_call(node: Any) -> bool:
        func = node.func if isinstance(node, ast.Call) else None
        return (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "grader"
                and func.attr in GRADER_CALLS) or (isinstance(func, ast.Name) and func.id in GRADER_CALLS)

    calls = 0
    for node in body:
        if isinstance(node, ast.Import) and all(alias.name == "grader" for alias in node.names):
            continue
        if isinstance(node, ast.ImportFrom) and node.module == "grader":
            continue
        if isinstance(node, (ast.Expr, ast.Assign)) and grader_call(node.value):
            calls += 1
            continue
        return False
    return calls > 0


def _quiet_grader_cells(notebook: Any) -> None:
    """The grader's own cells (`grader.check()`) are never run at grading and their stored output never compared:
    their source and outputs are emptied (an empty cell is not run)."""
    for cell in notebook.cells:
        if cell.cell_type == "code" and cell.source.strip() and is_grader_cell(cell.source):
            cell.source = ""
            cell.outputs = []
            cell.execution_count = None


def _read(path: Path) -> bytes:
    """The file's bytes, never through a link in its last component, nor from a FIFO or a device."""
    try:
        return files.read_regular(path, MAX_BYTES)
    except files.NotRegular as err:
        raise SubmissionRejected(f"{path.name}: {err.strerror}, not a regular file; submit the notebook file itself "
                                 "(links, devices and FIFOs are never read)") from None
    except FileNotFoundError:
        raise SubmissionRejected(f"{path}: no such file") from None
    except OSError as err:
        raise SubmissionRejected(f"{path.name}: cannot be read ({err.strerror or err})") from None


def _utf8(name: str, raw: bytes) -> str:
    if raw.startswith(b"\x89PNG"):
        raise SubmissionRejected(f"{name}: this is a PNG image, not a notebook; submit the .ipynb file itself")
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        raise SubmissionRejected(
            f"{name}: not UTF-8 text (bad byte at offset {err.start}); re-save it as UTF-8 from Jupyter or your editor"
        ) from None


def _notebook_from_json(name: str, text: str) -> Any:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as err:
        raise SubmissionRejected(
            f"{name}: not valid notebook JSON ({err.msg}: line {err.lineno}, column {err.colno}); re-save it from Jupyter"
        ) from None
    if not isinstance(data, dict):
        raise SubmissionRejected(f"{name}: not a notebook (expected a JSON object with 'cells')")
    major = data.get("nbformat")
    if not isinstance(major, int) or isinstance(major, bool):
        raise SubmissionRejected(f"{name}: no 'nbformat' version field; this is not a Jupyter notebook")
    if major < 4:
        raise SubmissionRejected(
            f"{name}: nbformat {major} is too old; open it in a current Jupyter and save it (nbformat 4) before submitting"
        )
    if major > 4:
        raise SubmissionRejected(f"{name}: nbformat {major} is newer than this grader reads (nbformat 4)")
    if not isinstance(data.get("cells"), list):
        raise SubmissionRejected(f"{name}: the notebook has no 'cells' list; re-save it from Jupyter")
    for index, cell in enumerate(data["cells"]):
        if not isinstance(cell, dict) or cell.get("cell_type") not in ("code", "markdown", "raw"):
            raise SubmissionRejected(f"{name}: cell {index + 1} is not a code, markdown or raw cell")
    _check_shape(name, data)
    for cell in data["cells"]:
        cell.setdefault("metadata", {})
        cell.setdefault("source", "")
        if cell["cell_type"] == "code":
            cell.setdefault("outputs", [])
            cell.setdefault("execution_count", None)
    data.setdefault("metadata", {})
    notebook = nbformat.from_dict(data)
    rejoin_lines(notebook)
    strip_transient(notebook)
    fill_ids(notebook)
    notebook.nbformat_minor = max(int(notebook.get("nbformat_minor", 0) or 0), 5)
    return notebook


# The fields normalising reads, with the types it needs; nbformat's own schema
# is checked after normalising. Everything else may be as loose as editors write it.
_TEXT = {"anyOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}]}
_SHAPE = {
    "type": "object",
    "properties": {
        "metadata": {"type": "object"},
        "nbformat_minor": {"type": "integer"},
        "cells": {"type": "array", "items": {
            "type": "object",
            "properties": {
                "metadata": {"type": "object"},
                "source": _TEXT,
                "attachments": {"type": "object"},
                "outputs": {"type": "array", "items": {
                    "type": "object",
                    "properties": {"output_type": {"type": "string"}, "text": _TEXT, "name": {"type": "string"},
                                   "data": {"type": "object"}, "metadata": {"type": "object"},
                                   "ename": {"type": "string"}, "evalue": {"type": "string"},
                                   "traceback": {"type": "array", "items": {"type": "string"}}},
                    "required": ["output_type"]}},
            }}},
    },
}


_NOTEBOOK_SHAPE = shapes.Shape(_SHAPE, draft="7")


def warm() -> None:
    """Compile the notebook shape check now (a batch parent does this once, before forking)."""
    _NOTEBOOK_SHAPE.warm()


def _check_shape(name: str, data: dict[str, Any]) -> None:
    """Reject, with the place named, a notebook whose fields have types no editor writes."""
    error = _NOTEBOOK_SHAPE.first_error(data)
    if error is None:
        return
    path = list(error.absolute_path)
    if len(path) >= 2 and path[0] == "cells" and isinstance(path[1], int):
        where = f"cell {path[1] + 1}" + (f", field '{'/'.join(map(str, path[2:]))}'" if path[2:] else "")
    else:
        where = "field '" + "/".join(map(str, path)) + "'" if path else "top level"
    wanted = {"object": "an object", "array": "a list", "integer": "a whole number", "string": "text"}
    kind = wanted.get(error.validator_value, "valid") if error.validator == "type" else "text or a list of text"
    raise SubmissionRejected(f"{name}: {where} is not {kind}; re-save the notebook from Jupyter")


def _force_kernel(notebook: Any) -> list[str]:
    notes = []
    spec = notebook.metadata.get("kernelspec")
    name = spec.get("name") if isinstance(spec, dict) else None
    if name and not str(name).startswith("python"):
        notes.append(f"the notebook asked for kernel '{name}'; it was run with the grader's Python 3 kernel")
    notebook.metadata["kernelspec"] = dict(KERNEL)
    return notes


def _take_outputs(notebook: Any) -> tuple[StoredOutput, ...]:
    kept = []
    for cell in notebook.cells:
        if cell.cell_type != "code":
            cell.pop("outputs", None)
            cell.pop("execution_count", None)
            continue
        outputs = cell.get("outputs") or []
        text = "".join(output_text(out) for out in outputs if isinstance(out, dict))
        if text:
            kept.append(StoredOutput(cell["id"], text[:AS_SUBMITTED_CHARS]))
        cell["outputs"] = []
        cell["execution_count"] = None
    return tuple(kept)


def output_text(out: dict[str, Any]) -> str:
    """The text a person would read in one stored output."""
    kind = out.get("output_type")
    if kind == "stream":
        text = out.get("text", "")
    elif kind in ("execute_result", "display_data"):
        text = (out.get("data") or {}).get("text/plain", "")
    elif kind == "error":
        text = f"{out.get('ename', '')}: {out.get('evalue', '')}\n"
    else:
        text = ""
    return "".join(text) if isinstance(text, list) else str(text)


def _validate(name: str, notebook: Any) -> None:
    try:
        nbformat.validate(notebook, version=4)
    except nbformat.ValidationError as err:
        where = "/".join(str(p) for p in err.absolute_path) or "top level"
        message = str(err.message).splitlines()[0][:160]
        raise SubmissionRejected(f"{name}: not a valid nbformat-4 notebook at {where}: {message}") from None


def _explanations(notebook: Any) -> tuple[Written, ...]:
    found = []
    for cell in notebook.cells:
        tags = cell.get("metadata", {}).get("tags", [])
        if cell.cell_type == "markdown" and isinstance(tags, list) and ("explanation" in tags or "prediction" in tags):
            found.append(Written(cell["id"], "prediction" if "prediction" in tags else "explanation",
                                 cell.source[:AS_SUBMITTED_CHARS]))
    return tuple(found)
