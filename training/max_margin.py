"""The max-margin baselines next to EG: block-coordinate Frank-Wolfe and a cutting-plane method.

Both solve the max-margin problem of Collins et al. (2008, Eq. 5),
min_w sum_i max_y [e_i(y) - w . (phi(x_i, y_i) - phi(x_i, y))] + C/2 ||w||^2,
through its dual, with the loss-augmented argmax as their only oracle
(``problem.argmax(i, s + e)``, never the plain argmax).  The dual is
reported as Q_MM = -D (minimised, as for EG), so primal + dual is the
duality gap.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
from egnlp.features.csr import add_sparse
from egnlp.training.eg import check_order, gap_order, max_margin_gaps
from egnlp.training.problem import StructuredProblem, hinge, loss_augmented_examples
from egnlp.training.records import (
    Callback,
    DevScorer,
    Recorder,
    TrainResult,
    check_budget,
)
from numba import njit


@dataclass(frozen=True)
class BCFWConfig:
    """Settings of block-coordinate Frank-Wolfe; stops at a relative duality gap of ``tol``.

    ``order``: "random" (a fresh permutation per pass), "cyclic" or "gap" (n visits drawn in proportion
    to each block's duality gap at the last record, :func:`egnlp.training.eg.gap_order`).
    """

    C: float = 20.0
    max_passes: int = 60
    tol: float = 1e-3
    seed: int = 0
    order: str = "random"
    max_seconds: float | None = None

    def __post_init__(self) -> None:
        check_budget(C=self.C, max_passes=self.max_passes, tol=self.tol, max_seconds=self.max_seconds)
        check_order(self.order)


def fit_bcfw(problem: StructuredProblem, *, config: BCFWConfig = BCFWConfig(), dev: DevScorer | None = None,
             callbacks: tuple[Callback, ...] = (), state: dict | None = None) -> TrainResult:
    """Block-coordinate Frank-Wolfe on the max-margin dual (Lacoste-Julien et al. 2013;
    Franc 2015, "sequential dual ascent" for the structured SVM).

    The per-example dual variables are kept in the part representation, as
    EG keeps them: mu_i, a convex combination of the part vectors of the
    structures found so far, and W = sum_i sum_r (gold_r - mu_{i,r}) phi_r, so
    w = W / C; this stores each example's primal contribution as a vector
    over its parts rather than over features.  A visit finds the
    loss-augmented argmax z_i and moves mu_i toward it by the step
    gamma = min(1, [C (z_i - mu_i) . e_i - W . Delta] / ||Delta||^2),
    Delta = sum_r (mu_i - z_i)_r phi_r, which minimises Q_MM exactly along the
    segment; the numerator is C times the block's Frank-Wolfe duality gap.
    """
    pf = problem.features
    n = pf.n_examples
    C = config.C
    mu = np.array(problem.gold, dtype=np.float64) if not state or state.get("mu") is None else np.array(state["mu"], dtype=np.float64)
    if mu.shape != (pf.n_parts,):
        raise ValueError(f"warm-start mu has shape {mu.shape}, expected ({pf.n_parts},)")
    W = np.zeros(pf.n_features)
    pf.scatter(0, pf.n_parts, problem.gold - mu, W)
    loss = problem.loss
    rng = np.random.default_rng(config.seed)
    rec = Recorder(n, dev, callbacks)
    gaps = np.zeros(n)  # each block's duality gap at the last record

    def record(passes: int) -> bool:
        w = W / C
        dual = -float(mu @ loss) + float(W @ W) / (2.0 * C)
        r = rec.record(passes, w, max_margin_gaps(problem, w, mu, gaps, 0.5 * C * float(w @ w)), dual, C)
        return r.rel_gap <= config.tol

    converged = record(0)
    for p in range(1, config.max_passes + 1):
        if converged or rec.out_of_time(config.max_seconds):
            break
        start = time.perf_counter()
        if config.order == "gap":
            order = gap_order(rng, gaps)
        else:
            order = rng.permutation(n) if config.order == "random" else np.arange(n)
        for i in order:
            lo, hi = pf.parts(int(i))
            s = pf.scores(lo, hi, W) / C
            z = problem.argmax(int(i), s + loss[lo:hi])
            d = z - mu[lo:hi]
            ids, vals, dot, sq = pf.sparse_delta(lo, hi, -d, W)
            num = C * float(d @ loss[lo:hi]) - dot
            if sq > 0.0 and num > 0.0:
                gamma = min(1.0, num / sq)
                add_sparse(W, ids, vals, ids.shape[0], gamma)
                mu[lo:hi] += gamma * d
        rec.visits += n
        rec.seconds += time.perf_counter() - start
        converged = record(p)
    return TrainResult(weights=W / C, records=rec.records, converged=converged, state={"mu": mu})


@dataclass(frozen=True)
class CuttingPlaneConfig:
    """Settings of the one-slack cutting-plane method.

    ``max_passes`` bounds the outer iterations (one loss-augmented pass over
    the data each); ``tol`` is the relative duality gap to stop at; a cut not
    used by the QP solution for ``forget_after`` iterations is dropped.
    """

    C: float = 20.0
    max_passes: int = 200
    tol: float = 1e-3
    qp_tol: float = 1e-10
    forget_after: int = 50
    max_seconds: float | None = None

    def __post_init__(self) -> None:
        check_budget(C=self.C, max_passes=self.max_passes, tol=self.tol, max_seconds=self.max_seconds)
        if not self.qp_tol > 0 or self.forget_after < 1:
            raise ValueError("qp_tol must be positive and forget_after >= 1")


@njit(cache=True)
def simplex_qp(G, b, C, alpha, tol, max_iter):
    """Maximise D(alpha) = b . alpha - alpha' G alpha / (2C) over the simplex by pairwise
    (SMO-style) steps with exact line search, from a feasible ``alpha`` (updated in place).

    Stops when max_i g_i - min_{j: alpha_j > 0} g_j <= tol (g the gradient of D):
    the KKT conditions of the simplex up to ``tol``.  Returns the iterations used.
    """
    k = b.shape[0]
    g = b - (G @ alpha) / C
    for it in range(max_iter):
        i = 0
        for c in range(k):
            if g[c] > g[i]:
                i = c
        j = -1
        for c in range(k):
            if alpha[c] > 0.0 and (j < 0 or g[c] < g[j]):
                j = c
        if j < 0 or g[i] - g[j] <= tol:
            return it
        curv = (G[i, i] + G[j, j] - 2.0 * G[i, j]) / C
        t = alpha[j]
        if curv > 0.0:
            t = min(t, (g[i] - g[j]) / curv)
        alpha[i] += t
        alpha[j] -= t
        for c in range(k):
            g[c] -= t * (G[c, i] - G[c, j]) / C
    return max_iter


def fit_cutting_plane(problem: StructuredProblem, *, config: CuttingPlaneConfig = CuttingPlaneConfig(),
                      dev: DevScorer | None = None, callbacks: tuple[Callback, ...] = (),
                      state: dict | None = None) -> TrainResult:
    """The one-slack cutting-plane method of SVM-Struct (Tsochantaridis et al. 2004;
    Joachims, Finley and Yu 2009), the max-margin baseline of Collins et al. (2008, Sec. 8).

    Each iteration runs the loss-augmented argmax on every example at the
    current w; the most violated structures give the primal value and a new
    cut (a, b) = (sum_i phi(y_i) - phi(z_i), sum_i e_i(z_i)).  The working-set
    QP, max_{alpha in simplex} sum_c alpha_c b_c - ||sum_c alpha_c a_c||^2 / (2C)
    (with the zero cut of the gold structures), is solved in its dual to the
    KKT tolerance ``qp_tol``; its value D is a lower bound on the optimum,
    and w = sum_c alpha_c a_c / C.  The gap reported is primal(w) - D.
    """
    pf = problem.features
    n = pf.n_examples
    C = config.C
    d = pf.n_features
    w = np.zeros(d) if not state or state.get("w") is None else np.array(state["w"], dtype=np.float64)
    if w.shape != (d,):
        raise ValueError(f"warm-start w has shape {w.shape}, expected ({d},)")
    loss = problem.loss
    # Cut 0 is the gold structures (a = 0, b = 0), so the simplex includes "no violation".
    cut_ids: list[np.ndarray] = [np.zeros(0, dtype=np.int64)]
    cut_vals: list[np.ndarray] = [np.zeros(0)]
    b = [0.0]
    G = np.zeros((1, 1))
    alpha = np.ones(1)
    idle = [0]
    dual = None
    rec = Recorder(n, dev, callbacks)
    converged = False
    for p in range(config.max_passes + 1):
        start = time.perf_counter()
        a = np.zeros(d)
        primal = 0.5 * C * float(w @ w)
        b_new = 0.0
        for i, lo, hi, s, z in loss_augmented_examples(problem, w):
            primal += hinge(problem, lo, hi, s, z)
            b_new += float(z @ loss[lo:hi])
            pf.scatter(lo, hi, problem.gold[lo:hi] - z, a)
        if p > 0:
            rec.visits += n
        rec.seconds += time.perf_counter() - start
        r = rec.record(p, w, primal, dual, C)
        if (r.rel_gap is not None and r.rel_gap <= config.tol) or p == config.max_passes or \
                rec.out_of_time(config.max_seconds):
            converged = r.rel_gap is not None and r.rel_gap <= config.tol
            break
        start = time.perf_counter()
        ids = np.flatnonzero(a)
        vals = a[ids]
        row = np.array([float(vals_c @ a[ids_c]) for ids_c, vals_c in zip(cut_ids, cut_vals)] + [float(vals @ vals)])
        k = len(b)
        G2 = np.empty((k + 1, k + 1))
        G2[:k, :k] = G
        G2[k, :] = row
        G2[:, k] = row
        G = G2
        cut_ids.append(ids)
        cut_vals.append(vals)
        b.append(b_new)
        alpha = np.append(alpha, 0.0)
        idle.append(0)
        b_arr = np.array(b)
        simplex_qp(G, b_arr, C, alpha, config.qp_tol * max(1.0, float(np.max(np.abs(b_arr)))), 10_000_000)
        dual = -(float(b_arr @ alpha) - float(alpha @ G @ alpha) / (2.0 * C))
        # Forget cuts the solution has not used for a while (never the gold cut 0).
        idle = [0 if alpha[c] > 0 else idle[c] + 1 for c in range(len(b))]
        keep = [c for c in range(len(b)) if c == 0 or idle[c] < config.forget_after]
        if len(keep) < len(b):
            cut_ids = [cut_ids[c] for c in keep]
            cut_vals = [cut_vals[c] for c in keep]
            b = [b[c] for c in keep]
            idle = [idle[c] for c in keep]
            G = G[np.ix_(keep, keep)]
            alpha = alpha[keep]
        W = np.zeros(d)
        for ids_c, vals_c, a_c in zip(cut_ids, cut_vals, alpha):
            if a_c > 0.0:
                W[ids_c] += a_c * vals_c
        w = W / C
        rec.seconds += time.perf_counter() - start
    return TrainResult(weights=w, records=rec.records, converged=converged, state={"w": w})
