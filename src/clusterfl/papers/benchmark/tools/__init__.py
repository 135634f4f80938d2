"""Benchmark code that no DVC stage runs: `peer`, Ditto and FedRep beside a peer
implementation (PFLlib), run by hand (`python -m clusterfl.papers.benchmark.tools.peer`)."""
