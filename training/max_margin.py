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
from collections.abc import Mapping

import numpy as np
from egnlp.features.csr import add_sparse
from egnlp.training.configs import BCFWConfig, CuttingPlaneConfig
from egnlp.training.eg import gap_order, max_margin_gaps
from egnlp.training.structured_problem import StructuredProblem, gold_minus, hinge, loss_augmented_examples, scores_many
from egnlp.training.records import (
    Callback,
    DevScorer,
    Recorder,
    TrainResult,
)
from numba import njit



def fit_bcfw(problem: StructuredProblem, *, config: BCFWConfig = BCFWConfig(), dev: DevScorer | None = None,
             callbacks: tuple[Callback, ...] = (), state: dict | None = None) -> TrainResult:
    """Block-coordinate Frank-Wolfe on the max-margin dual (Lacoste-Julien et al. 2013;
    Franc 2015, "sequential dual ascent" for the structured SVM).

    The per-example dual variables are kept as EG keeps them, in the part representation: mu_i, a
    convex combination of the part vectors of the structures found so far, and W = sum_i sum_r
    (gold_r - mu_{i,r}) phi_r, so w = W / C.  mu_i is stored as that combination
    (:class:`_ActiveSets`: the structures and their weights), so the trainer's memory grows with the
    visits times the parts a structure uses, not with all the parts of an example (the cube of the
    sentence length with sibling parts).  A visit finds the loss-augmented argmax z_i and moves mu_i
    toward it by the step
    gamma = min(1, [C (z_i - mu_i) . e_i - W . Delta] / ||Delta||^2),
    Delta = sum_r (mu_i - z_i)_r phi_r, which minimises Q_MM exactly along the
    segment; the numerator is C times the block's Frank-Wolfe duality gap.

    With ``config.average`` the records, the weights and the state are those of the weighted average of
    the iterates (Lacoste-Julien et al. 2013, "BCFW-wAvg"; the polynomial-decay averaging of Franc 2015,
    slides 10.B, with nu = 1), taken once per pass: after pass p,
    mu_avg <- (1 - rho) mu_avg + rho mu with rho = 2 / (p + 2), and W_avg likewise (W is linear in mu,
    so W_avg = W(mu_avg)).  mu_avg is a convex combination of feasible points, so the primal at
    w_avg = W_avg / C and the dual at mu_avg still bound the optimum from both sides: the recorded gap is
    a certificate as without averaging.  The visits move the current iterate, never the average.
    ``config.gap_every`` says which points have their primal computed (the second argmax of the visits
    of the pass after them): the others are recorded as soon as the next pass is due, primal NaN, and
    the last point always has it, by a pass of its own (after its record, when that record stopped the
    run).  ``state["mu"]`` warm-starts (any feasible marginals, one starting point per example); the
    result's ``state["mu"]`` is made when it is read.
    """
    pf = problem.features
    n = pf.n_examples
    C = config.C
    warm = bool(state) and state.get("mu") is not None
    start_mu = None
    if warm:
        start_mu = np.asarray(state["mu"], dtype=np.float64)
        if start_mu.shape != (pf.n_parts,):
            raise ValueError(f"warm-start mu has shape {start_mu.shape}, expected ({pf.n_parts},)")
    sets = _ActiveSets(problem, start_mu)
    # from mu = gold, W is 0: no pass over the features to find it
    W = gold_minus(problem, start_mu) if warm else np.zeros(pf.n_features)
    loss = problem.loss
    rng = np.random.default_rng(config.seed)
    rec = Recorder(n, dev, callbacks)
    gaps = np.zeros(n)  # each block's duality gap at the last record
    # the recorded point's W: the iterate's itself, or the weighted average's (a copy, updated after each pass)
    W_rec = W.copy() if config.average else W
    hinges = np.zeros(n)  # each example's hinge at the pending point, summed on the way (see below)

    def due(passes: int) -> bool:
        """Whether the point after ``passes`` passes has its primal and gap computed, the last point aside."""
        return config.evaluate and config.gap_every > 0 and passes % config.gap_every == 0

    def own_pass_primal(pt: _Point, w: np.ndarray | None = None) -> float:
        """The primal at ``pt`` (``w``: its weights W / C, when made already) by a pass of its own over the
        data (each block's gap into ``gaps``)."""
        w = pt.W / C if w is None else w
        return max_margin_gaps(problem, w, pt.mu, gaps, 0.5 * C * float(w @ w))

    def record(pt: _Point, inline: bool = False, evaluate: bool = True) -> bool:
        """Record ``pt``, its primal from the ``hinges`` summed on the way, or from a pass of its own, or
        (without ``evaluate``) none."""
        w = pt.W / C
        if not (config.evaluate and evaluate):  # no objectives: NaN, and the run does not converge here
            primal = float("nan")
        elif inline:  # summed in the order of max_margin_gaps, so both give the same bits
            primal = 0.5 * C * float(w @ w)
            for value in hinges.tolist():
                primal += value
        else:  # the weights made above: a second copy as long as the features would be held through the pass
            primal = own_pass_primal(pt, w)
        rec.visits, seconds, rec.seconds = pt.passes * n, rec.seconds, pt.seconds
        try:
            r = rec.record(pt.passes, w, primal, pt.dual, C)
        finally:
            rec.seconds = seconds
        return r.rel_gap <= config.tol

    def point(passes: int, seconds: float) -> _Point:
        """The point to record after ``passes``: the average's (read live: it changes only after its record)
        or a copy of the iterate's weights and W."""
        weights = sets.avg if config.average else [a.copy() for a in sets.alpha]
        return _Point(passes, sets, weights, W_rec if config.average else W.copy(), C, seconds)

    def result(pt: _Point, converged: bool) -> TrainResult:
        """The run's result: the point ``pt``'s weights and marginals, and the records so far."""
        return TrainResult(weights=pt.W / C, records=rec.records, converged=converged, state=_MuState(pt))

    converged = record(point(0, 0.0), evaluate=due(0) or config.max_passes == 0)  # the start, or the last point
    pending: _Point | None = None  # the point of the last pass, not yet recorded
    passes = 0
    while True:
        if converged or passes >= config.max_passes or rec.out_of_time(config.max_seconds):
            if pending is not None:  # the last point: its objectives in any case, by a pass of their own
                converged = record(pending)
            break
        if pending is not None and config.order == "gap":  # the order needs the gaps of the last pass
            converged, pending = record(pending), None
            continue
        if pending is not None and not due(pending.passes):  # not the last point, and not one to evaluate
            record(pending, evaluate=False)
            if rec.stopped:  # the record stopped the run (patience): the recorded point is the result, and the
                # last point, whose objectives its record gets now, as a run capped at its pass would have them
                converged = config.evaluate and rec.complete_last(own_pass_primal(pending)).rel_gap <= config.tol
                return result(pending, converged)
            pending = None
        passes += 1
        start = time.perf_counter()
        order = (gap_order(rng, gaps) if config.order == "gap" else
                 rng.permutation(n) if config.order == "random" else np.arange(n))
        # Every example is visited once in a pass, so the primal of the last pass's point is summed on the
        # way: each visit's compiled sentence also gives the example's hinge at that point, whose mu_i the
        # visit has not moved yet, and the objectives cost no pass over the data of their own.
        w_eval = pending.W / C if pending is not None and config.evaluate else None
        eval_seconds = 0.0
        for i in order:
            i = int(i)
            lo, hi = pf.parts(i)
            if w_eval is None:
                s = pf.scores(lo, hi, W) / C
            else:
                # Both points' scores in one walk over the features.  The walk is the step's own work (it also
                # compiles the sentence), so its time counts as optimisation; scoring the recorded point in
                # it adds about half a walk (0.75 of two calls on es), counted with it: the seconds overstate
                # BCFW's own a little rather than leave out its compilation and scoring.
                s, s_eval = scores_many(pf, lo, hi, (W, w_eval))
                s /= C
                tick = time.perf_counter()
                z_eval = problem.argmax(i, s_eval + loss[lo:hi])
                hinges[i] = hinge(problem, lo, hi, s_eval, z_eval)
                gaps[i] = float((z_eval - pending.mu(i)) @ (s_eval + loss[lo:hi]))
                eval_seconds += time.perf_counter() - tick
            z = problem.argmax(i, s + loss[lo:hi])
            d = z - sets.mu(i, sets.alpha[i])
            ids, vals, dot, sq = pf.sparse_delta(lo, hi, -d, W)
            num = C * float(d @ loss[lo:hi]) - dot
            if sq > 0.0 and num > 0.0:
                gamma = min(1.0, num / sq)
                add_sparse(W, ids, vals, ids.shape[0], gamma)
                sets.step(i, z, gamma)
        rec.seconds += time.perf_counter() - start - eval_seconds
        w_eval = None  # a copy as long as the features, not needed again: not held through the records and forks
        if pending is not None:  # the last pass's record, now that its primal is known
            converged = record(pending, inline=True)
            if converged or rec.stopped:  # this pass was one too many: the recorded point is the result
                return result(pending, converged)
        if config.average:
            rho = 2.0 / (passes + 2.0)
            sets.average(rho)
            _average_into(W_rec, W, rho)
        pending = point(passes, rec.seconds)
    # the returned point: the average (or the iterate) as it stands, which the last record saw
    return result(point(passes, rec.seconds), converged)


def _average_into(avg: np.ndarray, x: np.ndarray, rho: float, block: int = 1 << 22) -> None:
    """avg <- (1 - rho) avg + rho x, a block at a time (no temporary as long as the features)."""
    for i in range(0, avg.shape[0], block):
        part = avg[i:i + block]
        part *= 1.0 - rho
        part += rho * x[i:i + block]


class _ActiveSets:
    """Each example's marginals mu_i as a convex combination sum_k alpha_ik v_ik of points of its
    marginal polytope: the start (gold, or a warm start's mu_i) and the structures BCFW moved toward,
    each kept once as its non-zero parts.  An example's points lie end to end: ``idx[i]`` their int32
    positions, ``sizes[i]`` each point's number of them, ``vals[i]`` their values (None while every value
    is 1), and ``known[i]`` each point's number by its bytes, so that a structure found again is not
    kept twice.  ``alpha`` holds the iterate's weights, ``avg`` the weighted average's (BCFW-wAvg),
    ``losses`` each point's loss v_ik . e_i."""

    def __init__(self, problem: StructuredProblem, start_mu: np.ndarray | None):
        self.problem = problem
        self.idx: list[np.ndarray] = []
        self.sizes: list[list[int]] = []
        self.vals: list[np.ndarray | None] = []
        self.known: list[dict[bytes, int]] = []
        self.losses: list[list[float]] = []
        pf = problem.features
        for i in range(pf.n_examples):
            lo, hi = pf.parts(i)
            idx, vals = self._point(problem.gold[lo:hi] if start_mu is None else start_mu[lo:hi])
            self.idx.append(idx)
            self.sizes.append([idx.shape[0]])
            self.vals.append(vals)
            self.known.append({self._key(idx, vals): 0})
            self.losses.append([self._loss(lo, hi, idx, vals)])
        self.alpha = [np.ones(1) for _ in self.idx]
        self.avg = [np.ones(1) for _ in self.idx]

    @staticmethod
    def _point(v: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
        idx = np.flatnonzero(v).astype(np.int32)
        vals = v[idx]
        return idx, None if np.all(vals == 1) else np.asarray(vals, dtype=np.float64)

    @staticmethod
    def _key(idx: np.ndarray, vals: np.ndarray | None) -> bytes:
        return idx.tobytes() + (b"" if vals is None else b"v" + vals.tobytes())

    def _loss(self, lo: int, hi: int, idx: np.ndarray, vals: np.ndarray | None) -> float:
        part_loss = self.problem.loss[lo:hi][idx]
        return float(part_loss.sum(dtype=np.float64)) if vals is None else float(vals @ part_loss)

    def mu(self, i: int, weights: np.ndarray) -> np.ndarray:
        """mu_i (dense over the example's parts) for the weights ``weights`` of its first points.

        One bincount over the points' entries in order: each part's sum takes its terms in the
        order of the points, from 0, as adding point after point would."""
        lo, hi = self.problem.features.parts(i)
        terms = np.repeat(weights, self.sizes[i][:weights.shape[0]])
        used = terms.shape[0]
        vals = self.vals[i]
        if vals is not None:
            terms *= vals[:used]
        return np.bincount(self.idx[i][:used], weights=terms, minlength=hi - lo)

    def step(self, i: int, z: np.ndarray, gamma: float) -> None:
        """mu_i <- (1 - gamma) mu_i + gamma z."""
        idx, vals = self._point(z)
        key = self._key(idx, vals)
        at = self.known[i].get(key)
        alpha = self.alpha[i] * (1.0 - gamma)
        if at is None:
            lo, hi = self.problem.features.parts(i)
            at = len(self.sizes[i])
            self.known[i][key] = at
            if vals is not None or self.vals[i] is not None:
                before = self.vals[i] if self.vals[i] is not None else np.ones(self.idx[i].shape[0])
                self.vals[i] = np.concatenate([before, vals if vals is not None else np.ones(idx.shape[0])])
            self.idx[i] = np.concatenate([self.idx[i], idx])
            self.sizes[i].append(idx.shape[0])
            self.losses[i].append(self._loss(lo, hi, idx, vals))
            alpha = np.append(alpha, 0.0)
            self.avg[i] = np.append(self.avg[i], 0.0)
        alpha[at] += gamma
        self.alpha[i] = alpha

    def average(self, rho: float) -> None:
        """avg <- (1 - rho) avg + rho alpha, for every example."""
        for i, a in enumerate(self.alpha):
            self.avg[i] = (1.0 - rho) * self.avg[i] + rho * a

    def loss(self, weights: list[np.ndarray]) -> float:
        """sum_i mu_i . e_i at ``weights``."""
        total = 0.0
        for w_i, l_i in zip(weights, self.losses):
            total += float(w_i @ np.asarray(l_i[:w_i.shape[0]]))
        return total


class _Point:
    """A point of a BCFW run at the end of a pass, recorded after the next pass: the weights of its
    marginals in the active sets, W, dual, optimisation seconds and visits."""

    def __init__(self, passes: int, sets: _ActiveSets, weights: list[np.ndarray], W: np.ndarray, C: float,
                 seconds: float):
        self.passes = passes
        self.sets = sets
        self.weights = weights
        self.W = W
        self.dual = -sets.loss(weights) + float(W @ W) / (2.0 * C)
        self.seconds = seconds

    def mu(self, i: int) -> np.ndarray:
        return self.sets.mu(i, self.weights[i])


class _MuState(Mapping):
    """A BCFW result's state: ``mu``, the marginals of the returned point over every part, made when read
    (as long as the corpus's parts: 340 MB on es with sibling parts)."""

    def __init__(self, pt: _Point):
        self._pt = pt

    def __getitem__(self, key: str) -> np.ndarray:
        if key != "mu":
            raise KeyError(key)
        pf = self._pt.sets.problem.features
        out = np.empty(pf.n_parts)
        for i in range(pf.n_examples):
            lo, hi = pf.parts(i)
            out[lo:hi] = self._pt.mu(i)
        return out

    def __iter__(self):
        return iter(("mu",))

    def __len__(self) -> int:
        return 1



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
