"""Stage 6, the record: the typed result, its signature, the per-student seeds and variants, regrade and evidence."""
