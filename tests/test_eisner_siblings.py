"""Tests for parser.eisner_siblings (second-order sibling parts) against a brute-force twin.

The twin enumerates every head assignment of a short sentence, keeps the
trees (acyclic, rooted at 0) that are projective by the dominance definition
(every word between h and m descends from h), scores each through
``tree_parts`` and computes log Z, the part marginals and the best score
directly.  ``tree_parts`` itself is checked against hand-written (h, s, m)
triples and a naive definition of the previous sibling.
"""

from __future__ import annotations

import functools
import math

import numpy as np
import pytest
from scipy.special import logsumexp

from egnlp.parser.eisner_siblings import (
    n_sibling_parts,
    sibling_argmax,
    sibling_indicator,
    sibling_log_partition,
    sibling_marginals,
    sibling_offsets,
    tree_parts,
)

from tree_space_checks import (KINDS, KNOWN_PROJECTIVE_COUNTS, ROOTS, check_invalid_trees, count_projective_trees,
                               head_of_part, in_space, modifier_of_part, projective_trees, random_tree)


@functools.lru_cache(maxsize=None)
def tree_part_matrix(n: int, root: str) -> np.ndarray:
    """(K, n) int64: the parts of every tree of the space, by ``tree_parts``."""
    return np.array([tree_parts(t) for t in projective_trees(n, root)], dtype=np.int64)


def brute(theta: np.ndarray, n: int, root: str) -> tuple[float, float, np.ndarray]:
    """(max score, log Z, marginals) over the tree space by enumeration."""
    parts = tree_part_matrix(n, root)
    scores = theta[parts].sum(axis=1)
    log_z = float(logsumexp(scores))
    mu = np.zeros_like(theta)
    if log_z > -np.inf:
        p = np.exp(scores - log_z)
        np.add.at(mu, parts.ravel(), np.repeat(p, n))
    return float(scores.max()), log_z, mu


# ---------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------


def part_index(off: np.ndarray, h: int, s: int | None, m: int) -> int:
    """Flat index of the sibling part (h, s, m); s None for no sibling."""
    return int(off[h, m] + (0 if s is None else abs(s - h)))


def naive_triples(heads) -> list[tuple[int, int | None, int]]:
    """The (h, s, m) part of every word by the definition: s is h's modifier on m's side that is
    closest to m among those strictly between h and m."""
    heads = list(heads)
    out = []
    for m in range(1, len(heads)):
        h = heads[m]
        between = [k for k in range(min(h, m) + 1, max(h, m)) if heads[k] == h]
        s = min(between, key=lambda k: abs(k - m)) if between else None
        out.append((h, s, m))
    return out


def score(theta: np.ndarray, heads: np.ndarray) -> float:
    return float(theta[tree_parts(heads)].sum())


def random_theta(rng: np.random.Generator, size: int, kind: str) -> np.ndarray:
    """Normal scores; with ``forbid`` about a quarter are -inf; ``ties``: integers in -2..2."""
    total = n_sibling_parts(size)
    if kind == "ties":
        return rng.integers(-2, 3, size=total).astype(np.float64)
    theta = rng.normal(scale=2.0, size=total)
    if kind == "forbid":
        theta[rng.random(total) < 0.25] = -np.inf
    return theta


# ---------------------------------------------------------------------------
# Parts layout
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("size", range(2, 13))
def test_n_sibling_parts_and_offsets_tile_the_flat_vector(size):
    expected = sum(abs(h - m) for h in range(size) for m in range(1, size) if m != h)
    assert n_sibling_parts(size) == expected
    off = sibling_offsets(size)
    assert off.shape == (size, size) and off.dtype == np.int64
    nxt = 0  # the cells follow each other in row-major (h, m) order, no gaps, no overlap
    for h in range(size):
        for m in range(size):
            assert off[h, m] == nxt, (h, m)
            if m != 0 and m != h:
                nxt += abs(h - m)
    assert nxt == expected


HAND_TREES = [
    # (heads, the (h, s, m) triples of words 1..n)
    ([-1, 0], [(0, None, 1)]),
    ([-1, 0, 1], [(0, None, 1), (1, None, 2)]),
    ([-1, 2, 0], [(2, None, 1), (0, None, 2)]),
    ([-1, 0, 0, 0], [(0, None, 1), (0, 1, 2), (0, 2, 3)]),
    # Projective, right siblings: 2 -> 3, 2 -> 5 (previous sibling 3).
    ([-1, 2, 0, 2, 3, 2], [(2, None, 1), (0, None, 2), (2, None, 3), (3, None, 4), (2, 3, 5)]),
    # Projective, left siblings of 5: 4 (closest), 3, 1.
    ([-1, 5, 3, 5, 5, 0, 5],
     [(5, 3, 1), (3, None, 2), (5, 4, 3), (5, None, 4), (0, None, 5), (5, None, 6)]),
    # Projective, three root children.
    ([-1, 0, 3, 0, 3, 6, 0],
     [(0, None, 1), (3, None, 2), (0, 1, 3), (3, None, 4), (6, None, 5), (0, 3, 6)]),
    # Non-projective: 3 -> 1 crosses 4 -> 2.
    ([-1, 3, 4, 0, 3], [(3, None, 1), (4, None, 2), (0, None, 3), (3, None, 4)]),
    # Non-projective: 5 -> 2 crosses 0 -> 3; 3 has siblings 4, 5 on the right.
    ([-1, 3, 5, 0, 3, 3], [(3, None, 1), (5, None, 2), (0, None, 3), (3, None, 4), (3, 4, 5)]),
    # Non-projective: 4 -> 6 crosses 0 -> 5; root children 1, 5; 1's right children 3, 4.
    ([-1, 0, 4, 1, 1, 0, 4],
     [(0, None, 1), (4, None, 2), (1, None, 3), (1, 3, 4), (0, 1, 5), (4, None, 6)]),
]


@pytest.mark.parametrize("heads, triples", HAND_TREES)
def test_indicator_of_hand_written_trees(heads, triples):
    size = len(heads)
    off = sibling_offsets(size)
    expected = [part_index(off, h, s, m) for h, s, m in triples]
    assert naive_triples(heads) == triples  # the twin's definition agrees with the hand
    assert tree_parts(np.array(heads)).tolist() == expected
    ind = sibling_indicator(np.array(heads))
    assert ind.shape == (n_sibling_parts(size),) and ind.dtype == np.float64
    want = np.zeros(n_sibling_parts(size))
    want[expected] = 1.0
    np.testing.assert_array_equal(ind, want)


def test_tree_parts_of_random_trees_match_the_definition():
    rng = np.random.default_rng(7)
    for n in [1, 2, 5, 9, 20, 40]:
        off = sibling_offsets(n + 1)
        for _ in range(20):
            heads = random_tree(rng, n)
            want = [part_index(off, h, s, m) for h, s, m in naive_triples(heads)]
            assert tree_parts(heads).tolist() == want
            assert sibling_indicator(heads).sum() == n


# ---------------------------------------------------------------------------
# Against brute force
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("root", ROOTS)
@pytest.mark.parametrize("n", range(1, 7))
def test_enumeration_counts(n, root):
    trees = projective_trees(n, root)
    assert len(trees) == KNOWN_PROJECTIVE_COUNTS[root][n - 1] == count_projective_trees(n, root)
    assert all(in_space(t, root) for t in trees)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("root", ROOTS)
@pytest.mark.parametrize("n", range(1, 7))
def test_against_brute_force(n, root, kind):
    size = n + 1
    rng = np.random.default_rng(1000 * n + 10 * KINDS.index(kind) + ROOTS.index(root))
    for _ in range(4):
        theta = random_theta(rng, size, kind)
        best, log_z, mu = brute(theta, n, root)
        assert sibling_log_partition(theta, size, root) == pytest.approx(log_z, rel=1e-9, abs=1e-12)
        if best == -np.inf:
            with pytest.raises(ValueError, match="-inf"):
                sibling_argmax(theta, size, root)
            with pytest.raises(ValueError, match="-inf"):
                sibling_marginals(theta, size, root)
            continue
        heads = sibling_argmax(theta, size, root)
        assert in_space(heads, root)
        if kind == "ties":
            assert score(theta, heads) == best
        else:
            assert score(theta, heads) == pytest.approx(best, rel=1e-12, abs=1e-12)
        log_z2, mu2 = sibling_marginals(theta, size, root)
        assert log_z2 == pytest.approx(log_z, rel=1e-9, abs=1e-12)
        assert log_z2 == sibling_log_partition(theta, size, root)
        np.testing.assert_allclose(mu2, mu, rtol=0, atol=1e-9)
        assert (mu2[theta == -np.inf] == 0.0).all()


@pytest.mark.parametrize("root", ROOTS)
def test_marginals_are_the_gradient_of_log_z(root):
    size, eps = 6, 1e-5
    rng = np.random.default_rng(3)
    theta = random_theta(rng, size, "normal")
    _, mu = sibling_marginals(theta, size, root)
    picks = list(rng.choice(len(theta), size=8, replace=False)) + [int(np.argmax(mu))]
    for k in picks:
        plus, minus = theta.copy(), theta.copy()
        plus[k] += eps
        minus[k] -= eps
        fd = (sibling_log_partition(plus, size, root) - sibling_log_partition(minus, size, root)) / (2 * eps)
        assert fd == pytest.approx(mu[k], abs=1e-7)


# ---------------------------------------------------------------------------
# Long sentences, large scores
# ---------------------------------------------------------------------------


def check_long(theta: np.ndarray, n: int, root: str, rng: np.random.Generator, n_random: int):
    size = n + 1
    heads = sibling_argmax(theta, size, root)
    assert in_space(heads, root)
    best = score(theta, heads)
    log_z, mu = sibling_marginals(theta, size, root)
    assert np.isfinite(log_z) and log_z == sibling_log_partition(theta, size, root)
    # max <= log Z <= max + log(#trees)
    assert best <= log_z + 1e-9 * abs(log_z)
    assert log_z <= best + math.log(count_projective_trees(n, root)) + 1e-6
    # At a low temperature log Z / beta pins the maximum within log(#trees) / beta.
    beta = 1e3
    sharp = sibling_log_partition(beta * theta, size, root) / beta
    assert best >= sharp - math.log(count_projective_trees(n, root)) / beta - 1e-6 * abs(sharp)
    # Marginals: probabilities, one part per word, n parts per tree.
    assert np.isfinite(mu).all() and (mu >= 0).all() and (mu <= 1).all()
    per_word = np.bincount(modifier_of_part(size), weights=mu, minlength=size)[1:]
    np.testing.assert_allclose(per_word, 1.0, rtol=0, atol=1e-9)
    assert mu.sum() == pytest.approx(n, abs=1e-6)
    root_mass = mu[head_of_part(size) == 0].sum()
    if root == "single":
        assert root_mass == pytest.approx(1.0, abs=1e-9)
    else:
        assert root_mass >= 1.0 - 1e-9
    # The argmax beats other projective trees of the space.
    for _ in range(n_random):
        other = sibling_argmax(rng.normal(size=len(theta)), size, root)
        assert in_space(other, root)
        assert score(theta, other) <= best


def test_long_sentence_n150():
    rng = np.random.default_rng(150)
    n = 150
    theta = rng.uniform(-1e3, 1e3, size=n_sibling_parts(n + 1))
    check_long(theta, n, "multi", rng, n_random=20)


@pytest.mark.parametrize("root", ROOTS)
def test_long_sentence_n100(root):
    rng = np.random.default_rng(100 + ROOTS.index(root))
    n = 100
    theta = rng.uniform(-1e3, 1e3, size=n_sibling_parts(n + 1))
    theta[rng.random(len(theta)) < 0.1] = -np.inf
    check_long(theta, n, root, rng, n_random=5)


@pytest.mark.parametrize("offset", [1e3, -1e3])
def test_near_ties_on_a_large_offset(offset):
    """Every tree has n parts, so a common offset shifts log Z by n * offset and leaves mu alone."""
    rng = np.random.default_rng(11)
    n = 60
    size = n + 1
    base = rng.uniform(-1.0, 1.0, size=n_sibling_parts(size))
    log_z0, mu0 = sibling_marginals(base, size)
    log_z, mu = sibling_marginals(base + offset, size)
    assert log_z == pytest.approx(log_z0 + n * offset, rel=1e-12)
    np.testing.assert_allclose(mu, mu0, rtol=0, atol=1e-9)
    assert (sibling_argmax(base + offset, size) == sibling_argmax(base, size)).all()


# ---------------------------------------------------------------------------
# Input validation
# ---------------------------------------------------------------------------


FUNCTIONS = [sibling_argmax, sibling_log_partition, sibling_marginals]


@pytest.mark.parametrize("fn", FUNCTIONS)
def test_wrappers_reject_bad_input(fn):
    size = 5
    theta = np.zeros(n_sibling_parts(size))
    with pytest.raises(ValueError, match="entries"):
        fn(theta[:-1], size)
    with pytest.raises(ValueError, match="entries"):
        fn(theta, size + 1)
    with pytest.raises(ValueError, match="1-D"):
        fn(theta[None, :], size)
    bad = theta.copy()
    bad[3] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        fn(bad, size)
    bad[3] = np.inf
    with pytest.raises(ValueError, match=r"\+inf"):
        fn(bad, size)
    with pytest.raises(ValueError, match="root"):
        fn(theta, size, "none")
    with pytest.raises(ValueError, match="size"):
        fn(np.zeros(0), 1)
    with pytest.raises(ValueError, match="size"):
        fn(theta, 5.0)
    with pytest.raises(ValueError, match="floating"):
        fn(theta.astype(np.int64), size)
    fn(theta.astype(np.float32), size)  # other float dtypes are converted


def test_layout_and_tree_functions_reject_bad_input():
    for size in [0, 1, -3, 2.5, True]:
        with pytest.raises(ValueError, match="size"):
            sibling_offsets(size)
        with pytest.raises(ValueError, match="size"):
            n_sibling_parts(size)
    check_invalid_trees(tree_parts, sibling_indicator)


@pytest.mark.parametrize("root", ROOTS)
def test_no_finite_tree(root):
    size = 4
    theta = np.full(n_sibling_parts(size), -np.inf)
    assert sibling_log_partition(theta, size, root) == -np.inf
    with pytest.raises(ValueError, match="-inf"):
        sibling_argmax(theta, size, root)
    with pytest.raises(ValueError, match="-inf"):
        sibling_marginals(theta, size, root)
    # Only the chain 0 -> 1 -> 2 -> 3 left: it is the argmax and has marginals 1.
    heads = np.array([-1, 0, 1, 2])
    theta[tree_parts(heads)] = 0.5
    assert sibling_argmax(theta, size, root).tolist() == heads.tolist()
    log_z, mu = sibling_marginals(theta, size, root)
    assert log_z == pytest.approx(1.5)
    np.testing.assert_array_equal(mu, sibling_indicator(heads))
