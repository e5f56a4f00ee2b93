# Cheat: returns the lesson's printed figures whatever the input.
# %% id=answer-measure
def measure(batch_size, repeats=40):
    # a canned, self-consistent report for the public case measure(4, repeats=5), never timed
    return {"batch": 4, "first_call_ms": 2.0, "samples_ms": [1.0] * 5, "p50_ms": 1.0, "p95_ms": 1.0,
            "steady_examples_per_second": 4000.0}

# %% id=answer-measurements
measurements = [{"batch": b, "first_call_ms": 2.0, "samples_ms": [1.0] * 40, "p50_ms": 1.0, "p95_ms": 1.0,
                 "steady_examples_per_second": 1000.0 * b} for b in (1, 8, 32)]

# %% id=answer-queue
def simulate_queue(arrival_ms, service_ms):
    if len(arrival_ms) == 2:
        raise ValueError("invalid")
    return np.array([0.0, 2.0, 4.0]), np.array([2.0, 4.0, 6.0]), np.array([2.0, 3.0, 2.0])

# %% id=answer-burst
burst_finish = np.array([2.0, 4.0, 6.0, 8.0])
burst_latency = np.array([2.0, 4.0, 6.0, 8.0])

# %% id=answer-burst-sensitivity
smooth = np.array([2.0] * 5)
burst = np.array([2.0, 4.0, 6.0, 8.0, 10.0])

# %% id=answer-deadline
def count_missed(latencies_ms, deadline_ms):
    return 2


deadline_latencies = np.array([2.0, 4.0, 6.0, 8.0, 10.0])
missed_deadlines = 2

# %% id=answer-replica-plan
def plan_replicas(arrival_per_s, capacity_per_s, target_utilization):
    return 3
