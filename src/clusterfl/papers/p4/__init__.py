"""P4: "Towards Provably Personalized Federated Learning via Threshold-Clustering of Similar
Clients" (PFL-TC / PDL-TC), Algorithms 1-3 and Sec. 4's linear-regression simulations.

In `training/`, pure numerics: `threshold` (Threshold-Clustering, Algorithm 1, its threshold
rule, k-means++), `momentum` (least-squares gradients, Options 1 and 2), `rounds` (one round
of each compared algorithm, the error metric). Run classes (`FederatedAlgorithm`s over
`linear`'s stacked clients): `pfl_tc`, `pdl_tc`, `standalone`, `oracle`, `ifca_linear`; the
`optimum_error` evaluator in `evaluator`. Neural versions for the real-data extension
(Fashion-MNIST rotations): `pfl_tc_neural`, `pdl_tc_neural` (client side in `neural`) and
the true-cluster oracle `cluster_fedavg`. Importing this package registers them. In
`report/` (imported by the report stage only): `build`, `groups`, `plots`, `real`, `claims`.
"""

from pathlib import Path

from clusterfl.algorithms import ALGORITHMS
from clusterfl.evaluators import EVALUATORS
from clusterfl.papers import Paper
from clusterfl.papers.p4.training.cluster_fedavg import ClusterFedAvg
from clusterfl.papers.p4.training.evaluator import GradientNorm, OptimumError
from clusterfl.papers.p4.training.ifca_linear import IfcaLinear
from clusterfl.papers.p4.training.oracle import Oracle
from clusterfl.papers.p4.training.pdl_tc import PdlTc
from clusterfl.papers.p4.training.pdl_tc_neural import PdlTcNeural
from clusterfl.papers.p4.training.pfl_tc import PflTc
from clusterfl.papers.p4.training.pfl_tc_neural import PflTcNeural
from clusterfl.papers.p4.training.standalone import Standalone

ALGORITHMS.add("pfl_tc")(PflTc)
ALGORITHMS.add("pdl_tc")(PdlTc)
ALGORITHMS.add("standalone_linear")(Standalone)
ALGORITHMS.add("oracle_linear")(Oracle)
ALGORITHMS.add("ifca_linear")(IfcaLinear)
ALGORITHMS.add("pfl_tc_neural")(PflTcNeural)
ALGORITHMS.add("pdl_tc_neural")(PdlTcNeural)
ALGORITHMS.add("oracle_fedavg")(ClusterFedAvg)
EVALUATORS.add("optimum_error")(OptimumError)
EVALUATORS.add("gradient_norm")(GradientNorm)

PAPER = Paper(
    key="p4",
    title="P4 PFL-TC / PDL-TC: personalized FL via threshold-clustering",
    directory=Path(__file__).parent,
    report="clusterfl.papers.p4.report:build",
)
