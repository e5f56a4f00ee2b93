# Attack, inside Gradescope's container: read the instructor's solutions, then leave a daemon in a session of
# its own that rewrites the results once the grader has written them. Reading them, or running as anyone but
# nobody, costs it batch-sweep, so a full score says neither happened.
# %% id=extra-escape
import os
import subprocess
import sys

try:
    with open("__SECRET__") as handle:
        handle.read()
    seen = "read"
except OSError as err:
    seen = f"refused {err.errno}"
print("uid", os.getuid(), "solutions", seen)
if seen == "read" or os.getuid() != 65534:
    sweep = None  # leaves a mark the grade shows: batch-sweep fails
forge = ("import time\ntime.sleep(__HOLD__)\n"
         "open('__RESULTS__', 'w').write('{\"score\": 99, \"output\": \"FORGED\"}')")
subprocess.Popen([sys.executable, "-c", forge, "__MARK__"], start_new_session=True, stdin=subprocess.DEVNULL,
                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
