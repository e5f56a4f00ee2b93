# The given traces cell of dynamic-batching release 1 (TRACE_OVERLOADED was poisson_trace(12, 400, 2.25)), as a
# notebook handed out before release 2 holds it. Release 1's server cell is release 2's without the line that
# warms its worker thread (tests/test_releases.py takes that line out).

# %% id=given-traces tags=given
# Declared costs of one batch on the course's reference machine, the latency
# objective, the policy grid, and three arrival traces (milliseconds). Every time
# is a multiple of 0.25 ms, so that any correct simulation agrees to the last bit.
SETUP_MS = 2.0
PER_ITEM_MS = 0.5
P99_SLO_MS = 10.0
MAX_BATCHES = (1, 2, 4, 8, 16, 32)
MAX_WAITS_MS = (0.0, 1.0, 2.0, 4.0, 8.0)
MAX_REQUESTS = 400
MAX_SPAN_MS = 10_000.0


def poisson_trace(seed, count, mean_gap_ms):
    """Arrival times with exponential gaps, starting at 0, rounded to 0.25 ms."""
    gaps = np.random.default_rng(seed).exponential(mean_gap_ms, count)
    times = np.cumsum(gaps) - gaps[0]
    return np.round(times * 4.0) / 4.0


TRACE_STABLE = poisson_trace(11, 300, 8.0)         # about 125 requests per second
TRACE_OVERLOADED = poisson_trace(12, 400, 2.25)    # about 440 per second: more than one-by-one can serve
TRACE_BURST = np.repeat(np.arange(6) * 400.0, 50)  # six bursts of 50 simultaneous requests


def trace_digest(trace_ms):
    """A short fingerprint of a trace, recorded with every replay of it."""
    data = np.asarray(trace_ms, dtype=np.float64).tobytes()
    return hashlib.sha256(data).hexdigest()[:16]


def clamp_costs(setup_ms, per_item_ms, records):
    """Fitted costs made usable for a simulation: negatives become 0; if both are 0,
    the setup becomes the median compute time of the recorded batches."""
    setup_ms, per_item_ms = max(float(setup_ms), 0.0), max(float(per_item_ms), 0.0)
    if setup_ms == 0.0 and per_item_ms == 0.0:
        times = {r["batch_id"]: r["compute_end_ms"] - r["compute_start_ms"] for r in records}
        setup_ms = float(np.median(list(times.values())))
    return setup_ms, per_item_ms
