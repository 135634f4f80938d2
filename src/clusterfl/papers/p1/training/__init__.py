"""P1 adds no training code: pFedKM and its baselines are shared algorithms
(`clusterfl.algorithms`). The package exists so that every paper's train cells depend on the
same paths (`papers/<key>/__init__.py` and `papers/<key>/training/`)."""
