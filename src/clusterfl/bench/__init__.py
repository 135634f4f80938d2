"""Benchmarks printed by `clusterfl bench`: `cpu` (the engine against the per-client loop,
whole rounds) and `gpu` (the same on CUDA beside plain batched steps)."""
