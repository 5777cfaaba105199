"""Sparse part-feature containers and the kernels every learner shares.

A corpus of examples is compiled once into three arrays (CSR):

- ``part_ptr`` (n_examples + 1,) int64: the parts of example ``i`` are
  ``part_ptr[i]:part_ptr[i + 1]`` in a corpus-wide part numbering;
- ``feat_ptr`` (n_parts + 1,) int64: the feature ids of part ``r`` are
  ``feat_ids[feat_ptr[r]:feat_ptr[r + 1]]`` (an id may repeat: a count feature);
- ``feat_ids`` (n_entries,) int32.

Learners need three things from it: part scores ``w . phi(x, r)``, the
scatter ``sum_r c_r phi(x, r)`` (gold feature counts, expected counts), and
for EG the change of ``W`` caused by one example as a sparse vector.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from numba import njit


@dataclass
class PartFeatures:
    """The part -> feature-id CSR arrays of a corpus (see the module docstring)."""

    part_ptr: np.ndarray
    feat_ptr: np.ndarray
    feat_ids: np.ndarray
    n_features: int
    _work: tuple | None = field(default=None, repr=False, compare=False)

    @property
    def n_examples(self) -> int:
        return self.part_ptr.shape[0] - 1

    @property
    def n_parts(self) -> int:
        return self.feat_ptr.shape[0] - 1

    def parts(self, i: int) -> tuple[int, int]:
        """The corpus-wide part range ``(lo, hi)`` of example ``i``."""
        return int(self.part_ptr[i]), int(self.part_ptr[i + 1])

    @property
    def nbytes(self) -> int:
        return self.part_ptr.nbytes + self.feat_ptr.nbytes + self.feat_ids.nbytes

    def scores(self, lo: int, hi: int, w: np.ndarray) -> np.ndarray:
        """``w . phi(r)`` for the parts ``lo:hi``, shape (hi - lo,)."""
        out = np.empty(hi - lo)
        part_scores(self.feat_ptr, self.feat_ids, lo, hi, w, out)
        return out

    def scatter(self, lo: int, hi: int, coef: np.ndarray, target: np.ndarray) -> None:
        """``target += sum_r coef[r - lo] phi(r)`` over the parts ``lo:hi``."""
        scatter_add(self.feat_ptr, self.feat_ids, lo, hi, coef, target)

    def sparse_delta(self, lo: int, hi: int, coef: np.ndarray, w: np.ndarray):
        """delta = sum_r coef[r - lo] phi(r) over the parts ``lo:hi`` as a sparse vector.

        Returns ``(ids, vals, w . delta, ||delta||^2)``; ``ids`` and ``vals``
        are views into scratch buffers, valid until the next call.
        """
        if self._work is None or self._work[0].shape[0] != self.n_features:
            longest = int(np.max(self.feat_ptr[self.part_ptr[1:]] - self.feat_ptr[self.part_ptr[:-1]], initial=0))
            self._work = (np.zeros(self.n_features), np.empty(longest, dtype=np.int64), np.empty(longest))
        buf, ids, vals = self._work
        count, dot, sq = collect_delta(self.feat_ptr, self.feat_ids, lo, hi, coef, buf, w, ids, vals)
        return ids[:count], vals[:count], dot, sq


@njit(cache=True)
def part_scores(feat_ptr, feat_ids, lo, hi, w, out):
    """out[r - lo] = sum of w over the feature ids of part r, for r in lo:hi."""
    for r in range(lo, hi):
        acc = 0.0
        for k in range(feat_ptr[r], feat_ptr[r + 1]):
            acc += w[feat_ids[k]]
        out[r - lo] = acc


@njit(cache=True)
def scatter_add(feat_ptr, feat_ids, lo, hi, coef, target):
    """target[id] += coef[r - lo] for every feature id of every part r in lo:hi."""
    for r in range(lo, hi):
        c = coef[r - lo]
        if c != 0.0:
            for k in range(feat_ptr[r], feat_ptr[r + 1]):
                target[feat_ids[k]] += c


@njit(cache=True)
def collect_delta(feat_ptr, feat_ids, lo, hi, coef, buf, w, touched_ids, touched_vals):
    """Gather delta = sum_r coef[r - lo] phi(r) as a sparse vector.

    ``buf`` is a zero dense work array of the feature dimension; it is zero
    again on return.  The non-zero entries of delta go to ``touched_ids`` /
    ``touched_vals`` (each at least as long as the example's feature
    entries).  Returns ``(count, w . delta, ||delta||^2)``.
    """
    for r in range(lo, hi):
        c = coef[r - lo]
        if c != 0.0:
            for k in range(feat_ptr[r], feat_ptr[r + 1]):
                buf[feat_ids[k]] += c
    return gather_nonzero(buf, feat_ids[feat_ptr[lo]:feat_ptr[hi]], w, touched_ids, touched_vals)


@njit(cache=True)
def gather_nonzero(buf, entries, w, ids, vals):
    """Move the non-zeros of the dense work array ``buf`` (n_features,) at the feature
    ids ``entries`` (any order, repeats allowed) to a sparse vector.

    Each non-zero ``buf[j]`` goes, in order of first occurrence in
    ``entries``, to ``ids`` / ``vals`` (each at least as long as the number of
    distinct ids) and is zeroed.  Returns ``(count, w . taken, ||taken||^2)``.
    """
    count = 0
    dot = 0.0
    sq = 0.0
    for j in entries:
        v = buf[j]
        if v != 0.0:
            ids[count] = j
            vals[count] = v
            count += 1
            dot += w[j] * v
            sq += v * v
            buf[j] = 0.0
    return count, dot, sq


@njit(cache=True)
def add_sparse(target, ids, vals, count, scale):
    """target[ids[k]] += scale * vals[k] for k < count."""
    for k in range(count):
        target[ids[k]] += scale * vals[k]
