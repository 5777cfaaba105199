"""The one registry of trainer names, shared by the CLI and the Python API."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Callable

from egnlp.training.eg import EGConfig, fit_eg_ll, fit_eg_ll_batch, fit_eg_mm, fit_eg_mm_batch
from egnlp.training.max_margin import BCFWConfig, CuttingPlaneConfig, fit_bcfw, fit_cutting_plane
from egnlp.training.primal import LBFGSConfig, SGDConfig, fit_lbfgs, fit_sgd


@dataclass(frozen=True)
class Trainer:
    name: str
    description: str
    config: type  # a frozen dataclass of settings
    fit: Callable[..., Any]  # fit(problem, *, config, dev=None, callbacks=(), state=None) -> TrainResult
    objective: str  # "ll" (log-linear) or "mm" (max-margin)
    has_dual: bool  # records carry a dual value and a duality gap


TRAINERS: dict[str, Trainer] = {
    "eg-ll": Trainer("eg-ll", "online exponentiated gradient on the log-linear (CRF) dual "
                     "(Collins et al. 2008, Fig. 3, adaptive rate of Sec. 7)", EGConfig, fit_eg_ll, "ll", True),
    "eg-ll-batch": Trainer("eg-ll-batch", "batch exponentiated gradient on the log-linear dual "
                           "(Collins et al. 2008, Fig. 1)", EGConfig, fit_eg_ll_batch, "ll", True),
    "eg-mm": Trainer("eg-mm", "online exponentiated gradient on the max-margin (M3N) dual "
                     "(Bartlett et al. 2004; Collins et al. 2008, Sec. 8)", EGConfig, fit_eg_mm, "mm", True),
    "eg-mm-batch": Trainer("eg-mm-batch", "batch exponentiated gradient on the max-margin dual",
                           EGConfig, fit_eg_mm_batch, "mm", True),
    "lbfgs": Trainer("lbfgs", "L-BFGS (scipy) on the log-linear primal (Collins et al. 2008, Sec. 7.1.4)",
                     LBFGSConfig, fit_lbfgs, "ll", False),
    "sgd": Trainer("sgd", "stochastic gradient descent on the log-linear primal, eta0 / (1 + t/n) "
                   "(Collins et al. 2008, Sec. 7.1.3)", SGDConfig, fit_sgd, "ll", False),
    "cutting-plane": Trainer("cutting-plane", "one-slack cutting-plane method of SVM-Struct on the max-margin "
                             "objective", CuttingPlaneConfig, fit_cutting_plane, "mm", True),
    "bcfw": Trainer("bcfw", "block-coordinate Frank-Wolfe on the max-margin dual (Lacoste-Julien et al. 2013)",
                    BCFWConfig, fit_bcfw, "mm", True),
}


def make_config(trainer: Trainer, **settings):
    """The trainer's config from ``settings``; a setting it does not have is an error, not ignored."""
    fields = {f.name for f in dataclasses.fields(trainer.config)}
    unknown = sorted(set(settings) - fields)
    if unknown:
        raise ValueError(f"trainer '{trainer.name}' has no setting {', '.join(unknown)}; "
                         f"its settings: {', '.join(sorted(fields))}")
    return trainer.config(**settings)


def get_trainer(name: str) -> Trainer:
    try:
        return TRAINERS[name]
    except KeyError:
        raise ValueError(f"unknown trainer '{name}'; trainers: {', '.join(TRAINERS)}") from None
