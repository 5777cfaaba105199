"""Iterative scaling for maximum entropy, the baselines of Huang et al. (2010), Table 1.

GIS (Darroch and Ratcliff 1972) updates every weight at once from the
expected counts at the same w; SCGIS (Goodman 2002) updates one feature at a
time, keeping the sums S_w, T_w of the problem up to date (Eqs. 18-19).
Both minimise, per feature, an upper bound A_t of the change of the
objective; with the Gaussian prior of egnlp's objective (C = 1 / sigma^2)
the one-variable problems have no closed form and are solved by Newton's
method (Sec. 2.4), to |A'| <= 1e-5 as in Sec. 5.1.  The problem and its
objective are :mod:`egnlp.training.maxent_problem`.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from egnlp.training.configs import GISConfig, SCGISConfig
from egnlp.training.maxent_problem import MaxentProblem, Sums, fit_in_passes, update_sums
from egnlp.training.records import Callback, DevScorer, TrainResult



class Newton(NamedTuple):
    """When the Newton iterations of a one-variable sub-problem stop: |A'| <= tol, or max_iter."""

    tol: float
    max_iter: int


@njit(cache=True)
def _is_newton(w_t, emp_t, E_t, fs, C, newton):
    """argmin_z of A_t^GIS / A_t^SCGIS (Table 1): root of C (w_t + z) - emp_t + E_t exp(z fs).

    Newton iterations (Eq. 27) until |A'| <= ``newton.tol`` (Sec. 5.1),
    safeguarded by a bracket of the root with bisection, since a Newton step
    from the left of the root of this convex increasing A' can overshoot far
    (Sec. 2.4).
    """
    g = w_t * C - emp_t + E_t
    if abs(g) <= newton.tol:
        return 0.0
    if g < 0.0:
        lo = 0.0
        hi = emp_t / C - w_t  # A'(hi) = E_t exp(hi fs) >= 0
    else:
        hi = 0.0
        lo = -1.0
        while (w_t + lo) * C - emp_t + E_t * np.exp(lo * fs) > 0.0:
            lo *= 2.0
    z = 0.0
    for _ in range(newton.max_iter):
        e = E_t * np.exp(z * fs)
        g = (w_t + z) * C - emp_t + e
        if abs(g) <= newton.tol:
            break
        if g < 0.0:
            lo = z
        else:
            hi = z
        if hi - lo <= 1e-14 * (1.0 + abs(z)):
            break
        zn = z - g / (C + fs * e)
        if not (lo < zn < hi):
            zn = 0.5 * (lo + hi)
        z = zn
    return z


@njit(cache=True, error_model="numpy")
def _scgis_pass(order, w, emp, columns, sums, C, newton):
    """One pass of SCGIS (Table 1, f_t^# = 1): per feature, E_t from the sums, Newton on A_t^SCGIS,
    Eqs. (18)-(19).  ``columns`` / ``sums`` as for :func:`~egnlp.training.maxent_problem.update_sums`."""
    S = sums.S
    T = sums.T
    for idx in range(order.shape[0]):
        t = order[idx]
        p = columns.feat_pred[t]
        k = columns.feat_label[t]
        E = 0.0
        for j in range(columns.pr_ptr[p], columns.pr_ptr[p + 1]):
            i = columns.pr_ev[j]
            E += S[k, i] / T[i]
        z = _is_newton(w[t], emp[t], E, 1.0, C, newton)
        if z != 0.0:
            w[t] += z
            update_sums(t, z, columns, sums)


@njit(cache=True)
def _gis_steps(w, emp, E, fsharp, C, newton):
    """GIS (Table 1): the n independent sub-problems of A^GIS at the same w."""
    z = np.empty(w.shape[0])
    for t in range(w.shape[0]):
        z[t] = _is_newton(w[t], emp[t], E[t], fsharp, C, newton)
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


def fit_scgis(problem: MaxentProblem, *, config: SCGISConfig = SCGISConfig(), dev: DevScorer | None = None,
              callbacks: tuple[Callback, ...] = (), state: dict | None = None) -> TrainResult:
    """Sequential conditional GIS (Goodman 2002; Huang et al. 2010, Table 1), with the Gaussian prior (Sec. 2.4)."""
    newton = Newton(config.newton_tol, config.newton_iters)

    def one_pass(order: np.ndarray, w: np.ndarray, sums: Sums) -> None:
        _scgis_pass(order, w, problem.emp, problem.columns, sums, config.C, newton)

    return fit_in_passes(problem, config, one_pass, seed=config.seed, dev=dev, callbacks=callbacks, state=state)


def fit_gis(problem: MaxentProblem, *, config: GISConfig = GISConfig(), dev: DevScorer | None = None,
            callbacks: tuple[Callback, ...] = (), state: dict | None = None) -> TrainResult:
    """Generalized iterative scaling (Darroch and Ratcliff 1972; Huang et al. 2010, Table 1), the
    parallel update of Algorithm 2.

    One pass computes E_t (Eq. 41) for all features at the current w, solves
    the n sub-problems of A^GIS with the prior by Newton (Sec. 2.4), then
    updates all weights.  No correction feature is stored: its z is 0
    (Sec. 2.2).  ``state["fsharp"]`` of the result is f^#.
    """
    newton = Newton(config.newton_tol, config.newton_iters)
    fsharp = float(max(1, _fsharp(problem.ev_ptr, problem.ev_pred, problem.feat_ptr, problem.feat_label,
                                  problem.n_labels)))

    def one_pass(order: np.ndarray, w: np.ndarray, sums: Sums) -> None:
        w += _gis_steps(w, problem.emp, problem.expected(w), fsharp, config.C, newton)

    result = fit_in_passes(problem, config, one_pass, seed=None, dev=dev, callbacks=callbacks, state=state)
    result.state["fsharp"] = np.array(fsharp)
    return result
