# Attack: numbers no float can hold, and odd values, in graded and ungraded
# names (the report's figure reads `service_ms` and the two latency series).
# %% id=answer-p95
interpolated_p95 = 10**400

# %% id=extra-huge-values
service_ms = 10**400
stable_latency = [10**400, float("nan"), -0.0]
overloaded_latency = [[1, [2]], 3]
missed_deadlines = -10**300
