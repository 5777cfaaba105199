"""First-order non-projective dependency parsing: Chu-Liu-Edmonds and the matrix-tree theorem.

The non-projective twins of :mod:`egnlp.parser.eisner`, with the same names up
to the prefix, so that a problem can swap the tree space: ``cle_argmax`` and
``cle_argmax_augmented`` for ``eisner_argmax`` and ``eisner_argmax_augmented``,
``mtt_log_partition`` for ``inside``, ``mtt_marginals`` for ``inside_outside``.

Parts convention
----------------
As in :mod:`egnlp.parser.eisner`: ``scores`` is an ``(n + 1, n + 1)`` float64
array indexed ``[head, modifier]``, the root at 0 and the words 1..n (n >= 1).
Column 0 and the diagonal are never read; every other entry is a finite arc
score or -inf (an arc no tree may use).  A tree is an int64 array ``heads``,
``heads[0] == -1``.

Tree spaces, chosen by ``root``:

* ``"multi"``: every tree rooted at 0 (each word has one head, no cycles);
  the root may have any number of children.
* ``"single"``: the trees in which the root has exactly one child.

Crossing arcs are allowed in both.

Argmax: Chu-Liu-Edmonds in Tarjan's form
----------------------------------------
Tarjan (1977; corrected by Camerini, Fratta and Maffioli 1979) on a dense
matrix: each node in turn takes its best incoming arc; when that closes a cycle the
cycle is contracted at once into a new node whose incoming arcs are
reweighted by the arc of the cycle they would replace.  ``W[v, u]`` is the
best (reweighted) arc into top-level node v from top-level node u, ``E[v, u]``
the original arc it stands for (``head * (n + 1) + modifier``).  A node's
best arc is a scan of one row, O(n); a contraction of k nodes merges k rows
and k columns, O(kn); the contractions remove at most n nodes in all, so the
whole is O(n^2) time and memory (not O(n^2) per level: one dense matrix
serves every level).

The single-root constraint is solved exactly by Gabow and Tarjan's (1984)
degree-constrained method as adapted by Zmigrod, Vieira and Cotterell (2020,
"Please mind the root"): after the contraction phase the chosen arcs
form the best multi-root tree over the top-level nodes.  While the root has
more than one child there, the root child whose best non-root alternative
costs least (chosen weight minus alternative weight) swaps to that
alternative; a swap that closes a cycle contracts it, and the new node's best
incoming arc is then a root arc (its reweighted root arc is >= 0 >= every
other one).  Each swap removes a root child or a node, so there are at most
2n swaps of O(n) each (the alternatives are kept per node and stay valid,
as merging columns keeps their maxima): O(n^2) in all.  The costs of the
swaps never decrease: the sequence is the one of a Lagrangian penalty on root
arcs that rises until one root arc is left, which is why the greedy swap is
exact (the proofs are Gabow and Tarjan's and Zmigrod et al.'s).  If every root
child lacks a finite non-root alternative, no single-root tree has a finite
score.

Ties are broken deterministically: every scan keeps the first best in the
order root, words 1..n, contracted nodes by creation; the output is a
function of the scores alone.

Log-partition and marginals: the matrix-tree theorem
----------------------------------------------------
With arc weights A[h, m] = exp(scores[h, m]), the multi-root partition
function is det L, L the n x n Laplacian of the words with the root's arcs on
its diagonal (L[m, m] = sum_h A[h, m], L[h, m] = -A[h, m] for words h != m);
the single-root one is sum_r A[0, r] det L_w^(r) with L_w the Laplacian of
the words alone and L_w^(r) its minor without row and column r, which is
Koo et al.'s (2007, Sec. 3.3) determinant with the root row replaced
(McDonald and Satta 2007 and Smith and Smith 2007 give the same results).

These determinants are not taken by a plain LU.  Each column of A is scaled
by its largest entry (every tree uses one arc into each word, so log Z just
shifts by the column maxima), and L is then a column diagonally dominant
M-matrix whose diagonal is the sum of the other entries of its column plus
the root arc.  Eliminating word k keeps that form (Grassmann, Taksar and
Heyman 1985, "GTH"): the pivot is p_k = sum of the arcs into k from the
nodes still present (the root included), and the arc i -> j becomes
A[i, j] + A[i, k] A[k, j] / p_k (the walk through k); no diagonal entry is
ever formed by a subtraction.  Every quantity is a sum of non-negative terms,
so each pivot carries a relative error of O(n eps) whatever the conditioning
of L, where an LU of L loses it all: two words that are each other's best
heads, with root arcs g nats worse, give det L = 2 e^-g (1 + e^-g / 2), which
float64 LU gets wrong by 1e-3 in log det at g = 30 and as 0 from g = 37.  log Z = sum_k log p_k (multi-root); for the single-root
space the word of the best single-root tree is eliminated last and the others
are reached by back-substitution, x_k = sum_{j > k} A[k, j] x_j / p_k,
log Z = sum_{k < n} log p_k + log sum_r A[0, r] x_r, again without
subtractions.

The marginals mu[h, m] = d log Z / d scores[h, m] are the reverse-mode
derivative of the elimination.  In "log units" (a quantity's adjoint times
the quantity) every adjoint is a marginal of an arc of a partly eliminated
graph, in [0, 1], or a pivot's, in [1 - n, 1]: the one subtraction per pivot
is between terms of that size, so the marginals carry absolute errors of
about n^2 eps however small the pivots are (the inverse-based formula
mu[h, m] = A[h, m] (Linv[m, m] - Linv[m, h]) of Koo et al. loses about
eps / (smallest pivot)).

The elimination runs in linear space (one multiply-add per entry) unless the
pivots are too small for the exponentials that underflowed at the column
scaling to be negligible: then it is repeated with log-space entries
(log-sum-exp updates, adjoints stored as logarithms), which holds any float64
scores.  The linear-space result is kept when the product of the pivots
below 1 (with the final root sum for "single") is at least 1e-100, the
back-substituted x_k are at most 1e100, and, for the marginals, every adjoint
d log Z / d A[h, m] is at most 1e200: a weight lost to underflow (below
1e-308) then moves log Z by less than 1e-100.  For log Z alone, whose
adjoints are not computed, the pivot bound stands in for the adjoint bound.

Cost: O(n^3) time and O(n^2) memory, about n^3 / 3 multiply-adds for log Z and
n^3 more for the marginals (plus an O(n^2) argmax that finds a tree, or none);
the log-space repetition costs about one exponential per multiply-add.
"""

from __future__ import annotations

import numba
import numpy as np
from numpy.typing import ArrayLike, NDArray

from egnlp.parser.tree_checks import arc_inputs, augmented_scores, solve

__all__ = [
    "cle_argmax",
    "cle_argmax_augmented",
    "mtt_log_partition",
    "mtt_marginals",
]

# Linear-space elimination is kept when the product of its pivots below 1 is at
# least exp(-_MAX_DEPTH) and its adjoints are at most _MAX_ADJOINT (see the module docstring).
_MAX_DEPTH = 100.0 * np.log(10.0)
_MAX_ADJOINT = 1e200


# ---------------------------------------------------------------------------
# Chu-Liu-Edmonds (Tarjan 1977; root constraint: Gabow and Tarjan 1984, Zmigrod et al. 2020)
# ---------------------------------------------------------------------------


@numba.njit(cache=True)
def _find(top, x):
    """The top-level node that contains node x (union-find with path compression)."""
    r = x
    while top[r] != r:
        r = top[r]
    while top[x] != r:
        nxt = top[x]
        top[x] = r
        x = nxt
    return r


@numba.njit(cache=True)
def _best_source(W, alive, n_alive, v, skip_root):
    """(weight, source) of the best arc into top-level node v from another top-level node.

    Sources are scanned in ``alive`` order (root first); ties keep the first.
    (-inf, -1) when every arc into v is -inf.
    """
    best = -np.inf
    arg = -1
    for a in range(n_alive):
        u = alive[a]
        if u == v or (skip_root and u == 0):
            continue
        w = W[v, u]
        if w > best:
            best = w
            arg = u
    return best, arg


@numba.njit(cache=True)
def _closes_cycle(v, chosen, top):
    """Whether the chosen arcs lead from v's chosen source back to v."""
    x = _find(top, chosen[v])
    while x != 0 and x != v and chosen[x] >= 0:
        x = _find(top, chosen[x])
    return x == v


@numba.njit(cache=True)
def _contract(v, c, W, E, alive, n_alive, chosen, cw, top, parent, mem, mem_start, mem_len, n_mem):
    """Contract the cycle of chosen arcs through top-level node v into the new node c.

    The cycle's members (v first, then along the chosen arcs) go to
    ``mem[n_mem:]``; the arc into c from u is the best over the members of
    W[member, u] - cw[member] (the arc it replaces), the arc from c into x the
    best of W[x, member].  Returns (n_alive, n_mem) after the contraction.
    """
    start = n_mem
    x = v
    while True:
        mem[n_mem] = x
        n_mem += 1
        parent[x] = c
        top[x] = c
        x = _find(top, chosen[x])
        if x == c:
            break
    mem_start[c] = start
    mem_len[c] = n_mem - start
    kept = 0
    for a in range(n_alive):
        u = alive[a]
        if top[u] != c:
            alive[kept] = u
            kept += 1
    alive[kept] = c
    top[c] = c
    for a in range(kept):
        u = alive[a]
        best_in, code_in = -np.inf, np.int64(-1)
        best_out, code_out = -np.inf, np.int64(-1)
        for t in range(start, n_mem):
            y = mem[t]
            w = W[y, u] - cw[y]
            if w > best_in:
                best_in, code_in = w, E[y, u]
            if u != 0 and W[u, y] > best_out:
                best_out, code_out = W[u, y], E[u, y]
        W[c, u] = best_in
        E[c, u] = code_in
        if u != 0:
            W[u, c] = best_out
            E[u, c] = code_out
    return kept + 1, n_mem


@numba.njit(cache=True)
def _cle_kernel(scores, single):
    """(best score, heads) over the tree space by Chu-Liu-Edmonds; -inf if no tree scores finite.

    scores: (n + 1, n + 1) float64.  heads: (n + 1,) int64, heads[0] = -1
    (meaningless when the score is -inf).  O(n^2) time and memory.
    """
    n1 = scores.shape[0]
    n = n1 - 1
    cap = 2 * n1  # the root, n words and at most n - 1 contracted nodes
    W = np.empty((cap, cap))
    E = np.empty((cap, cap), dtype=np.int64)
    for m in range(1, n1):
        for h in range(n1):
            if h != m:
                W[m, h] = scores[h, m]
                E[m, h] = h * n1 + m
    alive = np.arange(cap)  # alive[:n_alive]: the top-level nodes, root first
    n_alive = n1
    top = np.arange(cap)
    parent = np.full(cap, -1)
    chosen = np.full(cap, -1)  # chosen source (a node id, resolved through _find)
    cw = np.zeros(cap)  # weight of the chosen arc
    ce = np.full(cap, -1)  # original arc of the chosen arc
    mem = np.empty(cap, dtype=np.int64)
    mem_start = np.zeros(cap, dtype=np.int64)
    mem_len = np.zeros(cap, dtype=np.int64)
    n_mem = 0
    next_id = n1
    heads = np.full(n1, -1)

    # Contraction phase: every node takes its best arc; cycles are contracted as they close.
    stack = np.empty(cap, dtype=np.int64)
    for k in range(n):
        stack[k] = n - k  # word 1 on top
    depth = n
    while depth > 0:
        depth -= 1
        v = stack[depth]
        w, u = _best_source(W, alive, n_alive, v, False)
        if u < 0:
            return -np.inf, heads
        chosen[v], cw[v], ce[v] = u, w, E[v, u]
        if _closes_cycle(v, chosen, top):
            n_alive, n_mem = _contract(
                v, next_id, W, E, alive, n_alive, chosen, cw, top, parent, mem, mem_start, mem_len, n_mem
            )
            stack[depth] = next_id
            depth += 1
            next_id += 1

    if single:
        # Swap phase (Gabow and Tarjan 1984): the cheapest root child moves to its best
        # non-root arc until one root child is left.
        alt_w = np.full(cap, -np.inf)
        alt_u = np.full(cap, -1)
        for a in range(1, n_alive):
            v = alive[a]
            if chosen[v] == 0:
                alt_w[v], alt_u[v] = _best_source(W, alive, n_alive, v, True)
        while True:
            count = 0
            r = -1
            best_cost = np.inf
            for a in range(1, n_alive):
                v = alive[a]
                if chosen[v] == 0:
                    count += 1
                    if alt_u[v] >= 0 and cw[v] - alt_w[v] < best_cost:
                        best_cost = cw[v] - alt_w[v]
                        r = v
            if count <= 1:
                break
            if r < 0:
                return -np.inf, heads  # every root child needs its root arc
            u = alt_u[r]
            chosen[r], cw[r], ce[r] = u, alt_w[r], E[r, u]
            v = r
            while _closes_cycle(v, chosen, top):
                c = next_id
                next_id += 1
                n_alive, n_mem = _contract(
                    v, c, W, E, alive, n_alive, chosen, cw, top, parent, mem, mem_start, mem_len, n_mem
                )
                w, u = _best_source(W, alive, n_alive, c, False)  # the root arc
                chosen[c], cw[c], ce[c] = u, w, E[c, u]
                v = c
            if chosen[v] == 0:
                alt_w[v], alt_u[v] = _best_source(W, alive, n_alive, v, True)

    # Expansion: a contracted node's arc enters the member that holds its modifier; the
    # other members keep their arcs of the cycle.
    final = np.full(cap, -1)
    for a in range(1, n_alive):
        final[alive[a]] = ce[alive[a]]
    for c in range(next_id - 1, n, -1):
        code = final[c]
        y = code % n1
        while parent[y] != c:
            y = parent[y]
        for t in range(mem_start[c], mem_start[c] + mem_len[c]):
            v = mem[t]
            final[v] = code if v == y else ce[v]
    score = 0.0
    for m in range(1, n1):
        heads[m] = final[m] // n1
        score += scores[heads[m], m]
    return score, heads


# ---------------------------------------------------------------------------
# Matrix-tree theorem by GTH elimination, in linear or log space
# ---------------------------------------------------------------------------
#
# The helpers below give the few operations of the elimination in both
# representations: linear (a weight, an adjoint) or log (their logarithms).
# "Units" are log units: a plain float, the adjoint of a quantity times it.


@numba.njit(cache=True)
def _zero(log_space):
    return -np.inf if log_space else 0.0


@numba.njit(cache=True)
def _is_zero(a, log_space):
    return a == -np.inf if log_space else a == 0.0


@numba.njit(cache=True)
def _logaddexp(a, b):
    if a < b:
        a, b = b, a
    if b == -np.inf:
        return a
    return a + np.log1p(np.exp(b - a))


@numba.njit(cache=True)
def _plus(a, b, log_space):
    return _logaddexp(a, b) if log_space else a + b


@numba.njit(cache=True)
def _times(a, b, log_space):
    return a + b if log_space else a * b


@numba.njit(cache=True)
def _over(a, p, log_p, log_space):
    """a / p (log: a - log p)."""
    return a - log_p if log_space else a / p


@numba.njit(cache=True)
def _units(a, log_space):
    """A weight (or product of weights and adjoints) as a plain float."""
    return np.exp(a) if log_space else a


@numba.njit(cache=True)
def _from_units(u, w, log_space):
    """The adjoint whose product with weight w is u >= 0 (w not zero)."""
    return np.log(u) - w if log_space else u / w


@numba.njit(cache=True)
def _log_sum(W, col, first, n1, with_root, log_space):
    """log of the sum of W[i, col] over i in first..n1-1, and over the root if with_root."""
    m = -np.inf
    acc = 0.0
    if log_space:
        for i in range(first, n1):
            m = max(m, W[i, col])
        if with_root:
            m = max(m, W[0, col])
        if m == -np.inf:
            return m
        for i in range(first, n1):
            acc += np.exp(W[i, col] - m)
        if with_root:
            acc += np.exp(W[0, col] - m)
        return m + np.log(acc)
    for i in range(first, n1):
        acc += W[i, col]
    if with_root:
        acc += W[0, col]
    return np.log(acc)


@numba.njit(cache=True)
def _mtt_kernel(W, single, log_space, want_marginals):
    """log Z (before the column shifts) and the adjoints d log Z / d W by GTH elimination.

    W: (n + 1, n + 1) arc weights [head, modifier] (log_space: their logs),
    column 0 and the diagonal zero (-inf), overwritten.  For ``single`` the
    word eliminated last, n, must head a tree of the words with a nonzero
    weight.  Returns (log_z, G, trusted): G the adjoints of the input weights
    (log_space: their logs; empty unless ``want_marginals``); ``trusted``
    False when linear space may have lost underflowed weights (see the module
    docstring), always True in log space.
    """
    n1 = W.shape[0]
    n = n1 - 1
    last = n - 1 if single else n  # words eliminated
    first_row = 1 if single else 0  # rows of step k: {0 (multi only)} and k+1..n
    lp = np.zeros(n1)  # log pivots
    p = np.zeros(n1)  # pivots (linear space)
    log_z = 0.0
    depth = 0.0
    for k in range(1, last + 1):
        lp[k] = _log_sum(W, k, k + 1, n1, not single, log_space)
        p[k] = np.exp(lp[k])
        log_z += lp[k]
        depth += max(0.0, -lp[k])
        if lp[k] == -np.inf:
            return -np.inf, np.empty((0, 0)), log_space
        for i in range(first_row, n1):
            if 0 < i <= k:
                continue
            a = _over(W[i, k], p[k], lp[k], log_space)
            if _is_zero(a, log_space):
                continue
            for j in range(k + 1, n1):
                if j != i:
                    W[i, j] = _plus(W[i, j], _times(a, W[k, j], log_space), log_space)
    x = np.empty(n1)
    log_s = 0.0
    s_lin = 1.0
    if single:
        # Back-substitution: x_k = sum_{j > k} W[k, j] x_j / p_k with x_n = 1 (proportional
        # to the weight of the trees of the words rooted at k); the root row is untouched.
        x[n] = 0.0 if log_space else 1.0
        for k in range(n - 1, 0, -1):
            acc = _zero(log_space)
            for j in range(k + 1, n1):
                acc = _plus(acc, _times(W[k, j], x[j], log_space), log_space)
            x[k] = _over(acc, p[k], lp[k], log_space)
        s = _zero(log_space)
        for r in range(1, n1):
            s = _plus(s, _times(W[0, r], x[r], log_space), log_space)
        log_s = s if log_space else np.log(s)
        s_lin = s
        log_z += log_s
        depth += max(0.0, -log_s)
        if not log_space:
            for r in range(1, n1):
                if not x[r] <= 1e100:
                    depth = np.inf
    trusted = log_space or depth <= _MAX_DEPTH
    if not want_marginals or not trusted or log_z == -np.inf:
        return log_z, np.empty((0, 0)), trusted

    # Reverse mode.  G[i, j]: adjoint of W[i, j] (log_space: its log).  gp[k]: adjoint of
    # p_k in units, 1 from log Z less what the later uses of p_k take back.
    G = np.full((n1, n1), _zero(log_space))
    gp = np.ones(n1)
    if single:
        xbar = np.empty(n1)
        for r in range(1, n1):
            G[0, r] = _over(x[r], s_lin, log_s, log_space)
            xbar[r] = _over(W[0, r], s_lin, log_s, log_space)
        for k in range(1, n):
            gp[k] -= _units(_times(xbar[k], x[k], log_space), log_space)
            c = _over(xbar[k], p[k], lp[k], log_space)
            for j in range(k + 1, n1):
                G[k, j] = _plus(G[k, j], _times(c, x[j], log_space), log_space)
                xbar[j] = _plus(xbar[j], _times(c, W[k, j], log_space), log_space)
    units_row = np.zeros(n1)  # per row i: the units that W[i, k] passes on at step k
    units_col = np.zeros(n1)  # per column j: the units that W[k, j] passes on
    for k in range(last, 0, -1):
        g = gp[k]
        for j in range(k + 1, n1):
            units_col[j] = 0.0
        for i in range(first_row, n1):
            if 0 < i <= k:
                continue
            units_row[i] = 0.0
            a = _over(W[i, k], p[k], lp[k], log_space)
            if _is_zero(a, log_space):
                continue
            u = 0.0
            for j in range(k + 1, n1):
                if j != i:
                    t = _units(_times(G[i, j], _times(a, W[k, j], log_space), log_space), log_space)
                    u += t
                    units_col[j] += t
            units_row[i] = u
            g -= u
        for j in range(k + 1, n1):
            if units_col[j] > 0.0:
                G[k, j] = _plus(G[k, j], _from_units(units_col[j], W[k, j], log_space), log_space)
        # p_k is the sum of the arcs into k: each gets g / p_k.
        for i in range(first_row, n1):
            if 0 < i <= k or _is_zero(W[i, k], log_space):
                continue
            u = units_row[i] + g * _units(_over(W[i, k], p[k], lp[k], log_space), log_space)
            G[i, k] = _from_units(u, W[i, k], log_space) if u > 0.0 else _zero(log_space)
    if not log_space:
        for i in range(n1):
            for j in range(n1):
                if not G[i, j] <= _MAX_ADJOINT:
                    return log_z, G, False
    return log_z, G, True


def _mtt(arr: NDArray[np.float64], single: bool, want_marginals: bool):
    """(log Z, mu or None) for validated scores; (-inf, None) when no tree scores finite."""
    n1 = arr.shape[0]
    best, heads = _cle_kernel(arr, single)
    if best == -np.inf:
        return -np.inf, None
    logw = arr.copy()
    logw[:, 0] = -np.inf
    np.fill_diagonal(logw, -np.inf)
    shift = logw[:, 1:].max(axis=0)  # finite: a tree exists
    logw[:, 1:] -= shift
    perm = None
    if single:
        # The root child of the best tree heads a tree of the words: eliminate it last.
        r = int(np.flatnonzero(heads == 0)[0])
        perm = np.concatenate([np.arange(r), np.arange(r + 1, n1), [r]])
        logw = logw[np.ix_(perm, perm)]
    for log_space in (False, True):
        w = logw.copy() if log_space else np.exp(logw)
        log_z, G, trusted = _mtt_kernel(w, single, log_space, want_marginals)
        if trusted:
            break
    mu = None
    if want_marginals:
        mu = np.exp(logw + G) if log_space else np.exp(logw) * G
        if perm is not None:
            out = np.empty_like(mu)
            out[np.ix_(perm, perm)] = mu
            mu = out
    return float(log_z + shift.sum()), mu


# ---------------------------------------------------------------------------
# Validating wrappers
# ---------------------------------------------------------------------------


def cle_argmax(scores: ArrayLike, root: str = "multi") -> NDArray[np.int64]:
    """Highest-scoring tree, crossing arcs allowed (Chu-Liu-Edmonds; Tarjan 1977).

    Arguments, result (heads, (n + 1,) int64, heads[0] = -1) and errors as
    for :func:`egnlp.parser.eisner.eisner_argmax`.  O(n^2) time and memory in
    both tree spaces; "single" is exact (Gabow and Tarjan 1984; Zmigrod et al.
    2020), not the best root child of the multi-root tree.  Ties between trees
    are broken deterministically: every scan keeps the first best head (the
    root, then the words in order, then contracted nodes by creation).
    """
    return solve(_cle_kernel, arc_inputs(scores, root))[1]


def cle_argmax_augmented(
    scores: ArrayLike, cost: ArrayLike, root: str = "multi"
) -> NDArray[np.int64]:
    """Loss-augmented argmax: the best tree, crossing arcs allowed, under scores + cost.

    Args and result as for :func:`egnlp.parser.eisner.eisner_argmax_augmented`.
    """
    return cle_argmax(augmented_scores(scores, cost), root)


def mtt_log_partition(scores: ArrayLike, root: str = "multi") -> float:
    """log Z over all trees, crossing arcs allowed, by the matrix-tree theorem.

    Koo et al. (2007) for both tree spaces, the determinants taken by a
    subtraction-free elimination (see module docstring): accurate for any
    float64 scores, O(n^3).  Returns -inf when every tree has score -inf.

    Args:
        scores: (n + 1, n + 1) arc scores [head, modifier].
        root: "multi" or "single".
    """
    return _mtt(*arc_inputs(scores, root), False)[0]


def mtt_marginals(
    scores: ArrayLike, root: str = "multi"
) -> tuple[float, NDArray[np.float64]]:
    """log Z and arc marginals over all trees, crossing arcs allowed (matrix-tree theorem).

    The marginals are the reverse-mode derivative of the elimination that
    gives log Z (see module docstring), O(n^3).  Arguments, result
    (log_z, mu[h, m] = P(head of m is h)) and errors as for
    :func:`egnlp.parser.eisner.inside_outside`.
    """
    return solve(_mtt, (*arc_inputs(scores, root), True), "; marginals are undefined")
