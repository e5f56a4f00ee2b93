# Cheat: makes every comparison helper and several builtins say "equal",
# then answers wrongly. Only the student's own answers can be corrupted.
# %% id=answer-queue
import builtins
import math as _math
np.allclose = lambda *a, **k: True
np.isclose = lambda *a, **k: True
np.array_equal = lambda *a, **k: True
np.testing.assert_allclose = lambda *a, **k: None
np.testing.assert_array_equal = lambda *a, **k: None
_math.isclose = lambda *a, **k: True
builtins.abs = lambda x: 0
builtins.all = lambda x: True
builtins.print = lambda *a, **k: None


def simulate_queue(arrival_ms, service_ms):
    n = len(arrival_ms)
    return np.zeros(n), np.zeros(n), np.zeros(n)

# %% id=answer-burst
burst_finish = np.zeros(4)
burst_latency = np.zeros(4)

# %% id=answer-deadline
def count_missed(latencies_ms, deadline_ms):
    return -1


deadline_latencies = np.zeros(5)
missed_deadlines = 0
