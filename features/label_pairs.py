"""(predicate, label) features of a local classifier: the feature set of the maxent tagger.

An *event* is one decision (a token to tag) described by the ids of the
observation predicates that fire in it (:mod:`egnlp.features.predicates`):
events are CSR arrays ``ev_ptr`` (N+1,) int64 and ``ev_pred`` (entries,)
int over predicate ids.  Feature ``t`` is the pair (predicate ``p_t``, label
``k_t``) and ``f_t(x, y) = 1`` iff ``p_t`` fires in ``x`` and ``y = k_t``
(Ratnaparkhi 1996; the OpenNLP setting of Huang et al. 2010, Sec. 5.1).
Only pairs seen in training are features, grouped by predicate and sorted by
label: the features of predicate ``p`` are ``feat_ptr[p]:feat_ptr[p+1]``
(``feat_ptr`` (P+1,) int64), their labels ``feat_label`` (n,) int64.
"""

from __future__ import annotations

import numpy as np
from numba import njit


def seen_pairs(pred: np.ndarray, label: np.ndarray, n_predicates: int,
               n_labels: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The features of observed (predicate, label) occurrences, and how often each was seen.

    Args:
        pred, label: one entry per occurrence (the same length), int.

    Returns:
        ``(feat_ptr (P+1,), feat_pred (n,), feat_label (n,), counts (n,))``,
        features sorted by predicate then label.
    """
    keys, counts = np.unique(np.asarray(pred, dtype=np.int64) * n_labels + np.asarray(label, dtype=np.int64),
                             return_counts=True)
    feat_pred, feat_label = keys // n_labels, keys % n_labels
    feat_ptr = np.searchsorted(feat_pred, np.arange(n_predicates + 1)).astype(np.int64)
    return feat_ptr, feat_pred.astype(np.int64), feat_label.astype(np.int64), counts


@njit(cache=True)
def label_scores(ev_ptr, ev_pred, feat_ptr, feat_label, w, n_labels):
    """sum_t w_t f_t(x_i, y) for every event i and label y: shape (N, n_labels)."""
    n = ev_ptr.shape[0] - 1
    out = np.zeros((n, n_labels))
    for i in range(n):
        for j in range(ev_ptr[i], ev_ptr[i + 1]):
            p = ev_pred[j]
            for t in range(feat_ptr[p], feat_ptr[p + 1]):
                out[i, feat_label[t]] += w[t]
    return out
