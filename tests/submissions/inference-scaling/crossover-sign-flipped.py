# Realistic bug: the setup difference is taken the wrong way round (answers -80).
# %% id=answer-crossover
import math


def crossover_point(general, accel):
    if general[1] - accel[1] <= 0:
        raise ValueError("no crossover")
    return (general[0] - accel[0]) / (general[1] - accel[1])


def realized_group_size(n_requests, size):
    return n_requests / math.ceil(n_requests / size)


def cheaper_class(n_requests, size, general, accel):
    calls = math.ceil(n_requests / size)
    return "accelerator" if calls * accel[0] + accel[1] * n_requests < calls * general[0] + general[1] * n_requests else "general-purpose"
