"""Tests for parser.eisner against a brute-force twin and exact counts.

The twin enumerates every head assignment of a short sentence, keeps the
trees (acyclic, rooted at 0) that are projective by the dominance definition
(every word between h and m descends from h), and computes log Z, marginals
and the best tree directly.  The kernels instead forbid crossing arcs in a
chart, so the two sides share no code.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from egnlp.parser.eisner import (
    eisner_argmax,
    eisner_argmax_augmented,
    inside,
    inside_outside,
    max_marginals,
    tree_score,
)

from tree_space_checks import (
    KNOWN_PROJECTIVE_COUNTS,
    INVALID_ROOTS,
    INVALID_SCORES,
    LARGE_KINDS,
    ROOTS,
    arc_scores,
    best_of,
    check_augmented_argmax,
    check_best_and_log_z,
    check_distributions,
    check_gradient,
    check_invalid_cost,
    check_invalid_root,
    check_invalid_scores,
    check_large_scores,
    check_no_finite_tree,
    check_shift_of_one_modifier,
    count_projective_trees,
    is_head_array,
    large_scores,
    log_z_of,
    marginals_of,
    projective_trees,
    tree_scores,
    random_scores,
    root_constraint_holds,
)



def brute_log_z(scores: np.ndarray, root: str) -> float:
    return log_z_of(scores, projective_trees(len(scores) - 1, root))


def brute_marginals(scores: np.ndarray, root: str) -> np.ndarray:
    return marginals_of(scores, projective_trees(len(scores) - 1, root))


def brute_best(scores: np.ndarray, root: str) -> tuple[float, np.ndarray | None]:
    """(max tree score, the best tree if it beats the runner-up by 1e-9, else None)."""
    return best_of(scores, projective_trees(len(scores) - 1, root))


def brute_max_marginals(scores: np.ndarray, root: str) -> tuple[float, np.ndarray]:
    """(best tree score, exp(best score of a tree with h -> m - best score) for every arc), by enumeration."""
    trees = projective_trees(len(scores) - 1, root)
    totals = tree_scores(scores, trees)
    best = float(totals.max())
    mm = np.zeros_like(scores, dtype=np.float64)
    for tree, total in zip(trees, totals):
        if total > -np.inf:
            for m in range(1, len(tree)):
                mm[tree[m], m] = max(mm[tree[m], m], math.exp(total - best))
    return best, mm


def is_projective_tree(heads: np.ndarray, root: str) -> bool:
    """Check the tree-space definition directly on a heads array."""
    heads = np.asarray(heads)
    n = len(heads) - 1
    if not is_head_array(heads):
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
    return root_constraint_holds(heads, root)


# ---------------------------------------------------------------------------
# The twin itself
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("root", ROOTS)
def test_brute_force_counts_match_known_numbers(root):
    counts = [len(projective_trees(n, root)) for n in range(1, 7)]
    assert counts == KNOWN_PROJECTIVE_COUNTS[root]
    assert [count_projective_trees(n, root) for n in range(1, 7)] == KNOWN_PROJECTIVE_COUNTS[root]


def test_brute_force_trees_are_distinct_and_valid():
    for root in ROOTS:
        trees = projective_trees(4, root)
        assert len({tuple(t) for t in trees}) == len(trees)
        assert all(is_projective_tree(t, root) for t in trees)
    # A crossing tree (1 -> 3 over 2 -> 4) must be rejected.
    assert not is_projective_tree(np.array([-1, 0, 4, 1, 0]), "multi")
    assert not any((t == [-1, 0, 4, 1, 0]).all() for t in projective_trees(4, "multi"))


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
        trees = projective_trees(n, root)
        gold = trees[rng.integers(len(trees))]
        check_augmented_argmax(eisner_argmax_augmented, is_projective_tree, s, root, trees, gold)


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
@pytest.mark.parametrize("n", range(1, 7))
def test_max_marginals_match_brute_force(n, root):
    """The best tree through each arc, against every tree enumerated: random scores, and with forbidden
    arcs (-inf) as a cascade's tag filter leaves them; near-ties and a huge common offset too."""
    rng = np.random.default_rng(500 + 10 * n + len(root))
    for trial in range(6):
        s = random_scores(rng, n) if trial < 4 else large_scores(rng, n, "offset+" if trial == 4 else "uniform")
        if trial in (2, 3):
            s[rng.random(s.shape) < 0.4] = -np.inf
            s[0, rng.integers(1, n + 1)] = 0.0
        want_best, want = brute_max_marginals(s, root)
        if want_best == -np.inf:
            with pytest.raises(ValueError, match="max-marginals are undefined"):
                max_marginals(s, root)
            continue
        best, mm = max_marginals(s, root)
        assert best == pytest.approx(want_best, rel=1e-12, abs=1e-12)
        np.testing.assert_allclose(mm, want, rtol=1e-9, atol=1e-12)
        heads = eisner_argmax(s, root)  # a best tree's arcs have max-marginal 1
        assert all(mm[heads[m], m] == pytest.approx(1.0, abs=1e-12) for m in range(1, n + 1))


@pytest.mark.parametrize("root", ROOTS)
def test_max_marginals_of_a_long_sentence(root):
    """n = 150 with scores up to 1e3: finite, in [0, 1], 1 on the best tree's arcs, and the best tree
    through an arc never beats the best tree; the same best score as the argmax."""
    n = 150
    rng = np.random.default_rng(151)
    s = rng.uniform(-1e3, 1e3, size=(n + 1, n + 1))
    best, mm = max_marginals(s, root)
    heads = eisner_argmax(s, root)
    assert best == pytest.approx(tree_score(s, heads), rel=1e-12)
    assert np.isfinite(mm).all() and (mm >= 0).all() and (mm <= 1).all()
    assert all(mm[heads[m], m] == pytest.approx(1.0, abs=1e-9) for m in range(1, n + 1))
    assert (mm[:, 0] == 0).all() and (np.diag(mm) == 0).all()
    zero = max_marginals(np.zeros((n + 1, n + 1)), root)[1]  # every tree ties, and every arc is in one
    assert ((zero[:, 1:] == 1.0) | np.eye(n + 1, dtype=bool)[:, 1:]).all()


@pytest.mark.parametrize("root", ROOTS)
def test_no_finite_tree(root):
    check_no_finite_tree(eisner_argmax, inside, inside_outside, np.full((4, 4), -np.inf), root)


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
@pytest.mark.parametrize("kind", LARGE_KINDS)
def test_large_scores_match_brute_force(n, root, kind):
    s = large_scores(np.random.default_rng(n), n, kind)
    check_large_scores(eisner_argmax, inside_outside, s, root, projective_trees(n, root))


@pytest.mark.parametrize("root", ROOTS)
def test_long_sentence_all_zero_scores(root):
    n = 150
    s = np.zeros((n + 1, n + 1))
    log_z, mu = inside_outside(s, root)
    assert log_z == pytest.approx(math.log(count_projective_trees(n, root)), rel=1e-12)
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
    check_distributions(mu, tol=1e-9, sum_tol=1e-9)
    heads = eisner_argmax(s, root)
    assert is_projective_tree(heads, root)
    check_best_and_log_z(inside, s, root, tree_score(s, heads), math.log(count_projective_trees(n, root)), log_z)


# ---------------------------------------------------------------------------
# Properties
# ---------------------------------------------------------------------------


@settings(deadline=None, max_examples=150)
@given(s=arc_scores(), root=st.sampled_from(ROOTS))
def test_marginals_are_distributions_over_heads(s, root):
    check_distributions(inside_outside(s, root)[1])


@settings(deadline=None, max_examples=150)
@given(s=arc_scores(), root=st.sampled_from(ROOTS))
def test_argmax_is_an_optimal_tree_of_its_space(s, root):
    n = len(s) - 1
    heads = eisner_argmax(s, root)
    assert is_projective_tree(heads, root)
    best = tree_score(s, heads)
    check_best_and_log_z(inside, s, root, best, math.log(count_projective_trees(n, root)), inside(s, root))


@settings(deadline=None, max_examples=150)
@given(
    s=arc_scores(),
    root=st.sampled_from(ROOTS),
    c=st.floats(-20, 20, allow_nan=False),
    data=st.data(),
)
def test_shift_of_one_modifier_keeps_marginals(s, root, c, data):
    check_shift_of_one_modifier(inside_outside, s, root, c, data.draw(st.integers(1, len(s) - 1)))


@pytest.mark.parametrize("root", ROOTS)
@pytest.mark.parametrize("seed", [0, 1])
def test_marginals_are_gradient_of_log_z(root, seed):
    check_gradient(inside, inside_outside, root, seed)


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


@pytest.mark.parametrize("bad, match", INVALID_SCORES)
def test_invalid_scores_raise(bad, match):
    check_invalid_scores((eisner_argmax, inside, inside_outside), eisner_argmax_augmented, bad, match)
    with pytest.raises(ValueError, match=match):
        tree_score(bad, np.array([-1, 0, 1]))


@pytest.mark.parametrize("root", INVALID_ROOTS)
def test_invalid_root_raises(root):
    check_invalid_root((eisner_argmax, inside, inside_outside), eisner_argmax_augmented, root)


def test_invalid_cost_raises():
    check_invalid_cost(eisner_argmax_augmented)


@pytest.mark.parametrize(
    "heads",
    [[-1, 0], [0, 0, 1], [-1, 3, 0], [-1, 1, 0], [-1.0, 0.0, 1.0], [-1, 0, -1]],
)
def test_invalid_heads_raise(heads):
    with pytest.raises(ValueError, match="heads"):
        tree_score(np.zeros((3, 3)), np.array(heads))
