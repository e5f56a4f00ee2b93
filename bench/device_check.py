"""Grade every lesson's reference and samples on an accelerator and on the CPU of the same host, side by side.

    bench/device_check.sh [gpu]          # installs the `gpu` extra, then runs this
    python bench/device_check.py gpu     # the same, with what is installed

Everything goes through the command line as an instructor would run it: `grader grade` (sandboxed) for each
lesson's reference, then `grader batch` over `samples/<lesson>/`, once with `--device DEVICE` and once with
`--device cpu`. No `--device-fallback`: a device that does not work is printed as refused, with the grader's line.
Printed per lesson: score and wall time on each device, the receipt (device used, as checked before the student's
cells; JAX backend and device as the kernel reported; matmul precision; memory bound), the measured values of the
reference (medians and tails), and each sample's score on both devices with the batch's own summary time.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
GRADER = str(Path(sys.executable).with_name("grader"))
RECEIPT = ("device_used", "jax_backend", "jax_device_kind", "jax_device_count", "jax_matmul_precision")


def _grade(notebook: Path, lesson: str, device: str, out: Path) -> tuple[dict[str, Any] | None, float, str]:
    began = time.monotonic()
    done = subprocess.run([GRADER, "grade", str(notebook), "--lesson", lesson, "--device", device, "--json",
                           str(out)], capture_output=True, text=True, timeout=1200)
    seconds = time.monotonic() - began
    data = json.loads(out.read_text()) if out.is_file() else None
    return data, seconds, done.stderr.strip().splitlines()[-1] if done.returncode else ""


def _measured(data: dict[str, Any]) -> list[str]:
    """The reference's measured values, as short lines: per-batch medians and tails, or a latency summary."""
    from grader.judge.matching import plain  # the values are stored in the probe's wire form

    lines = []
    for name, value in ((data.get("measured") or {}).get("values") or {}).items():
        value = plain(value) if value is not None else None
        value = value.tolist() if hasattr(value, "tolist") else value
        if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
            shown = [{k: round(v[k], 3) for k in ("batch", "p50_ms", "p95_ms") if isinstance(v.get(k), (int, float))}
                     for v in value[:8]]
            lines.append(f"{name}: {shown}" if any(shown) else f"{name}: {len(value)} records")
        elif isinstance(value, dict):
            parts = []
            for key, item in value.items():
                item = item.tolist() if hasattr(item, "tolist") else item
                if isinstance(item, (int, float)) and not isinstance(item, bool):
                    parts.append(f"{key} {float(item):.3f}")
                elif isinstance(item, list) and len(item) > 4 and all(isinstance(x, (int, float)) for x in item):
                    parts.append(f"{key} p50 {np.percentile(item, 50):.2f} p99 {np.percentile(item, 99):.2f} (n {len(item)})")
                elif isinstance(item, list) and len(item) <= 4:
                    parts.append(f"{key} {item}")
            lines.append(f"{name}: " + ", ".join(parts))
    return lines


def _batch(lesson: str, device: str, out: Path) -> tuple[dict[str, float], str]:
    done = subprocess.run([GRADER, "batch", str(ROOT / "samples" / lesson), "--lesson", lesson, "--out", str(out),
                           "--device", device], capture_output=True, text=True, timeout=3600)
    if done.returncode:
        return {}, "refused: " + (done.stderr.strip().splitlines() or ["?"])[-1]
    scores = {p.stem: json.loads(p.read_text()).get("score") for p in sorted((out / "results").glob("*.json"))}
    summary = next((line for line in done.stdout.splitlines() if " submissions: " in line), "")
    return scores, summary


def main(device: str) -> None:
    sys.path.insert(0, str(ROOT))
    import nbformat

    from grader.lesson import catalog, handout

    out = Path(os.environ.get("GRADER_DEVICE_CHECK_OUT") or tempfile.mkdtemp(prefix="device-check-"))
    devices = (device, "cpu")
    print(f"device check: {device} against cpu on this host; results under {out}")
    for lesson in catalog.available():
        print(f"\n== {lesson}")
        notebook = out / f"{lesson}-reference.ipynb"
        nbformat.write(handout.solution_notebook(catalog.get(lesson)), str(notebook))
        for dev in devices:
            data, seconds, refused = _grade(notebook, lesson, dev, out / f"{lesson}-{dev}.json")
            if data is None or data.get("status") != "graded":
                print(f"reference on {dev}: refused ({refused or (data or {}).get('error')}) after {seconds:.1f} s")
                continue
            env = data["environment"]
            print(f"reference on {dev}: {data['score']:g}/{data['max_score']:g} in {seconds:.1f} s; "
                  + "; ".join(f"{k} {env.get(k)}" for k in RECEIPT) + f"; memory {data['sandbox'].get('memory_bound')}")
            for line in _measured(data):
                print(f"    measured on {dev}: {line}")
        per_device = {dev: _batch(lesson, dev, out / f"{lesson}-batch-{dev}") for dev in devices}
        for dev, (_, summary) in per_device.items():
            print(f"samples on {dev}: {summary}")
        students = sorted(set().union(*(scores for scores, _ in per_device.values())))
        for student in students:
            print(f"    {student:<24}" + "  ".join(f"{dev} {per_device[dev][0].get(student)}" for dev in devices))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "gpu")
