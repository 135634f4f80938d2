"""What P3's algorithms share: per-modality client models, the meta-learned rate selection
(Sec. 2, Steps 2-7), local training of all clients of a modality through the engine, and the
hyperparameters. An algorithm says only what its server does (`server`).

Rate selection, Steps 2-6, for all clients of a modality at once: each client splits off a
held-out subset d (`holdout_fraction` of its training samples, drawn afresh every round),
copies its model, trains the copy for `temp_steps` minibatch steps with every candidate rate
(one engine call per rate, every client, the same batches for every rate) and keeps the rate
whose copy has the lowest mean loss on d. Eq. (1) writes the temporary update on d itself:
`temp_data: subset` (default) trains the copy on d and scores it on d, as written; `rest`,
an earlier reading kept as a variant (`mmfl_rest`), trains it on D minus d (a loss on samples
the copy never saw), which favoured small rates. `select_per: client` (default, Eq. 4: each
client keeps its own best rate) or `modality` (Eq. 2 averages the loss over the clients of a
modality: one rate per modality). With one candidate there is nothing to select: no copy is
trained and nothing is drawn.

Step 7 (Eq. 5-6): each client trains its model from the start of the round with its selected
rate. Clients that picked the same rate are trained by one engine call (at most one per
candidate), with the plan's columns of those clients, so a client's batches do not depend on
what the others picked. Eq. (6)'s second update "for decoder model training using the same
alpha" is the same local step applied to the head, which is part of each client's network.

Step 9 scores "the weight θ_{n,k}^m", each client's completed local model of round k, before
the server's Eq. (8): `scored: local` (default) records that; `global`, the earlier reading
kept as a named variant, scores the server's output put in place for the next round. Eq. (8)
averages with 1/N (`server_weights: uniform`, default); `samples` is FedAvg's |D_n|/|D^m|,
the earlier reading, a named variant (`mmfl.py`).
"""

from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import torch

from clusterfl.algorithms.base import Weighting, build_engine
from clusterfl.core.options import require
from clusterfl.core.types import SeedInputs, Tensors, View
from clusterfl.engine import Adam, Sgd, make_plan
from clusterfl.papers.p3.training.context import P3Context, build_context
from clusterfl.papers.p3.training.model import HEAD
from clusterfl.papers.p3.training.steps import (
    held_out_data,
    holdout_positions,
    modality_seed,
    rate_columns,
    restrict_plan,
    select_modality_rate,
    select_rates,
)
from clusterfl.steps.aggregation import broadcast, gather
from clusterfl.training.loop import FederatedAlgorithm
from clusterfl.training.models import init_params


@dataclass(frozen=True)
class P3Hyper:
    rates: tuple[float, ...] = ()  # candidate rates eta_i; () = the schedule's lr alone
    temp_steps: int = 5  # T_temp: minibatch steps of each temporary copy
    holdout_fraction: float = 0.2  # |d| / |D| of each client, every round
    temp_data: Literal["rest", "subset"] = "subset"  # what the copy trains on (module doc)
    select_per: Literal["client", "modality"] = "client"  # whose loss picks a rate
    share_head: bool = True  # one head for every modality (mmFL) or one per modality
    server_weights: Weighting = "uniform"  # Eq. (8)'s 1/N, or FedAvg's sample counts
    scored: Literal["local", "global"] = "local"  # Step 9's model (module doc)

    def validate(self, key: str) -> None:
        require(all(r > 0 for r in self.rates), f"{key}.rates", "must all be > 0")
        require(len(set(self.rates)) == len(self.rates), f"{key}.rates", "must be distinct")
        require(self.temp_steps >= 1, f"{key}.temp_steps", "must be >= 1")
        require(0 < self.holdout_fraction < 1, f"{key}.holdout_fraction", "must be in (0, 1)")
        require(self.temp_data in ("rest", "subset"), f"{key}.temp_data",
                "must be rest or subset")
        require(self.select_per in ("client", "modality"), f"{key}.select_per",
                "must be client or modality")
        require(self.server_weights in ("uniform", "samples"), f"{key}.server_weights",
                "must be uniform or samples")
        require(self.scored in ("local", "global"), f"{key}.scored", "must be local or global")


class ModalityAlgorithm(FederatedAlgorithm[P3Hyper]):
    """Client models `self.models[m]` ([clients of m, ...]) per modality cluster m."""

    ctx: P3Context
    pooled = False  # the centralized baseline joins each modality's clients into one
    # rebuilt from the context, not changed by the rounds: left out of checkpoints
    transient = (*FederatedAlgorithm.transient, "schedule", "modalities", "engine_name")

    def __init__(self, hyper: P3Hyper, ctx: P3Context) -> None:
        super().__init__(hyper, ctx)
        assert ctx.schedule is not None and ctx.schedule.lr is not None
        self.schedule = ctx.schedule
        self.engine_name = ctx.engine_name
        self.modalities = ctx.modalities
        self.rates = hyper.rates or (ctx.schedule.lr,)
        seeds = [modality_seed(ctx.seed, m) for m in range(len(ctx.modalities))]
        self.rngs = [np.random.default_rng(s) for s in seeds]
        self.generators = [torch.Generator().manual_seed(s) for s in seeds]
        self.selected: list[torch.Tensor] = []
        self.trained: list[Tensors] | None = None  # this round's local models, Step 9's

    @classmethod
    def make_context(cls, run: SeedInputs) -> P3Context:
        return build_context(run, pooled=cls.pooled)

    def default_evaluators(self) -> list[str]:
        return ["p3_modalities"]

    # -- state ----------------------------------------------------------------------------------
    def initial_models(self) -> list[Tensors]:
        """One fresh network per modality, each from its own generator; with a shared head
        every modality starts from modality 0's head."""
        inits = [init_params(mod.model, gen, self.schedule.init)
                 for mod, gen in zip(self.modalities, self.generators, strict=True)]
        if self.hyper.share_head:
            for init in inits[1:]:
                init.update({k: v.clone() for k, v in inits[0].items() if k.startswith(HEAD)})
        return inits

    def setup(self) -> None:
        self.models = [broadcast(init, mod.size)
                       for init, mod in zip(self.initial_models(), self.modalities, strict=True)]

    def server(self, trained: list[Tensors]) -> list[Tensors]:
        """The new client models of every modality from the trained ones."""
        raise NotImplementedError

    # -- a round --------------------------------------------------------------------------------
    def round(self, round_: int, clients: torch.Tensor) -> None:
        trained, self.selected = [], []
        for m in range(len(self.modalities)):
            choice = self.select(m, self.models[m])
            trained.append(self.train(m, self.models[m], choice))
            self.selected.append(choice)
        self.trained = trained
        self.models = self.server(trained)

    def rule(self, lr: float) -> Any:
        s = self.schedule
        if s.optimizer == "adam":
            return Adam(lr, weight_decay=s.weight_decay)
        return Sgd(lr, weight_decay=s.weight_decay)

    def select(self, m: int, start: Tensors) -> torch.Tensor:
        """Steps 2-6: each client's selected rate (index into `self.rates`)."""
        if len(self.rates) == 1:
            return torch.zeros(self.modalities[m].size, dtype=torch.int64)
        losses = self.held_out_losses(m, start)
        pick = select_modality_rate if self.hyper.select_per == "modality" else select_rates
        return pick(losses).cpu()

    def held_out_losses(self, m: int, start: Tensors) -> torch.Tensor:
        """Steps 2-5: [R, C] the mean loss on client c's held-out subset d of its copy of
        `start` after `temp_steps` steps at rate r (one engine call per rate)."""
        mod, rng, s = self.modalities[m], self.rngs[m], self.schedule
        everyone = torch.arange(mod.size)
        fit, fit_n, held, held_n = holdout_positions(mod.train_n.cpu().numpy(),
                                                     self.hyper.holdout_fraction, rng)
        positions, sizes = (fit, fit_n) if self.hyper.temp_data == "rest" else (held, held_n)
        plan = restrict_plan(make_plan(sizes.numpy(), s.batch_size, rng,
                                       local_steps=self.hyper.temp_steps), positions)
        scorer = build_engine(  # scored by the loss it trains, in its precision
            self.engine_name, mod.model, held_out_data(mod.engine.data, held, held_n), s,
            "training")
        losses = []
        for rate in self.rates:
            copy = mod.engine.train(start, everyone, self.rule(rate), plan)
            loss_sum, _ = scorer.evaluate(copy, everyone, "test")
            losses.append(loss_sum / held_n.to(loss_sum.device).clamp(min=1))
        return torch.stack(losses)

    def train(self, m: int, start: Tensors, choice: torch.Tensor) -> Tensors:
        """Step 7: every client from `start` with its selected rate, one engine call per rate."""
        mod, s = self.modalities[m], self.schedule
        plan = make_plan(mod.train_n.cpu().numpy(), s.batch_size, self.rngs[m],
                         local_steps=s.local_steps, epochs=s.epochs)
        out = {k: torch.empty_like(v) for k, v in start.items()}
        for r in torch.unique(choice).tolist():
            rows = torch.nonzero(choice == r).flatten()
            new = mod.engine.train(gather(start, rows), rows, self.rule(self.rates[r]),
                                   rate_columns(plan, rows))
            for k, v in new.items():
                out[k][rows.to(v.device)] = v
        return out

    # -- what is recorded -------------------------------------------------------------------------
    def view(self) -> View:
        """The models scored: this round's local ones (Step 9) or the server's output."""
        local = self.hyper.scored == "local" and self.trained is not None
        return View(extras={"models": self.trained if local else self.models})

    def client_order(self) -> torch.Tensor:
        return torch.cat([mod.clients for mod in self.modalities])

    def round_arrays(self) -> dict[str, list[Any]]:
        """Every client's selected rate this round, clients in run-wide order."""
        rates = torch.tensor(self.rates, dtype=torch.float64)
        chosen = torch.cat([rates[c] for c in self.selected])
        order = torch.argsort(self.client_order())
        return {"selected_lr": chosen[order].tolist()}

    def round_metrics(self) -> dict[str, float]:
        """The selected rates as metrics too (MLflow keeps metrics, not arrays): each
        client's, and the share of clients on each candidate."""
        chosen = self.round_arrays()["selected_lr"]
        out = {f"selected_lr_c{k}": v for k, v in zip(self.client_order().sort().values.tolist(),
                                                        chosen, strict=True)}
        for rate in self.rates:
            out[f"selected_share_{rate:g}"] = sum(v == rate for v in chosen) / len(chosen)
        return out
