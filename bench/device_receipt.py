"""Grade each lesson's reference solution on an accelerator and print the environment receipt.

Run it by hand on a machine that has one (tests run on the CPU only):
    python bench/device_receipt.py gpu        # or tpu, or auto
It prints, per lesson, the score, the device asked for and used, and the
receipt that every result carries (host, memory, OS, Python, JAX, backend,
device kind and count, isolation, jobs), and where the result was written.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

import nbformat

from grader import grading, lessons, sign


def main(device: str) -> None:
    out = Path(tempfile.mkdtemp(prefix="receipt-"))
    for lesson_id in lessons.available():
        path = out / f"{lesson_id}.ipynb"
        nbformat.write(lessons.solution_notebook(lessons.get(lesson_id)), str(path))
        result = grading.grade(path, lesson_id, grading.Options(device=device, device_fallback=True))
        data = sign.stamp(result.to_dict(), sign.signing_key(), notebook=None, report=None, markdown=None)
        target = out / f"{lesson_id}.json"
        target.write_text(json.dumps(data, indent=2, default=str))
        env = data["environment"]
        print(f"{lesson_id}: {data['score']:g}/{data['max_score']:g} on {env['device_used']} "
              f"(asked {env['device_requested']}{', fell back' if env['device_fell_back'] else ''}); "
              f"signed: {data['signature'] is not None}; {target}")
        for key in ("cpu_model", "cpu_count", "memory_bytes", "os_release", "python", "jax", "jaxlib", "jax_backend",
                    "jax_device_kind", "jax_device_count", "grader", "grader_commit", "isolation", "jobs_at_once"):
            print(f"    {key}: {env.get(key)}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "auto")
