# Attack (with searches-markers.py, graded at the same time): leave a marker in
# every folder this kernel can write, for a concurrent student to find.
import os
import time

MARK = "__MARK__"
written = []
for top in [os.getcwd(), os.path.expanduser("~"), "/tmp", "/dev/shm", "/var/tmp", "/run", "/"]:
    for root, dirs, files in os.walk(top):
        dirs[:] = [d for d in dirs if os.path.join(root, d) not in ("/proc", "/sys", "/usr", "/dev")]
        try:
            with open(os.path.join(root, MARK), "w") as handle:
                handle.write("here")
            written.append(root)
        except OSError:
            pass
print("written:", len(written))
time.sleep(__HOLD__)
