"""The generic hyperparameter type (issue 39): `class X(Base[XHyper])` types `self.hyper` for
mypy and is where the registry finds `X.Hyper`, so the two cannot disagree."""

import dataclasses
import os
import subprocess
import sys
import typing
from pathlib import Path

import pytest

from clusterfl.algorithms import ALGORITHMS, GENERAL_METHODS, NeuralAlgorithm
from clusterfl.algorithms.fedavg import FedAvg, FedAvgHyper
from clusterfl.algorithms.fedavg_ft import FedAvgFtHyper
from clusterfl.algorithms.pfedme import PFedMe, PFedMeHyper

ROOT = Path(__file__).resolve().parents[2]


@dataclasses.dataclass(frozen=True)
class ToyHyper:
    steps: int = 1


def test_the_type_argument_is_the_hyper_and_subclasses_inherit_it():
    class Toy(NeuralAlgorithm[ToyHyper]):
        pass

    class ToyChild(Toy):
        pass

    class Tuned(FedAvg[FedAvgFtHyper]):
        pass

    assert (Toy.Hyper, ToyChild.Hyper, Tuned.Hyper) == (ToyHyper, ToyHyper, FedAvgFtHyper)
    # a base generic in a bounded variable is registered with its bound, named once
    assert (FedAvg.Hyper, PFedMe.Hyper) == (FedAvgHyper, PFedMeHyper)


def test_every_general_method_is_parametrised_by_its_own_hyper():
    for name in GENERAL_METHODS:
        cls = ALGORITHMS.get(name)
        assert dataclasses.is_dataclass(cls.Hyper), name
        declared = [typing.get_args(b) for c in cls.__mro__
                    for b in c.__dict__.get("__orig_bases__", ()) if typing.get_args(b)]
        first = declared[0][0]
        # either the class names its Hyper as the type argument, or the argument is a
        # type variable bounded by the Hyper it registers (FedAvg, pFedMe)
        bound = getattr(first, "__bound__", None)
        assert first is cls.Hyper or bound is cls.Hyper, (name, first, cls.Hyper)


@pytest.mark.slow
def test_mypy_rejects_a_misspelled_hyperparameter(tmp_path):
    source = ("from clusterfl.algorithms.fedavg import GlobalModel\n"
              "from clusterfl.algorithms.fedprox import FedProxHyper\n\n\n"
              "class Mine(GlobalModel[FedProxHyper]):\n"
              "    def round(self, round_: int, clients: object) -> None:\n"
              "        print(self.hyper.{field})\n")

    def mypy(field: str) -> subprocess.CompletedProcess[str]:
        path = tmp_path / f"mine_{field}.py"
        path.write_text(source.format(field=field))
        return subprocess.run([sys.executable, "-m", "mypy", "--config-file",
                               str(ROOT / "pyproject.toml"), str(path)],
                              cwd=ROOT, capture_output=True, text=True,
                              env={**os.environ, "MYPYPATH": str(ROOT / "src")})

    good, bad = mypy("mu"), mypy("muu")
    assert good.returncode == 0, good.stdout
    assert bad.returncode == 1 and '"FedProxHyper" has no attribute "muu"' in bad.stdout
