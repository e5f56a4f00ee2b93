"""Several graders on one review: a decision made against an answer someone decided since is refused with who and
when, and every open page learns of the others' decisions without a reload."""

from __future__ import annotations

import shutil
import threading
from pathlib import Path

import pytest
from test_review import batch, course_key_module, out  # noqa: F401 -- the signed batch of four, shared

from grader.classroom.review_store import Stale, Store
from grader.result.manual import WrittenGrade


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
    from grader.classroom import review_app

    urls: dict[str, str] = {}
    for grader in ("lin", "sam"):  # two graders, each with their own `grader review` on the one batch folder
        ready: list[str] = []
        threading.Thread(target=review_app.serve, args=(out, grader), kwargs={"ready": ready.append},
                         daemon=True).start()
        for _ in range(200):
            if ready:
                break
            threading.Event().wait(0.05)
        urls[grader] = ready[0]
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
