"""P3: "Multimodal Federated Learning with Model Personalization" (mmFL; Rahman & Nguyen),
Sec. 2 Steps 1-10, Sec. 3 Table 1 and Figs. 2-5.

In `training/`: `model` (the per-modality encoder + shared head network `p3_net`),
`steps` (pure steps: rate selection, held-out subsets, per-modality and shared averaging),
`context` (one engine per modality cluster), `base` (the round: rate selection and local
training through the engine), the algorithms `mmfl` (mmFL, fixed-rate multimodal FL,
unimodal FL, unimodal meta-FL), `standalone`, `centralized`, and the `p3_modalities`
evaluator. The readings are in `mmfl`'s and `base`'s docstrings and docs/p3.md. Importing
this package registers them. In `report/` (imported by the report stage only): `build`,
`table1`, `plots`, `claims`.
"""

from pathlib import Path

from clusterfl.algorithms import ALGORITHMS
from clusterfl.evaluators import EVALUATORS
from clusterfl.papers import Paper
from clusterfl.papers.p3.training import model as _model  # noqa: F401  (registers p3_net)
from clusterfl.papers.p3.training.centralized import Centralized
from clusterfl.papers.p3.training.evaluator import ModalityEvaluator
from clusterfl.papers.p3.training.mmfl import MmFL
from clusterfl.papers.p3.training.standalone import Standalone

ALGORITHMS.add("mmfl")(MmFL)
ALGORITHMS.add("p3_standalone")(Standalone)
ALGORITHMS.add("p3_centralized")(Centralized)
EVALUATORS.add("p3_modalities")(ModalityEvaluator)

PAPER = Paper(
    key="p3",
    title="P3 mmFL: multimodal federated learning with model personalization",
    directory=Path(__file__).parent,
    report="clusterfl.papers.p3.report:build",
)
