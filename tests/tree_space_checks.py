"""Checks shared by the tests of the tree spaces (parser.eisner, parser.nonprojective, parser.eisner_siblings,
parser.eisner_grandparents).

Each inference module offers an argmax, a loss-augmented argmax, a
log-partition function and marginals over (n + 1, n + 1) arc scores
[head, modifier], the root at 0.  The brute-force helpers take the list of
every tree of a space (a (K, n + 1) int64 array, heads[:, 0] = -1) from the
test module, which enumerates its space its own way; the checks take the
functions under test and assert what holds in any tree space.
"""

from __future__ import annotations

import functools
import math

import numpy as np
import pytest
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from scipy.special import logsumexp

from egnlp.parser.eisner import tree_score
from egnlp.parser.eisner_siblings import n_sibling_parts, sibling_offsets

ROOTS = ("multi", "single")
# Kinds of random part scores of the higher-order charts' tests: normal, some -inf, small integers (ties).
KINDS = ("normal", "forbid", "ties")

# Projective trees over n = 1..6 words (OEIS A001764 and A006013).
KNOWN_PROJECTIVE_COUNTS = {
    "multi": [1, 3, 12, 55, 273, 1428],
    "single": [1, 2, 7, 30, 143, 728],
}


def count_projective_trees(n: int, root: str) -> int:
    """Number of projective trees over n words, exactly (Python ints).

    multi: C(3n, n) / (2n + 1); single: C(3n - 2, n - 1) / n.
    """
    if root == "multi":
        return math.comb(3 * n, n) // (2 * n + 1)
    return math.comb(3 * n - 2, n - 1) // n


# ---------------------------------------------------------------------------
# Brute-force twin
# ---------------------------------------------------------------------------


@functools.lru_cache(maxsize=None)
def projective_trees(n: int, root: str) -> np.ndarray:
    """All projective trees of the tree space as a (K, n + 1) int64 array."""
    n1 = n + 1
    # Every assignment of heads in 0..n to words 1..n.
    words = np.indices((n1,) * n).reshape(n, -1).T
    parent = np.concatenate([np.zeros((len(words), 1), dtype=np.int64), words], axis=1)
    # Acyclic and rooted at 0: n steps up the head chain reach 0 from every
    # node (a self-loop or a cycle never does).
    pos = np.tile(np.arange(n1), (len(parent), 1))
    rows = np.arange(len(parent))[:, None]
    ancestor = np.zeros((len(parent), n1, n1), dtype=bool)  # [tree, node, ancestor-or-self]
    for _ in range(n1):
        ancestor[rows, np.arange(n1)[None, :], pos] = True
        pos = parent[rows, pos]
    is_tree = (pos == 0).all(axis=1)
    parent, ancestor = parent[is_tree], ancestor[is_tree]
    # Projective: every word strictly between h and m descends from h.
    ok = np.ones(len(parent), dtype=bool)
    idx = np.arange(len(parent))
    for m in range(1, n1):
        h = parent[:, m]
        lo, hi = np.minimum(h, m), np.maximum(h, m)
        for k in range(1, n1):
            between = (lo < k) & (k < hi)
            ok &= ~between | ancestor[idx, k, h]
    trees = parent[ok]
    if root == "single":
        trees = trees[(trees[:, 1:] == 0).sum(axis=1) == 1]
    trees[:, 0] = -1
    return trees


# ---------------------------------------------------------------------------
# Inputs
# ---------------------------------------------------------------------------


def random_scores(rng: np.random.Generator, n: int, scale: float = 2.0) -> np.ndarray:
    """Random arc scores whose ignored entries hold junk the kernels must not read."""
    s = rng.normal(scale=scale, size=(n + 1, n + 1))
    s[:, 0] = rng.choice([-np.inf, 1e300, -1e300], size=n + 1)
    np.fill_diagonal(s, 1e300)
    return s


def large_scores(rng: np.random.Generator, n: int, kind: str) -> np.ndarray:
    """Scores uniform in [-1e3, 1e3] (``uniform``), or near-ties on a huge common offset
    (``offset+``, ``offset-``: +-1e3 + U(-1, 1))."""
    if kind == "uniform":
        return rng.uniform(-1e3, 1e3, size=(n + 1, n + 1))
    sign = 1.0 if kind == "offset+" else -1.0
    return sign * 1e3 + rng.uniform(-1.0, 1.0, size=(n + 1, n + 1))


LARGE_KINDS = ["uniform", "offset+", "offset-"]


def hamming_cost(gold: np.ndarray) -> np.ndarray:
    """cost[h, m] = 1 unless h is the gold head of m."""
    n = len(gold) - 1
    cost = np.ones((n + 1, n + 1))
    cost[gold[1:], np.arange(1, n + 1)] = 0.0
    return cost


@st.composite
def arc_scores(draw, max_n: int = 12, bound: float = 20.0, forbid: bool = False):
    """(n + 1, n + 1) scores in [-bound, bound] for 1 <= n <= max_n; with ``forbid``, also -inf."""
    n = draw(st.integers(1, max_n))
    elements = st.floats(-bound, bound, allow_nan=False, allow_infinity=False)
    if forbid:
        elements = st.one_of(elements, st.just(-np.inf))
    return draw(hnp.arrays(np.float64, (n + 1, n + 1), elements=elements))


def is_head_array(heads: np.ndarray) -> bool:
    """An int64 array with heads[0] = -1 and every word's head in 0..n and not the word itself."""
    n = len(heads) - 1
    if heads.dtype != np.int64 or heads[0] != -1:
        return False
    return all(0 <= heads[m] <= n and heads[m] != m for m in range(1, n + 1))


def root_constraint_holds(heads: np.ndarray, root: str) -> bool:
    """Any number of root children for ``multi``, exactly one for ``single``."""
    return root == "multi" or int((heads[1:] == 0).sum()) == 1


# ---------------------------------------------------------------------------
# Brute force over a list of trees
# ---------------------------------------------------------------------------


def tree_scores(scores: np.ndarray, trees: np.ndarray) -> np.ndarray:
    return scores[trees[:, 1:], np.arange(1, trees.shape[1])].sum(axis=1)


def log_z_of(scores: np.ndarray, trees: np.ndarray) -> float:
    return float(logsumexp(tree_scores(scores, trees)))


def marginals_of(scores: np.ndarray, trees: np.ndarray) -> np.ndarray:
    ts = tree_scores(scores, trees)
    p = np.exp(ts - logsumexp(ts))
    mu = np.zeros(scores.shape)
    np.add.at(mu, (trees[:, 1:], np.arange(1, trees.shape[1])), p[:, None])
    return mu


def best_of(scores: np.ndarray, trees: np.ndarray) -> tuple[float, np.ndarray | None]:
    """(max tree score, the best tree if it beats the runner-up by 1e-9, else None)."""
    ts = tree_scores(scores, trees)
    order = np.argsort(-ts, kind="stable")
    unique = len(ts) == 1 or ts[order[0]] - ts[order[1]] > 1e-9
    return float(ts[order[0]]), (trees[order[0]] if unique else None)


# ---------------------------------------------------------------------------
# Checks
# ---------------------------------------------------------------------------


def check_augmented_argmax(argmax_augmented, is_tree, s, root, trees, gold) -> None:
    """The loss-augmented argmax under the Hamming cost of ``gold`` is the best of ``trees``."""
    cost = hamming_cost(gold)
    aug_score, aug_tree = best_of(s + cost, trees)
    heads = argmax_augmented(s, cost, root)
    assert is_tree(heads, root)
    hamming = int((heads[1:] != gold[1:]).sum())
    assert tree_score(s, heads) + hamming == pytest.approx(aug_score, abs=1e-12)
    if aug_tree is not None:
        np.testing.assert_array_equal(heads, aug_tree)


def check_no_finite_tree(argmax, log_partition, marginals, s, root) -> None:
    """Every tree of the space scores -inf: log Z is -inf, the argmax and the marginals raise."""
    assert log_partition(s, root) == -np.inf
    with pytest.raises(ValueError, match="-inf"):
        marginals(s, root)
    with pytest.raises(ValueError, match="-inf"):
        argmax(s, root)


def check_large_scores(argmax, marginals, s, root, trees) -> None:
    """Scores of magnitude 1e3: log Z, marginals and the argmax's score against ``trees``."""
    log_z, mu = marginals(s, root)
    assert np.isfinite(log_z) and np.isfinite(mu).all()
    assert log_z == pytest.approx(log_z_of(s, trees), rel=1e-13)
    np.testing.assert_allclose(mu, marginals_of(s, trees), atol=1e-9)
    assert tree_score(s, argmax(s, root)) == pytest.approx(best_of(s, trees)[0])


def check_distributions(mu: np.ndarray, tol: float = 1e-12, sum_tol: float = 1e-10) -> None:
    """Each word's head marginals form a distribution; the ignored entries are 0."""
    assert (mu >= 0).all() and (mu <= 1 + tol).all()
    np.testing.assert_allclose(mu[:, 1:].sum(axis=0), 1.0, atol=sum_tol)
    assert (mu[:, 0] == 0).all() and (np.diag(mu) == 0).all()


def check_best_and_log_z(log_partition, s, root, best: float, log_count: float, log_z: float) -> None:
    """max <= log Z <= max + log(#trees), and log Z(beta s) / beta -> max at zero temperature."""
    assert best <= log_z + 1e-9
    assert log_z <= best + log_count + 1e-9
    beta = 1e9
    sharp = log_partition(beta * s, root) / beta
    tol = 1e-12 * (1.0 + abs(best))  # rounding of sums of many scores near 1e3
    assert best - tol <= sharp <= best + log_count / beta + tol


def check_shift_of_one_modifier(marginals, s, root, c: float, m: int) -> None:
    """Adding c to every arc into m adds c to log Z and keeps the marginals."""
    shifted = s.copy()
    shifted[:, m] += c
    log_z, mu = marginals(s, root)
    log_z2, mu2 = marginals(shifted, root)
    np.testing.assert_allclose(mu2, mu, atol=1e-9)
    assert log_z2 == pytest.approx(log_z + c, abs=1e-9)


def check_gradient(log_partition, marginals, root, seed: int) -> None:
    """The marginals are the central finite differences of log Z (n = 5)."""
    n, h = 5, 1e-5
    s = np.random.default_rng(seed).normal(size=(n + 1, n + 1))
    _, mu = marginals(s, root)
    fd = np.zeros_like(s)
    for i in range(n + 1):
        for j in range(n + 1):
            up, down = s.copy(), s.copy()
            up[i, j] += h
            down[i, j] -= h
            fd[i, j] = (log_partition(up, root) - log_partition(down, root)) / (2 * h)
    np.testing.assert_allclose(mu, fd, atol=1e-6)
    assert (fd[:, 0] == 0).all() and (np.diag(fd) == 0).all()  # ignored entries


INVALID_SCORES = [
    (np.zeros(4), "2-D"),
    (np.zeros((3, 4)), "square"),
    (np.zeros((1, 1)), "n >= 1"),
    (np.zeros((3, 3), dtype=np.int64), "floating"),
    (np.array([[0.0, 1.0], [np.nan, 0.0]]), "NaN"),
    (np.array([[0.0, np.inf], [0.0, 0.0]]), r"\+inf"),
]

INVALID_ROOTS = ["Single", "", None, "root"]


def check_invalid_scores(calls, argmax_augmented, bad, match: str) -> None:
    for call in calls:
        with pytest.raises(ValueError, match=match):
            call(bad)
    with pytest.raises(ValueError, match=match):
        argmax_augmented(bad, np.zeros((3, 3)))


def check_invalid_root(calls, argmax_augmented, root) -> None:
    s = np.zeros((3, 3))
    for call in calls:
        with pytest.raises(ValueError, match="root"):
            call(s, root)
    with pytest.raises(ValueError, match="root"):
        argmax_augmented(s, np.zeros((3, 3)), root)


def check_invalid_cost(argmax_augmented) -> None:
    s = np.zeros((3, 3))
    with pytest.raises(ValueError, match="cost"):
        argmax_augmented(s, np.zeros((4, 4)))
    with pytest.raises(ValueError, match="cost contains NaN"):
        argmax_augmented(s, np.full((3, 3), np.nan))


# Head arrays that are no tree, and a word of the error each gets (parser.tree_checks.check_tree).
INVALID_TREES = [
    ([0, 0], "heads\\[0\\]"),
    ([-1, 1], "differ"),
    ([-1, 3, 0], "0..n"),
    ([-1, 2, 1], "cycle"),
    ([-1, 0, 3, 2], "cycle"),
    ([-1], "length"),
    ([[-1, 0]], "1-D"),
    ([-1.0, 0.0], "integers"),
]


def check_invalid_trees(*calls) -> None:
    """Each function of a tree refuses every head array of :data:`INVALID_TREES` with its error."""
    for heads, match in INVALID_TREES:
        for call in calls:
            with pytest.raises(ValueError, match=match):
                call(np.array(heads))


def reaches_root(heads: np.ndarray) -> bool:
    """Whether every word of ``heads`` (in 0..n, none its own head) reaches 0 by following heads: pointer
    doubling, the reference the check of :func:`egnlp.parser.tree_checks.check_tree` is tested against."""
    up = heads.copy()
    up[0] = 0
    for _ in range(max(1, int(np.ceil(np.log2(heads.shape[0]))) + 1)):
        up = up[up]
    return bool((up == 0).all())


# --- sibling parts (parser.eisner_siblings layout) and projective trees as head arrays ---


def _part_arcs(size: int) -> tuple[np.ndarray, np.ndarray]:
    """(heads, modifiers), (n_parts,) int64 each: the arc (h, m) of every sibling part."""
    off = sibling_offsets(size)
    heads = np.empty(n_sibling_parts(size), dtype=np.int64)
    mods = np.empty_like(heads)
    for h in range(size):
        for m in range(1, size):
            if m != h:
                heads[off[h, m] : off[h, m] + abs(h - m)] = h
                mods[off[h, m] : off[h, m] + abs(h - m)] = m
    return heads, mods


def modifier_of_part(size: int) -> np.ndarray:
    """(n_parts,) int64: the modifier m of every sibling part."""
    return _part_arcs(size)[1]


def head_of_part(size: int) -> np.ndarray:
    """(n_parts,) int64: the head h of every sibling part."""
    return _part_arcs(size)[0]


def is_projective_tree(heads: np.ndarray) -> bool:
    """A tree rooted at 0 (every word reaches 0) with no two crossing arcs."""
    n1 = len(heads)
    if heads.dtype != np.int64 or heads.shape != (n1,) or heads[0] != -1:
        return False
    h = heads[1:]
    m = np.arange(1, n1)
    if ((h < 0) | (h >= n1) | (h == m)).any():
        return False
    for w in range(1, n1):
        k, steps = w, 0
        while k != 0 and steps <= n1:
            k, steps = heads[k], steps + 1
        if k != 0:
            return False
    lo, hi = np.minimum(h, m), np.maximum(h, m)
    cross = (lo[:, None] < lo[None, :]) & (lo[None, :] < hi[:, None]) & (hi[:, None] < hi[None, :])
    return not cross.any()


def in_space(heads: np.ndarray, root: str) -> bool:
    return is_projective_tree(heads) and (root == "multi" or int((heads[1:] == 0).sum()) == 1)


def random_tree(rng: np.random.Generator, n: int) -> np.ndarray:
    """A uniformly random-ish tree rooted at 0 (usually non-projective): attach words in random order."""
    order = rng.permutation(np.arange(1, n + 1))
    heads = np.full(n + 1, -1, dtype=np.int64)
    placed = [0]
    for w in order:
        heads[w] = placed[rng.integers(len(placed))]
        placed.append(int(w))
    return heads
