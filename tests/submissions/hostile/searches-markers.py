# Attack (with writes-markers.py): look everywhere, for a while, for a marker
# another student's kernel left.
import os
import time

MARK = "__MARK__"
found = set()
deadline = time.monotonic() + __HOLD__
while time.monotonic() < deadline:
    for root, dirs, files in os.walk("/"):
        dirs[:] = [d for d in dirs if os.path.join(root, d) not in ("/proc", "/sys", "/usr")]
        if MARK in files:
            found.add(root)
    time.sleep(0.5)
print("found:", sorted(found))
