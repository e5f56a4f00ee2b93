"""similarity: disguised copies are flagged, independently written solutions and untouched handouts are not; the
page shows the matching fragments side by side, escaped, and opens in Chromium."""

from __future__ import annotations

import copy
import json
import re
import subprocess
from pathlib import Path

import nbformat
import pytest
from click.testing import CliRunner
from conftest import patched_solution
from test_render import CHROME_FLAGS, CHROMIUM

from grader import cli
from grader.classroom import similarity
from grader.classroom.batch_folder import BatchFolder
from grader.lesson import catalog, handout
from grader.report import render_similarity

LESSON = "inference-scaling"
SUBS = Path(__file__).parent / "submissions" / "similarity"


def _disguised(notebook, renames, reorder=False, added=None):
    """A copy with its variables renamed, comments and spacing changed, functions reordered, statements added."""
    notebook = copy.deepcopy(notebook)
    for cell in notebook.cells:
        if cell.cell_type != "code" or not cell.get("id", "").startswith("answer-"):
            continue
        source = cell.source
        for old, new in renames.items():
            source = re.sub(rf"\b{old}\b", new, source)
        source = re.sub(r"#.*", "# worked this out myself", source).replace(" = ", "  =  ").replace("\n\n\n", "\n\n")
        if reorder:
            blocks = source.split("\n\ndef ")
            source = "\n\ndef ".join([blocks[0]] + blocks[1:][::-1])
        cell.source = source + "\n" + (added or {}).get(cell["id"], "")
    return notebook


def _class():
    lesson = catalog.get(LESSON)
    original = handout.solution_notebook(lesson)
    return {
        "orig": original,
        "copy1": _disguised(original, {"predictions": "preds", "rows_read": "total_rows", "waited": "wait_sum",
                                       "unit_saving": "delta", "baseline": "base_cost", "groups": "chunks"}),
        "copy2": _disguised(original, {"answers": "got", "calls": "n_calls", "general_work": "gw"}, reorder=True,
                            added={"answer-sweep": "assert sweep(1)['calls'] > 0\nprint('checked')",
                                   "answer-cache": "ratio = actual_combined / predicted_product"}),
        "indep1": patched_solution(LESSON, SUBS / "independent-loops.py"),
        "indep2": patched_solution(LESSON, SUBS / "independent-functional.py"),
        "blank1": handout.scaffold(lesson),
        "blank2": handout.scaffold(lesson),
    }


def test_disguised_copies_are_flagged_and_independent_work_and_untouched_handouts_are_not():
    report = similarity.analyse(_class(), handout.scaffold(catalog.get(LESSON)))
    flagged = {frozenset(p.students) for p in report.code if p.flagged}
    assert flagged == {frozenset(pair) for pair in (("orig", "copy1"), ("orig", "copy2"), ("copy1", "copy2"))}
    scores = {frozenset(p.students): p.score for p in report.code}
    for pair in (("orig", "indep1"), ("orig", "indep2"), ("indep1", "indep2"), ("blank1", "blank2")):
        assert scores.get(frozenset(pair), 0.0) < report.threshold, pair


def test_copied_explanations_are_reported_apart_from_code():
    lesson = catalog.get(LESSON)
    notebooks = {name: handout.scaffold(lesson) for name in ("ada", "ben", "cy")}
    mine = ("Batching pays because requests in one group share the region histories they read; the cache removes "
            "repeated subscribers, which thins the groups, so the two gains cannot simply multiply together.")
    notebooks["ada"].cells.append(nbformat.v4.new_markdown_cell(mine))
    notebooks["ben"].cells.append(nbformat.v4.new_markdown_cell(mine.replace("Batching pays", "Grouping helps")))
    notebooks["cy"].cells.append(nbformat.v4.new_markdown_cell(
        "I would pick 32: the wait stays short while most of the read savings are already there, and beyond it "
        "the last group of each period rarely fills."))
    report = similarity.analyse(notebooks, handout.scaffold(lesson))
    assert [(p.students, p.flagged) for p in report.prose if p.flagged] == [(("ada", "ben"), True)]
    assert not [p for p in report.code if p.flagged]


def test_the_page_shows_fragments_side_by_side_and_student_text_stays_text(tmp_path):
    notebooks = _class()
    for name in ("orig", "copy1"):  # a student's string inside the matching code, and a hostile student id
        sweep = next(cell for cell in notebooks[name].cells if cell.get("id") == "answer-sweep")
        sweep.source = sweep.source.replace('"calls": calls,', '"calls": calls, "note": "<script>alert(1)</script>",')
    lesson = catalog.get(LESSON)
    report = similarity.analyse({f"{name}<b>" if name == "copy1" else name: nb for name, nb in notebooks.items()},
                                handout.scaffold(lesson))
    html = render_similarity.similarity_html(report, lesson)
    assert "<script>" not in html and "&lt;script&gt;" in html and "copy1&lt;b&gt;" in html
    assert "flagged for review" in html and html.count("<mark>") > 10
    page = tmp_path / "similarity.html"
    page.write_text(html)
    if CHROMIUM:
        done = subprocess.run([CHROMIUM, *CHROME_FLAGS, f"--user-data-dir={tmp_path / 'profile'}", "--dump-dom",
                               page.as_uri()], capture_output=True, text=True, timeout=120)
        assert "score 1.0" in done.stdout and "<mark>" in done.stdout
        assert [line for line in done.stderr.splitlines() if "CONSOLE" in line or "Refused to" in line] == []


def test_the_command_reads_a_batch_and_writes_every_flagged_pair_as_json(tmp_path):
    out = tmp_path / "graded"
    (out / "notebooks").mkdir(parents=True)
    (out / "results").mkdir()
    for name, notebook in _class().items():
        nbformat.write(notebook, str(out / "notebooks" / f"{name}.ipynb"))
    (out / "results" / "orig.json").write_text(json.dumps({"schema": 1, "status": "graded", "lesson": LESSON, "student": "orig"}))
    done = CliRunner().invoke(cli.main, ["similarity", str(out), "--json", "-", "--threshold", "0.5"])
    assert done.exit_code == 0, done.output
    data = json.loads(done.output)
    assert data["threshold"] == 0.5
    flagged = [pair for pair in data["pairs"] if pair["flagged"]]
    assert sorted(sorted(p["students"]) for p in flagged) == [["copy1", "copy2"], ["copy1", "orig"], ["copy2", "orig"]]
    assert all(p["fragments"] and p["fragments"][0]["text"] for p in flagged)
    said = CliRunner().invoke(cli.main, ["similarity", str(out)])
    assert said.exit_code == 0 and "7 notebooks compared; 3 pair(s) flagged for review above 0.6" in said.output
    assert (out / "similarity.html").is_file()


@pytest.mark.parametrize("broken", ["{not json", "", "link"])
def test_a_notebook_that_cannot_be_read_is_left_out_not_a_crash(tmp_path, broken):
    out = tmp_path / "graded"
    (out / "notebooks").mkdir(parents=True)
    if broken == "link":  # never followed, even to a real notebook
        nbformat.write(handout.solution_notebook(catalog.get(LESSON)), str(tmp_path / "elsewhere.ipynb"))
        (out / "notebooks" / "eve.ipynb").symlink_to(tmp_path / "elsewhere.ipynb")
    else:
        (out / "notebooks" / "eve.ipynb").write_text(broken)
    nbformat.write(handout.scaffold(catalog.get(LESSON)), str(out / "notebooks" / "ada.ipynb"))
    report = similarity.of_batch(BatchFolder(out), catalog.get(LESSON))
    assert list(report.students) == ["ada"] and report.code == []


def test_a_notebook_whose_cells_cannot_be_read_costs_only_itself(monkeypatch):
    lesson = catalog.get(LESSON)
    real = similarity.written

    def fragile(student, notebook):
        if student == "eve":
            raise RecursionError("maximum recursion depth exceeded")  # what a pathological cell could cause
        return real(student, notebook)

    monkeypatch.setattr(similarity, "written", fragile)
    report = similarity.analyse({"ada": handout.solution_notebook(lesson), "eve": handout.scaffold(lesson),
                                 "bob": handout.solution_notebook(lesson)}, handout.scaffold(lesson))
    assert sorted(report.students) == ["ada", "bob"] and report.code[0].students == ("ada", "bob")
