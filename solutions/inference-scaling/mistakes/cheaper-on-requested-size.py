# Realistic bug: decides on the requested size against the crossover point,
# so sizes 81..99 for 200 requests pick the accelerator although 3 calls of ~67
# requests are cheaper on the general-purpose unit.
# %% id=answer-crossover
import math


def crossover_point(general, accel):
    if general[1] - accel[1] <= 0:
        raise ValueError("no crossover")
    return (accel[0] - general[0]) / (general[1] - accel[1])


def realized_group_size(n_requests, size):
    return n_requests / math.ceil(n_requests / size)


def cheaper_class(n_requests, size, general, accel):
    if general[1] <= accel[1]:
        return "general-purpose"
    return "accelerator" if min(size, n_requests) > crossover_point(general, accel) else "general-purpose"
