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
    primal + dual >= 0`` and ``rel_gap = gap / |primal|``.
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
