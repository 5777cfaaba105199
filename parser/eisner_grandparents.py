"""Third-order projective dependency parsing with sibling and grandparent parts.

The grand-sibling dynamic program of Koo and Collins (2010, Sec. 4, Model 1,
"Efficient third-order dependency parsers"): every item of the second-order
chart is also indexed by the head's own head g, so the parts of an arc may
look at its grandparent.  The grand-sibling score of the arc h -> m, with s
the previous sibling of m and g the head of h, is factored as

    score(g, h, s, m) = theta(h, s, m) + G[g, h, m],

so a tree scores the sum of its *sibling parts* (h, s, m) (McDonald and
Pereira 2006, the parts and flat layout of :mod:`egnlp.parser.eisner_siblings`) plus
the sum of its *grandparent parts* (g, h, m) (Carreras 2007): one for every
arc h -> m with h >= 1, g = heads[h].  The root's own arcs (h = 0) have no
grandparent part.  Three dynamic programs share one chart layout: the best
tree (argmax), the log-partition function (inside), and the part marginals
(inside-outside, as the reverse-mode derivative of inside).  All run in
O(n^4) time and O(K n) chart memory (K the kept arcs, n^2 with every arc
kept), in log space.

Parts convention
----------------
Sentences and trees as in :mod:`egnlp.parser.eisner_siblings` (``size = n + 1``
positions, the root at 0; ``heads`` of length ``size``, ``heads[0] == -1``).

* Sibling parts: ``theta``, a flat float64 vector of length
  ``n_sibling_parts(size)`` laid out by ``sibling_offsets(size)``, exactly as
  in :mod:`egnlp.parser.eisner_siblings` (``tree_parts``, ``sibling_indicator``).
* Grandparent parts: ``G``, a float64 array of shape (size, size, size)
  indexed ``G[g, h, m]``.  ``grand_parts`` lists the (g, h, m) of a tree,
  ``grand_indicator`` is their 0/1 array.  Entries that no projective tree
  uses (h = 0, m = 0, h = m, g = h, g = m, or g strictly between h and m) are
  never read: they may hold any finite value or -inf.

Entries of ``theta`` and ``G`` are finite, or -inf for a part no tree may
use.  A tree's score is ``theta[tree_parts(heads)].sum() +
G[tuple(grand_parts(heads).T)].sum()`` (indexing rather than a product with
the indicators, since -inf * 0 is NaN).

Tree spaces, chosen by ``root``: the projective trees of :mod:`egnlp.parser.eisner`,
with any number of root children (``"multi"``) or exactly one (``"single"``).

Chart layout (shared by all kernels)
------------------------------------
The items are written below as entries of (size, size, size) arrays.  The
first index is the head of the item's head: a position g outside the item's
span (g < s or g > t for the span s..t).  The root has no head: its items
(span 0..t) use the slot g = 0, which no real grandparent of that span can
take.

* ``C[g, h, e]``: complete item with head h whose subtree covers h..e
  (``e > h``: right-facing; ``e < h``: left-facing), h's head being g.
  ``C[g, h, h] = 0``.
* ``I[g, h, m]``: incomplete item, the arc h -> m (h's head being g)
  together with the material between h and m and with h's modifiers between
  h and m.  The last parts it adds are the sibling and grandparent parts of
  the arc h -> m.
* ``S[h, s, t]`` (1 <= s < t, h outside s..t): sibling item, a
  right-complete half of s and a left-complete half of t meeting in between,
  both with head h: s and t are adjacent modifiers of h, with no arc between
  them yet.
* ``CT[g, e, h] = C[g, h, e]`` and ``ST[h, t, s] = S[h, s, t]``: second
  copies, so that every inner loop walks along a row (contiguous memory).
  Adjoint charts use the same trick.

Only the items whose (g, h) is a kept arc g -> h (or the root's g = h = 0)
can be finite, so the charts keep those rows only (``_chart_index``): the
row of C[g, h, :], I[g, h, :], S[g, h, :] and ST[g, h, :] is the place j of
the arc in the kept heads of h (g = hidx[j]), the root's items the last row
of C and I, each row of length size.  CT[g, e, h] is CT[e, q], q the place
of the arc g -> h among the kept modifiers of g, so the complete items'
reductions walk the kept modifiers r of their head along a row of CT
(``_reduce_gather``) and skip the others' terms, which are -inf.  Inside
and argmax hold 5 K + 2 rows of size float64 instead of 5 size^3: for the
longest sentence of pt_bosque dev (132 words, 1,063 arcs kept by the
cascade of a grand-sibling model) 5.7 MB instead of 94 MB, all of which the
dense charts set to -inf (C, CT, I) or wrote (S, ST); over the whole dev
set 0.30 GB instead of 1.9 GB allocated.  Parsing that dev set copied 8 times
(``--jobs 1``) takes 17.2 CPU s instead of 18.6 (median of 6 alternating
pairs: 0.95) and peaks at 218 MB instead of 271; training the es model with
grandparent parts peaks as before (648 and 653 MB: its peak lies elsewhere),
with 1.1 system CPU s instead of 5.4 (fewer pages first touched).

Recurrences (in the semiring (+) = log-sum-exp or max, (x) = +), for s < t
and g outside s..t:

* ``S[h, s, t] = (+)_{s <= u < t} C[h, s, u] + C[h, t, u + 1]``
* ``I[g, s, t] = G[g, s, t] + (C[s, t, s + 1] + theta(s, none, t)
  (+) (+)_{s < r < t} I[g, s, r] + S[s, r, t] + theta(s, r, t))``
* ``I[g, t, s] = G[g, t, s] + (C[t, s, t - 1] + theta(t, none, s)
  (+) (+)_{s < r < t} S[t, s, r] + I[g, t, r] + theta(t, r, s))``
* ``C[g, s, t] = (+)_{s < r <= t} I[g, s, r] + C[s, r, t]``
* ``C[g, t, s] = (+)_{s <= r < t} C[t, r, s] + I[g, t, r]``

The modifiers' items (C[s, ...], C[t, ...], S[s, ...], S[t, ...]) carry the
arc's head as their grandparent index.  The root's arcs (s = 0) use g = 0
and add no G term, and the root has no left-facing items.  log Z (or the
best score) is ``C[0, 0, n]``.  With ``root="single"`` the root's arcs keep
only their "none" term, so the root has exactly one child.

Each arc's incomplete item reduces over about n previous siblings for each
of about n grandparents, so time is O(n^4).  Inside and argmax hold five
charts (5 K + 2 rows: 41 MB at n = 100 with every arc kept), the marginals
ten.
"""

from __future__ import annotations

import numba
import numpy as np
from numpy.typing import ArrayLike, NDArray

from egnlp.features.kept_parts import KeptParts, grand_cells, kept_parts, tree_grand_slots
from egnlp.parser.cascade import check_keep
from egnlp.parser.eisner_siblings import check_theta
from egnlp.parser.tree_checks import check_tree, float_scores, is_single_root, solve

__all__ = [
    "grand_argmax",
    "grand_indicator",
    "grand_log_partition",
    "grand_marginals",
    "grand_parts",
]


# ---------------------------------------------------------------------------
# Kernel helpers: one reduction over a row pair, in each semiring
# ---------------------------------------------------------------------------

# log of the smallest normal float64, about -708.4: exp of anything below is subnormal or 0
_TINY = -708.0


@numba.njit(cache=True)
def _lse_row(first, x, y, lo, hi, shift):
    """log(exp(first) + sum_{r=lo}^{hi-1} exp(x[r] + y[r + shift])); -inf if all terms are -inf.

    x, y: 1-D float64 rows.  ``first`` is a term outside the rows (-inf for none).
    """
    m = first
    for r in range(lo, hi):
        v = x[r] + y[r + shift]
        if v > m:
            m = v
    if m == -np.inf:
        return m
    # Terms below exp(-708) are skipped: they underflow to subnormals (a slow path of exp) and are
    # too small to change a sum that reaches 1 at the maximal term.
    acc = 0.0
    d = first - m
    if d > _TINY:
        acc = np.exp(d)
    for r in range(lo, hi):
        d = x[r] + y[r + shift] - m
        if d > _TINY:
            acc += np.exp(d)
    return m + np.log(acc)


@numba.njit(cache=True)
def _max_row(first, x, y, lo, hi, shift):
    """(max, argmax) of the terms of ``_lse_row``; argmax -1 stands for ``first``.

    Ties go to ``first``, then to the smallest r.
    """
    best = first
    arg = -1
    for r in range(lo, hi):
        v = x[r] + y[r + shift]
        if v > best:
            best = v
            arg = r
    return best, arg


@numba.njit(cache=True)
def _reduce_row(first, x, y, lo, hi, shift, use_max):
    """One item's reduction in the chosen semiring: (value, argmax or -1 for ``first``) in
    max-plus, (log-sum-exp, -1) in sum-product."""
    if use_max:
        return _max_row(first, x, y, lo, hi, shift)
    return _lse_row(first, x, y, lo, hi, shift), -1


@numba.njit(cache=True)
def _lse_row_adjoint(x, y, lo, hi, shift, c, g, gx, gy):
    """Reverse-mode step of the row terms of a log-sum-exp item.

    With the item's adjoint g and ``c`` = (constant added to the reduction) -
    (item value), each term's share g * exp(x[r] + y[r + shift] + c) is
    added to ``gx[r]`` and ``gy[r + shift]``; the caller handles ``first``.
    """
    for r in range(lo, hi):
        d = x[r] + y[r + shift] + c
        if d > _TINY:
            p = g * np.exp(d)
            gx[r] += p
            gy[r + shift] += p


# The complete items' reductions run over the kept modifiers r of a head only, the terms
# x[idx[q]] + y[q] for q in lo..hi - 1 (idx[q] = r increasing): x a row over positions, y a compact row
# of CT.  The terms they skip are those of arcs not kept, -inf, which no maximum, log-sum-exp or adjoint
# takes, so the results are those of the same reductions over every position.

@numba.njit(cache=True)
def _lse_gather(x, y, idx, lo, hi):
    """log(sum_{q=lo}^{hi-1} exp(x[idx[q]] + y[q])); -inf if all terms are -inf."""
    m = -np.inf
    for q in range(lo, hi):
        v = x[idx[q]] + y[q]
        if v > m:
            m = v
    if m == -np.inf:
        return m
    acc = 0.0
    for q in range(lo, hi):
        d = x[idx[q]] + y[q] - m
        if d > _TINY:
            acc += np.exp(d)
    return m + np.log(acc)


@numba.njit(cache=True)
def _max_gather(x, y, idx, lo, hi):
    """(max, argmax r = idx[q]) of the terms of ``_lse_gather``; (-inf, -1) if all are -inf.  Ties go to
    the smallest r."""
    best = -np.inf
    arg = -1
    for q in range(lo, hi):
        v = x[idx[q]] + y[q]
        if v > best:
            best = v
            arg = idx[q]
    return best, arg


@numba.njit(cache=True)
def _reduce_gather(x, y, idx, lo, hi, use_max):
    """``_max_gather``'s or ``_lse_gather``'s value."""
    if use_max:
        return _max_gather(x, y, idx, lo, hi)[0]
    return _lse_gather(x, y, idx, lo, hi)


@numba.njit(cache=True)
def _lse_gather_adjoint(x, y, idx, lo, hi, c, g, gx, gy):
    """``_lse_row_adjoint`` of the terms of ``_lse_gather``: g * exp(x[idx[q]] + y[q] + c) added to
    gx[idx[q]] and gy[q]."""
    for q in range(lo, hi):
        d = x[idx[q]] + y[q] + c
        if d > _TINY:
            p = g * np.exp(d)
            gx[idx[q]] += p
            gy[q] += p


@numba.njit(cache=True)
def _span(idx, lo, hi, a, b):
    """(qa, qb): the q in lo..hi - 1 with a <= idx[q] < b, idx increasing on lo..hi - 1."""
    qa = lo
    while qa < hi and idx[qa] < a:
        qa += 1
    qb = qa
    while qb < hi and idx[qb] < b:
        qb += 1
    return qa, qb


@numba.njit(cache=True)
def _right_siblings(b, st, theta, o, s, t):
    """b[r] = S[s, r, t] + theta(s, r, t) for s < r < t: the part of the arc s -> t after sibling r,
    without its head's own incomplete item.  st: the row ST[s, t, :]; o = off[s, t]."""
    for r in range(s + 1, t):
        b[r] = st[r] + theta[o - s + r]


@numba.njit(cache=True)
def _left_siblings(b, s_row, theta, o, s, t):
    """b[r] = S[t, s, r] + theta(t, r, s) for s < r < t (arc t -> s after sibling r).  s_row: the row
    S[t, s, :]; o = off[t, s]."""
    for r in range(s + 1, t):
        b[r] = s_row[r] + theta[o + t - r]


# ---------------------------------------------------------------------------
# Kernels
# ---------------------------------------------------------------------------


@numba.njit(cache=True)
def _chart_index(hptr, hidx):
    """(row, mptr, midx, col): where the compact charts keep each item (module docstring).

    hptr, hidx: the kept heads of each modifier (:func:`~egnlp.features.kept_parts.kept_heads`), K =
    hptr[-1] kept arcs.  row (n + 1, n + 1) int64: row[g, h] = j for the kept arc g -> h = (hidx[j],
    h), K for the root's items (g = h = 0), -1 else.  mptr, midx: the kept modifiers of each head h,
    midx[mptr[h]:mptr[h + 1]] in increasing order; col (K,) int64: the place q of the arc j in them.
    """
    n1 = hptr.shape[0] - 1
    k = hptr[n1]
    row = np.full((n1, n1), -1, dtype=np.int64)
    row[0, 0] = k
    mptr = np.zeros(n1 + 1, dtype=np.int64)
    for j in range(k):
        mptr[hidx[j] + 1] += 1
    for h in range(n1):
        mptr[h + 1] += mptr[h]
    nxt = mptr[:n1].copy()
    midx = np.empty(k, dtype=np.int64)
    col = np.empty(k, dtype=np.int64)
    for m in range(1, n1):
        for j in range(hptr[m], hptr[m + 1]):
            h = hidx[j]
            row[h, m] = j
            midx[nxt[h]] = m
            col[j] = nxt[h]
            nxt[h] += 1
    return row, mptr, midx, col


@numba.njit(cache=True)
def _charts(hptr, col):
    """Compact charts C, CT, I, S, ST of the kept arcs (module docstring), K = hptr[-1]: C and I (K + 1,
    n + 1), S and ST (K, n + 1), CT (n + 1, K) float64.

    C and CT hold 0 on the empty complete items C[g, h, h]; every other entry of C, CT and I starts at
    -inf and is overwritten by ``_fill`` where it is defined (entries whose grandparent lies inside
    their span stay -inf).  S and ST are not set: a sibling item is read only in a term with I[g, h,
    r], which is -inf unless the sibling r's arc h -> r is kept, and then ``_fill`` has written S[h, .,
    .] for r (any value plus -inf is -inf or NaN, which no maximum, log-sum-exp or adjoint takes).
    """
    n1 = hptr.shape[0] - 1
    k = hptr[n1]
    C = np.full((k + 1, n1), -np.inf)
    CT = np.full((n1, k), -np.inf)
    for m in range(1, n1):
        for j in range(hptr[m], hptr[m + 1]):
            C[j, m] = 0.0
            CT[m, col[j]] = 0.0
    C[k, 0] = 0.0
    return C, CT, np.full((k + 1, n1), -np.inf), np.empty((k, n1)), np.empty((k, n1))


@numba.njit(cache=True)
def _fill(theta, off, G, goff, single, use_max, keep, hptr, hidx, index, charts):
    """Fill the grand-sibling charts of Koo and Collins (2010) in log space, sum-product or max-plus.

    theta: (n_parts,) float64 sibling-part scores; off: (n + 1, n + 1) int64
    from ``sibling_offsets``; G: float64 grandparent scores, one per slot of
    the pruned layout of ``keep`` (:mod:`egnlp.features.kept_parts`): the part
    (g, h, m) of the j-th kept head g = hidx[j] of h is
    G[goff[h, m] + j - hptr[h]].  ``keep`` (n + 1, n + 1) uint8: the arcs [head, modifier]
    a tree may use; ``hptr``, ``hidx``: the kept heads of each modifier m,
    ``hidx[hptr[m]:hptr[m + 1]]`` in increasing order (:func:`kept_heads`).  ``index``: ``_chart_index``;
    ``charts``: C, CT, I, S, ST from ``_charts``, overwritten.  The argmax's split points are not kept:
    ``_backtrack`` recomputes them along the best derivation.  Only
    the items of kept arcs are filled, each for the kept heads of its head
    (its grandparents), so the work grows with the kept arcs; the others stay
    -inf.  Returns log Z (or the best score) = C[0, 0, n].
    """
    row, mptr, midx, col = index
    C, CT, I, S, ST = charts
    n1 = keep.shape[0]
    n = n1 - 1
    root = hptr[n1]
    b = np.empty(n1)
    for w in range(1, n1):
        for s in range(n1 - w):
            t = s + w
            # The grandparents of an item headed by h are the kept heads of h outside s..t (row j of
            # the arc hidx[j] -> h), or the slot 0 alone for the root's items (s = 0, the last row).
            if s > 0:
                # S[h, s, t] = (+)_u C[h, s, u] + C[h, t, u + 1] for every common head h.
                for j in range(hptr[s], hptr[s + 1]):
                    h = hidx[j]
                    if s <= h <= t or keep[h, t] == 0:
                        continue
                    jt = row[h, t]
                    v, _ = _reduce_row(-np.inf, C[j], C[jt], s, t, 1, use_max)
                    S[j, t] = v
                    ST[jt, s] = v
            # I[g, s, t] (arc s -> t): t is s's first right modifier,
            #   C[s, t, s + 1] + theta(s, none, t),
            # or follows the previous one r, s < r < t:
            #   I[g, s, r] + S[s, r, t] + theta(s, r, t);
            # plus G[g, s, t].  S[s, r, t] = ST[s, t, r].  A single root keeps only "none".
            if keep[s, t]:
                o = off[s, t]
                a = row[s, t]
                first = C[a, s + 1] + theta[o]
                siblings = not (single and s == 0)
                if siblings:
                    _right_siblings(b, ST[a], theta, o, s, t)
                if s == 0:
                    I[root, t] = _reduce_row(first, I[root], b, 1, t, 0, use_max)[0] if siblings else first
                else:
                    for j in range(hptr[s], hptr[s + 1]):
                        g = hidx[j]
                        if s <= g <= t:
                            continue
                        v, _ = _reduce_row(first, I[j], b, s + 1, t, 0, use_max)
                        I[j, t] = v + G[goff[s, t] + j - hptr[s]]
            # I[g, t, s] (arc t -> s): s is t's first left modifier,
            #   C[t, s, t - 1] + theta(t, none, s),
            # or follows the previous one r, s < r < t:
            #   S[t, s, r] + I[g, t, r] + theta(t, r, s);
            # plus G[g, t, s].  The root has no head: nothing for s = 0.
            if s > 0 and keep[t, s]:
                o = off[t, s]
                a = row[t, s]
                first = C[a, t - 1] + theta[o]
                _left_siblings(b, S[a], theta, o, s, t)
                for j in range(hptr[t], hptr[t + 1]):
                    g = hidx[j]
                    if s <= g <= t:
                        continue
                    v, _ = _reduce_row(first, I[j], b, s + 1, t, 0, use_max)
                    I[j, s] = v + G[goff[t, s] + j - hptr[t]]
            # C[g, s, t]: the last right modifier r of s with r's right half, whose head is s;
            # C[g, t, s]: the last left modifier r of t with r's left half.  C[s, r, t] = CT[s, t, r],
            # kept in CT's row t at the place of the arc s -> r among s's kept modifiers.
            if s == 0:
                lo, hi = _span(midx, mptr[0], mptr[1], 1, t + 1)
                C[root, t] = _reduce_gather(I[root], CT[t], midx, lo, hi, use_max)
                continue
            lo, hi = _span(midx, mptr[s], mptr[s + 1], s + 1, t + 1)
            for j in range(hptr[s], hptr[s + 1]):
                g = hidx[j]
                if s <= g <= t:
                    continue
                v = _reduce_gather(I[j], CT[t], midx, lo, hi, use_max)
                C[j, t] = v
                CT[t, col[j]] = v
            lo, hi = _span(midx, mptr[t], mptr[t + 1], s, t)
            for j in range(hptr[t], hptr[t + 1]):
                g = hidx[j]
                if s <= g <= t:
                    continue
                v = _reduce_gather(I[j], CT[s], midx, lo, hi, use_max)
                C[j, s] = v
                CT[s, col[j]] = v
    return C[root, n]


@numba.njit(cache=True)
def _inside_kernel(theta, off, G, goff, single, keep, hptr, hidx):
    """log Z over the tree space; theta (n_parts,), off (n + 1, n + 1) int64, G and goff, the kept arcs as
    ``_fill`` takes them."""
    index = _chart_index(hptr, hidx)
    charts = _charts(hptr, index[3])
    return _fill(theta, off, G, goff, single, False, keep, hptr, hidx, index, charts)


@numba.njit(cache=True)
def _outside_pass(theta, off, G, goff, single, keep, hptr, hidx, index, charts):
    """(mu_sib, mu_grand): the adjoints of the filled inside ``charts`` (of ``_fill``, sum-product, log Z
    finite), arguments as ``_fill`` takes them.  mu_sib (n_parts,) float64 laid out like theta, mu_grand
    like G (a slot whose g lies inside its arc's span gets 0).  The adjoint charts have the layout of
    the charts."""
    row, mptr, midx, col = index
    C, CT, I, S, ST = charts
    n1 = keep.shape[0]
    n = n1 - 1
    root = hptr[n1]
    gtheta = np.zeros(theta.shape[0])
    # The adjoint of C[g, h, e] is gC[g, h, e] + gCT[g, e, h]; of S[h, s, t], gS[h, s, t] + gST[h, t, s].
    gC = np.zeros(C.shape)
    gCT = np.zeros(CT.shape)
    gI = np.zeros(I.shape)
    gS = np.zeros(S.shape)
    gST = np.zeros(ST.shape)
    gC[root, n] = 1.0
    b = np.empty(n1)
    gb = np.zeros(n1)  # the sibling terms' shares of one arc, summed over its grandparents
    # Visit items in the reverse order of _fill: wider spans first, and within
    # a span the complete items, then the incomplete ones, then the sibling
    # items (each item after all the items that use it).
    for w in range(n, 0, -1):
        for s in range(n1 - w):
            t = s + w
            # C[g, t, s] = logsum_r CT[t, s, r] + I[g, t, r];  C[g, s, t] = logsum_r I[g, s, r] + CT[s, t, r]
            if s == 0:
                a = gC[root, t]
                v = C[root, t]
                if a != 0.0 and v > -np.inf:
                    lo, hi = _span(midx, mptr[0], mptr[1], 1, t + 1)
                    _lse_gather_adjoint(I[root], CT[t], midx, lo, hi, -v, a, gI[root], gCT[t])
            else:
                lo, hi = _span(midx, mptr[t], mptr[t + 1], s, t)
                for j in range(hptr[t], hptr[t + 1]):
                    g = hidx[j]
                    if s <= g <= t:
                        continue
                    a = gC[j, s] + gCT[s, col[j]]
                    v = C[j, s]
                    if a != 0.0 and v > -np.inf:
                        _lse_gather_adjoint(I[j], CT[s], midx, lo, hi, -v, a, gI[j], gCT[s])
                lo, hi = _span(midx, mptr[s], mptr[s + 1], s + 1, t + 1)
                for j in range(hptr[s], hptr[s + 1]):
                    g = hidx[j]
                    if s <= g <= t:
                        continue
                    a = gC[j, t] + gCT[t, col[j]]
                    v = C[j, t]
                    if a != 0.0 and v > -np.inf:
                        _lse_gather_adjoint(I[j], CT[t], midx, lo, hi, -v, a, gI[j], gCT[t])
            # I[g, t, s] = G[g, t, s] + (C[t, s, t - 1] + theta(t, none, s)
            #              (+) logsum_r S[t, s, r] + I[g, t, r] + theta(t, r, s))
            if s > 0 and keep[t, s]:
                o = off[t, s]
                at = row[t, s]
                first = C[at, t - 1] + theta[o]
                _left_siblings(b, S[at], theta, o, s, t)
                p_first = 0.0
                for j in range(hptr[t], hptr[t + 1]):
                    g = hidx[j]
                    if s <= g <= t:
                        continue
                    a = gI[j, s]
                    v = I[j, s]
                    if a != 0.0 and v > -np.inf:
                        c = G[goff[t, s] + j - hptr[t]] - v
                        p_first += a * np.exp(first + c)
                        _lse_row_adjoint(I[j], b, s + 1, t, 0, c, a, gI[j], gb)
                gC[at, t - 1] += p_first
                gtheta[o] += p_first
                for r in range(s + 1, t):
                    gS[at, r] += gb[r]
                    gtheta[o + t - r] += gb[r]
                    gb[r] = 0.0
            # I[g, s, t] = G[g, s, t] + (C[s, t, s + 1] + theta(s, none, t)
            #              (+) logsum_r I[g, s, r] + S[s, r, t] + theta(s, r, t))
            if keep[s, t]:
                o = off[s, t]
                at = row[s, t]
                first = C[at, s + 1] + theta[o]
                siblings = not (single and s == 0)
                if siblings:
                    _right_siblings(b, ST[at], theta, o, s, t)
                p_first = 0.0
                nj = 1 if s == 0 else hptr[s + 1] - hptr[s]
                for jj in range(nj):
                    j = root if s == 0 else hptr[s] + jj
                    g = 0 if s == 0 else hidx[j]
                    if s > 0 and s <= g <= t:
                        continue
                    a = gI[j, t]
                    v = I[j, t]
                    if a != 0.0 and v > -np.inf:
                        c = (G[goff[s, t] + jj] if s > 0 else 0.0) - v
                        p_first += a * np.exp(first + c)
                        if siblings:
                            _lse_row_adjoint(I[j], b, s + 1, t, 0, c, a, gI[j], gb)
                gC[at, s + 1] += p_first
                gtheta[o] += p_first
                if siblings:
                    for r in range(s + 1, t):
                        gST[at, r] += gb[r]
                        gtheta[o - s + r] += gb[r]
                        gb[r] = 0.0
            # S[h, s, t] = logsum_u C[h, s, u] + C[h, t, u + 1]
            if s > 0:
                for j in range(hptr[s], hptr[s + 1]):
                    h = hidx[j]
                    if s <= h <= t or keep[h, t] == 0:
                        continue
                    jt = row[h, t]
                    a = gS[j, t] + gST[jt, s]
                    v = S[j, t]
                    if a != 0.0 and v > -np.inf:
                        _lse_row_adjoint(C[j], C[jt], s, t, 1, -v, a, gC[j], gC[jt])
    # d log Z / d G[g, h, m] = adjoint of I[g, h, m]; the root's arcs (h = 0) have no G term.
    mu_grand = np.zeros(G.shape[0])
    for h in range(1, n1):
        for m in range(1, n1):
            q = goff[h, m]
            if q < 0:
                continue
            for j in range(hptr[h], hptr[h + 1]):
                mu_grand[q + j - hptr[h]] = gI[j, m]
    return gtheta, mu_grand


@numba.njit(cache=True)
def _inside_outside_kernel(theta, off, G, goff, single, keep, hptr, hidx):
    """(log Z, mu_sib, mu_grand): the probability that a tree uses each part.

    mu_sib: (n_parts,) float64, laid out like theta; mu_grand: like G, one
    per slot.  The outside pass (``_outside_pass``)
    is the reverse-mode derivative of the inside ``_fill`` (over the same kept
    arcs and grandparents): the adjoint of an
    item is d log Z / d item, the probability that a tree uses it, so
    adjoints stay in linear space in [0, 1] and every term's share
    g * exp(term - item) has a non-positive exponent.  G[g, h, m] enters only
    I[g, h, m], so its marginal is that item's adjoint; each sibling part
    enters one term of the items I[., h, m], so its marginal is the sum of
    those terms' shares.
    """
    index = _chart_index(hptr, hidx)
    charts = _charts(hptr, index[3])
    log_z = _fill(theta, off, G, goff, single, False, keep, hptr, hidx, index, charts)
    if log_z == -np.inf:
        return log_z, np.zeros(theta.shape[0]), np.zeros(G.shape[0])
    gtheta, mu_grand = _outside_pass(theta, off, G, goff, single, keep, hptr, hidx, index, charts)
    return log_z, gtheta, mu_grand


@numba.njit(cache=True)
def _backtrack(theta, off, single, hptr, index, charts):
    """heads ((n + 1,) int64, heads[0] = -1) of the best derivation of the charts ``_fill`` filled in
    max-plus (best score finite); arguments as ``_fill`` takes them.  Each visited item's best split
    is recomputed with the arithmetic of the fill, so it is the split that produced the item's value.
    Ties go to "no sibling", then to the smallest split point."""
    row, mptr, midx, col = index
    C, CT, I, S, ST = charts
    n1 = off.shape[0]
    n = n1 - 1
    heads = np.full(n1, -1, dtype=np.int64)
    # Backtrack from C[0, 0, n] with an explicit stack of (kind, g, a, b), kind 0:
    # C[g, a, b], 1: I[g, a, b], 2: S[g, a, b] (g the common head); row[g, a] is the
    # items' row.  A derivation has n incomplete, at most n sibling and at most
    # 5n + 1 complete items.
    b = np.empty(n1)
    cap = 8 * n1
    st_k = np.empty(cap, dtype=np.int64)
    st_g = np.empty(cap, dtype=np.int64)
    st_a = np.empty(cap, dtype=np.int64)
    st_b = np.empty(cap, dtype=np.int64)
    st_k[0], st_g[0], st_a[0], st_b[0] = 0, 0, 0, n
    top = 1
    while top > 0:
        top -= 1
        kind, g, x, y = st_k[top], st_g[top], st_a[top], st_b[top]
        if kind == 0:
            if x == y:
                continue
            # C[g, x, y] = I[g, x, r] + C[x, r, y], r a kept modifier of x between x and y
            if y > x:
                lo, hi = _span(midx, mptr[x], mptr[x + 1], x + 1, y + 1)
            else:
                lo, hi = _span(midx, mptr[x], mptr[x + 1], y, x)
            _, r = _max_gather(I[row[g, x]], CT[y], midx, lo, hi)
            st_k[top], st_g[top], st_a[top], st_b[top] = 1, g, x, r
            st_k[top + 1], st_g[top + 1], st_a[top + 1], st_b[top + 1] = 0, x, r, y
            top += 2
        elif kind == 1:
            heads[y] = x
            a = row[x, y]
            o = off[x, y]
            if y > x:
                if single and x == 0:
                    r = -1
                else:
                    _right_siblings(b, ST[a], theta, o, x, y)
                    _, r = _max_row(C[a, x + 1] + theta[o], I[row[g, x]], b, x + 1, y, 0)
                inner = x + 1
            else:
                _left_siblings(b, S[a], theta, o, y, x)
                _, r = _max_row(C[a, x - 1] + theta[o], I[row[g, x]], b, y + 1, x, 0)
                inner = x - 1
            if r == -1:
                # No sibling: the words between x and y form y's inner half, with head x above y.
                st_k[top], st_g[top], st_a[top], st_b[top] = 0, x, y, inner
                top += 1
            else:
                # Previous sibling r: I[g, x, r] and the sibling item of r and y under x.
                st_k[top], st_g[top], st_a[top], st_b[top] = 1, g, x, r
                st_k[top + 1], st_g[top + 1], st_a[top + 1], st_b[top + 1] = 2, x, min(r, y), max(r, y)
                top += 2
        else:
            # S[g, x, y] = C[g, x, u] + C[g, y, u + 1]
            _, u = _max_row(-np.inf, C[row[g, x]], C[row[g, y]], x, y, 1)
            st_k[top], st_g[top], st_a[top], st_b[top] = 0, g, x, u
            st_k[top + 1], st_g[top + 1], st_a[top + 1], st_b[top + 1] = 0, g, y, u + 1
            top += 2
    return heads


@numba.njit(cache=True)
def _argmax_kernel(theta, off, G, goff, single, keep, hptr, hidx):
    """(best score, heads) by the grand-sibling Eisner algorithm in the max-plus semiring.

    theta: (n_parts,) float64; off: (n + 1, n + 1) int64; G, goff: the
    grandparent scores per slot as ``_fill`` takes them.  heads: (n + 1,)
    int64, heads[0] = -1 (``_backtrack``).  If no tree has a finite score the returned score
    is -inf and heads is meaningless.
    """
    index = _chart_index(hptr, hidx)
    charts = _charts(hptr, index[3])
    best = _fill(theta, off, G, goff, single, True, keep, hptr, hidx, index, charts)
    if best == -np.inf:
        return best, np.full(off.shape[0], -1, dtype=np.int64)
    return best, _backtrack(theta, off, single, hptr, index, charts)


# ---------------------------------------------------------------------------
# Grandparent parts of a tree
# ---------------------------------------------------------------------------


def grand_parts(heads: ArrayLike) -> NDArray[np.int64]:
    """The grandparent parts (g, h, m) of a tree.

    Args:
        heads: (n + 1,) integer heads of any tree rooted at 0 (projective or
            not), heads[0] = -1.

    Returns:
        (k, 3) int64: one row (g, h, m) for every word m whose head h is a
        word (h >= 1), with g = heads[h]; rows in increasing m.  The words
        attached to the root have no grandparent part, so k = n - (number of
        root children).
    """
    return _grand_parts(check_tree(heads))


def _grand_parts(arr: NDArray[np.int64]) -> NDArray[np.int64]:
    """:func:`grand_parts` of a tree that :func:`check_tree` returned."""
    m = np.arange(1, arr.shape[0], dtype=np.int64)
    h = arr[1:]
    keep = h >= 1
    m, h = m[keep], h[keep]
    return np.stack([arr[h], h, m], axis=1)


def grand_indicator(heads: ArrayLike, size: int | None = None, layout: KeptParts | None = None
                    ) -> NDArray[np.float64]:
    """Indicator of the grandparent parts of a tree: (size, size, size) float64.

    1.0 at G[g, h, m] for each row of ``grand_parts(heads)``, 0.0 elsewhere.
    ``size`` (optional) must equal len(heads).  Any tree rooted at 0 is
    accepted, projective or not (e.g. a gold tree).  With ``layout`` (a pruned layout,
    :mod:`egnlp.features.kept_parts`, that keeps every arc of the tree): (layout.n_grand,) float64, 1.0 on
    the slots of the tree's grandparent parts.
    """
    arr = check_tree(heads)
    parts = _grand_parts(arr)
    n1 = arr.shape[0]
    if size is not None and size != n1:
        raise ValueError(f"size must equal len(heads) = {n1}, got {size!r}")
    if layout is not None:
        if layout.size != n1:
            raise ValueError(f"a layout of size {layout.size} for a tree of size {n1}")
        slots = tree_grand_slots(layout, arr)
        slots = slots[slots >= 0]
        if slots.shape[0] != parts.shape[0]:
            raise ValueError("the tree has an arc that the layout does not keep")
        out = np.zeros(layout.n_grand)
        out[slots] = 1.0
        return out
    out = np.zeros((n1, n1, n1))
    out[parts[:, 0], parts[:, 1], parts[:, 2]] = 1.0
    return out


# ---------------------------------------------------------------------------
# Validating wrappers
# ---------------------------------------------------------------------------


def _check_grand(G: ArrayLike, size: int) -> NDArray[np.float64]:
    """Validate grandparent-part scores for a (validated) sentence size; return them as C-contiguous
    float64."""
    arr = np.asarray(G)
    if arr.ndim != 3:
        raise ValueError(f"G must be a 3-D (size, size, size) array of grandparent-part scores, "
                         f"got {arr.ndim} dimensions")
    if arr.shape != (size, size, size):
        raise ValueError(f"G must have shape ({size}, {size}, {size}) for size {size}, got {arr.shape}")
    return float_scores(arr, "G")


def _prepare(theta: ArrayLike, G: ArrayLike, size: int, root: str, keep: ArrayLike | None,
             parts: KeptParts | None = None) -> tuple[tuple, KeptParts]:
    """((theta, off, G, goff, single, keep, hptr, hidx) validated for the kernels, G one score per slot of
    the pruned layout of the kept arcs (:mod:`egnlp.features.kept_parts`); that layout).  ``parts``: theta
    and G are in that pruned layout already, over its kept arcs, else G is (size, size, size) and its slots
    are read from it."""
    single = is_single_root(root)
    arr, off = check_theta(theta, size, parts)
    if parts is None:
        cube = _check_grand(G, off.shape[0])
        layout = kept_parts(check_keep(keep, off.shape[0])[0])
        args = arr, off, cube[grand_cells(layout)], layout.goff, single, layout.keep, layout.hptr, layout.hidx
        return args, layout
    if keep is not None:
        raise ValueError("give the kept arcs as keep or as a layout, not both")
    g_arr = np.asarray(G)
    if g_arr.shape != (parts.n_grand,):
        raise ValueError(f"G must have the layout's ({parts.n_grand},) slots, got shape {g_arr.shape}")
    return (arr, off, float_scores(g_arr, "G"), parts.goff, single, parts.keep, parts.hptr, parts.hidx), parts


def grand_argmax(theta: ArrayLike, G: ArrayLike, size: int, root: str = "multi", keep: ArrayLike | None = None,
                 parts: KeptParts | None = None) -> NDArray[np.int64]:
    """Highest-scoring projective tree under sibling and grandparent parts (Koo and Collins 2010).

    ``G``: (size, size, size) grandparent-part scores G[g, h, m]; ``theta`` (the sibling-part scores),
    ``size``, ``root``, the result (heads, (size,) int64) and its ties and errors as for
    :func:`~egnlp.parser.eisner_siblings.sibling_argmax`.  ``keep`` ((size, size) [head, modifier], nonzero
    on the arcs a tree may use; None: every arc) restricts the trees to the kept arcs: the chart then fills
    only their items, for the kept heads of their heads (:mod:`egnlp.parser.cascade`).  ``parts`` instead
    of ``keep``: a pruned layout (:mod:`egnlp.features.kept_parts`), theta and G holding the parts of its
    kept arcs only (``parts.n_sib`` and ``parts.n_grand`` entries).
    """
    return solve(_argmax_kernel, _prepare(theta, G, size, root, keep, parts)[0])[1]


def grand_log_partition(theta: ArrayLike, G: ArrayLike, size: int, root: str = "multi",
                        keep: ArrayLike | None = None, parts: KeptParts | None = None) -> float:
    """log Z: log of the sum over the tree space of exp(tree score), in log space (-inf when every tree
    has score -inf); ``G`` as for :func:`grand_argmax`, the other arguments as for
    :func:`~egnlp.parser.eisner_siblings.sibling_log_partition`; ``keep`` as for :func:`grand_argmax`."""
    return float(_inside_kernel(*_prepare(theta, G, size, root, keep, parts)[0]))


def grand_marginals(
    theta: ArrayLike, G: ArrayLike, size: int, root: str = "multi", keep: ArrayLike | None = None,
    parts: KeptParts | None = None
) -> tuple[float, NDArray[np.float64], NDArray[np.float64]]:
    """Sibling-part and grandparent-part marginals by inside-outside over projective trees.

    The outside pass is the reverse-mode derivative of the inside chart.  Arguments as for
    :func:`grand_argmax` (``keep`` too: the parts of arcs not kept get 0).

    Returns:
        (log_z, mu_sib, mu_grand): log Z (as ``grand_log_partition``,
        from the same inside pass) and the probability that a tree drawn from
        p(tree) ∝ exp(score) uses each part (= d log Z / d theta and
        d log Z / d G).  mu_sib is laid out like theta (the parts of each
        word m sum to 1), mu_grand like G (0 on the entries no tree uses;
        sum_g mu_grand[g, h, m] is the marginal of the arc h -> m, h >= 1).
        Forbidden (-inf) parts get exactly 0; values are clipped to [0, 1]
        (rounding can overshoot 1 by about 1e-16 * |log Z|).

    Raises:
        ValueError: invalid input, or every tree has score -inf.
    """
    args, layout = _prepare(theta, G, size, root, keep, parts)
    # the slots' marginals (a slot of g = m, or of g inside the arc's span, gets 0)
    log_z, mu_sib, mu_grand = solve(_inside_outside_kernel, args, "; marginals are undefined")
    if parts is None:
        cube = np.zeros((size, size, size))
        cube[grand_cells(layout)] = mu_grand
        mu_grand = cube
    np.minimum(mu_sib, 1.0, out=mu_sib)
    np.minimum(mu_grand, 1.0, out=mu_grand)
    return float(log_z), mu_sib, mu_grand
