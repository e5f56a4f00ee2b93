# %% id=answer-live-replay
live = replay(TRACE_OVERLOADED, *policy)
measured = latency_summary([r["received_ms"] - r["sent_ms"] for r in live])  # misses time lost before sending
