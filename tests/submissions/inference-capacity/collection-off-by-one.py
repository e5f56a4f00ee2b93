# Realistic bug: the first request waits B * delta instead of (B - 1) * delta.
# %% id=answer-batch-collection
collection_wait = (8 - np.arange(8)) * 2.0
