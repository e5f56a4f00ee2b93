"""attempt: what one kernel's run keeps of a notebook's output (caps per cell, per notebook, and for probes)."""

from __future__ import annotations

import nbformat

from grader.base.limits import Limits
from grader.run.attempt import OutputCapped
from grader.run.cells import TRUNCATED


def _stream(text):
    return {"msg_type": "stream", "header": {"msg_type": "stream"}, "parent_header": {"msg_id": "m"},
            "content": {"name": "stdout", "text": text}}


def _client(**limits):
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x") for _ in range(3)])
    client = OutputCapped(notebook, limits=Limits(**limits), student_cells=2)
    client.reset_execution_trackers()  # as nbclient does before it runs a notebook,
    client.clear_before_next_output = False  # and before each cell
    return client


def test_a_cell_keeps_its_output_up_to_its_cap_then_says_it_was_cut_once():
    client = _client(cell_output_chars=10, notebook_output_chars=1000)
    outs = []
    for text in ("12345", "67890", "abc", "def"):
        client.output(outs, _stream(text), None, 0)
    texts = [out.get("text") for out in outs]
    assert "".join(t for t in texts if t != TRUNCATED) == "1234567890"  # exactly the cap, nothing past it
    assert texts.count(TRUNCATED) == 1


def test_the_whole_notebook_has_a_cap_too_and_probe_cells_are_not_counted_in_it():
    client = _client(cell_output_chars=100, notebook_output_chars=12, probe_payload_bytes=50)
    first, second, probe = [], [], []
    client.output(first, _stream("x" * 10), None, 0)
    client.output(second, _stream("y" * 10), None, 1)  # 20 > 12 over the notebook: cut
    client.output(probe, _stream("z" * 40), None, 2)   # the probe's answer (cell 2) has its own bound
    assert first[0]["text"] == "x" * 10 and second[0]["text"] == TRUNCATED
    assert probe[0]["text"] == "z" * 40


def test_an_error_is_always_kept_but_short():
    client = _client(cell_output_chars=5)
    outs = []
    error = {"msg_type": "error", "header": {"msg_type": "error"}, "parent_header": {"msg_id": "m"},
             "content": {"ename": "ValueError", "evalue": "v" * 10**5, "traceback": ["line"] * 500}}
    client.output(outs, _stream("123456"), None, 0)
    client.output(outs, error, None, 0)
    kept = [out for out in outs if out.get("output_type") == "error"]
    assert len(kept) == 1 and len(kept[0]["evalue"]) == 2000 and len(kept[0]["traceback"]) == 40
