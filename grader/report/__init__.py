"""Stage 7, what people read: the evidence report (HTML, Markdown, terminal), its figures, the written files."""
