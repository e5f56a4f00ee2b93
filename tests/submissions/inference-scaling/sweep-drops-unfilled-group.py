# Realistic bug: only full groups are processed; the last, unfilled group of a
# period is silently dropped.
# %% id=answer-sweep
def sweep(size):
    def serve(b):
        preds, read, waited, calls = {}, 0, 0, 0
        for period in SERVING:
            for start in range(0, len(REQUESTS) - b + 1, b):
                group = REQUESTS[start:start + b]
                answers, rows = process_group(group, period)
                preds.update(answers)
                read += rows
                waited += len(group) * (len(group) - 1) // 2
                calls += 1
        return preds, read, waited, calls

    preds, read, waited, calls = serve(size)
    single = serve(1)[0]
    return {"calls": calls, "unfilled": 0, "rows_read": read, "rows_per_prediction": read / N,
            "worst_wait": size - 1, "avg_wait": waited / N,
            "same_answer": all(preds.get(k) == v for k, v in single.items()),
            "accuracy": sum(1 for k in TRUTH if preds.get(k) == TRUTH[k]) / N}
