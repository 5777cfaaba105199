"""The one registry of trainer names, shared by the CLI and the Python API."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from training.eg import EGConfig, fit_eg_ll


@dataclass(frozen=True)
class Trainer:
    name: str
    description: str
    config: type  # a frozen dataclass of settings
    fit: Callable[..., Any]  # fit(problem, *, config, dev=None, callbacks=(), state=None) -> TrainResult


TRAINERS: dict[str, Trainer] = {
    "eg-ll": Trainer("eg-ll", "online exponentiated gradient on the log-linear (CRF) dual "
                     "(Collins et al. 2008, Fig. 3, adaptive rate of Sec. 7)", EGConfig, fit_eg_ll),
}


def get_trainer(name: str) -> Trainer:
    try:
        return TRAINERS[name]
    except KeyError:
        raise ValueError(f"unknown trainer '{name}'; trainers: {', '.join(TRAINERS)}") from None
