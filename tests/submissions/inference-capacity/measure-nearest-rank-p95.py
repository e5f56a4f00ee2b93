# Realistic bug: p95 taken as a nearest-rank sample instead of NumPy's linear percentile.
# %% id=answer-measure
def measure(batch_size, repeats=40):
    x = jnp.asarray(rng.normal(size=(batch_size, 64)).astype(np.float32))
    t = time.perf_counter(); infer(x).block_until_ready(); first = (time.perf_counter() - t) * 1000
    samples = []
    for _ in range(repeats):
        t = time.perf_counter(); infer(x).block_until_ready(); samples.append((time.perf_counter() - t) * 1000)
    p50 = float(np.percentile(samples, 50))
    p95 = sorted(samples)[int(0.95 * len(samples))]
    return {"batch": batch_size, "first_call_ms": first, "samples_ms": samples, "p50_ms": p50,
            "p95_ms": p95, "steady_examples_per_second": 1000 * batch_size / p50}
