"""Similarity at class scale, and the scores that set its default threshold.

1. The test class of tests/test_similarity.py (the reference, two disguised
   copies, two independently written correct solutions, two untouched
   handouts): the lowest score of a disguised pair and the highest of any other.
2. Classes of 100 and 1,000 notebooks of the scaling lesson, read from disk as
   `grader similarity OUTDIR` reads a batch: each a disguised variant (renamed
   variables, reordered functions, changed comments) of one of the three
   correct solutions, of a bug of the test suite, or the untouched handout.
   Prints the seconds of `similarity.of_batch` for each (one run, one core).
Usage: python bench/similarity.py
"""

from __future__ import annotations

import random
import sys
import tempfile
import time
from pathlib import Path

import nbformat
from common import ROOT

sys.path.insert(0, str(ROOT / "tests"))

from conftest import patched_solution
from test_similarity import LESSON, SUBS, _class, _disguised

from grader.classroom import similarity
from grader.classroom.batch_folder import BatchFolder
from grader.lesson import catalog, handout

NAMES = ("predictions", "rows_read", "waited", "calls", "unfilled", "groups", "answers", "read", "baseline",
         "unit_saving", "general_work", "accel_work", "first_occurrences", "total_rows", "chunk", "got", "base")


def _bases() -> list:
    lesson = catalog.get(LESSON)
    bugs = sorted((ROOT / "tests" / "submissions" / LESSON).glob("*.py"))
    return ([handout.solution_notebook(lesson), handout.scaffold(lesson)]
            + [patched_solution(LESSON, SUBS / f"{name}.py") for name in ("independent-loops", "independent-functional")]
            + [patched_solution(LESSON, bug) for bug in bugs])


def _write_class(folder: Path, count: int, rng: random.Random) -> None:
    bases = _bases()
    (folder / "notebooks").mkdir(parents=True)
    for i in range(count):
        renames = {name: f"{name[:3]}_{rng.randrange(10**6)}" for name in rng.sample(NAMES, 6)}
        notebook = _disguised(rng.choice(bases), renames, reorder=rng.random() < 0.5)
        nbformat.write(notebook, str(folder / "notebooks" / f"s{i:04d}.ipynb"))


def main() -> None:
    report = similarity.analyse(_class(), handout.scaffold(catalog.get(LESSON)))
    copies = {frozenset(p) for p in (("orig", "copy1"), ("orig", "copy2"), ("copy1", "copy2"))}
    scores = {frozenset(p.students): p.score for p in report.code}
    print(f"test class: disguised copies score {min(scores.get(p, 0.0) for p in copies):.3f} at least; every other "
          f"pair {max([s for p, s in scores.items() if p not in copies] or [0.0]):.3f} at most "
          f"(threshold {similarity.THRESHOLD})")
    rng = random.Random(7)
    lesson = catalog.get(LESSON)
    for count in (100, 1000):
        with tempfile.TemporaryDirectory() as tmp:
            _write_class(Path(tmp), count, rng)
            began = time.perf_counter()
            found = similarity.of_batch(BatchFolder(Path(tmp)), lesson)
            spent = time.perf_counter() - began
        flagged = sum(p.flagged for p in found.code)
        print(f"{count} notebooks: {spent:.2f} s ({len(found.code)} pairs share a fingerprint, {flagged} flagged)")


if __name__ == "__main__":
    main()
