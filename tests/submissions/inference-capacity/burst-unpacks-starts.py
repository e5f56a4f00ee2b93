# Realistic bug: unpacks the simulator's tuple in the wrong order, so
# burst_finish holds the start times.
# %% id=answer-burst
burst_finish, _, burst_latency = simulate_queue(np.zeros(4), 2.0)
