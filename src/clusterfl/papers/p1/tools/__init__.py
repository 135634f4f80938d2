"""P1 code run by `clusterfl diagnose` outside the DVC stages (no stage imports it):
`model_space`, the k-means ARI of P1's clusters in input and model space."""
