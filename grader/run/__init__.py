"""Stage 4, running: the notebook executed cell by cell, each exercise probed, answers carried back as plain data
(wire.py is the one encoder, sent into the kernel, and the one decoder, used outside it)."""
