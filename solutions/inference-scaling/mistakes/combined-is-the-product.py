# Realistic bug: assumes the two gains multiply and reports the product as the
# combined factor.
# %% id=answer-cache
def cost(calls, size, period="2026-12"):
    return sum(process_group(calls[i:i + size], period)[1] for i in range(0, len(calls), size))


def cache_batching_factors(stream, size):
    base = cost(stream, 1)
    distinct = list(dict.fromkeys(stream))
    batching, caching = cost(stream, size) / base, cost(distinct, 1) / base
    return batching, caching, batching * caching


batching_factor, cache_factor, actual_combined = cache_batching_factors(STREAM, 32)
predicted_product = batching_factor * cache_factor
