"""P5's training code: the numerical core, the round loop's methods, evaluators and metrics
(listed in `clusterfl.papers.p5`). Never imports report code."""
