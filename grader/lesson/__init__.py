"""Stage 2, the course: a lesson's lesson.toml checked and loaded, its handout, earlier releases, the staff's code."""
