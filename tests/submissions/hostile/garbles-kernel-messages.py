# Attack: replace json.dumps in the kernel, so that every Jupyter message the kernel sends from then on carries
# a header whose msg_type is an object, not a string. Once in an answer cell, once inside an answer function
# (so the probe garbles the protocol while it is being checked).
# %% id=answer-replica-plan
import json
import math


def plan_replicas(arrival_per_s, capacity_per_s, target_utilization):
    real = json.dumps

    def garbled(obj, *args, **kwargs):
        if isinstance(obj, dict) and "msg_id" in obj and "msg_type" in obj:
            obj = dict(obj, msg_type={"not": "a string"})
        return real(obj, *args, **kwargs)

    json.dumps = garbled
    return math.ceil(arrival_per_s / (target_utilization * capacity_per_s))

# %% id=answer-p95
_real_dumps = json.dumps


def _garbled(obj, *args, **kwargs):
    if isinstance(obj, dict) and "msg_id" in obj and "msg_type" in obj:
        obj = dict(obj, msg_type={"not": "a string"}, session=[1])
    return _real_dumps(obj, *args, **kwargs)


json.dumps = _garbled
interpolated_p95 = 5.95
