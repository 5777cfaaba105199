"""Feature templates of the second-stage arc labeler: the label of h -> m given the whole tree.

McDonald, Lerman and Pereira (2006) label the arcs of a tree in a second
stage, with features of the head and the modifier and of the tree around
them; egnlp does the same with a maximum-entropy classifier per arc (one
event per word, :mod:`egnlp.training.maxent_problem`).  Because the tree is
known, the templates can read what a first-order arc score cannot: the
modifier's children (in UD the case marker of an ``obl`` or ``nmod`` is a
child of the modifier), its siblings, and the head's own head.

For the arc h -> m (h = 0 is the root row) the templates are, over the atoms
of :mod:`egnlp.features.arc_templates` (W word, X prefix, P fine POS, C
coarse POS, L lemma, F morphological features) with ``d`` the direction and
distance slot (:func:`~egnlp.features.arc_templates.dirdist_slot`):

- a bias; mW, mL, mC, mP, mF, mX; hW, hL, hC, hP, hF;
- hC.mC, hP.mP, hC.mC.d, hP.mP.d, d, hL.mC, hC.mL, hL.mL, hC.mF, mC.mF,
  hC.hF.mC;
- gC.hC.mC with g the head of h (a pad when h is the root);
- the neighbours of m: (m-1)C.mC.hC, mC.(m+1)C.hC;
- each child c of m: cC.mC, cL.mC, cL.cC.hC; the number of m's children
  (0, 1, 2, 3+) with mC;
- each other child s of h: sC.mC; whether m is the nearest and the farthest
  child of h on its side, with hC.mC; the number of h's children with hC;
- each morphological feature f of m (FEATS split at ``|``: ``Case=Nom``,
  Basque ``ERG``): f, f.mC, f.hC; each feature g of h: g.mC.

Templates version 2 (:data:`LABEL_TEMPLATES_VERSION`) adds three, read from
the same tree:

- the whole FEATS of m's leftmost and of its rightmost child, each with mC
  (a pad when m has none);
- each other child s of h: sL.mC (in Basque the auxiliary under the verb
  tells an ergative subject from an absolutive object).

A labeler keeps the version it was trained with (model files written before
version 2 have none and read as version 1) and reads only its templates.

Every template instance is a non-zero uint64 key, as for the arc features.
"""

from __future__ import annotations

from operator import itemgetter

import numpy as np
from numba import njit

from egnlp.corpora.sentence import FEATS as FEATS_COLUMN
from egnlp.features.arc_templates import CPOS, FEATS, LEMMA, PAD_LEFT, PAD_RIGHT, POS, PREFIX, WORD, dirdist_slot
from egnlp.features.hashing import StringHasher, combine

_T0 = 1000  # label template numbers start here (a key space apart from the arc templates')
LABEL_TEMPLATES_VERSION = 2  # 1: the templates up to number 36; 2: numbers 37-39 too
N_FIXED_KEYS = 29  # keys of an arc besides those per child of m and per sibling (version 1)
N_FIXED_KEYS_V2 = 2  # the fixed keys that version 2 adds
KEYS_PER_CHILD = 3
KEYS_PER_SIBLING = 1
KEYS_PER_SIBLING_V2 = 1  # the keys per sibling that version 2 adds
KEYS_PER_MOD_FEATURE = 3
KEYS_PER_HEAD_FEATURE = 1


def feature_atoms(sentences, hasher: StringHasher | None = None,
                  memo: dict[str, tuple[int, ...]] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Each word's morphological features (FEATS split at ``|``; ``_`` is none) as atoms, laid out
    like the rows of an encoded corpus (a root row with none first in each sentence): CSR
    ``(feat_ptr (rows + 1,), feats)``.

    ``memo`` (FEATS text -> its atoms), kept by the caller across calls, spares splitting and hashing a
    FEATS value again: pt_bosque dev x8 in 0.040 s against 0.079 s (in process, 3 rounds); it is
    emptied when it holds :data:`FEATS_MEMO` values.
    """
    hasher = hasher or StringHasher()
    memo = {} if memo is None else memo
    if len(memo) > FEATS_MEMO:
        memo.clear()
    counts = []
    values: list[int] = []
    for sentence in sentences:
        counts.append(0)  # the root row
        for feats in map(itemgetter(FEATS_COLUMN), sentence.rows):
            atoms = memo.get(feats)
            if atoms is None:
                atoms = memo[feats] = tuple(hasher(part) for part in ([] if feats == "_" else feats.split("|")))
            counts.append(len(atoms))
            values.extend(atoms)
    feat_ptr = np.zeros(len(counts) + 1, dtype=np.int64)
    np.cumsum(counts, out=feat_ptr[1:])
    return feat_ptr, np.array(values, dtype=np.int64)


FEATS_MEMO = 1 << 16


@njit(cache=True, no_cpython_wrapper=True)
def _lkey(template, a, b, c, d):
    """Key of label template ``template`` over up to four atoms (unused atoms are 0); never 0."""
    k = combine(np.uint64(_T0 + template), a)
    k = combine(k, b)
    k = combine(k, c)
    k = combine(k, d)
    return k if k != 0 else np.uint64(1)


@njit(cache=True, no_cpython_wrapper=True)
def _count_bin(k):
    return np.int64(k if k < 3 else 3)


@njit(cache=True, no_cpython_wrapper=True)
def _arc_keys(atoms, base, n, heads, child_ptr, child_ids, m, feat_ptr, feats, version, out):
    """Write the label keys of templates ``version`` of the arc heads[m] -> m of one sentence into ``out``;
    return their number.

    ``heads`` (n + 1,) int64 sentence-local heads (heads[0] = -1); the
    children of token x are ``child_ids[child_ptr[x]:child_ptr[x + 1]]`` in
    increasing order.
    """
    h = heads[m]
    H = base + h
    M = base + m
    slot = dirdist_slot(h, m)
    mc, mp, ml = atoms[M, CPOS], atoms[M, POS], atoms[M, LEMMA]
    hc, hp, hl = atoms[H, CPOS], atoms[H, POS], atoms[H, LEMMA]
    c = 0
    out[c] = _lkey(0, 0, 0, 0, 0)
    c += 1
    for t, col in enumerate((WORD, LEMMA, CPOS, POS, FEATS, PREFIX)):
        out[c] = _lkey(1 + t, atoms[M, col], 0, 0, 0)
        c += 1
    for t, col in enumerate((WORD, LEMMA, CPOS, POS, FEATS)):
        out[c] = _lkey(7 + t, atoms[H, col], 0, 0, 0)
        c += 1
    out[c] = _lkey(12, hc, mc, 0, 0)
    out[c + 1] = _lkey(13, hp, mp, 0, 0)
    out[c + 2] = _lkey(14, hc, mc, slot, 0)
    out[c + 3] = _lkey(15, hp, mp, slot, 0)
    out[c + 4] = _lkey(16, slot, 0, 0, 0)
    out[c + 5] = _lkey(17, hl, mc, 0, 0)
    out[c + 6] = _lkey(18, hc, ml, 0, 0)
    out[c + 7] = _lkey(19, hl, ml, 0, 0)
    out[c + 8] = _lkey(20, hc, atoms[M, FEATS], 0, 0)
    out[c + 9] = _lkey(21, mc, atoms[M, FEATS], 0, 0)
    out[c + 10] = _lkey(22, hc, atoms[H, FEATS], mc, 0)
    c += 11
    g = heads[h] if h > 0 else -1
    out[c] = _lkey(23, atoms[base + g, CPOS] if g >= 0 else PAD_LEFT, hc, mc, 0)
    left = atoms[M - 1, CPOS] if m > 1 else PAD_LEFT
    right = atoms[M + 1, CPOS] if m < n else PAD_RIGHT
    out[c + 1] = _lkey(24, left, mc, hc, 0)
    out[c + 2] = _lkey(25, mc, right, hc, 0)
    c += 3
    lo, hi = child_ptr[m], child_ptr[m + 1]
    for j in range(lo, hi):
        x = base + child_ids[j]
        out[c] = _lkey(26, atoms[x, CPOS], mc, 0, 0)
        out[c + 1] = _lkey(27, atoms[x, LEMMA], mc, 0, 0)
        out[c + 2] = _lkey(28, atoms[x, LEMMA], atoms[x, CPOS], hc, 0)
        c += KEYS_PER_CHILD
    out[c] = _lkey(29, _count_bin(hi - lo), mc, 0, 0)
    c += 1
    if version >= 2:  # the FEATS of m's outermost children: its case or postposition markers
        out[c] = _lkey(37, atoms[base + child_ids[lo], FEATS] if hi > lo else PAD_LEFT, mc, 0, 0)
        out[c + 1] = _lkey(38, atoms[base + child_ids[hi - 1], FEATS] if hi > lo else PAD_RIGHT, mc, 0, 0)
        c += N_FIXED_KEYS_V2
    # siblings: the other children of h, and where m stands among those on its side
    nearest = True
    farthest = True
    for j in range(child_ptr[h], child_ptr[h + 1]):
        s = child_ids[j]
        if s == m:
            continue
        out[c] = _lkey(30, atoms[base + s, CPOS], mc, 0, 0)
        c += KEYS_PER_SIBLING
        if version >= 2:
            out[c] = _lkey(39, atoms[base + s, LEMMA], mc, 0, 0)
            c += KEYS_PER_SIBLING_V2
        if (s < h) == (m < h):
            if abs(s - h) < abs(m - h):
                nearest = False
            else:
                farthest = False
    out[c] = _lkey(31, np.int64(nearest) * 2 + np.int64(farthest), hc, mc, 0)
    out[c + 1] = _lkey(32, _count_bin(child_ptr[h + 1] - child_ptr[h]), hc, 0, 0)
    c += 2
    for j in range(feat_ptr[M], feat_ptr[M + 1]):
        out[c] = _lkey(33, feats[j], 0, 0, 0)
        out[c + 1] = _lkey(34, feats[j], mc, 0, 0)
        out[c + 2] = _lkey(35, feats[j], hc, 0, 0)
        c += KEYS_PER_MOD_FEATURE
    for j in range(feat_ptr[H], feat_ptr[H + 1]):
        out[c] = _lkey(36, feats[j], mc, 0, 0)
        c += KEYS_PER_HEAD_FEATURE
    return c


@njit(cache=True)
def label_keys(tok_ptr, atoms, head_rows, feat_ptr, feats, version):
    """The label keys of templates ``version`` (1 or 2) of every word's arc in a corpus of trees.

    Args:
        tok_ptr, atoms: an encoded corpus (:class:`~egnlp.features.arc_templates.EncodedCorpus`).
        head_rows: the head of every row (sentence-local, -1 on root rows), like
            :meth:`EncodedCorpus.heads_rows`; the heads of a sentence must form a tree.
        feat_ptr, feats: the rows' morphological features (:func:`feature_atoms`).

    Returns:
        ``(ev_ptr, keys)``: the keys of word i (words numbered across the
        corpus, root rows skipped) are ``keys[ev_ptr[i]:ev_ptr[i + 1]]``.
    """
    n_sent = tok_ptr.shape[0] - 1
    n_words = atoms.shape[0] - n_sent
    fixed, per_sibling = N_FIXED_KEYS, KEYS_PER_SIBLING
    if version >= 2:
        fixed += N_FIXED_KEYS_V2
        per_sibling += KEYS_PER_SIBLING_V2
    # an upper bound of the keys: the fixed ones, per child of m, per sibling of m
    total = 0
    for s in range(n_sent):
        base = tok_ptr[s]
        n = tok_ptr[s + 1] - base - 1
        kids = np.zeros(n + 1, dtype=np.int64)
        for m in range(1, n + 1):
            kids[head_rows[base + m]] += 1
        for m in range(1, n + 1):
            h = head_rows[base + m]
            total += (fixed + KEYS_PER_CHILD * kids[m] + per_sibling * kids[h]
                      + KEYS_PER_MOD_FEATURE * (feat_ptr[base + m + 1] - feat_ptr[base + m])
                      + KEYS_PER_HEAD_FEATURE * (feat_ptr[base + h + 1] - feat_ptr[base + h]))
    ev_ptr = np.zeros(n_words + 1, dtype=np.int64)
    keys = np.empty(total, dtype=np.uint64)
    word = 0
    c = 0
    for s in range(n_sent):
        base = tok_ptr[s]
        n = tok_ptr[s + 1] - base - 1
        heads = head_rows[base : base + n + 1]
        child_ptr = np.zeros(n + 2, dtype=np.int64)
        for m in range(1, n + 1):
            child_ptr[heads[m] + 1] += 1
        for x in range(n + 1):
            child_ptr[x + 1] += child_ptr[x]
        fill = child_ptr[:-1].copy()
        child_ids = np.empty(n, dtype=np.int64)
        for m in range(1, n + 1):  # increasing m: each child list comes out sorted
            child_ids[fill[heads[m]]] = m
            fill[heads[m]] += 1
        for m in range(1, n + 1):
            c += _arc_keys(atoms, base, n, heads, child_ptr, child_ids, m, feat_ptr, feats, version, keys[c:])
            word += 1
            ev_ptr[word] = c
    return ev_ptr, keys[:c]
