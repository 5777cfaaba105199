"""Checks of an EG run against its dual recomputed from scratch, shared by the log-linear and max-margin tests."""

from __future__ import annotations

import numpy as np

# A cache budget for build_parsing_problem that keeps every compiled sentence of a test's small problem:
# the trainers' tests run many passes over a few sentences, and keeping them changes no bit of a run
# (tests/test_arc_parts.py and tests/test_siblings.py compare cached and uncached runs).
KEEP_ALL = 256 << 20


def dual_from_scratch(problem, run) -> float:
    """The dual of an ``EGRun`` recomputed from its theta alone: the marginals of every example,
    W rebuilt from them (checked against the run's W, which is kept exactly in step), and
    Q_LL = sum_i [mu_i . theta_i - log Z_i] + ||W||^2 / (2C) or Q_MM = -sum_i mu_i . e_i + ||W||^2 / (2C)."""
    pf = problem.features
    W = np.zeros(pf.n_features)
    terms = 0.0
    for i in range(pf.n_examples):
        lo, hi = pf.parts(i)
        log_z, mu = problem.marginals(i, run.theta[lo:hi])
        if run.objective == "ll":
            terms += float(mu @ run.theta[lo:hi]) - log_z
        else:
            terms -= float(mu @ problem.loss[lo:hi])
        pf.scatter(lo, hi, problem.gold[lo:hi] - mu, W)
    np.testing.assert_allclose(W, run.W, atol=1e-8)
    return terms + float(W @ W) / (2 * run.C)


def accepted_steps_decrease_the_dual(problem, run, examples) -> int:
    """Visit ``examples`` in turn; after every step the run accepts, the dual recomputed from scratch
    must have decreased.  Returns the number of accepted steps."""
    before = dual_from_scratch(problem, run)
    accepted = 0
    for i in examples:
        if run.visit(int(i)):
            accepted += 1
            after = dual_from_scratch(problem, run)
            assert after < before + 1e-9 * abs(before)
            before = after
    return accepted
