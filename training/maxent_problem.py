"""The maximum-entropy (multinomial logistic) problem on 0/1 features: data, objective, gradient.

The objective is Huang, Hsieh, Chang and Lin (2010), Eq. (3), with the
empirical distribution as *counts* (one event per training token) and the
prior written with the constant C = 1 / sigma^2 that every egnlp trainer
takes:

    f(w) = sum_i -log P_w(y_i | x_i) + C/2 ||w||^2,
    P_w(y | x) = S_w(x, y) / T_w(x),  S_w(x, y) = exp(w . f(x, y))    (Eq. 1).

This is the log-linear primal of the structured trainers with one event per
example and its label as the structure.  On the count scale sigma^2 = 10
(Sec. 5.1, C = 0.1) is a mild prior; on the frequency scale of Eq. (3) it
would dominate.  Features are the (predicate, label) pairs of
:mod:`egnlp.features.label_pairs`: ``f_t^# = 1`` (Eq. 14), ``Omega_t``
(Eq. 40) is the list of events where ``p_t`` fires, and ``exp(z f_t(x, y)) =
exp(z)`` needs a single exp per step (Sec. 4.3).

:class:`MaxentProblem` holds the events in both formats of Sec. 4.1: rows
(event -> predicates) for the parallel GIS and the objective, columns
(predicate -> events) for the sequential SCGIS and CD, which keep ``S_w(x,
y)`` and ``T_w(x)`` (:class:`Sums`) and update them by Eqs. (18)-(19)
(:func:`update_sums`).  The trainers are in
:mod:`egnlp.training.coordinate_descent` (CD),
:mod:`egnlp.training.iterative_scaling` (GIS, SCGIS) and
:mod:`egnlp.training.primal` (L-BFGS).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
from numba import njit

from egnlp.features.label_pairs import columns_and_pairs, distinct_rows, label_scores
from egnlp.training.configs import MaxentConfig
from egnlp.training.records import Callback, DevScorer, PassRecord, Recorder, TrainResult


class Columns(NamedTuple):
    """The column format a coordinate step reads: feature t's predicate and label, and the events
    ``pr_ev[pr_ptr[p]:pr_ptr[p+1]]`` where predicate p fires."""

    feat_pred: np.ndarray  # (n,) int64
    feat_label: np.ndarray  # (n,) int64
    pr_ptr: np.ndarray  # (P+1,) int64
    pr_ev: np.ndarray  # (nnz,) int32


class Sums(NamedTuple):
    """``S[y, i] = S_w(x_i, y)`` and ``T[i] = T_w(x_i)`` (Eq. 1), each event scaled by its own
    constant (only the ratios S / T matter); S is (labels, events) so a feature's column is one row."""

    S: np.ndarray  # (L, N) float64
    T: np.ndarray  # (N,) float64


@dataclass(frozen=True)
class MaxentProblem:
    """Training events in row and column format (Sec. 4.1) plus the feature table.

    - ``labels`` (N,) gold label of each event;
    - ``ev_ptr`` (N+1,), ``ev_pred``: the predicate ids of event ``i`` are
      ``ev_pred[ev_ptr[i]:ev_ptr[i+1]]`` (rows);
    - ``pr_ptr`` (P+1,), ``pr_ev``: the events where predicate ``p`` fires are
      ``pr_ev[pr_ptr[p]:pr_ptr[p+1]]`` (columns; ``|Omega_t|`` of Eq. 40);
    - ``feat_ptr`` (P+1,): the features of predicate ``p`` are
      ``feat_ptr[p]:feat_ptr[p+1]``, sorted by label; ``feat_pred`` /
      ``feat_label`` (n,) are the predicate and label of each feature;
    - ``emp`` (n,): the empirical count of each feature (``P~(f_t)`` times N).

    Build it with :meth:`from_events`.
    """

    n_labels: int
    labels: np.ndarray
    ev_ptr: np.ndarray
    ev_pred: np.ndarray
    pr_ptr: np.ndarray
    pr_ev: np.ndarray
    feat_ptr: np.ndarray
    feat_pred: np.ndarray
    feat_label: np.ndarray
    emp: np.ndarray

    @property
    def n_events(self) -> int:
        return int(self.labels.shape[0])

    @property
    def n_examples(self) -> int:
        """The events: what one pass of a trainer visits (effective iterations count them)."""
        return self.n_events

    @property
    def n_predicates(self) -> int:
        return int(self.pr_ptr.shape[0] - 1)

    @property
    def n_features(self) -> int:
        return int(self.feat_label.shape[0])

    @property
    def nnz(self) -> int:
        """#nz of Eq. (4): sum over features of |Omega_t| (one nonzero per event and feature)."""
        return int(np.sum(np.diff(self.pr_ptr)[self.feat_pred]))

    @property
    def columns(self) -> Columns:
        return Columns(self.feat_pred, self.feat_label, self.pr_ptr, self.pr_ev)

    @classmethod
    def from_events(cls, ev_ptr: np.ndarray, ev_pred: np.ndarray, labels: np.ndarray, n_labels: int,
                    n_predicates: int) -> "MaxentProblem":
        """Column format and features from events (CSR of predicate ids) and their gold labels.

        The features are the (predicate, label) pairs seen in training, so
        every feature has a positive empirical count; repeated predicates in
        an event count once (features are 0/1).
        """
        ev_ptr = np.asarray(ev_ptr, dtype=np.int64)
        ev_pred = np.asarray(ev_pred, dtype=np.int64)
        labels = np.asarray(labels, dtype=np.int64)
        n = labels.shape[0]
        if n_labels < 1 or n_predicates < 0:
            raise ValueError(f"need >= 1 label and >= 0 predicates, not {n_labels} and {n_predicates}")
        if ev_ptr.ndim != 1 or ev_ptr.shape[0] != n + 1 or ev_ptr[0] != 0 or ev_ptr[-1] != ev_pred.shape[0] \
                or np.any(np.diff(ev_ptr) < 0):
            raise ValueError("ev_ptr must be a CSR pointer over ev_pred with one row per label")
        if n and (labels.min() < 0 or labels.max() >= n_labels):
            raise ValueError(f"labels must lie in [0, {n_labels})")
        if ev_pred.size and (ev_pred.min() < 0 or ev_pred.max() >= n_predicates):
            raise ValueError(f"predicate ids must lie in [0, {n_predicates})")
        new_ptr, pred = distinct_rows(ev_ptr, ev_pred)  # repeated predicates in an event count once
        pr_ptr, pr_event, feat_ptr, feat_pred, feat_label, emp = columns_and_pairs(new_ptr, pred, labels,
                                                                                   n_predicates, n_labels)
        return cls(int(n_labels), labels, new_ptr, pred, pr_ptr, pr_event, feat_ptr, feat_pred, feat_label, emp)

    def check_weights(self, w: np.ndarray) -> np.ndarray:
        """``w`` as a contiguous float64 array of one weight per feature, or ValueError."""
        w = np.ascontiguousarray(w, dtype=np.float64)
        if w.shape != (self.n_features,):
            raise ValueError(f"{w.shape} weights for {self.n_features} features")
        return w

    def _row_sums(self, w: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
        """(S (events, labels), T (events,), sum_i -log P_w(y_i | x_i)) at ``w``, S and T shifted per
        event so nothing overflows (P = S / T is unchanged)."""
        scores = label_scores(self.ev_ptr, self.ev_pred, self.feat_ptr, self.feat_label, w, self.n_labels)
        gold = scores[np.arange(self.n_events), self.labels].copy()
        T, shift = _shifted_sums(scores)
        return scores, T, float(_nll(T, shift, gold))

    def objective(self, w: np.ndarray, C: float) -> float:
        """f(w) = sum_i -log P_w(y_i|x_i) + C/2 ||w||^2 (Eq. 3 on counts, C = 1 / sigma^2)."""
        w = self.check_weights(w)
        return self._row_sums(w)[2] + 0.5 * C * float(w @ w)

    def objective_and_gradient(self, w: np.ndarray, C: float) -> tuple[float, np.ndarray]:
        """f(w) and its gradient E_t - P~(f_t) + C w_t (Eq. 30 at z = 0), E_t of Eq. (41)."""
        f, g, _ = self.evaluate(w, C, with_sums=False)
        return f, g

    def expected(self, w: np.ndarray) -> np.ndarray:
        """E_t = sum_{x,y} P_w(y|x) f_t(x, y) for every feature at ``w`` (Eq. 41, counts)."""
        S, T, _ = self._row_sums(self.check_weights(w))
        return _expected(self.ev_ptr, self.ev_pred, self.feat_ptr, self.feat_label, S, T)

    def evaluate(self, w: np.ndarray, C: float, *, with_sums: bool = True,
                 gradient: bool = True) -> tuple[float, np.ndarray | None, Sums | None]:
        """(f, gradient (None without ``gradient``: a pass over the events saved), and with ``with_sums``
        the exact :class:`Sums` that coordinate steps update) at ``w``."""
        w = self.check_weights(w)
        S, T, nll = self._row_sums(w)
        grad = None
        if gradient:
            grad = _expected(self.ev_ptr, self.ev_pred, self.feat_ptr, self.feat_label, S, T) - self.emp + C * w
        sums = Sums(np.ascontiguousarray(S.T), T) if with_sums else None
        return nll + 0.5 * C * float(w @ w), grad, sums


@njit(cache=True)
def _shifted_sums(scores):
    """In place: scores -> S = exp(score - max_y score); returns (T, shift) per event (Eq. 1)."""
    n, m = scores.shape
    T = np.empty(n)
    shift = np.empty(n)
    for i in range(n):
        c = scores[i, 0]
        for y in range(1, m):
            if scores[i, y] > c:
                c = scores[i, y]
        s = 0.0
        for y in range(m):
            e = np.exp(scores[i, y] - c)
            scores[i, y] = e
            s += e
        T[i] = s
        shift[i] = c
    return T, shift


@njit(cache=True)
def _expected(ev_ptr, ev_pred, feat_ptr, feat_label, S, T):
    """E_t = sum_{x,y} P_w(y|x) f_t(x, y) for every feature (Eq. 41, counts); S is (events, labels)."""
    n_feat = feat_label.shape[0]
    out = np.zeros(n_feat)
    for i in range(ev_ptr.shape[0] - 1):
        inv = 1.0 / T[i]
        for j in range(ev_ptr[i], ev_ptr[i + 1]):
            p = ev_pred[j]
            for t in range(feat_ptr[p], feat_ptr[p + 1]):
                out[t] += S[i, feat_label[t]] * inv
    return out


@njit(cache=True)
def _nll(T, shift, gold_scores):
    """sum_i log T_w(x_i) - w . f(x_i, y_i) from the shifted sums."""
    total = 0.0
    for i in range(T.shape[0]):
        total += np.log(T[i]) + shift[i] - gold_scores[i]
    return total


@njit(cache=True, error_model="numpy")
def update_sums(t, z, columns, sums):
    """Eqs. (18)-(19) for w_t += z on 0/1 features: one exp (Sec. 4.3).

    ``columns`` is a :class:`Columns`, ``sums`` the :class:`Sums` to update
    in place.  Only the ratios S_ki / T_i matter, so an event whose T_i
    leaves [1e-3, 1e3] is rescaled to T_i = 1, its T_i summed afresh over
    the labels: without this, long runs of steps overflow S or cancel T_i to
    0 (seen on the full conll2000 and brown data).  S_ki is multiplied by
    e^z, never updated as S_ki + S_ki (e^z - 1): for z below about -37 that
    sum is exactly 0 when label k held nearly all of event i's mass, and a
    probability of exactly 0 can never grow again (the fault of cd on the
    full conll2000-pos data).
    """
    S = sums.S
    T = sums.T
    p = columns.feat_pred[t]
    k = columns.feat_label[t]
    ez = np.exp(z)
    em1 = np.expm1(z)
    for j in range(columns.pr_ptr[p], columns.pr_ptr[p + 1]):
        i = columns.pr_ev[j]
        s = S[k, i]
        S[k, i] = s * ez  # not s + s (e^z - 1): that is exactly 0 once e^z - 1 rounds to -1
        T[i] += s * em1
        if not (1e-3 <= T[i] <= 1e3):
            acc = 0.0
            for lab in range(S.shape[0]):
                acc += S[lab, i]
            inv = 1.0 / acc
            for lab in range(S.shape[0]):
                S[lab, i] *= inv
            T[i] = 1.0


# ---------------------------------------------------------------------------
# settings and the pass loop shared by CD, SCGIS and GIS



def fit_in_passes(problem: MaxentProblem, config: MaxentConfig,
                  one_pass: Callable[[np.ndarray, np.ndarray, Sums], None], *, seed: int | None,
                  dev: DevScorer | None, callbacks: tuple[Callback, ...], state: dict | None) -> TrainResult:
    """Run ``one_pass(order, w, sums)`` until a stopping rule of ``config`` holds.

    Each pass starts from the exact sums at ``w`` (the incremental updates of
    Eqs. 18-19 within a pass do not drift into the next) and visits the
    features in ``order``: file order with ``seed`` None, a fresh permutation
    per pass otherwise (Sec. 4.4).  After each pass f, ||grad f|| and the dev
    score are recorded (untimed).  A pass that raises f or makes it
    non-finite is a numerical failure: the run stops at the weights before
    it, and ``state["failed_pass"]`` names it (0: none).  ``state["w"]``
    warm-starts the run.
    """
    w = _start_weights(problem, state)
    rec = Recorder(problem.n_examples, dev, callbacks)
    rng = None if seed is None else np.random.default_rng(seed)
    gradient = config.grad_norm or config.gtol > 0

    def evaluate() -> tuple[float, float | None, Sums]:
        f, g, sums = problem.evaluate(w, config.C, gradient=gradient)
        return f, None if g is None else float(np.linalg.norm(g)), sums

    f, norm, sums = evaluate()
    rec.record(0, w, f, C=config.C, grad_norm=norm)
    converged = _converged(rec.records, config)
    failed_pass = 0
    passes = 0
    while not converged and passes < config.max_passes and not rec.out_of_time(config.max_seconds):
        good = w.copy()
        start = time.perf_counter()
        order = (np.arange(problem.n_features, dtype=np.int64) if rng is None
                 else rng.permutation(problem.n_features).astype(np.int64))
        one_pass(order, w, sums)
        rec.seconds += time.perf_counter() - start
        rec.visits += problem.n_examples
        passes += 1
        f, norm, sums = evaluate()
        if not np.isfinite(f) or f > rec.records[-1].primal:
            w[:] = good
            failed_pass = passes
            break
        rec.record(passes, w, f, C=config.C, grad_norm=norm)
        converged = _converged(rec.records, config)
    return TrainResult(w, rec.records, converged, {"w": w, "failed_pass": np.array(failed_pass)})


def _start_weights(problem: MaxentProblem, state: dict | None) -> np.ndarray:
    if not isinstance(problem, MaxentProblem):
        raise ValueError(f"maxent trainers need a MaxentProblem, not {type(problem).__name__}")
    w = None if not state else state.get("w")
    return np.zeros(problem.n_features) if w is None else problem.check_weights(w).copy()


def _converged(records: list[PassRecord], config: MaxentConfig) -> bool:
    """The gradient is small, or the last pass decreased f by a relative ``tol`` or less (not an increase)."""
    last = records[-1]
    if last.grad_norm is not None and last.grad_norm <= config.gtol:
        return True
    if len(records) < 2:
        return False
    change = (records[-2].primal - last.primal) / max(abs(last.primal), 1.0)
    return 0.0 <= change <= config.tol
