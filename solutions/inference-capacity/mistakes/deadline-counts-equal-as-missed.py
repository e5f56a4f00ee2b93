# Realistic bug: a response exactly at the deadline is counted as missed (>=).
# %% id=answer-deadline
def count_missed(latencies_ms, deadline_ms):
    return int(np.sum(np.asarray(latencies_ms) >= deadline_ms))


_, _, deadline_latencies = simulate_queue(np.zeros(5), 2.0)
missed_deadlines = count_missed(deadline_latencies, 6.0)
