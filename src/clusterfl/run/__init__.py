"""Running seeds: a suite's configuration (its params files as cells), the executors (serial,
process pool, Ray), the runner that trains one seed, checkpoints and resume, device choice,
and the MLflow tracking adapter (the only module of the core that imports MLflow)."""
