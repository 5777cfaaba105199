"""Online exponentiated gradient for the log-linear dual.

Collins, Globerson, Koo, Carreras and Bartlett (2008), "Exponentiated
Gradient Algorithms for Conditional Random Fields and Max-Margin Markov
Networks": the randomized online algorithm (Sec. 3, Fig. 2) in the
part-based representation (Sec. 4, Fig. 3, Lemma 1) with the per-example
adaptive learning rate of Sec. 7.

State: one score vector theta_i per example (as long as its part set), the
marginals mu_i = mu(theta_i), and the unnormalised primal vector
W = sum_i (phi(x_i, y_i) - sum_r mu_{i,r} phi(x_i, r)), so that w = W / C.
A visit to example i with rate eta:

    theta'_i = (1 - eta) theta_i + eta s_i,    s_{i,r} = w . phi(x_i, r)
    W' = W - sum_r (mu'_{i,r} - mu_{i,r}) phi(x_i, r)

The dual Q_LL = sum_i [sum_r mu_{i,r} theta_{i,r} - log Z(theta_i)] + ||W||^2 / (2C)
changes by the example's own entropy term plus (2 W.delta + ||delta||^2) / (2C);
the step is taken only if that change is negative, halving eta until it is
(at most ``max_halvings`` times), and eta_i is multiplied by ``eta_growth``
after an accepted step (1.05 in the paper).  Every rate tried counts as a
visit for effective iterations.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from features.csr import add_sparse
from training.problem import StructuredProblem, scored_examples
from training.records import Callback, DevScorer, PassRecord, TrainResult


@dataclass(frozen=True)
class EGConfig:
    """Settings of the online EG trainer."""

    C: float = 20.0
    max_passes: int = 60
    tol: float = 1e-3
    seed: int = 0
    eta_init: float = 0.5
    order: str = "random"
    eta_growth: float = 1.05
    max_halvings: int = 10
    revisit_max: int = 8
    revisit_share: float = 10.0
    max_seconds: float | None = None
    anneal: bool = True

    def C_at(self, passes: int) -> float:
        """The C used in pass ``passes`` (1-based).

        Without annealing, ``C``.  With it (Collins et al. 2008, Sec. 7.1.1):
        10 C for the first 5 passes, then C + 9 C * 0.7^(t - 5), snapped to C
        once within 1e-4 of it; small C converges much faster this way.
        """
        if not self.anneal:
            return self.C
        if passes <= 5:
            return 10.0 * self.C
        extra = 9.0 * 0.7 ** (passes - 5)
        return self.C if extra < 1e-4 else self.C * (1.0 + extra)

    def __post_init__(self) -> None:
        if not self.C > 0:
            raise ValueError(f"C must be positive, not {self.C}")
        if self.max_passes < 0:
            raise ValueError(f"the pass limit must be >= 0, not {self.max_passes}")
        if not self.tol >= 0:
            raise ValueError(f"the tolerance must be >= 0, not {self.tol}")
        if not 0 < self.eta_init:
            raise ValueError(f"the initial learning rate must be positive, not {self.eta_init}")
        if self.revisit_max < 0 or not self.revisit_share > 0:
            raise ValueError("revisit_max must be >= 0 and revisit_share positive")
        if not self.eta_growth >= 1.0:
            raise ValueError(f"eta_growth must be >= 1, not {self.eta_growth}")
        if self.order not in ("random", "cyclic"):
            raise ValueError(f"order must be 'random' or 'cyclic', not {self.order!r}")


class _LogLinearEG:
    """The mutable state of one EG run (see the module docstring)."""

    def __init__(self, problem: StructuredProblem, config: EGConfig, theta: np.ndarray | None,
                 eta: np.ndarray | None):
        self.problem = problem
        self.config = config
        self.C = config.C_at(1)
        pf = problem.features
        self.pf = pf
        n = pf.n_examples
        self.theta = np.zeros(pf.n_parts) if theta is None else np.array(theta, dtype=np.float64)
        if self.theta.shape != (pf.n_parts,):
            raise ValueError(f"warm-start theta has shape {self.theta.shape}, expected ({pf.n_parts},)")
        self.eta = np.full(n, config.eta_init) if eta is None else np.array(eta, dtype=np.float64)
        self.mu = np.empty(pf.n_parts)
        self.ent = np.empty(n)
        for i in range(n):
            lo, hi = pf.parts(i)
            log_z, mu = problem.marginals(i, self.theta[lo:hi])
            self.mu[lo:hi] = mu
            self.ent[i] = float(mu @ self.theta[lo:hi]) - log_z
        self.W = np.zeros(pf.n_features)
        pf.scatter(0, pf.n_parts, problem.gold - self.mu, self.W)
        self.visits = 0
        self.example_gap = np.zeros(n)

    def visit(self, i: int) -> bool:
        """One EG step on example i with the adaptive rate; True if a step was taken."""
        pf, problem, C = self.pf, self.problem, self.C
        lo, hi = pf.parts(i)
        s = pf.scores(lo, hi, self.W) / C
        theta = self.theta[lo:hi]
        mu = self.mu[lo:hi]
        eta = self.eta[i]
        for _ in range(self.config.max_halvings + 1):
            self.visits += 1
            new_theta = (1.0 - eta) * theta + eta * s
            log_z, new_mu = problem.marginals(i, new_theta)
            ids, vals, dot, sq = pf.sparse_delta(lo, hi, mu - new_mu, self.W)
            new_ent = float(new_mu @ new_theta) - log_z
            change = new_ent - self.ent[i] + (2.0 * dot + sq) / (2.0 * C)
            if change < 0.0:
                add_sparse(self.W, ids, vals, ids.shape[0], 1.0)
                theta[:] = new_theta
                mu[:] = new_mu
                self.ent[i] = new_ent
                self.eta[i] = eta * self.config.eta_growth
                return True
            eta *= 0.5
        # No step improved the dual measurably: keep the rate from collapsing to zero.
        self.eta[i] = max(eta, self.config.eta_init * 2.0 ** -30)
        return False

    def dual(self) -> float:
        return float(self.ent.sum()) + float(self.W @ self.W) / (2.0 * self.C)

    def primal(self) -> float:
        """The primal at w = W / C; also stores each example's share of the duality gap.

        The gap splits over examples as sum_i KL(sigma(theta_i) || p_w(. | x_i)),
        i.e. ent_i - (mu_i . s_i - log Z(s_i)) with s_i the scores under w.
        """
        total = 0.0
        for i, lo, hi, s, log_z in scored_examples(self.problem, self.W / self.C):
            total += log_z - float(s @ self.problem.gold[lo:hi])
            self.example_gap[i] = self.ent[i] - (float(self.mu[lo:hi] @ s) - log_z)
        return total + float(self.W @ self.W) / (2.0 * self.C)

    def pass_order(self, rng: np.random.Generator) -> np.ndarray:
        """The visits of one pass: every example once, plus extra visits to the few
        examples holding more than ``revisit_share`` times their share of the
        gap (one more visit per multiple of it, up to ``revisit_max``).  Long sentences need small learning rates
        and otherwise hold most of the remaining gap for many passes."""
        n = self.pf.n_examples
        order = np.arange(n)
        mean = float(self.example_gap.sum()) / max(n, 1)
        if self.config.revisit_max > 0 and mean > 0:
            extra = np.minimum(self.config.revisit_max, np.floor(self.example_gap / (self.config.revisit_share * mean)))
            order = np.concatenate([order, np.repeat(np.arange(n), np.maximum(extra, 0).astype(np.int64))])
        return rng.permutation(order) if self.config.order == "random" else order


def fit_eg_ll(problem: StructuredProblem, *, config: EGConfig = EGConfig(), dev: DevScorer | None = None,
              callbacks: tuple[Callback, ...] = (), state: dict | None = None) -> TrainResult:
    """Train on ``problem`` with randomized (or cyclic) online EG on the log-linear dual.

    Stops when the relative duality gap falls below ``config.tol``, after
    ``config.max_passes`` passes, or once ``config.max_seconds`` of
    optimisation time have passed.  ``state`` (``theta`` and ``eta`` from a
    previous result) warm-starts the run, e.g. along a path of C values.
    """
    state = state or {}
    run = _LogLinearEG(problem, config, state.get("theta"), state.get("eta"))
    n = problem.features.n_examples
    rng = np.random.default_rng(config.seed)
    records: list[PassRecord] = []
    seconds = 0.0

    def record(passes: int) -> bool:
        """Record the objectives at the current C; True when converged at the target C."""
        primal, dual = run.primal(), run.dual()
        gap = primal + dual
        rec = PassRecord(passes=passes, eff_iters=run.visits / max(n, 1), seconds=seconds,
                         primal=primal, dual=dual, gap=gap, rel_gap=gap / max(abs(primal), 1e-300),
                         dev=dev(run.W / run.C) if dev is not None else None, C=run.C)
        records.append(rec)
        for cb in callbacks:
            cb(rec)
        return run.C == config.C and rec.rel_gap <= config.tol

    converged = record(0)
    for p in range(1, config.max_passes + 1):
        if converged or (config.max_seconds is not None and seconds >= config.max_seconds):
            break
        run.C = config.C_at(p)
        start = time.perf_counter()
        for i in run.pass_order(rng):
            run.visit(int(i))
        seconds += time.perf_counter() - start
        converged = record(p)
    return TrainResult(weights=run.W / run.C, records=records, converged=converged,
                       state={"theta": run.theta, "eta": run.eta})
