# %%
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

# %%
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

# %%
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
    """Predict for a group of subscriber ids in one call; return (predictions, rows read)."""
    k = PERIODS.index(period)
    subscribers = sorted(set(requests))
    regions = sorted(set(SUBSCRIBERS[s]["region"] for s in subscribers))
    rows_read = (sum(len(HISTORY_BY_SUBSCRIBER[s]) for s in subscribers)
                 + sum(len(HISTORY_BY_REGION[g]) for g in regions))
    region_mean = {g: history_mean([r["m3"] for r in HISTORY_BY_REGION[g] if PERIODS.index(r["period"]) < k])
                   for g in regions}
    predictions = {}
    for s in subscribers:
        f = {"subscriber_mean": history_mean([r["m3"] for r in HISTORY_BY_SUBSCRIBER[s]
                                              if PERIODS.index(r["period"]) < k]),
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

# %%
def _serve(size):
    """Process every serving period in consecutive groups of `size`."""
    predictions, rows_read, waited, calls, unfilled = {}, 0, 0, 0, 0
    for period in SERVING:
        groups = [REQUESTS[start:start + size] for start in range(0, len(REQUESTS), size)]
        for group in groups:
            answers, read = process_group(group, period)
            predictions.update(answers)
            rows_read += read
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

# %%
print(f"{'size':>5} {'calls':>5} {'unfilled':>8} {'rows read':>10} {'rows/pred':>10} {'worst':>6} {'avg wait':>9} {'same':>5} {'acc':>7}")
for b in SIZES:
    s = sweep(b)
    print(f"{b:>5} {s['calls']:>5} {s['unfilled']:>8} {s['rows_read']:>10} {s['rows_per_prediction']:>10.2f}"
          f" {s['worst_wait']:>6} {s['avg_wait']:>9.2f} {str(s['same_answer']):>5} {s['accuracy']:>7.4f}")

# %%
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

# %%
for b in SIZES:
    print(f"size {b:>3}: realised group {realized_group_size(len(REQUESTS), b):6.1f}"
          f" -> cheaper: {cheaper_class(len(REQUESTS), b, GENERAL, ACCEL)}")
for setup in (150, 300, 600):
    print(f"accelerator setup {setup}: crossover at {crossover_point(GENERAL, (setup, ACCEL[1])):.1f} requests")

# %%
def cost(calls, size, period="2026-12"):
    return sum(process_group(calls[start:start + size], period)[1] for start in range(0, len(calls), size))


def cache_batching_factors(stream, size):
    baseline = cost(stream, 1)
    first_occurrences = list(dict.fromkeys(stream))
    return (cost(stream, size) / baseline,
            cost(first_occurrences, 1) / baseline,
            cost(first_occurrences, size) / baseline)


batching_factor, cache_factor, actual_combined = cache_batching_factors(STREAM, 32)
predicted_product = batching_factor * cache_factor
