# Completed answer cells of lesson inference-scaling. They build on the given
# cells of the scaffold (tagged `reference`), which the grader runs first.

# %% id=answer-sweep tags=reference
import functools


@functools.lru_cache(maxsize=None)
def _alone(period):
    """Every subscriber's prediction for `period`. A group's predictions are its members' own (process_group
    predicts a subscriber from its history and its region's, whoever else the group holds), so one call over
    every subscriber gives what any grouping would."""
    return process_group(REQUESTS, period)[0]


def _rows_in_call(group):
    """Rows one call over `group` reads: each distinct subscriber's history and each distinct region's, once."""
    subscribers = set(group)
    regions = {SUBSCRIBERS[s]["region"] for s in subscribers}
    return sum(len(HISTORY_BY_SUBSCRIBER[s]) for s in subscribers) + sum(len(HISTORY_BY_REGION[g]) for g in regions)


@functools.lru_cache(maxsize=None)
def _serve(size):
    """Process every serving period in consecutive groups of `size` (the grader asks for many sizes, so a call's
    predictions and rows are worked out as above rather than by running process_group on every group)."""
    predictions, rows_read, waited, calls, unfilled = {}, 0, 0, 0, 0
    for period in SERVING:
        groups = [REQUESTS[start:start + size] for start in range(0, len(REQUESTS), size)]
        alone = _alone(period)
        for group in groups:
            predictions.update({(s, period): alone[(s, period)] for s in group})
            rows_read += _rows_in_call(group)
            waited += len(group) * (len(group) - 1) // 2
            calls += 1
        unfilled = len(groups[-1]) if len(groups[-1]) != size else 0
    return predictions, rows_read, waited, calls, unfilled


def sweep(size):
    predictions, rows_read, waited, calls, unfilled = _serve(size)
    one_at_a_time = _serve(1)[0]
    return {
        "calls": calls,
        "unfilled": unfilled,
        "rows_read": rows_read,
        "rows_per_prediction": rows_read / N,
        "worst_wait": size - 1,
        "avg_wait": waited / N,
        "same_answer": all(predictions[key] == one_at_a_time[key] for key in one_at_a_time),
        "accuracy": sum(1 for key in TRUTH if predictions[key] == TRUTH[key]) / N,
    }

# %% id=answer-crossover tags=reference
import math


def crossover_point(general, accel):
    unit_saving = general[1] - accel[1]
    if unit_saving <= 0:
        raise ValueError("no crossover: the accelerator's unit cost is not lower")
    return (accel[0] - general[0]) / unit_saving


def realized_group_size(n_requests, size):
    return n_requests / math.ceil(n_requests / size)


def cheaper_class(n_requests, size, general, accel):
    calls = math.ceil(n_requests / size)
    general_work = calls * general[0] + general[1] * n_requests
    accel_work = calls * accel[0] + accel[1] * n_requests
    return "accelerator" if accel_work < general_work else "general-purpose"

# %% id=answer-cache tags=reference
def _read(group):
    """Rows one process_group call reads (this cell stands alone, as every answer cell must: a notebook's other
    answers may be anyone's): whole histories, of each distinct subscriber and region once, whatever the period."""
    members = set(group)
    regions = {SUBSCRIBERS[s]["region"] for s in members}
    return sum(len(HISTORY_BY_SUBSCRIBER[s]) for s in members) + sum(len(HISTORY_BY_REGION[g]) for g in regions)


def cost(calls, size, period="2026-12"):
    """Rows read serving `calls` in consecutive groups of `size` (the period changes what is predicted, never
    what is read)."""
    return sum(_read(calls[start:start + size]) for start in range(0, len(calls), size))


def cache_batching_factors(stream, size):
    baseline = cost(stream, 1)
    first_occurrences = list(dict.fromkeys(stream))
    return (cost(stream, size) / baseline,
            cost(first_occurrences, 1) / baseline,
            cost(first_occurrences, size) / baseline)


batching_factor, cache_factor, actual_combined = cache_batching_factors(STREAM, CACHE_GROUP_SIZE)
predicted_product = batching_factor * cache_factor
