# Attack: os._exit in one answer function, a segfault in another, sys.exit()
# in a cell. Each must be recorded for its own exercise only.
# %% id=answer-replica-plan
import os


def plan_replicas(arrival_per_s, capacity_per_s, target_utilization):
    os._exit(3)

# %% id=answer-deadline
import ctypes


def count_missed(latencies_ms, deadline_ms):
    return ctypes.string_at(0)


_, _, deadline_latencies = simulate_queue(np.zeros(5), 2.0)
missed_deadlines = 2

# %% id=answer-p95
import sys

sys.exit("leaving early")
interpolated_p95 = 5.95
