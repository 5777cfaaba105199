"""What trainers report: a record per pass and the result of a run."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Callable

import numpy as np


@dataclass(frozen=True)
class PassRecord:
    """The state of a run after a pass over the data.

    ``eff_iters`` counts example visits / n, every learning rate tried
    included (Collins et al. 2008, Sec. 7); ``seconds`` is optimisation time
    without the evaluation of the objectives and the dev score.  ``dual`` is
    the dual objective Q (minimised; min primal = -min Q), so ``gap =
    primal + dual >= 0`` and ``rel_gap = gap / |primal|``.  Trainers without
    a dual leave those None; the maxent trainers and L-BFGS record the
    gradient norm ``grad_norm`` of the primal instead.
    """

    passes: int
    eff_iters: float
    seconds: float
    primal: float
    dual: float | None
    gap: float | None
    rel_gap: float | None
    dev: float | None = None
    C: float | None = None
    grad_norm: float | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


Callback = Callable[[PassRecord], None]
DevScorer = Callable[[np.ndarray], float]


@dataclass
class TrainResult:
    """Weights, history and the state to warm-start another run from."""

    weights: np.ndarray
    records: list[PassRecord]
    converged: bool
    state: dict[str, np.ndarray] = field(default_factory=dict)

    @property
    def final(self) -> PassRecord:
        return self.records[-1]


class Recorder:
    """Builds the per-pass records of a run and hands them to the callbacks.

    ``seconds`` is optimisation time only: the caller adds to it around its
    own work, so evaluating objectives and the dev score is never counted.
    """

    def __init__(self, n_examples: int, dev: DevScorer | None, callbacks: tuple[Callback, ...]):
        self.n = max(n_examples, 1)
        self.dev = dev
        self.callbacks = callbacks
        self.records: list[PassRecord] = []
        self.seconds = 0.0
        self.visits = 0

    def record(self, passes: int, w: np.ndarray, primal: float, dual: float | None = None,
               C: float | None = None, grad_norm: float | None = None) -> PassRecord:
        gap = primal + dual if dual is not None else None
        rec = PassRecord(passes=passes, eff_iters=self.visits / self.n, seconds=self.seconds, primal=primal,
                         dual=dual, gap=gap, rel_gap=gap / max(abs(primal), 1e-300) if gap is not None else None,
                         dev=self.dev(w) if self.dev is not None else None, C=C, grad_norm=grad_norm)
        self.records.append(rec)
        for cb in self.callbacks:
            cb(rec)
        return rec

    def out_of_time(self, max_seconds: float | None) -> bool:
        """Whether the optimisation time has reached ``max_seconds`` (None: no limit)."""
        return max_seconds is not None and self.seconds >= max_seconds


def check_budget(*, C: float | None = None, max_passes: int | None = None, tol: float | None = None,
                 max_seconds: float | None = None) -> None:
    """Validate the settings every trainer config shares (those given): C > 0, a pass limit >= 0,
    a tolerance >= 0 and a positive time limit (or None); raise ValueError naming the bad one."""
    if C is not None and not C > 0:
        raise ValueError(f"C must be positive, not {C}")
    if max_passes is not None and max_passes < 0:
        raise ValueError(f"the pass limit must be >= 0, not {max_passes}")
    if tol is not None and not tol >= 0:
        raise ValueError(f"the tolerance must be >= 0, not {tol}")
    if max_seconds is not None and not max_seconds > 0:
        raise ValueError(f"the time limit must be positive, not {max_seconds}")
