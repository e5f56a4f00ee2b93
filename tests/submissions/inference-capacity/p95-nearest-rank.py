# Realistic bug: the sample at rank 0.95 * n instead of the linear percentile.
# %% id=answer-p95
samples = sorted([1.0] * 19 + [100.0])
interpolated_p95 = float(samples[int(0.95 * len(samples))])
