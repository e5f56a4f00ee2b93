# Realistic bug: the realised group size is taken to be the requested size.
# %% id=answer-crossover
import math


def crossover_point(general, accel):
    if general[1] - accel[1] <= 0:
        raise ValueError("no crossover")
    return (accel[0] - general[0]) / (general[1] - accel[1])


def realized_group_size(n_requests, size):
    return float(min(size, n_requests))


def cheaper_class(n_requests, size, general, accel):
    calls = math.ceil(n_requests / size)
    return "accelerator" if calls * accel[0] + accel[1] * n_requests < calls * general[0] + general[1] * n_requests else "general-purpose"
