# Realistic bug: checks `service_ms <= 0` but not finiteness, so NaN and
# infinite service times slip through (the public checks still pass).
# %% id=answer-queue
def simulate_queue(arrival_ms, service_ms):
    arrivals = np.asarray(arrival_ms, dtype=float)
    if arrivals.ndim != 1 or not np.all(np.isfinite(arrivals)) or np.any(np.diff(arrivals) < 0):
        raise ValueError("arrivals must be finite, 1-D and ordered")
    if service_ms <= 0:
        raise ValueError("service time must be positive")
    starts, finishes, free = [], [], 0.0
    for a in arrivals:
        s = max(a, free)
        free = s + service_ms
        starts.append(s)
        finishes.append(free)
    return np.array(starts), np.array(finishes), np.array(finishes) - arrivals
