# %% id=answer-predicted
# predicts under the lesson's declared costs instead of the costs fitted to the live records
_, finishes, _ = simulate_batching(TRACE_OVERLOADED, policy[0], policy[1], SETUP_MS, PER_ITEM_MS)
predicted = latency_summary(finishes - TRACE_OVERLOADED)
