"""Stage 0, the ground floor: errors, safe text, limits, files read without following links, shapes and options.

Nothing here knows a lesson, a kernel or a student."""
