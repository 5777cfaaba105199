"""The checks of the tree algorithms' validating wrappers, written once for all of them.

The first-, second- and third-order charts (:mod:`egnlp.parser.eisner`,
:mod:`egnlp.parser.eisner_siblings`, :mod:`egnlp.parser.eisner_grandparents`) and
the non-projective algorithms (:mod:`egnlp.parser.nonprojective`) take the
same root constraint, the first-order ones the same arc scores, and all of
them raise the same error when no tree of the space has a finite score.

Tree spaces, chosen by ``root``:

* ``"multi"``: every tree rooted at 0 (projective for the charts, any for the
  non-projective algorithms); the root may have any number of children.
* ``"single"``: the trees in which the root has exactly one child.

A tree is an int64 array ``heads`` of length n + 1 with ``heads[0] == -1``
and ``heads[m]`` in 0..n the head of word m.
"""

from __future__ import annotations

import numpy as np
from numba import njit
from numpy.typing import ArrayLike, NDArray

ROOTS = ("single", "multi")


class NoTreeError(ValueError):
    """Every tree of the tree space scores -inf (its arcs are ruled out)."""


def check_root(root: str) -> str:
    """``root`` if it is ``single`` or ``multi``; ValueError otherwise."""
    if root not in ROOTS:
        raise ValueError(f"root must be 'single' or 'multi', not {root!r}")
    return root


def is_single_root(root: str) -> bool:
    """Whether ``root`` (checked by :func:`check_root`) asks for one root child: the kernels' flag."""
    return check_root(root) == "single"


def check_scores(scores: ArrayLike, name: str = "scores") -> NDArray[np.float64]:
    """Validate an (n + 1, n + 1) arc-score array [head, modifier]; return it as C-contiguous float64."""
    arr = np.asarray(scores)
    if arr.ndim != 2:
        raise ValueError(f"{name} must be a 2-D (n+1, n+1) array, got {arr.ndim} dimensions")
    if arr.shape[0] != arr.shape[1]:
        raise ValueError(f"{name} must be square (n+1, n+1), got shape {arr.shape}")
    if arr.shape[0] < 2:
        raise ValueError(
            f"{name} must have shape (n+1, n+1) with at least one word (n >= 1), got {arr.shape}"
        )
    return float_scores(arr, name)


def float_scores(arr: np.ndarray, name: str) -> NDArray[np.float64]:
    """Part scores ``arr`` (of a shape already checked) as C-contiguous float64, after checking that they
    are floating-point values, none NaN or +inf (-inf marks a part no tree may use); ``name`` names them
    in the errors."""
    if arr.dtype.kind != "f":  # np.issubdtype(arr.dtype, np.floating), without its cost on every sentence
        raise ValueError(f"{name} must hold floating-point values, got dtype {arr.dtype}")
    arr = np.ascontiguousarray(arr, dtype=np.float64)
    if not (arr < np.inf).all():  # false for NaN and +inf
        if np.isnan(arr).any():
            raise ValueError(f"{name} contains NaN")
        raise ValueError(f"{name} contains +inf (only finite values and -inf are allowed)")
    return arr


def arc_inputs(scores: ArrayLike, root: str) -> tuple[NDArray[np.float64], bool]:
    """(scores, single) validated for a first-order kernel ``kernel(scores, single)``."""
    return check_scores(scores), is_single_root(root)


def augmented_scores(scores: ArrayLike, cost: ArrayLike) -> NDArray[np.float64]:
    """scores + cost, both validated and of the same shape: the scores of a loss-augmented argmax."""
    arr = check_scores(scores)
    cost_arr = check_scores(cost, "cost")
    if cost_arr.shape != arr.shape:
        raise ValueError(f"cost has shape {cost_arr.shape}, scores have shape {arr.shape}")
    return arr + cost_arr


def solve(kernel, args: tuple, undefined: str = "") -> tuple:
    """``kernel(*args)``, a tuple whose first item is the best score or log Z of the tree space, unless
    that is -inf: then no tree has a finite score (:class:`NoTreeError`, its message ending with
    ``undefined``)."""
    result = kernel(*args)
    if result[0] == -np.inf:
        raise NoTreeError("every tree in the tree space has score -inf" + undefined)
    return result


def check_tree(heads: ArrayLike) -> NDArray[np.int64]:
    """Validate a tree (any, also non-projective); return it as C-contiguous int64."""
    arr = np.asarray(heads)
    if arr.ndim != 1:
        raise ValueError(f"heads must be a 1-D array, got {arr.ndim} dimensions")
    if arr.shape[0] < 2:
        raise ValueError(f"heads must have length n + 1 >= 2, got {arr.shape[0]}")
    if arr.dtype.kind not in "iu":  # np.issubdtype(arr.dtype, np.integer), without its cost on every tree
        raise ValueError(f"heads must hold integers, got dtype {arr.dtype}")
    arr = np.ascontiguousarray(arr, dtype=np.int64)
    if arr[0] != -1:
        raise ValueError(f"heads[0] must be -1 (the root has no head), got {arr[0]}")
    fault = _tree_fault(arr)
    if fault == 1:
        raise ValueError("heads[m] must be in 0..n and differ from m for every word m")
    if fault == 2:
        raise ValueError("heads contains a cycle: it is not a tree rooted at 0")
    return arr


@njit(cache=True)
def _tree_fault(heads):
    """0 when ``heads`` ((n + 1,) int64, heads[0] = -1) is a tree rooted at 0; 1 when a head is out of
    0..n or a word's own, 2 when the heads hold a cycle.  One kernel call instead of the pointer doubling
    of numpy calls it replaced: training calls this on every argmax tree (es with ``--parts grandparents``:
    336,186 calls, 6.5 s of 220 under cProfile)."""
    size = heads.shape[0]
    for m in range(1, size):
        if heads[m] < 0 or heads[m] >= size or heads[m] == m:
            return 1
    state = np.zeros(size, dtype=np.uint8)  # 0: not seen, 1: on the walk under way, 2: reaches the root
    state[0] = 2
    for m in range(1, size):
        x = m
        while state[x] == 0:  # up from m until a word already known to reach the root, or this walk
            state[x] = 1
            x = heads[x]
        if state[x] == 1:
            return 2
        x = m
        while state[x] == 1:
            state[x] = 2
            x = heads[x]
    return 0
