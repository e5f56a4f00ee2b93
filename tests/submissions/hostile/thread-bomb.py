# Attack: start threads until the process budget says no, and hold them, so
# that a neighbour's kernel could start none (its own user namespace stops that).
import threading
import time

threading.stack_size(64 * 1024)
release = threading.Event()
started = 0
try:
    while started < 20_000:
        threading.Thread(target=release.wait, daemon=True).start()
        started += 1
except RuntimeError:
    pass
time.sleep(__HOLD__)
release.set()
print("threads held:", started)
