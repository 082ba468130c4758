"""The numba loops, one module per job: module-level functions declared with ``numba_cache.jit`` (no closures,
so that numba's disk cache finds them in every process); importing a module imports numba. ``accel.numba_loops``
imports them on first use and holds the functions the kernels call."""
