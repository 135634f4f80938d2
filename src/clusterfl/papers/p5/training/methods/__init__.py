"""P5's algorithms on the shared round loop (`clusterfl.training.loop.FederatedAlgorithm`), one file
each, thin over the pure round functions of `clusterfl.papers.p5.training`; importing this package
registers them (`clusterfl.algorithms.ALGORITHMS`)."""

from clusterfl.algorithms import ALGORITHMS, FederatedAlgorithm
from clusterfl.papers.p5.training.methods.central import CentralSncp
from clusterfl.papers.p5.training.methods.fedcavg import FedCAvg
from clusterfl.papers.p5.training.methods.fedcgds import FedCGds
from clusterfl.papers.p5.training.methods.kmeanspp import KMeansPP

METHODS: dict[str, type[FederatedAlgorithm]] = {
    "p5_sncp": CentralSncp, "p5_fedcavg": FedCAvg, "p5_fedcgds": FedCGds, "p5_kmeanspp": KMeansPP}
for _method, _cls in METHODS.items():
    if _method not in ALGORITHMS:  # the registry outlives a test's re-import
        ALGORITHMS.add(_method)(_cls)

__all__ = ["METHODS", "CentralSncp", "FedCAvg", "FedCGds", "KMeansPP"]
