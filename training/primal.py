"""The primal baselines for the log-linear objective: L-BFGS and SGD.

Both minimise the log-linear primal sum_i [log Z_i(w) - w . phi(x_i, y_i)]
+ C/2 ||w||^2 directly, with gradients from the problem's marginals; they
have no dual, so their records carry the primal only (and L-BFGS the norm of
its gradient).  They are the comparison of Collins et al. (2008), Sec. 7.1.3
(SGD) and 7.1.4 (L-BFGS).  L-BFGS also trains the maxent tagger, whose
objective is the same primal with one event per example
(:mod:`egnlp.training.maxent_problem`).
"""

from __future__ import annotations

import time
from typing import Callable

import numpy as np
from numba import njit

from egnlp.training.maxent_problem import MaxentProblem
from egnlp.training.structured_problem import StructuredProblem, log_linear_gradient, log_linear_primal
from egnlp.training.configs import LBFGSConfig, SGDConfig
from egnlp.training.records import Callback, DevScorer, Recorder, TrainResult


def _start(problem: StructuredProblem, state: dict | None) -> np.ndarray:
    d = problem.features.n_features
    w = np.zeros(d) if not state or state.get("w") is None else np.array(state["w"], dtype=np.float64)
    if w.shape != (d,):
        raise ValueError(f"warm-start w has shape {w.shape}, expected ({d},)")
    return w



def minimize_lbfgs(value_and_grad: Callable[[np.ndarray], tuple[float, np.ndarray]], w0: np.ndarray,
                   n_examples: int, config: LBFGSConfig, dev: DevScorer | None,
                   callbacks: tuple[Callback, ...]) -> TrainResult:
    """scipy's L-BFGS-B (Liu and Nocedal 1989) on ``value_and_grad(w) -> (f(w), grad f(w))`` from ``w0``.

    Every evaluation of the objective and gradient counts as one effective
    iteration (one pass over the ``n_examples`` examples); a record is
    written after every L-BFGS iteration, at the iterate scipy accepted,
    with f and the gradient norm of its last evaluation there (so recording
    costs nothing extra).  ``seconds`` is the time between records, scipy's
    own step included.
    """
    from scipy.optimize import minimize  # scipy is only needed by this trainer

    rec = Recorder(n_examples, dev, callbacks)
    last: dict = {}

    def fun(w: np.ndarray) -> tuple[float, np.ndarray]:
        rec.visits += n_examples
        value, grad = value_and_grad(w)
        last.update(x=w.copy(), value=value, grad=grad)
        return value, grad

    def record(passes: int, w: np.ndarray) -> None:
        value, grad = (last["value"], last["grad"]) if np.array_equal(last["x"], w) else value_and_grad(w)
        rec.record(passes, w, float(value), C=config.C, grad_norm=float(np.linalg.norm(grad)))

    clock = time.perf_counter()
    fun(w0)
    rec.seconds += time.perf_counter() - clock
    record(0, w0)
    iterations = 0

    def callback(intermediate_result) -> None:
        nonlocal clock, iterations
        rec.seconds += time.perf_counter() - clock
        iterations += 1
        record(iterations, intermediate_result.x)
        clock = time.perf_counter()
        if rec.out_of_time(config.max_seconds):
            raise StopIteration

    if config.max_passes == 0:
        return TrainResult(weights=w0, records=rec.records, converged=False, state={"w": w0})
    clock = time.perf_counter()
    result = minimize(fun, w0, jac=True, method="L-BFGS-B", callback=callback,
                      options={"maxiter": config.max_passes, "ftol": config.tol, "gtol": config.gtol,
                               "maxcor": config.memory, "maxfun": 50 * config.max_passes})
    w = np.asarray(result.x, dtype=np.float64)
    converged = bool(result.success) and result.nit < config.max_passes
    return TrainResult(weights=w, records=rec.records, converged=converged, state={"w": w})


def fit_lbfgs(problem: StructuredProblem, *, config: LBFGSConfig = LBFGSConfig(), dev: DevScorer | None = None,
              callbacks: tuple[Callback, ...] = (), state: dict | None = None) -> TrainResult:
    """L-BFGS on the log-linear primal of a structured problem (Collins et al. 2008, Sec. 7.1.4),
    its gradient from the marginals of every example (:func:`minimize_lbfgs`)."""
    return minimize_lbfgs(lambda w: log_linear_gradient(problem, w, config.C), _start(problem, state),
                          problem.features.n_examples, config, dev, callbacks)


def fit_maxent_lbfgs(problem: MaxentProblem, *, config: LBFGSConfig = LBFGSConfig(C=0.1),
                     dev: DevScorer | None = None, callbacks: tuple[Callback, ...] = (),
                     state: dict | None = None) -> TrainResult:
    """L-BFGS on the maxent objective (the LBFGS baseline of Huang et al. 2010, Sec. 5.1), its value
    and gradient computed over all events at once (:meth:`MaxentProblem.objective_and_gradient`)."""
    w = np.zeros(problem.n_features) if not state or state.get("w") is None else problem.check_weights(state["w"])
    return minimize_lbfgs(lambda v: problem.objective_and_gradient(v, config.C), w, problem.n_examples, config,
                          dev, callbacks)



@njit(cache=True)
def _sparse_sgd_update(v, ids, vals, count, step, P, B):
    """v[ids] -= step * vals; the iterate sum S = P + B v is kept unchanged (P[ids] += B step vals).

    With B = 0 (no averaging yet, or none at all) P is not touched and may be a dummy array.
    """
    for k in range(count):
        j = ids[k]
        d = step * vals[k]
        v[j] -= d
        if B != 0.0:
            P[j] += B * d


class _SGDRun:
    """w = a v with a scalar a (so the L2 shrinkage is O(1)); the sum of the
    iterates is P + B v, updated sparsely (Bottou-style lazy averaging)."""

    def __init__(self, problem: StructuredProblem, w0: np.ndarray, C: float, eta0: float, average: bool):
        self.problem, self.C, self.eta0, self.average = problem, C, eta0, average
        self.pf = problem.features
        self.v = w0.copy()
        self.a = 1.0
        self.P = np.zeros_like(w0) if average else np.zeros(1)
        self.B = 0.0
        self.count = 0
        self.t = 0

    def weights(self) -> np.ndarray:
        if self.average and self.count:
            return (self.P + self.B * self.v) / self.count
        return self.a * self.v

    def _fold(self) -> None:
        """Absorb a into v (and B v into P) while a is still near 1 (a dense step, rare)."""
        if self.average:
            self.P += self.B * self.v
            self.B = 0.0
        self.v *= self.a
        self.a = 1.0

    def step(self, i: int) -> None:
        pf, problem = self.pf, self.problem
        n = pf.n_examples
        eta = self.eta0 / (1.0 + self.t / n)
        lo, hi = pf.parts(i)
        s = self.a * pf.scores(lo, hi, self.v)
        _, mu = problem.marginals(i, s)
        ids, vals, _, _ = pf.sparse_delta(lo, hi, mu - problem.gold[lo:hi], self.v)
        # Shrink for the C/(2n) ||w||^2 share of example i: the implicit (proximal)
        # form 1 / (1 + eta C / n), stable for any eta, equal to 1 - eta C / n to first order.
        self.a /= 1.0 + eta * self.C / n
        if self.a < 1e-3:  # keep v and P within a few orders of w (precision of the sums)
            self._fold()
        _sparse_sgd_update(self.v, ids, vals, ids.shape[0], eta / self.a, self.P, self.B)
        self.t += 1
        if self.average and self.t > self.pf.n_examples:  # average from the second pass on
            self.B += self.a
            self.count += 1

    def run_pass(self, rng: np.random.Generator) -> None:
        for i in rng.permutation(self.pf.n_examples):
            self.step(int(i))


def fit_sgd(problem: StructuredProblem, *, config: SGDConfig = SGDConfig(), dev: DevScorer | None = None,
            callbacks: tuple[Callback, ...] = (), state: dict | None = None) -> TrainResult:
    """SGD on the log-linear primal (Collins et al. 2008, Sec. 7.1.3), one update per example:
    w <- w - eta_t d/dw [-log p(y_i | x_i; w) + C/(2n) ||w||^2], examples in a fresh random order each pass.

    The passes spent choosing eta0 are not counted in the records (as in the
    paper); the chosen rate is returned in ``state["eta0"]``.
    """
    C = config.C
    w0 = _start(problem, state)
    eta0 = config.eta0
    if eta0 is None:
        best = None
        for cand in config.eta0_grid:
            trial = _SGDRun(problem, w0, C, cand, config.average)
            trial.run_pass(np.random.default_rng(config.seed))
            w = trial.weights()
            score = -dev(w) if dev is not None else log_linear_primal(problem, C * w, C)
            if np.isfinite(score) and (best is None or score < best[0]):
                best = (score, cand)
        if best is None:
            raise ValueError("SGD diverged for every eta0 tried")
        eta0 = best[1]
    run = _SGDRun(problem, w0, C, eta0, config.average)
    rng = np.random.default_rng(config.seed)
    rec = Recorder(problem.features.n_examples, dev, callbacks)
    rec.record(0, w0, log_linear_primal(problem, C * w0, C), C=C)
    for p in range(1, config.max_passes + 1):
        if rec.out_of_time(config.max_seconds):
            break
        start = time.perf_counter()
        run.run_pass(rng)
        rec.seconds += time.perf_counter() - start
        rec.visits += problem.features.n_examples
        w = run.weights()
        rec.record(p, w, log_linear_primal(problem, C * w, C), C=C)
    w = run.weights()
    return TrainResult(weights=w, records=rec.records, converged=False, state={"w": w, "eta0": np.array(eta0)})
