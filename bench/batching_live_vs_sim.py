"""Measured vs simulated latency of lesson dynamic-batching's three traces under the reference policy.

For each trace: replay it against the lesson's live server (in this process, on
loopback), fit the batch costs to the measured batches, simulate the same trace
and policy under the fitted costs, and print p50/p95/p99 of wait, compute,
overhead and total for both, with the sample counts and the fitted costs.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from grader.lesson import catalog, handout, staff_code

LESSON = "dynamic-batching"


def given_namespace() -> dict:
    namespace: dict = {"__name__": "bench_dynamic_batching"}
    for cell in handout.scaffold(catalog.get(LESSON)).cells:
        if cell.cell_type == "code" and "given" in cell.metadata.get("tags", []) and cell["id"] not in (
                "given-comparison", "given-hand-check"):
            exec(compile(cell.source, cell["id"], "exec"), namespace)
    return namespace


def row(name: str, values: np.ndarray) -> str:
    p50, p95, p99 = np.percentile(values, [50, 95, 99])
    return f"{name:>9} {p50:9.2f} {p95:9.2f} {p99:9.2f} {values.size:6d}"


def main() -> None:
    given, ref = given_namespace(), staff_code.reference(catalog.get(LESSON))
    policy = ref["policy"]
    given["warm_shapes"]()
    print(f"policy (max_batch, max_wait_ms) = {policy}, chosen by the reference for TRACE_OVERLOADED "
          f"under the declared costs ({given['SETUP_MS']} + {given['PER_ITEM_MS']} ms per item)")
    for name in ("TRACE_STABLE", "TRACE_OVERLOADED", "TRACE_BURST"):
        trace = given[name]
        live = given["replay"](trace, *policy)
        setup, per_item = given["clamp_costs"](*ref["fit_service"](live), live)
        starts, finishes, _ = ref["simulate_batching"](trace, policy[0], policy[1], setup, per_item)
        measured = given["service_components"](live)
        simulated = given["simulated_components"](trace, starts, finishes)
        late = np.array([r["sent_ms"] - r["scheduled_ms"] for r in live])
        print(f"\n{name}: {trace.size} requests over {trace[-1] / 1000:.2f} s (digest {given['trace_digest'](trace)}); "
              f"fitted costs {setup:.3f} + {per_item:.3f} ms per item; late sends p99 {np.percentile(late, 99):.2f} ms")
        print(f"{'':>9} {'p50 ms':>9} {'p95 ms':>9} {'p99 ms':>9} {'n':>6}")
        for component in ("wait", "compute", "overhead", "total"):
            print(row(component, measured[component]), " measured")
            print(row("", simulated[component]), " simulated")
        ratio = np.percentile(measured["total"], 99) / np.percentile(simulated["total"], 99)
        print(f"  p99 total, measured / simulated: {ratio:.2f}")


if __name__ == "__main__":
    main()
