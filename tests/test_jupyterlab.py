"""The student's notebook as home: `grader.check()` in a real JupyterLab, driven in Debian's chromium.

A student fills an answer, runs it, saves and checks: no "save first", the verdicts as a table in the cell, and
nothing about stored outputs; a cell run and not saved is warned about. JupyterLab serves on 127.0.0.1 only, with a
token, and is ended by the test.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import nbformat
import pytest

from grader.lesson import catalog, handout

pytestmark = [pytest.mark.browser, pytest.mark.kernel]
ROOT = Path(__file__).resolve().parent.parent
LESSON = "inference-scaling"
TOKEN = "the-test-token"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def lab(tmp_path):
    pytest.importorskip("jupyterlab")
    if shutil.which("chromium") is None:
        pytest.skip("Debian's chromium is not installed (.ci/run installs it)")
    lesson = catalog.get(LESSON)
    book = handout.solution_notebook(lesson)
    answers = handout.answer_cells(lesson)
    stub = next(c for c in handout.scaffold(lesson).cells if c.get("id") == "answer-crossover")
    for cell in book.cells:  # the handout with every answer but crossover's, which the student writes in the page
        if cell.get("id") == "answer-crossover":
            cell.source = stub.source
    book.cells.append(nbformat.v4.new_code_cell("import grader\ngrader.check()"))
    book.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(book, str(tmp_path / "hw.ipynb"))
    port = _free_port()
    settings = tmp_path / "settings" / "@jupyterlab" / "apputils-extension"
    settings.mkdir(parents=True)
    (settings / "notification.jupyterlab-settings").write_text('{"fetchNews": "false", "checkForUpdates": false}')
    env = dict(os.environ, JUPYTERLAB_SETTINGS_DIR=str(tmp_path / "settings"), JUPYTER_CONFIG_DIR=str(tmp_path / "config"), JUPYTER_DATA_DIR=str(tmp_path / "data"),
               JUPYTER_RUNTIME_DIR=str(tmp_path / "runtime"), HOME=str(tmp_path))
    log = (tmp_path / "lab.log").open("w")
    server = subprocess.Popen(
        [sys.executable, "-m", "jupyterlab", "--no-browser", "--ip=127.0.0.1", f"--port={port}",
         f"--ServerApp.token={TOKEN}", f"--ServerApp.root_dir={tmp_path}", "--ServerApp.open_browser=False",
         "--LabApp.news_url=", "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
         "--ServerApp.allow_root=True"],
        cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=log, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"{url}/api/status?token={TOKEN}", timeout=2):  # closed: no socket left to GC
                break
        except OSError:
            time.sleep(0.5)
    else:
        os.killpg(server.pid, 9)
        server.wait()
        log.close()
        pytest.fail("JupyterLab did not start: " + (tmp_path / "lab.log").read_text()[-2000:])
    try:
        yield url, tmp_path, answers["answer-crossover"].source
    finally:
        os.killpg(server.pid, 9)
        server.wait()
        log.close()


def _cell(page, index):
    return page.locator(".jp-Notebook .jp-Cell").nth(index)


def _run(page, index):
    _cell(page, index).click()
    page.keyboard.press("Escape")
    page.keyboard.press("Shift+Enter")


def test_a_student_fills_an_answer_saves_and_checks_in_jupyterlab(lab):
    from playwright.sync_api import expect, sync_playwright

    url, folder, answer = lab
    book = nbformat.read(folder / "hw.ipynb", as_version=4)
    where = next(i for i, c in enumerate(book.cells) if c.get("id") == "answer-crossover")
    last = len(book.cells) - 1
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=shutil.which("chromium"), args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.goto(f"{url}/lab/tree/hw.ipynb?token={TOKEN}")
            page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=60_000)
            expect(page.locator("#jp-main-statusbar")).to_contain_text("Idle", timeout=90_000)  # the kernel is up
            editor = _cell(page, where).locator(".cm-content")
            editor.click()
            page.keyboard.press("Control+a")
            page.keyboard.insert_text(answer)  # a multi-line cell, stored as a list of lines
            page.keyboard.press("Shift+Enter")  # run it (it defines the functions)
            page.keyboard.press("Control+s")
            time.sleep(1.5)
            _run(page, last)
            table = _cell(page, last).locator(".grader-check table")
            expect(table).to_be_visible(timeout=120_000)
            shown = _cell(page, last).locator(".jp-OutputArea").inner_text()
            assert "save first" not in shown and "stored output" not in shown
            assert "crossover" in shown and "passed" in shown and "not graded yet" in shown
            page.keyboard.press("Control+s")  # the check's own output is saved with the notebook
            time.sleep(1.5)
            _run(page, last)
            expect(_cell(page, last).locator(".grader-check table")).to_be_visible(timeout=120_000)
            assert "stored output" not in _cell(page, last).locator(".jp-OutputArea").inner_text()
            _cell(page, last - 1).scroll_into_view_if_needed()
            page.mouse.wheel(0, 200)
            time.sleep(0.5)
            page.screenshot(path=str(folder / "check.png"), full_page=False)
            shutil.copy(folder / "check.png", ROOT / "docs" / "check.png")
            # a cell run and not saved: the check says so
            _cell(page, where).locator(".cm-content").click()
            page.keyboard.press("Control+End")
            page.keyboard.insert_text("\n# one more line, run and not saved")
            page.keyboard.press("Shift+Enter")
            _run(page, last)
            expect(_cell(page, last).locator(".grader-check")).to_contain_text("save first", timeout=120_000)
        finally:
            browser.close()
