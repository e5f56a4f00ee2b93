# Realistic bug: the cache keeps sorted(set(stream)) instead of the first
# occurrences in arrival order, which changes how the survivors are grouped.
# %% id=answer-cache
def cost(calls, size, period="2026-12"):
    return sum(process_group(calls[i:i + size], period)[1] for i in range(0, len(calls), size))


def cache_batching_factors(stream, size):
    base = cost(stream, 1)
    cached = sorted(set(stream))
    return cost(stream, size) / base, cost(cached, 1) / base, cost(cached, size) / base


batching_factor, cache_factor, actual_combined = cache_batching_factors(STREAM, 32)
predicted_product = batching_factor * cache_factor
