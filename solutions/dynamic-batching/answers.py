# Completed answer cells of lesson dynamic-batching. Each cell replaces the
# scaffold's answer cell with the same id. Cells tagged `reference` also build
# the grader's reference namespace (in the grader process, never in a kernel).

# %% id=answer-batcher-sim tags=reference
def simulate_batching(arrival_ms, max_batch, max_wait_ms, setup_ms, per_item_ms):
    arrivals = np.asarray(arrival_ms, dtype=float)
    if arrivals.ndim != 1:
        raise ValueError("arrival times must be a one-dimensional vector")
    if not np.all(np.isfinite(arrivals)) or np.any(np.diff(arrivals) < 0):
        raise ValueError("arrival times must be finite and non-decreasing")
    if isinstance(max_batch, bool) or not isinstance(max_batch, (int, float, np.integer, np.floating)):
        raise ValueError("max_batch must be a whole number")
    if not math.isfinite(max_batch) or max_batch != int(max_batch) or max_batch < 1:
        raise ValueError("max_batch must be a whole number of at least 1")
    for name, value in (("max_wait_ms", max_wait_ms), ("setup_ms", setup_ms), ("per_item_ms", per_item_ms)):
        if isinstance(value, bool) or not math.isfinite(value) or value < 0:
            raise ValueError(f"{name} must be finite and >= 0")
    if setup_ms + per_item_ms <= 0:
        raise ValueError("a batch must take some time: setup_ms + per_item_ms > 0")
    size = int(max_batch)
    count = arrivals.size
    starts, finishes, sizes = np.zeros(count), np.zeros(count), np.zeros(count)
    free, oldest = 0.0, 0
    while oldest < count:
        full_at = arrivals[oldest + size - 1] if oldest + size <= count else math.inf
        dispatch = max(free, min(arrivals[oldest] + max_wait_ms, full_at))
        last = oldest
        while last + 1 < count and last + 1 - oldest < size and arrivals[last + 1] <= dispatch:
            last += 1
        taken = last - oldest + 1
        free = dispatch + (setup_ms + per_item_ms * taken)
        starts[oldest:last + 1], finishes[oldest:last + 1], sizes[oldest:last + 1] = dispatch, free, taken
        oldest = last + 1
    return starts, finishes, sizes

# %% id=answer-policy-choice tags=reference
def latency_summary(latencies_ms):
    values = np.asarray(latencies_ms, dtype=float)
    return {"p50": float(np.percentile(values, 50)), "p95": float(np.percentile(values, 95)),
            "p99": float(np.percentile(values, 99)), "max": float(values.max()), "count": int(values.size)}


def choose_policy(arrival_ms, setup_ms, per_item_ms, p99_slo_ms, max_batches, max_waits_ms):
    arrivals = np.asarray(arrival_ms, dtype=float)
    best, best_key = None, None
    for max_batch in max_batches:
        for max_wait in max_waits_ms:
            starts, finishes, sizes = simulate_batching(arrivals, max_batch, max_wait, setup_ms, per_item_ms)
            p99 = float(np.percentile(finishes - arrivals, 99))
            if p99 > p99_slo_ms:
                continue
            batches = len(set(starts.tolist()))  # one serial worker: each batch starts at its own time
            busy = batches * setup_ms + arrivals.size * per_item_ms
            key = (busy, p99, max_batch, max_wait)
            if best_key is None or key < best_key:
                best, best_key = (max_batch, max_wait), key
    return best


policy = choose_policy(TRACE_OVERLOADED, SETUP_MS, PER_ITEM_MS, P99_SLO_MS, MAX_BATCHES, MAX_WAITS_MS)

# %% id=answer-live-replay
live = replay(TRACE_OVERLOADED, *policy)
measured = latency_summary([r["received_ms"] - r["scheduled_ms"] for r in live])

# %% id=answer-service-fit tags=reference
def fit_service(records):
    per_batch = {}
    for record in records:
        per_batch[record["batch_id"]] = (record["batch_size"], record["compute_end_ms"] - record["compute_start_ms"])
    sizes = np.array([size for size, _ in per_batch.values()], dtype=float)
    times = np.array([took for _, took in per_batch.values()], dtype=float)
    if len(set(sizes.tolist())) < 2:
        raise ValueError("fitting a line needs batches of at least two different sizes")
    per_item, setup = np.polyfit(sizes, times, 1)
    return float(setup), float(per_item)


def predicted_for(records, chosen):
    """The reference's `predicted` for a student's own `live` and `policy` (grader only)."""
    setup, per_item = clamp_costs(*fit_service(records), records)
    starts, finishes, _ = simulate_batching(TRACE_OVERLOADED, chosen[0], chosen[1], setup, per_item)
    return latency_summary(finishes - TRACE_OVERLOADED)

# %% id=answer-predicted
fitted = clamp_costs(*fit_service(live), live)
_, finishes, _ = simulate_batching(TRACE_OVERLOADED, policy[0], policy[1], *fitted)
predicted = latency_summary(finishes - TRACE_OVERLOADED)
