# %% [markdown] id=intro
# # Inference scaling: batching, accelerators and a cache
#
# The online serving pattern of the previous lesson cost 463.87 rows read per
# prediction, because every request was handled **on its own**. Yet two requests
# from the same region need the same region history: handled together, that
# history is read once. This lesson turns "together" into a setting, the **batch
# size**, and counts what it buys (rows read) and what it costs (waiting).
#
# Everything here is **simulated**: a fictional meter-reading source, a fictional
# pipeline and a three-weight threshold model, generated inside the notebook from
# seed 20260218. No service, framework or hardware is called, and accelerators are
# named only by their kind. The figures are exact and are checked exactly.
#
# Ground rules used throughout:
#
# * waiting is counted in **arrivals**: how many later requests a request waits for
#   until its group is full (no milliseconds);
# * within one group, every subscriber history and every region history is read
#   **once**: that sharing is the whole gain of batching;
# * the serving horizon is the periods `2026-10`, `2026-11`, `2026-12`, with two
#   hundred requests in each; groups form within a period;
# * the two accelerator classes are written in **work units** as (setup per call,
#   unit per request): general-purpose `(60, 4)`, accelerator `(300, 1)`.
#
# Cells tagged `given` are the lesson's fixed code: leave them alone. Each exercise
# has one answer cell marked **YOUR ANSWER**. `grader check <this notebook>` tells you
# which exercises pass the public checks.

# %% id=given-source tags=given,reference
# FICTIONAL source: 200 subscribers' meter readings over twelve periods.
SEED, MASK = 20260218, 0xFFFFFFFF


def uniform_stream(key):
    """A small deterministic generator of numbers in [0, 1), keyed by an integer."""
    h = ((key ^ (key >> 16)) * 2246822507) & MASK
    h = ((h ^ (h >> 13)) * 3266489909) & MASK
    state = (h ^ (h >> 16)) & MASK

    def draw():
        nonlocal state
        state = (state * 1664525 + 1013904223) & MASK
        return state / 4294967296

    return draw


REGIONS = ["east", "west", "north", "south", "central"]
KINDS = ["residential", "commercial"]
PERIODS = [f"2026-{month:02d}" for month in range(1, 13)]
SUBSCRIBERS = {}
for n in range(200):
    u = uniform_stream(SEED + 37 * n)
    SUBSCRIBERS[f"A{n + 1:03d}"] = {"region": REGIONS[int(u() * 5)], "type": KINDS[int(u() * 2)],
                                    "start": 10000 + int(u() * 60000)}


def meter_readings():
    """Cumulative meter index per subscriber and period (cubic metres)."""
    rows = []
    for n, (subscriber, info) in enumerate(SUBSCRIBERS.items()):
        reading = info["start"]
        for period in PERIODS:
            u = uniform_stream(SEED + 101 * n + 7 * PERIODS.index(period))
            reading += 4 + int(u() * 46)
            rows.append({"subscriber": subscriber, "period": period, "region": info["region"],
                         "type": info["type"], "index": reading, "unit": "m3"})
    return rows

# %% id=given-pipeline tags=given,reference
# FICTIONAL pipeline and model: consumption per period, history features, and a
# threshold model whose three weights are picked on the training periods.
def consumption(rows):
    """Consumption = this period's index minus the previous one (the first period has none)."""
    by_key = {(r["subscriber"], r["period"]): r for r in rows}
    out = []
    for r in rows:
        k = PERIODS.index(r["period"])
        previous = by_key.get((r["subscriber"], PERIODS[k - 1])) if k else None
        if previous is not None:
            out.append(dict(r, m3=int(r["index"]) - int(previous["index"])))
    return out


TRAIN, TEST, THRESHOLD = PERIODS[1:9], PERIODS[9:], 40


def label(r):
    return 1 if r["m3"] > THRESHOLD else 0


def history_mean(values):
    return round(sum(values) / len(values), 4) if values else 0.0


def features(rows):
    """Training-time features: the means of everything before each period."""
    per_subscriber, per_region = {}, {}
    for r in sorted(rows, key=lambda r: PERIODS.index(r["period"])):
        per_subscriber.setdefault(r["subscriber"], []).append((PERIODS.index(r["period"]), r["m3"]))
        per_region.setdefault(r["region"], []).append((PERIODS.index(r["period"]), r["m3"]))

    def before(series, k):
        return history_mean([v for d, v in series if d < k])

    return {(r["subscriber"], r["period"]): {
        "subscriber_mean": before(per_subscriber[r["subscriber"]], PERIODS.index(r["period"])),
        "region_mean": before(per_region[r["region"]], PERIODS.index(r["period"])),
        "commercial": 1 if r["type"] == "commercial" else 0} for r in rows}


GRID = [(a, b, c) for a in (0.6, 0.8, 1.0) for b in (0.0, 0.2, 0.4) for c in (0, 4, 8)]


def score(f, w):
    return w[0] * f["subscriber_mean"] + w[1] * f["region_mean"] + w[2] * f["commercial"]


ALL = consumption(meter_readings())
FEATURES = features(ALL)
TRAIN_ROWS = [r for r in ALL if r["period"] in TRAIN]
W = max(GRID, key=lambda w: sum(
    1 for r in TRAIN_ROWS
    if (1 if score(FEATURES[(r["subscriber"], r["period"])], w) > THRESHOLD else 0) == label(r)))

# %% id=given-serving tags=given,reference
# Serving: every subscriber asks once per serving period. process_group reads the
# history of each subscriber and each region in the group ONCE and predicts.
SERVING, REQUESTS = TEST, sorted(SUBSCRIBERS)
HISTORY_BY_SUBSCRIBER, HISTORY_BY_REGION = {}, {}
for r in ALL:
    HISTORY_BY_SUBSCRIBER.setdefault(r["subscriber"], []).append(r)
    HISTORY_BY_REGION.setdefault(r["region"], []).append(r)
TRUTH = {(r["subscriber"], r["period"]): label(r) for r in ALL if r["period"] in SERVING}
N = len(REQUESTS) * len(SERVING)


def process_group(requests, period):
    """Predict for a group of subscriber ids in one call; return (predictions, rows read).

    Only the history before `period` counts; periods are "YYYY-MM" strings, so
    comparing them as strings compares them in time."""
    subscribers = sorted(set(requests))
    regions = sorted(set(SUBSCRIBERS[s]["region"] for s in subscribers))
    rows_read = (sum(len(HISTORY_BY_SUBSCRIBER[s]) for s in subscribers)
                 + sum(len(HISTORY_BY_REGION[g]) for g in regions))
    region_mean = {g: history_mean([r["m3"] for r in HISTORY_BY_REGION[g] if r["period"] < period])
                   for g in regions}
    predictions = {}
    for s in subscribers:
        f = {"subscriber_mean": history_mean([r["m3"] for r in HISTORY_BY_SUBSCRIBER[s] if r["period"] < period]),
             "region_mean": region_mean[SUBSCRIBERS[s]["region"]],
             "commercial": 1 if SUBSCRIBERS[s]["type"] == "commercial" else 0}
        predictions[(s, period)] = 1 if score(f, W) > THRESHOLD else 0
    return predictions, rows_read


GENERAL, ACCEL = (60, 4), (300, 1)
SIZES = (1, 2, 4, 8, 16, 32, 64, 128, 200)


def request_stream(n):
    """n requests drawn with repetition from the 200 subscribers (fixed seed)."""
    u = uniform_stream(SEED + 911)
    return [f"A{int(u() * 200) + 1:03d}" for _ in range(n)]


STREAM = request_stream(600)

# %% [markdown] id=ex-sweep
# ## Exercise `batch-sweep`: cost and wait as the batch size grows
#
# For a batch size `size`, split the 200 requests of each serving period into
# consecutive groups of `size` (the last group may be smaller) and process each
# group with `process_group`. Write `sweep(size)` returning a dict with:
#
# | key | meaning |
# | --- | --- |
# | `calls` | groups processed over the three periods |
# | `unfilled` | size of the last group of a period when it is not full, else 0 |
# | `rows_read` | rows read over all calls |
# | `rows_per_prediction` | `rows_read / N` |
# | `worst_wait` | `size - 1`: the first request of a full group waits for the others |
# | `avg_wait` | sum over groups of g(g-1)/2 (g = the group's size), divided by `N` |
# | `same_answer` | a bool: every prediction equals the size-1 prediction |
# | `accuracy` | share of predictions equal to `TRUTH` |
#
# Expect rows per prediction to fall from 463.87 at size 1 to 22.00 at size 200,
# while the worst wait grows from 0 to 199 arrivals. The gain is not linear: two
# requests rarely share a region, so the first doubling only brings 463.87 down to
# 420.75. Batching gains the rows that requests read **in common**, not a count of
# requests. Look at `unfilled`: at sizes 16, 32 and 64 the last group of each period
# holds 8 requests, at 128 it holds 72. Those requests wait for a group that never
# fills, and the `worst_wait` column, which assumes full groups, does not show it.

# %% id=answer-sweep tags=answer
# YOUR ANSWER: define sweep(size)
def sweep(size):
    raise NotImplementedError("write sweep(size)")

# %% id=given-sweep-table tags=given
print(f"{'size':>5} {'calls':>5} {'unfilled':>8} {'rows read':>10} {'rows/pred':>10} {'worst':>6} {'avg wait':>9} {'same':>5} {'acc':>7}")
for b in SIZES:
    s = sweep(b)
    print(f"{b:>5} {s['calls']:>5} {s['unfilled']:>8} {s['rows_read']:>10} {s['rows_per_prediction']:>10.2f}"
          f" {s['worst_wait']:>6} {s['avg_wait']:>9.2f} {str(s['same_answer']):>5} {s['accuracy']:>7.4f}")

# %% [markdown] id=ex-crossover
# ## Exercise `crossover`: setup cost against unit cost
#
# A call on a class `(setup, unit)` costs `setup + unit * g` work units for a group of
# `g` requests. The accelerator pays more per call and less per request, so it wins
# once groups are large enough. Where the two totals are equal,
# `setup_g + unit_g * g = setup_a + unit_a * g`, hence the **crossover point**
# `g* = (setup_a - setup_g) / (unit_g - unit_a)`: 80 requests for the classes above,
# and 30, 80 and 180 for accelerator setups of 150, 300 and 600.
#
# But what matters is the group you actually **get**, not the size you ask for: 200
# requests in groups of at most 64 make 4 calls, an average realised group of 50,
# below 80; at 128 it is 2 calls and 100 requests per call. That is why the cheaper
# class switches at 128 and not at 80.
#
# Write:
# * `crossover_point(general, accel)`, raising `ValueError` when the accelerator's unit
#   cost is not lower (there is no crossover);
# * `realized_group_size(n_requests, size)` = `n_requests / ceil(n_requests / size)`;
# * `cheaper_class(n_requests, size, general, accel)`: `"accelerator"` when its total work
#   `ceil(n/size) * setup + unit * n` is strictly lower than the general unit's, else
#   `"general-purpose"`.

# %% id=answer-crossover tags=answer
# YOUR ANSWER: crossover_point, realized_group_size, cheaper_class
def crossover_point(general, accel):
    raise NotImplementedError("write crossover_point(general, accel)")


def realized_group_size(n_requests, size):
    raise NotImplementedError("write realized_group_size(n_requests, size)")


def cheaper_class(n_requests, size, general, accel):
    raise NotImplementedError("write cheaper_class(n_requests, size, general, accel)")

# %% id=given-crossover-table tags=given
for b in SIZES:
    print(f"size {b:>3}: realised group {realized_group_size(len(REQUESTS), b):6.1f}"
          f" -> cheaper: {cheaper_class(len(REQUESTS), b, GENERAL, ACCEL)}")
for setup in (150, 300, 600):
    print(f"accelerator setup {setup}: crossover at {crossover_point(GENERAL, (setup, ACCEL[1])):.1f} requests")

# %% id=given-variant tags=given,reference
CACHE_GROUP_SIZE = 32  # the group size of exercise `cache-product` (your course may give each student their own)

# %% [markdown] id=ex-cache
# ## Exercise `cache-product`: two gains that do not multiply
#
# A stream of 600 requests repeats subscribers: only 193 are distinct, a cache hit
# rate of 0.6783. A cache answers a repeated request without reading anything, so
# only the first occurrence of each subscriber (in order) is processed.
#
# Write `cost(calls, size, period="2026-12")`: the rows read when the list `calls` is
# processed in consecutive groups of `size`. Then write `cache_batching_factors(stream,
# size)` returning `(batching_factor, cache_factor, combined_factor)`, each the rows read
# divided by `cost(stream, 1)`: batching alone at `size`, the cache alone at size 1, and
# both together. Set `batching_factor`, `cache_factor` and `actual_combined` for `STREAM`
# at size `CACHE_GROUP_SIZE` = {{CACHE_GROUP_SIZE}}, and `predicted_product = batching_factor * cache_factor`.
#
# Predict first: does the product of the two factors equal the combined factor? The
# cache **thins** the groups: 193 requests in groups of {{CACHE_GROUP_SIZE}} leave one request alone in
# the last group, reading a whole region history by itself. The gain of one mechanism
# depends on which mechanism stands next to it.

# %% id=answer-cache tags=answer
# YOUR ANSWER: cost, cache_batching_factors and the four figures
def cost(calls, size, period="2026-12"):
    raise NotImplementedError("write cost(calls, size, period)")


def cache_batching_factors(stream, size):
    raise NotImplementedError("write cache_batching_factors(stream, size)")


batching_factor = None
cache_factor = None
predicted_product = None
actual_combined = None

# %% [markdown] id=prediction tags=prediction
# ## Your prediction
#
# Before running the cache cells: will `predicted_product` equal `actual_combined`? Why?

# %% [markdown] id=explanation tags=explanation
# ## Your explanation
#
# Which batch size would you pick for this pipeline, and which column do you pay
# with? Why does the accelerator only pay off at 128, and why do the cache and
# batching gains not multiply?
