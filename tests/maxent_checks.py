"""Checks shared by the tests of maxent problems (the tagger's and the multiword classifier's)."""

from __future__ import annotations

import numpy as np


def dense_objective(problem, w: np.ndarray, C: float) -> float:
    """sum_i -log P_w(y_i | x_i) + C/2 ||w||^2 of a maxent problem, one event at a time from a dense
    (predicate x label) weight matrix: an independent computation of ``problem.objective``."""
    W = np.zeros((problem.n_predicates, problem.n_labels))
    W[problem.feat_pred, problem.feat_label] = w
    total = 0.0
    for i in range(problem.n_events):
        s = W[problem.ev_pred[problem.ev_ptr[i]:problem.ev_ptr[i + 1]]].sum(axis=0)
        total += np.logaddexp.reduce(s) - s[problem.labels[i]]
    return total + C * float(w @ w) / 2
