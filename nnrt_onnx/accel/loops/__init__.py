"""The numba loops' builders, one module per job; ``accel.numba_loops`` compiles them on first use and holds
the functions the kernels call."""
