"""Exponentiated gradient on the log-linear and max-margin duals, online and batch.

Collins, Globerson, Koo, Carreras and Bartlett (2008), "Exponentiated
Gradient Algorithms for Conditional Random Fields and Max-Margin Markov
Networks": batch EG (Sec. 3, Fig. 1) and the randomized online algorithm
(Fig. 2) in the part-based representation (Sec. 4, Fig. 3, Lemma 1) with
the per-example adaptive learning rate of Sec. 7; the max-margin updates are
those of Bartlett et al. (2004, Fig. 2).

State: one score vector theta_i per example (as long as its part set), the
marginals mu_i = mu(theta_i) (or, compact, theta_i in float32 and mu_i recomputed
when needed), and the unnormalised primal vector
W = sum_i (phi(x_i, y_i) - sum_r mu_{i,r} phi(x_i, r)), so that w = W / C.
A visit to example i with rate eta:

    log-linear:  theta'_i = (1 - eta) theta_i + eta s_i,    s_{i,r} = w . phi(x_i, r)
    max-margin:  theta'_i = theta_i + eta (e_i + s_i),      e_{i,r} the part loss
    W' = W - sum_r (mu'_{i,r} - mu_{i,r}) phi(x_i, r)

The duals Q_LL = sum_i [mu_i . theta_i - log Z(theta_i)] + ||W||^2 / (2C) and
Q_MM = -sum_i mu_i . e_i + ||W||^2 / (2C) change by the example's own term
plus (2 W.delta + ||delta||^2) / (2C); the step is taken only if that change
is negative, halving eta until it is (at most ``max_halvings`` times), and
eta_i is multiplied by ``eta_growth`` after an accepted step (1.05 in the
paper).  Every rate tried counts as a visit for effective iterations.  The
batch variant moves every example at once from the same w with one rate,
under the same halving rule applied to the whole dual.
"""

from __future__ import annotations

import time

import numpy as np
from egnlp.features.csr import add_sparse
from egnlp.training.structured_problem import (
    StructuredProblem,
    gold_minus,
    max_margin_terms,
    scored_examples,
)
from egnlp.training.records import (
    Callback,
    DevScorer,
    Recorder,
    TrainResult,
)
from egnlp.training.configs import EGConfig

# Default starts: theta = -k e, the gold structure favoured by k per wrong part.
# The uniform start (k = 0) spreads the marginals over all structures, so
# ||W||^2 and the dual start huge.  Log-linear, 200 es sentences, relative
# primal suboptimality after 35 effective iterations (L-BFGS needs 145
# evaluations for the optimum): C = 10, annealed: 0.44 (k = 0), 2.7e-3
# (k = 3), 6.3e-4 (k = 10); C = 1, annealed, after 58: 0.13 (k = 0 at C = 10
# already), 4.1e-3 (k = 10).  Max-margin, 40 sentences, C = 10, dual after
# 100 passes: still positive after 200 (k = 0), -53.8 (k = 3), -55.8 (k = 6),
# -54.7 (k = 12).
LL_TILT = 10.0
MM_TILT = 6.0

def gap_order(rng: np.random.Generator, gaps: np.ndarray) -> np.ndarray:
    """n example visits drawn with replacement, example i with probability proportional to its share
    of the duality gap ``gaps[i]`` (uniform if no example holds any).

    The gap sampling of Osokin et al. (2016), "Minding the gaps for block Frank-Wolfe optimization of
    structured SVMs", Sec. 3, with the gaps of the last full evaluation (one per pass) instead of
    estimates refreshed after every visit; Franc's near-maximal-gain selection picks by the same
    quantity greedily.
    """
    n = gaps.shape[0]
    weights = np.maximum(gaps, 0.0)
    total = float(weights.sum())
    if not total > 0.0:
        return rng.integers(0, n, size=n)
    return rng.choice(n, size=n, p=weights / total)


def max_margin_gaps(problem: StructuredProblem, w: np.ndarray, mu, gaps: np.ndarray,
                    start: float = 0.0) -> float:
    """``start`` + sum_i hinge_i(w) (the max-margin loss terms), and each example's share of the duality
    gap into ``gaps``: (z_i - mu_i) . (e_i + s_i), z_i the loss-augmented argmax and mu_i the example's
    marginals (the Frank-Wolfe gap of its block; the gaps sum to primal + dual).  ``mu``: every part's
    marginals, or a function of i giving example i's."""
    total = start
    for i, value, gap in max_margin_terms(problem, w, mu):
        total += value
        gaps[i] = gap
    return total



class EGRun:
    """The mutable state of one EG run (see the module docstring).

    ``objective`` is "ll" (log-linear dual) or "mm" (max-margin dual).  The
    per-example dual term is ``mu . theta - log Z(theta)`` (ll) or
    ``-mu . e`` (mm); the rest of the dual is ||W||^2 / (2C) in both.

    ``config.compact``: theta is float32 and ``mu`` None; every value is computed from the float32
    theta_i (a proposal is rounded to float32 before its marginals), so W, the terms and the
    marginals recomputed at a later visit agree exactly with the state, and the duality gap closes
    as with float64.  Brown's CRF: 363 M parts, 5.8 GB of theta and mu in float64, 1.45 GB compact.
    """

    def __init__(self, problem: StructuredProblem, config: EGConfig, objective: str = "ll",
                 theta: np.ndarray | None = None, eta: np.ndarray | None = None):
        if objective not in ("ll", "mm"):
            raise ValueError(f"objective must be 'll' or 'mm', not {objective!r}")
        self.problem = problem
        self.config = config
        self.objective = objective
        self.C = config.C_at(1)
        pf = problem.features
        self.pf = pf
        n = pf.n_examples
        dtype = np.float32 if config.compact else np.float64
        if theta is None:
            # theta = -k e tilts the start toward the gold structure (Bartlett et al. 2004, Fig. 4b).
            k = config.theta_init if config.theta_init is not None else (MM_TILT if objective == "mm" else LL_TILT)
            self.theta = np.empty(pf.n_parts, dtype=dtype)
            np.multiply(problem.loss, -float(k), out=self.theta)  # without a float64 copy of the loss
        else:
            self.theta = np.array(theta, dtype=dtype)
        if self.theta.shape != (pf.n_parts,):
            raise ValueError(f"warm-start theta has shape {self.theta.shape}, expected ({pf.n_parts},)")
        self.eta = np.full(n, config.eta_init) if eta is None else np.array(eta, dtype=np.float64)
        self.mu = None if config.compact else np.empty(pf.n_parts)
        self.term = np.empty(n)
        if config.compact:
            self.W = np.zeros(pf.n_features)
        for i in range(n):
            lo, hi = pf.parts(i)
            theta_i = self.theta_of(lo, hi)
            log_z, mu = problem.marginals(i, theta_i)
            if config.compact:
                pf.scatter(lo, hi, problem.gold[lo:hi] - mu, self.W)
            else:
                self.mu[lo:hi] = mu
            self.term[i] = self._term(lo, hi, mu, theta_i, log_z)
        if not config.compact:
            self.W = gold_minus(problem, self.mu)
        self.visits = 0
        self.example_gap = np.zeros(n)

    def theta_of(self, lo: int, hi: int) -> np.ndarray:
        """theta of the parts lo:hi in float64 (a view unless compact)."""
        theta = self.theta[lo:hi]
        return theta.astype(np.float64) if self.config.compact else theta

    def marginals_of(self, i: int) -> np.ndarray:
        """mu_i: stored, or (compact) recomputed from theta_i."""
        lo, hi = self.pf.parts(i)
        if self.mu is not None:
            return self.mu[lo:hi]
        return self.problem.marginals(i, self.theta_of(lo, hi))[1]

    def _term(self, lo: int, hi: int, mu: np.ndarray, theta: np.ndarray, log_z: float) -> float:
        if self.objective == "ll":
            return float(mu @ theta) - log_z
        return -float(mu @ self.problem.loss[lo:hi])

    def _propose(self, lo: int, hi: int, theta: np.ndarray, s: np.ndarray, eta: float) -> np.ndarray:
        if self.objective == "ll":
            new = (1.0 - eta) * theta + eta * s
        else:
            new = theta + eta * (self.problem.loss[lo:hi] + s)
        # compact: the value the state will hold, so that its marginals are those of the stored theta
        return new.astype(np.float32).astype(np.float64) if self.config.compact else new

    def visit(self, i: int) -> bool:
        """One EG step on example i with the adaptive rate; True if a step was taken."""
        pf, problem, C = self.pf, self.problem, self.C
        lo, hi = pf.parts(i)
        s = pf.scores(lo, hi, self.W) / C
        theta = self.theta_of(lo, hi)
        mu = self.marginals_of(i)
        eta = self.eta[i]
        for _ in range(self.config.max_halvings + 1):
            self.visits += 1
            new_theta = self._propose(lo, hi, theta, s, eta)
            log_z, new_mu = problem.marginals(i, new_theta)
            ids, vals, dot, sq = pf.sparse_delta(lo, hi, mu - new_mu, self.W)
            new_term = self._term(lo, hi, new_mu, new_theta, log_z)
            change = new_term - self.term[i] + (2.0 * dot + sq) / (2.0 * C)
            if change < 0.0:
                add_sparse(self.W, ids, vals, ids.shape[0], 1.0)
                self.theta[lo:hi] = new_theta
                if self.mu is not None:
                    self.mu[lo:hi] = new_mu
                self.term[i] = new_term
                self.eta[i] = eta * self.config.eta_growth
                return True
            eta *= 0.5
        # No step improved the dual measurably: keep the rate from collapsing to zero.
        self.eta[i] = max(eta, self.config.eta_init * 2.0 ** -30)
        return False

    def batch_step(self) -> bool:
        """One batch EG step (Collins et al. 2008, Fig. 1): every example moves at once
        from the same w, with one rate halved until the whole dual decreases."""
        pf, problem, C, n = self.pf, self.problem, self.C, self.pf.n_examples
        scores = np.empty(pf.n_parts)
        for i in range(n):
            lo, hi = pf.parts(i)
            scores[lo:hi] = pf.scores(lo, hi, self.W) / C
        old = self.dual()
        eta = float(self.eta[0])
        new_theta = np.empty(pf.n_parts, dtype=self.theta.dtype)
        new_mu = None if self.mu is None else np.empty(pf.n_parts)
        new_term = np.empty(n)
        for _ in range(self.config.max_halvings + 1):
            self.visits += n
            W = self.W.copy()
            for i in range(n):
                lo, hi = pf.parts(i)
                theta_i = self._propose(lo, hi, self.theta_of(lo, hi), scores[lo:hi], eta)
                log_z, mu_i = problem.marginals(i, theta_i)
                new_theta[lo:hi] = theta_i
                if new_mu is not None:
                    new_mu[lo:hi] = mu_i
                new_term[i] = self._term(lo, hi, mu_i, theta_i, log_z)
                pf.scatter(lo, hi, self.marginals_of(i) - mu_i, W)  # the same additions as one scatter of all
            if float(new_term.sum()) + float(W @ W) / (2.0 * C) < old:
                self.theta, self.mu, self.term, self.W = new_theta, new_mu, new_term, W
                self.eta[:] = eta * self.config.eta_growth
                return True
            eta *= 0.5
        self.eta[:] = max(eta, self.config.eta_init * 2.0 ** -30)
        return False

    def dual(self) -> float:
        return float(self.term.sum()) + float(self.W @ self.W) / (2.0 * self.C)

    def primal(self) -> float:
        """The primal at w = W / C; also stores each example's share of the duality gap.

        Log-linear: the gap splits over examples as KL(sigma(theta_i) || p_w(. | x_i)),
        i.e. term_i - (mu_i . s_i - log Z(s_i)) with s_i the scores under w.
        Max-margin: example i holds (z_i - mu_i) . (e_i + s_i), z_i the loss-augmented
        argmax (the Frank-Wolfe gap of its block).
        """
        total = 0.0
        if self.objective == "ll":
            for i, lo, hi, s, log_z in scored_examples(self.problem, self.W / self.C):
                total += log_z - float(s @ self.problem.gold[lo:hi])
                self.example_gap[i] = self.term[i] - (float(self.marginals_of(i) @ s) - log_z)
        else:
            total = max_margin_gaps(self.problem, self.W / self.C, self.marginals_of, self.example_gap)
        return total + float(self.W @ self.W) / (2.0 * self.C)

    def pass_order(self, rng: np.random.Generator) -> np.ndarray:
        """The visits of one pass: every example once, plus extra visits to the few
        examples holding more than ``revisit_share`` times their share of the
        gap (one more visit per multiple of it, up to ``revisit_max``).  Long sentences need small learning rates
        and otherwise hold most of the remaining gap for many passes.  With the order "gap", n visits
        drawn in proportion to the shares instead (:func:`gap_order`; it subsumes the extra visits)."""
        if self.config.order == "gap":
            return gap_order(rng, self.example_gap)
        n = self.pf.n_examples
        order = np.arange(n)
        mean = float(self.example_gap.sum()) / max(n, 1)
        if self.config.revisit_max > 0 and mean > 0:
            extra = np.minimum(self.config.revisit_max, np.floor(self.example_gap / (self.config.revisit_share * mean)))
            order = np.concatenate([order, np.repeat(np.arange(n), np.maximum(extra, 0).astype(np.int64))])
        return rng.permutation(order) if self.config.order == "random" else order


def fit_eg(problem: StructuredProblem, objective: str = "ll", batch: bool = False, *,
           config: EGConfig = EGConfig(), dev: DevScorer | None = None, callbacks: tuple[Callback, ...] = (),
           state: dict | None = None) -> TrainResult:
    """Train on ``problem`` with EG on the log-linear ("ll") or max-margin ("mm") dual.

    Online (randomized, or cyclic with ``config.order``) unless ``batch``.
    Stops when the relative duality gap falls below ``config.tol``, after
    ``config.max_passes`` passes, or once ``config.max_seconds`` of
    optimisation time have passed.  ``state`` (``theta`` and ``eta`` from a
    previous result) warm-starts the run, e.g. along a path of C values.
    """
    state = state or {}
    run = EGRun(problem, config, objective, state.get("theta"), state.get("eta"))
    rng = np.random.default_rng(config.seed)
    rec = Recorder(problem.features.n_examples, dev, callbacks)

    def record(passes: int) -> bool:
        """Record the objectives; True when converged at the target C.

        While C is annealed (above the target), the record holds the primal at
        the target C of the current w = W / C_t and no dual: the dual at C_t
        bounds another problem.  ``C`` in the record is C_t.
        """
        rec.visits = run.visits
        primal = run.primal()  # at C_t; also the per-example gaps that steer extra visits
        if run.C == config.C:
            r = rec.record(passes, run.W / run.C, primal, run.dual(), run.C)
            return r.rel_gap <= config.tol
        # The same w = W / C_t and loss terms; only the regulariser's C differs.
        w = run.W / run.C
        sq = float(run.W @ run.W)
        target = primal - sq / (2.0 * run.C) + config.C * sq / (2.0 * run.C * run.C)
        rec.record(passes, w, target, None, run.C)
        return False

    converged = record(0)
    for p in range(1, config.max_passes + 1):
        if converged or rec.out_of_time(config.max_seconds):
            break
        run.C = config.C_at(p)
        start = time.perf_counter()
        if batch:
            run.batch_step()
        else:
            for i in run.pass_order(rng):
                run.visit(int(i))
        rec.seconds += time.perf_counter() - start
        converged = record(p)
    return TrainResult(weights=run.W / run.C, records=rec.records, converged=converged,
                       state={"theta": run.theta, "eta": run.eta})


def _variant(objective: str, batch: bool, what: str):
    def fit(problem: StructuredProblem, *, config: EGConfig = EGConfig(), dev: DevScorer | None = None,
            callbacks: tuple[Callback, ...] = (), state: dict | None = None) -> TrainResult:
        return fit_eg(problem, objective, batch, config=config, dev=dev, callbacks=callbacks, state=state)

    fit.__name__ = f"fit_eg_{objective}" + ("_batch" if batch else "")
    fit.__doc__ = f"{what} (see :func:`fit_eg`)."
    return fit


fit_eg_ll = _variant("ll", False, "Online EG on the log-linear dual")
fit_eg_ll_batch = _variant("ll", True, "Batch EG on the log-linear dual")
fit_eg_mm = _variant("mm", False, "Online EG on the max-margin dual")
fit_eg_mm_batch = _variant("mm", True, "Batch EG on the max-margin dual")
