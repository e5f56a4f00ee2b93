# Attack: reach a service on the grading host's loopback (port filled in by the test).
# %% id=answer-p95
import socket

try:
    socket.create_connection(("127.0.0.1", __PORT__), timeout=2).sendall(b"leak")
    network = "connected"
except OSError as err:
    network = type(err).__name__
interpolated_p95 = 5.95
