# Attack: allocate 60 GB in an answer function.
# %% id=answer-replica-plan
def plan_replicas(arrival_per_s, capacity_per_s, target_utilization):
    hog = bytearray(60 * 2**30)
    return len(hog)
