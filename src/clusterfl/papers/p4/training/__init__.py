"""P4's training code: the pure numerics, the linear and neural run classes and the
evaluator (listed in `clusterfl.papers.p4`). Never imports report code."""
