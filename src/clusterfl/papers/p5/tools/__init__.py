"""P5 code run outside the DVC stages (no stage imports it): `bench` (`clusterfl bench`), one
FedCGds round batched against a per-client loop, SNCP against KMeans; `per_seed_target`, the
cost claims read with a target per seed (docs/p5.md)."""
