"""Grandparent features of dependency parsing (Carreras 2007; Koo and Collins 2010, Sec. 4).

A grandparent part (g, h, m) is the arc h -> m together with g, the head of
h (h is a word; the root's own arcs have no grandparent part).  Its score is
the weights of the grandparent templates of (g, h, m); the third-order
parser (:mod:`egnlp.parser.eisner_grandparents`) adds it to the score of the arc's
sibling part.

Parts of a sentence of n words (size = n + 1, root at 0): the cells
``(g size + h) size + m`` of a (size, size, size) array, as
:mod:`egnlp.parser.eisner_grandparents` reads them.  Cells that are never a grandparent
part (h = 0, m = 0, h = m, g = h, g = m) have no features.

Templates:

- over the grandparent and the modifier (no head): gp.mp, gw.mw, gw.mp,
  gp.mw, gc.mc, each alone and conjoined with the direction and binned
  distance of :func:`~egnlp.features.arc_templates.dirdist_slot` between g
  and m, with w the word, p the POS tag and c the coarse tag;
- over all three: gp.hp.mp and gc.hc.mc, alone and conjoined with the two
  arcs' directions (g left or right of h, h left or right of m).

A template instance is a 64-bit key, as the first-order ones; the features
are the keys of the gold grandparent parts of the training data (an
alphabet), numbered after the first-order and sibling features in the
weight vector.

What one sentence needs is compiled once a visit (:meth:`GrandFeaturizer.compile`):
the ids of every (g, m) row, and the ids of the classes of (grandparent
tag, head tag, modifier tag, directions) that the three-token templates
read, with each part's class.  A part's score is then one row sum and
one class sum; a scatter sums the coefficients of the parts per row and
class first.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from egnlp.features.arc_featurizer import read_only
from egnlp.features.arc_parts import checked_vector, pair_classes
from egnlp.features.kept_parts import KeptParts
from egnlp.features.arc_templates import CPOS, POS, WORD, EncodedCorpus, dirdist_slot
from egnlp.features.siblings import (LayeredPartFeatures, PartAlphabet, SiblingPartFeatures, alphabet_id,
                                     pair_row_keys, row_class_weights, row_ids_of, triple_class_keys)

#: Version of the grandparent template set, saved with third-order models and checked on load.
GRAND_TEMPLATES_VERSION = "koo2010-grandparents-v1"
_T0 = 300  # template numbers, apart from the first-order and sibling ones
N_ROW_KEYS = 10  # keys of a (g, m) row: 5 templates, alone and in the slot
N_CLASS_KEYS = 4  # keys of a (grandparent tag, head tag, modifier tag, directions) class: 2 templates, alone
# and conjoined


class CompiledGrand(NamedTuple):
    """The grandparent feature ids of one sentence (see the module docstring)."""

    size: int  # n + 1
    row_ids: np.ndarray  # (size^2, N_ROW_KEYS) int32: row g size + m
    part_class: np.ndarray  # (size^3,) int32: the class of cell (g size + h) size + m, -1 if it is not a part
    class_ids: np.ndarray  # (classes, N_CLASS_KEYS) int32
    parts: KeptParts | None = None  # a pruned layout: part_class is per slot (:mod:`egnlp.features.kept_parts`)


@njit(cache=True)
def n_parts(size):
    """The number of grandparent cells of a sentence of ``size`` = n + 1 positions (the whole cube)."""
    return size * size * size


@njit(cache=True)
def is_part(g, h, m):
    """Whether the cell (g, h, m) may be a grandparent part."""
    return h >= 1 and m >= 1 and h != m and g != h and g != m


@njit(cache=True)
def _row_keys(atoms, base, g, m, out):
    """The keys of row (g, m): the five templates, alone and in the slot of (g, m)."""
    pair_row_keys(_T0, atoms[base + g, WORD], atoms[base + g, POS], atoms[base + g, CPOS], atoms[base + m, WORD],
                  atoms[base + m, POS], atoms[base + m, CPOS], dirdist_slot(g, m), out)


@njit(cache=True)
def _directions(g, h, m):
    """0..3: bit 0 when g is left of h, bit 1 when h is left of m."""
    return (1 if g < h else 0) + (2 if h < m else 0)


@njit(cache=True)
def _class_keys(atoms, base, g, h, m, out):
    """The keys of the three-token templates of (g, h, m), gp.hp.mp and gc.hc.mc, alone and conjoined with
    the directions."""
    triple_class_keys(_T0, atoms[base + g, POS], atoms[base + h, POS], atoms[base + m, POS], atoms[base + g, CPOS],
                      atoms[base + h, CPOS], atoms[base + m, CPOS], _directions(g, h, m) + 1, out)


@njit(cache=True)
def _gold_keys(atoms, base, heads, out, c):
    """The keys of the gold grandparent parts of one sentence (``heads`` of words 1..n) into ``out`` from c."""
    n = heads.shape[0]
    for m in range(1, n + 1):
        h = heads[m - 1]
        if h == 0:
            continue
        g = heads[h - 1]
        _row_keys(atoms, base, g, m, out[c:c + N_ROW_KEYS])
        c += N_ROW_KEYS
        _class_keys(atoms, base, g, h, m, out[c:c + N_CLASS_KEYS])
        c += N_CLASS_KEYS
    return c


@njit(cache=True)
def _compile(atoms, base, n, table_keys, table_vals, keep):
    """The ids of the parts (g, h, m) whose arcs g -> h and h -> m ``keep`` (size, size) uint8 keeps (every
    arc for training); the rows and parts of the others keep -1."""
    size = n + 1
    keys = np.empty(N_ROW_KEYS, dtype=np.uint64)
    row_ids = np.full((size * size, N_ROW_KEYS), -1, dtype=np.int32)
    needed = np.zeros((size, size), dtype=np.uint8)  # the rows (g, m) of kept arcs g -> h -> m
    for h in range(1, size):
        for g in range(size):
            if g != h and keep[g, h]:
                for m in range(1, size):
                    if m != h and m != g and keep[h, m]:
                        needed[g, m] = 1
    for g in range(size):
        for m in range(1, size):
            if g != m and needed[g, m]:
                _row_keys(atoms, base, g, m, keys)
                row_ids_of(table_keys, table_vals, keys, row_ids[g * size + m])
    # classes of (grandparent tag, head tag, modifier tag, directions), over sentence-local tag numbers
    tag = np.empty(size, dtype=np.int64)
    nt = pair_classes(atoms[base: base + size, POS].copy(), atoms[base: base + size, CPOS].copy(), tag)
    memo = np.full(nt * nt * nt * 4, -1, dtype=np.int32)
    part_class = np.full(n_parts(size), -1, dtype=np.int32)
    # room for every class there may be (only the rows written take memory)
    class_ids = np.empty((min(memo.shape[0], part_class.shape[0]), N_CLASS_KEYS), dtype=np.int32)
    ckeys = np.empty(N_CLASS_KEYS, dtype=np.uint64)
    n_classes = 0
    for g in range(size):
        for h in range(size):
            for m in range(size):
                if not is_part(g, h, m) or not (keep[g, h] and keep[h, m]):
                    continue
                at = ((tag[g] * nt + tag[h]) * nt + tag[m]) * 4 + _directions(g, h, m)
                if memo[at] < 0:
                    _class_keys(atoms, base, g, h, m, ckeys)
                    for j in range(N_CLASS_KEYS):
                        class_ids[n_classes, j] = alphabet_id(table_keys, table_vals, ckeys[j])
                    memo[at] = n_classes
                    n_classes += 1
                part_class[(g * size + h) * size + m] = memo[at]
    return row_ids, part_class, class_ids[:n_classes].copy()


@njit(cache=True)
def _scores(size, row_ids, part_class, class_ids, w, out):
    """out[(g size + h) size + m] = the row's and the class's weights of every grandparent part, 0 elsewhere."""
    row_w, class_w = row_class_weights(row_ids, class_ids, w)
    p = 0
    for g in range(size):
        for h in range(size):
            for m in range(size):
                k = part_class[p]
                out[p] = row_w[g * size + m] + class_w[k] if k >= 0 else 0.0
                p += 1


@njit(cache=True)
def _fold(size, coef, part_class, n_classes, row_coef, class_coef):
    """The coefficients of the grandparent parts summed per row and class."""
    row_coef[:] = 0.0
    class_coef[:n_classes] = 0.0
    for g in range(size):
        for h in range(1, size):
            cell = (g * size + h) * size  # the cells (g, h, m) follow it
            for m in range(1, size):
                c = coef[cell + m]
                if c != 0.0 and part_class[cell + m] >= 0:
                    row_coef[g * size + m] += c
                    class_coef[part_class[cell + m]] += c


@njit(cache=True)
def _compile_kept(atoms, base, n, table_keys, table_vals, keep, hptr, hidx, goff, n_grand):
    """The ids of the grandparent slots of the pruned layout of ``keep`` (:mod:`egnlp.features.kept_parts`):
    row_ids as :func:`_compile` makes them (the rows of the slots only), part_class per slot (-1 for the
    slot of g = m, no part), class_ids."""
    size = n + 1
    keys = np.empty(N_ROW_KEYS, dtype=np.uint64)
    row_ids = np.full((size * size, N_ROW_KEYS), -1, dtype=np.int32)
    done = np.zeros(size * size, dtype=np.uint8)
    tag = np.empty(size, dtype=np.int64)
    nt = pair_classes(atoms[base: base + size, POS].copy(), atoms[base: base + size, CPOS].copy(), tag)
    memo = np.full(nt * nt * nt * 4, -1, dtype=np.int32)
    part_class = np.full(n_grand, -1, dtype=np.int32)
    class_ids = np.empty((min(memo.shape[0], n_grand), N_CLASS_KEYS), dtype=np.int32)
    ckeys = np.empty(N_CLASS_KEYS, dtype=np.uint64)
    n_classes = 0
    for h in range(1, size):
        for m in range(1, size):
            q = goff[h, m]
            if q < 0:
                continue
            for j in range(hptr[h], hptr[h + 1]):
                g = hidx[j]
                if g != m:
                    row = g * size + m
                    if not done[row]:
                        done[row] = 1
                        _row_keys(atoms, base, g, m, keys)
                        row_ids_of(table_keys, table_vals, keys, row_ids[row])
                    at = ((tag[g] * nt + tag[h]) * nt + tag[m]) * 4 + _directions(g, h, m)
                    if memo[at] < 0:
                        _class_keys(atoms, base, g, h, m, ckeys)
                        for k in range(N_CLASS_KEYS):
                            class_ids[n_classes, k] = alphabet_id(table_keys, table_vals, ckeys[k])
                        memo[at] = n_classes
                        n_classes += 1
                    part_class[q + j - hptr[h]] = memo[at]
    return row_ids, part_class, class_ids[:n_classes].copy()


@njit(cache=True)
def _scores_kept(size, row_ids, part_class, class_ids, w, hptr, hidx, goff, out):
    """out[slot] = the row's and the class's weights of every grandparent slot of a pruned layout, 0 on the
    slots of no part."""
    row_w, class_w = row_class_weights(row_ids, class_ids, w)
    for h in range(1, size):
        for m in range(1, size):
            q = goff[h, m]
            if q < 0:
                continue
            for j in range(hptr[h], hptr[h + 1]):
                k = part_class[q]
                out[q] = row_w[hidx[j] * size + m] + class_w[k] if k >= 0 else 0.0
                q += 1


@njit(cache=True)
def _fold_kept(size, coef, part_class, n_classes, hptr, hidx, goff, row_coef, class_coef):
    """The coefficients of the grandparent slots of a pruned layout summed per row and class."""
    row_coef[:] = 0.0
    class_coef[:n_classes] = 0.0
    for h in range(1, size):
        for m in range(1, size):
            q = goff[h, m]
            if q < 0:
                continue
            for j in range(hptr[h], hptr[h + 1]):
                c = coef[q]
                if c != 0.0 and part_class[q] >= 0:
                    row_coef[hidx[j] * size + m] += c
                    class_coef[part_class[q]] += c
                q += 1


class GrandFeaturizer(PartAlphabet):
    """The grandparent templates' alphabet: the keys of the gold grandparent parts of a training corpus,
    id = rank."""

    WHAT = "grandparent"
    _gold_keys = staticmethod(_gold_keys)
    KEYS_PER_WORD = N_ROW_KEYS + N_CLASS_KEYS

    def compile(self, encoded: EncodedCorpus, i: int, keep: np.ndarray | None = None,
                parts: KeptParts | None = None) -> CompiledGrand:
        """The ids of sentence ``i`` of ``encoded`` (see the module docstring); with ``keep`` ((size, size)
        [head, modifier], a cascade's kept arcs), of the parts whose two arcs are kept only (the others
        score 0, as cells that are no parts do); with ``parts`` instead, of the slots of its pruned layout
        (:mod:`egnlp.features.kept_parts`): ``part_class`` then has one entry per slot."""
        table_keys, table_vals = self._tables()
        n = encoded.length(i)
        if parts is not None:
            if parts.size != n + 1:
                raise ValueError(f"a layout of size {parts.size} for a sentence of {n} words")
            return CompiledGrand(n + 1, *_compile_kept(encoded.atoms, int(encoded.tok_ptr[i]), n, table_keys,
                                                       table_vals, parts.keep, parts.hptr, parts.hidx, parts.goff,
                                                       parts.n_grand), parts)
        mask = np.ones((n + 1, n + 1), dtype=np.uint8) if keep is None else np.ascontiguousarray(keep, dtype=np.uint8)
        return CompiledGrand(n + 1, *_compile(encoded.atoms, int(encoded.tok_ptr[i]), n, table_keys, table_vals,
                                              mask))

    @staticmethod
    def scores(cg: CompiledGrand, w: np.ndarray) -> np.ndarray:
        """The (size, size, size) scores ``G[g, h, m]`` of the sentence's grandparent parts under the
        grandparent weights ``w`` (this featurizer's features only); 0 on cells that are not parts.  Of a
        pruned layout's compilation: the (n_grand,) scores of its slots."""
        if cg.parts is not None:
            out = np.empty(cg.parts.n_grand)
            _scores_kept(cg.size, cg.row_ids, cg.part_class, cg.class_ids, read_only(w), cg.parts.hptr,
                         cg.parts.hidx, cg.parts.goff, out)
            return out
        out = np.empty(n_parts(cg.size))
        _scores(cg.size, cg.row_ids, cg.part_class, cg.class_ids, read_only(w), out)
        return out.reshape(cg.size, cg.size, cg.size)


class GrandPartFeatures(LayeredPartFeatures):
    """The parser's :class:`~egnlp.training.structured_problem.PartFeatureSet` with sibling and grandparent parts:
    the parts of a sentence are its sibling parts (``sib``, a
    :class:`~egnlp.features.siblings.SiblingPartFeatures`: features 0..sib.n_features - 1) followed by
    its (size, size, size) grandparent cells (module docstring; ``grand``'s features after the sibling
    ones), or with a ``sib`` over a cascade's kept arcs (its ``keeps``), the slots of the pruned layout
    (:mod:`egnlp.features.kept_parts`).  Part ranges must be whole sentences."""

    def __init__(self, sib: SiblingPartFeatures, grand: GrandFeaturizer, encoded: EncodedCorpus):
        self.sib = self.lower = sib
        self.arcs = sib.arcs
        self.siblings = sib.siblings
        self.grand = grand
        self.encoded = encoded
        self.n_sib_features = self.n_lower = int(sib.n_features)
        self.n_features = self.n_sib_features + grand.n_features
        sizes = np.diff(encoded.tok_ptr)
        if sib.keeps is not None:
            counts = np.diff(sib.part_ptr) + np.array([sib.layout(i).n_grand for i in range(sizes.shape[0])],
                                                      dtype=np.int64)
        else:
            counts = np.diff(sib.part_ptr) + sizes ** 3
        self.part_ptr = np.zeros(sizes.shape[0] + 1, dtype=np.int64)
        np.cumsum(counts, out=self.part_ptr[1:])
        self._compiled: tuple[int, CompiledGrand] | None = None

    def compiled(self, i: int) -> CompiledGrand:
        """Sentence ``i``'s grandparent ids (compiled again at every visit of another sentence)."""
        if self._compiled is None or self._compiled[0] != i:
            self._compiled = (i, self.grand.compile(self.encoded, i, parts=self.sib.layout(i)))
        return self._compiled[1]

    @property
    def keeps(self):
        """The masks of the kept arcs whose pruned layout the parts follow, or None."""
        return self.sib.keeps

    def layout(self, i: int) -> KeptParts | None:
        """Sentence ``i``'s pruned layout (None without masks)."""
        return self.sib.layout(i)

    def keep(self, i: int) -> bool:
        """Keep sentence ``i``'s arcs and siblings while the budget has room (the grandparent ids are
        compiled at each visit); whether they were kept."""
        return self.sib.keep(i)

    def split(self, i: int) -> tuple[int, int, int]:
        """(lo, middle, hi): sentence ``i``'s parts, its sibling parts lo:middle and its cells middle:hi."""
        lo, hi = self.parts(i)
        a, b = self.sib.parts(i)
        return lo, lo + (b - a), hi

    def scores(self, lo: int, hi: int, w: np.ndarray) -> np.ndarray:
        """``w . phi(r)`` for the parts ``lo:hi`` (whole sentences), shape (hi - lo,)."""
        return self.scores_many(lo, hi, (w,))[0]

    def scores_many(self, lo: int, hi: int, ws) -> list[np.ndarray]:
        """``scores(lo, hi, w)`` for each ``w`` of ``ws`` (one or two vectors)."""
        ws = [checked_vector(w, "w", self.n_features) for w in ws]
        outs = [np.empty(hi - lo) for _ in ws]
        for i in self.whole_examples(lo, hi):
            a, middle, b = self.split(i)
            slo, shi = self.sib.parts(i)
            cg = self.compiled(i)
            sibs = self.sib.scores_many(slo, shi, [w[:self.n_sib_features] for w in ws])
            for w, sib, out in zip(ws, sibs, outs):
                out[a - lo:middle - lo] = sib
                if cg.parts is not None:
                    _scores_kept(cg.size, cg.row_ids, cg.part_class, cg.class_ids, read_only(w[self.n_sib_features:]),
                                 cg.parts.hptr, cg.parts.hidx, cg.parts.goff, out[middle - lo:b - lo])
                else:
                    _scores(cg.size, cg.row_ids, cg.part_class, cg.class_ids, read_only(w[self.n_sib_features:]),
                            out[middle - lo:b - lo])
        return outs

    def _layers(self, i: int, coef: np.ndarray):
        """Sentence ``i``'s part coefficients as those of its sibling parts, and per grandparent row and
        class with the sentence's ids."""
        a, middle, _ = self.split(i)
        cg = self.compiled(i)
        row_coef = np.empty(cg.row_ids.shape[0])
        class_coef = np.empty(cg.class_ids.shape[0])
        if cg.parts is not None:
            _fold_kept(cg.size, coef[middle - a:], cg.part_class, cg.class_ids.shape[0], cg.parts.hptr,
                       cg.parts.hidx, cg.parts.goff, row_coef, class_coef)
        else:
            _fold(cg.size, coef[middle - a:], cg.part_class, cg.class_ids.shape[0], row_coef, class_coef)
        return coef[:middle - a], cg, row_coef, class_coef
