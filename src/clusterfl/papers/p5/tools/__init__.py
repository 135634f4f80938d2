"""P5 code run by `clusterfl bench` outside the DVC stages (no stage imports it): `bench`,
one FedCGds round batched against a per-client loop, SNCP against KMeans."""
