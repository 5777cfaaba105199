"""Tests for parser.rearrange: the greedy non-projective rearrangement of McDonald and Pereira (2006, Sec. 3.2).

A tree's score is checked against the sum of its parts (``tree_parts``, ``grand_parts``); the rearranged
tree against the projective argmax it starts from and against every single head change (brute force):
none may raise its score, none may leave the root constraint or the cascade's mask.
"""

from __future__ import annotations

import numpy as np
import pytest

from egnlp.parser.eisner_grandparents import grand_argmax, grand_parts
from egnlp.parser.eisner_siblings import n_sibling_parts, sibling_argmax, tree_parts
from egnlp.parser.rearrange import rearrange, tree_score
from egnlp.parser.tree_checks import check_tree

from tree_space_checks import ROOTS, random_tree


def parts_score(heads: np.ndarray, theta: np.ndarray, G: np.ndarray | None) -> float:
    """The score of a tree as the sum of its parts, through the charts' own part lists."""
    total = float(theta[tree_parts(heads)].sum())
    if G is not None:
        g = grand_parts(heads)
        total += float(G[g[:, 0], g[:, 1], g[:, 2]].sum())
    return total


def random_parts(rng: np.random.Generator, n: int, grand: bool) -> tuple[np.ndarray, np.ndarray | None]:
    size = n + 1
    theta = rng.normal(size=n_sibling_parts(size))
    return theta, (rng.normal(size=(size, size, size)) if grand else None)


def is_tree(heads: np.ndarray) -> bool:
    try:
        check_tree(heads)
    except ValueError:
        return False
    return True


def single_changes(heads: np.ndarray, root: str, keep: np.ndarray | None):
    """Every tree one head change away from ``heads`` that keeps the root constraint and the mask."""
    n1 = len(heads)
    for m in range(1, n1):
        for h in range(n1):
            if h in (m, heads[m]) or (keep is not None and not keep[h, m]):
                continue
            other = heads.copy()
            other[m] = h
            if is_tree(other) and (root == "multi" or int((other[1:] == 0).sum()) == 1):
                yield other


def projective_start(theta, G, size, root, keep=None):
    return sibling_argmax(theta, size, root, keep) if G is None else grand_argmax(theta, G, size, root, keep)


@pytest.mark.parametrize("grand", [False, True])
@pytest.mark.parametrize("seed", range(5))
def test_tree_score_is_the_sum_of_the_tree_parts(seed, grand):
    rng = np.random.default_rng(seed)
    for n in (1, 2, 5, 9):
        theta, G = random_parts(rng, n, grand)
        for _ in range(10):
            heads = random_tree(rng, n)
            assert tree_score(heads, theta, G) == pytest.approx(parts_score(heads, theta, G), abs=1e-9)


@pytest.mark.parametrize("grand", [False, True])
@pytest.mark.parametrize("root", ROOTS)
@pytest.mark.parametrize("seed", range(12))
def test_rearranged_tree_is_a_tree_at_least_as_good_and_a_local_optimum(seed, root, grand):
    rng = np.random.default_rng(100 + seed)
    n = int(rng.integers(2, 8))
    size = n + 1
    theta, G = random_parts(rng, n, grand)
    start = projective_start(theta, G, size, root)
    heads, score, steps = rearrange(start, theta, G, root)
    assert is_tree(heads) and heads.dtype == np.int64
    assert root == "multi" or int((heads[1:] == 0).sum()) == 1
    assert score == pytest.approx(parts_score(heads, theta, G), abs=1e-9)
    assert score >= parts_score(start, theta, G) - 1e-12
    assert (steps == 0) == bool((heads == start).all())
    for other in single_changes(heads, root, None):
        assert parts_score(other, theta, G) <= score + 1e-9, (heads, other)


def test_rearrangement_leaves_projective_trees_and_climbs_to_a_crossing_tree():
    """Parts that favour the crossing arcs 0 -> 2, 2 -> 4, 4 -> 1, 1 -> 3: the projective chart cannot give
    them, the search does."""
    n, size = 4, 5
    arcs = np.full((size, size), -5.0)
    for h, m in ((0, 2), (2, 4), (4, 1), (1, 3)):
        arcs[h, m] = 5.0
    theta = np.empty(n_sibling_parts(size))
    from egnlp.parser.eisner_siblings import sibling_offsets
    off = sibling_offsets(size)
    for h in range(size):
        for m in range(1, size):
            if m != h:
                theta[off[h, m]: off[h, m] + abs(h - m)] = arcs[h, m]
    start = sibling_argmax(theta, size, "single")
    heads, score, steps = rearrange(start, theta, None, "single")
    assert heads.tolist() == [-1, 4, 0, 1, 2] and score == 20.0 and steps >= 1
    assert parts_score(start, theta, None) < 20.0


@pytest.mark.parametrize("root", ROOTS)
@pytest.mark.parametrize("seed", range(8))
def test_moves_stay_within_the_cascade_mask(seed, root):
    rng = np.random.default_rng(200 + seed)
    n = int(rng.integers(3, 9))
    size = n + 1
    theta, G = random_parts(rng, n, bool(seed % 2))
    keep = (rng.random((size, size)) < 0.5).astype(np.uint8)
    keep[np.arange(n), np.arange(1, size)] = 1  # the chain 0 -> 1 -> ... -> n: a tree of both root spaces
    start = projective_start(theta, G, size, root, keep)
    heads, score, _ = rearrange(start, theta, G, root, keep)
    assert all(keep[heads[m], m] for m in range(1, size))
    assert score >= parts_score(start, theta, G) - 1e-12
    for other in single_changes(heads, root, keep):
        assert parts_score(other, theta, G) <= score + 1e-9


def test_bad_inputs_are_refused():
    theta = np.zeros(n_sibling_parts(4))
    good = np.array([-1, 0, 1, 2])
    with pytest.raises(ValueError, match="cycle"):
        rearrange(np.array([-1, 2, 1, 0]), theta)
    with pytest.raises(ValueError, match="n_sibling_parts"):
        rearrange(good, theta[:-1])
    with pytest.raises(ValueError, match="G must have shape"):
        rearrange(good, theta, np.zeros((3, 3, 3)))
    with pytest.raises(ValueError, match="one root child"):
        rearrange(np.array([-1, 0, 0, 2]), theta, root="single")
    with pytest.raises(ValueError, match="keep must have shape"):
        rearrange(good, theta, keep=np.ones((3, 3)))
    with pytest.raises(ValueError, match="NaN"):
        tree_score(good, np.full(n_sibling_parts(4), np.nan))

