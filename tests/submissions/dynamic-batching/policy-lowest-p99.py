# %% id=answer-policy-choice
def latency_summary(latencies_ms):
    values = np.asarray(latencies_ms, dtype=float)
    return {"p50": float(np.percentile(values, 50)), "p95": float(np.percentile(values, 95)),
            "p99": float(np.percentile(values, 99)), "max": float(values.max()), "count": int(values.size)}


def choose_policy(arrival_ms, setup_ms, per_item_ms, p99_slo_ms, max_batches, max_waits_ms):
    # picks the fastest policy rather than the cheapest one that meets the objective
    arrivals = np.asarray(arrival_ms, dtype=float)
    best = None
    for max_batch in max_batches:
        for max_wait in max_waits_ms:
            _, finishes, _ = simulate_batching(arrivals, max_batch, max_wait, setup_ms, per_item_ms)
            p99 = float(np.percentile(finishes - arrivals, 99))
            if p99 <= p99_slo_ms and (best is None or p99 < best[0]):
                best = (p99, (max_batch, max_wait))
    return None if best is None else best[1]


policy = choose_policy(TRACE_OVERLOADED, SETUP_MS, PER_ITEM_MS, P99_SLO_MS, MAX_BATCHES, MAX_WAITS_MS)
