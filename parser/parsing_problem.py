"""Dependency parsing as a structured problem (see training/structured_problem.py).

Parts of sentence i are the (n+1) x (n+1) cells [head, modifier] of its arc
score matrix in row-major order, the root at 0 (Collins et al. 2008, Sec. 4);
the oracles are those of the tree space (:mod:`egnlp.parser.trees`): Eisner's
algorithms for projective trees, Chu-Liu-Edmonds and the matrix-tree theorem
(Koo et al. 2007) for non-projective ones.  Gold trees are kept as they are,
including non-projective ones in the projective space (45 of the 2,654 ``es``
training sentences): their gold parts still define phi(x_i, y_i) and the
objectives stay convex and finite, only no projective tree reaches them.

The features are any part feature set with those parts: the ids computed one
sentence at a time (:class:`egnlp.features.arc_parts.ArcPartFeatures`, what
training uses) or stored (:class:`egnlp.features.csr.PartFeatures`).  Per part
the problem keeps only ``gold`` and ``loss``, one byte each (the second-order
problem not even those: it makes them a sentence at a time).
"""

from __future__ import annotations

import numpy as np

from egnlp.features.arc_parts import ArcPartFeatures
from egnlp.features.csr import PartFeatures
from egnlp.parser.eisner_siblings import (n_sibling_parts, sibling_argmax, sibling_indicator, sibling_log_partition,
                                  sibling_marginals, tree_parts)
from egnlp.parser.eisner_grandparents import grand_argmax, grand_indicator, grand_log_partition, grand_marginals
from egnlp.parser.rearrange import rearrange
from egnlp.parser.tree_checks import check_root
from egnlp.parser.trees import PROJECTIVE, tree_space


def arc_indicator(heads, size: int) -> np.ndarray:
    """Flat (size * size,) 0/1 indicator of the arcs of ``heads`` (words 1..size-1)."""
    z = np.zeros((size, size))
    z[np.asarray(heads, dtype=np.int64), np.arange(1, size)] = 1.0
    return z.reshape(-1)


def _checked_heads(i: int, heads) -> np.ndarray:
    """The heads of sentence ``i`` (words 1..n) as int64, each in 0..n and not the word itself."""
    heads = np.asarray(heads, dtype=np.int64)
    size = heads.shape[0] + 1
    if np.any((heads < 0) | (heads >= size) | (heads == np.arange(1, size))):
        raise ValueError(f"sentence {i}: a head outside 0..{size - 1} or a word headed by itself")
    return heads


class ParsingProblem:
    """First-order parsing of a corpus whose arc features are ``features``, in the tree space
    ``tree`` (projective, non-projective) with root constraint ``root`` (single, multi).

    ``gold`` (0/1) and ``loss`` (Hamming: 1 on every possible arc but the gold ones) are uint8.
    ``jobs``: the processes of the trainers' evaluation passes (:mod:`egnlp.training.structured_problem`).
    """

    PART_KIND = "arc"
    jobs = 1

    def __init__(self, features: ArcPartFeatures | PartFeatures, heads_list, root: str = "multi",
                 tree: str = PROJECTIVE):
        self.root = check_root(root)
        self.space = tree_space(tree)
        if len(heads_list) != features.n_examples:
            raise ValueError("one gold tree per sentence is needed")
        self.features = features
        self.sizes = np.zeros(features.n_examples, dtype=np.int64)
        checked = []
        for i, heads in enumerate(heads_list):
            lo, hi = features.parts(i)
            size = len(heads) + 1
            if self._count(i, size) != hi - lo:
                raise ValueError(f"sentence {i}: {len(heads)} heads for {hi - lo} {self.PART_KIND} parts")
            self.sizes[i] = size
            checked.append(_checked_heads(i, heads))
        self._keep_gold(checked)

    @staticmethod
    def _n_parts(size: int) -> int:
        return size * size

    def _count(self, i: int, size: int) -> int:
        """The number of parts of sentence ``i`` of ``size`` positions."""
        return self._n_parts(size)

    def _keep_gold(self, heads_list: list[np.ndarray]) -> None:
        """Set ``gold`` and ``loss`` from the checked gold heads of every sentence."""
        self.gold = np.zeros(self.features.n_parts, dtype=np.uint8)
        self.loss = np.zeros(self.features.n_parts, dtype=np.uint8)
        for i, heads in enumerate(heads_list):
            lo, hi = self.features.parts(i)
            self._set_gold_and_loss(self.gold[lo:hi], self.loss[lo:hi], heads, int(self.sizes[i]))

    @staticmethod
    def _set_gold_and_loss(gold: np.ndarray, loss: np.ndarray, heads: np.ndarray, size: int) -> None:
        """One sentence's gold parts and Hamming loss (zeros on entry), from its checked heads."""
        gold = gold.reshape(size, size)
        gold[heads, np.arange(1, size)] = 1
        loss = loss.reshape(size, size)
        loss[:, 1:] = 1
        np.fill_diagonal(loss, 0)
        loss -= gold

    def _square(self, i: int, theta: np.ndarray) -> np.ndarray:
        k = int(self.sizes[i])
        return np.asarray(theta, dtype=np.float64).reshape(k, k)  # float64 already: no copy

    @property
    def tree(self) -> str:
        return self.space.name

    def marginals(self, i: int, theta: np.ndarray) -> tuple[float, np.ndarray]:
        log_z, mu = self.space.marginals(self._square(i, theta), root=self.root)
        return log_z, mu.reshape(-1)

    def log_partition(self, i: int, theta: np.ndarray) -> float:
        return self.space.log_partition(self._square(i, theta), root=self.root)

    def argmax(self, i: int, theta: np.ndarray) -> np.ndarray:
        heads = self.space.argmax(self._square(i, theta), root=self.root)
        return arc_indicator(heads[1:], int(self.sizes[i]))


def sibling_loss(heads, size: int, keep: np.ndarray | None = None) -> np.ndarray:
    """Hamming loss of every sibling part (:mod:`egnlp.parser.eisner_siblings` layout) of a sentence with gold
    ``heads`` (words 1..size-1): 1 on the parts of every arc but the gold ones, as uint8; with ``keep``, of
    the pruned layout of those kept arcs (:mod:`egnlp.features.kept_parts`)."""
    h, m = np.meshgrid(np.arange(size), np.arange(size), indexing="ij")
    valid = (m >= 1) & (h != m)
    if keep is not None:
        valid &= np.asarray(keep) != 0
    wrong = np.ones((size, size), dtype=np.uint8)
    wrong[np.asarray(heads, dtype=np.int64), np.arange(1, size)] = 0
    return np.repeat(wrong[valid], np.abs(h - m)[valid])


class SentenceParts:
    """A read-only uint8 vector over every part of a corpus, computed a sentence at a time: ``fill(i)``
    gives sentence i's values (``part_ptr[i + 1] - part_ptr[i]`` of them).  For per-part values that grow
    with the cube of the sentence length (sibling parts: 42 M on es, 85 MB as two stored byte
    vectors), which the trainers read one sentence (a slice) at a time.  A slice gives an array (the
    last sentence's values are kept for the next read); anything else, or NumPy's ``np.asarray``,
    computes the whole vector."""

    dtype = np.dtype(np.uint8)
    ndim = 1

    def __init__(self, part_ptr: np.ndarray, fill):
        self.part_ptr = part_ptr
        self._fill = fill
        self._last: tuple[int, np.ndarray] | None = None

    @property
    def shape(self) -> tuple[int]:
        return (int(self.part_ptr[-1]),)

    @property
    def size(self) -> int:
        return int(self.part_ptr[-1])

    def __len__(self) -> int:
        return self.size

    def _sentence(self, i: int) -> np.ndarray:
        if self._last is None or self._last[0] != i:
            values = self._fill(i)
            values.flags.writeable = False
            self._last = (i, values)
        return self._last[1]

    def __getitem__(self, key):
        if not isinstance(key, slice):
            return np.asarray(self)[key]
        lo, hi, step = key.indices(self.size)
        if step != 1:
            return np.asarray(self)[key]
        if lo >= hi:
            return np.zeros(0, dtype=np.uint8)
        ptr = self.part_ptr
        i = int(np.searchsorted(ptr, lo, side="right")) - 1
        pieces = []
        while i < ptr.shape[0] - 1 and ptr[i] < hi:
            a, b = int(ptr[i]), int(ptr[i + 1])
            if b > a:
                pieces.append(self._sentence(i)[max(lo, a) - a:min(hi, b) - a])
            i += 1
        return pieces[0] if len(pieces) == 1 else np.concatenate(pieces)

    def __array__(self, dtype=None, copy=None):
        out = np.empty(self.size, dtype=np.uint8)
        for i in range(self.part_ptr.shape[0] - 1):
            out[self.part_ptr[i]:self.part_ptr[i + 1]] = self._fill(i)
        return out if dtype is None else out.astype(dtype)


class SiblingParsingProblem(ParsingProblem):
    """Second-order (sibling) projective parsing of a corpus (McDonald and Pereira 2006): the parts of a
    sentence are its sibling parts (h, s, m) in the layout of :mod:`egnlp.parser.eisner_siblings`, their features
    ``features`` (:class:`egnlp.features.siblings.SiblingPartFeatures`: the arc's first-order features and
    the sibling templates), the oracles the second-order Eisner algorithms in the projective space
    with root constraint ``root``.  ``gold`` marks the part each word's gold arc uses (non-projective gold
    trees included, as :class:`ParsingProblem` keeps them); ``loss`` is the Hamming loss of the part's arc,
    so a tree's loss is its number of wrong heads, as in the first-order problem.  Both are
    :class:`SentenceParts`, made from the gold heads a sentence at a time: nothing is stored per part.

    ``keep`` (optional, one (size, size) mask [head, modifier] per sentence, the gold arcs among the kept):
    the arcs a first-order pruner kept (:mod:`egnlp.parser.cascade`); the oracles then run over the trees of
    kept arcs only, the charts filling only their items, and the parts of the other arcs get marginal 0
    and are never in an argmax (the pruned part space, under the unchanged seam).  When the features are
    laid out over the same masks (their ``keeps``: :mod:`egnlp.features.kept_parts`), the parts of a
    sentence are its kept arcs' only: every per-part vector grows with the kept arcs.

    ``rearranged``: the argmax (the max-margin trainers' oracle) is the approximate non-projective one of
    McDonald and Pereira (2006, Sec. 3.2), the chart's tree rearranged (:func:`~egnlp.parser.rearrange.rearrange`),
    as they train their non-projective models with the decoder they parse with; the marginals and log Z stay
    those of projective trees."""

    PART_KIND = "sibling"

    def __init__(self, features, heads_list, root: str = "multi", keep=None, rearranged: bool = False):
        if keep is not None and len(keep) != len(heads_list):
            raise ValueError("one mask of kept arcs per sentence is needed")
        self.keep = keep
        self.rearranged = bool(rearranged)
        self._compact = getattr(features, "keeps", None) is not None
        if self._compact and (keep is None or len(features.keeps) != len(keep)
                              or any(a is not b for a, b in zip(features.keeps, keep))):
            raise ValueError("features laid out over kept arcs need the problem's masks to be the same")
        super().__init__(features, heads_list, root, PROJECTIVE)
        if self._compact:
            for i, heads in enumerate(self._heads):
                if not np.asarray(keep[i])[heads, np.arange(1, heads.shape[0] + 1)].all():
                    raise ValueError(f"sentence {i}: a gold arc the mask does not keep")

    def _keep(self, i: int):
        return None if self.keep is None or self._compact else self.keep[i]

    def _parts(self, i: int):
        """Sentence ``i``'s pruned layout, or None (the full layout)."""
        return self.features.layout(i) if self._compact else None

    _n_parts = staticmethod(n_sibling_parts)

    def _count(self, i: int, size: int) -> int:
        parts = self._parts(i)
        return self._n_parts(size) if parts is None else self._kept_count(parts)

    @staticmethod
    def _kept_count(parts) -> int:
        return parts.n_sib

    def _keep_gold(self, heads_list: list[np.ndarray]) -> None:
        # the cube-sized per-part vectors are made a sentence at a time, when a trainer reads them
        self._heads = heads_list
        self.gold = SentenceParts(self.features.part_ptr, self._gold_of)
        self.loss = SentenceParts(self.features.part_ptr, self._loss_of)

    def _gold_of(self, i: int) -> np.ndarray:
        parts = self._parts(i)
        gold = np.zeros(n_sibling_parts(int(self.sizes[i])) if parts is None else parts.n_sib, dtype=np.uint8)
        gold[tree_parts(np.concatenate([[-1], self._heads[i]]), parts)] = 1
        return gold

    def _loss_of(self, i: int) -> np.ndarray:
        parts = self._parts(i)
        if parts is None:
            return sibling_loss(self._heads[i], int(self.sizes[i]))
        return sibling_loss(self._heads[i], int(self.sizes[i]), parts.keep)

    def marginals(self, i: int, theta: np.ndarray) -> tuple[float, np.ndarray]:
        return sibling_marginals(np.asarray(theta, dtype=np.float64), int(self.sizes[i]), self.root, self._keep(i),
                                 self._parts(i))

    def log_partition(self, i: int, theta: np.ndarray) -> float:
        return sibling_log_partition(np.asarray(theta, dtype=np.float64), int(self.sizes[i]), self.root,
                                     self._keep(i), self._parts(i))

    def argmax(self, i: int, theta: np.ndarray) -> np.ndarray:
        parts = self._parts(i)
        theta = np.asarray(theta, dtype=np.float64)
        heads = sibling_argmax(theta, int(self.sizes[i]), self.root, self._keep(i), parts)
        if self.rearranged:
            heads = rearrange(heads, theta, None, self.root, self._keep(i), parts)[0]
        return sibling_indicator(heads, parts)


class GrandParsingProblem(SiblingParsingProblem):
    """Third-order projective parsing of a corpus (Koo and Collins 2010, Model 1, with the grand-sibling
    score factored into sibling and grandparent parts; Carreras 2007): the parts of a sentence are its
    sibling parts, then the (size, size, size) cells (g, h, m) of its grandparent parts, their features
    ``features`` (:class:`egnlp.features.grandparents.GrandPartFeatures`), the oracles the algorithms of
    :mod:`egnlp.parser.eisner_grandparents` with root constraint ``root``.  ``gold`` marks the sibling parts of
    :class:`SiblingParsingProblem` and the gold tree's grandparent cells; ``loss`` is that of the
    sibling parts (the Hamming loss of their arcs) and 0 on the grandparent cells, so a tree's loss is
    its number of wrong heads.  Both are made a sentence at a time."""

    PART_KIND = "grandparent"

    @staticmethod
    def _n_parts(size: int) -> int:
        return n_sibling_parts(size) + size ** 3

    def _split(self, i: int, theta: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
        size = int(self.sizes[i])
        theta = np.asarray(theta, dtype=np.float64)
        parts = self._parts(i)
        if parts is not None:
            return theta[:parts.n_sib], theta[parts.n_sib:], size
        k = n_sibling_parts(size)
        return theta[:k], theta[k:].reshape(size, size, size), size

    @staticmethod
    def _kept_count(parts) -> int:
        return parts.n_sib + parts.n_grand

    def _gold_of(self, i: int) -> np.ndarray:
        size = int(self.sizes[i])
        grand = grand_indicator(np.concatenate([[-1], self._heads[i]]), size, self._parts(i)).astype(np.uint8)
        return np.concatenate([super()._gold_of(i), grand.reshape(-1)])

    def _loss_of(self, i: int) -> np.ndarray:
        parts = self._parts(i)
        size = int(self.sizes[i])
        return np.concatenate([super()._loss_of(i),
                               np.zeros(size ** 3 if parts is None else parts.n_grand, dtype=np.uint8)])

    def marginals(self, i: int, theta: np.ndarray) -> tuple[float, np.ndarray]:
        sib, grand, size = self._split(i, theta)
        log_z, mu_sib, mu_grand = grand_marginals(sib, grand, size, self.root, self._keep(i), self._parts(i))
        return log_z, np.concatenate([mu_sib, mu_grand.reshape(-1)])

    def log_partition(self, i: int, theta: np.ndarray) -> float:
        sib, grand, size = self._split(i, theta)
        return grand_log_partition(sib, grand, size, self.root, self._keep(i), self._parts(i))

    def argmax(self, i: int, theta: np.ndarray) -> np.ndarray:
        sib, grand, size = self._split(i, theta)
        parts = self._parts(i)
        heads = grand_argmax(sib, grand, size, self.root, self._keep(i), parts)
        if self.rearranged:
            heads = rearrange(heads, sib, grand, self.root, self._keep(i), parts)[0]
        return np.concatenate([sibling_indicator(heads, parts), grand_indicator(heads, size, parts).reshape(-1)])
