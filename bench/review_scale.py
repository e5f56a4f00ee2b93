"""The review page at the size of a class: time to load the page and to save one decision.

Grades one solution of inference-capacity, then makes a batch folder of N
students from it (each a copy of that result with its own id and prediction:
a third identical, a third left as the handout's prompt, the rest their own),
serves `grader review` on it and times, over HTTP on 127.0.0.1: opening the
review (reading every result), loading the page, and saving a decision (one
student; and a group of identical answers), each the median of a few rounds.
Usage: python bench/review_scale.py [students=300] [rounds=5]
"""

from __future__ import annotations

import dataclasses
import json
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

from common import ROOT, median

from grader import grading
from grader.classroom import review_app
from grader.classroom.review import Review
from grader.lesson import catalog, handout
from grader.lesson.draw import Given
from grader.report import finish
from grader.result import gradebook, record

LESSON = "inference-capacity"


def make_batch(out: Path, students: int) -> None:
    import nbformat

    notebook = out.parent / "solution.ipynb"
    nbformat.write(handout.solution_notebook(catalog.get(LESSON)), str(notebook))
    base = grading.grade(notebook, LESSON, grading.Options(), None, Given(seed=1))
    graded = finish.drawn(base)
    book = gradebook.Gradebook(out / "gradebook.sqlite")
    for i in range(students):
        student = f"s{i:04d}"
        text = ["A burst waits behind itself.", "", f"My own answer {i}: arrivals outpace service."][i % 3]
        said = tuple(type(e)(e.cell_id, e.kind, ("## Your prediction\n\n" + text) if text else e.text, not text)
                     if e.cell_id == "prediction" else e for e in base.explanations)
        result = dataclasses.replace(graded.result, student=student, explanations=said, digest=f"{i:064x}")
        data = finish.Graded(result, graded.report_html, graded.report_md, graded.notebook).sealed(None)
        (out / "reports").mkdir(parents=True, exist_ok=True)
        (out / "reports" / f"{student}.html").write_text(graded.report_html)
        (out / "reports" / f"{student}.md").write_text(graded.report_md)
        record.write_json(data, out / "results" / f"{student}.json")
        book.add(data, f"{i:064x}")
    book.close()


def main() -> None:
    students = int(sys.argv[1]) if len(sys.argv) > 1 else 300
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "out"
        out.mkdir()
        began = time.perf_counter()
        make_batch(out, students)
        print(f"{students} students' results made in {time.perf_counter() - began:.1f} s (one grade, copied)")
        opened = []
        for _ in range(rounds):
            began = time.perf_counter()
            Review(out).close()
            opened.append(time.perf_counter() - began)
        ready: list[str] = []
        threading.Thread(target=review_app.serve, args=(out, "bench"), kwargs={"ready": ready.append},
                         daemon=True).start()
        while not ready:
            time.sleep(0.05)
        url = ready[0]
        base_url = url.split("/?")[0]
        token = url.split("token=")[1]
        loads, one, group = [], [], []
        for r in range(rounds):
            began = time.perf_counter()
            with urllib.request.urlopen(url, timeout=60) as page:
                size = len(page.read())
            loads.append(time.perf_counter() - began)
            one.append(_post(base_url, token, {"question": "prediction", "students": [f"s{2 + 3 * r:04d}"],
                                               "items": ["yes-bursts"], "comment": "round " + str(r)}))
            group.append(_post(base_url, token, {"question": "prediction",
                                                 "students": [f"s{i:04d}" for i in range(0, students, 3)],
                                                 "items": ["yes-bursts", "rate-vs-capacity"][: 1 + r % 2]}))
        print(f"open the review (read {students} results): median {median(opened):.3f} s")
        print(f"load the page ({size // 1024} KiB): median {median(loads):.3f} s; rounds {[round(t, 3) for t in loads]}")
        print(f"save one decision (one student, re-signed): median {median(one) * 1000:.0f} ms; "
              f"rounds {[round(t * 1000) for t in one]}")
        print(f"save a group's decision ({len(range(0, students, 3))} identical answers): median {median(group):.2f} s")


def _post(base_url: str, token: str, body: dict) -> float:
    request = urllib.request.Request(base_url + "/api/decide", data=json.dumps(body).encode(), method="POST",
                                     headers={"Content-Type": "application/json", "X-Review-Token": token,
                                              "Cookie": f"{review_app.COOKIE}={token}"})
    began = time.perf_counter()
    with urllib.request.urlopen(request, timeout=600) as answer:
        answer.read()
    return time.perf_counter() - began


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    main()
