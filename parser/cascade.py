"""Coarse-to-fine pruning of the arcs of higher-order parsing (Koo and Collins 2010, Sec. 5; Rush and
Petrov 2012, "Vine pruning for efficient multi-pass dependency parsing").

A first-order model gives every arc h -> m its max-marginal mu[h, m] over projective trees, the score of
the best tree with that arc relative to the best tree's, exp(s(h, m) - s*) (Rush and Petrov 2012, Sec. 3;
:func:`~egnlp.parser.eisner.max_marginals`).  An arc is kept when its max-marginal is at least
``threshold`` times that of the best head of its modifier, and among the ``top_k`` best heads of its
modifier; the best head is always kept, so every word keeps one head at least.  Cascades saved before
max-marginals prune by the arcs' marginals (Koo and Collins 2010, Sec. 5: inside-outside,
:func:`~egnlp.parser.eisner.inside_outside`), and still do: a model file names its rule.

Max-marginals took 0.52 of the time of the marginals on the pruner's scores of pt_bosque dev, and at the
same recall keep fewer arcs: 99.17% of the gold arcs with 17.4% of all arcs (threshold 0.03) where the
marginals keep 99.23% with 19.4% (0.01), and 99.33% with 22.4% (0.01) where they keep 24.8% (0.003) (the
model of ``benchmarks/udpipe_compare.py``, a diagnostic on its dev file).  The second- and
third-order dynamic programs (:mod:`egnlp.parser.eisner_siblings`, :mod:`egnlp.parser.eisner_grandparents`)
then fill only the items of kept arcs, so their work grows with the kept arcs.

A mask ``keep`` is an (n + 1, n + 1) array indexed [head, modifier], nonzero on the kept arcs; column 0
and the diagonal are never arcs.  During training the gold arcs are kept too (``gold``), and the
pruner's oracle recall is the share of gold arcs that the mask keeps without that help: with the share of
arcs kept, what :func:`count_kept` sums over sentences (Koo and Collins 2010, Sec. 5, report both for their
first-order pruner).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

import numba
import numpy as np
from numpy.typing import ArrayLike, NDArray

from egnlp.features.kept_parts import kept_heads


def prune_arcs(mu: ArrayLike, threshold: float, top_k: int, gold: ArrayLike | None = None) -> NDArray[np.uint8]:
    """The kept arcs of first-order arc (max-)marginals ``mu`` ((n + 1, n + 1), [head, modifier]): (n + 1, n + 1)
    uint8, 1 where ``mu[h, m] >= threshold * max_h' mu[h', m]`` and h is among the ``top_k`` best heads of m
    (ties by the smaller head), the best head always.  ``gold`` (heads of words 1..n, optional): those arcs
    are kept as well."""
    arr = np.asarray(mu, dtype=np.float64)
    if arr.ndim != 2 or arr.shape[0] != arr.shape[1] or arr.shape[0] < 2:
        raise ValueError(f"mu must be an (n + 1, n + 1) array with n >= 1, got shape {arr.shape}")
    if not 0.0 <= threshold <= 1.0:
        raise ValueError(f"threshold must be in [0, 1], got {threshold!r}")
    if top_k < 1:
        raise ValueError(f"top_k must be at least 1, got {top_k!r}")
    if np.isnan(arr).any():
        raise ValueError("mu contains NaN")
    size = arr.shape[0]
    keep = _prune(np.ascontiguousarray(arr), float(threshold), int(top_k), np.zeros((size, size), dtype=np.uint8))
    if gold is not None:
        keep[np.asarray(gold, dtype=np.int64), np.arange(1, size)] = 1
    return keep


@numba.njit(cache=True)
def _prune(mu, threshold, top_k, keep):
    """keep[h, m] = 1 on the arcs :func:`prune_arcs` keeps (without gold): for each modifier m, its best
    heads h != m picked one at a time (the highest score, ties to the smaller head), the first always, the
    next ``top_k - 1`` when finite and at least ``threshold`` times the first.

    The scores picked after the first do not increase, so those kept are the first ``top_k - 1`` in that
    order of the heads that pass the test: all of them when they are that few (the test's heads counted in
    one pass, after one for the best head), else picked one at a time.  The pruner's marginals of pt_bosque
    dev x8 (threshold 0.01, 20 heads at most): 0.32 s of picking one at a time, 0.08 s so, the same masks."""
    size = mu.shape[0]
    taken = np.zeros(size, dtype=np.uint8)
    for m in range(1, size):
        arg = -1
        best = -np.inf
        for h in range(size):
            if h != m and (arg < 0 or mu[h, m] > best):
                arg = h
                best = mu[h, m]
        keep[arg, m] = 1
        passing = 0  # the other heads that pass the test
        for h in range(size):
            v = mu[h, m]
            if h != m and h != arg and v > -np.inf and v >= threshold * best:
                passing += 1
        if passing <= top_k - 1:
            for h in range(size):
                v = mu[h, m]
                if h != m and h != arg and v > -np.inf and v >= threshold * best:
                    keep[h, m] = 1
            continue
        taken[:] = 0
        taken[arg] = 1
        for r in range(1, min(top_k, size - 1)):
            arg = -1
            v = -np.inf
            for h in range(size):
                if h != m and not taken[h] and (arg < 0 or mu[h, m] > v):
                    arg = h
                    v = mu[h, m]
            taken[arg] = 1
            if v > -np.inf and v >= threshold * best:
                keep[arg, m] = 1
    return keep


def gold_recall(keep: ArrayLike, gold: ArrayLike) -> tuple[int, int]:
    """(gold arcs kept, gold arcs) of a mask ``keep`` and gold heads of words 1..n."""
    gold = np.asarray(gold, dtype=np.int64)
    kept = np.asarray(keep)[gold, np.arange(1, gold.shape[0] + 1)] != 0
    return int(kept.sum()), int(gold.shape[0])


def kept_fraction(keep: ArrayLike) -> tuple[int, int]:
    """(kept arcs, possible arcs n * n) of a mask ``keep`` of a sentence of n words."""
    arr = np.asarray(keep)
    n = arr.shape[0] - 1
    inside = arr[:, 1:].astype(bool)
    inside[np.arange(1, n + 1), np.arange(n)] = False  # the diagonal
    return int(inside.sum()), n * n


@dataclass(frozen=True)
class KeptArcs:
    """What masks keep of some sentences: ``gold_kept`` of their ``gold`` arcs (:func:`gold_recall`) and
    ``kept`` of their ``possible`` arcs (n * n a sentence of n words, :func:`kept_fraction`)."""

    gold_kept: int = 0
    gold: int = 0
    kept: int = 0
    possible: int = 0

    @property
    def recall(self) -> float:
        """The share of gold arcs kept: the pruner's oracle recall (0 without gold arcs)."""
        return self.gold_kept / max(self.gold, 1)

    @property
    def kept_share(self) -> float:
        """The share of possible arcs kept (0 without any)."""
        return self.kept / max(self.possible, 1)

    def __add__(self, other: KeptArcs) -> KeptArcs:
        return KeptArcs(self.gold_kept + other.gold_kept, self.gold + other.gold, self.kept + other.kept,
                        self.possible + other.possible)


def count_kept(masks: Iterable[ArrayLike], gold: Iterable[Sequence[int]]) -> KeptArcs:
    """What ``masks`` keep of sentences whose gold heads (of words 1..n) are ``gold``, one mask a sentence,
    summed over the sentences."""
    total = KeptArcs()
    for keep, heads in zip(masks, gold, strict=True):
        total += KeptArcs(*gold_recall(keep, heads), *kept_fraction(keep))
    return total


def check_keep(keep: ArrayLike | None, size: int) -> tuple[NDArray[np.uint8], NDArray[np.int64], NDArray[np.int64]]:
    """A mask for the kernels: (keep as C-contiguous uint8, hptr, hidx), the kept heads of each modifier m
    being ``hidx[hptr[m]:hptr[m + 1]]`` in increasing order.  None keeps every arc."""
    if keep is None:
        arr = np.ones((size, size), dtype=np.uint8)
    else:
        arr = np.asarray(keep)
        if arr.shape != (size, size):
            raise ValueError(f"keep must have shape ({size}, {size}), got {arr.shape}")
        arr = np.ascontiguousarray(arr != 0, dtype=np.uint8)
    return (arr, *kept_heads(arr))


#: The thresholds :func:`choose_threshold` tries, the most pruning first.
THRESHOLDS = (0.3, 0.1, 0.03, 0.01, 0.003, 0.001, 0.0003, 0.0001)


#: The arc values a pruner compares: max-marginals (what a cascade trains with) or marginals (files before).
MAX_MARGINALS, MARGINALS = "max-marginals", "marginals"


class ArcPruner:
    """The first stage of a cascade: first-order arc weights ``weights`` (over the features of an
    :class:`~egnlp.features.arc_featurizer.ArcFeaturizer`) whose projective arc max-marginals, or
    marginals (``values``), under the root constraint ``root`` prune the arcs of every sentence by
    ``threshold`` and ``top_k`` (:func:`prune_arcs`)."""

    def __init__(self, weights: np.ndarray, root: str, threshold: float, top_k: int, values: str = MAX_MARGINALS):
        self.weights = np.array(weights, dtype=np.float64, order="C")
        self.weights.setflags(write=False)
        self.root = root
        self.threshold = float(threshold)
        self.top_k = int(top_k)
        prune_arcs(np.ones((2, 2)), self.threshold, self.top_k)  # checks both
        if values not in (MAX_MARGINALS, MARGINALS):
            raise ValueError(f"a pruner compares {MAX_MARGINALS} or {MARGINALS}, not {values!r}")
        self.values = values
        self._arc_weights = None

    def marginals(self, featurizer, encoded) -> Iterator[np.ndarray]:
        """The first-order arc max-marginals (or marginals: :attr:`values`), (n + 1, n + 1), of every
        sentence of ``encoded``, over the arcs the featurizer's tag filter keeps (every arc when that
        leaves no projective tree)."""
        for s, arc in enumerate(featurizer.block_arc_scores(encoded, self._weights_of(featurizer), True)):
            yield self._marginals(featurizer, encoded, s, arc)

    def masks(self, featurizer, encoded, gold: Sequence | None = None) -> Iterator[np.ndarray]:
        """The kept arcs of every sentence of ``encoded`` (:func:`prune_arcs`); with ``gold`` (heads of words
        1..n of each sentence), the gold arcs too."""
        for s, mu in enumerate(self.marginals(featurizer, encoded)):
            yield prune_arcs(mu, self.threshold, self.top_k, None if gold is None else gold[s])

    def kept_arc_scores(self, featurizer, encoded, weights) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """(keep, arc) of every sentence of ``encoded``: its kept arcs, as :meth:`masks` gives them, and the
        first-order arc scores of other ``weights`` over the same features (the model after this stage)
        on the kept arcs that the tag filter allows, -inf on the others: what
        ``featurizer.block_arc_scores(encoded, weights, True, masks)`` gives, bit for bit.

        One walk of the arcs scores both weight vectors
        (:meth:`~egnlp.features.arc_featurizer.ArcFeaturizer.block_arc_score_pairs`): the model's scores
        of the arcs the mask then drops cost a few sums, where a walk of its own over the kept arcs
        looked their keys up again."""
        pairs = featurizer.block_arc_score_pairs(encoded, self._weights_of(featurizer), weights, True)
        for s, (arc, other) in enumerate(pairs):
            keep = prune_arcs(self._marginals(featurizer, encoded, s, arc, weights), self.threshold, self.top_k)
            yield keep, mask_arc_scores(other, keep)

    def release_weights(self) -> None:
        """Let go of the weights as the direct scorer reads them (:meth:`_weights_of` makes them again when
        next needed): a training's higher-order passes never read them, and they are as long as the
        features (es: 15 MiB)."""
        self._arc_weights = None

    def _weights_of(self, featurizer):
        """The pruner's weights as the featurizer's direct scorer reads them, made once."""
        if self._arc_weights is None:
            self._arc_weights = featurizer.arc_weights(self.weights)
        return self._arc_weights

    def _marginals(self, featurizer, encoded, s: int, arc: np.ndarray, other=None) -> np.ndarray:
        """The projective arc max-marginals (or marginals) of sentence ``s`` from its scores ``arc`` with the
        tag filter, or from its scores over every arc when those hold no tree: with ``other`` weights (those
        of :meth:`kept_arc_scores`), by the kernel that scores both, which a cascade's parse then compiles
        alone."""
        from egnlp.parser.eisner import inside_outside, max_marginals
        from egnlp.parser.tree_checks import NoTreeError

        values = max_marginals if self.values == MAX_MARGINALS else inside_outside
        try:
            return values(arc, root=self.root)[1]
        except NoTreeError:
            own = self._weights_of(featurizer)
            every = (featurizer.arc_scores(encoded, s, own) if other is None
                     else featurizer.arc_score_pair(encoded, s, own, other)[0])
            return values(every, root=self.root)[1]


def mask_arc_scores(arc: np.ndarray, keep: ArrayLike) -> np.ndarray:
    """``arc`` ((n + 1, n + 1) float64 scores [head, modifier]) with -inf, in place, on every arc h -> m
    (m >= 1, h != m) that ``keep`` does not keep, as a masked scorer gives them; column 0 and the diagonal
    stay."""
    keep = np.asarray(keep)
    if not isinstance(arc, np.ndarray) or arc.dtype != np.float64 or keep.shape != arc.shape or arc.ndim != 2:
        raise ValueError(f"a mask of shape {keep.shape} for scores of shape {np.shape(arc)}")
    _mask(arc, keep)
    return arc


@numba.njit(cache=True)
def _mask(arc, keep):
    """arc[h, m] = -inf where keep[h, m] is 0, for m >= 1 and h != m: :func:`mask_arc_scores`."""
    size = arc.shape[0]
    for h in range(size):
        for m in range(1, size):
            if h != m and keep[h, m] == 0:
                arc[h, m] = -np.inf


def choose_threshold(marginals: Sequence[np.ndarray], gold: Sequence, top_k: int, recall: float,
                     thresholds: Sequence[float] = THRESHOLDS) -> tuple[float, list[dict]]:
    """The largest of ``thresholds`` whose masks (with ``top_k``) keep at least ``recall`` of the gold arcs of
    the sentences whose first-order arc (max-)marginals are ``marginals``, or when no threshold does (``top_k``
    bounds the recall), the largest with the best recall of all; and a row per threshold tried: threshold,
    recall, kept (the share of possible arcs kept)."""
    rows = []
    for threshold in sorted(thresholds, reverse=True):
        counts = count_kept((prune_arcs(mu, threshold, top_k) for mu in marginals), gold)
        rows.append({"threshold": threshold, "recall": counts.recall, "kept": counts.kept_share})
    target = min(recall, max(r["recall"] for r in rows))
    chosen = next(r["threshold"] for r in rows if r["recall"] >= target)
    return chosen, rows
