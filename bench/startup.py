"""The grader's own start: how long a fresh process takes to import what `grader batch` runs, and what it pays for
jsonschema's optional format checkers.

Each way is timed in a fresh interpreter, alternating, and the medians are printed: importing the batch's modules
as the grader does (grader/__init__.py keeps rfc3987_syntax out: jsonschema imports it only to check the "iri"
format, which no schema here uses), and the same imports with rfc3987_syntax let in, as any process that imports
jsonschema first gets where JupyterLab is installed.
Usage: python bench/startup.py [rounds=5]
"""

from __future__ import annotations

import subprocess
import sys
import time

from common import bytecode, median

BATCH = "import grader.cli, grader.classroom.batch, grader.kernel.warm_start"
WAYS = {
    "as the grader starts": BATCH,
    "with rfc3987_syntax let in": f"import jsonschema; {BATCH}",
}


def timed(code: str) -> float:
    began = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True)
    return time.perf_counter() - began


def main(rounds: int) -> None:
    print(bytecode())
    loaded = subprocess.run([sys.executable, "-c", f"import sys; {BATCH}; print(sys.modules.get('rfc3987_syntax') is not None)"],
                            capture_output=True, text=True, check=True).stdout.strip()
    times: dict[str, list[float]] = {name: [] for name in WAYS}
    for _ in range(rounds):
        for name, code in WAYS.items():
            times[name].append(timed(code))
    print(f"a fresh process importing the batch's modules, median of {rounds}:")
    for name, seconds in times.items():
        print(f"  {name:<30} {median(seconds):.2f} s")
    print(f"rfc3987_syntax loaded as the grader starts: {loaded}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 5)
