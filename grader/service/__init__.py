"""Stage 10, the service above the class: what the course runs on between submissions and grades.

The submission service (`grader serve`: students submit and are answered in seconds, from a durable queue) and
the LMS's endpoints (LTI 1.3 launch, grades sent back, the roster pulled) live here, above the class's commands
they grade with (classroom/: the batch folder, the workers) and below the command line. It holds no module yet:
they arrive with those issues, and the layering test already keeps them above everything they use.
"""
