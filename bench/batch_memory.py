"""Parent memory as the class grows: the same 40 submissions, then repeated to 1,000.

Prints the batch parent's own peak resident memory for each size (the figure
`grader batch` reports on its summary line) and their ratio, and, sampled five
times a second during the 40, the memory of every kernel at once at the
default jobs: the sum of their proportional set sizes (a forked kernel shares
the warm template's pages, so PSS counts each page once) and of their RSS.
Usage: python bench/batch_memory.py [large=1000]
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

from common import mixed_set

from grader.kernel.devices import default_jobs


def peak(folder: Path, out: Path, kernels: dict[str, float] | None = None) -> tuple[float, str]:
    process = subprocess.Popen([sys.executable, "-m", "grader", "batch", str(folder), "--lesson", "inference-capacity",
                                "--out", str(out)], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    if kernels is not None:
        watcher = threading.Thread(target=_watch_kernels, args=(process, kernels), daemon=True)
        watcher.start()
    stdout, _ = process.communicate()
    if process.returncode:
        raise SystemExit(f"grader batch failed ({process.returncode})")
    line = next((ln for ln in stdout.splitlines() if "parent peak memory" in ln), "")
    found = re.search(r"parent peak memory (\d+) MB", line)
    if not found:
        raise SystemExit(f"no summary line in the batch's output:\n{stdout[-2000:]}")
    return float(found.group(1)), line


def _kernel_memory() -> tuple[float, float, int]:
    """(PSS MB, RSS MB, count) of the warm template and every kernel it forked (they keep its command line)."""
    pss = rss = 0.0
    count = 0
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if b"zygote_process" not in Path(f"/proc/{pid}/cmdline").read_bytes():
                continue
            fields = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines()[1:])
        except (OSError, ValueError):
            continue
        pss += int(fields["Pss"].split()[0]) / 1024
        rss += int(fields["Rss"].split()[0]) / 1024
        count += 1
    return pss, rss, count


def _watch_kernels(process: subprocess.Popen, kernels: dict[str, float]) -> None:
    while process.poll() is None:
        pss, rss, count = _kernel_memory()
        if pss > kernels.get("pss", 0.0):
            kernels.update(pss=pss, rss=rss, count=count)
        threading.Event().wait(0.2)


def main(large: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        base = mixed_set(Path(tmp) / "src", 40)["inference-capacity"]
        sizes: dict[int, float] = {}
        kernels: dict[str, float] = {}
        for size in (40, large):
            folder = Path(tmp) / f"class-{size}"
            folder.mkdir()
            for i in range(size):
                shutil.copy(base[i % len(base)], folder / f"student{i:04d}.ipynb")
            sizes[size], line = peak(folder, Path(tmp) / f"out-{size}", kernels if size == 40 else None)
            print(f"{size} submissions: {line}", flush=True)
            if size == 40:
                print(f"  kernels at the default jobs ({default_jobs()}): peak {kernels.get('pss', 0):.0f} MB PSS "
                      f"({kernels.get('rss', 0):.0f} MB RSS) over {kernels.get('count', 0)} processes "
                      "(the warm template and the kernels running then)", flush=True)
        print(f"\nparent peak: {sizes[40]:.0f} MB for 40, {sizes[large]:.0f} MB for {large}: ratio {sizes[large] / sizes[40]:.2f}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 1000)
