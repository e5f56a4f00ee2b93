"""Grading one submission against running its notebook plainly with nbclient.

Alternates the two, N rounds per lesson, and prints medians and the ratio
(grade / plain). Grading includes the sandbox, the probes and the judge.
Usage: python bench/grade_vs_plain.py [rounds]
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import nbformat
from common import median, plain_run, timed

from grader import grading
from grader.lesson import catalog, handout
from grader.lesson.draw import Given


def main(rounds: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        for lesson_id in ("inference-scaling", "inference-capacity"):
            path = Path(tmp) / f"{lesson_id}.ipynb"
            nbformat.write(handout.solution_notebook(catalog.get(lesson_id)), str(path))
            plain, graded = [], []
            plain_run(path)  # warm the page cache once
            for i in range(rounds):
                order = [("plain", lambda: plain_run(path)),
                         ("grade", lambda: grading.grade(path, lesson_id, grading.Options(), None, Given(seed=i)))]
                for name, fn in (order if i % 2 == 0 else order[::-1]):
                    (plain if name == "plain" else graded).append(timed(fn))
            p, g = median(plain), median(graded)
            print(f"{lesson_id}: plain nbclient median {p:.2f} s, grade median {g:.2f} s, "
                  f"ratio {g / p:.2f} ({rounds} alternating rounds)")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 7)
