"""options.py: the bounds on seeds are the ones Python and JSON impose."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys

from grader.base.options import MAX_HASH_SEED, MAX_SEED, Options


def test_the_largest_hash_seed_is_the_largest_python_accepts():
    def starts(seed: int) -> bool:
        env = dict(os.environ, PYTHONHASHSEED=str(seed))
        return subprocess.run([sys.executable, "-c", "pass"], env=env, capture_output=True, timeout=30).returncode == 0

    assert starts(MAX_HASH_SEED) and not starts(MAX_HASH_SEED + 1)


def test_the_largest_seed_stays_exact_as_a_json_number():
    assert float(MAX_SEED) == MAX_SEED and float(MAX_SEED + 2) != MAX_SEED + 2  # beyond 2**53 a double skips


def test_defaults_grade_fully_on_the_cpu_with_hidden_cases():
    options = Options()
    assert options.public_only is False and options.device == "cpu"
    assert options.sandbox == "auto" and options.device_fallback is False
    # how to run, never whom: a student's seeds, numbers and handout key are their draw (lesson/draw.py)
    assert len(dataclasses.fields(Options)) <= 8
