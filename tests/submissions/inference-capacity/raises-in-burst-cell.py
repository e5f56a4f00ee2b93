# The burst answer cell raises before defining its names; every other
# exercise must still be graded.
# %% id=answer-burst
scale = 1 / 0
burst_finish = np.array([2.0, 4.0, 6.0, 8.0])
burst_latency = burst_finish
