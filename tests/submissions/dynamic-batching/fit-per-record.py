# %% id=answer-service-fit
def fit_service(records):
    # one point per record instead of one per batch: big batches weigh more
    sizes = np.array([r["batch_size"] for r in records], dtype=float)
    times = np.array([r["compute_end_ms"] - r["compute_start_ms"] for r in records], dtype=float)
    if len(set(sizes.tolist())) < 2:
        raise ValueError("need two batch sizes")
    per_item, setup = np.polyfit(sizes, times, 1)
    return float(setup), float(per_item)
