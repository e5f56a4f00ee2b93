"""The author's side, beside the spine: a lesson proven sound before any student meets it.

`validate` grades the reference and the bare scaffold and runs every check of `checks` (what can be
proven without a kernel, in the author's words); `proof` grades each declared mistake under several
seeds; `steady` grades beside busy processes (no point may move with the machine's load); and
`new_lesson` writes a new lesson's files, valid as written. They use the spine (`grader.grading`) for
one notebook at a time, as a student's check does.
"""
