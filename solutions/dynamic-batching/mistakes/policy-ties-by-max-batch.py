# %% id=answer-policy-choice
def latency_summary(latencies_ms):
    values = np.asarray(latencies_ms, dtype=float)
    return {"p50": float(np.percentile(values, 50)), "p95": float(np.percentile(values, 95)),
            "p99": float(np.percentile(values, 99)), "max": float(values.max()), "count": int(values.size)}


def choose_policy(arrival_ms, setup_ms, per_item_ms, p99_slo_ms, max_batches, max_waits_ms):
    # the cheapest policy that meets the objective, but a tie in busy time goes to the smaller max_batch
    # before the lower p99 (the rule says: lower p99 first)
    arrivals = np.asarray(arrival_ms, dtype=float)
    best, best_key = None, None
    for max_batch in max_batches:
        for max_wait in max_waits_ms:
            starts, finishes, _ = simulate_batching(arrivals, max_batch, max_wait, setup_ms, per_item_ms)
            p99 = float(np.percentile(finishes - arrivals, 99))
            if p99 > p99_slo_ms:
                continue
            busy = len(set(starts.tolist())) * setup_ms + arrivals.size * per_item_ms
            key = (busy, max_batch, p99, max_wait)
            if best_key is None or key < best_key:
                best, best_key = (max_batch, max_wait), key
    return best


policy = choose_policy(TRACE_OVERLOADED, SETUP_MS, PER_ITEM_MS, P99_SLO_MS, MAX_BATCHES, MAX_WAITS_MS)
