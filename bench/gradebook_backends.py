"""The gradebook on its two databases: a class's grades added one by one, then read back as the class's files read
them (every row, and each student's latest summarised).

Each round makes a fresh gradebook: a SQLite file in a temporary folder, and, where an address is given, the
PostgreSQL database at it (its tables dropped first: give a throwaway one). A row is a result of about 30 KB of
JSON, as a capacity result is. Prints the median of ROUNDS rounds per database; nothing is asserted.

Usage: python bench/gradebook_backends.py [rows=1000] [rounds=3] [postgresql://USER@HOST/DB]
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from grader.result.gradebook import Gradebook


def _row(i: int) -> dict[str, object]:
    return {"lesson": "inference-capacity", "student": f"s{i:04d}", "status": "graded", "score": 10.0,
            "max_score": 12.0, "graded_at": f"2026-12-01T10:{i // 60 % 60:02d}:{i % 60:02d}", "exercises": [],
            "padding": "x" * 30_000}


def _round(where: str, rows: int) -> tuple[float, float]:
    book = Gradebook(where)
    try:
        began = time.perf_counter()
        for i in range(rows):
            book.add(_row(i), f"d{i}")
        added = time.perf_counter()
        read = sum(1 for _ in book.rows("inference-capacity"))
        listed = time.perf_counter()
        assert read == rows
        return added - began, listed - added
    finally:
        book.close()


def _drop(address: str) -> None:
    import psycopg

    with psycopg.connect(address, autocommit=True) as db:
        db.execute("DROP TABLE IF EXISTS grades, history, regrades")


def main() -> None:
    rows = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    places = ["sqlite"] + sys.argv[3:4]
    for place in places:
        timings = []
        for _ in range(rounds):
            if place == "sqlite":
                with tempfile.TemporaryDirectory() as folder:
                    timings.append(_round(str(Path(folder) / "gradebook.sqlite"), rows))
            else:
                _drop(place)
                timings.append(_round(place, rows))
        add = statistics.median(t[0] for t in timings)
        read = statistics.median(t[1] for t in timings)
        print(f"{'PostgreSQL' if place != 'sqlite' else 'SQLite':10s}  {rows} rows added one by one: {add:6.2f} s "
              f"({add / rows * 1000:5.2f} ms a row); all read back: {read:6.3f} s  (median of {rounds})")


if __name__ == "__main__":
    main()
