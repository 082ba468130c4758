"""C source through the NNRt C API: a model emitted as C99 (emit), the recording shim's traces replayed into a
Model (trace), and the C toolchains that build them (toolchain). docs/c_source.md."""
