# Realistic bug: the "smooth" arrivals are 1 ms apart (forgot the factor 3).
# %% id=answer-burst-sensitivity
_, _, smooth = simulate_queue(np.arange(5), 2.0)
_, _, burst = simulate_queue(np.zeros(5), 2.0)
