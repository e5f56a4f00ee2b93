# %% id=answer-live-replay
# The reference answer, with the live records as a saturated host gives them: the server always found
# max_batch requests waiting, so every batch is full and takes the same time. The replay's own records are
# regrouped into consecutive full batches on one serial worker, every timestamp still in order.
live, free = [], 0.0
replayed = replay(TRACE_OVERLOADED, *policy)
for first in range(0, len(replayed), policy[0]):
    group = replayed[first:first + policy[0]]
    begin = max([free] + [r["enqueued_ms"] for r in group])
    free = begin + SETUP_MS + PER_ITEM_MS * len(group)
    live += [dict(r, batch_id=first // policy[0], batch_size=len(group), dispatched_ms=begin,
                  compute_start_ms=begin, compute_end_ms=free, received_ms=max(r["received_ms"], free))
             for r in group]
measured = latency_summary([r["received_ms"] - r["scheduled_ms"] for r in live])
