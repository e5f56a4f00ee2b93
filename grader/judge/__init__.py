"""Stage 5, the verdict, reached outside the kernel: expected values, the comparison, the class-wide mistakes."""
