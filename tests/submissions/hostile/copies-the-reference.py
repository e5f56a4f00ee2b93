# Attack: read the instructor's reference from solutions/ and run it; without
# it, answer wrongly. Paths are filled in by the test.
# %% id=answer-queue
import glob

stolen = {}
for path in ["__ANSWERS__"] + glob.glob("/*/*/solutions/*/answers.py") + glob.glob("/*/solutions/*/answers.py"):
    try:
        exec(open(path).read(), stolen)
        break
    except Exception:
        continue
try:
    import grader.lesson.catalog
    import grader.lesson.staff_code
    stolen.update(grader.lesson.staff_code.reference(grader.lesson.catalog.get("inference-capacity")))
except Exception:
    pass


def simulate_queue(arrival_ms, service_ms):
    if "simulate_queue" in stolen:
        return stolen["simulate_queue"](arrival_ms, service_ms)
    n = len(arrival_ms)
    return np.zeros(n), np.zeros(n), np.zeros(n)
