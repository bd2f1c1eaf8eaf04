"""The rules: config, tile and action ids, the engine and its snapshots, the compiled batched
core (`kernel`), observations, rewards and deals; and `atomic`, the files every layer writes.
numpy, numba (the kernel) and the standard library only; nothing here imports another cf_env
layer."""
