"""Maximum-entropy (multinomial logistic) training on 0/1 features: CD, GIS, SCGIS, L-BFGS.

The objective is Huang, Hsieh, Chang and Lin (2010), Eq. (3), with the
empirical distribution as *counts* (one event per training token), i.e.

    f(w) = sum_i -log P_w(y_i | x_i) + ||w||^2 / (2 sigma^2),
    P_w(y | x) = S_w(x, y) / T_w(x),  S_w(x, y) = exp(w . f(x, y))    (Eq. 1).

On the count scale sigma^2 = 10 (Sec. 5.1) is a mild prior; on the frequency
scale of Eq. (3) it would dominate.  Features are binary and belong to one
label (the OpenNLP / Ratnaparkhi setting of Sec. 5.1): feature ``t`` is
(predicate ``p_t``, label ``k_t``) and ``f_t(x, y) = 1`` iff ``p_t`` fires in
``x`` and ``y = k_t``.  So ``f_t^# = 1`` (Eq. 14), ``Omega_t`` (Eq. 40) is the
list of events where ``p_t`` fires, and ``exp(z f_t(x, y)) = exp(z)`` needs a
single exp per step (Sec. 4.3).

The data are held in both formats of Sec. 4.1 (:class:`MaxentData`): rows
(event -> predicates) for the parallel GIS and the objective, columns
(predicate -> events) for the sequential SCGIS and CD, which keep
``S_w(x, y)`` and ``T_w(x)`` and update them by Eqs. (18)-(19).

Trainers (``MAXENT_TRAINERS``): ``cd`` (Algorithm 3 with the cheap line-search
test of Sec. 3.2.1), ``gis`` and ``scgis`` (Table 1, sub-problems solved by
Newton's method, Sec. 2.4 / 5.1), ``lbfgs`` (scipy's L-BFGS-B on f and its
gradient).  Each records the state after every pass (:class:`MaxentRecord`).
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from typing import Any, Callable

import numpy as np
from numba import njit

from egnlp.training.records import TrainResult

# ---------------------------------------------------------------------------
# data


@dataclass(frozen=True)
class MaxentData:
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
    def n_predicates(self) -> int:
        return int(self.pr_ptr.shape[0] - 1)

    @property
    def n_features(self) -> int:
        return int(self.feat_label.shape[0])

    @property
    def nnz(self) -> int:
        """#nz of Eq. (4): sum over features of |Omega_t| (one nonzero per event and feature)."""
        return int(np.sum(np.diff(self.pr_ptr)[self.feat_pred]))

    @classmethod
    def from_events(cls, ev_ptr: np.ndarray, ev_pred: np.ndarray, labels: np.ndarray, n_labels: int,
                    n_predicates: int) -> "MaxentData":
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
        event = np.repeat(np.arange(n, dtype=np.int64), np.diff(ev_ptr))
        # one entry per (event, predicate), rows sorted by predicate
        key = np.unique(event * max(n_predicates, 1) + ev_pred)
        event, pred = key // max(n_predicates, 1), key % max(n_predicates, 1)
        new_ptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.bincount(event, minlength=n), out=new_ptr[1:])
        order = np.argsort(pred, kind="stable")
        pr_ptr = np.zeros(n_predicates + 1, dtype=np.int64)
        np.cumsum(np.bincount(pred, minlength=n_predicates), out=pr_ptr[1:])
        fkeys, emp = np.unique(pred * n_labels + labels[event], return_counts=True)
        feat_pred, feat_label = fkeys // n_labels, fkeys % n_labels
        feat_ptr = np.searchsorted(feat_pred, np.arange(n_predicates + 1)).astype(np.int64)
        return cls(int(n_labels), labels, new_ptr, pred.astype(np.int32), pr_ptr,
                   event[order].astype(np.int32), feat_ptr, feat_pred.astype(np.int64),
                   feat_label.astype(np.int64), emp.astype(np.float64))


# ---------------------------------------------------------------------------
# objective and gradient (row format)


@njit(cache=True)
def event_scores(ev_ptr, ev_pred, feat_ptr, feat_label, w, n_labels):
    """sum_t w_t f_t(x_i, y) for every event i and label y."""
    n = ev_ptr.shape[0] - 1
    out = np.zeros((n, n_labels))
    for i in range(n):
        for j in range(ev_ptr[i], ev_ptr[i + 1]):
            p = ev_pred[j]
            for t in range(feat_ptr[p], feat_ptr[p + 1]):
                out[i, feat_label[t]] += w[t]
    return out


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
    """E_t = sum_{x,y} P_w(y|x) f_t(x, y) for every feature (Eq. 41, counts)."""
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
def _nll(S, T, shift, scores_gold_unshifted):
    """sum_i log T_w(x_i) - w . f(x_i, y_i) from the shifted sums."""
    total = 0.0
    for i in range(T.shape[0]):
        total += np.log(T[i]) + shift[i] - scores_gold_unshifted[i]
    return total


def _state(data: MaxentData, w: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
    """(S, T, f(w)) with S, T shifted per event so nothing overflows."""
    scores = event_scores(data.ev_ptr, data.ev_pred, data.feat_ptr, data.feat_label, w, data.n_labels)
    gold = scores[np.arange(data.n_events), data.labels].copy()
    T, shift = _shifted_sums(scores)
    return scores, T, float(_nll(scores, T, shift, gold))


def _check_w(data: MaxentData, w: np.ndarray) -> np.ndarray:
    w = np.ascontiguousarray(w, dtype=np.float64)
    if w.shape != (data.n_features,):
        raise ValueError(f"{w.shape} weights for {data.n_features} features")
    return w


def objective(data: MaxentData, w: np.ndarray, sigma2: float) -> float:
    """f(w) = sum_i -log P_w(y_i|x_i) + ||w||^2 / (2 sigma^2) (Eq. 3 on counts)."""
    w = _check_w(data, w)
    _, _, nll = _state(data, w)
    return nll + float(w @ w) / (2.0 * sigma2)


def objective_and_gradient(data: MaxentData, w: np.ndarray, sigma2: float) -> tuple[float, np.ndarray]:
    """f(w) and its gradient E_t - P~(f_t) + w_t / sigma^2 (Eq. 30 at z = 0)."""
    f, g, _, _ = _evaluate(data, _check_w(data, w), sigma2)
    return f, g


def _evaluate(data: MaxentData, w: np.ndarray, sigma2: float):
    """(f, gradient, S, T) at w; S and T are shifted per event (P = S / T is unchanged)."""
    S, T, nll = _state(data, w)
    E = _expected(data.ev_ptr, data.ev_pred, data.feat_ptr, data.feat_label, S, T)
    return nll + float(w @ w) / (2.0 * sigma2), E - data.emp + w / sigma2, S, T


# ---------------------------------------------------------------------------
# one-variable sub-problems


@njit(cache=True)
def _is_newton(w_t, emp_t, E_t, fs, inv_s2, tol, max_iter):
    """argmin_z of A_t^GIS / A_t^SCGIS (Table 1): root of (w_t + z)/s2 - emp_t + E_t exp(z fs).

    Newton iterations (Eq. 27) until |A'| <= tol (Sec. 5.1), safeguarded by a
    bracket of the root with bisection, since a Newton step from the left of
    the root of this convex increasing A' can overshoot far (Sec. 2.4).
    """
    g = w_t * inv_s2 - emp_t + E_t
    if abs(g) <= tol:
        return 0.0
    if g < 0.0:
        lo = 0.0
        hi = emp_t / inv_s2 - w_t  # A'(hi) = E_t exp(hi fs) >= 0
    else:
        hi = 0.0
        lo = -1.0
        while (w_t + lo) * inv_s2 - emp_t + E_t * np.exp(lo * fs) > 0.0:
            lo *= 2.0
    z = 0.0
    for _ in range(max_iter):
        e = E_t * np.exp(z * fs)
        g = (w_t + z) * inv_s2 - emp_t + e
        if abs(g) <= tol:
            break
        if g < 0.0:
            lo = z
        else:
            hi = z
        if hi - lo <= 1e-14 * (1.0 + abs(z)):
            break
        zn = z - g / (inv_s2 + fs * e)
        if not (lo < zn < hi):
            zn = 0.5 * (lo + hi)
        z = zn
    return z


@njit(cache=True, error_model="numpy")
def _update_sums(t, z, feat_pred, feat_label, pr_ptr, pr_ev, S, T):
    """Eqs. (18)-(19) for w_t += z on 0/1 features: one exp (Sec. 4.3).

    Only the ratios S_ki / T_i matter, so an event whose T_i leaves [1e-3, 1e3]
    is rescaled to T_i = 1, its T_i summed afresh over the labels: without
    this, long runs of steps overflow S or cancel T_i to 0 (seen on the full
    conll2000 and brown data).  S_ki is multiplied by e^z, never updated as
    S_ki + S_ki (e^z - 1): for z below about -37 that sum is exactly 0 when
    label k held nearly all of event i's mass, and a probability of exactly 0
    can never grow again (the fault of cd on the full conll2000-pos data).
    """
    p = feat_pred[t]
    k = feat_label[t]
    ez = np.exp(z)
    em1 = np.expm1(z)
    for j in range(pr_ptr[p], pr_ptr[p + 1]):
        i = pr_ev[j]
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
# passes


_MAX_STEP = 500.0  # |z| beyond this would overflow S_ki e^z; such a line-search try counts as failed


@njit(cache=True)
def _log_mix(S, T, k, i, z, ez, em1):
    """log(S_ki e^z + sum_{y != k} S_yi) - log T_i: the change of log T_w(x_i) when w_t += z (Eq. 17).

    With q = S_ki / T_i this is log1p(q (e^z - 1)), exact while q (e^z - 1) >
    -1/2.  Below that (a large negative step on a label holding most of the
    mass) log1p loses everything: with q = 1 - 1e-27 and e^z - 1 rounded to
    -1 it gives -inf or about z, while the true value is log((1 - q) + q e^z),
    and T_i - S_ki cancels just as badly.  So the other labels' mass is summed
    afresh there, O(labels) for the rare events that need it.
    """
    q = S[k, i] / T[i]
    x = q * em1
    if x > -0.5:
        return np.log1p(x)
    rest = 0.0
    for y in range(S.shape[0]):
        if y != k:
            rest += S[y, i]
    v = (rest + S[k, i] * ez) / T[i]
    if v > 0.0:
        return np.log(v)
    return z + np.log(q)  # nothing else in the event and S_ki e^z underflowed


@njit(cache=True, error_model="numpy")
def _cd_pass(order, w, emp, feat_pred, feat_label, pr_ptr, pr_ev, S, T, inv_s2, beta, gamma, max_ls,
             rec_t, rec_z, rec_g, rec_bound, n_rec):
    """One pass of Algorithm 3 over the features in ``order``; returns (#steps, #line-search tries, #exact).

    Step 1: Newton direction d = -A'(0)/A''(0); step 2': z = lambda d for
    lambda = 1, beta, ...; accept when the upper bound (39) or else the exact
    A_t^CD(z) (17) satisfies the sufficient decrease (35)/(38)
    A(z) <= gamma z A'(0).  Accepted steps go to rec_* while n_rec < rec_t.size.
    """
    steps = 0
    tries = 0
    exact = 0
    for idx in range(order.shape[0]):
        t = order[idx]
        p = feat_pred[t]
        k = feat_label[t]
        a = pr_ptr[p]
        b = pr_ptr[p + 1]
        g1 = 0.0
        g2 = 0.0
        for j in range(a, b):
            i = pr_ev[j]
            q = S[k, i] / T[i]
            g1 += q
            g2 += q * (1.0 - q)
        gp = g1 + w[t] * inv_s2 - emp[t]
        if gp == 0.0:
            continue
        d = -gp / (g2 + inv_s2)
        omega = float(b - a)
        lam = 1.0
        ok = False
        by_bound = False
        z = 0.0
        for _ in range(max_ls):
            z = lam * d
            tries += 1
            if abs(z) > _MAX_STEP:
                lam *= beta
                continue
            ez = np.exp(z)
            em1 = np.expm1(z)
            qz = (2.0 * w[t] * z + z * z) * 0.5 * inv_s2 - z * emp[t]
            rhs = gamma * z * gp
            x = g1 / omega * em1
            # (38) in O(1); skipped where log1p would cancel (its 1 - q-bar is not known exactly)
            if x > -0.5 and qz + omega * np.log1p(x) <= rhs:
                ok = True
                by_bound = True
                break
            exact += 1
            az = qz
            for j in range(a, b):
                az += _log_mix(S, T, k, pr_ev[j], z, ez, em1)
            if az <= rhs:  # (35)
                ok = True
                break
            lam *= beta
        if not ok:
            continue
        if n_rec[0] < rec_t.shape[0]:
            r = n_rec[0]
            rec_t[r] = t
            rec_z[r] = z
            rec_g[r] = gp
            rec_bound[r] = by_bound
            n_rec[0] = r + 1
        w[t] += z
        _update_sums(t, z, feat_pred, feat_label, pr_ptr, pr_ev, S, T)
        steps += 1
    return steps, tries, exact


@njit(cache=True, error_model="numpy")
def _scgis_pass(order, w, emp, feat_pred, feat_label, pr_ptr, pr_ev, S, T, inv_s2, tol, max_iter):
    """One pass of SCGIS (Table 1, f_t^# = 1): per feature, E_t from S, T, Newton on A_t^SCGIS, Eqs. (18)-(19)."""
    for idx in range(order.shape[0]):
        t = order[idx]
        p = feat_pred[t]
        k = feat_label[t]
        E = 0.0
        for j in range(pr_ptr[p], pr_ptr[p + 1]):
            i = pr_ev[j]
            E += S[k, i] / T[i]
        z = _is_newton(w[t], emp[t], E, 1.0, inv_s2, tol, max_iter)
        if z != 0.0:
            w[t] += z
            _update_sums(t, z, feat_pred, feat_label, pr_ptr, pr_ev, S, T)


@njit(cache=True)
def _gis_steps(w, emp, E, fsharp, inv_s2, tol, max_iter):
    """GIS (Table 1): the n independent sub-problems of A^GIS at the same w."""
    z = np.empty(w.shape[0])
    for t in range(w.shape[0]):
        z[t] = _is_newton(w[t], emp[t], E[t], fsharp, inv_s2, tol, max_iter)
    return z


@njit(cache=True)
def _fsharp(ev_ptr, ev_pred, feat_ptr, feat_label, n_labels):
    """f^# = max_{x,y} sum_t f_t(x, y) (Sec. 2.2)."""
    best = 0
    cnt = np.zeros(n_labels, dtype=np.int64)
    for i in range(ev_ptr.shape[0] - 1):
        cnt[:] = 0
        for j in range(ev_ptr[i], ev_ptr[i + 1]):
            p = ev_pred[j]
            for t in range(feat_ptr[p], feat_ptr[p + 1]):
                cnt[feat_label[t]] += 1
        m = cnt.max()
        if m > best:
            best = m
    return best


# ---------------------------------------------------------------------------
# settings, records, driver


@dataclass(frozen=True)
class MaxentConfig:
    """Settings shared by the maxent trainers.

    A run stops after ``max_passes`` passes, once the relative objective
    decrease of a pass ``(f_prev - f) / max(|f|, 1)`` is <= ``tol``, once
    ``||grad f|| <= gtol``, or after ``max_seconds`` of optimisation time.
    ``beta``, ``gamma``, ``max_line_search``: CD's line search (Sec. 3.2,
    beta = 0.5, gamma = 0.001 in Sec. 5.1).  ``newton_tol``, ``newton_iters``:
    the GIS/SCGIS sub-problem solves (|A'| <= 1e-5 in Sec. 5.1).  ``seed``:
    None visits features cyclically, an int permutes them every pass (Sec. 4.4).
    """

    sigma2: float = 10.0
    max_passes: int = 100
    tol: float = 1e-5
    gtol: float = 0.0
    max_seconds: float | None = None
    beta: float = 0.5
    gamma: float = 0.001
    max_line_search: int = 30
    newton_tol: float = 1e-5
    newton_iters: int = 100
    seed: int | None = None
    lbfgs_memory: int = 10

    def __post_init__(self) -> None:
        if not self.sigma2 > 0:
            raise ValueError(f"sigma2 must be positive, not {self.sigma2}")
        if self.max_passes < 0:
            raise ValueError(f"the pass limit must be >= 0, not {self.max_passes}")
        if not (self.tol >= 0 and self.gtol >= 0):
            raise ValueError(f"tolerances must be >= 0, not tol={self.tol}, gtol={self.gtol}")
        if self.max_seconds is not None and not self.max_seconds > 0:
            raise ValueError(f"max_seconds must be positive or None, not {self.max_seconds}")
        if not (0 < self.beta < 1 and 0 < self.gamma < 0.5):
            raise ValueError(f"need 0 < beta < 1 and 0 < gamma < 1/2, not {self.beta}, {self.gamma}")
        if self.max_line_search < 1 or self.newton_iters < 1 or not self.newton_tol > 0:
            raise ValueError("max_line_search and newton_iters must be >= 1, newton_tol positive")
        if self.lbfgs_memory < 1:
            raise ValueError(f"lbfgs_memory must be >= 1, not {self.lbfgs_memory}")


@dataclass(frozen=True)
class MaxentRecord:
    """The state after a pass, in the shape of :class:`egnlp.training.records.PassRecord`.

    ``eff_iters`` = passes over the data (for ``lbfgs``: function and gradient
    evaluations); ``seconds`` = cumulative optimisation time without the
    evaluation of this record's objective, gradient norm and dev score (for
    ``lbfgs`` its own evaluations are the optimisation; ``cd`` and ``scgis``
    reuse the exact S, T computed for the record instead of the incrementally
    updated ones, untimed); ``primal`` = f(w); ``rel_change`` = (previous f -
    f) / max(|f|, 1).
    """

    passes: int
    eff_iters: float
    seconds: float
    primal: float
    grad_norm: float
    rel_change: float | None
    dev: float | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


MaxentCallback = Callable[[MaxentRecord], None]
MaxentDevScorer = Callable[[np.ndarray], float]


@dataclass
class _Recorder:
    """Evaluates f, ||grad f|| and the dev score after each pass and applies the stopping rules."""

    data: MaxentData
    config: MaxentConfig
    dev: MaxentDevScorer | None
    callbacks: tuple
    records: list = field(default_factory=list)
    sums: tuple | None = None

    def __call__(self, passes: int, eff: float, seconds: float, w: np.ndarray,
                 fg: tuple[float, np.ndarray] | None = None) -> bool:
        """Record; True when converged by ``tol`` or ``gtol``.  Keeps the exact S, T at w in ``sums``."""
        if fg is None:
            f, g, S, T = _evaluate(self.data, w, self.config.sigma2)
            self.sums = (S, T)
        else:
            f, g = fg
        gn = float(np.linalg.norm(g))
        prev = self.records[-1].primal if self.records else None
        rel = None if prev is None else (prev - f) / max(abs(f), 1.0)
        rec = MaxentRecord(passes, eff, seconds, float(f), gn, rel,
                           self.dev(w.copy()) if self.dev is not None else None)
        self.records.append(rec)
        for cb in self.callbacks:
            cb(rec)
        # An increase (rel < 0) is not convergence: the run goes on from the exact sums.
        return gn <= self.config.gtol or (rel is not None and 0.0 <= rel <= self.config.tol)

    def out_of_time(self, seconds: float) -> bool:
        return self.config.max_seconds is not None and seconds >= self.config.max_seconds


def _start(data: MaxentData, w0: np.ndarray | None) -> np.ndarray:
    if not isinstance(data, MaxentData):
        raise ValueError(f"maxent trainers need a MaxentData, not {type(data).__name__}")
    return np.zeros(data.n_features) if w0 is None else _check_w(data, w0).copy()


def _order(n: int, rng: np.random.Generator | None) -> np.ndarray:
    return np.arange(n, dtype=np.int64) if rng is None else rng.permutation(n).astype(np.int64)


def _fit_sequential(kind: str, data: MaxentData, config: MaxentConfig, dev, callbacks, w0,
                    record_steps: int) -> TrainResult:
    w = _start(data, w0)
    rec = _Recorder(data, config, dev, tuple(callbacks))
    rng = None if config.seed is None else np.random.default_rng(config.seed)
    inv_s2 = 1.0 / config.sigma2
    rec_t = np.zeros(record_steps, dtype=np.int64)
    rec_z = np.zeros(record_steps)
    rec_g = np.zeros(record_steps)
    rec_b = np.zeros(record_steps, dtype=np.bool_)
    n_rec = np.zeros(1, dtype=np.int64)
    seconds = 0.0
    converged = rec(0, 0.0, 0.0, w)
    stats = np.zeros(3, dtype=np.int64)
    passes = 0
    failed_pass = 0
    while not converged and passes < config.max_passes and not rec.out_of_time(seconds):
        # S_w, T_w as maintained by Eqs. (18)-(19), recomputed exactly by the record of
        # the previous pass (so the incremental sums do not drift)
        S, T = rec.sums
        good = w.copy()
        S = np.ascontiguousarray(S.T)  # (labels, events): a feature's column S[k, Omega_t] is one row
        start = time.perf_counter()
        order = _order(data.n_features, rng)
        if kind == "cd":
            stats += np.array(_cd_pass(order, w, data.emp, data.feat_pred, data.feat_label, data.pr_ptr,
                                       data.pr_ev, S, T, inv_s2, config.beta, config.gamma,
                                       config.max_line_search, rec_t, rec_z, rec_g, rec_b, n_rec))
        else:
            _scgis_pass(order, w, data.emp, data.feat_pred, data.feat_label, data.pr_ptr, data.pr_ev, S, T,
                        inv_s2, config.newton_tol, config.newton_iters)
        seconds += time.perf_counter() - start
        passes += 1
        converged = rec(passes, float(passes), seconds, w)
        f = rec.records[-1].primal
        if not np.isfinite(f) or f > rec.records[-2].primal:
            # A pass that raised the objective is a numerical failure of the incremental
            # sums (cd on the full conll2000-pos data, before S_ki e^z in _update_sums): keep
            # the last good weights rather than a worse model.
            w[:] = good
            failed_pass = passes
            rec.records.pop()
            break
    state: dict[str, np.ndarray] = {"failed_pass": np.array(failed_pass)}
    if kind == "cd":
        state["cd_stats"] = stats  # accepted steps, line-search tries, exact evaluations of (17)
        if record_steps:
            m = int(n_rec[0])
            state.update(steps_t=rec_t[:m], steps_z=rec_z[:m], steps_grad=rec_g[:m], steps_by_bound=rec_b[:m])
    return TrainResult(w, rec.records, converged, state)


def fit_cd(data: MaxentData, *, config: MaxentConfig = MaxentConfig(), dev: MaxentDevScorer | None = None,
           callbacks: tuple[MaxentCallback, ...] = (), w0: np.ndarray | None = None,
           record_steps: int = 0) -> TrainResult:
    """Coordinate descent, Algorithm 3 of Huang et al. (2010) with step 2' of Sec. 3.2.1.

    ``record_steps`` > 0 keeps the first that many accepted steps (feature,
    z, A'(0), accepted by the bound (38)) in ``state`` so that tests can
    replay them against the exact objective.
    """
    return _fit_sequential("cd", data, config, dev, callbacks, w0, int(record_steps))


def fit_scgis(data: MaxentData, *, config: MaxentConfig = MaxentConfig(), dev: MaxentDevScorer | None = None,
              callbacks: tuple[MaxentCallback, ...] = (), w0: np.ndarray | None = None) -> TrainResult:
    """Sequential conditional GIS (Goodman 2002; Table 1), with the Gaussian prior (Sec. 2.4)."""
    return _fit_sequential("scgis", data, config, dev, callbacks, w0, 0)


def fit_gis(data: MaxentData, *, config: MaxentConfig = MaxentConfig(), dev: MaxentDevScorer | None = None,
            callbacks: tuple[MaxentCallback, ...] = (), w0: np.ndarray | None = None) -> TrainResult:
    """Generalized iterative scaling (Darroch and Ratcliff 1972; Table 1), parallel update (Algorithm 2).

    One pass computes E_t (Eq. 41) for all features at the current w, solves
    the n sub-problems of A^GIS with the prior by Newton (Sec. 2.4), then
    updates all weights.  No correction feature is stored: its z is 0
    (Sec. 2.2).
    """
    w = _start(data, w0)
    rec = _Recorder(data, config, dev, tuple(callbacks))
    inv_s2 = 1.0 / config.sigma2
    fsharp = float(max(1, _fsharp(data.ev_ptr, data.ev_pred, data.feat_ptr, data.feat_label, data.n_labels)))
    seconds = 0.0
    converged = rec(0, 0.0, 0.0, w)
    passes = 0
    while not converged and passes < config.max_passes and not rec.out_of_time(seconds):
        start = time.perf_counter()
        S, T, _ = _state(data, w)
        E = _expected(data.ev_ptr, data.ev_pred, data.feat_ptr, data.feat_label, S, T)
        w += _gis_steps(w, data.emp, E, fsharp, inv_s2, config.newton_tol, config.newton_iters)
        seconds += time.perf_counter() - start
        passes += 1
        converged = rec(passes, float(passes), seconds, w)
    return TrainResult(w, rec.records, converged, {"fsharp": np.array(fsharp)})


def fit_lbfgs(data: MaxentData, *, config: MaxentConfig = MaxentConfig(), dev: MaxentDevScorer | None = None,
              callbacks: tuple[MaxentCallback, ...] = (), w0: np.ndarray | None = None) -> TrainResult:
    """scipy's L-BFGS-B (Liu and Nocedal 1989; the LBFGS baseline of Sec. 5.1) on f and its gradient.

    A "pass" is one L-BFGS iteration; ``eff_iters`` counts evaluations of f
    and its gradient (each about two passes over the data).  The records use
    the values of the last evaluation, so reporting costs nothing extra.
    """
    from scipy.optimize import minimize  # scipy is only needed by this trainer

    w = _start(data, w0)
    rec = _Recorder(data, config, dev, tuple(callbacks))
    s2 = config.sigma2
    clock = {"seconds": 0.0, "evals": 0}
    last: dict[str, Any] = {}

    def fun(x: np.ndarray) -> tuple[float, np.ndarray]:
        start = time.perf_counter()
        f, g = objective_and_gradient(data, x, s2)
        clock["seconds"] += time.perf_counter() - start
        clock["evals"] += 1
        last.update(x=x.copy(), f=f, g=g)
        return f, g

    converged = rec(0, 0.0, 0.0, w, fun(w))
    clock["seconds"] = 0.0
    clock["evals"] = 0
    state = {"passes": 0, "converged": converged}

    def callback(intermediate_result: Any) -> None:
        x = intermediate_result.x
        fg = (last["f"], last["g"]) if np.array_equal(last.get("x"), x) else objective_and_gradient(data, x, s2)
        state["passes"] += 1
        state["converged"] = rec(state["passes"], float(clock["evals"]), clock["seconds"], x, fg)
        if state["converged"] or rec.out_of_time(clock["seconds"]):
            raise StopIteration

    if not converged and config.max_passes > 0:
        res = minimize(fun, w, jac=True, method="L-BFGS-B", callback=callback,
                       options={"maxiter": config.max_passes, "maxcor": config.lbfgs_memory,
                                "ftol": 0.0, "gtol": 0.0, "maxfun": 20 * config.max_passes + 20})
        w = np.array(res.x, dtype=np.float64)
    return TrainResult(w, rec.records, bool(state["converged"]), {})


@dataclass(frozen=True)
class MaxentTrainer:
    name: str
    description: str
    fit: Callable[..., TrainResult]  # fit(data, *, config, dev=None, callbacks=(), w0=None) -> TrainResult


MAXENT_TRAINERS: dict[str, MaxentTrainer] = {
    "cd": MaxentTrainer("cd", "coordinate descent with one Newton step and line search "
                        "(Huang et al. 2010, Algorithm 3, Sec. 3.2.1)", fit_cd),
    "gis": MaxentTrainer("gis", "generalized iterative scaling with a Gaussian prior (Huang et al. 2010, "
                         "Table 1)", fit_gis),
    "scgis": MaxentTrainer("scgis", "sequential conditional GIS with a Gaussian prior (Goodman 2002; "
                           "Huang et al. 2010, Table 1)", fit_scgis),
    "lbfgs": MaxentTrainer("lbfgs", "L-BFGS (scipy L-BFGS-B) on the maxent objective", fit_lbfgs),
}


def get_maxent_trainer(name: str) -> MaxentTrainer:
    try:
        return MAXENT_TRAINERS[name]
    except KeyError:
        raise ValueError(f"unknown maxent trainer '{name}'; trainers: {', '.join(MAXENT_TRAINERS)}") from None
