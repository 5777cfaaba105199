"""Tests for parser.eisner_grandparents (sibling and grandparent parts) against a brute-force twin.

The twin takes every projective tree of a short sentence from
``projective_trees``, scores each through ``tree_parts`` (sibling parts) and
``grand_parts`` (grandparent parts) and computes log Z, both kinds of part
marginals and the best score directly.  With no grandparent scores the
third-order chart must reproduce the second-order one of parser.eisner_siblings.
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
    tree_parts,
)
from egnlp.parser.eisner_grandparents import (
    grand_argmax,
    grand_indicator,
    grand_log_partition,
    grand_marginals,
    grand_parts,
)

from tree_space_checks import (KINDS, ROOTS, check_invalid_trees, count_projective_trees, head_of_part, in_space,
                               modifier_of_part, projective_trees, random_tree)


# ---------------------------------------------------------------------------
# Brute-force twin
# ---------------------------------------------------------------------------


@functools.lru_cache(maxsize=None)
def tree_tables(n: int, root: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(sib, grand, has_grand) over the trees of the space: sib (K, n) flat sibling parts; grand
    (K, n) flat indices into G.ravel() of each word's grandparent part (0 where the word's head is
    the root), has_grand (K, n) bool."""
    trees = projective_trees(n, root)
    size = n + 1
    sib = np.array([tree_parts(t) for t in trees], dtype=np.int64)
    h = trees[:, 1:]
    g = np.take_along_axis(trees, np.maximum(h, 0), axis=1)
    m = np.arange(1, size)[None, :]
    has_grand = h >= 1
    grand = np.where(has_grand, (g * size + h) * size + m, 0)
    return sib, grand, has_grand


def brute_scores(theta: np.ndarray, G: np.ndarray, n: int, root: str) -> np.ndarray:
    sib, grand, has_grand = tree_tables(n, root)
    return theta[sib].sum(axis=1) + np.where(has_grand, G.ravel()[grand], 0.0).sum(axis=1)


def brute(theta: np.ndarray, G: np.ndarray, n: int, root: str):
    """(max score, log Z, mu_sib, mu_grand) over the tree space by enumeration."""
    sib, grand, has_grand = tree_tables(n, root)
    scores = brute_scores(theta, G, n, root)
    log_z = float(logsumexp(scores))
    mu_sib = np.zeros_like(theta)
    mu_grand = np.zeros(G.size)
    if log_z > -np.inf:
        p = np.exp(scores - log_z)
        np.add.at(mu_sib, sib.ravel(), np.repeat(p, n))
        np.add.at(mu_grand, grand[has_grand], np.broadcast_to(p[:, None], grand.shape)[has_grand])
    return float(scores.max()), log_z, mu_sib, mu_grand.reshape(G.shape)


def score(theta: np.ndarray, G: np.ndarray, heads: np.ndarray) -> float:
    """A tree's score by indexing (the indicators would give -inf * 0 = NaN on forbidden parts)."""
    g, h, m = grand_parts(heads).T
    return float(theta[tree_parts(heads)].sum() + G[g, h, m].sum())


# ---------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------


def used_grand_entries(size: int) -> np.ndarray:
    """(size,) * 3 bool: the G[g, h, m] a projective tree may use (h, m words, h != m, g != h, m, and
    g not strictly between h and m)."""
    g, h, m = np.indices((size,) * 3)
    between = (np.minimum(h, m) < g) & (g < np.maximum(h, m))
    return (h >= 1) & (m >= 1) & (h != m) & (g != h) & (g != m) & ~between


def arc_marginals(mu_sib: np.ndarray, size: int) -> np.ndarray:
    """(size, size) P(arc h -> m): the sum of the arc's sibling-part marginals."""
    arcs = np.zeros((size, size))
    np.add.at(arcs, (head_of_part(size), modifier_of_part(size)), mu_sib)
    return arcs


def random_scores(rng: np.random.Generator, size: int, kind: str) -> tuple[np.ndarray, np.ndarray]:
    """(theta, G): normal scores; with ``forbid`` about a quarter of each are -inf; ``ties``:
    integers in -2..2.  The entries of G no tree uses hold junk (+-1e300, -inf) that must not be read."""
    total = n_sibling_parts(size)
    if kind == "ties":
        theta = rng.integers(-2, 3, size=total).astype(np.float64)
        G = rng.integers(-2, 3, size=(size,) * 3).astype(np.float64)
    else:
        theta = rng.normal(scale=2.0, size=total)
        G = rng.normal(scale=2.0, size=(size,) * 3)
        if kind == "forbid":
            theta[rng.random(total) < 0.25] = -np.inf
            G[rng.random(G.shape) < 0.25] = -np.inf
    unused = ~used_grand_entries(size)
    G[unused] = rng.choice([1e300, -1e300, -np.inf], size=int(unused.sum()))
    return theta, G


# ---------------------------------------------------------------------------
# Grandparent parts of a tree
# ---------------------------------------------------------------------------


HAND_TREES = [
    # (heads, the (g, h, m) triples)
    ([-1, 0], []),
    ([-1, 0, 1], [(0, 1, 2)]),
    ([-1, 2, 0], [(0, 2, 1)]),
    ([-1, 0, 0, 0], []),
    ([-1, 0, 1, 2], [(0, 1, 2), (1, 2, 3)]),
    ([-1, 2, 0, 2, 3, 2], [(0, 2, 1), (0, 2, 3), (2, 3, 4), (0, 2, 5)]),
    # Non-projective: 3 -> 1 crosses 4 -> 2.
    ([-1, 3, 4, 0, 3], [(0, 3, 1), (3, 4, 2), (0, 3, 4)]),
]


@pytest.mark.parametrize("heads, triples", HAND_TREES)
def test_grand_parts_of_hand_written_trees(heads, triples):
    size = len(heads)
    parts = grand_parts(np.array(heads))
    assert parts.dtype == np.int64 and parts.shape == (len(triples), 3)
    assert [tuple(row) for row in parts.tolist()] == triples
    ind = grand_indicator(np.array(heads), size)
    want = np.zeros((size,) * 3)
    for g, h, m in triples:
        want[g, h, m] = 1.0
    assert ind.dtype == np.float64
    np.testing.assert_array_equal(ind, want)
    np.testing.assert_array_equal(grand_indicator(heads), want)


def test_grand_parts_of_random_trees_match_the_definition():
    rng = np.random.default_rng(5)
    for n in [1, 2, 5, 9, 20]:
        for _ in range(10):
            heads = random_tree(rng, n)
            want = [(int(heads[heads[m]]), int(heads[m]), m) for m in range(1, n + 1) if heads[m] >= 1]
            assert [tuple(row) for row in grand_parts(heads).tolist()] == want
            assert grand_indicator(heads).sum() == len(want)


# ---------------------------------------------------------------------------
# Against brute force
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("root", ROOTS)
@pytest.mark.parametrize("n", range(1, 7))
def test_against_brute_force(n, root, kind):
    size = n + 1
    used = used_grand_entries(size)
    rng = np.random.default_rng(1000 * n + 10 * KINDS.index(kind) + ROOTS.index(root))
    for _ in range(3):
        theta, G = random_scores(rng, size, kind)
        best, log_z, mu_sib, mu_grand = brute(theta, G, n, root)
        assert grand_log_partition(theta, G, size, root) == pytest.approx(log_z, rel=1e-9, abs=1e-12)
        if best == -np.inf:
            with pytest.raises(ValueError, match="-inf"):
                grand_argmax(theta, G, size, root)
            with pytest.raises(ValueError, match="-inf"):
                grand_marginals(theta, G, size, root)
            continue
        heads = grand_argmax(theta, G, size, root)
        assert in_space(heads, root)
        if kind == "ties":
            assert score(theta, G, heads) == best  # sums of small integers: exact
        else:
            assert score(theta, G, heads) == pytest.approx(best, rel=1e-12, abs=1e-12)
        log_z2, mu_sib2, mu_grand2 = grand_marginals(theta, G, size, root)
        assert log_z2 == pytest.approx(log_z, rel=1e-9, abs=1e-12)
        assert mu_grand2.shape == G.shape and mu_sib2.shape == theta.shape
        np.testing.assert_allclose(mu_sib2, mu_sib, rtol=0, atol=1e-9)
        np.testing.assert_allclose(mu_grand2, mu_grand, rtol=0, atol=1e-9)
        assert (mu_sib2[theta == -np.inf] == 0.0).all() and (mu_grand2[G == -np.inf] == 0.0).all()
        assert (mu_grand2[~used] == 0.0).all()
        # The grandparent parts of the arc h -> m (h >= 1) add up to its marginal.
        arcs = arc_marginals(mu_sib2, size)
        np.testing.assert_allclose(mu_grand2.sum(axis=0)[1:], arcs[1:], rtol=0, atol=1e-9)


@pytest.mark.parametrize("root", ROOTS)
def test_unique_best_tree_is_found(root):
    n, size = 6, 7
    rng = np.random.default_rng(61 + ROOTS.index(root))
    trees = projective_trees(n, root)
    for _ in range(5):
        theta, G = random_scores(rng, size, "normal")
        scores = brute_scores(theta, G, n, root)
        order = np.argsort(-scores)
        assert scores[order[0]] - scores[order[1]] > 1e-9
        np.testing.assert_array_equal(grand_argmax(theta, G, size, root), trees[order[0]])


@pytest.mark.parametrize("root", ROOTS)
def test_marginals_are_the_gradient_of_log_z(root):
    size, eps = 6, 1e-5
    rng = np.random.default_rng(3 + ROOTS.index(root))
    theta, G = random_scores(rng, size, "normal")
    _, mu_sib, mu_grand = grand_marginals(theta, G, size, root)

    def fd(plus_minus):
        return (grand_log_partition(*plus_minus(eps), size, root)
                - grand_log_partition(*plus_minus(-eps), size, root)) / (2 * eps)

    for k in list(rng.choice(len(theta), size=6, replace=False)) + [int(np.argmax(mu_sib))]:
        def bump_theta(d, k=k):
            t = theta.copy()
            t[k] += d
            return t, G
        assert fd(bump_theta) == pytest.approx(mu_sib[k], abs=1e-7)
    used = np.flatnonzero(used_grand_entries(size))
    for k in list(rng.choice(used, size=6, replace=False)) + [int(np.argmax(mu_grand))]:
        def bump_grand(d, k=k):
            g = G.copy()
            g.flat[k] += d
            return theta, g
        assert fd(bump_grand) == pytest.approx(mu_grand.flat[k], abs=1e-7)
    # An entry no tree uses moves nothing.
    unused = np.flatnonzero(~used_grand_entries(size) & np.isfinite(G))
    for k in rng.choice(unused, size=3, replace=False):
        def bump_unused(d, k=k):
            g = G.copy()
            g.flat[k] += d * 1e290
            return theta, g
        assert fd(bump_unused) == 0.0 and mu_grand.flat[k] == 0.0


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("root", ROOTS)
def test_loss_augmented_argmax(root, kind):
    """A per-arc Hamming cost added to each sibling part of the arc: the argmax is the best tree of
    score + cost."""
    for n in range(1, 7):
        size = n + 1
        rng = np.random.default_rng(500 + 10 * n + KINDS.index(kind) + ROOTS.index(root))
        trees = projective_trees(n, root)
        heads_of, mods_of = head_of_part(size), modifier_of_part(size)
        for _ in range(2):
            theta, G = random_scores(rng, size, kind)
            gold = trees[rng.integers(len(trees))]
            cost = (heads_of != gold[mods_of]).astype(np.float64)
            hamming = (trees[:, 1:] != gold[1:]).sum(axis=1)
            augmented = brute_scores(theta, G, n, root) + hamming
            if augmented.max() == -np.inf:
                continue
            heads = grand_argmax(theta + cost, G, size, root)
            assert in_space(heads, root)
            value = score(theta, G, heads) + int((heads[1:] != gold[1:]).sum())
            assert value == pytest.approx(augmented.max(), rel=1e-12, abs=1e-12)


# ---------------------------------------------------------------------------
# Against the second-order chart
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("root", ROOTS)
@pytest.mark.parametrize("n", [1, 2, 3, 5, 8, 12])
def test_no_grandparent_scores_match_eisner2(n, root):
    size = n + 1
    rng = np.random.default_rng(20 + n + 100 * ROOTS.index(root))
    for kind in ("normal", "forbid"):
        theta, _ = random_scores(rng, size, kind)
        G = np.zeros((size,) * 3)
        assert grand_log_partition(theta, G, size, root) == pytest.approx(
            sibling_log_partition(theta, size, root), rel=1e-12, abs=1e-12)
        np.testing.assert_array_equal(grand_argmax(theta, G, size, root), sibling_argmax(theta, size, root))
        _, mu_sib, mu_grand = grand_marginals(theta, G, size, root)
        _, mu = sibling_marginals(theta, size, root)
        np.testing.assert_allclose(mu_sib, mu, rtol=0, atol=1e-9)
        np.testing.assert_allclose(mu_grand.sum(axis=0)[1:], arc_marginals(mu, size)[1:], rtol=0, atol=1e-9)


@pytest.mark.parametrize("root", ROOTS)
def test_grandparent_scores_of_the_arc_alone_move_into_the_sibling_parts(root):
    """G[g, h, m] = a[h, m] for every g adds a[h, m] to the arc h -> m (h >= 1): eisner2 with a[h, m]
    added to the arc's sibling parts."""
    size = 13
    rng = np.random.default_rng(9 + ROOTS.index(root))
    theta, _ = random_scores(rng, size, "normal")
    a = rng.normal(scale=2.0, size=(size, size))
    G = np.broadcast_to(a, (size,) * 3).copy()
    shifted = theta + np.where(head_of_part(size) >= 1, a[head_of_part(size), modifier_of_part(size)], 0.0)
    assert grand_log_partition(theta, G, size, root) == pytest.approx(
        sibling_log_partition(shifted, size, root), rel=1e-12)
    np.testing.assert_array_equal(grand_argmax(theta, G, size, root), sibling_argmax(shifted, size, root))
    _, mu_sib, _ = grand_marginals(theta, G, size, root)
    np.testing.assert_allclose(mu_sib, sibling_marginals(shifted, size, root)[1], rtol=0, atol=1e-9)


# ---------------------------------------------------------------------------
# Long sentences, large scores
# ---------------------------------------------------------------------------


def check_long(theta: np.ndarray, G: np.ndarray, n: int, root: str):
    size = n + 1
    heads = grand_argmax(theta, G, size, root)
    assert in_space(heads, root)
    best = score(theta, G, heads)
    assert np.isfinite(best)
    _, mu_sib, mu_grand = grand_marginals(theta, G, size, root)
    # Marginals: probabilities, one sibling part per word, grandparent parts on the arcs of words.
    for mu in (mu_sib, mu_grand):
        assert np.isfinite(mu).all() and (mu >= 0).all() and (mu <= 1).all()
    arcs = arc_marginals(mu_sib, size)
    np.testing.assert_allclose(arcs[:, 1:].sum(axis=0), 1.0, rtol=0, atol=1e-9)
    np.testing.assert_allclose(mu_grand.sum(axis=0)[1:], arcs[1:], rtol=0, atol=1e-9)
    assert (mu_grand[~used_grand_entries(size)] == 0.0).all()
    if root == "single":
        assert arcs[0].sum() == pytest.approx(1.0, abs=1e-9)
    log_z = grand_log_partition(theta, G, size, root)
    assert np.isfinite(log_z)
    # max <= log Z <= max + log(#trees)
    log_count = math.log(count_projective_trees(n, root))
    assert best <= log_z + 1e-9 * abs(log_z)
    assert log_z <= best + log_count + 1e-6
    # At a low temperature log Z / beta pins the maximum within log(#trees) / beta.
    beta = 1e3
    sharp = grand_log_partition(beta * theta, beta * G, size, root) / beta
    assert best >= sharp - log_count / beta - 1e-6 * abs(sharp)


@pytest.mark.parametrize("root", ROOTS)
def test_long_sentence_n100(root):
    rng = np.random.default_rng(100 + ROOTS.index(root))
    n = 100
    size = n + 1
    theta = rng.uniform(-1e3, 1e3, size=n_sibling_parts(size))
    theta[rng.random(len(theta)) < 0.1] = -np.inf
    G = rng.uniform(-1e3, 1e3, size=(size,) * 3)
    G[rng.random(G.shape) < 0.1] = -np.inf
    check_long(theta, G, n, root)


@pytest.mark.parametrize("offset", [1e3, -1e3])
def test_near_ties_on_a_large_offset(offset):
    """Every tree has n sibling parts, so a common offset shifts log Z by n * offset and leaves the
    marginals alone."""
    rng = np.random.default_rng(11)
    n = 40
    size = n + 1
    theta = rng.uniform(-1.0, 1.0, size=n_sibling_parts(size))
    G = rng.uniform(-1.0, 1.0, size=(size,) * 3)
    _, mu_sib0, mu_grand0 = grand_marginals(theta, G, size)
    _, mu_sib, mu_grand = grand_marginals(theta + offset, G, size)
    assert grand_log_partition(theta + offset, G, size) == pytest.approx(
        grand_log_partition(theta, G, size) + n * offset, rel=1e-12)
    np.testing.assert_allclose(mu_sib, mu_sib0, rtol=0, atol=1e-9)
    np.testing.assert_allclose(mu_grand, mu_grand0, rtol=0, atol=1e-9)
    assert (grand_argmax(theta + offset, G, size) == grand_argmax(theta, G, size)).all()


@pytest.mark.parametrize("root", ROOTS)
def test_no_finite_tree(root):
    size = 4
    theta = np.full(n_sibling_parts(size), -np.inf)
    G = np.zeros((size,) * 3)
    assert grand_log_partition(theta, G, size, root) == -np.inf
    with pytest.raises(ValueError, match="-inf"):
        grand_argmax(theta, G, size, root)
    with pytest.raises(ValueError, match="-inf"):
        grand_marginals(theta, G, size, root)
    # Only the chain 0 -> 1 -> 2 -> 3 left: it is the argmax and has marginals 1.
    heads = np.array([-1, 0, 1, 2])
    theta[tree_parts(heads)] = 0.5
    G[0, 1, 2], G[1, 2, 3] = 0.25, -1.0
    assert grand_argmax(theta, G, size, root).tolist() == heads.tolist()
    assert grand_log_partition(theta, G, size, root) == pytest.approx(0.75)
    _, mu_sib, mu_grand = grand_marginals(theta, G, size, root)
    np.testing.assert_array_equal(mu_sib, sibling_indicator(heads))
    np.testing.assert_array_equal(mu_grand, grand_indicator(heads))


def test_forbidden_grandparents_leave_the_flat_tree():
    """With every grandparent part forbidden, only the trees whose words all attach to the root are
    left: one in the multi-root space, none in the single-root space (n >= 2)."""
    size = 5
    theta = np.zeros(n_sibling_parts(size))
    G = np.full((size,) * 3, -np.inf)
    assert grand_argmax(theta, G, size, "multi").tolist() == [-1, 0, 0, 0, 0]
    assert grand_log_partition(theta, G, size, "multi") == 0.0
    assert grand_log_partition(theta, G, size, "single") == -np.inf


# ---------------------------------------------------------------------------
# Input validation
# ---------------------------------------------------------------------------


FUNCTIONS = [grand_argmax, grand_log_partition, grand_marginals]


@pytest.mark.parametrize("fn", FUNCTIONS)
def test_wrappers_reject_bad_input(fn):
    size = 5
    theta = np.zeros(n_sibling_parts(size))
    G = np.zeros((size,) * 3)
    with pytest.raises(ValueError, match="entries"):
        fn(theta[:-1], G, size)
    with pytest.raises(ValueError, match="entries"):
        fn(theta, G, size + 1)
    with pytest.raises(ValueError, match="1-D"):
        fn(theta[None, :], G, size)
    bad = theta.copy()
    bad[3] = np.nan
    with pytest.raises(ValueError, match="theta contains NaN"):
        fn(bad, G, size)
    bad[3] = np.inf
    with pytest.raises(ValueError, match=r"theta contains \+inf"):
        fn(bad, G, size)
    with pytest.raises(ValueError, match="3-D"):
        fn(theta, G[0], size)
    with pytest.raises(ValueError, match="shape"):
        fn(theta, np.zeros((size, size, size + 1)), size)
    with pytest.raises(ValueError, match="shape"):
        fn(theta, np.zeros((size - 1,) * 3), size)
    with pytest.raises(ValueError, match="floating"):
        fn(theta, G.astype(np.int64), size)
    bad = G.copy()
    bad[0, 0, 0] = np.nan  # also where no tree looks
    with pytest.raises(ValueError, match="G contains NaN"):
        fn(theta, bad, size)
    bad[0, 0, 0] = np.inf
    with pytest.raises(ValueError, match=r"G contains \+inf"):
        fn(theta, bad, size)
    for root in ["none", "Single", "", None]:
        with pytest.raises(ValueError, match="root"):
            fn(theta, G, size, root)
    for small in [1, 0, -2]:
        with pytest.raises(ValueError, match="size"):
            fn(np.zeros(0), np.zeros((max(small, 0),) * 3), small)
    with pytest.raises(ValueError, match="size"):
        fn(theta, G, 5.0)
    with pytest.raises(ValueError, match="floating"):
        fn(theta.astype(np.int64), G, size)
    fn(theta.astype(np.float32), G.astype(np.float32), size)  # other float dtypes are converted


def test_tree_functions_reject_bad_input():
    check_invalid_trees(grand_parts, grand_indicator)
    with pytest.raises(ValueError, match="size"):
        grand_indicator(np.array([-1, 0, 1]), 4)


def long_pruned_sentence(root: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A 120-word sentence with about 6 kept heads per word (its left neighbour among them) and random
    scores: (theta, G, keep)."""
    rng = np.random.default_rng(120 + len(root))
    n = 120
    size = n + 1
    keep = np.zeros((size, size), dtype=np.uint8)
    for m in range(1, size):
        near = np.clip(m + rng.integers(-8, 9, size=6), 0, n)
        keep[near, m] = 1
        keep[m - 1, m] = 1
    keep[0, rng.integers(1, size, size=4)] = 1
    np.fill_diagonal(keep, 0)
    theta = rng.normal(scale=2.0, size=n_sibling_parts(size))
    G = rng.normal(scale=2.0, size=(size,) * 3)
    return theta, G, keep


def unset_chart_results(args, fill):
    """(best, heads, C, I of the max-plus fill; log Z, mu_sib, mu_grand, C, I of the sum-product one) from
    the kernels' steps over charts whose unset sibling charts S, ST are set to ``fill`` first."""
    from egnlp.parser.eisner_grandparents import _backtrack, _chart_index, _charts, _fill, _outside_pass

    theta, off, g, goff, single, keep, hptr, hidx = args
    out = []
    for use_max in (True, False):
        index = _chart_index(hptr, hidx)
        charts = _charts(hptr, index[3])
        for chart in charts[3:]:
            chart[:] = fill(chart.shape)
        value = _fill(theta, off, g, goff, single, use_max, keep, hptr, hidx, index, charts)
        if use_max:
            out += [value, _backtrack(theta, off, single, hptr, index, charts)]
        else:
            out += [value, *_outside_pass(theta, off, g, goff, single, keep, hptr, hidx, index, charts)]
        out += [charts[0], charts[2]]
    return out


#: The long sentences' results from the dense (n + 1)^3 charts these compact ones replaced: the digest
#: of the best tree's heads, its score, log Z, and sums of the marginals.
LONG_RESULTS = {
    "multi": ("a78629a5f1ed7d38", 275.97393098372606, 285.68581242938063, 353.6284254062683, 220.1403929742211,
              115.77261955010152),
    "single": ("23b7a122c5fdbbfd", 307.5500971331994, 319.0262124178305, 367.6043480188655, 240.81004970298687,
               119.00000000000401),
}


@pytest.mark.parametrize("root", ROOTS)
def test_charts_need_no_initial_value_where_unset(root):
    """The kernels leave the sibling charts S, ST unset: over every arc, over random masks of kept arcs
    and over a long pruned sentence, the charts, the best tree and score, log Z and the marginals are
    the same whatever those charts hold (-inf, +inf, NaN, large finite values), and the same as the
    kernels' own; the long sentence's are those of the dense charts before them."""
    import hashlib

    from egnlp.parser.eisner_grandparents import _argmax_kernel, _inside_kernel, _inside_outside_kernel, _prepare

    rng = np.random.default_rng(7)
    cases = []
    for n in (1, 3, 6, 11, 17):
        size = n + 1
        for keep in (None, rng.random((size, size)) < 0.5):
            if keep is not None:
                keep[rng.integers(0, size, size=size), np.arange(size)] = True  # a head for every word
                keep[0, 1:] |= rng.random(n) < 0.3
            cases.append((rng.normal(size=n_sibling_parts(size)), rng.normal(size=(size, size, size)), keep))
    cases.append(long_pruned_sentence(root))
    fills = [lambda shape, v=v: np.full(shape, v) for v in (-np.inf, np.inf, np.nan, 1e300)]
    fills.append(lambda shape: rng.normal(size=shape) * 1e6)
    for theta, G, keep in cases:
        size = G.shape[0]
        args, _ = _prepare(theta, G, size, root, keep)
        best, heads = _argmax_kernel(*args)
        log_z, mu_sib, mu_grand = _inside_outside_kernel(*args)
        assert _inside_kernel(*args) == log_z
        first = unset_chart_results(args, fills[0])
        assert first[0] == best
        np.testing.assert_array_equal(first[1], heads)
        assert first[4] == log_z
        np.testing.assert_array_equal(first[5], mu_sib)
        np.testing.assert_array_equal(first[6], mu_grand)
        for fill in fills[1:]:
            for a, b in zip(unset_chart_results(args, fill), first):
                np.testing.assert_array_equal(a, b)
        if size > 100:
            digest, score, z, sib, grand, total = LONG_RESULTS[root]
            assert hashlib.sha256(heads.astype("<i8").tobytes()).hexdigest()[:16] == digest
            assert best == pytest.approx(score, rel=1e-12)
            assert log_z == pytest.approx(z, rel=1e-12)
            z, mu_sib, mu_g = grand_marginals(theta, G, size, root, keep)
            assert float(mu_sib @ (np.arange(mu_sib.shape[0]) % 7)) == pytest.approx(sib, rel=1e-12)
            assert float((mu_g * (np.arange(mu_g.size).reshape(mu_g.shape) % 5)).sum()) == pytest.approx(grand,
                                                                                                        rel=1e-12)
            assert mu_g.sum() == pytest.approx(total, rel=1e-12)
