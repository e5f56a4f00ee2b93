"""Grouping written answers: how well on answers whose groups are known, and how fast at a class's scale.

First, on the 300 answers of tests/data/written_answers.json (six questions, 23 ideas), per threshold: the purity
(the share of answers in their group's majority idea) and the decisions that grade them all (one per group, one
more for each answer graded apart from its group), beside the counts before (identical after case and spaces) and
after normalising alone.

Then the time to group N answers to one question (default 1,000): the known explanations copied with fresh typos
until there are N (a class answers one question many times over with small differences), grouped at the default
threshold; the median of five runs and the groups found. Figures, not a test.

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


def known() -> None:
    from collections import Counter, defaultdict

    data = json.loads((ROOT / "tests" / "data" / "written_answers.json").read_text())
    by_question: dict[tuple[str, str], list[dict[str, str]]] = defaultdict(list)
    for answer in data:
        by_question[(answer["lesson"], answer["question"])].append(answer)
    before = len({(a["lesson"], a["question"], " ".join(a["text"].split()).lower()) for a in data})
    ideas = len({(a["lesson"], a["question"], a["group"]) for a in data})
    print(f"{len(data)} known answers, {ideas} ideas; identical answers alone (case and spaces aside): {before} "
          "decisions")
    for threshold in (1.0, 0.8, answer_groups.THRESHOLD, 0.5, 0.4, 0.3):
        pure = decisions = 0
        for answers in by_question.values():
            found = answer_groups.group([a["text"] for a in answers], threshold=threshold)
            for members in found.groups:
                top = Counter(answers[i]["group"] for i in members).most_common(1)[0][1]
                pure, decisions = pure + top, decisions + 1 + len(members) - top
        print(f"  threshold {threshold:g}: purity {pure / len(data):.3f}, {decisions} decisions")


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
    known()
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 1000)
