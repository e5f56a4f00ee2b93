# Attack: print 200 MB in one cell.
# %% id=answer-p95
print("x" * 200_000_000)
interpolated_p95 = 5.95
