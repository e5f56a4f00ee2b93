"""finish: a result's reports drawn, its notebook serialised, and the signature binding it to them."""

from __future__ import annotations

import hashlib

import nbformat
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from grader.judge.verdict import ExerciseResult
from grader.report import finish
from grader.result import record, sign
from grader.result.parts import Explanation, RunFacts


def _result(**changes):
    verdict = ExerciseResult("ex", "failed", 0.0, 2.0, "simulated", ("`f(1)`: expected 2, got 3",))
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1")])
    fields = dict(status="graded", lesson=None, student="ada <b>", score=0.0, max_score=2.0, exercises=(verdict,),  # noqa: C408
                  mode="check", run=RunFacts(1, 0.5, (), None, False),
                  digest="d" * 64, submission="ada.ipynb", graded_at="2026-12-05T00:00:00+00:00",
                  notebook=notebook)
    fields.update(changes)
    return record.GradeResult(**fields)


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def test_drawn_holds_both_reports_and_the_notebook_as_text():
    graded = finish.drawn(_result())
    assert graded.result.notebook is None  # the notebook travels as text, not as a live object
    assert nbformat.reads(graded.notebook, as_version=4).cells[0].source == "x = 1"
    assert "ada &lt;b&gt;" in graded.report_html and "ada <b>" not in graded.report_html  # the student's id is text
    assert "expected 2, got 3" in graded.report_md


def test_the_sealed_result_names_the_digests_of_its_files_and_verifies():
    key = Ed25519PrivateKey.generate()
    graded = finish.drawn(_result())
    data = graded.sealed(key)
    assert data["digests"]["report"] == sha256(graded.report_html)
    assert data["digests"]["report_md"] == sha256(graded.report_md)
    assert data["digests"]["notebook"] == sha256(graded.notebook)
    assert data["digests"]["submission"] == "d" * 64
    assert sign.check(data, key.public_key()) == ("intact", "")
    assert sign.check(dict(data, score=2.0), key.public_key())[0] == "altered"
    assert graded.sealed(None)["signature"] is None  # no key: marked unsigned, never left ambiguous


def test_a_written_result_reads_back_as_the_same_record():
    result = finish.drawn(_result()).result
    assert record.read_result(result.to_dict()) == result
    rejected = _result(status="rejected", error="the file is empty", exercises=(), notebook=None)
    back = record.read_result(rejected.to_dict())
    assert back.error == "the file is empty" and "run" not in rejected.to_dict()  # a rejection carries no run


def test_values_that_break_a_report_cost_the_values_not_the_report(monkeypatch):
    from grader.report import render

    drawn = render.report_html

    def fragile(result):  # a report that cannot show what the student wrote
        if result.explanations:
            raise ValueError("unshowable")
        return drawn(result)

    monkeypatch.setattr(render, "report_html", fragile)
    html = finish.safe_report(_result(explanations=(Explanation("c", "explanation", "why"),)))
    assert "could not be shown in this report (ValueError: unshowable)" in html and "Score 0 / 2" in html


def test_the_notebook_text_is_what_nbformat_writes_outputs_and_all():
    """The worker's notebook text skips nbformat's second validation, never a byte of its writer: outputs,
    non-ASCII text and metadata come out as nbformat.writes puts them."""
    cell = nbformat.v4.new_code_cell("print('Zürich ✓')", execution_count=3)
    cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text="Zürich ✓\n"),
                    nbformat.v4.new_output("execute_result", data={"text/plain": "[1,\n 2]"}, execution_count=3)]
    notebook = nbformat.v4.new_notebook(cells=[cell, nbformat.v4.new_markdown_cell("# T\n\nb")],
                                        metadata={"kernelspec": {"name": "python3", "display_name": "Python 3"},
                                                  "grader": {"lesson": "x"}})
    assert finish.drawn(_result(notebook=notebook)).notebook == nbformat.writes(notebook)
