# Attack: leave daemons behind (a new session, a double fork, nohup).
# %% id=answer-p95
import os
import subprocess

subprocess.Popen(["sleep", "__MARK__1"], start_new_session=True)
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.execvp("sleep", ["sleep", "__MARK__2"])
    os._exit(0)
subprocess.Popen("nohup sleep __MARK__3 >/dev/null 2>&1 &", shell=True)
interpolated_p95 = 5.95
