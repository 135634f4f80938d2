"""P2 code run by `clusterfl diagnose` outside the DVC stages (no stage imports it):
`draws`, the off-diagonal MSE against the distance of the two drawn parameter vectors."""
