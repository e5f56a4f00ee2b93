# Attack: write into the grader's HOME, the output directory and the gradebook
# (paths filled in by the test).
# %% id=answer-batch-collection
import os
import sqlite3

for target in ["__HOME__/grader-was-here.txt", "__OUT__/results/forged.json"]:
    try:
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(target, "w") as handle:
            handle.write("forged")
    except OSError:
        pass
try:
    db = sqlite3.connect("__GRADEBOOK__")
    db.execute("UPDATE grades SET score = 99")
    db.commit()
except Exception:
    pass
collection_wait = (8 - 1 - np.arange(8)) * 2.0
