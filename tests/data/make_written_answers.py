"""Writes written_answers.json: 300 answers to the three lessons' six written questions, each with its true group.

Every idea (a group) is written by hand in three or four paraphrases; each paraphrase then appears as written and
in up to four copies a class produces without changing the idea: a typo or two, another case, other punctuation
and spacing. Wrong ideas sit beside right ones and share many of their words, as they do in a class. Run it again
to rebuild the file (it is deterministic).
"""

from __future__ import annotations

import json
import random
from pathlib import Path

IDEAS: dict[tuple[str, str], dict[str, list[str]]] = {
    ("inference-capacity", "prediction"): {
        "yes-bursts": [
            "Yes. Requests that arrive together in a burst wait behind each other even though the average rate is below capacity.",
            "Yes, because a burst of arrivals queues up behind the first request, so waiting happens even below capacity.",
            "Yes: bursts make requests wait for the ones ahead of them, even when the mean arrival rate is under the service rate.",
        ],
        "no-below-capacity": [
            "No. If arrivals are below capacity the server is always free, so nobody waits.",
            "No, below capacity there is never a queue because the server keeps up with every request.",
            "No: as long as the arrival rate is lower than the capacity, requests never have to wait.",
        ],
        "grows-forever": [
            "The queue grows forever whenever any two requests arrive close together.",
            "Waiting always grows without bound once requests overlap at all.",
            "Any overlap between requests makes the queue grow forever.",
        ],
        "rate-condition": [
            "Only when arrivals are faster than the service rate does the queue keep growing; otherwise bursts cause short waits.",
            "Lasting growth needs arrivals faster than service; below that, bursts only make temporary waits.",
            "The queue grows for good only if requests arrive faster than they are served, bursts alone give brief waits.",
        ],
    },
    ("inference-capacity", "explanation"): {
        "measured-vs-simulated": [
            "The p50 and p95 per batch size were measured on this machine, while the queue waits were simulated from a fixed timeline.",
            "Timings per batch size are measurements on this host; the queue results are a deterministic simulation.",
            "I measured the p50/p95 latency for each batch on this host and simulated the queue from the seeded arrivals.",
        ],
        "overload": [
            "In the overloaded run arrivals outpace service, so each request waits longer than the one before.",
            "When the queue is overloaded the arrivals come faster than the server can finish, so the wait keeps rising.",
            "Overload means requests arrive faster than they are served and the waiting time climbs with every request.",
        ],
        "fast-is-good": [
            "My timings were fast, so my solution is correct and should get full marks.",
            "The code is correct because the measured latency was very low on my laptop.",
            "Since my p50 was the fastest in the class my answer is right.",
        ],
        "tail": [
            "The p95 is above the p50 because a few runs are slow, and the cost per batch grows with its size.",
            "The tail latency (p95) sits above the median, and bigger batches cost more per call.",
            "p95 is higher than p50 since some calls are slow; larger batches take longer per call.",
        ],
    },
    ("inference-scaling", "prediction"): {
        "no-overlap": [
            "No: both gains come from the same repeated rows, so they overlap and do not multiply.",
            "They do not multiply, because caching and batching both save the work of the same repeated rows.",
            "No, the two savings overlap since each one removes reading of the same repeated rows.",
        ],
        "multiply": [
            "Yes, the speedups multiply: caching gives 2x and batching gives 3x, so together 6x.",
            "They multiply, so the combined gain is the product of the two speedups.",
            "Yes: the total speedup is cache gain times batching gain.",
        ],
        "add": [
            "The gains add up: the combined speedup is the sum of both.",
            "You add the two improvements together to get the total gain.",
            "The total gain is the cache gain plus the batching gain.",
        ],
        "depends": [
            "It depends on the hardware, so we cannot say before measuring.",
            "Hard to tell without running it, it depends on the machine.",
            "That depends on the accelerator and cannot be predicted.",
        ],
    },
    ("inference-scaling", "explanation"): {
        "pick-size": [
            "I pick batch size 32: it keeps the average wait small while the throughput is close to the maximum.",
            "Batch 32 is my choice because the wait stays low and throughput is nearly as high as it gets.",
            "I would use a batch of 32, since the average waiting time is small and we still get most of the throughput.",
        ],
        "crossover": [
            "The accelerator wins only above the crossover where its setup cost is paid back by the faster per-item time.",
            "Below the crossover the accelerator's setup time dominates; above it the faster per-item cost wins.",
            "The crossover is where the setup difference is repaid by the per-item savings of the accelerator.",
        ],
        "biggest-batch": [
            "Always use the biggest batch because bigger is always faster.",
            "The largest batch size is best since throughput only goes up.",
            "Pick the maximum batch, larger batches are always better.",
        ],
        "numbers-not-multiply": [
            "With the numbers, cache alone gives 1.8x and batching 2.5x but together only 3.1x, not 4.5x.",
            "The measured combined gain (3.1x) is less than the product 1.8 x 2.5 = 4.5x.",
            "Together they give 3.1x, clearly below the 4.5x you would get by multiplying 1.8 and 2.5.",
        ],
    },
    ("dynamic-batching", "prediction"): {
        "above-wait": [
            "The measured p99 will be above the simulated one, mostly because of extra waiting in the queue.",
            "I expect the real p99 to be higher than the simulation, mainly in the queue wait.",
            "Measured p99 higher than simulated; the difference will be in the waiting time.",
        ],
        "below-compute": [
            "The measured p99 will be lower than the simulated one because compute is faster than the fitted cost.",
            "I predict the live p99 below the simulation, since the real compute time is shorter.",
            "Lower p99 in the measurement than in the simulation, due to faster compute.",
        ],
        "same": [
            "They will be exactly the same because the simulation uses the same rule.",
            "Identical, the simulation and the server follow the same batching rule.",
            "No difference at all since the rule is the same in both.",
        ],
    },
    ("dynamic-batching", "explanation"): {
        "overhead": [
            "The measured p99 is higher because the server has HTTP and event loop overhead that the simulation leaves out.",
            "Part of the gap is overhead the simulation ignores: the HTTP handling and the event loop.",
            "The simulation leaves out request parsing and event-loop overhead, so the live tail is higher.",
        ],
        "jitter": [
            "Scheduling jitter on the shared host makes some batches start late, which the fitted costs do not model.",
            "On a shared machine the OS scheduler adds jitter, so some requests are delayed beyond the fitted model.",
            "Jitter from other processes on the host delays a few batches and inflates the p99.",
        ],
        "fit": [
            "The fitted setup and per-item costs are a straight line through the batch times and match them closely.",
            "The line through the measured batch times fits well, so the setup and per-item costs are believable.",
            "Setup cost and per-item cost come from a good linear fit of the batch durations.",
        ],
        "wrong-luck": [
            "The difference is just random luck and means nothing.",
            "It is only chance, the numbers differ randomly.",
            "Pure luck explains the gap between the two.",
        ],
    },
}


def _typo(text: str, rng: random.Random) -> str:
    words = text.split()
    for _ in range(rng.choice((1, 2))):
        i = rng.randrange(len(words))
        word = words[i]
        if len(word) > 3:
            j = rng.randrange(1, len(word) - 1)
            words[i] = word[:j] + word[j + 1] + word[j] + word[j + 2:] if rng.random() < 0.5 else word[:j] + word[j + 1:]
    return " ".join(words)


def _case(text: str, rng: random.Random) -> str:
    return text.lower() if rng.random() < 0.5 else text.upper()[:1] + text[1:].lower()


def _punct(text: str, rng: random.Random) -> str:
    stripped = "".join(c for c in text if c not in ".,:;")
    return "  ".join(stripped.split()) if rng.random() < 0.5 else stripped + " !"


def build(total: int = 300) -> list[dict[str, str]]:
    rng = random.Random(20261206)
    answers = []
    for (lesson, question), ideas in IDEAS.items():
        for group, paraphrases in ideas.items():
            for text in paraphrases:
                answers.append({"lesson": lesson, "question": question, "group": group, "text": text})
    variants = []
    for base in answers:
        for change in (_typo, _case, _punct, lambda t, r: _case(_typo(t, r), r)):
            variants.append(base | {"text": change(base["text"], rng)})
    rng.shuffle(variants)
    return answers + variants[:total - len(answers)]


if __name__ == "__main__":
    made = build()
    path = Path(__file__).with_name("written_answers.json")
    path.write_text(json.dumps(made, indent=1) + "\n")
    print(f"{len(made)} answers written to {path}")
