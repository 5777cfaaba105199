"""The pruned part layout of a sentence: the higher-order parts of a cascade's kept arcs only.

A cascade (:mod:`egnlp.parser.cascade`) keeps a few heads per word; the second- and third-order charts then
read only the parts of kept arcs.  Laying out only those parts makes every per-part vector (scores,
features, marginals, a trainer's gold, loss and steps) grow with the kept arcs instead of the cube of the
sentence length.  With ``keep`` an (n + 1, n + 1) mask [head, modifier] (column 0 and the diagonal never
arcs):

* sibling parts: the cells (h, m) of the kept arcs in row-major order, |h - m| parts each, as
  :mod:`egnlp.parser.eisner_siblings` lays out every arc: the parts of the kept arc (h, m) are
  ``off[h, m] + k`` (k = 0: no sibling; k = |s - h|: sibling s); ``off`` of the other cells is where the
  next kept cell starts, so the chart kernels take it as they take the full layout's;
* grandparent parts: for each kept arc (h, m) with h a word, in row-major order, one slot per kept head g
  of h, in increasing g (``hidx[hptr[h]:hptr[h + 1]]``): the part (g, h, m) is slot
  ``goff[h, m] + j - hptr[h]`` for g = ``hidx[j]``.  The slot of g = m is no part (it has no features).

With every arc kept, the sibling layout is the full one.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit


class KeptParts(NamedTuple):
    """The pruned part layout of one sentence (module docstring)."""

    keep: np.ndarray  # (size, size) uint8, C-contiguous
    hptr: np.ndarray  # (size + 1,) int64: the kept heads of modifier m are hidx[hptr[m]:hptr[m + 1]]
    hidx: np.ndarray  # int64, increasing within a modifier
    off: np.ndarray  # (size, size) int64: start of the sibling parts of each cell
    n_sib: int
    goff: np.ndarray  # (size, size) int64: start of the grandparent slots of each kept arc with a word head, -1 else
    n_grand: int

    @property
    def size(self) -> int:
        return int(self.keep.shape[0])


@njit(cache=True)
def kept_heads(keep):
    """(hptr, hidx): the kept heads h != m of each modifier m >= 1 of a C-contiguous uint8 mask [head,
    modifier], in increasing order (none for m = 0): those of m are ``hidx[hptr[m]:hptr[m + 1]]``."""
    n1 = keep.shape[0]
    hptr = np.zeros(n1 + 1, dtype=np.int64)
    for m in range(1, n1):
        c = 0
        for h in range(n1):
            if h != m and keep[h, m]:
                c += 1
        hptr[m + 1] = hptr[m] + c
    hidx = np.empty(hptr[n1], dtype=np.int64)
    for m in range(1, n1):
        c = hptr[m]
        for h in range(n1):
            if h != m and keep[h, m]:
                hidx[c] = h
                c += 1
    return hptr, hidx


@njit(cache=True)
def _layout(keep):
    """(hptr, hidx, off, n_sib, goff, n_grand) of a C-contiguous uint8 mask (module docstring)."""
    n1 = keep.shape[0]
    hptr, hidx = kept_heads(keep)
    off = np.zeros((n1, n1), dtype=np.int64)
    goff = np.full((n1, n1), -1, dtype=np.int64)
    p = 0
    q = 0
    for h in range(n1):
        for m in range(n1):
            off[h, m] = p
            if m >= 1 and m != h and keep[h, m]:
                p += abs(h - m)
                if h >= 1:
                    goff[h, m] = q
                    q += hptr[h + 1] - hptr[h]
    return hptr, hidx, off, p, goff, q


def kept_parts(keep: np.ndarray) -> KeptParts:
    """The pruned part layout of the kept arcs ``keep`` ((size, size) [head, modifier], nonzero where kept;
    column 0 and the diagonal are ignored)."""
    arr = np.asarray(keep)
    if arr.ndim != 2 or arr.shape[0] != arr.shape[1] or arr.shape[0] < 2:
        raise ValueError(f"keep must be a (size, size) mask with size >= 2, got shape {arr.shape}")
    arr = np.ascontiguousarray(arr != 0, dtype=np.uint8)
    hptr, hidx, off, n_sib, goff, n_grand = _layout(arr)
    return KeptParts(arr, hptr, hidx, off, int(n_sib), goff, int(n_grand))


@njit(cache=True)
def _grand_cells(keep, hptr, hidx, goff, n_grand):
    """(g, h, m) of every grandparent slot, each (n_grand,) int64."""
    n1 = keep.shape[0]
    gs = np.empty(n_grand, dtype=np.int64)
    hs = np.empty(n_grand, dtype=np.int64)
    ms = np.empty(n_grand, dtype=np.int64)
    for h in range(1, n1):
        for m in range(1, n1):
            q = goff[h, m]
            if q < 0:
                continue
            for j in range(hptr[h], hptr[h + 1]):
                gs[q] = hidx[j]
                hs[q] = h
                ms[q] = m
                q += 1
    return gs, hs, ms


def grand_cells(parts: KeptParts) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The cell (g, h, m) of every grandparent slot of ``parts``: three (n_grand,) int64 arrays."""
    return _grand_cells(parts.keep, parts.hptr, parts.hidx, parts.goff, parts.n_grand)


@njit(cache=True)
def _tree_slots(heads, hptr, hidx, goff):
    """The grandparent slot of every word m whose head h is a word, g = heads[h]: (n,) int64, -1 for the
    root's children and for the parts the layout does not have."""
    n1 = heads.shape[0]
    out = np.full(n1 - 1, -1, dtype=np.int64)
    for m in range(1, n1):
        h = heads[m]
        if h < 1:
            continue
        g = heads[h]
        q = goff[h, m]
        if q < 0:
            continue
        for j in range(hptr[h], hptr[h + 1]):
            if hidx[j] == g:
                out[m - 1] = q + j - hptr[h]
                break
    return out


def tree_grand_slots(parts: KeptParts, heads: np.ndarray) -> np.ndarray:
    """The grandparent slots of a tree ``heads`` ((size,) int64, heads[0] = -1) in the layout ``parts``:
    one per word with a word head, in increasing m (-1 where the layout lacks the part: an arc not kept)."""
    return _tree_slots(np.ascontiguousarray(heads, dtype=np.int64), parts.hptr, parts.hidx, parts.goff)
