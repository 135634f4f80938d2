"""clusterfl: a reproducibility pipeline for clustered and personalized federated learning.

The core library: data sources, partition schemes, models, the local-training engine,
algorithms on a shared round loop, run histories and reports. Nothing here imports DVC or
Typer; MLflow is imported only by `clusterfl.tracking`.
"""

__version__ = "0.1.0"
