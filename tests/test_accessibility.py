"""Every page a student or an instructor reads, checked as assistive technology and a phone meet it: axe-core (the
engine itself, as axe-playwright-python bundles it) with the WCAG 2.0, 2.1 and 2.2 A and AA rules in Debian's
chromium, and at 360 x 740 CSS px no page scrolls sideways (a wide table or the figure scrolls inside its own box)
and no text of the page is under 12 px. A page template nobody checks here fails `test_every_page_is_checked`.

The pages come from real runs: a batch of four inference-scaling notebooks (the reports, the dashboard, similarity),
a `grade --html`, a portfolio, the review page served on loopback, the service's pages served by its app, and the
LTI pages as the service renders them.
"""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import sys
import threading
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import FAST

pytestmark = [pytest.mark.browser, pytest.mark.kernel]
ROOT = Path(__file__).resolve().parent.parent
LESSON = "inference-scaling"
TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "wcag22aa"]
PHONE = {"width": 360, "height": 740}
CHECKED = {"report.html.j2", "dashboard.html.j2", "similarity.html.j2", "portfolio/index.html.j2", "review.html.j2",
           "serve_student.html.j2", "serve_instructor.html.j2", "lti.html.j2"}
"""Every template of a page a person reads; each is loaded below."""

SMALL_TEXT = """() => {
  const small = [];
  for (const el of document.querySelectorAll('body *')) {
    if (el.closest('svg')) continue;  // the figure: it keeps its drawn size and scrolls in its box
    const own = [...el.childNodes].some(n => n.nodeType === 3 && n.textContent.trim());
    const box = el.getBoundingClientRect();
    if (!own || !box.width || !box.height || getComputedStyle(el).visibility === 'hidden') continue;
    const size = parseFloat(getComputedStyle(el).fontSize);
    if (size < 12) small.push(`${el.tagName.toLowerCase()} ${size.toFixed(1)}px: ${el.textContent.trim().slice(0, 30)}`);
  }
  return small;
}"""


WIDEST = """(limit) => {
  const scrolls = e => { for (let a = e.parentElement; a; a = a.parentElement) {
    if (getComputedStyle(a).overflowX !== 'visible') return true; } return false; };
  const wide = [...document.querySelectorAll('body *')].filter(e => e.getBoundingClientRect().right > limit + 1
                                                                   && !scrolls(e));
  const innermost = wide.filter(e => !wide.some(o => o !== e && e.contains(o)));
  return innermost.slice(0, 3).map(e => e.tagName.toLowerCase() + (e.id ? '#' + e.id : '') + ' "'
                                   + e.textContent.trim().slice(0, 24) + '"').join(', ');
}"""


def _chromium() -> str:
    found = shutil.which("chromium")
    if found is None:
        pytest.skip("Debian's chromium is not installed (.ci/run installs it)")
    pytest.importorskip("axe_playwright_python", reason="axe-playwright-python (the test extra) is not installed")
    return found


def _grader(*args: str, cwd: Path = ROOT) -> None:
    done = subprocess.run([sys.executable, "-m", "grader", *args], capture_output=True, text=True, timeout=600, cwd=cwd)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.fixture(scope="module")
def pages(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The files a batch, a grade and a portfolio write, by page name."""
    import nbformat

    from grader.lesson import catalog, handout

    root = tmp_path_factory.mktemp("a11y")
    folder = root / "in"
    folder.mkdir()
    for student, said in (("ada", "Both come from the same rows."), ("ben", "Both come from the same rows."),
                          ("cleo", "They multiply."), ("dev", None)):
        notebook = handout.solution_notebook(catalog.get(LESSON))
        if said:
            next(c for c in notebook.cells if c.get("id") == "prediction").source = "## Your prediction\n\n" + said
        nbformat.write(notebook, str(folder / f"{student}.ipynb"))
    timeout = str(FAST.cell_timeout)
    _grader("batch", str(folder), "--lesson", LESSON, "--out", str(root / "out"), "--cell-timeout", timeout)
    _grader("grade", str(folder / "ada.ipynb"), "--html", str(root / "ada.html"), "--json", str(root / "ada.json"),
            "--cell-timeout", timeout)
    _grader("portfolio", str(root / "out" / "results" / "ada.json"), "--out", str(root / "portfolio.zip"))
    with zipfile.ZipFile(root / "portfolio.zip") as archive:
        archive.extractall(root / "portfolio")
    return {"report (grade --html)": root / "ada.html", "report (a batch's)": root / "out" / "reports" / "cleo.html",
            "dashboard": root / "out" / "index.html", "similarity": root / "out" / "similarity.html",
            "portfolio": root / "portfolio" / "index.html", "batch folder": root / "out"}


def _checked(page: Any, name: str) -> list[str]:
    """What is wrong with the page now, in one line each: axe's violations, a sideways scroll, small text."""
    from axe_playwright_python.sync_playwright import Axe

    found = Axe().run(page, options={"runOnly": {"type": "tag", "values": TAGS}}).response["violations"]
    problems = [f"{name}: {v['id']} ({v['impact']}): {v['help']} at {v['nodes'][0]['target']}" for v in found]
    width = page.evaluate("document.documentElement.scrollWidth")
    if page.viewport_size == PHONE and width > PHONE["width"]:
        widest = page.evaluate(WIDEST, PHONE["width"])
        problems.append(f"{name}: {width} px wide at {PHONE['width']} px (it scrolls sideways; the first too wide: "
                        f"{widest})")
    if page.viewport_size == PHONE:
        problems += [f"{name}: text under 12 px: {said}" for said in page.evaluate(SMALL_TEXT)[:3]]
    return problems


WCAG22 = ["1.1.1", "1.2.1", "1.2.2", "1.2.3", "1.2.4", "1.2.5", "1.3.1", "1.3.2", "1.3.3", "1.3.4", "1.3.5", "1.4.1", "1.4.2", "1.4.3", "1.4.4", "1.4.5", "1.4.10", "1.4.11", "1.4.12", "1.4.13", "2.1.1", "2.1.2", "2.1.4", "2.2.1", "2.2.2", "2.3.1", "2.4.1", "2.4.2", "2.4.3", "2.4.4", "2.4.5", "2.4.6", "2.4.7", "2.4.11", "2.5.1", "2.5.2", "2.5.3", "2.5.4", "2.5.7", "2.5.8", "3.1.1", "3.1.2", "3.2.1", "3.2.2", "3.2.3", "3.2.4", "3.2.6", "3.3.1", "3.3.2", "3.3.3", "3.3.4", "3.3.7", "3.3.8", "4.1.2", "4.1.3"]
"""WCAG 2.2's success criteria at levels A and AA (4.1.1 Parsing is obsolete in 2.2): 55, from the W3C's list."""
TESTED_HERE = {"1.4.3", "1.4.10", "2.1.1", "2.1.4", "2.4.1", "2.4.2", "2.5.8", "3.1.1", "4.1.2"}
"""The criteria this module's checks prove (axe's rules on every page, the reflow at 360 px, the keyboard-only
runs of the student's page and the review page's shortcuts)."""


def test_the_conformance_report_covers_every_criterion_once_and_says_supports_where_a_test_proves_it() -> None:
    import re

    text = (ROOT / "docs" / "accessibility.md").read_text()
    rows = re.findall(r"^\| (\d\.\d+\.\d+) [^|]+\| (A|AA) \| ([^|]+?) \| (.+) \|$", text, re.M)
    said = {number: conformance for number, _, conformance, _ in rows}
    assert [number for number, *_ in rows] == WCAG22  # each once, in the standard's order
    assert set(said.values()) <= {"Supports", "Partially supports", "Does not support", "Not applicable"}
    assert all(said[number] == "Supports" for number in TESTED_HERE)
    assert "(docs/accessibility.md)" in (ROOT / "README.md").read_text()


def test_every_page_is_checked() -> None:
    templates = {str(p.relative_to(ROOT / "templates")) for p in (ROOT / "templates").rglob("*.html.j2")
                 if not p.name.startswith("_")}
    assert templates == CHECKED, f"a page template no accessibility test loads: {sorted(templates - CHECKED)}"


def test_the_reports_the_dashboard_similarity_and_the_portfolio_pass_axe_and_fit_a_phone(pages) -> None:
    from playwright.sync_api import sync_playwright

    chromium = _chromium()
    problems: list[str] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        try:
            for name, path in pages.items():
                if path.is_dir():
                    continue
                for viewport in ({"width": 1200, "height": 900}, PHONE):
                    page = browser.new_page(viewport=viewport)
                    page.goto(path.as_uri())
                    problems += _checked(page, f"{name} at {viewport['width']} px")
                    page.close()
        finally:
            browser.close()
    assert problems == [], "\n".join(problems)


def test_the_review_page_passes_axe_with_answers_groups_and_a_second_graders_view(pages, tmp_path, monkeypatch) -> None:
    import os

    from playwright.sync_api import sync_playwright

    from grader.classroom import review_app

    chromium = _chromium()
    home = tmp_path / "course"  # the suite's course, with every answer sampled to be graded twice
    shutil.copytree(os.environ["GRADER_COURSE"], home)
    (home / "course.toml").write_text((home / "course.toml").read_text()
                                      + f"[lessons.{LESSON}.review]\ndouble_percent = 100\n")
    monkeypatch.setenv("GRADER_COURSE", str(home))
    problems: list[str] = []
    for second in (False, True):
        ready: list[str] = []
        threading.Thread(target=review_app.serve, args=(pages["batch folder"], "ta"), daemon=True,
                         kwargs={"ready": ready.append, "second": second}).start()
        for _ in range(200):
            if ready:
                break
            threading.Event().wait(0.05)
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
            try:
                for viewport in ({"width": 1200, "height": 900}, PHONE):
                    page = browser.new_page(viewport=viewport)
                    page.goto(ready[0])
                    page.wait_for_selector(".card")
                    problems += _checked(page, f"review{' (second grader)' if second else ''} at {viewport['width']} px")
                    if not second and viewport == PHONE:
                        _shortcuts_turn_off(page)
                    page.close()
            finally:
                browser.close()
    assert problems == [], "\n".join(problems)


def _shortcuts_turn_off(page: Any) -> None:
    """WCAG 2.1.4: the review page's single-key shortcuts can be turned off (and stay off), by the keyboard."""
    from playwright.sync_api import expect

    first = page.locator(".card").first.locator(".items button").first
    before = first.get_attribute("aria-pressed")
    _tab_to(page, "#shortcuts", 40)
    page.keyboard.press("Space")  # off
    page.keyboard.press("Escape")  # leave the box: keys go to the page again
    page.keyboard.press("1")
    assert first.get_attribute("aria-pressed") == before  # a stray "1" (speech input, a screen reader) decides nothing
    page.reload()
    page.wait_for_selector(".card")
    assert not page.is_checked("#shortcuts")  # remembered
    page.check("#shortcuts")
    page.keyboard.press("Escape")
    page.keyboard.press("1")
    expect(page.locator(".card").first.locator(".items button").first).not_to_have_attribute("aria-pressed", before)


def test_the_services_pages_and_the_lti_pages_pass_axe_signed_out_and_signed_in(service) -> None:
    from playwright.sync_api import sync_playwright

    from grader.report import render

    chromium = _chromium()
    url = str(service.base_url)
    lti = render.environment().get_template("lti.html.j2")
    from grader.service import front

    rendered = {"LTI refusal": lti.render(title="Refused", page="refused", why="this launch's context is not bound"),
                "hub refusal": lti.render(title="Not in this course", page="hub-refused",
                                          why="you are signed in to the hub as zed, who is not in this course"),
                "hub courses": front.page("/services/grader/", {"alpha": "Alpha <1>", "beta": ""}),
                "LTI lesson chooser": lti.render(title="Link a lesson", page="choose", link="x", lessons=[
                    {"id": LESSON, "title": "Batching and caching", "points": 6}])}
    problems: list[str] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        try:
            for viewport in ({"width": 1200, "height": 900}, PHONE):
                for path, token in (("/", None), ("/", "ada"), ("/instructor", None), ("/instructor", "prof")):
                    page = browser.new_page(viewport=viewport)
                    page.goto(url + path)
                    if token:
                        page.fill("#token", service.tokens[token])
                        page.click("#signin-button")
                        page.wait_for_selector("#who:not(:empty)" if path == "/" else "#counts:not(:empty)")
                    state = f"signed in as {token}" if token else "signed out"
                    problems += _checked(page, f"service {path} {state} at {viewport['width']} px")
                    page.close()
                for name, text in rendered.items():
                    page = browser.new_page(viewport=viewport)
                    page.set_content(text)
                    problems += _checked(page, f"{name} at {viewport['width']} px")
                    page.close()
        finally:
            browser.close()
    assert problems == [], "\n".join(problems)


def _tab_to(page: Any, selector: str, presses: int = 15) -> None:
    """Press Tab until the element `selector` has the focus (the keyboard alone, as a person without a mouse)."""
    for _ in range(presses):
        page.keyboard.press("Tab")
        if page.evaluate("(s) => document.activeElement === document.querySelector(s)", selector):
            return
    raise AssertionError(f"{selector} is not reached by Tab")


def test_a_student_signs_in_submits_and_hears_the_receipt_by_the_keyboard_alone(service, tmp_path) -> None:
    import nbformat
    from playwright.sync_api import expect, sync_playwright

    from grader.lesson import catalog, handout

    chromium = _chromium()
    notebook = tmp_path / "mine.ipynb"
    nbformat.write(handout.solution_notebook(catalog.get(LESSON)), str(notebook))
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport=PHONE)
            page.goto(str(service.base_url) + "/")
            page.keyboard.press("Tab")
            assert page.evaluate("document.activeElement.textContent") == "Skip to the content"
            _tab_to(page, "#token")
            page.keyboard.type(service.tokens["ada"])
            _tab_to(page, "#signin-button")
            page.keyboard.press("Enter")
            expect(page.locator("#who")).to_contain_text("Ada")
            _tab_to(page, "#lesson")
            page.keyboard.press("ArrowDown")  # the select: another lesson, then back, by the keyboard
            page.keyboard.press("ArrowUp")
            _tab_to(page, "#file")
            with page.expect_file_chooser() as chosen:
                page.keyboard.press("Space")
            chosen.value.set_files(str(notebook))
            expect(page.locator("#lesson")).to_have_value(LESSON)  # the handout named its lesson
            _tab_to(page, "#send")
            page.keyboard.press("Enter")
            expect(page.locator("#said")).to_contain_text("Received: submission")  # the live region says it
            expect(page.locator("#r-attempts")).to_have_text("1 used")  # the graded submissions used (no limit here)
            assert page.get_attribute("#said", "aria-live") == "polite"
            expect(page.locator("#history button").first).to_be_visible()  # the list is fetched after the receipt
            _tab_to(page, "#history button")
            page.keyboard.press("Enter")  # an earlier submission opens from the keyboard too
            expect(page.locator("#feedback")).to_be_visible()
            expect(page.locator("#f-state")).to_contain_text("queued")
        finally:
            browser.close()


@contextlib.contextmanager
def _signed_in(service: Any, path: str, who: str, ready: str) -> Iterator[Any]:
    """A Chromium page of the service at `path`, signed in with `who`'s token once `ready` is shown; closed after."""
    from playwright.sync_api import expect, sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=_chromium(), args=["--no-sandbox"])
        try:
            page = browser.new_page()
            page.goto(str(service.base_url) + path)
            page.fill("#token", service.tokens[who])
            page.click("#signin-button")
            expect(page.locator(ready)).to_be_visible()
            yield page
        finally:
            browser.close()


def test_the_instructor_hears_a_submission_that_needs_them(service) -> None:
    """WCAG 4.1.3: a submission the grader gave up on (dead) is announced on the instructor's page as it appears;
    the ones already there when they signed in are not read out again."""
    import sqlite3

    from playwright.sync_api import expect

    queue = service.served.queue
    with _signed_in(service, "/instructor", "prof", "#counts") as page:
        expect(page.locator("#counts")).to_contain_text("queued")
        job, _ = queue.add(LESSON, "ada", "a" * 64, "hw.ipynb", b"x", "2026-12-06T00:00:00+00:00", True)
        with contextlib.closing(sqlite3.connect(queue.where)) as db, db:  # as three failed tries leave it
            db.execute("UPDATE jobs SET state='dead', error='a grading worker died' WHERE id=?", (job.id,))
        expect(page.locator("#said")).to_contain_text(f"ada's submission of {LESSON} needs you: ", timeout=10_000)
        expect(page.locator("#said")).to_contain_text("a grading worker died")
        assert page.get_attribute("#said", "aria-live") == "polite"


def test_a_script_chosen_on_the_student_page_picks_the_lesson_whose_names_it_defines(service, tmp_path) -> None:
    """A .py script names no lesson (a handout does, in its metadata): the page picks the lesson whose handout
    names the script defines, half of them at least, and none for a script that defines none of any."""
    from playwright.sync_api import expect

    root = Path(__file__).resolve().parent.parent
    other = tmp_path / "mine.py"
    other.write_text("x = 1\ndef helper():\n    return x\n")
    with _signed_in(service, "/", "ada", "#who") as page:
        expect(page.locator("#who")).to_contain_text("Ada")
        expect(page.locator("#lesson")).to_have_value("")  # several lessons: none is taken for the student
        for lesson in ("inference-scaling", "dynamic-batching", "inference-capacity"):
            page.set_input_files("#file", str(root / "samples" / lesson / "ben.py"))
            expect(page.locator("#lesson")).to_have_value(lesson)
        page.select_option("#lesson", "")
        page.set_input_files("#file", str(other))
        expect(page.locator("#lesson")).to_have_value("")  # the page asks; nothing is guessed
