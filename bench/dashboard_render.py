"""Rendering the dashboard for 1,000 results against grading one notebook.

Usage: python bench/dashboard_render.py [rounds=5]
"""

from __future__ import annotations

import copy
import sys
import tempfile
import time
from pathlib import Path

import nbformat
from common import median

from grader import grading
from grader.lesson import catalog, handout
from grader.lesson.draw import Given
from grader.report import render
from grader.result import gradebook


def main(rounds: int) -> None:
    lesson = catalog.get("inference-capacity")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "solution.ipynb"
        nbformat.write(handout.solution_notebook(lesson), str(path))
        grade_times, results = [], []
        for i in range(rounds):
            began = time.perf_counter()
            results.append(grading.grade(path, lesson.id, grading.Options(), None, Given(seed=i)).to_dict())
            grade_times.append(time.perf_counter() - began)
    many = []
    for i in range(1000):
        item = copy.deepcopy(results[i % len(results)])
        item["student"] = f"student{i:04d}"
        item["score"] = float(i % 10)
        many.append(item)
    render_times = []
    for _ in range(rounds):
        began = time.perf_counter()
        render.dashboard_html([gradebook.row_summary(item) for item in many], lesson)  # as the gradebook reads rows
        render_times.append(time.perf_counter() - began)
    g, r = median(grade_times), median(render_times)
    print(f"grading one notebook: median {g:.2f} s; dashboard for 1000 results: median {r:.3f} s; "
          f"ratio {r / g:.3f} (target < 0.1)")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 5)
