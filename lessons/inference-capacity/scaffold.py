# %% [markdown] id=intro
# # Inference capacity: timing, queues and replicas
#
# A single model call can look quick on its own and still leave users waiting when
# requests pile up. In this lesson you time a small network at a few batch sizes,
# then feed what you measured into a queue **simulation** that you check by hand.
# Two kinds of numbers appear side by side, and you should never mix them up:
#
# * **measured**: timings taken on this machine. They change from host to host and
#   from run to run; they are graded on how you took them, never on speed;
# * **simulated**: values that follow exactly from declared inputs (arrival times,
#   service time, utilisation). They are checked exactly.
#
# Work top to bottom. Cells tagged `given` are the lesson's fixed code: leave them
# as they are. Each exercise has one answer cell marked **YOUR ANSWER**. Run
# `grader check <this notebook>` at any time to see which exercises pass.

# %% [markdown] id=idea
# ## Where a request spends its time
#
# Between arriving and being answered, a request may wait for a batch to fill,
# wait behind work already running, execute, and then have its answer encoded.
# Bigger batches do more useful work per call, but the first request in a batch
# waits longest. Sketch one timeline with arrival, enqueue, dispatch and completion,
# and say for every interval whether you measured it or modelled it.
#
# ## Fix the clock boundary before you time anything
#
# JAX dispatches work asynchronously: a call can return before the numbers exist.
# The timer must therefore include `block_until_ready()`. In this lesson the inputs
# and weights are already on the device, so decoding a request, copying data to
# the device and encoding the reply are *outside* the timed interval. The first call
# of each input shape may compile; time it separately from the warm calls.
# Forty warm samples give a rough p95, not a production tail estimate.
#
# ## Batch latency and example throughput are different units
#
# If a batch of $B$ examples takes $t_B$ milliseconds, one serial worker doing full
# batches completes at most $q_B = 1000\,B / t_B$ examples per second. The batch still
# takes $t_B$ ms: dividing by $B$ gives an amortised cost per example, not the time
# any one example waited.

# %% id=given-imports tags=given,reference
import math
import time

import numpy as np

# %% id=given-network tags=given
# The fixed workload: a two-layer dense network with random (not trained) weights.
import jax
import jax.numpy as jnp

# Full float32 precision for every matrix product: an accelerator's default is far coarser (on an H200 a
# product can be 26 % off), and `infer` is checked against NumPy at the seed's tolerance on every device.
jax.config.update("jax_default_matmul_precision", "highest")
rng = np.random.default_rng(82)
W1 = jnp.asarray(rng.normal(0, 0.1, (64, 32)).astype(np.float32))
W2 = jnp.asarray(rng.normal(0, 0.1, (32, 8)).astype(np.float32))


@jax.jit
def infer(inputs):
    return jnp.tanh(inputs @ W1) @ W2

# %% [markdown] id=ex-measure
# ## Exercise `measure`: time one batch shape
#
# Write `measure(batch_size, repeats=40)`. Draw a `(batch_size, 64)` float32 input
# with `rng`, place it on the device, then:
#
# 1. time the **first** call on its own (`first_call_ms`);
# 2. time `repeats` warm calls, one sample each (`samples_ms`, in milliseconds);
# 3. return a dict with `batch`, `first_call_ms`, `samples_ms`, `p50_ms` and `p95_ms`
#    (NumPy's default linear percentiles of your samples) and
#    `steady_examples_per_second` $= 1000 \cdot$ batch $/$ p50.
#
# Every timer must include completion (`block_until_ready()`). Then build
# `measurements = [measure(1), measure(8), measure(32)]`.
# It is a good habit to compare the first output with a NumPy computation of the
# same network (`np.tanh(x @ W1) @ W2`).

# %% id=answer-measure tags=answer
# YOUR ANSWER: define measure(batch_size, repeats=40)
def measure(batch_size, repeats=40):
    raise NotImplementedError("write measure(batch_size, repeats=40)")

# %% id=answer-measurements tags=answer
# YOUR ANSWER: measure batch sizes 1, 8 and 32
measurements = None

# %% id=given-show-measurements tags=given
for report in measurements or []:
    print({key: value for key, value in report.items() if key != "samples_ms"})
service_ms = measurements[0]["p50_ms"] if measurements else 1.0

# %% [markdown] id=ex-queue
# ## Exercise `queue-hand-check`: a first-come-first-served worker
#
# One serial worker serves requests in arrival order with a constant service time
# $t$. Request $i$ arrives at $a_i$, starts at $s_i = \max(a_i, f_{i-1})$ (the worker is
# free from time 0), finishes at $f_i = s_i + t$, and its response time is $r_i = f_i - a_i$.
#
# Work the small case by hand first: arrivals at 0, 1 and 4 ms with 2 ms of service
# start at 0, 2, 4, finish at 2, 4, 6, and take 2, 3 and 2 ms. The second request
# waits one millisecond because the worker is still busy.
#
# Write `simulate_queue(arrival_ms, service_ms)` returning three NumPy arrays
# `(starts, finishes, latencies)`. It must raise `ValueError` unless the arrivals form a
# finite, one-dimensional, non-decreasing vector and the service time is finite and
# greater than zero (exercise `invalid-timeline`). Ties and a single request are valid.

# %% id=answer-queue tags=answer
# YOUR ANSWER: define simulate_queue(arrival_ms, service_ms)
def simulate_queue(arrival_ms, service_ms):
    raise NotImplementedError("write simulate_queue(arrival_ms, service_ms)")

# %% id=given-hand-check tags=given
hand_start, hand_finish, hand_latency = simulate_queue([0.0, 1.0, 4.0], 2.0)
np.testing.assert_allclose(hand_latency, [2.0, 3.0, 2.0])

# %% [markdown] id=utilisation
# ## Utilisation is not a latency promise
#
# With $\lambda$ requests per second and $t$ ms of work each, one worker's utilisation
# proxy is $\rho = \lambda t / 1000$. Above 1 the backlog grows without bound in this
# model; below 1, bursts still make requests wait. The cell below spaces 60 arrivals
# $1.5t$ apart (stable: every response takes $t$) and $0.6t$ apart (overloaded: each
# request waits $0.4t$ longer than the one before, so the sixtieth response takes
# $24.6t$). Both are simulated consequences of declared inputs, scaled by the service
# time you measured, not observed user latencies.

# %% id=given-stable-overloaded tags=given
request_index = np.arange(60)
stable_arrivals = request_index * 1.5 * service_ms
overloaded_arrivals = request_index * 0.6 * service_ms
_, _, stable_latency = simulate_queue(stable_arrivals, service_ms)
_, _, overloaded_latency = simulate_queue(overloaded_arrivals, service_ms)
print("simulated last response / service time, stable vs overloaded:",
      stable_latency[-1] / service_ms, overloaded_latency[-1] / service_ms)

# %% [markdown] id=your-numbers
# ## Your numbers
#
# The next cell holds the numbers of exercises `burst`, `deadline` and
# `batch-collection`. Your course may give each student numbers of their own; the
# text below states yours. Use the names in your answers rather than copying the
# values.

# %% id=given-variant tags=given,reference
BURST_REQUESTS = 4      # requests that arrive together in exercise `burst`
BURST_SERVICE_MS = 2.0  # the service time of each of them
DEADLINE_MS = 6.0       # the response deadline of exercise `deadline`
BATCH_SIZE = 8          # the batch filled in exercise `batch-collection`
SPACING_MS = 2.0        # the arrival spacing in exercise `batch-collection`

# %% [markdown] id=ex-burst
# ## Exercise `burst`
#
# `BURST_REQUESTS` = {{BURST_REQUESTS}} requests arrive together at t = 0 and each needs
# `BURST_SERVICE_MS` = {{BURST_SERVICE_MS}} ms. Predict the finish and response times before
# you run anything, then set `burst_finish` and `burst_latency` from `simulate_queue`.

# %% id=answer-burst tags=answer
# YOUR ANSWER: burst_finish and burst_latency
burst_finish = None
burst_latency = None

# %% [markdown] id=ex-burst-sensitivity
# ## Exercise `burst-sensitivity`
#
# Same average rate, different shape: five requests 3 ms apart (`smooth`) against
# five requests all at t = 0 (`burst`), 2 ms of service each. Set `smooth` and `burst`
# to the response-time arrays. Compare their maxima.

# %% id=answer-burst-sensitivity tags=answer
# YOUR ANSWER: smooth and burst (response times)
smooth = None
burst = None

# %% [markdown] id=ex-deadline
# ## Exercise `deadline`
#
# Five simultaneous requests, 2 ms each, and a response deadline of `DEADLINE_MS` =
# {{DEADLINE_MS}} ms. A response that takes exactly the deadline meets it. Write `count_missed(latencies_ms,
# deadline_ms)` (how many response times are strictly greater than the deadline),
# and set `deadline_latencies` and `missed_deadlines`.

# %% id=answer-deadline tags=answer
# YOUR ANSWER: count_missed, deadline_latencies, missed_deadlines
def count_missed(latencies_ms, deadline_ms):
    raise NotImplementedError("write count_missed(latencies_ms, deadline_ms)")


deadline_latencies = None
missed_deadlines = None

# %% [markdown] id=ex-replica-plan
# ## Exercise `replica-plan`: a planning assumption, not a measurement
#
# With an arrival rate $\lambda$ per second, an effective capacity $q$ per second per
# replica and a target utilisation $u$, a first estimate is
# $R = \lceil \lambda / (u\,q) \rceil$ replicas. Write `plan_replicas(arrival_per_s,
# capacity_per_s, target_utilization)`; raise `ValueError` for a non-positive input or a
# utilisation above 1. For 300 requests/s, 200 per replica and u = 0.7 it plans 3.
# Real autoscaling adds observation windows, start-up and warm-up: a burst can arrive
# before new capacity is ready.

# %% id=answer-replica-plan tags=answer
# YOUR ANSWER: define plan_replicas(arrival_per_s, capacity_per_s, target_utilization)
def plan_replicas(arrival_per_s, capacity_per_s, target_utilization):
    raise NotImplementedError("write plan_replicas")

# %% [markdown] id=ex-batch-collection
# ## Exercise `batch-collection`
#
# Requests arrive every $\delta$ = `SPACING_MS` = {{SPACING_MS}} ms and a batch of
# $B$ = `BATCH_SIZE` = {{BATCH_SIZE}} is filled from empty.
# The first request waits $(B-1)\delta$ for the batch to fill, the last one not at all;
# on average the wait is $(B-1)\delta/2$. Set `collection_wait` to the wait of each
# position (first position first).

# %% id=answer-batch-collection tags=answer
# YOUR ANSWER: collection_wait
collection_wait = None

# %% [markdown] id=ex-p95
# ## Exercise `p95-interpolation`
#
# Twenty request times: nineteen of 1 ms and one of 100 ms. NumPy's default linear
# interpolation puts p95 between two sorted samples, at a value no request took.
# Set `interpolated_p95` to that p95 (a float). State the sample size and the
# percentile method whenever you report a percentile, and keep the raw samples.

# %% id=answer-p95 tags=answer
# YOUR ANSWER: interpolated_p95
interpolated_p95 = None

# %% [markdown] id=prediction tags=prediction
# ## Your prediction
#
# *Before running the queue cells:* can a queue grow even though every model call
# takes the same time? Write your prediction here.

# %% [markdown] id=explanation tags=explanation
# ## Your explanation of the figure
#
# *After running:* explain what your measured p50/p95 per batch size show, and why the
# overloaded simulated queue grows while the stable one does not. Say which numbers
# are measured and which are simulated.
