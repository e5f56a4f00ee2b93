"""Run every benchmark once, one after the other (`make bench`)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).parent
for script in ("startup.py", "grade_vs_plain.py", "sandbox_overhead.py", "dashboard_render.py", "batch_throughput.py",
               "batch_memory.py", "batching_live_vs_sim.py", "serve_load.py"):
    print(f"== {script}", flush=True)
    subprocess.run([sys.executable, str(HERE / script)], check=False)
