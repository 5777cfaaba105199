"""Linear-chain dynamic programs: Viterbi, loss-augmented Viterbi, forward-backward.

A first-order Markov chain over labels is the MRF of Bartlett et al. (2004),
Sec. 2.1, Example 1, with the nodes (one label per token) and the edges
between consecutive tokens as cliques; Collins et al. (2008), Sec. 4, need
from it the log partition function and the part marginals (log-linear EG)
and the best labelling under scores plus a per-part loss (max-margin EG).

Parts convention
----------------
For a sentence of n >= 1 tokens and L >= 1 labels, all float64 log scores:

* ``emissions`` (n, L): score of label y at token t;
* ``transitions`` (L, L): score of label a at t - 1 followed by b at t,
  indexed ``[a, b]``, the same at every position;
* ``start`` (L,): score of the first label; ``stop`` (L,): of the last.

The score of a labelling y_0..y_{n-1} is
``start[y_0] + sum_t emissions[t, y_t] + sum_{t>=1} transitions[y_{t-1}, y_t] + stop[y_{n-1}]``.
Emissions must be finite; transitions, start and stop may hold -inf for a
forbidden choice (never NaN or +inf).  A labelling is an int64 array of
length n with values in 0..L-1.

The charts (alpha, beta) are kept in log space, so long sentences never
overflow or underflow.  Each step factors the maxima out and sums
exp(shifted chart) * exp(transitions - max) as plain products (L^2
multiply-adds, O(L) exps per position instead of L^2); wherever a
scaled sum is small enough that terms may have underflowed, that entry is
recomputed exactly as a log-sum-exp, so scores of magnitude 1e3 stay exact.
No ``fastmath``: the charts use -inf.

Sparse transitions.  A tagger with many labels gives most pairs no part:
their score is exactly 0 (Brown: 4,761 of 183^2 pairs have one).  Then
exp(transitions - top) = c + D with c = exp(-top) everywhere and D non-zero
only where the score is not 0, and a chart step sums c * sum_i p[i] plus
the non-zeros of D: L + nnz multiply-adds instead of L^2.  Where the
non-zeros are fewer than a third of the pairs the charts take that path;
a sum that may have lost digits to cancellation (negative entries of D)
is recomputed exactly in log space like an underflowed one.  The
marginals of chosen pairs only (:func:`forward_backward_pairs`, the
tagger's parts) cost as little.
"""

from __future__ import annotations

import threading

import numba
import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = ["forward_backward", "forward_backward_pairs", "log_partition", "part_log_partition", "part_marginals",
           "path_score", "viterbi", "viterbi_augmented", "hamming_cost", "lattice_log_partition",
           "lattice_marginals", "lattice_viterbi"]


# ---------------------------------------------------------------------------
# Kernels
# ---------------------------------------------------------------------------


# A scaled sum below this may have lost terms to underflow: recompute it exactly in log space.
_TINY = 1e-240
# Largest log of the rescaling factor of an edge block before it is recomputed exactly.
_MAX_SHIFT = 30.0
# A sparse chart sum below this share of the sum of its terms' magnitudes may have lost digits to
# cancellation: recompute it exactly in log space (it then keeps at least 1e-10 relative precision).
_CANCEL = 1e-6
# The sparse path when the non-zero transition scores are fewer than L^2 / _SPARSE_SHARE.
_SPARSE_SHARE = 3


@numba.njit(cache=True)
def _exp_transitions(transitions):
    """(E, top): E[a, b] = exp(transitions[a, b] - top) with top the largest finite entry (0 if none)."""
    L = transitions.shape[0]
    top = -np.inf
    for a in range(L):
        for b in range(L):
            if transitions[a, b] > top:
                top = transitions[a, b]
    if top == -np.inf:
        top = 0.0
    E = np.empty((L, L))
    at_zero = np.exp(-top)
    for a in range(L):
        for b in range(L):
            # Most pairs of a large tag set were never seen in training: their score is 0 (a tagger's
            # transitions without a part) or -inf (forbidden), whose exp is known without calling exp.
            x = transitions[a, b]
            E[a, b] = at_zero if x == 0.0 else np.exp(x - top) if x > -np.inf else 0.0
    return E, top


@numba.njit(cache=True)
def _sparse_rows(transitions, E, top):
    """The CSR rows (ptr (L + 1,), cols, vals) of D = E - exp(-top) over the pairs whose score is not 0.

    E = exp(transitions - top) (:func:`_exp_transitions`) equals c = exp(-top) at every pair of score
    exactly 0, so E = c + D with D non-zero only at the others (a -inf pair has D = -c).
    """
    L = transitions.shape[0]
    ptr = np.zeros(L + 1, dtype=np.int64)
    for a in range(L):
        for b in range(L):
            if transitions[a, b] != 0.0:
                ptr[a + 1] += 1
    for a in range(L):
        ptr[a + 1] += ptr[a]
    cols = np.empty(ptr[L], dtype=np.int64)
    vals = np.empty(ptr[L])
    c = np.exp(-top)
    k = 0
    for a in range(L):
        for b in range(L):
            if transitions[a, b] != 0.0:
                cols[k] = b
                vals[k] = E[a, b] - c
                k += 1
    return ptr, cols, vals


@numba.njit(cache=True)
def _is_sparse(ptr):
    """Whether the sparse chart steps pay: fewer than L^2 / _SPARSE_SHARE non-zero transition scores."""
    L = ptr.shape[0] - 1
    return ptr[L] * _SPARSE_SHARE < L * L


@numba.njit(cache=True)
def _lse_sum(x, y):
    """Exact logsum_k (x[k] + y[k]) of two vectors of one length, with the maximum factored out.

    -inf if every sum is -inf.  log Z is ``_lse_sum(alpha[n - 1], stop)``; the
    fallback of the scaled chart steps is ``_lse_sum(prev, transitions[:, b])``
    = logsum_a (prev[a] + transitions[a, b]) or ``_lse_sum(transitions[a], nxt)``
    = logsum_b (transitions[a, b] + nxt[b]).
    """
    m = -np.inf
    for k in range(x.shape[0]):
        v = x[k] + y[k]
        if v > m:
            m = v
    if m == -np.inf:
        return m
    acc = 0.0
    for k in range(x.shape[0]):
        acc += np.exp(x[k] + y[k] - m)
    return m + np.log(acc)


@numba.njit(cache=True, inline="always")
def _chart_step(prev, T, M, top, base, acc, out):
    """out[j] = base[j] + logsum_i (prev[i] + T[i, j]): one step of either chart, all of it (L,) float64.

    The forward chart's row t: prev = alpha[t - 1], T = transitions, base = emissions[t].  The backward
    chart's row t: prev[b] = emissions[t + 1, b] + beta[t + 1, b], T = transitions.T, base = 0.

    The log-sum is computed as m + top + log sum_i exp(prev[i] - m) M[i, j] with m = max_i prev[i] and
    M = exp(T - top) (E, or E.T, as C-contiguous rows): L^2 multiply-adds and L exps per step.  The
    sums run over i in order, a whole row of M at a time: the inner loop runs along a row of M and
    vectorises (a sum per j does not, and made the backward chart the slowest loop of forward-backward).
    Where a sum is so small that terms may have underflowed (below ``_TINY``), out[j] is recomputed
    exactly in log space, so huge scores stay exact.  ``acc`` (L,) is work space.
    """
    L = prev.shape[0]
    m = -np.inf
    for i in range(L):
        if prev[i] > m:
            m = prev[i]
    if m == -np.inf:
        for j in range(L):
            out[j] = -np.inf
        return
    for j in range(L):
        acc[j] = 0.0
    for i in range(L):
        scaled = np.exp(prev[i] - m)
        if scaled != 0.0:  # a row of zeros would add 0.0 everywhere
            for j in range(L):
                acc[j] += scaled * M[i, j]
    for j in range(L):
        if acc[j] > _TINY:
            out[j] = base[j] + m + top + np.log(acc[j])
        else:
            out[j] = base[j] + _lse_sum(prev, T[:, j])


@numba.njit(cache=True, inline="always")
def _scaled(prev, p):
    """p[i] = exp(prev[i] - m) with m = max_i prev[i]; returns (m, sum_i p[i]); m = -inf: p untouched."""
    m = -np.inf
    for i in range(prev.shape[0]):
        if prev[i] > m:
            m = prev[i]
    total = 0.0
    if m > -np.inf:
        for i in range(prev.shape[0]):
            p[i] = np.exp(prev[i] - m)
            total += p[i]
    return m, total


@numba.njit(cache=True)
def _sparse_forward_step(prev, transitions, ptr, cols, vals, top, base, p, acc, mag, out):
    """:func:`_chart_step` of the forward chart with E = c + D (D in CSR rows, see :func:`_sparse_rows`):
    acc[j] = c sum_i p[i] + sum_i p[i] D[i, j], L + nnz multiply-adds; mag[j] sums the terms'
    magnitudes.  A sum below ``_TINY`` or below ``_CANCEL`` times its magnitude is recomputed exactly."""
    L = prev.shape[0]
    m, total = _scaled(prev, p)
    if m == -np.inf:
        for j in range(L):
            out[j] = -np.inf
        return
    c = np.exp(-top) * total
    for j in range(L):
        acc[j] = c
        mag[j] = c
    for i in range(L):
        if p[i] != 0.0:
            for k in range(ptr[i], ptr[i + 1]):
                v = p[i] * vals[k]
                acc[cols[k]] += v
                mag[cols[k]] += abs(v)
    for j in range(L):
        if acc[j] > _TINY and acc[j] > _CANCEL * mag[j]:
            out[j] = base[j] + m + top + np.log(acc[j])
        else:
            out[j] = base[j] + _lse_sum(prev, transitions[:, j])


@numba.njit(cache=True)
def _sparse_backward_step(g, transitions, ptr, cols, vals, top, p, out):
    """out[a] = logsum_b (transitions[a, b] + g[b]) with E = c + D (see :func:`_sparse_forward_step`):
    the sum over a row of D gathers the non-zeros of row a."""
    L = g.shape[0]
    m, total = _scaled(g, p)
    if m == -np.inf:
        for a in range(L):
            out[a] = -np.inf
        return
    c = np.exp(-top) * total
    for a in range(L):
        acc = c
        mag = c
        for k in range(ptr[a], ptr[a + 1]):
            v = vals[k] * p[cols[k]]
            acc += v
            mag += abs(v)
        if acc > _TINY and acc > _CANCEL * mag:
            out[a] = m + top + np.log(acc)
        else:
            out[a] = _lse_sum(transitions[a], g)


@numba.njit(cache=True)
def _forward(emissions, transitions, start, E, top, alpha):
    """Fill alpha[t, b] = log sum over label prefixes ending in b at t (sum-product).

    alpha[0, b] = start[b] + emissions[0, b];
    alpha[t, b] = emissions[t, b] + logsum_a (alpha[t - 1, a] + transitions[a, b]),
    by :func:`_chart_step` with E = exp(transitions - top), or by :func:`_sparse_forward_step` when
    most transition scores are 0.
    """
    n, L = emissions.shape
    acc = np.empty(L)
    for b in range(L):
        alpha[0, b] = start[b] + emissions[0, b]
    ptr, cols, vals = _sparse_rows(transitions, E, top)
    if _is_sparse(ptr):
        p = np.empty(L)
        mag = np.empty(L)
        for t in range(1, n):
            _sparse_forward_step(alpha[t - 1], transitions, ptr, cols, vals, top, emissions[t], p, acc, mag,
                                 alpha[t])
        return
    for t in range(1, n):
        _chart_step(alpha[t - 1], transitions, E, top, emissions[t], acc, alpha[t])


@numba.njit(cache=True)
def _backward(emissions, transitions, stop, E, top, beta):
    """Fill beta[t, a] = log sum over label suffixes after label a at t.

    beta[n - 1, a] = stop[a];
    beta[t, a] = logsum_b (transitions[a, b] + emissions[t + 1, b] + beta[t + 1, b]),
    by :func:`_chart_step` (or :func:`_sparse_backward_step`) over g[b] = emissions[t + 1, b] + beta[t + 1, b].
    """
    n, L = emissions.shape
    g = np.empty(L)
    acc = np.empty(L)
    for a in range(L):
        beta[n - 1, a] = stop[a]
    ptr, cols, vals = _sparse_rows(transitions, E, top)
    if _is_sparse(ptr):
        for t in range(n - 2, -1, -1):
            for b in range(L):
                g[b] = emissions[t + 1, b] + beta[t + 1, b]
            _sparse_backward_step(g, transitions, ptr, cols, vals, top, acc, beta[t])
        return
    ET = np.ascontiguousarray(E.T)  # ET[b, a] = E[a, b]
    zero = np.zeros(L)
    transposed = transitions.T
    for t in range(n - 2, -1, -1):
        for b in range(L):
            g[b] = emissions[t + 1, b] + beta[t + 1, b]
        _chart_step(g, transposed, ET, top, zero, acc, beta[t])


@numba.njit(cache=True)
def _log_partition(emissions, transitions, start, stop):
    """log Z = logsum_b (alpha[n - 1, b] + stop[b])."""
    alpha = np.empty(emissions.shape)
    E, top = _exp_transitions(transitions)
    _forward(emissions, transitions, start, E, top, alpha)
    return _lse_sum(alpha[-1], stop)


@numba.njit(cache=True)
def _block_shift(alpha_prev, emissions_t, beta_t, top, log_z, g):
    """One position's transition block of forward-backward: fills g = emissions_t + beta_t and returns
    (x, y, shift): the maxima of alpha_prev and g, and the log of the block's rescaling factor
    x + y + top - log Z."""
    x = -np.inf
    y = -np.inf
    for a in range(alpha_prev.shape[0]):
        if alpha_prev[a] > x:
            x = alpha_prev[a]
        g[a] = emissions_t[a] + beta_t[a]
        if g[a] > y:
            y = g[a]
    return x, y, x + y + top - log_z


@numba.njit(cache=True)
def _forward_backward_pairs(emissions, transitions, start, stop, pairs, node, edge):
    """As :func:`_forward_backward`, but the expected transition counts only of the pairs
    ``pairs`` (P, 2): edge[k] (P,) for the pair (pairs[k, 0], pairs[k, 1]); P multiply-adds per
    position instead of L^2.  node (n, L) and edge are overwritten.  Returns log Z."""
    n, L = emissions.shape
    alpha = np.empty((n, L))
    beta = np.empty((n, L))
    E, top = _exp_transitions(transitions)
    _forward(emissions, transitions, start, E, top, alpha)
    _backward(emissions, transitions, stop, E, top, beta)
    log_z = _lse_sum(alpha[n - 1], stop)
    for t in range(n):
        for y in range(L):
            node[t, y] = np.exp(alpha[t, y] + beta[t, y] - log_z)
    P = pairs.shape[0]
    pa = pairs[:, 0].copy()
    pb = pairs[:, 1].copy()
    ep = np.empty(P)
    for k in range(P):
        ep[k] = E[pa[k], pb[k]]
        edge[k] = 0.0
    g = np.empty(L)
    ea = np.empty(L)
    eb = np.empty(L)
    for t in range(1, n):
        x, y, shift = _block_shift(alpha[t - 1], emissions[t], beta[t], top, log_z, g)
        if x == -np.inf or y == -np.inf or shift > _MAX_SHIFT:
            for k in range(P):
                edge[k] += np.exp(alpha[t - 1, pa[k]] + transitions[pa[k], pb[k]] + g[pb[k]] - log_z)
            continue
        scale = np.exp(shift)
        for a in range(L):
            ea[a] = np.exp(alpha[t - 1, a] - x) * scale
            eb[a] = np.exp(g[a] - y)
        for k in range(P):
            edge[k] += ea[pa[k]] * ep[k] * eb[pb[k]]
    return log_z


@numba.njit(cache=True)
def _forward_backward(emissions, transitions, start, stop, node, edge, edge_t, per_position):
    """Marginals by forward-backward (Lafferty et al. 2001; Bartlett et al. 2004, Sec. 2.1).

    node[t, y] = exp(alpha[t, y] + beta[t, y] - log Z);
    edge[a, b] = sum_{t >= 1} exp(alpha[t-1, a] + transitions[a, b] + g[t, b] - log Z)
    with g[t, b] = emissions[t, b] + beta[t, b]: the expected number of
    a -> b transitions; with ``per_position`` also edge_t[t - 1, a, b] for
    each t (edge_t is (n - 1, L, L), else unused).  Each position's block is
    the product exp(alpha - x)[a] E[a, b] exp(g - y)[b] exp(x + y + top - log Z)
    (x, y the maxima), recomputed exactly in log space when the rescaling
    exponent exceeds ``_MAX_SHIFT`` (then entries could have underflowed).
    node, edge are overwritten.  Returns log Z.
    """
    n, L = emissions.shape
    alpha = np.empty((n, L))
    beta = np.empty((n, L))
    E, top = _exp_transitions(transitions)  # once: L^2 exps cost as much as the charts of a short sentence
    _forward(emissions, transitions, start, E, top, alpha)
    _backward(emissions, transitions, stop, E, top, beta)
    log_z = _lse_sum(alpha[n - 1], stop)
    for t in range(n):
        for y in range(L):
            node[t, y] = np.exp(alpha[t, y] + beta[t, y] - log_z)
    for a in range(L):
        for b in range(L):
            edge[a, b] = 0.0
    g = np.empty(L)
    ea = np.empty(L)
    eb = np.empty(L)
    for t in range(1, n):
        x, y, shift = _block_shift(alpha[t - 1], emissions[t], beta[t], top, log_z, g)
        exact = x == -np.inf or y == -np.inf or shift > _MAX_SHIFT
        if not exact:
            scale = np.exp(shift)
            for a in range(L):
                ea[a] = np.exp(alpha[t - 1, a] - x) * scale
                eb[a] = np.exp(g[a] - y)
        if exact or per_position:
            for a in range(L):
                for b in range(L):
                    if exact:
                        p = np.exp(alpha[t - 1, a] + transitions[a, b] + g[b] - log_z)
                    else:
                        p = ea[a] * E[a, b] * eb[b]
                    edge[a, b] += p
                    if per_position:
                        edge_t[t - 1, a, b] = p
        else:  # the same sums without branches in the inner loop, which then vectorises
            for a in range(L):
                if ea[a] != 0.0:  # a row of zeros would add 0.0 everywhere
                    for b in range(L):
                        edge[a, b] += ea[a] * E[a, b] * eb[b]
    return log_z


@numba.njit(cache=True)
def _viterbi(emissions, transitions, start, stop, path):
    """Best labelling by Viterbi (max-product); ties go to the smallest label.

    delta[0, b] = start[b] + emissions[0, b];
    delta[t, b] = emissions[t, b] + max_a (delta[t - 1, a] + transitions[a, b]), back[t, b] = argmax;
    the last label maximises delta[n - 1, b] + stop[b].  Writes ``path``, returns its score.
    """
    n, L = emissions.shape
    delta = np.empty((n, L))
    back = np.zeros((n, L), dtype=np.int64)
    best_in = np.empty(L)  # the best score into each label at step t
    for b in range(L):
        delta[0, b] = start[b] + emissions[0, b]
    for t in range(1, n):
        # max over a for all b at once, a row of transitions at a time (the inner loop vectorises); a
        # strict > over increasing a keeps the smallest a of a tie, and -inf everywhere gives a = 0
        for b in range(L):
            best_in[b] = -np.inf
        for a in range(L):
            d = delta[t - 1, a]
            for b in range(L):
                v = d + transitions[a, b]
                if v > best_in[b]:
                    best_in[b] = v
                    back[t, b] = a
        for b in range(L):
            delta[t, b] = emissions[t, b] + best_in[b]
    best = delta[n - 1, 0] + stop[0]
    arg = 0
    for b in range(1, L):
        v = delta[n - 1, b] + stop[b]
        if v > best:
            best = v
            arg = b
    path[n - 1] = arg
    for t in range(n - 1, 0, -1):
        path[t - 1] = back[t, path[t]]
    return best


@numba.njit(cache=True)
def _chain_of_parts(theta, n, L, pairs):
    """(emissions, transitions, start, stop) of a flat part vector: n L node scores (row-major), one
    score per pair of ``pairs`` (the other transitions 0), L start and L stop scores."""
    nl = n * L
    T = pairs.shape[0]
    tr = np.zeros((L, L))
    for k in range(T):
        tr[pairs[k, 0], pairs[k, 1]] = theta[nl + k]
    return (theta[:nl].reshape((n, L)), tr, theta[nl + T:nl + T + L].copy(),
            theta[nl + T + L:nl + T + 2 * L].copy())


@numba.njit(cache=True)
def _part_marginals(theta, n, L, pairs, out):
    """log Z and the marginals of the flat part vector ``theta`` (:func:`_chain_of_parts`) into ``out``
    (its shape): node marginals, the expected count of each pair, the first and the last node's."""
    em, tr, st, sp = _chain_of_parts(theta, n, L, pairs)
    nl = n * L
    T = pairs.shape[0]
    node = np.empty((n, L))
    log_z = _forward_backward_pairs(em, tr, st, sp, pairs, node, out[nl:nl + T])
    out[:nl] = node.reshape(nl)
    out[nl + T:nl + T + L] = node[0]
    out[nl + T + L:] = node[n - 1]
    return log_z


@numba.njit(cache=True)
def _part_log_partition(theta, n, L, pairs):
    """log Z of the flat part vector ``theta`` (:func:`_chain_of_parts`)."""
    em, tr, st, sp = _chain_of_parts(theta, n, L, pairs)
    return _log_partition(np.ascontiguousarray(em), tr, st, sp)


# ---------------------------------------------------------------------------
# Lattices: a label set per token (a tag dictionary)
# ---------------------------------------------------------------------------
#
# A lattice gives token t the labels alab[aptr[t]:aptr[t + 1]] (distinct); the chain's labellings are
# those whose every label is allowed at its token.  Its flat part vector (the tagger's parts with a
# dictionary, see :mod:`egnlp.features.chain_features`) is, in order: one node part per entry q of alab
# (token-major), one part per pair of ``pairs`` (P, 2) (every other pair of allowed labels scores 0),
# one start part per label of the first token and one stop part per label of the last.  The charts
# hold one entry per lattice entry q and are summed exactly in log space (the maximum factored out of
# every sum): a position costs |A_{t-1}| |A_t| terms, a handful for the words a dictionary knows.
# ``tr`` (L, L) and ``pidx`` (L, L) are work space, 0.0 and -1 everywhere on entry and on return: the
# scores and the indices of the pairs while a kernel runs.


@numba.njit(cache=True, no_cpython_wrapper=True)
def _lattice_set(theta, first, pairs, tr, pidx):
    """tr[a, b] = theta[first + k] and pidx[a, b] = k for the pairs k = (a, b)."""
    for k in range(pairs.shape[0]):
        tr[pairs[k, 0], pairs[k, 1]] = theta[first + k]
        pidx[pairs[k, 0], pairs[k, 1]] = k


@numba.njit(cache=True, no_cpython_wrapper=True)
def _lattice_reset(pairs, tr, pidx):
    for k in range(pairs.shape[0]):
        tr[pairs[k, 0], pairs[k, 1]] = 0.0
        pidx[pairs[k, 0], pairs[k, 1]] = -1


@numba.njit(cache=True, no_cpython_wrapper=True)
def _lattice_forward(theta, aptr, alab, start0, tr, alpha):
    """alpha[q] = log sum over the label prefixes ending in entry q (token t, label alab[q]):
    alpha[q] = theta[start0 + j] + theta[q] at the first token (j: q's rank there), else
    theta[q] + logsum_{r at t - 1} (alpha[r] + tr[alab[r], alab[q]])."""
    n = aptr.shape[0] - 1
    for q in range(aptr[0], aptr[1]):
        alpha[q] = theta[start0 + q - aptr[0]] + theta[q]
    for t in range(1, n):
        for q in range(aptr[t], aptr[t + 1]):
            b = alab[q]
            m = -np.inf
            for r in range(aptr[t - 1], aptr[t]):
                v = alpha[r] + tr[alab[r], b]
                if v > m:
                    m = v
            acc = 0.0
            for r in range(aptr[t - 1], aptr[t]):
                acc += np.exp(alpha[r] + tr[alab[r], b] - m)
            alpha[q] = theta[q] + m + np.log(acc)


@numba.njit(cache=True, no_cpython_wrapper=True)
def _lattice_backward(theta, aptr, alab, stop0, tr, beta):
    """beta[q] = log sum over the label suffixes after entry q: theta[stop0 + j] at the last token, else
    logsum_{r at t + 1} (tr[alab[q], alab[r]] + theta[r] + beta[r])."""
    n = aptr.shape[0] - 1
    for q in range(aptr[n - 1], aptr[n]):
        beta[q] = theta[stop0 + q - aptr[n - 1]]
    for t in range(n - 2, -1, -1):
        for q in range(aptr[t], aptr[t + 1]):
            a = alab[q]
            m = -np.inf
            for r in range(aptr[t + 1], aptr[t + 2]):
                v = tr[a, alab[r]] + theta[r] + beta[r]
                if v > m:
                    m = v
            acc = 0.0
            for r in range(aptr[t + 1], aptr[t + 2]):
                acc += np.exp(tr[a, alab[r]] + theta[r] + beta[r] - m)
            beta[q] = m + np.log(acc)


@numba.njit(cache=True, no_cpython_wrapper=True)
def _lattice_log_z(theta, aptr, alpha, stop0):
    """logsum over the last token's entries q of alpha[q] + its stop score."""
    n = aptr.shape[0] - 1
    m = -np.inf
    for q in range(aptr[n - 1], aptr[n]):
        v = alpha[q] + theta[stop0 + q - aptr[n - 1]]
        if v > m:
            m = v
    acc = 0.0
    for q in range(aptr[n - 1], aptr[n]):
        acc += np.exp(alpha[q] + theta[stop0 + q - aptr[n - 1]] - m)
    return m + np.log(acc)


# The scaled lattice sums: when the transition scores of a sentence span less than this, exp(tr - top)
# is at least e^-600 for every pair and the sums below cannot underflow (see _lattice_scaled).
_LATTICE_RANGE = 600.0


@numba.njit(cache=True, no_cpython_wrapper=True)
def _lattice_scaled(theta, first, P, ex):
    """(top, c, ok) of a sentence's P transition scores theta[first:first + P], every other pair 0:
    ex[k] = exp(theta[first + k] - top) and c = exp(-top), top the largest score.  ``ok`` when the scores
    span less than ``_LATTICE_RANGE``: then every factor lies in [e^-600, 1], a chart sum
    sum_r exp(alpha[r] - m) exp(tr - top) is at least e^-600 (its largest alpha term), and the terms that
    underflow to 0 are below e^-745, a relative error under e^-145: the scaled sums are exact to
    float64 precision.  Otherwise the kernels sum in log space."""
    top = 0.0
    low = 0.0
    for k in range(P):
        v = theta[first + k]
        if v > top:
            top = v
        if v < low:
            low = v
    for k in range(P):
        ex[k] = np.exp(theta[first + k] - top)
    return top, np.exp(-top), top - low < _LATTICE_RANGE


@numba.njit(cache=True, no_cpython_wrapper=True)
def _lattice_forward_scaled(theta, aptr, alab, start0, pidx, ex, top, c, alpha, p):
    """:func:`_lattice_forward` by scaled sums (valid when :func:`_lattice_scaled` is ok):
    alpha[q] = theta[q] + m + top + log sum_r exp(alpha[r] - m) exp(tr[a_r, b] - top), m = max_r alpha[r]."""
    n = aptr.shape[0] - 1
    for q in range(aptr[0], aptr[1]):
        alpha[q] = theta[start0 + q - aptr[0]] + theta[q]
    for t in range(1, n):
        m = -np.inf
        for r in range(aptr[t - 1], aptr[t]):
            if alpha[r] > m:
                m = alpha[r]
        for r in range(aptr[t - 1], aptr[t]):
            p[r] = np.exp(alpha[r] - m)
        for q in range(aptr[t], aptr[t + 1]):
            b = alab[q]
            acc = 0.0
            for r in range(aptr[t - 1], aptr[t]):
                k = pidx[alab[r], b]
                acc += p[r] * (ex[k] if k >= 0 else c)
            alpha[q] = theta[q] + m + top + np.log(acc)


@numba.njit(cache=True, no_cpython_wrapper=True)
def _lattice_backward_scaled(theta, aptr, alab, stop0, pidx, ex, top, c, beta, p):
    """:func:`_lattice_backward` by scaled sums (see :func:`_lattice_forward_scaled`)."""
    n = aptr.shape[0] - 1
    for q in range(aptr[n - 1], aptr[n]):
        beta[q] = theta[stop0 + q - aptr[n - 1]]
    for t in range(n - 2, -1, -1):
        m = -np.inf
        for r in range(aptr[t + 1], aptr[t + 2]):
            v = theta[r] + beta[r]
            if v > m:
                m = v
        for r in range(aptr[t + 1], aptr[t + 2]):
            p[r] = np.exp(theta[r] + beta[r] - m)
        for q in range(aptr[t], aptr[t + 1]):
            a = alab[q]
            acc = 0.0
            for r in range(aptr[t + 1], aptr[t + 2]):
                k = pidx[a, alab[r]]
                acc += p[r] * (ex[k] if k >= 0 else c)
            beta[q] = m + top + np.log(acc)


@numba.njit(cache=True)
def _lattice_marginals(theta, aptr, alab, pairs, tr, pidx, out):
    """log Z and the marginals of a lattice's flat part vector ``theta`` into ``out`` (its layout):
    node entries exp(alpha + beta - log Z), each pair's expected count summed over the positions, the
    first and the last token's node marginals."""
    n = aptr.shape[0] - 1
    Q = aptr[n]
    P = pairs.shape[0]
    start0 = Q + P
    stop0 = start0 + aptr[1] - aptr[0]
    _lattice_set(theta, Q, pairs, tr, pidx)
    alpha = np.empty(Q)
    beta = np.empty(Q)
    ex = np.empty(P)
    top, c, scaled = _lattice_scaled(theta, Q, P, ex)
    if scaled:
        p = np.empty(Q)
        _lattice_forward_scaled(theta, aptr, alab, start0, pidx, ex, top, c, alpha, p)
        _lattice_backward_scaled(theta, aptr, alab, stop0, pidx, ex, top, c, beta, p)
    else:
        _lattice_forward(theta, aptr, alab, start0, tr, alpha)
        _lattice_backward(theta, aptr, alab, stop0, tr, beta)
    log_z = _lattice_log_z(theta, aptr, alpha, stop0)
    for q in range(Q):
        out[q] = np.exp(alpha[q] + beta[q] - log_z)
    for k in range(P):
        out[Q + k] = 0.0
    # edge (r at t - 1, q at t): exp(alpha[r] + tr + theta[q] + beta[q] - log Z), for listed pairs only;
    # scaled as exp(alpha[r] - x) ex[k] exp(g[q] - y) exp(x + y + top - log Z) with x, y the maxima
    # (every factor but the last at most 1), in log space when that exponent exceeds _MAX_SHIFT
    ea = np.empty(Q)
    for t in range(1, n):
        x = -np.inf
        for r in range(aptr[t - 1], aptr[t]):
            if alpha[r] > x:
                x = alpha[r]
        y = -np.inf
        for q in range(aptr[t], aptr[t + 1]):
            if theta[q] + beta[q] > y:
                y = theta[q] + beta[q]
        shift = x + y + top - log_z
        if scaled and shift <= _MAX_SHIFT:
            scale = np.exp(shift)
            for r in range(aptr[t - 1], aptr[t]):
                ea[r] = np.exp(alpha[r] - x) * scale
            for q in range(aptr[t], aptr[t + 1]):
                b = alab[q]
                g = np.exp(theta[q] + beta[q] - y)
                for r in range(aptr[t - 1], aptr[t]):
                    k = pidx[alab[r], b]
                    if k >= 0:
                        out[Q + k] += ea[r] * ex[k] * g
        else:
            for q in range(aptr[t], aptr[t + 1]):
                b = alab[q]
                g = theta[q] + beta[q] - log_z
                for r in range(aptr[t - 1], aptr[t]):
                    k = pidx[alab[r], b]
                    if k >= 0:
                        out[Q + k] += np.exp(alpha[r] + tr[alab[r], b] + g)
    for q in range(aptr[0], aptr[1]):
        out[start0 + q] = out[q]
    for q in range(aptr[n - 1], aptr[n]):
        out[stop0 + q - aptr[n - 1]] = out[q]
    _lattice_reset(pairs, tr, pidx)
    return log_z


@numba.njit(cache=True)
def _lattice_log_partition(theta, aptr, alab, pairs, tr, pidx):
    """log Z of a lattice's flat part vector (the forward chart only)."""
    Q = aptr[aptr.shape[0] - 1]
    P = pairs.shape[0]
    _lattice_set(theta, Q, pairs, tr, pidx)
    alpha = np.empty(Q)
    ex = np.empty(P)
    top, c, scaled = _lattice_scaled(theta, Q, P, ex)
    if scaled:
        _lattice_forward_scaled(theta, aptr, alab, Q + P, pidx, ex, top, c, alpha, np.empty(Q))
    else:
        _lattice_forward(theta, aptr, alab, Q + P, tr, alpha)
    log_z = _lattice_log_z(theta, aptr, alpha, Q + P + aptr[1] - aptr[0])
    _lattice_reset(pairs, tr, pidx)
    return log_z


@numba.njit(cache=True)
def _lattice_viterbi(theta, aptr, alab, pairs, tr, pidx, path):
    """Best labelling of a lattice's flat part vector into ``path`` (n,) (ties: the earliest entry);
    returns its score."""
    n = aptr.shape[0] - 1
    Q = aptr[n]
    P = pairs.shape[0]
    start0 = Q + P
    stop0 = start0 + aptr[1] - aptr[0]
    _lattice_set(theta, Q, pairs, tr, pidx)
    delta = np.empty(Q)
    back = np.zeros(Q, dtype=np.int64)
    for q in range(aptr[0], aptr[1]):
        delta[q] = theta[start0 + q] + theta[q]
    for t in range(1, n):
        for q in range(aptr[t], aptr[t + 1]):
            b = alab[q]
            best = -np.inf
            arg = aptr[t - 1]
            for r in range(aptr[t - 1], aptr[t]):
                v = delta[r] + tr[alab[r], b]
                if v > best:
                    best = v
                    arg = r
            delta[q] = theta[q] + best
            back[q] = arg
    best = -np.inf
    arg = aptr[n - 1]
    for q in range(aptr[n - 1], aptr[n]):
        v = delta[q] + theta[stop0 + q - aptr[n - 1]]
        if v > best:
            best = v
            arg = q
    for t in range(n - 1, -1, -1):
        path[t] = alab[arg]
        arg = back[arg]
    _lattice_reset(pairs, tr, pidx)
    return best


# ---------------------------------------------------------------------------
# Validating wrappers
# ---------------------------------------------------------------------------


def _check_parts(theta: ArrayLike, n: int, L: int, pairs: ArrayLike):
    """float64 theta and int64 pairs of a flat part vector, checked: n L + P + 2 L finite scores."""
    th = np.ascontiguousarray(theta, dtype=np.float64)
    pr = np.ascontiguousarray(pairs, dtype=np.int64)
    if n < 1 or L < 1 or pr.ndim != 2 or pr.shape[1] != 2:
        raise ValueError(f"need n, L >= 1 and (P, 2) pairs, not n = {n}, L = {L}, pairs {pr.shape}")
    if th.shape != (n * L + pr.shape[0] + 2 * L,):
        raise ValueError(f"theta has shape {th.shape}, expected ({n * L + pr.shape[0] + 2 * L},)")
    if not np.isfinite(th).all():
        raise ValueError("part scores must be finite")
    return th, pr


def part_marginals(theta: ArrayLike, n: int, L: int, pairs: ArrayLike) -> tuple[float, NDArray[np.float64]]:
    """``(log Z, mu)`` of a chain given as one flat vector of part scores: n L node scores (token t,
    label y at t L + y), a score for each pair of ``pairs`` (P, 2) (every other
    transition scores 0), L start and L stop scores; mu in the same layout (the pairs' expected
    counts; start and stop: the first and last node marginals).  The pairs must be distinct and in
    0..L-1: the caller's (a tagger's transition parts, checked when they were made)."""
    th, pr = _check_parts(theta, n, L, pairs)
    out = np.empty(th.shape[0])
    return _check_finite_total(_part_marginals(th, n, L, pr, out)), out


def part_log_partition(theta: ArrayLike, n: int, L: int, pairs: ArrayLike) -> float:
    """log Z of a flat part vector (see :func:`part_marginals`)."""
    th, pr = _check_parts(theta, n, L, pairs)
    return _check_finite_total(_part_log_partition(th, n, L, pr))


def _check(emissions: ArrayLike, transitions: ArrayLike, start: ArrayLike, stop: ArrayLike):
    """float64 contiguous copies of the four score arrays, with shapes and values checked."""
    e = np.ascontiguousarray(emissions, dtype=np.float64)
    if e.ndim != 2 or e.shape[0] < 1 or e.shape[1] < 1:
        raise ValueError(f"emissions must be an (n, L) array with n, L >= 1, not shape {e.shape}")
    L = e.shape[1]
    tr = np.ascontiguousarray(transitions, dtype=np.float64)
    if tr.shape != (L, L):
        raise ValueError(f"transitions must have shape ({L}, {L}), not {tr.shape}")
    st = np.ascontiguousarray(start, dtype=np.float64)
    sp = np.ascontiguousarray(stop, dtype=np.float64)
    if st.shape != (L,) or sp.shape != (L,):
        raise ValueError(f"start and stop must have shape ({L},), not {st.shape} and {sp.shape}")
    if not np.all(np.isfinite(e)):
        raise ValueError("emissions must be finite")
    for name, arr in (("transitions", tr), ("start", st), ("stop", sp)):
        if np.isnan(arr).any() or (arr == np.inf).any():
            raise ValueError(f"{name} must be finite or -inf (no NaN, no +inf)")
    return e, tr, st, sp


def _check_finite_total(value: float) -> float:
    if value == -np.inf:
        raise ValueError("every labelling is forbidden (-inf transitions, start or stop)")
    return float(value)


def log_partition(emissions: ArrayLike, transitions: ArrayLike, start: ArrayLike, stop: ArrayLike) -> float:
    """log Z: log sum over all L^n labellings of exp(score) (forward algorithm)."""
    e, tr, st, sp = _check(emissions, transitions, start, stop)
    return _check_finite_total(_log_partition(e, tr, st, sp))


def forward_backward(emissions: ArrayLike, transitions: ArrayLike, start: ArrayLike, stop: ArrayLike,
                     per_position: bool = False):
    """log Z and the marginals of the chain distribution p(y) ~ exp(score(y)).

    Returns ``(log_z, node, edge)``: node (n, L) with node[t, y] = p(y_t = y)
    (each row sums to 1), edge (L, L) with edge[a, b] the expected number of
    positions t >= 1 with y_{t-1} = a, y_t = b (sums to n - 1).  With
    ``per_position`` a fourth value, edge_t (n - 1, L, L), holds the
    marginal of each position's pair (n L^2 floats: for long sentences and
    many labels, mind the memory).  The start and stop marginals are node[0]
    and node[n - 1].
    """
    e, tr, st, sp = _check(emissions, transitions, start, stop)
    n, L = e.shape
    node = np.empty((n, L))
    edge = np.empty((L, L))
    edge_t = np.empty((n - 1, L, L) if per_position else (0, 0, 0))
    log_z = _check_finite_total(_forward_backward(e, tr, st, sp, node, edge, edge_t, per_position))
    if per_position:
        return log_z, node, edge, edge_t
    return log_z, node, edge


def forward_backward_pairs(emissions: ArrayLike, transitions: ArrayLike, start: ArrayLike, stop: ArrayLike,
                           pairs: ArrayLike):
    """:func:`forward_backward` with the expected transition counts of the pairs ``pairs`` (P, 2) only:
    ``(log_z, node, edge)`` with edge (P,), edge[k] that of ``pairs[k]`` (P multiply-adds per position
    instead of L^2: a tagger needs those of its transition parts alone)."""
    e, tr, st, sp = _check(emissions, transitions, start, stop)
    n, L = e.shape
    pr = np.ascontiguousarray(pairs, dtype=np.int64)
    if pr.ndim != 2 or pr.shape[1] != 2 or (pr.size and (pr.min() < 0 or pr.max() >= L)):
        raise ValueError(f"pairs must be a (P, 2) array of labels in 0..{L - 1}")
    node = np.empty((n, L))
    edge = np.empty(pr.shape[0])
    log_z = _check_finite_total(_forward_backward_pairs(e, tr, st, sp, pr, node, edge))
    return log_z, node, edge


def viterbi(emissions: ArrayLike, transitions: ArrayLike, start: ArrayLike, stop: ArrayLike) -> tuple[NDArray[np.int64], float]:
    """The best labelling (int64, length n) and its score; ties go to smaller labels."""
    e, tr, st, sp = _check(emissions, transitions, start, stop)
    path = np.empty(e.shape[0], dtype=np.int64)
    score = _check_finite_total(_viterbi(e, tr, st, sp, path))
    return path, score


def hamming_cost(gold: ArrayLike, n_labels: int) -> NDArray[np.float64]:
    """The (n, L) node cost of Hamming loss: 1 where the label differs from ``gold``, else 0."""
    g = np.asarray(gold)
    if g.ndim != 1 or not np.issubdtype(g.dtype, np.integer):
        raise ValueError("gold must be a 1-D integer array of labels")
    if g.size and (g.min() < 0 or g.max() >= n_labels):
        raise ValueError(f"gold labels must lie in 0..{n_labels - 1}")
    cost = np.ones((g.shape[0], n_labels))
    cost[np.arange(g.shape[0]), g] = 0.0
    return cost


def viterbi_augmented(emissions: ArrayLike, transitions: ArrayLike, start: ArrayLike, stop: ArrayLike, *,
                      gold: ArrayLike | None = None, cost: ArrayLike | None = None) -> tuple[NDArray[np.int64], float]:
    """Loss-augmented Viterbi: argmax_y score(y) + cost(y) (Collins et al. 2008, Sec. 4, max-margin).

    The cost is a per-node (n, L) array added to the emissions (``cost``),
    or the Hamming loss against the labelling ``gold`` (+1 per position whose
    label differs); exactly one of the two.  Returns the labelling and its
    augmented score score(y) + cost(y).
    """
    e, tr, st, sp = _check(emissions, transitions, start, stop)
    if (gold is None) == (cost is None):
        raise ValueError("give exactly one of gold (Hamming loss) and cost (an (n, L) node cost)")
    if gold is not None:
        if np.asarray(gold).shape != (e.shape[0],):
            raise ValueError(f"gold must have one label per token ({e.shape[0]}), not shape {np.asarray(gold).shape}")
        c = hamming_cost(gold, e.shape[1])
    else:
        c = np.asarray(cost, dtype=np.float64)
        if c.shape != e.shape:
            raise ValueError(f"cost must have the shape of the emissions {e.shape}, not {c.shape}")
        if not np.all(np.isfinite(c)):
            raise ValueError("cost must be finite")
    return viterbi(e + c, tr, st, sp)


def path_score(emissions: ArrayLike, transitions: ArrayLike, start: ArrayLike, stop: ArrayLike,
               path: ArrayLike) -> float:
    """score(y) of one labelling (see the module docstring)."""
    e, tr, st, sp = _check(emissions, transitions, start, stop)
    y = np.asarray(path, dtype=np.int64)
    if y.shape != (e.shape[0],) or y.min() < 0 or y.max() >= e.shape[1]:
        raise ValueError("path must hold one label in 0..L-1 per token")
    return float(st[y[0]] + e[np.arange(len(y)), y].sum() + tr[y[:-1], y[1:]].sum() + sp[y[-1]])


_WORK = threading.local()  # per thread: L -> the (L, L) work space of the lattice kernels


def _lattice_work(L: int) -> tuple[np.ndarray, np.ndarray]:
    """The lattice kernels' ``tr`` (0.0) and ``pidx`` (-1) work space for L labels, one per thread."""
    spaces = getattr(_WORK, "spaces", None)
    if spaces is None:
        spaces = _WORK.spaces = {}
    if L not in spaces:
        spaces[L] = (np.zeros((L, L)), np.full((L, L), -1, dtype=np.int64))
    return spaces[L]


def _check_lattice(theta: ArrayLike, aptr: ArrayLike, alab: ArrayLike, pairs: ArrayLike, L: int):
    """float64 theta and int64 aptr, alab, pairs of a lattice's flat part vector, checked."""
    th = np.ascontiguousarray(theta, dtype=np.float64)
    ap = np.ascontiguousarray(aptr, dtype=np.int64)
    al = np.ascontiguousarray(alab, dtype=np.int64)
    pr = np.ascontiguousarray(pairs, dtype=np.int64).reshape(-1, 2)
    n = ap.shape[0] - 1
    if n < 1 or L < 1 or ap[0] != 0 or ap[-1] != al.shape[0] or (np.diff(ap) < 1).any():
        raise ValueError("a lattice needs n >= 1 tokens, each with at least one label (aptr from 0 to len(alab))")
    if (al.size and (al.min() < 0 or al.max() >= L)) or (pr.size and (pr.min() < 0 or pr.max() >= L)):
        raise ValueError(f"lattice labels and pairs must lie in 0..{L - 1}")
    size = al.shape[0] + pr.shape[0] + int(ap[1] - ap[0]) + int(ap[n] - ap[n - 1])
    if th.shape != (size,):
        raise ValueError(f"theta has shape {th.shape}, expected ({size},)")
    if not np.isfinite(th).all():
        raise ValueError("part scores must be finite")
    return th, ap, al, pr


def lattice_marginals(theta: ArrayLike, aptr: ArrayLike, alab: ArrayLike, pairs: ArrayLike,
                      L: int) -> tuple[float, NDArray[np.float64]]:
    """``(log Z, mu)`` of the chain restricted to a lattice (token t takes the labels
    ``alab[aptr[t]:aptr[t + 1]]``, distinct), its scores one flat vector: a node score per lattice
    entry, a score per pair of ``pairs`` (P, 2) (distinct; every other pair scores 0), a start score
    per label of the first token and a stop score per label of the last; mu in the same layout."""
    th, ap, al, pr = _check_lattice(theta, aptr, alab, pairs, L)
    tr, pidx = _lattice_work(L)
    out = np.empty(th.shape[0])
    return float(_lattice_marginals(th, ap, al, pr, tr, pidx, out)), out


def lattice_log_partition(theta: ArrayLike, aptr: ArrayLike, alab: ArrayLike, pairs: ArrayLike, L: int) -> float:
    """log Z of a lattice's flat part vector (see :func:`lattice_marginals`)."""
    th, ap, al, pr = _check_lattice(theta, aptr, alab, pairs, L)
    tr, pidx = _lattice_work(L)
    return float(_lattice_log_partition(th, ap, al, pr, tr, pidx))


def lattice_viterbi(theta: ArrayLike, aptr: ArrayLike, alab: ArrayLike, pairs: ArrayLike,
                    L: int) -> tuple[NDArray[np.int64], float]:
    """The best labelling (label ids, length n) of a lattice's flat part vector and its score."""
    th, ap, al, pr = _check_lattice(theta, aptr, alab, pairs, L)
    tr, pidx = _lattice_work(L)
    path = np.empty(ap.shape[0] - 1, dtype=np.int64)
    score = _lattice_viterbi(th, ap, al, pr, tr, pidx, path)
    return path, float(score)
