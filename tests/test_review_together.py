"""Several graders on one review: a decision made against an answer someone decided since is refused with who and
when, and every open page learns of the others' decisions without a reload."""

from __future__ import annotations

import contextlib
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from test_review import batch, course_key_module, out  # noqa: F401 -- the signed batch of four, shared

from grader.classroom.review_store import Stale, Store
from grader.result.manual import WrittenGrade


def _serving(folder: Path, grader: str, second: bool = False) -> str:
    """`grader review` of the folder in a thread, as `grader` (for the whole test session); its address."""
    from grader.classroom import review_app

    ready: list[str] = []
    threading.Thread(target=review_app.serve, args=(folder, grader), kwargs={"ready": ready.append, "second": second},
                     daemon=True).start()
    for _ in range(200):
        if ready:
            break
        threading.Event().wait(0.05)
    return ready[0]


@contextlib.contextmanager
def _page(url: str) -> Iterator[tuple[Any, Any]]:
    """A Chromium page open at `url`, and Playwright's `expect`; skipped where there is no Chromium; closed after."""
    playwright = pytest.importorskip("playwright.sync_api")
    chromium = shutil.which("chromium")
    if chromium is None:
        pytest.skip("Debian's chromium is not installed")
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        try:
            page = browser.new_page()
            page.goto(url)
            yield page, playwright.expect
        finally:
            browser.close()


def _decision(grader: str, items: tuple[str, ...], at: str = "2026-12-06T14:02:11+00:00") -> WrittenGrade:
    return WrittenGrade("prediction", items, None, 1.0, "", grader, at)


def test_a_decision_against_a_newer_one_is_refused_with_who_and_when_and_nothing_is_saved(tmp_path: Path) -> None:
    store = Store(tmp_path / "review.sqlite")
    seen = {"ada": 0, "ben": 0}  # both pages opened before anyone decided
    versions = store.decide("lesson", ["ada"], _decision("Lin", ("right",)), seen)
    assert versions == {"ada": store.version("lesson", "ada", "prediction")} and versions["ada"] > 0
    with pytest.raises(Stale) as refused:
        store.decide("lesson", ["ada", "ben"], _decision("Sam", ("wrong",), "2026-12-06T14:05:00+00:00"), seen)
    assert str(refused.value) == "Lin changed ada's answer at 14:02 (UTC) since your page showed it: reload"
    kept = store.written("lesson")
    assert kept[("ada", "prediction")].grader == "Lin" and ("ben", "prediction") not in kept  # all or nothing
    # with the version the page now knows, the same decision is taken
    store.decide("lesson", ["ada", "ben"], _decision("Sam", ("wrong",)), {"ada": versions["ada"], "ben": 0})
    assert store.written("lesson")[("ada", "prediction")].grader == "Sam"
    since, changed = store.changes("lesson", versions["ada"])
    assert changed == [("ada", "prediction"), ("ben", "prediction")] and since == store.latest()
    with pytest.raises(Stale):
        store.clear("lesson", ["ben"], "prediction", "Lin", {"ben": 0})  # cleared against a stale page
    store.close()


@pytest.mark.kernel
@pytest.mark.browser
def test_two_graders_pages_one_stale_decision_refused_and_the_other_page_updated_without_a_reload(out: Path) -> None:  # noqa: F811
    playwright = pytest.importorskip("playwright.sync_api")
    chromium = shutil.which("chromium")
    if chromium is None:
        pytest.skip("Debian's chromium is not installed")
    urls = {grader: _serving(out, grader) for grader in ("lin", "sam")}  # each their own `grader review`
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        try:
            lin, sam = browser.new_page(), browser.new_page()
            sam.clock.install()  # sam's page looks for changes only when the test lets its clock run
            lin.goto(urls["lin"])
            sam.goto(urls["sam"])
            lin.wait_for_selector(".card")
            sam.wait_for_selector(".card")
            lin.keyboard.press("1")  # lin grades the first card (the blank group): item 1
            playwright.expect(lin.locator(".card").first.locator(".state")).to_contain_text("graded")
            # points for a blank answer are said, not silently taken (item 1 is worth 0.5 of the question's 1)
            playwright.expect(lin.locator(".card").first.locator(".error")).to_have_text(
                "warning: this answer is blank, and it now has 0.5 of 1 points")
            sam.keyboard.press("2")  # sam, on a page that still shows it ungraded
            error = sam.locator(".card").first.locator(".error")
            playwright.expect(error).to_contain_text("lin changed dev's answer at")
            playwright.expect(error).to_contain_text("reload")
            sam.clock.run_for(2500)  # one look for changes: lin's decision appears on sam's page
            playwright.expect(sam.locator(".card").first.locator(".state")).to_contain_text("by lin")
            # and said, for a screen reader: another grader's decision in the page's live region
            playwright.expect(sam.locator("#said")).to_contain_text("lin graded dev's answer to ")
            assert sam.get_attribute("#said", "aria-live") == "polite"
            assert sam.locator(".card").first.locator(".items button").first.get_attribute("aria-pressed") == "true"
            sam.keyboard.press("2")  # now against what lin decided: taken
            playwright.expect(sam.locator(".card").first.locator(".state")).to_contain_text("by you")
            playwright.expect(sam.locator(".card").first.locator(".error")).to_contain_text("warning: this answer is blank")
            # a key moves to the next question, and a rubric item whose points changed is marked so
            sam.keyboard.press("]")
            playwright.expect(sam.locator("nav button.current")).to_contain_text("(2 pt)")
            sam.keyboard.press("[")
            sam.locator("#rubric input").first.fill("0.25")
            sam.locator("#rubric input").first.press("Tab")
            playwright.expect(sam.locator("#rubric li").first).to_contain_text("changed from 0.5 (the lesson's)")
        finally:
            browser.close()
    with Store(out / "review.sqlite") as store:
        (decision,) = [d for (s, q), d in store.written("inference-scaling").items() if s == "dev"
                       and q == "prediction"]
    assert decision.grader == "sam" and len(decision.items) == 2


@pytest.fixture(scope="module")
def similar(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A batch where two students wrote the same idea differently (a typo, case, punctuation)."""
    from test_review import SAME, _batch, _notebooks

    root = tmp_path_factory.mktemp("similar")
    answers = {"ada": SAME, "ben": "no both gains come from the same repeated rows so they overlap and dont multply",
               "cleo": "They will multiply, 0.17 times 0.5.", "dev": None}
    _batch(_notebooks(root / "in", answers), root / "out")
    return root / "out"


@pytest.mark.kernel
@pytest.mark.browser
def test_a_group_of_similar_answers_is_graded_in_one_step_and_a_member_can_be_taken_apart(similar: Path,
                                                                                         tmp_path: Path) -> None:
    import json

    copy = tmp_path / "out"
    shutil.copytree(similar, copy)
    url = _serving(copy, "lin")
    with _page(url) as (page, expect):
        group = page.locator(".card", has_text="similar answers (at 0.6), 2 students")
        expect(group).to_contain_text("ada")
        expect(group).to_contain_text("ben")
        group.locator(".answer").click()  # the card in focus (its text: not a button)
        page.keyboard.press("1")
        page.keyboard.press("2")  # one decision, both rubric items, for both students
        expect(group.locator(".state")).to_contain_text("graded: 1 of 1 points")
        expect(page.locator("nav button").first).to_contain_text("graded 2 of 4")
        assert page.locator("#threshold").input_value() == "0.6"
        page.locator("#threshold").fill("1")
        page.locator("#threshold").press("Enter")  # identical only: ada and ben apart again
        page.wait_for_url("**threshold=1**")
        expect(page.locator(".card", has_text="similar answers")).to_have_count(0)
        page.locator("#threshold").fill("0.6")
        page.locator("#threshold").press("Enter")
        page.wait_for_url("**threshold=0.6**")
        group = page.locator(".card", has_text="similar answers (at 0.6), 2 students")
        page.set_viewport_size({"width": 1100, "height": 900})
        page.screenshot(path=str(tmp_path / "review-similar.png"))
        group.locator("button.apart").nth(1).click()  # ben, graded apart from ada
        expect(page.locator(".card", has_text="taken out of its group")).to_contain_text("ben")
    ada = json.loads((copy / "results" / "ada.json").read_text())
    (prediction,) = [w for w in ada["manual"]["written"] if w["question"] == "prediction"]
    assert prediction["points"] == 1.0 and prediction["group"] == {"kind": "similar at 0.6", "with": ["ben"]}


def test_agreement_per_item_and_on_the_points_is_cohens_kappa_as_computed_by_hand() -> None:
    from grader.judge import agreement
    from grader.lesson import catalog

    lesson = catalog.get("inference-scaling")
    first = {(s, "prediction"): _decision("Lin", items) for s, items in
             (("ada", ("no-overlap", "reason")), ("ben", ("no-overlap", "reason")), ("cleo", ()), ("dev", ()))}
    second = {(s, "prediction"): _decision("Sam", items) for s, items in
              (("ada", ("no-overlap", "reason")), ("ben", ("no-overlap",)), ("cleo", ()), ("dev", ()))}
    found = agreement.measure(lesson.written, first, second, lambda d: 0.5 * len(d.items))
    by_item = {i.item: (i.agreed, i.answers, i.kappa) for i in found.items}
    # no-overlap: both graders 1,1,0,0: full agreement. reason: 1,1,0,0 against 1,0,0,0: po = 3/4, chance
    # pe = 1/2 * 1/4 + 1/2 * 3/4 = 1/2, kappa = (3/4 - 1/2) / (1 - 1/2) = 1/2
    assert by_item == {"no-overlap": (4, 4, 1.0), "reason": (3, 4, 0.5)}
    # points 1,1,0,0 against 1,0.5,0,0: po = 3/4; pe = 1/2 * 1/4 (1) + 1/2 * 1/2 (0) + 0 * 1/4 (0.5) = 3/8;
    # kappa = (3/4 - 3/8) / (5/8) = 3/5
    assert found.points_kappa == 0.6
    (settle,) = found.disagreements
    assert (settle.student, settle.first, settle.second) == ("ben", "no-overlap, reason (1 point)",
                                                             "no-overlap (0.5 points)")
    # the sample is repeatable and about the share asked for
    names = [f"s{i:04d}" for i in range(2000)]
    picked = [n for n in names if agreement.sampled("inference-scaling", n, 10)]
    assert picked == [n for n in names if agreement.sampled("inference-scaling", n, 10)]
    assert 160 <= len(picked) <= 240 and not any(agreement.sampled("inference-scaling", n, 0) for n in names)


@pytest.mark.kernel
@pytest.mark.browser
def test_a_sample_graded_twice_blind_shows_the_agreement_on_the_page(out: Path, course_key_module: Path) -> None:  # noqa: F811
    import json
    import time

    playwright = pytest.importorskip("playwright.sync_api")
    chromium = shutil.which("chromium")
    if chromium is None:
        pytest.skip("Debian's chromium is not installed")
    from grader.classroom.review import Review

    toml = course_key_module.parent / "course.toml"
    toml.write_text(toml.read_text() + "[lessons.inference-scaling.review]\ndouble_percent = 100\n")
    first = Review(out, "lin")
    try:  # the first grading, as lin decided it
        first.decide("prediction", ["ada", "ben"], ["no-overlap", "reason"])
        first.decide("prediction", ["cleo"], [], points=0.0)
        first.decide("prediction", ["dev"], [], points=0.0)
    finally:
        first.close()
    urls = {"sam": _serving(out, "sam", second=True), "lin": _serving(out, "lin")}
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        try:
            sam = browser.new_page()
            sam.goto(urls["sam"])
            playwright.expect(sam.locator("#second-note")).to_be_visible()
            cards = sam.locator(".card")
            playwright.expect(cards).to_have_count(4)  # each answer on its own, lin's decisions hidden
            for i in range(4):
                playwright.expect(cards.nth(i).locator(".state")).to_have_text("not graded")
            for keys in (("1", "2"), ("1",), ("1", "1"), ("1", "1")):  # ada both items, ben one, cleo and dev none
                for key in keys:
                    sam.keyboard.press(key)
                sam.keyboard.press("j")
            playwright.expect(cards.nth(3).locator(".state")).to_contain_text("graded: 0 of 1")
            lin = browser.new_page()
            lin.goto(urls["lin"])
            box = lin.locator("#agreement")
            playwright.expect(box).to_contain_text("4 answers graded twice · Cohen's kappa on the points: 0.6")
            playwright.expect(box.locator("tr", has_text="reason")).to_contain_text("3 of 40.5")
            playwright.expect(box).to_contain_text("To settle: 1")
            playwright.expect(box).to_contain_text("ben, prediction: lin gave no-overlap, reason (1 point); sam gave "
                                                   "no-overlap (0.5 points)")
            box.scroll_into_view_if_needed()
            lin.screenshot(path=str(out / "review-agreement.png"), full_page=True)
        finally:
            browser.close()
    def written() -> bool:  # agreement.json first, then the dashboard (Review.refresh): wait for both
        return (out / "agreement.json").exists() and "Graders' agreement" in (out / "index.html").read_text()

    deadline = time.monotonic() + 20
    while not written() and time.monotonic() < deadline:
        time.sleep(0.2)  # the second page's server writes the class's files a moment after its last decision
    assert json.loads((out / "agreement.json").read_text())["points_kappa"] == 0.6
    assert "Graders' agreement" in (out / "index.html").read_text()
    ada = json.loads((out / "results" / "ada.json").read_text())  # the second grading changed no grade
    assert [w["grader"] for w in ada["manual"]["written"] if w["question"] == "prediction"] == ["lin"]


@pytest.mark.browser
def test_a_grader_goes_through_the_review_page_by_the_keyboard_alone(out: Path, tmp_path: Path) -> None:  # noqa: F811
    """WCAG 2.1.1: skip to the answers, move to the next group, apply a rubric item, write a comment and leave it
    (saved), go to the next question and grade there, all without a mouse; what was decided is in the store."""
    folder = tmp_path / "batch"
    shutil.copytree(out, folder)  # a copy: the other tests' decisions are theirs
    for stale in folder.glob("review.sqlite*"):
        stale.unlink()
    url = _serving(folder, "kim")
    with _page(url) as (page, expect):
        page.wait_for_selector(".card")
        page.keyboard.press("Tab")
        assert page.evaluate("document.activeElement.textContent") == "Skip to the content"
        page.keyboard.press("Enter")
        page.keyboard.press("j")  # the next group of answers
        page.keyboard.press("1")  # its first rubric item, saved at once
        second = page.locator(".card").nth(1)
        expect(second.locator(".state")).to_contain_text("by you")
        page.keyboard.press("c")  # its comment box
        page.keyboard.type("see the second part")
        page.keyboard.press("Escape")  # out of the box (its change is saved), and the keys are the page's again
        expect(second.locator("textarea")).to_have_value("see the second part")
        page.keyboard.press("]")  # the next question
        page.keyboard.press("1")
        expect(page.locator(".card").first.locator(".state")).to_contain_text("by you")
    with Store(folder / "review.sqlite") as store:
        decided = store.written("inference-scaling")
    assert {q for _, q in decided} >= {"prediction"} and len({q for _, q in decided}) == 2
    assert all(d.grader == "kim" for d in decided.values())
    assert any(d.comment == "see the second part" and d.items for d in decided.values())
