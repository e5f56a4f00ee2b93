# count_missed is never defined: exercise `deadline` is `missing`.
# %% id=answer-deadline
deadline_latencies = np.array([2.0, 4.0, 6.0, 8.0, 10.0])
missed_deadlines = 2
