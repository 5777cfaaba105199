"""Second-order sibling features of dependency parsing (McDonald and Pereira 2006, Sec. 3).

A sibling part (h, s, m) is the arc h -> m together with s, the modifier of h
on the same side as m that comes just before m, closer to h ("none" when m
is h's closest modifier on its side).  Its score is the first-order score
of the arc h -> m plus the weights of the sibling templates of (h, s, m).

Parts of a sentence of n words (size = n + 1, root at 0), as
:mod:`egnlp.parser.eisner_siblings` lays them out: cells (h, m) in row-major order,
m in 1..n, m != h; the cell of (h, m) holds |h - m| parts, k = 0 for "no
sibling" and k = |s - h| for the sibling s strictly between h and m.

Templates (each alone and conjoined with the direction and binned distance
of :func:`~egnlp.features.arc_templates.dirdist_slot` between s and m, or
between h and m when there is no sibling):

- over the sibling and the modifier (no head): sp.mp, sw.mw, sw.mp, sp.mw,
  sc.mc, with w the word, p the POS tag and c the coarse tag, and a "none"
  atom for s when there is no sibling;
- over all three: hp.sp.mp and hc.sc.mc.

A template instance is a 64-bit key, as the first-order ones; the features
are the keys of the gold sibling parts of the training data (an alphabet),
numbered after the first-order features in the weight vector.

What one sentence needs is compiled once a visit (:meth:`SiblingFeaturizer.compile`):
the ids of every (s, m) row and every "none" (h, m) row, and the ids of the
classes of (head tag, sibling tag, modifier tag, slot) that the three-token
templates read, with each part's class.  A part's score is then the arc
score, one row sum and one class sum; a scatter sums the coefficients of
the parts per arc, row and class first.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from egnlp.features.arc_featurizer import read_only
from egnlp.features.arc_parts import PartRanges, check_target, checked_vector, pair_classes
from egnlp.features.arc_templates import CPOS, POS, WORD, EncodedCorpus, dirdist_slot, nonzero_key, template_key
from egnlp.features.hashing import KeyTable, hash_string, table_lookup
from egnlp.features.kept_parts import KeptParts, kept_parts

#: Version of the sibling template set, saved with second-order models and checked on load.
SIBLING_TEMPLATES_VERSION = "mcdonald2006-siblings-v1"
_NONE = np.int64(hash_string("<no-sibling>"))
_T0 = 200  # template numbers, apart from the first-order ones
N_ROW_KEYS = 10  # keys of a (s, m) row: 5 templates, alone and in the slot
N_CLASS_KEYS = 4  # keys of a (head tag, sibling tag, modifier tag, slot) class: 2 templates, alone and in the slot


class CompiledSiblings(NamedTuple):
    """The sibling feature ids of one sentence (see the module docstring)."""

    size: int  # n + 1
    row_ids: np.ndarray  # (2 size^2, N_ROW_KEYS) int32: rows s size + m, then size^2 + h size + m (no sibling)
    part_class: np.ndarray  # (parts,) int32: each part's class
    class_ids: np.ndarray  # (classes, N_CLASS_KEYS) int32
    keep: np.ndarray = np.ones((1, 1), dtype=np.uint8)  # the kept arcs of a compact layout
    compact: bool = False  # the parts are the pruned layout of :mod:`egnlp.features.kept_parts`


@njit(cache=True)
def n_parts(size):
    """The number of sibling parts of a sentence of ``size`` = n + 1 positions: the sum of |h - m| over
    its arcs, n (n + 1) / 2 from the root and (n - 1) n (n + 1) / 3 between words."""
    n = size - 1
    return n * (n + 1) // 2 + (n - 1) * n * (n + 1) // 3


# The templates of a higher-order part set (siblings here, grandparents in grandparents.py) have one shape: a
# row (x, m) of five templates over a token x (the sibling, or the grandparent) and the modifier m, and a
# class of two templates over the tags of three tokens.


@njit(cache=True, inline="always")
def pair_row_keys(t0, xw, xp, xc, mw, mp, mc, slot, out):
    """The keys of a row (x, m): xp.mp, xw.mw, xw.mp, xp.mw, xc.mc (template numbers t0..t0 + 4; w the
    word, p the POS tag, c the coarse tag), each alone and in ``slot``; out (N_ROW_KEYS,) uint64."""
    pairs = ((xp, mp), (xw, mw), (xw, mp), (xp, mw), (xc, mc))
    for t in range(5):
        a, b = pairs[t]
        out[2 * t] = nonzero_key(template_key(t0 + t, a, b, 0, 0))
        out[2 * t + 1] = nonzero_key(template_key(t0 + t, a, b, slot, 1))


@njit(cache=True, inline="always")
def triple_class_keys(t0, p1, p2, p3, c1, c2, c3, conjoined, out):
    """The keys of a class: p1.p2.p3 over three tokens' POS tags (template t0 + 5) and c1.c2.c3 over their
    coarse tags (t0 + 6), each alone and conjoined with ``conjoined`` (> 0); out (N_CLASS_KEYS,) uint64."""
    out[0] = nonzero_key(template_key(t0 + 5, p1, p2, p3, 0))
    out[1] = nonzero_key(template_key(t0 + 5, p1, p2, p3, conjoined))
    out[2] = nonzero_key(template_key(t0 + 6, c1, c2, c3, 0))
    out[3] = nonzero_key(template_key(t0 + 6, c1, c2, c3, conjoined))


@njit(cache=True)
def _row_keys(atoms, base, s, m, slot, out):
    """The keys of row (s, m) in ``slot``; s < 0: no sibling."""
    if s >= 0:
        sw, sp, sc = atoms[base + s, WORD], atoms[base + s, POS], atoms[base + s, CPOS]
    else:
        sw, sp, sc = _NONE, _NONE, _NONE
    pair_row_keys(_T0, sw, sp, sc, atoms[base + m, WORD], atoms[base + m, POS], atoms[base + m, CPOS], slot, out)


@njit(cache=True)
def _class_keys(atoms, base, h, s, m, slot, out):
    """The keys of the three-token templates of (h, s, m) in ``slot``: hp.sp.mp and hc.sc.mc; s < 0: no
    sibling."""
    sp = atoms[base + s, POS] if s >= 0 else _NONE
    sc = atoms[base + s, CPOS] if s >= 0 else _NONE
    triple_class_keys(_T0, atoms[base + h, POS], sp, atoms[base + m, POS], atoms[base + h, CPOS], sc,
                      atoms[base + m, CPOS], slot + 16, out)


@njit(cache=True)
def _sibling_of(h, m, k):
    """The sibling of part k of cell (h, m): -1 (none) for k = 0, else h + k towards m."""
    if k == 0:
        return -1
    return h + k if m > h else h - k


@njit(cache=True)
def _slot_of(h, s, m):
    return dirdist_slot(s, m) if s >= 0 else dirdist_slot(h, m)


@njit(cache=True)
def _gold_keys(atoms, base, heads, out, c):
    """The keys of the gold sibling parts of one sentence (``heads`` of words 1..n) into ``out`` from c."""
    n = heads.shape[0]
    for m in range(1, n + 1):
        h = heads[m - 1]
        s = -1  # the nearest modifier of h between h and m
        lo, hi = (h + 1, m) if m > h else (m + 1, h)
        for x in range(lo, hi):
            if heads[x - 1] == h:
                if m > h:
                    s = x  # the last one is nearest to m
                elif s < 0:
                    s = x  # left side: the first one is nearest to m
        slot = _slot_of(h, s, m)
        _row_keys(atoms, base, s, m, slot, out[c:c + N_ROW_KEYS])
        c += N_ROW_KEYS
        _class_keys(atoms, base, h, s, m, slot, out[c:c + N_CLASS_KEYS])
        c += N_CLASS_KEYS
    return c


@njit(cache=True)
def alphabet_id(table_keys, table_vals, key):
    """The id of ``key`` in a part alphabet's table (:class:`~egnlp.features.hashing.KeyTable`), -1 when
    it is absent or the alphabet is empty."""
    return table_lookup(table_keys, table_vals, key) if table_keys.shape[0] > 0 else -1


@njit(cache=True)
def row_ids_of(table_keys, table_vals, keys, out):
    """out[j] = the id of each key of a row (:func:`pair_row_keys`: each template alone, then in the slot),
    -1 where the alphabet has none.  A template's key in the slot is looked up only when its key alone is
    there: an alphabet holds the keys of gold parts (:meth:`PartAlphabet.fit`), and a gold part gives
    both, so the pairs of words no gold part joined cost one lookup, not two."""
    for j in range(0, keys.shape[0], 2):
        alone = alphabet_id(table_keys, table_vals, keys[j])
        out[j] = alone
        out[j + 1] = alphabet_id(table_keys, table_vals, keys[j + 1]) if alone >= 0 else -1


@njit(cache=True)
def _compile(atoms, base, n, table_keys, table_vals, keep, compact, n_out):
    """The ids of the parts of the arcs [head, modifier] that ``keep`` (size, size) uint8 keeps (every arc for
    training); the rows of the others keep -1, and so do their parts, or with ``compact`` they have none
    (the pruned layout of :mod:`egnlp.features.kept_parts`), and neither have the parts (h, s, m) whose s is
    no kept modifier of h (no tree of kept arcs has them).  ``n_out``: the number of parts."""
    size = n + 1
    keys = np.empty(N_ROW_KEYS, dtype=np.uint64)
    row_ids = np.full((2 * size * size, N_ROW_KEYS), -1, dtype=np.int32)
    # the rows (s, m) of a sibling s of a kept arc h -> m (compact: s a kept modifier of h too)
    needed = np.zeros((size, size), dtype=np.uint8)
    for h in range(size):
        for m in range(1, size):
            if m != h and keep[h, m]:
                for x in range(min(h, m) + 1, max(h, m)):
                    if not compact or keep[h, x]:
                        needed[x, m] = 1
    for s in range(1, size):  # rows with a sibling: s and m words on the same side of some head
        for m in range(1, size):
            if abs(s - m) >= 1 and needed[s, m]:
                _row_keys(atoms, base, s, m, dirdist_slot(s, m), keys)
                row_ids_of(table_keys, table_vals, keys, row_ids[s * size + m])
    for h in range(size):  # rows without a sibling
        for m in range(1, size):
            if m != h and keep[h, m]:
                _row_keys(atoms, base, -1, m, dirdist_slot(h, m), keys)
                row_ids_of(table_keys, table_vals, keys, row_ids[size * size + h * size + m])
    # classes of (head tag, sibling tag, modifier tag, slot): sentence-local tag numbers, the sibling's
    # n_tags when there is none
    tag = np.empty(size, dtype=np.int64)
    nt = pair_classes(atoms[base: base + size, POS].copy(), atoms[base: base + size, CPOS].copy(), tag)
    memo = np.full(nt * (nt + 1) * nt * 16, -1, dtype=np.int32)
    part_class = np.empty(n_out, dtype=np.int32)
    # room for every class there may be (only the rows written take memory)
    class_ids = np.empty((min(memo.shape[0], part_class.shape[0]), N_CLASS_KEYS), dtype=np.int32)
    ckeys = np.empty(N_CLASS_KEYS, dtype=np.uint64)
    n_classes = 0
    p = 0
    for h in range(size):
        for m in range(1, size):
            if m == h:
                continue
            if not keep[h, m]:
                if compact:
                    continue
                for k in range(abs(h - m)):
                    part_class[p] = -1
                    p += 1
                continue
            for k in range(abs(h - m)):
                s = _sibling_of(h, m, k)
                if compact and s >= 0 and not keep[h, s]:  # no tree over the kept arcs has this part
                    part_class[p] = -1
                    p += 1
                    continue
                slot = _slot_of(h, s, m)
                ts = tag[s] if s >= 0 else nt
                at = ((tag[h] * (nt + 1) + ts) * nt + tag[m]) * 16 + slot
                if memo[at] < 0:
                    _class_keys(atoms, base, h, s, m, slot, ckeys)
                    for j in range(N_CLASS_KEYS):
                        class_ids[n_classes, j] = alphabet_id(table_keys, table_vals, ckeys[j])
                    memo[at] = n_classes
                    n_classes += 1
                part_class[p] = memo[at]
                p += 1
    return row_ids, part_class, class_ids[:n_classes].copy()


@njit(cache=True)
def id_sums(ids, w, out):
    """out[r] = the sum of w[ids[r, j]] over the ids of row r that are not -1; ids (rows, k) int32."""
    for r in range(ids.shape[0]):
        total = 0.0
        for j in range(ids.shape[1]):
            fid = ids[r, j]
            if fid >= 0:
                total += w[fid]
        out[r] = total


@njit(cache=True)
def row_class_weights(row_ids, class_ids, w):
    """(row_w, class_w): the weights of each row's ids and each class's ids summed (:func:`id_sums`)."""
    row_w = np.empty(row_ids.shape[0])
    id_sums(row_ids, w, row_w)
    class_w = np.empty(class_ids.shape[0])
    id_sums(class_ids, w, class_w)
    return row_w, class_w


@njit(cache=True)
def _scores(size, arc, row_ids, part_class, class_ids, w, out, keep, compact):
    """out[p] = arc[h, m] + the row's and the class's weights, for every part p of the sentence; with
    ``compact``, of the pruned layout of the arcs ``keep`` keeps."""
    row_w, class_w = row_class_weights(row_ids, class_ids, w)
    p = 0
    for h in range(size):
        for m in range(1, size):
            if m == h or (compact and not keep[h, m]):
                continue
            a = arc[h, m]
            for k in range(abs(h - m)):
                if part_class[p] < 0:  # a pruned arc's part, or a sibling not kept (compiled with a mask): never read
                    out[p] = 0.0
                    p += 1
                    continue
                s = _sibling_of(h, m, k)
                row = s * size + m if s >= 0 else size * size + h * size + m
                out[p] = a + row_w[row] + class_w[part_class[p]]
                p += 1


@njit(cache=True)
def _fold(size, coef, part_class, n_classes, arc_coef, row_coef, class_coef, keep, compact):
    """The coefficients of the parts summed per arc, row and class; with ``compact``, of the pruned layout
    of the arcs ``keep`` keeps."""
    arc_coef[:] = 0.0
    row_coef[:] = 0.0
    class_coef[:n_classes] = 0.0
    p = 0
    for h in range(size):
        for m in range(1, size):
            if m == h or (compact and not keep[h, m]):
                continue
            total = 0.0
            for k in range(abs(h - m)):
                s = _sibling_of(h, m, k)
                row = s * size + m if s >= 0 else size * size + h * size + m
                c = coef[p]
                total += c
                if part_class[p] >= 0:  # else a part of the pruned layout that no tree has (coefficient 0)
                    row_coef[row] += c
                    class_coef[part_class[p]] += c
                p += 1
            arc_coef[h * size + m] = total


@njit(cache=True)
def _scatter_ids(ids, coef, target):
    for r in range(ids.shape[0]):
        c = coef[r]
        if c != 0.0:
            for j in range(ids.shape[1]):
                fid = ids[r, j]
                if fid >= 0:
                    target[fid] += c


@njit(cache=True)
def _mark_ids(ids, coef, seen, out, c):
    """Append to ``out`` from c the ids (not -1) of the rows of ``ids`` whose coefficient is not 0 and that
    ``seen`` has not marked, marking them; return the new count."""
    for r in range(ids.shape[0]):
        if coef[r] != 0.0:
            for j in range(ids.shape[1]):
                fid = ids[r, j]
                if fid >= 0 and not seen[fid]:
                    seen[fid] = 1
                    out[c] = fid
                    c += 1
    return c


@njit(cache=True)
def _touched_ids(row_ids, row_coef, class_ids, class_coef, seen):
    """The ids of the rows and classes whose coefficient is not 0, each once, in increasing order (int64);
    ``seen``: a zero uint8 vector with a place for every id, zero again on return."""
    room = row_ids.shape[1] * np.count_nonzero(row_coef) + class_ids.shape[1] * np.count_nonzero(class_coef)
    out = np.empty(room, dtype=np.int64)
    c = _mark_ids(class_ids, class_coef, seen, out, _mark_ids(row_ids, row_coef, seen, out, 0))
    out = np.sort(out[:c])
    for j in range(c):
        seen[out[j]] = 0
    return out


def rows_delta(buf, row_ids, row_coef, class_ids, class_coef, w, seen):
    """The sparse change ``(ids, vals, w . delta, ||delta||^2)`` of coefficients summed per row and
    class (a part's features are its row's ids and its class's); ``buf`` is a zero vector as long as
    ``w``, zero again on return, and so is ``seen`` (uint8, the same length).  The ids
    increase, as NumPy's ``unique`` of the touched ids gave them, so the sums keep their bits (the first
    occurrences of :func:`~egnlp.features.csr.gather_nonzero` would not), found by one kernel: es training
    with grandparent parts spent 8.5 s of 248 in ``unique`` (cProfile); pt_bosque's sparse deltas take
    0.93 of the time."""
    _scatter_ids(row_ids, row_coef, buf)
    _scatter_ids(class_ids, class_coef, buf)
    ids = _touched_ids(row_ids, row_coef, class_ids, class_coef, seen)
    vals = buf[ids]
    buf[ids] = 0.0
    keep = vals != 0.0
    ids, vals = ids[keep], vals[keep]
    return ids, vals, float(w[ids] @ vals), float(vals @ vals)


class PartAlphabet:
    """The alphabet of a higher-order part's templates: the keys of the gold parts of a training corpus,
    id = rank.  A subclass names its parts (``WHAT``) and gives the keys of a sentence's gold parts
    (``_gold_keys``: a kernel of the atoms, the sentence's first row, its heads, the output and where
    to start writing; it returns where it stopped), at most ``KEYS_PER_WORD`` keys a word."""

    WHAT = "sibling"

    def __init__(self, keys: np.ndarray | None = None):
        self.keys = np.zeros(0, dtype=np.uint64) if keys is None else np.ascontiguousarray(keys, dtype=np.uint64)
        if self.keys.size and (np.any(self.keys[1:] <= self.keys[:-1]) or self.keys[0] == 0):
            raise ValueError(f"{self.WHAT} feature keys must be sorted, distinct and non-zero")
        self._table: KeyTable | None = None

    @property
    def n_features(self) -> int:
        return int(self.keys.size)

    def fit(self, encoded: EncodedCorpus, heads_list):
        """Take the keys of the gold parts of ``encoded`` (trees ``heads_list``) as the alphabet."""
        out = np.empty(int(encoded.tok_ptr[-1]) * self.KEYS_PER_WORD, dtype=np.uint64)
        c = 0
        for i, heads in enumerate(heads_list):
            c = self._gold_keys(encoded.atoms, int(encoded.tok_ptr[i]), np.asarray(heads, dtype=np.int64), out, c)
        self.keys = np.unique(out[:c])
        self._table = None
        return self

    def _tables(self) -> tuple[np.ndarray, np.ndarray]:
        if self._table is None:
            self._table = KeyTable(self.keys)
        return self._table.table_keys, self._table.table_vals

    def __getstate__(self) -> dict:  # worker processes rebuild the table
        return {"keys": self.keys, "_table": None}


class SiblingFeaturizer(PartAlphabet):
    """The sibling templates' alphabet: the keys of the gold sibling parts of a training corpus, id = rank."""

    _gold_keys = staticmethod(_gold_keys)
    KEYS_PER_WORD = N_ROW_KEYS + N_CLASS_KEYS

    def compile(self, encoded: EncodedCorpus, i: int, keep: np.ndarray | None = None,
                parts: KeptParts | None = None) -> CompiledSiblings:
        """The ids of sentence ``i`` of ``encoded`` (see the module docstring); with ``keep`` ((size, size)
        [head, modifier], a cascade's kept arcs: :mod:`egnlp.parser.cascade`), of the kept arcs' parts only
        (the others score 0 in :meth:`scores`, and a decoder over the mask never reads them); with ``parts``
        instead, the parts of its pruned layout (:mod:`egnlp.features.kept_parts`) and no others."""
        table_keys, table_vals = self._tables()
        n = encoded.length(i)
        if parts is not None:
            if parts.size != n + 1:
                raise ValueError(f"a layout of size {parts.size} for a sentence of {n} words")
            row_ids, part_class, class_ids = _compile(encoded.atoms, int(encoded.tok_ptr[i]), n, table_keys,
                                                      table_vals, parts.keep, True, parts.n_sib)
            return CompiledSiblings(n + 1, row_ids, part_class, class_ids, parts.keep, True)
        mask = np.ones((n + 1, n + 1), dtype=np.uint8) if keep is None else np.ascontiguousarray(keep, dtype=np.uint8)
        row_ids, part_class, class_ids = _compile(encoded.atoms, int(encoded.tok_ptr[i]), n, table_keys, table_vals,
                                                  mask, False, n_parts(n + 1))
        return CompiledSiblings(n + 1, row_ids, part_class, class_ids)

    @staticmethod
    def scores(cs: CompiledSiblings, arc: np.ndarray, w: np.ndarray) -> np.ndarray:
        """The scores of the sentence's sibling parts: ``arc`` (size, size) first-order scores plus the
        sibling weights ``w`` (this featurizer's features only)."""
        out = np.empty(cs.part_class.shape[0])
        _scores(cs.size, arc, cs.row_ids, cs.part_class, cs.class_ids, read_only(w), out, cs.keep, cs.compact)
        return out


class LayeredPartFeatures(PartRanges):
    """A part feature set of two layers: a part's features are those of a part of the feature set below
    (``lower``, features 0..n_lower - 1) and those of its row and its class of this layer's templates
    (numbered after them).  A subclass gives a sentence's coefficients in both layers: ``_layers(i,
    coef)`` is (the coefficients of sentence i's parts below, its compiled ids with ``row_ids`` and
    ``class_ids``, the coefficients per row, per class).  Part ranges must be whole sentences."""

    lower: PartRanges
    n_lower: int
    n_features: int
    _buf: np.ndarray | None = None
    _seen: np.ndarray | None = None

    def scatter(self, lo: int, hi: int, coef: np.ndarray, target: np.ndarray) -> None:
        """``target += sum_r coef[r - lo] phi(r)`` over the parts ``lo:hi`` (whole sentences)."""
        coef = checked_vector(coef, "coef", hi - lo)
        check_target(target, self.n_features)
        for i in self.whole_examples(lo, hi):
            a, b = self.parts(i)
            lower_coef, ids, row_coef, class_coef = self._layers(i, coef[a - lo:b - lo])
            llo, lhi = self.lower.parts(i)
            self.lower.scatter(llo, lhi, lower_coef, target[:self.n_lower])
            upper = target[self.n_lower:]
            _scatter_ids(ids.row_ids, row_coef, upper)
            _scatter_ids(ids.class_ids, class_coef, upper)

    def sparse_delta(self, lo: int, hi: int, coef: np.ndarray, w: np.ndarray):
        """delta = sum_r coef[r - lo] phi(r) over the parts ``lo:hi`` (one sentence) as a sparse vector:
        ``(ids, vals, w . delta, ||delta||^2)``."""
        coef = checked_vector(coef, "coef", hi - lo)
        w = checked_vector(w, "w", self.n_features)
        examples = self.whole_examples(lo, hi)
        if len(examples) != 1:
            return self.dense_delta(lo, hi, coef, w)
        i = examples[0]
        lower_coef, ids, row_coef, class_coef = self._layers(i, coef)
        llo, lhi = self.lower.parts(i)
        l_ids, l_vals, l_dot, l_sq = self.lower.sparse_delta(llo, lhi, lower_coef, w[:self.n_lower])
        if self._buf is None:
            self._buf = np.zeros(max(self.n_features - self.n_lower, 1))
            self._seen = np.zeros(self._buf.shape[0], dtype=np.uint8)
        u_ids, u_vals, u_dot, u_sq = rows_delta(self._buf, ids.row_ids, row_coef, ids.class_ids, class_coef,
                                                w[self.n_lower:], self._seen)
        return (np.concatenate([l_ids, u_ids + self.n_lower]), np.concatenate([l_vals, u_vals]),
                l_dot + u_dot, l_sq + u_sq)


class SiblingPartFeatures(LayeredPartFeatures):
    """The parser's :class:`~egnlp.training.structured_problem.PartFeatureSet` with sibling parts: the parts of a
    sentence are its sibling parts (module docstring), the features the first-order ones of the part's
    arc (``arcs``, an :class:`~egnlp.features.arc_parts.ArcPartFeatures`, ids 0..arcs.n_features - 1)
    and the sibling templates' (``siblings``, after them).  Part ranges must be whole sentences.

    ``keeps`` (optional, one (size, size) mask [head, modifier] per sentence: a cascade's kept arcs): the
    parts of a sentence are those of its kept arcs only, in the pruned layout of
    :mod:`egnlp.features.kept_parts` (:meth:`layout`)."""

    def __init__(self, arcs, siblings: SiblingFeaturizer, encoded: EncodedCorpus, keeps=None):
        self.arcs = arcs
        self.siblings = siblings
        self.encoded = encoded
        self.lower = arcs
        self.n_arc_features = self.n_lower = int(arcs.n_features)
        self.n_features = self.n_arc_features + siblings.n_features
        sizes = np.diff(encoded.tok_ptr)
        self.keeps = keeps
        self._layout: tuple[int, KeptParts] | None = None
        if keeps is not None:
            if len(keeps) != sizes.shape[0]:
                raise ValueError("one mask of kept arcs per sentence is needed")
            counts = np.array([self.layout(i).n_sib for i in range(sizes.shape[0])], dtype=np.int64)
        else:
            counts = np.array([n_parts(int(k)) for k in sizes], dtype=np.int64)
        self.part_ptr = np.zeros(sizes.shape[0] + 1, dtype=np.int64)
        np.cumsum(counts, out=self.part_ptr[1:])
        self._compiled: tuple[int, CompiledSiblings] | None = None
        self._cache: dict[int, CompiledSiblings] = {}

    def layout(self, i: int) -> KeptParts | None:
        """Sentence ``i``'s pruned part layout (None without ``keeps``)."""
        if self.keeps is None:
            return None
        if self._layout is None or self._layout[0] != i:
            parts = kept_parts(self.keeps[i])
            if parts.size != int(self.encoded.length(i)) + 1:
                raise ValueError(f"sentence {i}: a mask of shape {parts.keep.shape} for {self.encoded.length(i)} words")
            self._layout = (i, parts)
        return self._layout[1]

    def compiled(self, i: int) -> CompiledSiblings:
        """Sentence ``i``'s sibling ids, kept for later passes while the arcs' cache budget
        (``arcs.budget``, :class:`~egnlp.features.arc_parts.CacheBudget`) has room."""
        if self._compiled is None or self._compiled[0] != i:
            cs = self._cache.get(i)
            if cs is None:
                cs = self.siblings.compile(self.encoded, i, parts=self.layout(i))
                if self.arcs.budget.room > 0 and self.arcs.budget.take(cs.row_ids.nbytes + cs.part_class.nbytes
                                                                       + cs.class_ids.nbytes):
                    self._cache[i] = cs
            self._compiled = (i, cs)
        return self._compiled[1]

    def keep(self, i: int) -> bool:
        """Compile sentence ``i``'s arcs and siblings now, keeping them while the budget has room; whether
        both are kept."""
        self.compiled(i)
        return i in self._cache and self.arcs.keep(i)

    def scores(self, lo: int, hi: int, w: np.ndarray) -> np.ndarray:
        """``w . phi(r)`` for the parts ``lo:hi`` (whole sentences), shape (hi - lo,)."""
        return self.scores_many(lo, hi, (w,))[0]

    def scores_many(self, lo: int, hi: int, ws) -> list[np.ndarray]:
        """``scores(lo, hi, w)`` for each ``w`` of ``ws`` (one or two vectors), the arcs' in one walk
        (:meth:`~egnlp.features.arc_parts.ArcPartFeatures.scores_many`)."""
        ws = [checked_vector(w, "w", self.n_features) for w in ws]
        outs = [np.empty(hi - lo) for _ in ws]
        for i in self.whole_examples(lo, hi):
            a, b = self.parts(i)
            alo, ahi = self.arcs.parts(i)
            cs = self.compiled(i)
            arcs = self.arcs.scores_many(alo, ahi, [w[:self.n_arc_features] for w in ws])
            for w, arc, out in zip(ws, arcs, outs):
                _scores(cs.size, arc.reshape(cs.size, cs.size), cs.row_ids, cs.part_class, cs.class_ids,
                        read_only(w[self.n_arc_features:]), out[a - lo:b - lo], cs.keep, cs.compact)
        return outs

    def _layers(self, i: int, coef: np.ndarray):
        """Sentence ``i``'s part coefficients as those of its arcs (summed per arc), and per sibling row
        and class with the sentence's ids."""
        cs = self.compiled(i)
        arc_coef = np.empty(cs.size * cs.size)
        row_coef = np.empty(cs.row_ids.shape[0])
        class_coef = np.empty(cs.class_ids.shape[0])
        _fold(cs.size, coef, cs.part_class, cs.class_ids.shape[0], arc_coef, row_coef, class_coef, cs.keep,
              cs.compact)
        return arc_coef, cs, row_coef, class_coef
