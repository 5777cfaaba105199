"""Second-order projective dependency parsing with sibling parts.

The second-order Eisner algorithm of McDonald and Pereira (2006, Sec. 3,
"Online learning of approximate dependency parsing algorithms"): a tree
scores the sum of its *sibling parts* (h, s, m), where s is the previous
modifier of h on the side of m.  Three dynamic programs share one chart
layout: the best tree (argmax), the log-partition function (inside), and the
part marginals (inside-outside, as the reverse-mode derivative of inside).
All run in O(n^3) time and O(n^2) chart memory, in log space.

Parts convention
----------------
A sentence has ``size = n + 1`` positions: the artificial root at 0 and the
words 1..n, with n >= 1.  A tree is an int64 array ``heads`` of length
``size`` with ``heads[0] == -1`` and ``heads[m]`` in 0..n the head of word m.

The modifiers of a head h on one side (right: m > h; left: m < h) are ordered
by their distance from h.  Each arc (h, m) of a tree uses exactly one sibling
part (h, s, m): s is the modifier of h on the side of m that is adjacent to m
and closer to h (the previous sibling), or "none" when m is h's closest
modifier on that side.  The root only has right modifiers.  The definition
holds for any tree, projective or not (``tree_parts``, ``sibling_indicator``).

The parts of one sentence live in one flat float64 vector ``theta`` of
length ``n_sibling_parts(size)``.  With ``off = sibling_offsets(size)``, an
(size, size) int64 array, the parts of the arc (h, m) (m >= 1, m != h) are
``off[h, m] + k`` for k in 0..|h - m| - 1:

* k = 0: no sibling, (h, none, m);
* k = |s - h| (1 <= k <= |h - m| - 1): sibling s strictly between h and m.

The cells (h, m) follow each other in row-major order; the cells with m == 0
or m == h hold no parts (their ``off`` is where the next cell starts).
Entries of ``theta`` are finite, or -inf for a part no tree may use.

Tree spaces, chosen by ``root``: the projective trees of :mod:`egnlp.parser.eisner`,
with any number of root children (``"multi"``) or exactly one (``"single"``).

Chart layout (shared by all kernels)
------------------------------------
Items are indexed by their head (or their two ends), so each chart is a
plain (n + 1, n + 1) array.  For a span s < t:

* ``C[h, e]``: complete item with head h whose subtree covers h..e
  (``e > h``: right-facing; ``e < h``: left-facing).  ``C[h, h] = 0``.
* ``I[h, m]``: incomplete item, the arc h -> m together with the material
  between h and m and with h's modifiers between h and m (those closer to
  h on the side of m).  The last part it adds is the part of the arc h -> m.
* ``S[s, t]`` (1 <= s < t): sibling item, a right-complete half of s and a
  left-complete half of t meeting in between, with no arc between s and t
  yet: s and t are adjacent modifiers of one head outside s..t.
* ``CT = C.T`` and ``ST = S.T``: second copies, so that every inner loop
  walks along a row (contiguous memory).  Adjoint charts use the same trick.

Recurrences (in the semiring (+) = log-sum-exp or max, (x) = +), for s < t:

* ``S[s, t] = (+)_{s <= u < t} C[s, u] + C[t, u + 1]``
* ``I[s, t] = C[t, s + 1] + theta(s, none, t)
  (+) (+)_{s < r < t} I[s, r] + S[r, t] + theta(s, r, t)``
* ``I[t, s] = C[s, t - 1] + theta(t, none, s)
  (+) (+)_{s < r < t} S[s, r] + I[t, r] + theta(t, r, s)``
* ``C[s, t] = (+)_{s < r <= t} I[s, r] + C[r, t]``
* ``C[t, s] = (+)_{s <= r < t} C[r, s] + I[t, r]``

and log Z (or the best score) is ``C[0, n]``.  With ``root="single"`` the
root's arcs keep only their "none" term, so the root has exactly one child
m, whose part is (0, none, m) and whose halves are the complete spans
C[m, 1] and C[m, n] of the words.
"""

from __future__ import annotations

import operator

import numba
import numpy as np
from numpy.typing import ArrayLike, NDArray

from egnlp.features.kept_parts import KeptParts
from egnlp.parser.cascade import check_keep
from egnlp.parser.eisner import complete_items, complete_items_adjoint, lse_pair_adjoint, reduce_split
from egnlp.parser.tree_checks import check_tree, float_scores, is_single_root, solve

__all__ = [
    "arc_marginals",
    "n_sibling_parts",
    "sibling_argmax",
    "sibling_indicator",
    "sibling_log_partition",
    "sibling_marginals",
    "sibling_offsets",
    "tree_parts",
]


# ---------------------------------------------------------------------------
# Kernel helpers: the incomplete items' reduction over previous siblings, in each semiring (the
# complete and sibling items reduce over split points as eisner.py's do: reduce_split, lse_pair_adjoint)
# ---------------------------------------------------------------------------


@numba.njit(cache=True)
def _lse_arc(first, a, i, b, j, theta, base, step, lo, hi):
    """log(exp(first) + sum_{r=lo}^{hi-1} exp(a[i, r] + b[j, r] + theta[base + step * r])).

    The reduction of an incomplete item: ``first`` is its "no sibling" term,
    r runs over the previous siblings.  -inf if all terms are -inf.
    """
    m = first
    for r in range(lo, hi):
        v = a[i, r] + b[j, r] + theta[base + step * r]
        if v > m:
            m = v
    if m == -np.inf:
        return m
    acc = np.exp(first - m)
    for r in range(lo, hi):
        acc += np.exp(a[i, r] + b[j, r] + theta[base + step * r] - m)
    return m + np.log(acc)


@numba.njit(cache=True)
def _max_arc(first, a, i, b, j, theta, base, step, lo, hi):
    """(max, argmax) of the terms of ``_lse_arc``; argmax -1 stands for ``first``.

    Ties go to ``first``, then to the smallest r.
    """
    best = first
    arg = -1
    for r in range(lo, hi):
        v = a[i, r] + b[j, r] + theta[base + step * r]
        if v > best:
            best = v
            arg = r
    return best, arg


@numba.njit(cache=True)
def _lse_arc_adjoint(a, i, b, j, theta, base, step, lo, hi, value, g, ga, gb, gtheta):
    """Reverse-mode step of the sibling terms of ``value = _lse_arc(...)``.

    Each term's share g * exp(term - value) is added to ``ga[i, r]``,
    ``gb[j, r]`` and ``gtheta[base + step * r]``; the caller handles ``first``.
    """
    for r in range(lo, hi):
        k = base + step * r
        p = g * np.exp(a[i, r] + b[j, r] + theta[k] - value)
        ga[i, r] += p
        gb[j, r] += p
        gtheta[k] += p


@numba.njit(cache=True)
def _reduce_arc(first, a, i, b, j, theta, base, step, lo, hi, use_max):
    """An incomplete item's reduction in the chosen semiring: (value, best sibling or -1 for
    none) in max-plus, (log-sum-exp, -1) in sum-product."""
    if use_max:
        return _max_arc(first, a, i, b, j, theta, base, step, lo, hi)
    return _lse_arc(first, a, i, b, j, theta, base, step, lo, hi), -1


# ---------------------------------------------------------------------------
# Kernels
# ---------------------------------------------------------------------------


@numba.njit(cache=True)
def _charts(n1):
    """Charts C, CT, I, S, ST of a sentence with n1 - 1 words, each (n1, n1) float64.

    C and CT hold 0 on the diagonal (the empty complete items); every other
    entry starts at -inf and is overwritten by ``_fill`` where it is defined.
    """
    C = np.full((n1, n1), -np.inf)
    CT = np.full((n1, n1), -np.inf)
    for k in range(n1):
        C[k, k] = 0.0
        CT[k, k] = 0.0
    return C, CT, np.full((n1, n1), -np.inf), np.full((n1, n1), -np.inf), np.full((n1, n1), -np.inf)


@numba.njit(cache=True)
def _common_head(keep, hptr, hidx, s, t):
    """Whether the words s < t have a kept head h outside s..t in common (so they may be adjacent
    siblings)."""
    for j in range(hptr[s], hptr[s + 1]):
        h = hidx[j]
        if (h < s or h > t) and keep[h, t]:
            return True
    return False


@numba.njit(cache=True)
def _fill(theta, off, single, use_max, C, CT, I, S, ST, split_c, split_i, split_s, keep, hptr, hidx):
    """Fill the charts of McDonald and Pereira (2006) in log space, sum-product or max-plus.

    theta: (n_parts,) float64 sibling-part scores; off: (n + 1, n + 1) int64
    from ``sibling_offsets``.  C, CT, I, S, ST: (n + 1, n + 1) float64 from
    ``_charts``, overwritten.  With ``use_max`` the best split points go to
    ``split_c`` (of C[h, e]), ``split_i`` (of I[h, m]: the previous sibling,
    or -1 for none) and ``split_s`` (of S[s, t]), each (n + 1, n + 1) int64.
    ``keep`` (n + 1, n + 1) uint8: the arcs [head, modifier] a tree may use;
    ``hptr``, ``hidx``: the kept heads of each modifier (:func:`~egnlp.parser.cascade.check_keep`).
    Only the incomplete items of kept arcs are filled, and the sibling items
    S[s, t] of two words with a kept head in common; the others stay -inf.
    Returns log Z (or the best score) = C[0, n].
    """
    n1 = C.shape[0]
    n = n1 - 1
    for w in range(1, n1):
        for s in range(n1 - w):
            t = s + w
            # S[s, t] = (+)_{s <= u < t} C[s, u] + C[t, u + 1]: s's right half
            # meets t's left half.  The root is never a sibling: S[0, t] = -inf.
            if s > 0 and _common_head(keep, hptr, hidx, s, t):
                v, r = reduce_split(C, s, C, t, s, t, 1, use_max)
                S[s, t] = v
                ST[t, s] = v
                if use_max:
                    split_s[s, t] = r
            # I[s, t] (arc s -> t, t > s): either t is s's first right modifier,
            #   C[s, s] + C[t, s + 1] + theta(s, none, t),
            # or the previous one is r, s < r < t:
            #   I[s, r] + S[r, t] + theta(s, r, t),  part off[s, t] + r - s.
            # S[r, t] = ST[t, r].  A single root keeps only the "none" term.
            if keep[s, t]:
                o = off[s, t]
                first = C[t, s + 1] + theta[o]
                if single and s == 0:
                    v, r = first, -1
                else:
                    v, r = _reduce_arc(first, I, s, ST, t, theta, o - s, 1, s + 1, t, use_max)
                I[s, t] = v
                if use_max:
                    split_i[s, t] = r
            # I[t, s] (arc t -> s, s < t): either s is t's first left modifier,
            #   C[s, t - 1] + C[t, t] + theta(t, none, s),
            # or the previous one is r, s < r < t:
            #   S[s, r] + I[t, r] + theta(t, r, s),  part off[t, s] + t - r.
            # The root has no head: I[t, 0] stays -inf.
            if s > 0 and keep[t, s]:
                o = off[t, s]
                first = C[s, t - 1] + theta[o]
                v, r = _reduce_arc(first, S, s, I, t, theta, o + t, -1, s + 1, t, use_max)
                I[t, s] = v
                if use_max:
                    split_i[t, s] = r
            # C[s, t] and C[t, s]: the last modifier r of s (of t) on that side, with its complete half
            complete_items(I, C, CT, s, t, use_max, split_c)
    return C[0, n]


@numba.njit(cache=True)
def _inside_kernel(theta, off, single, keep, hptr, hidx):
    """log Z over the tree space; theta (n_parts,) float64, off (n + 1, n + 1) int64; the kept arcs as
    ``_fill`` takes them."""
    n1 = off.shape[0]
    C, CT, I, S, ST = _charts(n1)
    no_split = np.empty((0, 0), dtype=np.int64)
    return _fill(theta, off, single, False, C, CT, I, S, ST, no_split, no_split, no_split, keep, hptr, hidx)


@numba.njit(cache=True)
def _inside_outside_kernel(theta, off, single, keep, hptr, hidx):
    """(log Z, mu): mu (n_parts,) float64 with mu[k] = P(the tree uses part k).

    The outside pass is the reverse-mode derivative of the inside ``_fill``:
    the adjoint of an item is d log Z / d item, the probability that a tree
    uses it, so adjoints stay in linear space in [0, 1] and every term's
    share g * exp(term - item) has a non-positive exponent.  Each part
    appears in exactly one term (of the incomplete item of its arc), so its
    marginal is that term's share.
    """
    n1 = off.shape[0]
    n = n1 - 1
    C, CT, I, S, ST = _charts(n1)
    no_split = np.empty((0, 0), dtype=np.int64)
    log_z = _fill(theta, off, single, False, C, CT, I, S, ST, no_split, no_split, no_split, keep, hptr, hidx)
    gtheta = np.zeros(theta.shape[0])
    if log_z == -np.inf:
        return log_z, gtheta
    # Adjoint of C[h, e] is gC[h, e] + gCT[e, h]; of S[s, t], gS[s, t] + gST[t, s].
    gC = np.zeros((n1, n1))
    gCT = np.zeros((n1, n1))
    gI = np.zeros((n1, n1))
    gS = np.zeros((n1, n1))
    gST = np.zeros((n1, n1))
    gC[0, n] = 1.0
    # Visit items in the reverse order of _fill: wider spans first, and within
    # a span C[t, s], C[s, t], I[t, s], I[s, t], S[s, t] (each item after all
    # the items that use it).
    for w in range(n, 0, -1):
        for s in range(n1 - w):
            t = s + w
            complete_items_adjoint(I, C, CT, s, t, gC, gCT, gI)
            # I[t, s] = C[s, t - 1] + theta(t, none, s) (+) logsum_r S[s, r] + I[t, r] + theta(t, r, s)
            g = gI[t, s]
            if s > 0 and g != 0.0 and I[t, s] > -np.inf:
                o = off[t, s]
                p = g * np.exp(C[s, t - 1] + theta[o] - I[t, s])
                gC[s, t - 1] += p
                gtheta[o] += p
                _lse_arc_adjoint(S, s, I, t, theta, o + t, -1, s + 1, t, I[t, s], g, gS, gI, gtheta)
            # I[s, t] = C[t, s + 1] + theta(s, none, t) (+) logsum_r I[s, r] + S[r, t] + theta(s, r, t)
            g = gI[s, t]
            if g != 0.0 and I[s, t] > -np.inf:
                o = off[s, t]
                p = g * np.exp(C[t, s + 1] + theta[o] - I[s, t])
                gC[t, s + 1] += p
                gtheta[o] += p
                if not (single and s == 0):
                    _lse_arc_adjoint(I, s, ST, t, theta, o - s, 1, s + 1, t, I[s, t], g, gI, gST, gtheta)
            # S[s, t] = logsum_u C[s, u] + C[t, u + 1]
            g = gS[s, t] + gST[t, s]
            if s > 0 and g != 0.0 and S[s, t] > -np.inf:
                lse_pair_adjoint(C, s, C, t, s, t, 1, S[s, t], g, gC, gC)
    return log_z, gtheta


@numba.njit(cache=True)
def _argmax_kernel(theta, off, single, keep, hptr, hidx):
    """(best score, heads) by the second-order Eisner algorithm in the max-plus semiring.

    theta: (n_parts,) float64; off: (n + 1, n + 1) int64.  heads: (n + 1,)
    int64, heads[0] = -1.  Ties go to "no sibling", then to the smallest
    split point.  If no tree has a finite score the returned score is -inf
    and heads is meaningless.
    """
    n1 = off.shape[0]
    n = n1 - 1
    C, CT, I, S, ST = _charts(n1)
    split_c = np.zeros((n1, n1), dtype=np.int64)  # best r of C[h, e]
    split_i = np.zeros((n1, n1), dtype=np.int64)  # previous sibling of I[h, m], -1 for none
    split_s = np.zeros((n1, n1), dtype=np.int64)  # best u of S[s, t]
    best = _fill(theta, off, single, True, C, CT, I, S, ST, split_c, split_i, split_s, keep, hptr, hidx)
    heads = np.full(n1, -1, dtype=np.int64)
    if best == -np.inf:  # no tree: the split points of items never filled (arcs a mask drops) lead nowhere
        return best, heads

    # Backtrack from C[0, n] with an explicit stack of (kind, a, b), kind 0:
    # C[a, b], 1: I[a, b], 2: S[a, b].  A derivation has n incomplete, at most
    # n sibling and at most 5n + 1 complete items, so 8 (n + 1) bounds the stack.
    cap = 8 * n1
    st_k = np.empty(cap, dtype=np.int64)
    st_a = np.empty(cap, dtype=np.int64)
    st_b = np.empty(cap, dtype=np.int64)
    st_k[0], st_a[0], st_b[0] = 0, 0, n
    top = 1
    while top > 0:
        top -= 1
        kind, a, b = st_k[top], st_a[top], st_b[top]
        if kind == 0:
            if a == b:
                continue
            # C[h, e] = I[h, r] + C[r, e]
            r = split_c[a, b]
            st_k[top], st_a[top], st_b[top] = 1, a, r
            st_k[top + 1], st_a[top + 1], st_b[top + 1] = 0, r, b
            top += 2
        elif kind == 1:
            heads[b] = a
            r = split_i[a, b]
            if r == -1:
                # No sibling: the words between a and b form b's inner half.
                st_k[top], st_a[top] = 0, b
                st_b[top] = a + 1 if b > a else a - 1
                top += 1
            else:
                # Previous sibling r: I[a, r] + S[r, b] (right) or S[b, r] + I[a, r] (left).
                st_k[top], st_a[top], st_b[top] = 1, a, r
                st_k[top + 1], st_a[top + 1], st_b[top + 1] = 2, min(r, b), max(r, b)
                top += 2
        else:
            # S[s, t] = C[s, u] + C[t, u + 1]
            u = split_s[a, b]
            st_k[top], st_a[top], st_b[top] = 0, a, u
            st_k[top + 1], st_a[top + 1], st_b[top + 1] = 0, b, u + 1
            top += 2
    return best, heads


@numba.njit(cache=True)
def _tree_parts_kernel(heads, off):
    """The flat sibling part of every word m = 1..n of a tree: (n,) int64.

    heads: (n + 1,) int64, a valid tree (not necessarily projective); off:
    (n + 1, n + 1) int64.  Right modifiers are visited left to right and left
    modifiers right to left, so each meets the previous sibling last.
    """
    n1 = heads.shape[0]
    parts = np.empty(n1 - 1, dtype=np.int64)
    last = np.arange(n1)  # last[h]: h's latest modifier on this side so far, h if none
    for m in range(1, n1):
        h = heads[m]
        if h < m:
            parts[m - 1] = off[h, m] + (last[h] - h)
            last[h] = m
    for h in range(n1):
        last[h] = h
    for m in range(n1 - 1, 0, -1):
        h = heads[m]
        if h > m:
            parts[m - 1] = off[h, m] + (h - last[h])
            last[h] = m
    return parts


# ---------------------------------------------------------------------------
# Parts layout
# ---------------------------------------------------------------------------


def _check_size(size: int) -> int:
    """Validate a sentence size (n + 1 positions, n >= 1); return it as int."""
    if isinstance(size, (bool, np.bool_)):
        raise ValueError(f"size must be an integer, got {size!r}")
    try:
        size = operator.index(size)
    except TypeError:
        raise ValueError(f"size must be an integer, got {size!r}") from None
    if size < 2:
        raise ValueError(f"size must be n + 1 >= 2 (the root and at least one word), got {size}")
    return size


def _offsets(size: int) -> NDArray[np.int64]:
    """``sibling_offsets`` without validation."""
    pos = np.arange(size, dtype=np.int64)
    lengths = np.abs(pos[:, None] - pos[None, :])
    lengths[:, 0] = 0
    flat = lengths.ravel()
    return (np.cumsum(flat) - flat).reshape(size, size)


def n_sibling_parts(size: int) -> int:
    """Number of sibling parts of a sentence of ``size = n + 1`` positions.

    The sum over h in 0..n, m in 1..n, m != h of |h - m|:
    n (n + 1) / 2 for the root plus (n - 1) n (n + 1) / 3 for the words.
    """
    n = _check_size(size) - 1
    return n * (n + 1) // 2 + (n - 1) * n * (n + 1) // 3


def sibling_offsets(size: int) -> NDArray[np.int64]:
    """Start of each arc's parts in the flat layout: (size, size) int64 ``off``.

    The parts of the arc (h, m) are ``off[h, m] + k``, k in 0..|h - m| - 1
    (k = 0: no sibling; k = |s - h|: sibling s).  Cells run in row-major
    order; cells with m == 0 or m == h are empty.
    """
    return _offsets(_check_size(size))


def arc_marginals(mu: ArrayLike, size: int, parts: KeptParts | None = None) -> NDArray[np.float64]:
    """The arc marginals of sibling-part marginals: (size, size) float64 indexed [head, modifier].

    Every tree uses exactly one part of each of its arcs, so the probability of the arc h -> m is the
    sum of the marginals of its |h - m| parts ``off[h, m] + k`` (the parts of a third-order model's
    :func:`~egnlp.parser.eisner_grandparents.grand_marginals` too).  Column 0 and the diagonal are 0;
    with ``mu`` from :func:`sibling_marginals`, every column m >= 1 sums to 1.

    Args:
        mu: (n_sibling_parts(size),) part marginals, or those of the pruned layout ``parts``
            (:mod:`egnlp.features.kept_parts`).
        size: n + 1.
    """
    arr, off = check_theta(mu, size, parts)
    cells = np.ones((size, size), dtype=bool) if parts is None else parts.keep.astype(bool)
    cells[:, 0] = False
    np.fill_diagonal(cells, False)
    out = np.zeros((size, size))
    # The cells with parts are consecutive in the layout (the others hold none): one sum per run.
    out[cells] = np.add.reduceat(arr, off[cells])
    return out


def tree_parts(heads: ArrayLike, parts: KeptParts | None = None) -> NDArray[np.int64]:
    """The flat sibling part used by each word of a tree.

    Args:
        heads: (n + 1,) integer heads of any tree rooted at 0 (projective or
            not), heads[0] = -1.
        parts: a pruned layout (:mod:`egnlp.features.kept_parts`) that keeps every arc of the tree, or
            None: the full layout.

    Returns:
        (n,) int64: entry m - 1 is the index of the part (heads[m], s, m) in
        the layout of ``sibling_offsets(n + 1)`` (or of ``parts``).
    """
    arr = check_tree(heads)
    if parts is None:
        return _tree_parts_kernel(arr, _offsets(arr.shape[0]))
    if parts.size != arr.shape[0]:
        raise ValueError(f"a layout of size {parts.size} for a tree of size {arr.shape[0]}")
    if not parts.keep[arr[1:], np.arange(1, arr.shape[0])].all():
        raise ValueError("the tree has an arc that the layout does not keep")
    return _tree_parts_kernel(arr, parts.off)


def sibling_indicator(heads: ArrayLike, parts: KeptParts | None = None) -> NDArray[np.float64]:
    """Indicator of the sibling parts of a tree: (n_sibling_parts(n + 1),) float64 (or as long as the
    pruned layout ``parts``, which keeps the tree's arcs).

    1.0 on the n parts the tree uses (one per word), 0.0 elsewhere.  Any tree
    rooted at 0 is accepted, projective or not (e.g. a gold tree).
    """
    used = tree_parts(heads, parts)
    out = np.zeros(n_sibling_parts(used.shape[0] + 1) if parts is None else parts.n_sib)
    out[used] = 1.0
    return out


# ---------------------------------------------------------------------------
# Validating wrappers
# ---------------------------------------------------------------------------


def check_theta(theta: ArrayLike, size: int, parts: KeptParts | None = None
                ) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    """Validate sibling-part scores for a sentence size (in the pruned layout ``parts`` when given); return
    (theta as C-contiguous float64, off)."""
    size = _check_size(size)
    arr = np.asarray(theta)
    if arr.ndim != 1:
        raise ValueError(f"theta must be a 1-D array of sibling-part scores, got {arr.ndim} dimensions")
    if parts is not None:
        if parts.size != size:
            raise ValueError(f"a layout of size {parts.size} for size {size}")
        if arr.shape[0] != parts.n_sib:
            raise ValueError(f"theta must have the layout's {parts.n_sib} entries, got {arr.shape[0]}")
        return float_scores(arr, "theta"), parts.off
    expected = n_sibling_parts(size)
    if arr.shape[0] != expected:
        raise ValueError(
            f"theta must have n_sibling_parts({size}) = {expected} entries, got {arr.shape[0]}"
        )
    return float_scores(arr, "theta"), _offsets(size)


def _prepare(theta: ArrayLike, size: int, root: str, keep: ArrayLike | None = None,
             parts: KeptParts | None = None) -> tuple:
    """(theta, off, single, keep, hptr, hidx) validated for the kernels; ``parts``: theta is in that pruned
    layout, over its kept arcs (``keep`` must then be None)."""
    single = is_single_root(root)
    arr, off = check_theta(theta, size, parts)
    if parts is not None:
        if keep is not None:
            raise ValueError("give the kept arcs as keep or as a layout, not both")
        return arr, off, single, parts.keep, parts.hptr, parts.hidx
    return (arr, off, single, *check_keep(keep, off.shape[0]))


def sibling_argmax(theta: ArrayLike, size: int, root: str = "multi", keep: ArrayLike | None = None,
                   parts: KeptParts | None = None) -> NDArray[np.int64]:
    """Highest-scoring projective tree under sibling-part scores (McDonald and Pereira 2006).

    Args:
        theta: (n_sibling_parts(size),) part scores (see module docstring).
        size: n + 1, the number of positions (root and words).
        root: "multi" (any number of root children) or "single" (exactly one).
        keep: (size, size) [head, modifier], nonzero on the arcs a tree may use (None: every arc); the
            chart then fills only the items of kept arcs (:mod:`egnlp.parser.cascade`).
        parts: instead of ``keep``, a pruned layout (:mod:`egnlp.features.kept_parts`): the trees of its
            kept arcs, theta holding the parts of those arcs only (``parts.n_sib`` entries).

    Returns:
        heads: (size,) int64, heads[0] = -1.  Ties between trees are broken
        deterministically (toward "no sibling", then the smallest split point).

    Raises:
        ValueError: invalid input, or every tree has score -inf.
    """
    return solve(_argmax_kernel, _prepare(theta, size, root, keep, parts))[1]


def sibling_log_partition(theta: ArrayLike, size: int, root: str = "multi", keep: ArrayLike | None = None,
                          parts: KeptParts | None = None) -> float:
    """log Z: log of the sum over the tree space of exp(tree score).

    Computed in log space, so scores of magnitude 1e3 and sentences of
    hundreds of words neither overflow nor underflow.  Returns -inf when
    every tree has score -inf.

    Args:
        theta: (n_sibling_parts(size),) part scores.
        size: n + 1.
        root: "multi" or "single".
        keep: the kept arcs, as for :func:`sibling_argmax`.
    """
    return float(_inside_kernel(*_prepare(theta, size, root, keep, parts)))


def sibling_marginals(
    theta: ArrayLike, size: int, root: str = "multi", keep: ArrayLike | None = None, parts: KeptParts | None = None
) -> tuple[float, NDArray[np.float64]]:
    """log Z and sibling-part marginals by inside-outside over projective trees.

    The outside pass is the reverse-mode derivative of the inside chart.

    Args:
        theta: (n_sibling_parts(size),) part scores.
        size: n + 1.
        root: "multi" or "single".
        keep: the kept arcs, as for :func:`sibling_argmax` (the parts of the others get 0).

    Returns:
        (log_z, mu): mu is (n_sibling_parts(size),) float64, the probability
        that a tree drawn from p(tree) ∝ exp(score) uses each part
        (= d log Z / d theta).  Forbidden (-inf) parts get exactly 0, the
        parts of each word m sum to 1, and mu sums to n (up to rounding of
        relative size about 1e-16 * |log Z|; values are clipped to [0, 1]).

    Raises:
        ValueError: invalid input, or every tree has score -inf.
    """
    log_z, mu = solve(_inside_outside_kernel, _prepare(theta, size, root, keep, parts), "; marginals are undefined")
    # Rounding in exp(term - item) can overshoot 1 by ~1e-16 * |log Z|.
    np.minimum(mu, 1.0, out=mu)
    return float(log_z), mu
