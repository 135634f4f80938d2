"""The benchmark adds no training code: its cells run the shared algorithms
(`clusterfl.algorithms`). The package exists so that every paper's train cells depend on the
same paths (`papers/<key>/__init__.py` and `papers/<key>/training/`)."""
