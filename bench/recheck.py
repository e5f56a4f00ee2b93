"""A `check --watch` re-check after a one-line edit, against a plain nbclient run of the same notebook.

The capacity lesson's reference notebook is edited (one comment line in its
last answer cell, different each round) and saved; the watcher's re-check
(a fresh kernel forked from the warm template, the public cases, the verdict)
is timed from the save to the text it prints. Alternating with it, stock
nbclient runs the same notebook in a fresh default kernel. One run; the
figures are the medians and their ratio.
Usage: python bench/recheck.py [rounds=7]
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

import nbformat
from common import median, plain_run, quiet_stderr

from grader import watch
from grader.base.options import Options
from grader.lesson import catalog, handout

LESSON = "inference-capacity"


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 7
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "mine.ipynb"
        notebook = handout.solution_notebook(catalog.get(LESSON))
        answer = max(i for i, cell in enumerate(notebook.cells) if cell.cell_type == "code")
        nbformat.write(notebook, str(path))
        options, note = watch.watch_options(Options(public_only=True, sandbox="none"))
        print(note or "warm re-checks: bubblewrap and the lesson's template")
        watcher = watch.Watcher(path, LESSON, options)
        with quiet_stderr():
            first = time.perf_counter()
            watcher.poll()  # the first check starts the template
            first = time.perf_counter() - first
            rechecks, plain = [], []
            try:
                for round_ in range(rounds):
                    notebook.cells[answer].source += f"\n# edit {round_}"
                    nbformat.write(notebook, str(path))
                    began = time.perf_counter()
                    text = watcher.poll()
                    rechecks.append(time.perf_counter() - began)
                    assert text and "9 of 9" in text, text
                    plain.append(plain_run(path))
            finally:
                watcher.close()
    print(f"first check (starts the template): {first:.2f} s")
    print(f"re-check after a one-line edit: median {median(rechecks):.2f} s; rounds {[round(t, 2) for t in rechecks]}")
    print(f"plain nbclient run:             median {median(plain):.2f} s; rounds {[round(t, 2) for t in plain]}")
    print(f"re-check / plain: {median(rechecks) / median(plain):.3f}")


if __name__ == "__main__":
    main()
