"""check_tree (parser.tree_checks) against pointer doubling on random head arrays, n up to 300."""

from __future__ import annotations

import numpy as np
import pytest

from egnlp.parser.tree_checks import check_tree
from tree_space_checks import reaches_root


def _random_heads(rng: np.random.Generator, n: int) -> np.ndarray:
    """Heads in 0..n, none a word's own: a tree or not (cycles are likely for large n)."""
    heads = np.full(n + 1, -1, dtype=np.int64)
    for m in range(1, n + 1):
        heads[m] = rng.choice([h for h in range(n + 1) if h != m])
    return heads


def _random_tree(rng: np.random.Generator, n: int) -> np.ndarray:
    """A random tree (any, projective or not): each word of a random order hangs on an earlier one or 0."""
    order = rng.permutation(np.arange(1, n + 1))
    heads = np.full(n + 1, -1, dtype=np.int64)
    for k, m in enumerate(order):
        heads[m] = 0 if k == 0 else (0 if rng.random() < 0.05 else order[rng.integers(k)])
    return heads


@pytest.mark.parametrize("seed", range(6))
def test_check_tree_accepts_exactly_the_trees(seed):
    rng = np.random.default_rng(seed)
    trees = cycles = 0
    for n in list(range(1, 12)) + [100, 150]:
        for heads in (_random_heads(rng, n), _random_tree(rng, n)):
            if reaches_root(heads):
                trees += 1
                assert check_tree(heads).tolist() == heads.tolist()
            else:
                cycles += 1
                with pytest.raises(ValueError, match="cycle"):
                    check_tree(heads)
    assert trees and cycles


def test_check_tree_long_chain_and_star():
    """A chain of 300 words (the deepest walk) and a star are trees; closing the chain makes a cycle."""
    n = 300
    chain = np.arange(-1, n, dtype=np.int64)
    assert check_tree(chain).tolist() == chain.tolist()
    star = np.zeros(n + 1, dtype=np.int64)
    star[0] = -1
    assert check_tree(star).tolist() == star.tolist()
    chain[1] = n
    with pytest.raises(ValueError, match="cycle"):
        check_tree(chain)


@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.int64])
def test_check_tree_returns_int64(dtype):
    out = check_tree(np.array([-1, 0, 1, 1], dtype=dtype))
    assert out.dtype == np.int64 and out.flags.c_contiguous and out.tolist() == [-1, 0, 1, 1]
