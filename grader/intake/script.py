"""A `.py` script as a notebook: `# %%` markers (jupytext's percent format) make cells, else one cell per statement;
cell ids filled in where a notebook lacks them or repeats them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from grader.base import syntax

_MARKER = re.compile(r"^# ?%%(?P<rest>.*)$")


def fill_ids(notebook: Any) -> None:
    seen: set[str] = set()
    for index, cell in enumerate(notebook.cells):
        cell_id = cell.get("id")
        if not isinstance(cell_id, str) or not re.fullmatch(r"[a-zA-Z0-9-_]{1,64}", cell_id) or cell_id in seen:
            cell_id = f"cell-{index + 1}"
            while cell_id in seen:
                cell_id += "x"
            cell["id"] = cell_id
        seen.add(cell_id)


@dataclass(frozen=True)
class ScriptCell:
    """One cell of a script, read without the notebook library (a batch's template is started from these)."""

    kind: str
    """"code" or "markdown"."""
    source: str
    cell_id: str | None
    tags: tuple[str, ...]


def script_cells(text: str) -> list[ScriptCell]:
    """A `.py` script's cells: `# %%` markers make cells; else one code cell per statement."""
    lines = text.splitlines()
    if any(_MARKER.match(line) for line in lines):
        cells = [_cell_from_percent(header, body) for header, body in _percent_chunks(lines)]
        return [cell for cell in cells if cell is not None]
    return [ScriptCell("code", source, None, ()) for source in _statements(text)]


def notebook_from_script(text: str) -> Any:
    """A `.py` script as a notebook: `# %%` markers make cells; else one cell per statement."""
    from nbformat.v4 import new_notebook

    cells = []
    for each in script_cells(text):
        cell = _cell(each)
        if each.cell_id:
            cell["id"] = each.cell_id
        if each.tags:
            cell.metadata["tags"] = list(each.tags)
        cells.append(cell)
    notebook = new_notebook()
    notebook.cells = cells  # a marker's id is the writer's text: fill_ids replaces one that is no cell id, or repeats
    fill_ids(notebook)
    return notebook


def _cell(each: ScriptCell) -> Any:
    """A cell as nbformat's new_code_cell and new_markdown_cell make it, without their check of each cell against
    the schema (jsonschema, nine tenths of reading a script): the notebook as a whole is checked once it is read."""
    from nbformat import NotebookNode
    from nbformat.v4.nbbase import random_cell_id

    if each.kind == "markdown":
        return NotebookNode(id=random_cell_id(), cell_type="markdown", source=each.source, metadata=NotebookNode())
    return NotebookNode(id=random_cell_id(), cell_type="code", metadata=NotebookNode(), execution_count=None,
                        source=each.source, outputs=[])


def _percent_chunks(lines: list[str]) -> list[tuple[str | None, list[str]]]:
    chunks: list[tuple[str | None, list[str]]] = [(None, [])]
    for line in lines:
        match = _MARKER.match(line)
        if match:
            chunks.append((match.group("rest"), []))
        else:
            chunks[-1][1].append(line)
    return chunks


def parse_marker(rest: str) -> tuple[str, str | None, list[str]]:
    """Split what follows `# %%` into (cell type, id, tags): `[markdown] id=x tags=a,b`."""
    kind = "markdown" if "[markdown]" in rest or "[md]" in rest else "code"
    cell_id = None
    tags: list[str] = []
    for token in rest.split():
        if token.startswith("id="):
            cell_id = token[3:]
        elif token.startswith("tags="):
            tags = [t for t in token[5:].split(",") if t]
    return kind, cell_id, tags


def _cell_from_percent(header: str | None, body: list[str]) -> ScriptCell | None:
    source = "\n".join(body).strip("\n")
    if header is None:
        return ScriptCell("code", source, None, ()) if source.strip() else None
    kind, cell_id, tags = parse_marker(header)
    if kind == "markdown":
        source = "\n".join(_uncomment(line) for line in body).strip("\n")
    return ScriptCell(kind, source, cell_id, tuple(tags))


def _uncomment(line: str) -> str:
    if line.startswith("# "):
        return line[2:]
    return "" if line.strip() == "#" else line


def _statements(text: str) -> list[str]:
    try:
        tree = syntax.parse(text)
    except SyntaxError:
        return [text]
    lines = text.splitlines()
    sources = []
    start = 0
    for node in tree.body:
        end = node.end_lineno or node.lineno
        sources.append("\n".join(lines[start:end]))
        start = end
    if sources and start < len(lines):
        sources[-1] += "\n" + "\n".join(lines[start:])
    return [source.strip("\n") for source in sources if source.strip()] or [text]
