"""The generic hyperparameter type (issue 39): `class X(Base[XHyper])` types `self.hyper` for
mypy and is where the registry finds `X.Hyper`, so the two cannot disagree; it is the only
way to declare it (issue 52)."""

import dataclasses
import os
import subprocess
import sys
import typing
from pathlib import Path

import pytest

from clusterfl.algorithms import ALGORITHMS, GENERAL_METHODS, NeuralAlgorithm
from clusterfl.algorithms.fedavg import FedAvg, FedAvgBase, FedAvgHyper
from clusterfl.algorithms.fedavg_ft import FedAvgFtHyper
from clusterfl.algorithms.pfedme import PFedMe, PFedMeHyper
from clusterfl.papers import load_papers
from clusterfl.training.loop import FederatedAlgorithm

ROOT = Path(__file__).resolve().parents[2]


@dataclasses.dataclass(frozen=True)
class ToyHyper:
    steps: int = 1


def test_the_type_argument_is_the_hyper_and_subclasses_inherit_it():
    class Toy(NeuralAlgorithm[ToyHyper]):
        pass

    class ToyChild(Toy):
        pass

    class Tuned(FedAvgBase[FedAvgFtHyper]):
        pass

    assert (Toy.Hyper, ToyChild.Hyper, Tuned.Hyper) == (ToyHyper, ToyHyper, FedAvgFtHyper)
    # a base that others extend is generic; the registered class names its own
    assert (FedAvg.Hyper, PFedMe.Hyper) == (FedAvgHyper, PFedMeHyper)
    assert not hasattr(FedAvgBase, "Hyper")


def test_a_hyper_attribute_is_refused():
    with pytest.raises(TypeError, match=r"class Toy\(Base\[Hyper\]\)"):
        class Toy(FederatedAlgorithm):  # type: ignore[type-arg]
            Hyper = ToyHyper


def test_every_algorithm_is_parametrised_by_its_own_hyper():
    """Every registered algorithm, the papers' included: the first type argument up its MRO
    that is a class (not a type variable) is the Hyper it registers."""
    load_papers()
    names = ALGORITHMS.names()
    assert set(GENERAL_METHODS) < set(names) and {"mmfl", "pfl_tc", "p5_fedcgds"} < set(names)
    for name in names:
        cls = ALGORITHMS.get(name)
        assert dataclasses.is_dataclass(cls.Hyper), name
        declared = [a for c in cls.__mro__ for b in c.__dict__.get("__orig_bases__", ())
                    for a in typing.get_args(b)[:1] if isinstance(a, type)]
        assert declared and declared[0] is cls.Hyper, (name, declared, cls.Hyper)


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
