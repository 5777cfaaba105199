"""Tests for parser.nonprojective against a brute-force twin and closed forms.

The twin lists every tree over a short sentence from its Pruefer sequence
(Cayley: (n + 1)^(n - 1) trees over n words and the root, each once), hangs it
from the root, and computes log Z, marginals and the best tree directly.  It
shares no code with the kernels, which contract cycles (Chu-Liu-Edmonds) and
eliminate Laplacians (matrix-tree theorem).
"""

from __future__ import annotations

import functools
import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from egnlp.parser import nonprojective
from egnlp.parser.eisner import tree_score
from egnlp.parser.nonprojective import (
    cle_argmax,
    cle_argmax_augmented,
    mtt_log_partition,
    mtt_marginals,
)

import tree_space_checks as checks
from tree_space_checks import ROOTS

FUNCTIONS = (cle_argmax, mtt_log_partition, mtt_marginals)


def count_trees(n: int, root: str) -> int:
    """Trees over n words: (n + 1)^(n - 1) rooted at 0 (Cayley), n^(n - 1) with one root child."""
    return (n + 1) ** (n - 1) if root == "multi" else n ** (n - 1)


# ---------------------------------------------------------------------------
# Brute-force twin
# ---------------------------------------------------------------------------


def _tree_of_pruefer(code: tuple[int, ...], n1: int) -> np.ndarray:
    """The heads array of the labelled tree over nodes 0..n1-1 with this Pruefer code, hung from 0."""
    degree = [1] * n1
    for v in code:
        degree[v] += 1
    neighbours: list[list[int]] = [[] for _ in range(n1)]
    for v in code:
        leaf = degree.index(1)
        neighbours[leaf].append(v)
        neighbours[v].append(leaf)
        degree[leaf] -= 1
        degree[v] -= 1
    u, w = (k for k in range(n1) if degree[k] == 1)
    neighbours[u].append(w)
    neighbours[w].append(u)
    heads = np.full(n1, -1, dtype=np.int64)
    todo, seen = [0], {0}
    while todo:
        h = todo.pop()
        for m in neighbours[h]:
            if m not in seen:
                seen.add(m)
                heads[m] = h
                todo.append(m)
    return heads


@functools.lru_cache(maxsize=None)
def _enumerate_trees(n: int, root: str) -> np.ndarray:
    """Every tree of the tree space as a (K, n + 1) int64 array, heads[:, 0] = -1."""
    codes = itertools.product(range(n + 1), repeat=n - 1)
    trees = np.array([_tree_of_pruefer(code, n + 1) for code in codes])
    if root == "single":
        trees = trees[(trees[:, 1:] == 0).sum(axis=1) == 1]
    return trees


def is_tree(heads: np.ndarray, root: str) -> bool:
    """heads is an int64 tree rooted at 0 of the tree space (the definition, checked directly)."""
    heads = np.asarray(heads)
    n = len(heads) - 1
    if not checks.is_head_array(heads):
        return False
    for m in range(1, n + 1):
        k, steps = m, 0
        while k != 0:
            k, steps = int(heads[k]), steps + 1
            if steps > n:
                return False  # a cycle
    return checks.root_constraint_holds(heads, root)


def space(scores: np.ndarray, root: str) -> np.ndarray:
    """Every tree of the tree space over the words of ``scores``."""
    return _enumerate_trees(len(scores) - 1, root)


@pytest.mark.parametrize("root", ROOTS)
def test_brute_force_counts_and_trees(root):
    for n in range(1, 7):
        trees = _enumerate_trees(n, root)
        assert len(trees) == count_trees(n, root)
        assert len({tuple(t) for t in trees}) == len(trees)
        if n <= 4:
            assert all(is_tree(t, root) for t in trees)
    # A crossing tree is in the space: 1 -> 3 over 2 -> 4.
    assert any((t == [-1, 0, 4, 1, 0]).all() for t in _enumerate_trees(4, "multi"))
    assert not is_tree(np.array([-1, 2, 1, 0]), "multi")  # the cycle 1 <-> 2


# ---------------------------------------------------------------------------
# Kernels versus the twin
# ---------------------------------------------------------------------------


def check_against_brute_force(s: np.ndarray, root: str) -> None:
    trees = space(s, root)
    log_z, mu = mtt_marginals(s, root)
    assert log_z == pytest.approx(checks.log_z_of(s, trees), rel=1e-12, abs=1e-12)
    assert mtt_log_partition(s, root) == pytest.approx(log_z, rel=1e-14, abs=1e-14)
    np.testing.assert_allclose(mu, checks.marginals_of(s, trees), rtol=0, atol=1e-12)
    best_score, best_tree = checks.best_of(s, trees)
    heads = cle_argmax(s, root)
    assert is_tree(heads, root)
    assert tree_score(s, heads) == pytest.approx(best_score, rel=1e-12, abs=1e-12)
    if best_tree is not None:
        np.testing.assert_array_equal(heads, best_tree)
    assert best_score <= log_z + 1e-9


@pytest.mark.parametrize("root", ROOTS)
@pytest.mark.parametrize("n", range(1, 7))
def test_matches_brute_force(n, root):
    rng = np.random.default_rng(1000 * n + len(root))
    for _ in range(4):
        s = checks.random_scores(rng, n)
        check_against_brute_force(s, root)
        # Loss-augmented argmax with the Hamming cost of a random gold tree.
        trees = _enumerate_trees(n, root)
        gold = trees[rng.integers(len(trees))]
        checks.check_augmented_argmax(cle_argmax_augmented, is_tree, s, root, trees, gold)


@settings(deadline=None, max_examples=120)
@given(s=checks.arc_scores(max_n=6), root=st.sampled_from(ROOTS))
def test_hypothesis_matches_brute_force(s, root):
    check_against_brute_force(s, root)


@settings(deadline=None, max_examples=60)
@given(s=checks.arc_scores(max_n=6, forbid=True), root=st.sampled_from(ROOTS))
def test_hypothesis_forbidden_arcs(s, root):
    if checks.log_z_of(s, space(s, root)) == -np.inf:
        checks.check_no_finite_tree(*FUNCTIONS, s, root)
    else:
        check_against_brute_force(s, root)


@pytest.mark.parametrize("root", ROOTS)
def test_integer_scores_with_ties(root):
    """Many tied trees: the argmax is still optimal, and the same on every call."""
    rng = np.random.default_rng(3)
    for n in (4, 6):
        for _ in range(5):
            s = rng.integers(-2, 3, size=(n + 1, n + 1)).astype(np.float64)
            heads = cle_argmax(s, root)
            assert tree_score(s, heads) == checks.best_of(s, space(s, root))[0]
            np.testing.assert_array_equal(heads, cle_argmax(s.copy(), root))


@pytest.mark.parametrize("root", ROOTS)
def test_no_finite_tree(root):
    checks.check_no_finite_tree(*FUNCTIONS, np.full((4, 4), -np.inf), root)
    # Trees exist, but none with one root child: words 1 and 2 have no word heads.
    s = np.zeros((4, 4))
    s[1:, 1:3] = -np.inf
    assert np.isfinite(mtt_log_partition(s, "multi"))
    if root == "single":
        checks.check_no_finite_tree(*FUNCTIONS, s, root)


# ---------------------------------------------------------------------------
# The single-root constraint
# ---------------------------------------------------------------------------


def best_root_child_then_mst(s: np.ndarray) -> np.ndarray:
    """The heuristic: keep the multi-root tree's root child with the best root arc, then the best
    multi-root tree with the other root arcs removed."""
    heads = cle_argmax(s, "multi")
    children = np.flatnonzero(heads == 0)
    keep = children[np.argmax(s[0, children])]
    t = s.copy()
    t[0, 1:] = -np.inf
    t[0, keep] = s[0, keep]
    return cle_argmax(t, "multi")


def one_root_child_at_a_time(s: np.ndarray) -> float:
    """The simple exact method: the best tree for each possible root child, the best of them."""
    best = -np.inf
    for r in range(1, len(s)):
        t = s.copy()
        t[0, 1:] = -np.inf
        t[0, r] = s[0, r]
        if mtt_log_partition(t, "multi") > -np.inf:
            best = max(best, tree_score(s, cle_argmax(t, "multi")))
    return best


def test_single_root_beats_the_greedy_root_choice():
    # Multi-root: 0 -> 1 (10), 0 -> 2 (9), 1 -> 3 (5).  Keeping the better root arc 0 -> 1
    # leaves 2 the head 1 (0): 15.  Exact: 0 -> 2 (9), 2 -> 1 (8), 1 -> 3 (5): 22.
    s = np.zeros((4, 4))
    s[0, 1:] = [10.0, 9.0, -np.inf]
    s[2, 1] = 8.0
    s[1, 3] = 5.0
    multi = cle_argmax(s, "multi")
    np.testing.assert_array_equal(multi, [-1, 0, 0, 1])
    greedy = best_root_child_then_mst(s)
    exact = cle_argmax(s, "single")
    np.testing.assert_array_equal(exact, [-1, 2, 0, 1])
    assert tree_score(s, greedy) == 15.0
    assert tree_score(s, exact) == 22.0 == checks.best_of(s, space(s, "single"))[0]


@settings(deadline=None, max_examples=100)
@given(s=checks.arc_scores(max_n=14, bound=10.0), lift=st.floats(0, 6))
def test_single_root_equals_one_root_child_at_a_time(s, lift):
    s[0, 1:] += lift  # attractive root arcs: many root children in the multi-root tree
    heads = cle_argmax(s, "single")
    assert is_tree(heads, "single")
    assert tree_score(s, heads) == pytest.approx(one_root_child_at_a_time(s), abs=1e-9)
    assert tree_score(s, heads) <= tree_score(s, cle_argmax(s, "multi")) + 1e-9


# ---------------------------------------------------------------------------
# Numerical range
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("root", ROOTS)
@pytest.mark.parametrize("n", range(1, 7))
@pytest.mark.parametrize("kind", checks.LARGE_KINDS)
def test_large_scores_match_brute_force(n, root, kind):
    s = checks.large_scores(np.random.default_rng(n), n, kind)
    checks.check_large_scores(cle_argmax, mtt_marginals, s, root, _enumerate_trees(n, root))


@pytest.mark.parametrize("root", ROOTS)
@pytest.mark.parametrize("gap", [30.0, 100.0, 800.0, 1999.0])
def test_words_that_head_each_other(root, gap):
    """Words 1 and 2 are each other's best head, their root arcs ``gap`` lower: an LU of the
    Laplacian cancels to 0 from gap ~ 37; the trees 0 -> 1 -> 2 and 0 -> 2 -> 1 tie."""
    s = np.zeros((3, 3))
    s[1, 2] = s[2, 1] = 1e3
    s[0, 1:] = 1e3 - gap
    want = 2e3 - gap + (math.log(2.0 + math.exp(-gap)) if root == "multi" else math.log(2.0))
    log_z, mu = mtt_marginals(s, root)
    assert log_z == pytest.approx(want, rel=1e-15, abs=1e-12)
    assert mtt_log_partition(s, root) == log_z
    np.testing.assert_allclose(mu, checks.marginals_of(s, space(s, root)), atol=1e-14)


def test_deep_traps_leave_linear_space():
    """The linear-space elimination declines a trap 800 nats deep (the root arcs underflow);
    the log-space one takes it."""
    logw = np.full((3, 3), -np.inf)
    logw[1, 2] = logw[2, 1] = 0.0
    logw[0, 1:] = -800.0
    _, _, trusted = nonprojective._mtt_kernel(np.exp(logw), False, False, True)
    assert not trusted
    log_z, g, trusted = nonprojective._mtt_kernel(logw.copy(), False, True, True)
    assert trusted and log_z == pytest.approx(-800.0 + math.log(2.0 + math.exp(-800.0)), rel=1e-15)
    np.testing.assert_allclose(np.exp(logw + g)[:, 1:].sum(axis=0), 1.0, atol=1e-15)


@pytest.mark.parametrize("root", ROOTS)
def test_long_sentence_all_zero_scores(root):
    """Every tree equally likely: closed forms for log Z and the marginals (Cayley)."""
    n = 150
    s = np.zeros((n + 1, n + 1))
    log_z, mu = mtt_marginals(s, root)
    assert log_z == pytest.approx((n - 1) * math.log(n + 1 if root == "multi" else n), rel=1e-13)
    # P(head of m is the root): 2 / (n + 1) in "multi", 1 / n in "single"; the rest shared evenly.
    p_root = 2.0 / (n + 1) if root == "multi" else 1.0 / n
    want = np.full((n + 1, n + 1), (1.0 - p_root) / (n - 1))
    want[0] = p_root
    want[:, 0] = 0.0
    np.fill_diagonal(want, 0.0)
    np.testing.assert_allclose(mu, want, rtol=1e-12, atol=0)
    heads = cle_argmax(s, root)
    assert is_tree(heads, root)
    np.testing.assert_array_equal(heads, cle_argmax(s, root))  # deterministic


@pytest.mark.parametrize("root", ROOTS)
@pytest.mark.parametrize("kind", ["uniform 1e3", "normal 5"])
def test_long_sentence(root, kind):
    n = 150
    rng = np.random.default_rng(150)
    if kind == "uniform 1e3":
        s = rng.uniform(-1e3, 1e3, size=(n + 1, n + 1))
    else:
        s = rng.normal(scale=5.0, size=(n + 1, n + 1))
    log_z, mu = mtt_marginals(s, root)
    assert np.isfinite(log_z) and np.isfinite(mu).all()
    assert mtt_log_partition(s, root) == pytest.approx(log_z, rel=1e-14)
    checks.check_distributions(mu, tol=1e-9, sum_tol=1e-9)
    if root == "single":
        assert mu[0].sum() == pytest.approx(1.0, abs=1e-9)
    heads = cle_argmax(s, root)
    assert is_tree(heads, root)
    log_count = math.log(count_trees(n, root))
    checks.check_best_and_log_z(mtt_log_partition, s, root, tree_score(s, heads), log_count, log_z)


# ---------------------------------------------------------------------------
# Properties
# ---------------------------------------------------------------------------


@settings(deadline=None, max_examples=150)
@given(s=checks.arc_scores(max_n=25, bound=50.0), root=st.sampled_from(ROOTS))
def test_marginals_are_distributions_over_heads(s, root):
    log_z, mu = mtt_marginals(s, root)
    checks.check_distributions(mu)
    heads = cle_argmax(s, root)
    assert is_tree(heads, root)
    log_count = math.log(count_trees(len(s) - 1, root))
    checks.check_best_and_log_z(mtt_log_partition, s, root, tree_score(s, heads), log_count, log_z)


@settings(deadline=None, max_examples=100)
@given(
    s=checks.arc_scores(max_n=25, bound=50.0),
    root=st.sampled_from(ROOTS),
    c=st.floats(-50, 50, allow_nan=False),
    data=st.data(),
)
def test_shift_of_one_modifier_keeps_marginals(s, root, c, data):
    m = data.draw(st.integers(1, len(s) - 1))
    checks.check_shift_of_one_modifier(mtt_marginals, s, root, c, m)
    # The same best trees (the tie-break may differ: the shift rounds tiny scores away).
    shifted = s.copy()
    shifted[:, m] += c
    best = tree_score(s, cle_argmax(s, root))
    assert tree_score(s, cle_argmax(shifted, root)) == pytest.approx(best, abs=1e-9)


@pytest.mark.parametrize("root", ROOTS)
@pytest.mark.parametrize("seed", [0, 1])
def test_marginals_are_gradient_of_log_z(root, seed):
    checks.check_gradient(mtt_log_partition, mtt_marginals, root, seed)


# ---------------------------------------------------------------------------
# Inputs
# ---------------------------------------------------------------------------


def test_float32_and_non_contiguous_input_are_accepted():
    s = np.random.default_rng(3).normal(size=(6, 6))
    s32 = s.astype(np.float32)
    assert mtt_log_partition(s32) == mtt_log_partition(s32.astype(np.float64))
    np.testing.assert_array_equal(cle_argmax(s32), cle_argmax(s32.astype(np.float64)))
    assert mtt_log_partition(s.T) == mtt_log_partition(np.ascontiguousarray(s.T))
    np.testing.assert_array_equal(mtt_marginals(s.T)[1], mtt_marginals(np.ascontiguousarray(s.T))[1])


@pytest.mark.parametrize("bad, match", checks.INVALID_SCORES)
def test_invalid_scores_raise(bad, match):
    checks.check_invalid_scores(FUNCTIONS, cle_argmax_augmented, bad, match)


@pytest.mark.parametrize("root", checks.INVALID_ROOTS)
def test_invalid_root_raises(root):
    checks.check_invalid_root(FUNCTIONS, cle_argmax_augmented, root)


def test_invalid_cost_raises():
    checks.check_invalid_cost(cle_argmax_augmented)
