# Realistic bug: multiplies by the target utilisation instead of dividing.
# %% id=answer-replica-plan
def plan_replicas(arrival_per_s, capacity_per_s, target_utilization):
    if arrival_per_s <= 0 or capacity_per_s <= 0 or target_utilization <= 0 or target_utilization > 1:
        raise ValueError("invalid plan inputs")
    return math.ceil(arrival_per_s / capacity_per_s * target_utilization)
