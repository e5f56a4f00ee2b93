"""load: every editor's notebook is accepted; anything else is rejected with one actionable line."""

from __future__ import annotations

import json

import nbformat
import pytest

from grader.base.errors import SubmissionRejected
from grader.intake import load


def _raw(tmp_path, name, content):
    path = tmp_path / name
    path.write_bytes(content if isinstance(content, bytes) else content.encode("utf-8"))
    return path


BAD = {
    "invalid-json.ipynb": ('{"cells": [', "not valid notebook JSON"),
    "empty.ipynb": ("", "empty"),
    "blank.ipynb": ("   \n", "empty"),
    "nbformat3.ipynb": (json.dumps({"nbformat": 3, "nbformat_minor": 0, "worksheets": [], "metadata": {}}), "nbformat 3"),
    "picture.ipynb": (b"\x89PNG\r\n\x1a\n" + bytes(range(256)), "PNG image"),
    "latin1.ipynb": ('{"cells": [], "note": "caf\xe9"}'.encode("latin-1"), "not UTF-8"),
    "no-cells.ipynb": (json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {}}), "no 'cells'"),
    "a-list.ipynb": ("[1, 2, 3]", "not a notebook"),
    "no-version.ipynb": (json.dumps({"cells": [], "metadata": {}}), "nbformat"),
    "notes.txt": ("hello", "submit your .ipynb"),
    "bad-cell.ipynb": (json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [{"cell_type": "bogus"}]}),
                       "cell 1"),
    "list-metadata.ipynb": (json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [
        {"cell_type": "markdown", "metadata": {}, "source": "# a"},
        {"cell_type": "code", "metadata": ["tags"], "source": "x = 1", "outputs": [], "execution_count": None}]}),
        "cell 2, field 'metadata' is not an object"),
    "number-source.ipynb": (json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [
        {"cell_type": "code", "metadata": {}, "source": 42, "outputs": [], "execution_count": None}]}),
        "cell 1, field 'source' is not text"),
    "odd-output.ipynb": (json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [
        {"cell_type": "code", "metadata": {}, "source": "1", "outputs": [{"output_type": "stream", "text": {"a": 1}}],
         "execution_count": None}]}), "cell 1, field 'outputs/0/text'"),
    "list-notebook-metadata.ipynb": (json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": [], "cells": []}),
                                     "field 'metadata' is not an object"),
}


@pytest.mark.parametrize("name", sorted(BAD))
def test_bad_input_is_rejected_with_one_line(tmp_path, name):
    content, phrase = BAD[name]
    with pytest.raises(SubmissionRejected) as err:
        load.read(_raw(tmp_path, name, content))
    message = str(err.value)
    assert phrase in message
    assert "\n" not in message and len(message) < 250
    assert message.startswith(name)


def test_older_minor_version_without_ids_is_upgraded(tmp_path):
    data = {"nbformat": 4, "nbformat_minor": 2, "metadata": {},
            "cells": [{"cell_type": "code", "metadata": {}, "source": ["x = 1\n", "y = 2"], "outputs": [],
                       "execution_count": None},
                      {"cell_type": "markdown", "metadata": {}, "source": "# hi"}]}
    sub = load.read(_raw(tmp_path, "old.ipynb", json.dumps(data)))
    assert sub.notebook.nbformat_minor == 5
    assert [c["id"] for c in sub.notebook.cells] == ["cell-1", "cell-2"]
    assert sub.notebook.cells[0].source == "x = 1\ny = 2"
    nbformat.validate(sub.notebook)


def test_other_kernels_run_with_python_and_a_note(tmp_path):
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("1")],
                                  metadata={"kernelspec": {"name": "julia-1.9", "display_name": "Julia", "language": "julia"}})
    path = tmp_path / "julia.ipynb"
    nbformat.write(nb, str(path))
    sub = load.read(path)
    assert sub.notebook.metadata["kernelspec"]["name"] == "python3"
    assert any("julia-1.9" in note for note in sub.notes)


def test_colab_and_vscode_metadata_and_outputs_are_accepted(tmp_path):
    data = {
        "nbformat": 4, "nbformat_minor": 0,
        "metadata": {"colab": {"provenance": [], "name": "x.ipynb"}, "accelerator": "GPU",
                     "vscode": {"interpreter": {"hash": "abc"}},
                     "widgets": {"application/vnd.jupyter.widget-state+json": {"state": {}}}},
        "cells": [
            {"cell_type": "code", "metadata": {"id": "XyZ", "colab": {"base_uri": "https://localhost/"}},
             "source": "print(1)", "execution_count": 3,
             "outputs": [{"output_type": "stream", "name": "stdout", "text": ["1\n"]},
                         {"output_type": "display_data", "metadata": {},
                          "data": {"text/plain": ["<Figure>"], "image/png": "iVBORw0KGgo="}}]},
            {"cell_type": "markdown", "metadata": {}, "source": "![img](attachment:a.png)",
             "attachments": {"a.png": {"image/png": "iVBORw0KGgo="}}},
        ],
    }
    sub = load.read(_raw(tmp_path, "colab.ipynb", json.dumps(data)))
    assert sub.notebook.cells[0].outputs == []
    assert sub.notebook.cells[0].execution_count is None
    assert sub.as_submitted[0].text == "1\n<Figure>"


def test_digest_and_student_id(tmp_path):
    path = _raw(tmp_path, "alice.py", "x = 1\n")
    sub = load.read(path)
    assert sub.student == "alice"
    assert len(sub.digest) == 64


def test_plain_script_is_one_cell_per_statement():
    nb = load.notebook_from_script("import math\n\n# helper\ndef f(x):\n    return x\n\n@staticmethod\ndef g():\n    pass\nx = f(1)\n")
    assert [c.source for c in nb.cells] == ["import math", "# helper\ndef f(x):\n    return x",
                                            "@staticmethod\ndef g():\n    pass", "x = f(1)"]


def test_percent_markers_make_cells_with_ids_and_tags():
    nb = load.notebook_from_script("a = 1\n# %% [markdown] id=intro tags=x,y\n# # Title\n#\n# text\n# %% id=code-1\nb = 2\n")
    assert [(c.cell_type, c["id"]) for c in nb.cells][1:] == [("markdown", "intro"), ("code", "code-1")]
    assert nb.cells[1].source == "# Title\n\ntext"
    assert nb.cells[1].metadata["tags"] == ["x", "y"]
    assert nb.cells[0].source == "a = 1"


def test_a_script_with_a_syntax_error_is_one_cell():
    nb = load.notebook_from_script("x = (\n")
    assert len(nb.cells) == 1


def test_explanation_cells_are_kept_for_reports(tmp_path):
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("My words <b>here</b>", metadata={"tags": ["explanation"]})])
    path = tmp_path / "e.ipynb"
    nbformat.write(nb, str(path))
    assert load.read(path).explanations[0].text == "My words <b>here</b>"


def test_a_script_marker_whose_id_is_no_cell_id_gets_one(tmp_path):
    """A student's `# %% id=...` is text: an id a notebook may not hold, or one used twice, is replaced, never a
    validation error out of the grader."""
    text = "# %% id=$(touch${IFS}x) tags=given\nx = 1\n# %% id=dup\ny = 2\n# %% id=dup\nz = 3\n# %% id=..\\\\a\nw = 4\n"
    nb = load.notebook_from_script(text)
    assert [c["id"] for c in nb.cells] == ["cell-1", "dup", "cell-3", "cell-4"]
    assert [c.source for c in nb.cells] == ["x = 1", "y = 2", "z = 3", "w = 4"]
    path = tmp_path / "main.py"
    path.write_text(text)
    assert [c["id"] for c in load.read(path).notebook.cells] == ["cell-1", "dup", "cell-3", "cell-4"]
