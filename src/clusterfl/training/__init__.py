"""What every algorithm trains on: the round loop and its callbacks, a run's history, the
papers' models, and the benchmark's tuning protocol."""
