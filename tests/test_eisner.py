"""Tests for parser.eisner against a brute-force twin and exact counts.

The twin enumerates every head assignment of a short sentence, keeps the
trees (acyclic, rooted at 0) that are projective by the dominance definition
(every word between h and m descends from h), and computes log Z, marginals
and the best tree directly.  The kernels instead forbid crossing arcs in a
chart, so the two sides share no code.
"""

from __future__ import annotations

import functools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from scipy.special import logsumexp

from egnlp.parser.eisner import (
    eisner_argmax,
    eisner_argmax_augmented,
    inside,
    inside_outside,
    tree_score,
)

ROOTS = ("multi", "single")
# Projective trees over n = 1..6 words (OEIS A001764 and A006013).
KNOWN_COUNTS = {
    "multi": [1, 3, 12, 55, 273, 1428],
    "single": [1, 2, 7, 30, 143, 728],
}


def count_trees(n: int, root: str) -> int:
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
def _enumerate_trees(n: int, root: str) -> np.ndarray:
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


def _tree_scores(scores: np.ndarray, trees: np.ndarray) -> np.ndarray:
    n = trees.shape[1] - 1
    return scores[trees[:, 1:], np.arange(1, n + 1)].sum(axis=1)


def brute_log_z(scores: np.ndarray, root: str) -> float:
    return float(logsumexp(_tree_scores(scores, _enumerate_trees(len(scores) - 1, root))))


def brute_marginals(scores: np.ndarray, root: str) -> np.ndarray:
    n1 = len(scores)
    trees = _enumerate_trees(n1 - 1, root)
    ts = _tree_scores(scores, trees)
    p = np.exp(ts - logsumexp(ts))
    mu = np.zeros((n1, n1))
    for m in range(1, n1):
        mu[:, m] = np.bincount(trees[:, m], weights=p, minlength=n1)
    return mu


def brute_best(scores: np.ndarray, root: str) -> tuple[float, np.ndarray | None]:
    """(max tree score, the best tree if it beats the runner-up by 1e-9, else None)."""
    trees = _enumerate_trees(len(scores) - 1, root)
    ts = _tree_scores(scores, trees)
    order = np.argsort(-ts, kind="stable")
    unique = len(ts) == 1 or ts[order[0]] - ts[order[1]] > 1e-9
    return float(ts[order[0]]), (trees[order[0]] if unique else None)


def is_projective_tree(heads: np.ndarray, root: str) -> bool:
    """Check the tree-space definition directly on a heads array."""
    heads = np.asarray(heads)
    n = len(heads) - 1
    if heads.dtype != np.int64 or heads[0] != -1:
        return False
    if not all(0 <= heads[m] <= n and heads[m] != m for m in range(1, n + 1)):
        return False
    ancestors = []
    for m in range(n + 1):
        chain, k = {m}, m
        while k != 0:
            k = int(heads[k])
            if k in chain:
                return False  # cycle
            chain.add(k)
        ancestors.append(chain)
    for m in range(1, n + 1):
        h = int(heads[m])
        if any(h not in ancestors[k] for k in range(min(h, m) + 1, max(h, m))):
            return False
    return root == "multi" or int((heads[1:] == 0).sum()) == 1


def random_scores(rng: np.random.Generator, n: int, scale: float = 2.0) -> np.ndarray:
    """Random arc scores whose ignored entries hold junk the kernels must not read."""
    s = rng.normal(scale=scale, size=(n + 1, n + 1))
    s[:, 0] = rng.choice([-np.inf, 1e300, -1e300], size=n + 1)
    np.fill_diagonal(s, 1e300)
    return s


# ---------------------------------------------------------------------------
# The twin itself
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("root", ROOTS)
def test_brute_force_counts_match_known_numbers(root):
    counts = [len(_enumerate_trees(n, root)) for n in range(1, 7)]
    assert counts == KNOWN_COUNTS[root]
    assert [count_trees(n, root) for n in range(1, 7)] == KNOWN_COUNTS[root]


def test_brute_force_trees_are_distinct_and_valid():
    for root in ROOTS:
        trees = _enumerate_trees(4, root)
        assert len({tuple(t) for t in trees}) == len(trees)
        assert all(is_projective_tree(t, root) for t in trees)
    # A crossing tree (1 -> 3 over 2 -> 4) must be rejected.
    assert not is_projective_tree(np.array([-1, 0, 4, 1, 0]), "multi")
    assert not any((t == [-1, 0, 4, 1, 0]).all() for t in _enumerate_trees(4, "multi"))


# ---------------------------------------------------------------------------
# Kernels versus the twin
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("root", ROOTS)
@pytest.mark.parametrize("n", range(1, 7))
def test_matches_brute_force(n, root):
    rng = np.random.default_rng(1000 * n + len(root))
    for _ in range(4):
        s = random_scores(rng, n)
        log_z, mu = inside_outside(s, root)
        assert log_z == pytest.approx(brute_log_z(s, root), rel=1e-12, abs=1e-12)
        assert inside(s, root) == pytest.approx(log_z, rel=1e-14, abs=1e-14)
        np.testing.assert_allclose(mu, brute_marginals(s, root), rtol=0, atol=1e-12)

        best_score, best_tree = brute_best(s, root)
        heads = eisner_argmax(s, root)
        assert is_projective_tree(heads, root)
        assert tree_score(s, heads) == pytest.approx(best_score, abs=1e-12)
        if best_tree is not None:
            np.testing.assert_array_equal(heads, best_tree)

        # Loss-augmented argmax with the Hamming cost of a random gold tree.
        trees = _enumerate_trees(n, root)
        gold = trees[rng.integers(len(trees))]
        cost = np.ones((n + 1, n + 1))
        cost[gold[1:], np.arange(1, n + 1)] = 0.0
        aug_score, aug_tree = brute_best(s + cost, root)
        heads = eisner_argmax_augmented(s, cost, root)
        assert is_projective_tree(heads, root)
        hamming = int((heads[1:] != gold[1:]).sum())
        assert tree_score(s, heads) + hamming == pytest.approx(aug_score, abs=1e-12)
        if aug_tree is not None:
            np.testing.assert_array_equal(heads, aug_tree)


@pytest.mark.parametrize("root", ROOTS)
def test_forbidden_arcs_match_brute_force(root):
    rng = np.random.default_rng(7)
    n, checked = 5, 0
    for _ in range(5):
        s = random_scores(rng, n)
        s[rng.random(s.shape) < 0.4] = -np.inf
        s[0, rng.integers(1, n + 1)] = 0.0  # keep a few trees alive
        want = brute_log_z(s, root)
        if want == -np.inf:
            assert inside(s, root) == -np.inf
            continue
        log_z, mu = inside_outside(s, root)
        assert log_z == pytest.approx(want, rel=1e-12)
        np.testing.assert_allclose(mu, brute_marginals(s, root), atol=1e-12)
        assert tree_score(s, eisner_argmax(s, root)) == pytest.approx(brute_best(s, root)[0])
        checked += 1
    assert checked >= 3


@pytest.mark.parametrize("root", ROOTS)
def test_no_finite_tree(root):
    s = np.full((4, 4), -np.inf)
    assert inside(s, root) == -np.inf
    with pytest.raises(ValueError, match="-inf"):
        inside_outside(s, root)
    with pytest.raises(ValueError, match="-inf"):
        eisner_argmax(s, root)


def test_single_root_tree_space_differs():
    # Root arcs are cheap and word-word arcs expensive: "multi" attaches every
    # word to the root, "single" may attach only one.
    n = 4
    s = np.full((n + 1, n + 1), -5.0)
    s[0, 1:] = 5.0
    assert (eisner_argmax(s, "multi")[1:] == 0).all()
    assert (eisner_argmax(s, "single")[1:] == 0).sum() == 1
    assert inside(s, "multi") > inside(s, "single")


# ---------------------------------------------------------------------------
# Numerical range
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("root", ROOTS)
@pytest.mark.parametrize("n", range(1, 6))
@pytest.mark.parametrize("kind", ["uniform", "offset+", "offset-"])
def test_large_scores_match_brute_force(n, root, kind):
    rng = np.random.default_rng(n)
    if kind == "uniform":
        s = rng.uniform(-1e3, 1e3, size=(n + 1, n + 1))
    else:  # near-ties on top of a huge common offset
        sign = 1.0 if kind == "offset+" else -1.0
        s = sign * 1e3 + rng.uniform(-1.0, 1.0, size=(n + 1, n + 1))
    log_z, mu = inside_outside(s, root)
    assert np.isfinite(log_z) and np.isfinite(mu).all()
    assert log_z == pytest.approx(brute_log_z(s, root), rel=1e-13)
    np.testing.assert_allclose(mu, brute_marginals(s, root), atol=1e-9)
    assert tree_score(s, eisner_argmax(s, root)) == pytest.approx(brute_best(s, root)[0])


@pytest.mark.parametrize("root", ROOTS)
def test_long_sentence_all_zero_scores(root):
    n = 150
    s = np.zeros((n + 1, n + 1))
    log_z, mu = inside_outside(s, root)
    assert log_z == pytest.approx(math.log(count_trees(n, root)), rel=1e-12)
    assert inside(s, root) == pytest.approx(log_z, rel=1e-14)
    assert np.isfinite(mu).all() and (mu >= 0).all() and (mu <= 1 + 1e-12).all()
    np.testing.assert_allclose(mu[:, 1:].sum(axis=0), 1.0, atol=1e-10)
    # Every tree is equally likely; the root heads exactly one word in "single".
    if root == "single":
        assert mu[0].sum() == pytest.approx(1.0, abs=1e-10)
    heads = eisner_argmax(s, root)
    assert is_projective_tree(heads, root)
    np.testing.assert_array_equal(heads, eisner_argmax(s, root))  # deterministic


@pytest.mark.parametrize("root", ROOTS)
def test_long_sentence_large_scores(root):
    n = 150
    rng = np.random.default_rng(150)
    s = rng.uniform(-1e3, 1e3, size=(n + 1, n + 1))
    log_z, mu = inside_outside(s, root)
    assert np.isfinite(log_z) and np.isfinite(mu).all()
    # Chart entries near 1e5 carry rounding of about 1e-11 in log space.
    assert (mu >= 0).all() and (mu <= 1 + 1e-9).all()
    np.testing.assert_allclose(mu[:, 1:].sum(axis=0), 1.0, atol=1e-9)
    heads = eisner_argmax(s, root)
    assert is_projective_tree(heads, root)
    best = tree_score(s, heads)
    # max <= log Z <= max + log(#trees)
    assert best <= log_z + 1e-9
    assert log_z <= best + math.log(count_trees(n, root)) + 1e-9
    # Zero temperature: log Z(beta s) / beta -> max tree score.
    beta = 1e9
    sharp = inside(beta * s, root) / beta
    tol = 1e-12 * (1.0 + abs(best))  # rounding of sums of 150 scores near 1e3
    assert best - tol <= sharp <= best + math.log(count_trees(n, root)) / beta + tol


# ---------------------------------------------------------------------------
# Properties
# ---------------------------------------------------------------------------


@st.composite
def arc_scores(draw):
    n = draw(st.integers(1, 12))
    elements = st.floats(-20, 20, allow_nan=False, allow_infinity=False)
    return draw(hnp.arrays(np.float64, (n + 1, n + 1), elements=elements))


@settings(deadline=None, max_examples=150)
@given(s=arc_scores(), root=st.sampled_from(ROOTS))
def test_marginals_are_distributions_over_heads(s, root):
    _, mu = inside_outside(s, root)
    assert (mu >= 0).all() and (mu <= 1 + 1e-12).all()
    np.testing.assert_allclose(mu[:, 1:].sum(axis=0), 1.0, atol=1e-10)
    assert (mu[:, 0] == 0).all() and (np.diag(mu) == 0).all()


@settings(deadline=None, max_examples=150)
@given(s=arc_scores(), root=st.sampled_from(ROOTS))
def test_argmax_is_an_optimal_tree_of_its_space(s, root):
    n = len(s) - 1
    heads = eisner_argmax(s, root)
    assert is_projective_tree(heads, root)
    best = tree_score(s, heads)
    log_z = inside(s, root)
    assert best <= log_z + 1e-9
    assert log_z <= best + math.log(count_trees(n, root)) + 1e-9
    # Zero temperature: log Z(beta s) / beta -> max tree score.
    beta = 1e9
    sharp = inside(beta * s, root) / beta
    tol = 1e-12 * (1.0 + abs(best))
    assert best - tol <= sharp <= best + math.log(count_trees(n, root)) / beta + tol


@settings(deadline=None, max_examples=150)
@given(
    s=arc_scores(),
    root=st.sampled_from(ROOTS),
    c=st.floats(-20, 20, allow_nan=False),
    data=st.data(),
)
def test_shift_of_one_modifier_keeps_marginals(s, root, c, data):
    m = data.draw(st.integers(1, len(s) - 1))
    shifted = s.copy()
    shifted[:, m] += c
    log_z, mu = inside_outside(s, root)
    log_z2, mu2 = inside_outside(shifted, root)
    np.testing.assert_allclose(mu2, mu, atol=1e-9)
    assert log_z2 == pytest.approx(log_z + c, abs=1e-9)


@pytest.mark.parametrize("root", ROOTS)
@pytest.mark.parametrize("seed", [0, 1])
def test_marginals_are_gradient_of_log_z(root, seed):
    n, h = 5, 1e-5
    s = np.random.default_rng(seed).normal(size=(n + 1, n + 1))
    _, mu = inside_outside(s, root)
    fd = np.zeros_like(s)
    for i in range(n + 1):
        for j in range(n + 1):
            up, down = s.copy(), s.copy()
            up[i, j] += h
            down[i, j] -= h
            fd[i, j] = (inside(up, root) - inside(down, root)) / (2 * h)
    np.testing.assert_allclose(mu, fd, atol=1e-6)
    assert (fd[:, 0] == 0).all() and (np.diag(fd) == 0).all()  # ignored entries


# ---------------------------------------------------------------------------
# Inputs
# ---------------------------------------------------------------------------


def test_float32_input_is_accepted():
    s = np.random.default_rng(3).normal(size=(5, 5)).astype(np.float32)
    s64 = s.astype(np.float64)
    assert inside(s) == inside(s64)
    np.testing.assert_array_equal(inside_outside(s)[1], inside_outside(s64)[1])
    np.testing.assert_array_equal(eisner_argmax(s), eisner_argmax(s64))


def test_non_contiguous_input_is_accepted():
    s = np.random.default_rng(4).normal(size=(6, 6))
    assert inside(s.T) == inside(np.ascontiguousarray(s.T))


def test_tree_score():
    s = np.arange(16, dtype=np.float64).reshape(4, 4)
    heads = np.array([-1, 2, 0, 2])
    assert tree_score(s, heads) == s[2, 1] + s[0, 2] + s[2, 3]


@pytest.mark.parametrize(
    "bad, match",
    [
        (np.zeros(4), "2-D"),
        (np.zeros((3, 4)), "square"),
        (np.zeros((1, 1)), "n >= 1"),
        (np.zeros((3, 3), dtype=np.int64), "floating"),
        (np.array([[0.0, 1.0], [np.nan, 0.0]]), "NaN"),
        (np.array([[0.0, np.inf], [0.0, 0.0]]), r"\+inf"),
    ],
)
def test_invalid_scores_raise(bad, match):
    for call in (eisner_argmax, inside, inside_outside):
        with pytest.raises(ValueError, match=match):
            call(bad)
    with pytest.raises(ValueError, match=match):
        eisner_argmax_augmented(bad, np.zeros((3, 3)))
    with pytest.raises(ValueError, match=match):
        tree_score(bad, np.array([-1, 0, 1]))


@pytest.mark.parametrize("root", ["Single", "", None, "root"])
def test_invalid_root_raises(root):
    s = np.zeros((3, 3))
    for call in (eisner_argmax, inside, inside_outside):
        with pytest.raises(ValueError, match="root"):
            call(s, root)
    with pytest.raises(ValueError, match="root"):
        eisner_argmax_augmented(s, np.zeros((3, 3)), root)


def test_invalid_cost_raises():
    s = np.zeros((3, 3))
    with pytest.raises(ValueError, match="cost"):
        eisner_argmax_augmented(s, np.zeros((4, 4)))
    with pytest.raises(ValueError, match="cost contains NaN"):
        eisner_argmax_augmented(s, np.full((3, 3), np.nan))


@pytest.mark.parametrize(
    "heads",
    [[-1, 0], [0, 0, 1], [-1, 3, 0], [-1, 1, 0], [-1.0, 0.0, 1.0], [-1, 0, -1]],
)
def test_invalid_heads_raise(heads):
    with pytest.raises(ValueError, match="heads"):
        tree_score(np.zeros((3, 3)), np.array(heads))
