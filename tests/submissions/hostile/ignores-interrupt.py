# Attack: ignore SIGINT and KeyboardInterrupt and loop forever.
# %% id=answer-batch-collection
import signal

signal.signal(signal.SIGINT, signal.SIG_IGN)
while True:
    try:
        pass
    except KeyboardInterrupt:
        pass
