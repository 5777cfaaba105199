"""What trainers report: a record per pass and the result of a run; the best pass kept for an interrupted run."""

from __future__ import annotations

import math
import signal
import threading
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Callable, Iterator

import numpy as np

from egnlp.base.interrupts import interrupt, interrupt_when_safe


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
        """The fields, JSON-ready: an objective not computed (NaN: BCFW's ``gap_every``) is None."""
        return {key: None if isinstance(value, float) and math.isnan(value) else value
                for key, value in asdict(self).items()}


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


def _objectives(primal: float, dual: float | None) -> dict[str, float | None]:
    """A record's primal, dual, gap and relative gap (no gaps without a dual)."""
    gap = primal + dual if dual is not None else None
    return {"primal": primal, "dual": dual, "gap": gap,
            "rel_gap": gap / max(abs(primal), 1e-300) if gap is not None else None}


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
        rec = PassRecord(passes=passes, eff_iters=self.visits / self.n, seconds=self.seconds,
                         **_objectives(primal, dual), dev=self.dev(w) if self.dev is not None else None, C=C,
                         grad_norm=grad_norm)
        self.records.append(rec)
        for cb in self.callbacks:
            keep = getattr(cb, "keep", None)
            if keep is not None:
                keep(rec, w)
            cb(rec)
            if getattr(cb, "stop", False):
                self.stopped = True
        if _INTERRUPT[0]:  # Ctrl-C during the pass (see interrupts_between_passes): stop here, the pass kept
            interrupt()
        return rec

    def complete_last(self, primal: float) -> PassRecord:
        """The last record again, in its place, with ``primal`` and its gaps: objectives computed after the
        record was made and seen (BCFW's last point, when its record stopped the run).  The callbacks are
        not called again."""
        self.records[-1] = replace(self.records[-1], **_objectives(primal, self.records[-1].dual))
        return self.records[-1]

    stopped = False  # a callback asked to stop (its ``stop`` attribute turned true after a pass)

    def out_of_time(self, max_seconds: float | None) -> bool:
        """Whether the run is out of budget: the optimisation time has reached ``max_seconds`` (None: no
        limit), or a callback asked to stop (a :class:`BestPass` whose patience ran out). The trainers ask
        before every pass, so a stop changes how many passes run, never what a pass computes."""
        return self.stopped or (max_seconds is not None and self.seconds >= max_seconds)


class BestPass:
    """A callback that keeps a copy of the weights of the best pass so far: the pass with the highest dev
    score when the run scores a dev set, else the last pass.

    The :class:`Recorder` hands its ``keep`` method each pass's weights before calling it. Give one to a
    training function (``callbacks=[BestPass()]``) to get the best model so far when Ctrl-C stops the
    run (see :func:`fit_or_best`); it costs a copy of the weights per pass that improves.

    With ``patience`` P, :attr:`stop` turns true once the dev score has not improved for P passes, and
    the :class:`Recorder` then ends the run (early stopping); :meth:`result` gives the best pass.  With
    ``target_C`` as well, only passes at that C count toward the patience: while EG anneals C from
    10 C down to it (:meth:`~egnlp.training.eg.EGConfig.C_at`), each pass optimises another
    objective and the dev score climbs as C falls, so stopping there would keep a model of an
    objective the run was not asked for (eu, ``--trainer eg-mm``: stopped at pass 7 at C = 541, dev
    UAS 70.3 against 78 at C = 100).
    """

    def __init__(self, patience: int | None = None, target_C: float | None = None) -> None:
        if patience is not None and (isinstance(patience, bool) or not isinstance(patience, int) or patience < 1):
            raise ValueError(f"the patience must be a whole number of passes >= 1, not {patience!r}")
        self.patience = patience
        self.target_C = target_C
        self._settled: int | None = None  # the first pass at target_C
        self.stop = False
        self.records: list[PassRecord] = []
        self._best: tuple[int, PassRecord, np.ndarray] | None = None  # replaced whole: an interrupt never splits it

    def keep(self, record: PassRecord, w: np.ndarray) -> None:
        best = self._best
        if best is None or record.dev is None or best[1].dev is None or record.dev > best[1].dev:
            self._best = (len(self.records), record, np.array(w, dtype=np.float64, copy=True))

    def __call__(self, record: PassRecord) -> None:
        self.records.append(record)
        if self._settled is None and (self.target_C is None or record.C is None or record.C == self.target_C):
            self._settled = record.passes
        best = self.best
        if (self.patience is not None and self._settled is not None and best is not None and best.dev is not None
                and record.dev is not None):
            self.stop = record.passes - max(best.passes, self._settled - 1) >= self.patience

    @property
    def best(self) -> PassRecord | None:
        """The record of the best pass so far (None before the first)."""
        return self._best[1] if self._best is not None else None

    def result(self) -> TrainResult | None:
        """A result holding the best pass's weights and the records up to it (not converged), or None."""
        if self._best is None:
            return None
        index, record, weights = self._best
        return TrainResult(weights=weights, records=[*self.records[:index], record], converged=False)

    @property
    def last(self) -> PassRecord | None:
        """The record of the last pass seen (None before the first)."""
        records = [*self.records[-1:], *([self._best[1]] if self._best is not None else [])]
        return max(records, key=lambda r: r.passes, default=None)


class TrainingInterrupted(KeyboardInterrupt):
    """Training stopped by Ctrl-C, with the model of the best pass so far (see :class:`BestPass`).

    Attributes:
        model: the model built from the best pass's weights.
        result: its :class:`TrainResult` (``result.final`` is the best pass).
        last: the record of the last pass finished before the interrupt.
    """

    def __init__(self, model: Any, result: TrainResult, last: PassRecord) -> None:
        super().__init__(f"training interrupted after pass {last.passes}")
        self.model = model
        self.result = result
        self.last = last


# Set by the SIGINT handler of interrupts_between_passes; read by Recorder.record after each pass.
_INTERRUPT = [False]


@contextmanager
def interrupts_between_passes() -> Iterator[None]:
    """Within the block, a first Ctrl-C (SIGINT) stops training at the end of the current pass (the
    recorder raises KeyboardInterrupt once the pass is recorded) and a second one at once, or as soon as
    the code running leaves Numba's (:func:`~egnlp.base.interrupts.interrupt_when_safe`).

    A KeyboardInterrupt raised at an arbitrary point can land inside Numba's loading of a cached kernel or
    a kernel's call, which turns it into a ``SystemError`` traceback instead of the clean stop; between
    passes it never does. A Ctrl-C that comes after the last pass is raised when the block ends.  Outside the
    main thread the block changes nothing (only the main thread may set signal handlers).
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: Any) -> None:
        if _INTERRUPT[0]:
            interrupt_when_safe(frame)
        _INTERRUPT[0] = True

    _INTERRUPT[0] = False  # before the handler: a Ctrl-C that comes at once is kept
    previous = signal.signal(signal.SIGINT, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        pending, _INTERRUPT[0] = _INTERRUPT[0], False
    if pending:  # Ctrl-C after the last pass was recorded: raised here, outside any kernel
        interrupt()


def fit_or_best(fit: Callable[..., TrainResult], problem: Any, *, callbacks: tuple[Callback, ...] = (),
                **arguments: Any) -> tuple[TrainResult, PassRecord | None]:
    """``(fit(problem, callbacks=callbacks, ...), None)``; when Ctrl-C stops the run and a
    :class:`BestPass` among the callbacks holds a pass, ``(its result, the last pass finished)`` instead.

    Raises:
        KeyboardInterrupt: the run was interrupted with no pass to keep.
    """
    try:
        with interrupts_between_passes():
            return fit(problem, callbacks=callbacks, **arguments), None
    except KeyboardInterrupt:
        kept = next((cb for cb in callbacks if isinstance(cb, BestPass) and cb.best is not None), None)
        if kept is None:
            raise
        return kept.result(), kept.last
