# The batch-collection cell never ends: it is interrupted at the cell timeout,
# the exercise is `timeout`, and the grade still completes.
# %% id=answer-batch-collection
while True:
    pass
collection_wait = (8 - 1 - np.arange(8)) * 2.0
