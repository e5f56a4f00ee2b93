# Attack: an error whose message is megabytes long (error outputs must be capped
# like any other output).
# %% id=extra-loud-error
raise ValueError("x" * 5_000_000)
