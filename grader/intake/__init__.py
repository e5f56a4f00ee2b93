"""Stage 1, what comes in: a submission loaded (notebook or main.py), a platform's folder layout, the roster."""
