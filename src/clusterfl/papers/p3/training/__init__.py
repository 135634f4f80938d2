"""P3's training code: the network, the pure steps, the per-modality engines, the algorithms
and the evaluator (listed in `clusterfl.papers.p3`). Never imports report code."""
