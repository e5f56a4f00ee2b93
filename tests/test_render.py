"""render: evidence reports (goldens), hostile text stays text, pages open offline in Chromium."""

from __future__ import annotations

import copy
import json
import re
import shutil
import subprocess
import zipfile
from html.parser import HTMLParser
from pathlib import Path

import jinja2
import nbformat
import pytest
from conftest import FAST, SEED, typed, write

from grader import grading
from grader.classroom import batch, portfolio
from grader.lesson import catalog, handout
from grader.lesson.draw import Given
from grader.report import finish, render
from grader.result import gradebook

GOLDENS = Path(__file__).parent / "goldens"
DOCS = Path(__file__).resolve().parent.parent / "docs"
MASK = "<masked>"


def normalise(result: dict) -> dict:
    """Mask what changes from run to run: timings, seeds, dates, digests, hosts, measured numbers."""
    data = copy.deepcopy(result)
    for key in ("seed", "hash_seed", "digest", "graded_at"):
        if key in data:
            data[key] = MASK
    data["environment"] = dict.fromkeys(data.get("environment", {}), MASK)
    if data.get("sandbox"):
        data["sandbox"] = {"mode": MASK, "layers": {}, "limits": {}, "missing": [], "missing_reason": ""}
    if "run" in data:
        data["run"]["seconds"] = 0.0
        data["run"]["timings"] = dict.fromkeys(data["run"]["timings"], 0.0)
    for cell in data.get("cells", []):
        cell["seconds"] = 0.0

    def mask_numbers(value):
        if isinstance(value, float):
            return 1.0
        if isinstance(value, list):
            return [mask_numbers(v) for v in value]
        if isinstance(value, dict):
            return {k: mask_numbers(v) for k, v in value.items()}
        return value

    if data.get("measured"):
        data["measured"] = mask_numbers(data["measured"])
        data["measured"]["how"]["note"] = result["measured"]["how"]["note"]
        data["measured"]["how"]["percentile_method"] = result["measured"]["how"]["percentile_method"]
    if data.get("simulated", {}).get("values"):
        data["simulated"]["values"] = {k: mask_numbers(v) for k, v in data["simulated"]["values"].items()}
    for item in data.get("as_submitted", []):
        item["fresh"] = re.sub(r"\d+\.\d+", "#", item.get("fresh", ""))
    return data


def _golden(request, name: str, text: str) -> None:
    path = GOLDENS / name
    if request.config.getoption("--update-goldens") or not path.exists():
        if not request.config.getoption("--update-goldens"):
            pytest.fail(f"missing golden {path}; run pytest --update-goldens")
        GOLDENS.mkdir(exist_ok=True)
        path.write_text(text, encoding="utf-8")
    assert text == path.read_text(encoding="utf-8"), f"{name} changed; review and run pytest --update-goldens"


@pytest.mark.kernel
@pytest.mark.parametrize("lesson_id, patch", [("inference-capacity", None), ("inference-scaling", None),
                                              ("inference-capacity", "queue-vectorised-shortcut")])
@pytest.mark.parametrize("fmt", ["html", "md"])
def test_report_goldens(graded, request, lesson_id, patch, fmt):
    result = graded.solution(lesson_id) if patch is None else graded.patch(lesson_id, patch)
    data = normalise(result)
    text = render.report_html(typed(data)) if fmt == "html" else render.report_md(typed(data))
    _golden(request, f"{lesson_id}-{patch or 'solution'}.{fmt}", text)


def test_rejected_report_golden(request):
    data = grading.rejected("eli.ipynb", "eli.ipynb: the file is empty; save your work and submit again", "l").to_dict()
    _golden(request, "rejected.html", render.report_html(typed(data)))
    _golden(request, "rejected.md", render.report_md(typed(data)))


HOSTILE_TEXT = '<script>alert("x")</script><img src=x onerror=alert(1)>'


class _Tags(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags = []
        self.links = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        for key, value in attrs:
            if key in ("href", "src") and value:
                self.links.append(value)


def _tags(html: str) -> _Tags:
    parser = _Tags()
    parser.feed(html)
    return parser


@pytest.mark.kernel
def test_student_html_is_rendered_as_text_everywhere(tmp_path):
    notebook = handout.solution_notebook(catalog.get("inference-capacity"))
    for cell in notebook.cells:
        if cell.cell_type == "markdown" and "explanation" in cell.metadata.get("tags", []):
            cell.source = "My explanation " + HOSTILE_TEXT
        if cell["id"] == "answer-p95":
            cell.source += f"\nprint({HOSTILE_TEXT!r})\n"
            cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=HOSTILE_TEXT + " (stale)")]
        if cell["id"] == "answer-replica-plan":
            cell.source = f"def plan_replicas(a, c, u):\n    raise RuntimeError({HOSTILE_TEXT!r})\n"
    folder = tmp_path / "in"
    folder.mkdir()
    write(notebook, folder / (HOSTILE_TEXT.replace("/", "").replace('"', "")[:40] + ".ipynb"))
    out = tmp_path / "out"
    batch.run(batch.Request(folder, "inference-capacity", out, jobs=1,
              options=grading.Options(limits=FAST), given=Given(seed=SEED), progress=False))
    [result_path] = list((out / "results").glob("*.json"))
    data = json.loads(result_path.read_text())
    pages = {"report": render.report_html(typed(data)), "dashboard": (out / "index.html").read_text(),
             "portfolio": render.portfolio_index([data["student"]], [{"folder": "x", "data": data, "has_notebook": False}])}
    assert HOSTILE_TEXT not in json.dumps(pages)  # never verbatim
    for name, html in pages.items():
        tags = {tag for tag, _ in _tags(html).tags}
        assert "script" not in tags and "img" not in tags, name
        assert all("onerror" not in attrs for _, attrs in _tags(html).tags), name
    assert "&lt;script&gt;" in pages["report"] and "onerror=alert(1)&gt;" in pages["report"]
    md = render.report_md(typed(data))
    outside_code = re.sub(r"(`+)[^`].*?\1", "", md)  # inside a code span, Markdown shows <, & and * as written
    assert not re.search(r"(?<!\\)[<&]", outside_code)  # anywhere else each one is backslash-escaped
    assert "\\<script\\>" in md and "&lt;" not in md


def test_pages_have_no_outside_references(graded):
    for lesson_id in ("inference-capacity", "inference-scaling"):
        html = render.report_html(typed(graded.solution(lesson_id)))
        links = _tags(html).links
        assert all(not re.match(r"^(https?:)?//", link) for link in links), links
        assert "default-src 'none'" in html


def test_dashboard_handles_a_thousand_students(graded):
    base = graded.solution("inference-scaling")
    results = []
    for i in range(1000):
        item = copy.deepcopy(base)
        item["student"] = f"s{i:04d}"
        item["score"] = float(i % 4)
        results.append(item)
    html = render.dashboard_html([gradebook.summary(typed(r)) for r in results], catalog.get("inference-scaling"))
    assert html.count('href="reports/s') == 1000
    assert "1000 students" in html


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROME_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                "--disable-background-networking", "--disable-component-update", "--disable-sync",
                "--enable-logging=stderr", "--v=0", "--hide-scrollbars"]


def _screenshot(page: Path, png: Path, profile: Path, height: int) -> str:
    done = subprocess.run([CHROMIUM, *CHROME_FLAGS, f"--user-data-dir={profile}", f"--window-size=1200,{height}",
                           f"--screenshot={png}", page.as_uri()], capture_output=True, text=True, timeout=120)
    assert png.exists(), done.stderr[-2000:]
    return done.stderr


def _not_blank(png: Path) -> None:
    from PIL import Image, ImageStat

    with Image.open(png) as image:
        stat = ImageStat.Stat(image.convert("L"))
    assert stat.stddev[0] > 10, "the screenshot is (nearly) one colour"


@pytest.mark.browser
@pytest.mark.kernel
@pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed (.ci/run installs it)")
def test_report_and_dashboard_open_in_chromium(graded, tmp_path, request):
    report = tmp_path / "report.html"
    report.write_text(render.report_html(typed(graded.solution("inference-capacity"))))
    results = [graded.solution("inference-capacity"), graded.patch("inference-capacity", "collection-off-by-one")]
    results[1]["student"] = "bob"
    dashboard = tmp_path / "index.html"
    dashboard.write_text(render.dashboard_html([gradebook.summary(typed(r)) for r in results],
                                               catalog.get("inference-capacity")))
    for page, height, name in ((report, 2400, "report"), (dashboard, 1400, "dashboard")):
        png = tmp_path / f"{name}.png"
        log = _screenshot(page, png, tmp_path / f"profile-{name}", height)
        console = [line for line in log.splitlines() if "CONSOLE" in line or "Refused to" in line]
        assert console == [], console
        _not_blank(png)
        if request.config.getoption("--update-goldens") and DOCS.is_dir():
            shutil.copy(png, DOCS / f"{name}.png")  # the screenshots quoted in docs/


@pytest.mark.kernel
def test_portfolio_zip_is_self_contained_and_its_links_resolve(graded, tmp_path):
    sources = []
    for lesson_id in ("inference-capacity", "inference-scaling", "dynamic-batching"):
        path = tmp_path / "results" / f"{lesson_id}.json"
        path.parent.mkdir(exist_ok=True)
        path.write_text(json.dumps(graded.solution(lesson_id)))
        sources.append(path)
    out = tmp_path / "portfolio.zip"
    assert portfolio.build(sources, out) == ["inference-capacity", "inference-scaling", "dynamic-batching"]  # unsigned
    with zipfile.ZipFile(out) as archive:
        names = set(archive.namelist())
        index = archive.read("index.html").decode()
        links = _tags(index).links
        assert links and all(link in names for link in links), (links, names)
        for name in names:
            if name.endswith(".html"):
                page_links = _tags(archive.read(name).decode()).links
                assert all(not re.match(r"^(https?:)?//", link) for link in page_links), name
    assert {"inference-capacity/report.md", "inference-scaling/result.json", "dynamic-batching/report.html"} <= names
    assert "Measured service (loopback)" in archive_text(out, "dynamic-batching/report.html")


def archive_text(path, name):
    with zipfile.ZipFile(path) as archive:
        return archive.read(name).decode()


def test_values_no_float_holds_cost_the_figure_not_the_report(graded):
    data = graded.solution("inference-capacity")
    data["measured"]["values"]["service_ms"] = 10**400
    data["simulated"]["values"]["stable_latency"] = [10**400, float("nan"), -0.0]
    data["simulated"]["values"]["overloaded_latency"] = [[1, [2]], 3]
    html = render.report_html(typed(data))
    assert "Figure" in html  # the measured panel still draws; the bad series are left out
    assert "10000000000" in html  # the value itself is shown, as the student left it
    broken = dict(data, measured={"how": data["measured"]["how"], "answers": {}, "values": {"measurements": [{"batch": 10**400}]}})
    assert "inference-capacity" in render.report_html(typed(broken))
    assert "inference-capacity" in finish.safe_report(typed(dict(data, simulated={"answers": {"x": "not a list"}})))


def test_a_lesson_that_measures_nothing_says_so_and_draws_its_declared_figure(graded):
    html = render.report_html(typed(graded.solution("inference-scaling")))
    assert "This lesson measures nothing on this host" in html
    figure = html.split('<div class="figure" tabindex="0" aria-describedby="figure-text">')[1]  # a box of its own, which scrolls on a phone
    assert figure.startswith("<svg") and "Batch-size sweep" in figure and "rows_per_prediction" in figure


@pytest.mark.browser
@pytest.mark.kernel
@pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed (.ci/run installs it)")
def test_batching_report_shows_measured_beside_simulated_in_chromium(graded, tmp_path, request):
    report = tmp_path / "batching.html"
    report.write_text(render.report_html(typed(graded.solution("dynamic-batching"))))
    done = subprocess.run([CHROMIUM, *CHROME_FLAGS, f"--user-data-dir={tmp_path / 'profile-dom'}", "--dump-dom",
                           report.as_uri()], capture_output=True, text=True, timeout=120)
    dom = done.stdout
    table = dom.split('<table tabindex="0" class="comparison">')[1].split("</table>")[0]
    for label in ("measured (live, loopback)", "simulated (fitted costs)", "p99 (ms)", "wait", "compute", "overhead",
                  "total"):
        assert label in table, label
    svg = dom.split("<svg")[1].split("</svg>")[0]
    assert "measured (live, loopback) p50 (n=400)" in svg and "simulated (fitted costs) p50 (n=400)" in svg
    png = tmp_path / "batching.png"
    _screenshot(report, png, tmp_path / "profile-png", 2000)
    _not_blank(png)
    if request.config.getoption("--update-goldens") and DOCS.is_dir():
        shutil.copy(png, DOCS / "batching-report.png")


def _fresh_environments():
    render.environment.cache_clear()
    render.markdown_environment.cache_clear()


def test_compiled_templates_are_kept_privately_and_read_back_without_compiling(monkeypatch, tmp_path):
    """A second process (a fresh environment) draws the same reports from the compiled templates the first kept."""
    monkeypatch.setenv("GRADER_CACHE", str(tmp_path))
    data = typed(grading.rejected("eli.ipynb", "eli.ipynb: the file is empty", "l").to_dict())
    _fresh_environments()
    try:
        first = (render.report_html(data), render.report_md(data))
        kept = sorted((tmp_path / "templates").iterdir())
        assert kept and all((p.stat().st_mode & 0o777) == 0o600 for p in kept)
        assert {p.name.split("-")[0] for p in kept} == {"__html", "__md"}  # one set per environment's options
        _fresh_environments()

        def refuse(*args, **kwargs):
            raise AssertionError("compiled a template the cache holds")

        monkeypatch.setattr(jinja2.Environment, "compile", refuse)
        assert (render.report_html(data), render.report_md(data)) == first
    finally:
        monkeypatch.undo()
        _fresh_environments()


def test_a_cache_folder_others_can_write_is_not_used(monkeypatch, tmp_path):
    monkeypatch.setenv("GRADER_CACHE", str(tmp_path))
    (tmp_path / "templates").mkdir(mode=0o777)
    (tmp_path / "templates").chmod(0o777)
    _fresh_environments()
    try:
        assert "the file is empty" in render.report_md(typed(grading.rejected("e.ipynb", "the file is empty", "l").to_dict()))
        assert list((tmp_path / "templates").iterdir()) == []
    finally:
        _fresh_environments()
