"""Coordinate descent for maximum entropy: Huang, Hsieh, Chang and Lin (2010), Algorithm 3.

Each pass visits the features one at a time (in file order, or in a fresh
random order with a seed, Sec. 4.4).  For feature t it takes one Newton
direction d = -A'(0) / A''(0) of the one-variable function A_t^CD(z) =
f(w + z e_t) - f(w) (Eq. 17), then a backtracking line search z = lambda d,
lambda = 1, beta, beta^2, ... (step 2' of Sec. 3.2.1) accepting the first z
for which the cheap upper bound (38), or else the exact A_t^CD(z), satisfies
the sufficient decrease A(z) <= gamma z A'(0) (35).  The sums S_w, T_w of
the problem are updated after each step by Eqs. (18)-(19).  The objective
and the problem are :mod:`egnlp.training.maxent_problem`.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from egnlp.training.configs import CDConfig
from egnlp.training.maxent_problem import MaxentProblem, Sums, fit_in_passes, update_sums
from egnlp.training.records import Callback, DevScorer, TrainResult

_MAX_STEP = 500.0  # |z| beyond this would overflow S_ki e^z; such a line-search try counts as failed



class LineSearch(NamedTuple):
    """The backtracking line search of step 2': shrink factor, sufficient-decrease constant, tries."""

    beta: float
    gamma: float
    max_tries: int


class StepLog(NamedTuple):
    """Accepted steps kept for replay: feature, step, A'(0), accepted by the bound (38); ``count[0]`` used."""

    t: np.ndarray  # (K,) int64
    z: np.ndarray  # (K,) float64
    grad: np.ndarray  # (K,) float64
    by_bound: np.ndarray  # (K,) bool
    count: np.ndarray  # (1,) int64


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
def _cd_pass(order, w, emp, columns, sums, C, search, log):
    """One pass of Algorithm 3 over the features in ``order``; returns (#steps, #line-search tries, #exact).

    ``columns`` / ``sums``: :class:`~egnlp.training.maxent_problem.Columns` and
    :class:`~egnlp.training.maxent_problem.Sums` (updated in place with ``w``);
    ``search``: a :class:`LineSearch`; accepted steps go to the
    :class:`StepLog` ``log`` while it has room.
    """
    S = sums.S
    T = sums.T
    steps = 0
    tries = 0
    exact = 0
    for idx in range(order.shape[0]):
        t = order[idx]
        p = columns.feat_pred[t]
        k = columns.feat_label[t]
        a = columns.pr_ptr[p]
        b = columns.pr_ptr[p + 1]
        g1 = 0.0
        g2 = 0.0
        for j in range(a, b):
            i = columns.pr_ev[j]
            q = S[k, i] / T[i]
            g1 += q
            g2 += q * (1.0 - q)
        gp = g1 + w[t] * C - emp[t]  # A'(0)
        if gp == 0.0:
            continue
        d = -gp / (g2 + C)  # step 1: the Newton direction
        omega = float(b - a)
        lam = 1.0
        ok = False
        by_bound = False
        z = 0.0
        for _ in range(search.max_tries):
            z = lam * d
            tries += 1
            if abs(z) > _MAX_STEP:
                lam *= search.beta
                continue
            ez = np.exp(z)
            em1 = np.expm1(z)
            qz = (2.0 * w[t] * z + z * z) * 0.5 * C - z * emp[t]
            rhs = search.gamma * z * gp
            x = g1 / omega * em1
            # (38) in O(1); skipped where log1p would cancel (its 1 - q-bar is not known exactly)
            if x > -0.5 and qz + omega * np.log1p(x) <= rhs:
                ok = True
                by_bound = True
                break
            exact += 1
            az = qz
            for j in range(a, b):
                az += _log_mix(S, T, k, columns.pr_ev[j], z, ez, em1)
            if az <= rhs:  # (35)
                ok = True
                break
            lam *= search.beta
        if not ok:
            continue
        r = log.count[0]
        if r < log.t.shape[0]:
            log.t[r] = t
            log.z[r] = z
            log.grad[r] = gp
            log.by_bound[r] = by_bound
            log.count[0] = r + 1
        w[t] += z
        update_sums(t, z, columns, sums)
        steps += 1
    return steps, tries, exact


def fit_cd(problem: MaxentProblem, *, config: CDConfig = CDConfig(), dev: DevScorer | None = None,
           callbacks: tuple[Callback, ...] = (), state: dict | None = None) -> TrainResult:
    """Coordinate descent, Algorithm 3 of Huang et al. (2010) with step 2' of Sec. 3.2.1.

    ``state["cd_stats"]`` of the result counts accepted steps, line-search
    tries and exact evaluations of (17); see :class:`CDConfig` for
    ``record_steps``.
    """
    search = LineSearch(config.beta, config.gamma, config.max_line_search)
    size = config.record_steps
    log = StepLog(np.zeros(size, dtype=np.int64), np.zeros(size), np.zeros(size), np.zeros(size, dtype=np.bool_),
                  np.zeros(1, dtype=np.int64))
    stats = np.zeros(3, dtype=np.int64)

    def one_pass(order: np.ndarray, w: np.ndarray, sums: Sums) -> None:
        stats[:] += _cd_pass(order, w, problem.emp, problem.columns, sums, config.C, search, log)

    result = fit_in_passes(problem, config, one_pass, seed=config.seed, dev=dev, callbacks=callbacks, state=state)
    result.state["cd_stats"] = stats
    if size:
        m = int(log.count[0])
        result.state.update(steps_t=log.t[:m], steps_z=log.z[:m], steps_grad=log.grad[:m],
                            steps_by_bound=log.by_bound[:m])
    return result
