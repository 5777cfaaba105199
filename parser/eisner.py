"""First-order projective dependency parsing with Eisner's algorithm.

Four dynamic programs over one chart layout: the best tree (argmax, also
loss-augmented), the log-partition function (inside), the arc marginals
(inside-outside), and the arc max-marginals (the best tree through each
arc).  They serve every learner: a CRF needs ``inside_outside``, a
max-margin learner needs ``eisner_argmax_augmented`` with a per-arc cost,
a cascade's pruner ``max_marginals``.

Parts convention
----------------
``scores`` is an ``(n + 1, n + 1)`` float64 array indexed ``[head, modifier]``.
Position 0 is the artificial root and the words are 1..n, with n >= 1.
Column 0 (the root as a modifier) and the diagonal (self-loops) are never
read: they may hold any finite value or -inf.  Every other entry is a finite
arc score, or -inf for an arc that no tree may use.

A tree is an int64 array ``heads`` of length n + 1 with ``heads[0] == -1`` and
``heads[m]`` in 0..n the head of word m (m >= 1).

Tree spaces, chosen by ``root``:

* ``"multi"``: every projective tree rooted at 0; the root may have any
  number of children.
* ``"single"``: the projective trees in which the root has exactly one child.

Projective means that no two arcs cross when the root is drawn at position 0,
left of the words.

Chart layout (shared by all kernels)
------------------------------------
Eisner's items are indexed by their head, so each chart is a plain square
array.  For a span s < t:

* ``C[h, e]``: complete item with head h whose subtree covers h..e
  (``e > h``: right-facing, Eisner's C[s, t, ->]; ``e < h``: left-facing,
  C[s, t, <-]).  ``C[h, h] = 0``.
* ``I[h, m]``: incomplete item, the arc h -> m together with the material
  between h and m; indexed like ``scores``.
* ``L[s, t]`` (s < t): the score of the split shared by ``I[s, t]`` and
  ``I[t, s]``; they differ only by the arc score.
* ``CT = C.T``: a second copy of C, so that every inner loop walks along a
  row (contiguous memory).  Adjoint charts use the same trick.
"""

from __future__ import annotations

import numba
import numpy as np
from numpy.typing import ArrayLike, NDArray

from egnlp.parser.tree_checks import arc_inputs, augmented_scores, check_scores, solve

__all__ = [
    "eisner_argmax",
    "eisner_argmax_augmented",
    "inside",
    "inside_outside",
    "max_marginals",
    "tree_score",
]

# ---------------------------------------------------------------------------
# Kernel helpers: one split-point reduction, in each semiring
# ---------------------------------------------------------------------------


@numba.njit(cache=True, no_cpython_wrapper=True)
def _lse_pair(a, i, b, j, lo, hi, off):
    """log sum_{r=lo}^{hi-1} exp(a[i, r] + b[j, r + off]); -inf if all terms are -inf."""
    m = -np.inf
    for r in range(lo, hi):
        v = a[i, r] + b[j, r + off]
        if v > m:
            m = v
    if m == -np.inf:
        return m
    acc = 0.0
    for r in range(lo, hi):
        v = a[i, r] + b[j, r + off]
        if v > -np.inf:  # exp(-inf) adds 0: not computed (the arcs a pruner or the templates rule out)
            acc += np.exp(v - m)
    return m + np.log(acc)


@numba.njit(cache=True, no_cpython_wrapper=True)
def _max_pair(a, i, b, j, lo, hi, off):
    """(max, first argmax) over r in lo..hi-1 of a[i, r] + b[j, r + off]."""
    best = a[i, lo] + b[j, lo + off]
    arg = lo
    for r in range(lo + 1, hi):
        v = a[i, r] + b[j, r + off]
        if v > best:  # strict: ties go to the smallest split point
            best = v
            arg = r
    return best, arg


@numba.njit(cache=True, no_cpython_wrapper=True)
def lse_pair_adjoint(a, i, b, j, lo, hi, off, value, g, ga, gb):
    """Reverse-mode step of ``value = _lse_pair(a, i, b, j, lo, hi, off)``.

    With adjoint g of ``value``, each term's share g * exp(a + b - value) is
    added to ``ga[i, r]`` and ``gb[j, r + off]``.
    """
    for r in range(lo, hi):
        v = a[i, r] + b[j, r + off]
        if v > -np.inf:  # a share of 0 changes no adjoint: not computed
            p = g * np.exp(v - value)
            ga[i, r] += p
            gb[j, r + off] += p


# ---------------------------------------------------------------------------
# Kernels
# ---------------------------------------------------------------------------


@numba.njit(cache=True, no_cpython_wrapper=True)
def _max_pair_outside(a, i, b, j, lo, hi, off, o, oa, ob):
    """Outside step of ``max_r a[i, r] + b[j, r + off]`` in max-plus: with ``o`` the best score of a tree
    outside that item, each term's ``o`` plus the other half raises ``oa[i, r]`` and ``ob[j, r + off]``.
    Written with ``max`` rather than branches: the max-marginals of pt_bosque dev's pruner scores in 0.75
    of the time (median of 7 alternating rounds), the same bits."""
    for r in range(lo, hi):
        oa[i, r] = max(oa[i, r], o + b[j, r + off])
        ob[j, r + off] = max(ob[j, r + off], o + a[i, r])


@numba.njit(cache=True, no_cpython_wrapper=True)
def reduce_split(a, i, b, j, lo, hi, off, use_max):
    """The split-point reduction of one chart item in the chosen semiring: (value, best split point)
    in max-plus, (log-sum-exp, -1) in sum-product."""
    if use_max:
        return _max_pair(a, i, b, j, lo, hi, off)
    return _lse_pair(a, i, b, j, lo, hi, off), -1


@numba.njit(cache=True, no_cpython_wrapper=True)
def _fill(scores, single, use_max, C, CT, I, L, split_i, split_c):
    """Fill the charts of Eisner (1996) in log space, sum-product (inside) or max-plus (``use_max``).

    scores, C, CT, I, L: (n + 1, n + 1) float64; C, CT, I, L are overwritten.
    With ``use_max`` the best split points go to ``split_i`` (of L[s, t],
    s < t) and ``split_c`` (of C[h, e]), (n + 1, n + 1) int64, ties to the
    smallest split point.  Reads only entries of ``scores`` off the diagonal
    and outside column 0.  Returns log Z (or the best score) = C[0, n].
    """
    n1 = scores.shape[0]
    n = n1 - 1
    for k in range(n1):
        # Single-word complete items: empty subtree, log-score 0.
        C[k, k] = 0.0
        CT[k, k] = 0.0
    for w in range(1, n1):
        for s in range(n1 - w):
            t = s + w
            # L[s, t] = (+)_{s <= r < t} C[s, r] + C[t, r + 1]:
            # a right-complete half s..r meets a left-complete half r+1..t.
            if single and s == 0:
                # One root child: the root's half must be the empty C[0, 0].
                v, r = C[t, 1], 0
            elif scores[s, t] == -np.inf and (s == 0 or scores[t, s] == -np.inf):
                # Neither arc of the span may be used (a pruned sentence's far arcs): I[s, t] and I[t, s]
                # are -inf whatever L[s, t] is, and no tree's derivation or adjoint reads L[s, t].  The
                # tag-filtered scores of pt_bosque dev: inside-outside in 0.94 of the time, the same bits.
                v, r = -np.inf, s
            else:
                v, r = reduce_split(C, s, C, t, s, t, 1, use_max)
            L[s, t] = v
            if use_max:
                split_i[s, t] = r
            # I[s, t] = L[s, t] + scores[s, t]  (arc s -> t)
            I[s, t] = v + scores[s, t]
            # I[t, s] = L[s, t] + scores[t, s]  (arc t -> s); the root has no head.
            I[t, s] = v + scores[t, s] if s > 0 else -np.inf
            complete_items(I, C, CT, s, t, use_max, split_c)
    return C[0, n]


@numba.njit(cache=True, no_cpython_wrapper=True)
def complete_items(I, C, CT, s, t, use_max, split_c):
    """The two complete items of the span s < t from the incomplete ones (shared with the second-order
    chart of :mod:`egnlp.parser.eisner_siblings`, whose complete items are the same); ``split_c`` gets the best
    split points in max-plus."""
    # C[s, t] = (+)_{s < r <= t} I[s, r] + C[r, t]:
    # arc s -> r, then r's right-complete subtree r..t  (C[r, t] = CT[t, r]).
    v, r = reduce_split(I, s, CT, t, s + 1, t + 1, 0, use_max)
    C[s, t] = v
    CT[t, s] = v
    if use_max:
        split_c[s, t] = r
    # C[t, s] = (+)_{s <= r < t} C[r, s] + I[t, r]:
    # r's left-complete subtree s..r, then arc t -> r  (C[r, s] = CT[s, r]).
    v, r = reduce_split(CT, s, I, t, s, t, 0, use_max)
    C[t, s] = v
    CT[s, t] = v
    if use_max:
        split_c[t, s] = r


@numba.njit(cache=True, no_cpython_wrapper=True)
def complete_items_adjoint(I, C, CT, s, t, gC, gCT, gI):
    """Reverse-mode step of :func:`complete_items` in sum-product: the adjoints of C[t, s] and C[s, t]
    (gC plus the transposed copy's gCT) passed on to the items they sum."""
    # C[t, s] = logsum_r C[r, s] + I[t, r]
    g = gC[t, s] + gCT[s, t]
    if g != 0.0 and C[t, s] > -np.inf:
        lse_pair_adjoint(CT, s, I, t, s, t, 0, C[t, s], g, gCT, gI)
    # C[s, t] = logsum_r I[s, r] + C[r, t]
    g = gC[s, t] + gCT[t, s]
    if g != 0.0 and C[s, t] > -np.inf:
        lse_pair_adjoint(I, s, CT, t, s + 1, t + 1, 0, C[s, t], g, gI, gCT)


@numba.njit(cache=True, no_cpython_wrapper=True)
def _charts(n1):
    """Uninitialised charts C, CT, I, L of a sentence with n1 - 1 words, each (n1, n1) float64."""
    return np.empty((n1, n1)), np.empty((n1, n1)), np.empty((n1, n1)), np.empty((n1, n1))


@numba.njit(cache=True)
def _inside_kernel(scores, single):
    """log Z over the tree space; scores (n + 1, n + 1) float64."""
    n1 = scores.shape[0]
    C, CT, I, L = _charts(n1)
    no_split = np.empty((0, 0), dtype=np.int64)
    return _fill(scores, single, False, C, CT, I, L, no_split, no_split)


@numba.njit(cache=True)
def _inside_outside_kernel(scores, single):
    """(log Z, mu) with mu[h, m] = P(head of m is h), both (n + 1, n + 1) float64.

    The outside pass is the reverse-mode derivative of the inside ``_fill``: the
    adjoint of an item is d log Z / d item, the probability that a tree uses
    it, so adjoints stay in linear space in [0, 1].  The adjoint of I[h, m]
    is the marginal of arc h -> m (Collins et al. 2008, Sec. 4 and 7.2).
    """
    n1 = scores.shape[0]
    n = n1 - 1
    C, CT, I, L = _charts(n1)
    no_split = np.empty((0, 0), dtype=np.int64)
    log_z = _fill(scores, single, False, C, CT, I, L, no_split, no_split)
    # Adjoint of C[h, e] is gC[h, e] + gCT[e, h] (two accumulators, both row-major).
    gC = np.zeros((n1, n1))
    gCT = np.zeros((n1, n1))
    gI = np.zeros((n1, n1))
    if log_z == -np.inf:
        return log_z, gI
    gC[0, n] = 1.0
    # Visit items in the reverse order of _fill: wider spans first, and
    # within a span the complete items before the incomplete ones they use.
    for w in range(n, 0, -1):
        for s in range(n1 - w):
            t = s + w
            complete_items_adjoint(I, C, CT, s, t, gC, gCT, gI)
            # I[s, t] and I[t, s] both add an arc score to L[s, t].
            g = gI[s, t] + gI[t, s]
            if g != 0.0 and L[s, t] > -np.inf:
                if single and s == 0:
                    gC[t, 1] += g
                else:
                    lse_pair_adjoint(C, s, C, t, s, t, 1, L[s, t], g, gC, gC)
    # d log Z / d scores[h, m] = adjoint of I[h, m]; the ignored entries get 0.
    for k in range(n1):
        gI[k, 0] = 0.0
        gI[k, k] = 0.0
    return log_z, gI


@numba.njit(cache=True)
def _max_marginals_kernel(scores, single):
    """(best score, mm) with mm[h, m] = exp(best score of a tree with the arc h -> m - best score), in
    [0, 1]: 1 on the arcs of a best tree, 0 where no tree with a finite score has the arc.

    The outside pass mirrors :func:`_inside_outside_kernel`'s in max-plus: the outside value of an item is
    the best score of the rest of a tree that uses it, so an arc's best tree scores I[h, m] plus the
    outside value of I[h, m] (Rush and Petrov 2012 prune with these max-marginals).  No exponentials but
    those of the result: about half the time of inside-outside.
    """
    n1 = scores.shape[0]
    n = n1 - 1
    C, CT, I, L = _charts(n1)
    split_i = np.empty((n1, n1), dtype=np.int64)
    split_c = np.empty((n1, n1), dtype=np.int64)
    best = _fill(scores, single, True, C, CT, I, L, split_i, split_c)
    mm = np.zeros((n1, n1))
    if best == -np.inf:
        return best, mm
    # Outside value of C[h, e] is max(oC[h, e], oCT[e, h]) (two accumulators, both row-major).
    oC = np.full((n1, n1), -np.inf)
    oCT = np.full((n1, n1), -np.inf)
    oI = np.full((n1, n1), -np.inf)
    oC[0, n] = 0.0
    for w in range(n, 0, -1):
        for s in range(n1 - w):
            t = s + w
            # C[t, s] = max_r C[r, s] + I[t, r]
            o = max(oC[t, s], oCT[s, t])
            if o > -np.inf and C[t, s] > -np.inf:
                _max_pair_outside(CT, s, I, t, s, t, 0, o, oCT, oI)
            # C[s, t] = max_r I[s, r] + C[r, t]
            o = max(oC[s, t], oCT[t, s])
            if o > -np.inf and C[s, t] > -np.inf:
                _max_pair_outside(I, s, CT, t, s + 1, t + 1, 0, o, oI, oCT)
            # I[s, t] and I[t, s] both add an arc score to L[s, t].
            o = oI[s, t] + scores[s, t]
            if s > 0 and oI[t, s] + scores[t, s] > o:
                o = oI[t, s] + scores[t, s]
            if o > -np.inf and L[s, t] > -np.inf:
                if single and s == 0:
                    oC[t, 1] = max(oC[t, 1], o)
                else:
                    _max_pair_outside(C, s, C, t, s, t, 1, o, oC, oC)
    for h in range(n1):
        for m in range(1, n1):
            v = I[h, m] + oI[h, m]
            if h != m and v > -np.inf:
                mm[h, m] = np.exp(min(v - best, 0.0))
    return best, mm


@numba.njit(cache=True)
def _argmax_kernel(scores, single):
    """(best score, heads) by Eisner 1996 in the max-plus semiring.

    scores: (n + 1, n + 1) float64.  heads: (n + 1,) int64, heads[0] = -1.
    Ties go to the smallest split point.  If no tree has a finite score the
    returned score is -inf and heads is meaningless.
    """
    n1 = scores.shape[0]
    n = n1 - 1
    C, CT, I, L = _charts(n1)
    split_i = np.zeros((n1, n1), dtype=np.int64)  # best r for L[s, t], s < t
    split_c = np.zeros((n1, n1), dtype=np.int64)  # best r for C[h, e]
    _fill(scores, single, True, C, CT, I, L, split_i, split_c)

    # Backtrack from C[0, n] with an explicit stack of (is_complete, h, e).
    # A derivation has n incomplete and 2n + 1 complete items.
    heads = np.full(n1, -1, dtype=np.int64)
    cap = 3 * n1 + 1
    st_c = np.empty(cap, dtype=np.bool_)
    st_h = np.empty(cap, dtype=np.int64)
    st_e = np.empty(cap, dtype=np.int64)
    st_c[0], st_h[0], st_e[0] = True, 0, n
    top = 1
    while top > 0:
        top -= 1
        h, e = st_h[top], st_e[top]
        if st_c[top]:
            if h == e:
                continue
            r = split_c[h, e]
            # right: I[h, r] + C[r, e]; left: C[r, e] + I[h, r]; same two items.
            st_c[top], st_h[top], st_e[top] = False, h, r
            st_c[top + 1], st_h[top + 1], st_e[top + 1] = True, r, e
            top += 2
        else:
            heads[e] = h
            s, t = min(h, e), max(h, e)
            r = split_i[s, t]
            # I[h, e] = C[s, r] + C[t, r + 1] + arc
            st_c[top], st_h[top], st_e[top] = True, s, r
            st_c[top + 1], st_h[top + 1], st_e[top + 1] = True, t, r + 1
            top += 2
    return C[0, n], heads


# ---------------------------------------------------------------------------
# Validating wrappers
# ---------------------------------------------------------------------------


def eisner_argmax(scores: ArrayLike, root: str = "multi") -> NDArray[np.int64]:
    """Highest-scoring projective tree (Eisner 1996).

    Args:
        scores: (n + 1, n + 1) arc scores [head, modifier] (see module docstring).
        root: "multi" (any number of root children) or "single" (exactly one).

    Returns:
        heads: (n + 1,) int64, heads[0] = -1.  Ties between trees are broken
        deterministically (toward the smallest split point in the chart).

    Raises:
        ValueError: invalid input, or every tree has score -inf.
    """
    return solve(_argmax_kernel, arc_inputs(scores, root))[1]


def eisner_argmax_augmented(
    scores: ArrayLike, cost: ArrayLike, root: str = "multi"
) -> NDArray[np.int64]:
    """Loss-augmented argmax: the best tree under scores + cost (Eisner 1996).

    Args:
        scores: (n + 1, n + 1) arc scores [head, modifier].
        cost: (n + 1, n + 1) per-arc cost, same indexing; e.g. Hamming cost
            cost[h, m] = 1 if h != gold_heads[m] else 0.
        root: "multi" or "single".

    Returns:
        heads: (n + 1,) int64 maximising tree_score(scores + cost, heads).
    """
    return eisner_argmax(augmented_scores(scores, cost), root)


def tree_score(scores: ArrayLike, heads: ArrayLike) -> float:
    """Sum of scores[heads[m], m] over the words m = 1..n.

    Args:
        scores: (n + 1, n + 1) arc scores [head, modifier].
        heads: (n + 1,) integer heads, heads[0] = -1, heads[m] in 0..n and
            heads[m] != m.  Acyclicity and projectivity are not checked.
    """
    arr = check_scores(scores)
    h = np.asarray(heads)
    n1 = arr.shape[0]
    if h.shape != (n1,):
        raise ValueError(f"heads must have shape ({n1},) to match scores, got {h.shape}")
    if not np.issubdtype(h.dtype, np.integer):
        raise ValueError(f"heads must hold integers, got dtype {h.dtype}")
    if h[0] != -1:
        raise ValueError(f"heads[0] must be -1 (the root has no head), got {h[0]}")
    words = np.arange(1, n1)
    if ((h[1:] < 0) | (h[1:] >= n1) | (h[1:] == words)).any():
        raise ValueError("heads[m] must be in 0..n and differ from m for every word m")
    return float(arr[h[1:], words].sum())


def inside(scores: ArrayLike, root: str = "multi") -> float:
    """log Z: log of the sum over the tree space of exp(tree score) (Eisner 1996).

    Computed in log space, so scores of magnitude 1e3 and sentences of
    hundreds of words neither overflow nor underflow.  Returns -inf when every
    tree has score -inf.

    Args:
        scores: (n + 1, n + 1) arc scores [head, modifier].
        root: "multi" or "single".
    """
    return float(_inside_kernel(*arc_inputs(scores, root)))


def max_marginals(scores: ArrayLike, root: str = "multi") -> tuple[float, NDArray[np.float64]]:
    """The best tree's score and each arc's max-marginal over projective trees, relative to it.

    Args:
        scores: (n + 1, n + 1) arc scores [head, modifier].
        root: "multi" or "single".

    Returns:
        (best, mm): mm is (n + 1, n + 1) float64 with mm[h, m] = exp(s(h, m) - best), s(h, m) the
        score of the best tree whose head of m is h: 1 on a best tree's arcs, 0 where no tree with a
        finite score has the arc, column 0 and the diagonal 0.

    Raises:
        ValueError: invalid input, or every tree has score -inf.
    """
    best, mm = solve(_max_marginals_kernel, arc_inputs(scores, root), "; max-marginals are undefined")
    return float(best), mm


def inside_outside(
    scores: ArrayLike, root: str = "multi"
) -> tuple[float, NDArray[np.float64]]:
    """log Z and arc marginals by inside-outside over projective trees.

    Eisner 1996 for the inside chart; the outside pass is its reverse-mode
    derivative (Collins et al. 2008, Sec. 4 and 7.2).

    Args:
        scores: (n + 1, n + 1) arc scores [head, modifier].
        root: "multi" or "single".

    Returns:
        (log_z, mu): mu is (n + 1, n + 1) float64 with mu[h, m] = P(head of m
        is h) = d log Z / d scores[h, m]; column 0 and the diagonal are 0 and
        every column m >= 1 sums to 1.

    Raises:
        ValueError: invalid input, or every tree has score -inf.
    """
    log_z, mu = solve(_inside_outside_kernel, arc_inputs(scores, root), "; marginals are undefined")
    return float(log_z), mu
