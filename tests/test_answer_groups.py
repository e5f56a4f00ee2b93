"""Similar written answers grouped: on 300 answers whose true groups are known (tests/data/written_answers.json:
paraphrases, typos, other case and punctuation, and wrong ideas beside right ones), the groups are pure and far
fewer decisions grade the class; the grouping is repeatable and its threshold does what it says."""

from __future__ import annotations

import json
import random
from collections import Counter, defaultdict
from pathlib import Path

from grader.judge import answer_groups

DATA = json.loads((Path(__file__).parent / "data" / "written_answers.json").read_text())


def _by_question() -> dict[tuple[str, str], list[dict[str, str]]]:
    found: dict[tuple[str, str], list[dict[str, str]]] = defaultdict(list)
    for answer in DATA:
        found[(answer["lesson"], answer["question"])].append(answer)
    return found


def _measure(threshold: float) -> tuple[float, int]:
    """(purity: the share of answers in their group's majority idea, decisions: one per group and one for each
    answer that must be graded apart from its group)."""
    pure = decisions = 0
    for answers in _by_question().values():
        found = answer_groups.group([a["text"] for a in answers], threshold=threshold)
        assert sorted(i for g in found.groups for i in g) == list(range(len(answers)))  # each answer once
        for members in found.groups:
            top = Counter(answers[i]["group"] for i in members).most_common(1)[0][1]
            pure += top
            decisions += 1 + len(members) - top
    return pure / len(DATA), decisions


def test_the_known_answers_group_purely_and_need_far_fewer_decisions() -> None:
    assert len(DATA) == 300
    ideas = len({(a["lesson"], a["question"], a["group"]) for a in DATA})
    identical = len({(a["lesson"], a["question"], answer_groups.normalised(a["text"])) for a in DATA})
    purity, decisions = _measure(answer_groups.THRESHOLD)
    assert purity >= 0.98  # a decision almost never grades a wrong idea with a right one
    assert ideas <= decisions <= identical // 2  # half the decisions identical answers would need, at most


def test_the_threshold_goes_from_identical_only_to_looser_groups() -> None:
    strict, _ = _measure(1.0)
    assert strict == 1.0
    _, at_one = _measure(1.0)
    _, looser = _measure(0.4)
    identical = len({(a["lesson"], a["question"], answer_groups.normalised(a["text"])) for a in DATA})
    assert at_one == identical and looser < at_one


def test_the_grouping_is_repeatable_and_does_not_depend_on_the_order_of_answers() -> None:
    answers = _by_question()[("inference-scaling", "prediction")]
    texts = [a["text"] for a in answers]
    first = answer_groups.group(texts)
    assert answer_groups.group(texts) == first
    order = list(range(len(texts)))
    random.Random(7).shuffle(order)
    shuffled = answer_groups.group([texts[i] for i in order])
    as_sets = {frozenset(texts[i] for i in g) for g in first.groups}
    assert {frozenset(texts[order[i]] for i in g) for g in shuffled.groups} == as_sets


def test_blank_answers_are_their_own_group_and_a_typo_joins_its_original() -> None:
    texts = ["", "No: both gains overlap, so they do not multiply.", "no both gians overlap so they do not multiply",
             "   ", "Yes, the two speedups multiply."]
    found = answer_groups.group(texts, [False, False, False, True, False])
    assert found.groups[0] == (0, 3) and found.kinds[0] == "blank"
    assert (1, 2) in found.groups and found.kinds[found.groups.index((1, 2))] == "similar"
    assert (4,) in found.groups
