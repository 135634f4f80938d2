"""The algorithm registry: a params `method:` name -> algorithm class (with its `Hyper`).

Every general method is one file of this folder, named here as "module:Class" and imported
on its first lookup (`clusterfl.core.registry`): importing the registry imports no algorithm, and
a train cell's DVC deps name its own algorithm's file, not the folder (`clusterfl render`).
The other files are what several methods share: `base.py` (the round loop of neural
algorithms, the server's upload weights), `split_model.py` (FedPer, FedRep, LG-FedAvg) and
`train_only.py` (FedRep's local rule). A paper's own methods stay in its package, which
registers them when it is imported (`clusterfl.papers`); a user's plugin file registers its
own (`ALGORITHMS.add`).
"""

from clusterfl.algorithms.base import NeuralAlgorithm, NeuralContext, Schedule
from clusterfl.core.registry import Registry
from clusterfl.training.loop import FederatedAlgorithm

GENERAL_METHODS = {
    # one model for every client
    "fedavg": "fedavg:FedAvg",
    "fedprox": "fedprox:FedProx",
    # personalized, full model
    "local": "local:Local",
    "fedavg_ft": "fedavg_ft:FedAvgFt",
    "pfedme": "pfedme:PFedMe",
    "ditto": "ditto:Ditto",
    "apfl": "apfl:Apfl",
    "perfedavg": "perfedavg:PerFedAvg",
    "fedala": "fedala:FedAla",
    # personalized, split model (which layers are shared is a hyperparameter)
    "fedper": "fedper:FedPer",
    "fedrep": "fedrep:FedRep",
    "lgfedavg": "lgfedavg:LgFedAvg",
    # clustered (hard or soft assignment)
    "ifca": "ifca:Ifca",
    "pfedkm": "pfedkm:PFedKM",
    "cfl": "cfl:Cfl",
    "fesem": "fesem:FeSem",
    "fedgroup": "fedgroup:FedGroup",
    "flhc": "flhc:FlHc",
    "fedsoft": "fedsoft:FedSoft",
    "fedem": "fedem:FedEM",
}
ALGORITHMS: Registry[type[FederatedAlgorithm]] = Registry(
    "algorithm method", lazy={name: f"{__name__}.{where}" for name, where in
                              GENERAL_METHODS.items()})

__all__ = ["ALGORITHMS", "GENERAL_METHODS", "FederatedAlgorithm", "NeuralAlgorithm",
           "NeuralContext", "Schedule"]
