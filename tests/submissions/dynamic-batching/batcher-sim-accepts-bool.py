# The reference simulator, except that max_batch=True is taken for 1 instead of refused: one case of many.
# %% id=answer-batcher-sim
def simulate_batching(arrival_ms, max_batch, max_wait_ms, setup_ms, per_item_ms):
    arrivals = np.asarray(arrival_ms, dtype=float)
    if arrivals.ndim != 1:
        raise ValueError("arrival times must be a one-dimensional vector")
    if not np.all(np.isfinite(arrivals)) or np.any(np.diff(arrivals) < 0):
        raise ValueError("arrival times must be finite and non-decreasing")
    if not isinstance(max_batch, (int, float, np.integer, np.floating)):  # forgets that True is an int too
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
