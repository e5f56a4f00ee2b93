"""Grouping written answers at a class's scale: the time to group N answers to one question (default 1,000).

The answers are the 300 of tests/data/written_answers.json for one question each time, copied with fresh typos
until there are N (a class answers one question many times over with small differences), then grouped at the
default threshold; prints the median of five runs and the groups found. Figures, not a test.

Usage: python bench/answer_groups.py [answers=1000]
"""

from __future__ import annotations

import json
import random
import statistics
import sys
import time
from pathlib import Path

from grader.judge import answer_groups

ROOT = Path(__file__).resolve().parent.parent


def answers(n: int) -> list[str]:
    data = json.loads((ROOT / "tests" / "data" / "written_answers.json").read_text())
    pool = [a["text"] for a in data if a["question"] == "explanation"]
    rng = random.Random(1)
    made = []
    while len(made) < n:
        words = rng.choice(pool).split()
        i = rng.randrange(len(words))
        if len(words[i]) > 3:
            j = rng.randrange(1, len(words[i]) - 1)
            words[i] = words[i][:j] + words[i][j + 1:]
        made.append(" ".join(words))
    return made


def main(n: int) -> None:
    texts = answers(n)
    times, found = [], None
    for _ in range(5):
        began = time.perf_counter()
        found = answer_groups.group(texts)
        times.append(time.perf_counter() - began)
    assert found is not None
    print(f"{n} answers to one question grouped at {found.threshold:g} in {statistics.median(times) * 1000:.0f} ms "
          f"(median of 5; min {min(times) * 1000:.0f} ms); {len(found.groups)} groups, "
          f"{sum(k == 'similar' for k in found.kinds)} of them of similar answers")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 1000)
