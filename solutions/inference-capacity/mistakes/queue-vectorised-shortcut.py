# Realistic bug: a vectorised shortcut that assumes the worker never idles
# (start_i = max(a_i, i * t)). Right for bursts and for well-spaced arrivals,
# wrong once a queue forms after an idle gap.
# %% id=answer-queue
def simulate_queue(arrival_ms, service_ms):
    arrivals = np.asarray(arrival_ms, dtype=float)
    if arrivals.ndim != 1 or not np.all(np.isfinite(arrivals)) or np.any(np.diff(arrivals) < 0):
        raise ValueError("bad arrivals")
    if not np.isfinite(service_ms) or service_ms <= 0:
        raise ValueError("bad service time")
    starts = np.maximum(arrivals, np.arange(len(arrivals)) * service_ms)
    finishes = starts + service_ms
    return starts, finishes, finishes - arrivals
