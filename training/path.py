"""Warm-started regularization paths (Collins et al. 2008, Sec. 7.1.2, Tables 2-3).

A path trains a decreasing sequence of C values, each run starting from the
previous run's solution (dual variables for EG and BCFW, weights for the
primal methods) and stopping at a relative duality gap (or, for trainers
without a dual, their own tolerance).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from egnlp.training.records import Callback, DevScorer, TrainResult
from egnlp.training.registry import Trainer, make_config


def parse_c_path(spec: str) -> list[float]:
    """``"1000:0.7:21"`` -> 21 values 1000, 700, 490, ... (start:factor:count)."""
    parts = spec.split(":")
    try:
        start, factor, count = float(parts[0]), float(parts[1]), int(parts[2])
        if len(parts) != 3:
            raise IndexError
    except (IndexError, ValueError):
        raise ValueError(f"--C-path wants START:FACTOR:COUNT, e.g. 1000:0.7:21, not {spec!r}") from None
    if not (start > 0 and 0 < factor < 1 and count >= 1):
        raise ValueError(f"--C-path {spec!r}: need START > 0, 0 < FACTOR < 1 and COUNT >= 1")
    return [start * factor ** k for k in range(count)]


@dataclass
class PathPoint:
    """One C of a path: its run and the row of the table."""

    C: float
    eff_iters: float
    total_eff_iters: float
    dev_uas: float | None
    converged: bool
    result: TrainResult

    def row(self) -> dict:
        return {"C": self.C, "eff_iters": self.eff_iters, "total_eff_iters": self.total_eff_iters,
                "dev_uas": self.dev_uas}


def regularization_path(problem, trainer: Trainer, Cs: list[float], *, dev: DevScorer | None = None,
                        tol: float = 1e-3, callbacks: tuple[Callback, ...] = (), on_point=None,
                        **settings) -> list[PathPoint]:
    """Train ``trainer`` for every C in ``Cs`` in order, warm-starting each run from the last.

    Annealing is off along a path (the warm start does its job).  ``on_point``
    is called with each finished :class:`PathPoint`.
    """
    fields = {f.name for f in dataclasses.fields(trainer.config)}
    if "anneal" in fields:
        settings.setdefault("anneal", False)
    if "tol" in fields:
        settings["tol"] = tol
    points: list[PathPoint] = []
    state = None
    total = 0.0
    for C in Cs:
        config = make_config(trainer, C=C, **settings)
        result = trainer.fit(problem, config=config, dev=dev, callbacks=callbacks, state=state)
        state = result.state
        total += result.final.eff_iters
        point = PathPoint(C, result.final.eff_iters, total, result.final.dev, result.converged, result)
        points.append(point)
        if on_point is not None:
            on_point(point)
    return points
