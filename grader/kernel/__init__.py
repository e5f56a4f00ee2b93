"""Stage 3, the kernel: the sandbox (bubblewrap, limits, devices), warm forked kernels and the kernel's protocol."""
