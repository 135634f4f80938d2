"""P3 Table 1's shape: for one dataset, (method x modality) rows and, per loss function
(cross-entropy, MSE, BCE), the final test loss and accuracy, mean ± std over seeds; the
paper's numbers in a row of their own under ours where the data is the paper's.

Table 1 compares one training setup under three losses, so the experiments of one table are
those that differ only in `training.loss` (`loss_groups`: the same partition, model, model
options, algorithm options and schedule but its loss). An unset loss on P3's class labels is
cross-entropy (`engine/losses.py`). Rows are Table 1's two methods, `mmfl_lr0_01` (the paper's
"Multimodal FL", a fixed rate it does not name, read as 0.01) and `mmfl` ("MmFL"); every
method's numbers per experiment are in the experiment's own table.
"""

import dataclasses
import json
from collections.abc import Mapping, Sequence
from typing import Any

from clusterfl.engine.losses import LOSSES
from clusterfl.reports.tables import markdown_table, mean_std

METHODS = {"mmfl_lr0_01": "Multimodal FL (mmfl_lr0_01)", "mmfl": "MmFL (mmfl)"}
LOSS_TITLES = {"cross_entropy": "cross-entropy", "mse": "MSE", "bce": "BCE"}
Finals = Mapping[str, Mapping[str, list[float]]]  # algorithm -> metric -> final per seed


def loss_of(experiment: Any) -> str:
    """The loss an experiment trains with: its `training.loss`, cross-entropy if unset."""
    return experiment.schedule.loss or "cross_entropy"


def _setup(experiment: Any) -> str:
    """Everything that shapes an experiment's numbers except its loss, as a key."""
    schedule = dataclasses.replace(experiment.schedule, loss=None)
    return json.dumps([experiment.partition, experiment.model, experiment.model_options,
                       dataclasses.asdict(schedule), experiment.algorithm_options],
                      sort_keys=True, default=repr)


def loss_groups(experiments: Sequence[Any]) -> list[dict[str, str]]:
    """The experiments (objects with `name`, `partition`, `model`, `model_options`,
    `schedule`, `algorithm_options`) grouped by setup, in first-seen order: a list of
    {loss: experiment name}. Two experiments of one setup with the same loss: the first."""
    groups: dict[str, dict[str, str]] = {}
    for exp in experiments:
        groups.setdefault(_setup(exp), {}).setdefault(loss_of(exp), exp.name)
    return list(groups.values())


def _ours(finals: Finals | None, alg: str, m: str) -> list[str]:
    f = (finals or {}).get(alg)
    if not f or f"test_acc_{m}" not in f:
        return ["–", "–"]
    return [mean_std(f[f"test_loss_{m}"], 4), mean_std([100 * v for v in f[f"test_acc_{m}"]], 2)]


def table1(finals: Mapping[str, Finals], modalities: list[str],
           paper: Mapping[tuple[str, str], Mapping[str, list[float]]]) -> list[str]:
    """Table 1's lines. `finals[loss]`: that loss's experiment's final numbers; `paper`:
    (algorithm, modality) -> loss -> [loss, accuracy %] from references.yaml (empty for a
    stand-in: no paper rows)."""
    header = ["method", "modality", "numbers"]
    for loss in LOSSES:
        header += [f"{LOSS_TITLES[loss]} loss", f"{LOSS_TITLES[loss]} accuracy (%)"]
    rows = []
    for alg, name in METHODS.items():
        if not any(alg in f for f in finals.values()):
            continue
        for m in modalities:
            rows.append([name, m, "ours"] + [v for loss in LOSSES
                                             for v in _ours(finals.get(loss), alg, m)])
            ref = paper.get((alg, m))
            if ref:
                rows.append([name, m, "paper"] + [
                    v for loss in LOSSES
                    for v in ([f"{ref[loss][0]:.4f}", f"{ref[loss][1]:.2f}"] if loss in ref
                              else ["–", "–"])])
    return markdown_table(header, rows)
