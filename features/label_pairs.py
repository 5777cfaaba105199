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


@njit(cache=True)
def distinct_rows(ev_ptr, ev_pred):
    """Each event's predicates sorted with repeats dropped: CSR ``(ptr int64, pred int32)``, as
    ``np.unique`` over (event, predicate) pairs gives them, without its (N x 8)-byte temporaries."""
    n = ev_ptr.shape[0] - 1
    ptr = np.zeros(n + 1, dtype=np.int64)
    out = np.empty(ev_pred.shape[0], dtype=np.int32)
    c = 0
    for i in range(n):
        row = np.sort(ev_pred[ev_ptr[i]:ev_ptr[i + 1]])
        for j in range(row.shape[0]):
            if j == 0 or row[j] != row[j - 1]:
                out[c] = row[j]
                c += 1
        ptr[i + 1] = c
    return ptr, out[:c].copy()


@njit(cache=True)
def columns_and_pairs(ptr, pred, labels, n_predicates, n_labels):
    """The column format of the rows ``(ptr, pred)`` and the (predicate, label) pairs seen.

    Returns ``(pr_ptr (P+1,), pr_event (N,) int32, feat_ptr (P+1,), feat_pred, feat_label, counts)``:
    the events of predicate p in order at ``pr_event[pr_ptr[p]:pr_ptr[p + 1]]`` (a stable sort of
    the entries by predicate), and the (predicate, label) pairs seen (sorted by predicate then label) with how
    often each was seen (``counts`` float64).
    """
    n = ptr.shape[0] - 1
    pr_ptr = np.zeros(n_predicates + 1, dtype=np.int64)
    for q in range(pred.shape[0]):
        pr_ptr[pred[q] + 1] += 1
    for p in range(n_predicates):
        pr_ptr[p + 1] += pr_ptr[p]
    fill = pr_ptr[:-1].copy()
    pr_event = np.empty(pred.shape[0], dtype=np.int32)
    for i in range(n):
        for q in range(ptr[i], ptr[i + 1]):
            pr_event[fill[pred[q]]] = i
            fill[pred[q]] += 1
    seen = np.zeros(n_labels, dtype=np.int64)
    n_feat = 0
    for p in range(n_predicates):  # count the pairs first, then fill them
        for q in range(pr_ptr[p], pr_ptr[p + 1]):
            y = labels[pr_event[q]]
            if seen[y] == 0:
                n_feat += 1
            seen[y] += 1
        for q in range(pr_ptr[p], pr_ptr[p + 1]):
            seen[labels[pr_event[q]]] = 0
    feat_ptr = np.zeros(n_predicates + 1, dtype=np.int64)
    feat_pred = np.empty(n_feat, dtype=np.int64)
    feat_label = np.empty(n_feat, dtype=np.int64)
    counts = np.empty(n_feat)
    f = 0
    for p in range(n_predicates):
        for q in range(pr_ptr[p], pr_ptr[p + 1]):
            seen[labels[pr_event[q]]] += 1
        for y in range(n_labels):
            if seen[y] > 0:
                feat_pred[f] = p
                feat_label[f] = y
                counts[f] = seen[y]
                f += 1
                seen[y] = 0
        feat_ptr[p + 1] = f
    return pr_ptr, pr_event, feat_ptr, feat_pred, feat_label, counts


def label_scores(ev_ptr, ev_pred, feat_ptr, feat_label, w, n_labels, dense=None):
    """sum_t w_t f_t(x_i, y) for every event i and label y: shape (N, n_labels).

    ``dense``: the :func:`dense_rows` of these features and weights, or None.
    """
    dense_row, rows = dense if dense is not None else (_NO_DENSE_ROW, np.zeros((0, n_labels)))
    return _label_scores(ev_ptr, ev_pred, feat_ptr, feat_label, w, n_labels, dense_row, rows)


# A predicate with at least this many labels gets a dense row of weights (dense_rows): on pt_bosque dev x8
# (39 labels) 1,253 of 91,883 predicates, 0.37 MiB, that hold 88% of the entries the events read; the label
# scores in 0.76 of the time (0.130 s against 0.172 s, in process, min of 5; 12 labels: 0.155 s), the same bits.
DENSE_LABELS = 8
_NO_DENSE_ROW = np.zeros(0, dtype=np.int64)


def dense_rows(feat_ptr, feat_label, w, n_labels, min_labels):
    """The weights of each predicate with at least ``min_labels`` labels as one dense row over the labels
    (0.0 for a label it does not have): ``(row of each predicate, -1 for none (P,), rows (R, n_labels))``.
    NumPy, not a kernel: one kernel fewer to load when a parser starts."""
    counts = np.diff(feat_ptr)
    dense = counts >= min_labels
    row_of = np.full(counts.shape[0], -1, dtype=np.int64)
    row_of[dense] = np.arange(int(dense.sum()))
    predicate = np.repeat(np.arange(counts.shape[0]), counts)  # the predicate of each feature
    kept = dense[predicate]
    rows = np.zeros((int(dense.sum()), n_labels))
    rows[row_of[predicate[kept]], feat_label[kept]] = w[kept]
    return row_of, rows


@njit(cache=True)
def _label_scores(ev_ptr, ev_pred, feat_ptr, feat_label, w, n_labels, dense_row, dense):
    """:func:`label_scores`; a predicate with a dense row (``dense_row`` empty: none has) adds the whole
    row, in the same order as its features would: an absent label gets +0.0, which changes no sum
    (the sums start at +0.0 and never become -0.0)."""
    n = ev_ptr.shape[0] - 1
    out = np.zeros((n, n_labels))
    has_dense = dense_row.shape[0] > 0
    for i in range(n):
        for j in range(ev_ptr[i], ev_ptr[i + 1]):
            p = ev_pred[j]
            if has_dense and dense_row[p] >= 0:
                r = dense_row[p]
                for y in range(n_labels):
                    out[i, y] += dense[r, y]
                continue
            for t in range(feat_ptr[p], feat_ptr[p + 1]):
                out[i, feat_label[t]] += w[t]
    return out
