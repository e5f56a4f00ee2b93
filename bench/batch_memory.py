"""Parent memory as the class grows: the same 40 submissions, then repeated to 1,000.

Prints the batch parent's own peak resident memory for each size (the figure
`grader batch` reports on its summary line) and their ratio.
Usage: python bench/batch_memory.py [large=1000]
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from common import mixed_set


def peak(folder: Path, out: Path) -> tuple[float, str]:
    done = subprocess.run([sys.executable, "-m", "grader", "batch", str(folder), "--lesson", "inference-capacity",
                           "--out", str(out)], check=True, capture_output=True, text=True)
    line = done.stdout.strip().splitlines()[-1]
    return float(re.search(r"parent peak memory (\d+) MB", line).group(1)), line


def main(large: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        base = mixed_set(Path(tmp) / "src", 40)["inference-capacity"]
        sizes = {}
        for size in (40, large):
            folder = Path(tmp) / f"class-{size}"
            folder.mkdir()
            for i in range(size):
                shutil.copy(base[i % len(base)], folder / f"student{i:04d}.ipynb")
            sizes[size], line = peak(folder, Path(tmp) / f"out-{size}")
            print(f"{size} submissions: {line}", flush=True)
        print(f"\nparent peak: {sizes[40]:.0f} MB for 40, {sizes[large]:.0f} MB for {large}: ratio {sizes[large] / sizes[40]:.2f}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 1000)
