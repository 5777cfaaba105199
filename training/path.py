"""Warm-started regularization paths (Collins et al. 2008, Sec. 7.1.2, Tables 2-3).

A path trains a decreasing sequence of C values, each run starting from the
previous run's solution (dual variables for EG and BCFW, weights for the
primal methods) and stopping at a relative duality gap (or, for trainers
without a dual, their own tolerance).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from egnlp.training.records import Callback, DevScorer, TrainResult
from egnlp.training.registry import Trainer


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


def regularization_path(problem, trainer: Trainer, configs: Sequence, *, dev: DevScorer | None = None,
                        callbacks: tuple[Callback, ...] = (), on_point=None) -> list[PathPoint]:
    """Train ``trainer`` with each of ``configs`` in order (one per C, :func:`~egnlp.training.registry.path_configs`),
    warm-starting each run from the last. ``on_point`` is called with each finished :class:`PathPoint`."""
    points: list[PathPoint] = []
    state = None
    total = 0.0
    for config in configs:
        result = trainer.fit(problem, config=config, dev=dev, callbacks=callbacks, state=state)
        state = result.state
        total += result.final.eff_iters
        point = PathPoint(config.C, result.final.eff_iters, total, result.final.dev, result.converged, result)
        points.append(point)
        if on_point is not None:
            on_point(point)
    return points
