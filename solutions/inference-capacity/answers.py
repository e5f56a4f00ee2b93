# Completed answer cells of lesson inference-capacity. Each cell replaces the
# scaffold's answer cell with the same id. Cells tagged `reference` also build
# the grader's reference namespace (in the grader process, never in a kernel).

# %% id=answer-measure
def measure(batch_size, repeats=40):
    host = rng.normal(size=(batch_size, 64)).astype(np.float32)
    on_device = jnp.asarray(host)

    clock = time.perf_counter()
    first = infer(on_device).block_until_ready()
    first_call_ms = (time.perf_counter() - clock) * 1000.0

    np.testing.assert_allclose(first, np.tanh(host @ np.asarray(W1)) @ np.asarray(W2), rtol=2e-5, atol=2e-6)

    samples_ms = []
    for _ in range(repeats):
        clock = time.perf_counter()
        infer(on_device).block_until_ready()
        samples_ms.append((time.perf_counter() - clock) * 1000.0)

    p50_ms = float(np.percentile(samples_ms, 50))
    return {
        "batch": batch_size,
        "first_call_ms": first_call_ms,
        "samples_ms": samples_ms,
        "p50_ms": p50_ms,
        "p95_ms": float(np.percentile(samples_ms, 95)),
        "steady_examples_per_second": 1000.0 * batch_size / p50_ms,
    }

# %% id=answer-measurements
measurements = [measure(size) for size in (1, 8, 32)]

# %% id=answer-queue tags=reference
def simulate_queue(arrival_ms, service_ms):
    arrivals = np.asarray(arrival_ms, dtype=float)
    if arrivals.ndim != 1:
        raise ValueError("arrival times must be a one-dimensional vector")
    if not np.all(np.isfinite(arrivals)):
        raise ValueError("arrival times must be finite")
    if np.any(np.diff(arrivals) < 0):
        raise ValueError("arrival times must not decrease")
    service = float(service_ms)
    if not math.isfinite(service) or service <= 0:
        raise ValueError("service time must be a finite number of milliseconds above zero")

    starts = np.empty_like(arrivals)
    finishes = np.empty_like(arrivals)
    worker_free = 0.0
    for i, arrival in enumerate(arrivals):
        starts[i] = max(arrival, worker_free)
        worker_free = starts[i] + service
        finishes[i] = worker_free
    return starts, finishes, finishes - arrivals

# %% id=answer-burst tags=reference
_, burst_finish, burst_latency = simulate_queue(np.zeros(BURST_REQUESTS), BURST_SERVICE_MS)

# %% id=answer-burst-sensitivity tags=reference
_, _, smooth = simulate_queue(3.0 * np.arange(5), 2.0)
_, _, burst = simulate_queue(np.zeros(5), 2.0)

# %% id=answer-deadline tags=reference
def count_missed(latencies_ms, deadline_ms):
    return int(np.sum(np.asarray(latencies_ms, dtype=float) > deadline_ms))


_, _, deadline_latencies = simulate_queue(np.zeros(5), 2.0)
missed_deadlines = count_missed(deadline_latencies, DEADLINE_MS)

# %% id=answer-replica-plan tags=reference
def plan_replicas(arrival_per_s, capacity_per_s, target_utilization):
    if min(arrival_per_s, capacity_per_s, target_utilization) <= 0:
        raise ValueError("arrival rate, capacity and utilisation must all be above zero")
    if target_utilization > 1:
        raise ValueError("a target utilisation above 1 plans for a backlog")
    return math.ceil(arrival_per_s / (target_utilization * capacity_per_s))

# %% id=answer-batch-collection tags=reference
collection_wait = (BATCH_SIZE - 1 - np.arange(BATCH_SIZE)) * SPACING_MS

# %% id=answer-p95 tags=reference
nineteen_fast_one_slow = np.array([1.0] * 19 + [100.0])
interpolated_p95 = float(np.percentile(nineteen_fast_one_slow, 95, method="linear"))
