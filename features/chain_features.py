"""The part features of linear chains: the feature set of the CRF tagger.

Parts
-----
A sentence i with n tokens and L labels is a first-order Markov chain, the
MRF of Bartlett et al. (2004), Sec. 2.1, Example 1: node cliques (one label
per token) and edge cliques (the labels of consecutive tokens).  Its parts,
in this order within the example's part range:

1. n * L node parts (t, y), row-major: part ``t * L + y``;
2. T transition parts (a, b), **aggregated over positions**: part k stands
   for the pair ``trans_pairs[k]`` at every position t >= 1; its count in a
   labelling is the number of a -> b transitions, its marginal the expected
   number, its gold value the transition count of the gold sequence;
3. L start parts (the first label) and L stop parts (the last label).

Why one block of transitions per sentence is exact.  In the part-based
dual (Collins et al. 2008, Sec. 4; Bartlett et al. 2004, Fig. 2) each
example keeps one theta per part, and the per-position edge part (t, a, b)
would get the EG update theta' = (1 - eta) theta + eta s (log-linear) or
theta' = theta + eta (e + s) (max-margin) with s = w . phi(x, (t, a, b)) and
loss e = 0.  The edge features carry no observation, so phi(x, (t, a, b)) is
the indicator of the transition feature (a, b) alone and s does not depend
on t; e is 0 on every edge.  Starting from a theta that does not depend on t
(zeros, as the trainers do), every update keeps it so.  Then
sum_t theta_{t,a,b} z_{t,a,b}(y) = theta_{a,b} * count_{a,b}(y), so the
distribution over labellings, the marginals (summed over t), the entropy
term sum_r mu_r theta_r and the change of W are the same with one (a, b)
part per sentence as with n - 1 of them.  This is the "per sentence when
the edge features carry no observation" option of the design notes, and it
cuts the edge parts of a sentence from (n - 1) L^2 to at most L^2.

Which transitions have parts.  By default (``all_transitions=False``, as
CRFsuite's default) only transitions seen in the training data get a
feature and a part; an unseen transition keeps the score 0 (it is allowed,
with no weight).  That too is exact, not an approximation: a part with no
features and no loss has s = 0 and e = 0, so theta = 0 stays 0 under both
updates, and it contributes nothing to W or to the dual's entropy term; the
oracles fill in a 0 for it.  It is what makes the tagger fit in memory with
many labels: T is the number of seen tag bigrams (1,094 of 44^2 = 1,936 for
conll2000 POS, 8,053 of 472^2 for the full Brown tag set) instead of L^2.
``all_transitions=True`` gives every (a, b) a feature and a part.

A tag dictionary (a lattice).  With a dictionary of seen forms
(:meth:`ChainFeaturizer.with_dictionary`: a word seen at least N times in
training takes only the labels it had there, as MorphoDiTa's and the maxent
tagger's ``--dictionary N``) token t takes the labels
``allow_labels[allow_ptr[t]:allow_ptr[t + 1]]`` (every label for the other
words), and an example's parts are, in order: one node part per allowed
label of each token (token-major), one transition part per pair k of
``trans_pairs`` that some position can use (a allowed at t - 1 and b at t;
``pair_ids``), one start part per label of the first token and one stop
part per label of the last.  A labelling outside the lattice has no parts:
the model is the CRF over the lattice's labellings, in training and in
tagging.  Brown (183 tags): 8,781 parts a sentence without it, 599 with a
dictionary of the words seen 3 times or more; the oracles are
:func:`egnlp.tagger.chain_inference.lattice_marginals` and its twins.

Features
--------
Node features are the (observation predicate, label) pairs seen in the
training data (CRFsuite's default); predicates come from
:mod:`egnlp.features.predicates`.  They are not stored per part: each token keeps its
predicate ids (CSR ``pred_ptr`` / ``pred_ids``) and each predicate its seen
labels (CSR ``lab_ptr`` / ``lab_labels``), and the feature id of the pair at
entry m of ``lab_labels`` is m itself.  Then come T transition features,
L start features and L stop features, each the only feature of its part
(ids ``n_node + k`` for the k-th part after the node block).  One kernel,
:func:`_walk`, visits the (part, feature) entries token -> predicate ->
label; scores, scatters and sparse deltas are its three uses.

The structured problem over these parts (gold, loss, marginals, argmax) is
:class:`egnlp.tagger.tagging_problem.TaggingProblem`; decoding is in :mod:`egnlp.tagger.crf`.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from itertools import repeat
from typing import Any, NamedTuple, Sequence

import numpy as np
from numba import njit

from egnlp.features.csr import gather_nonzero
from egnlp.features.predicates import token_predicates

_PROBE = (["The", "U.S.", "Mr.", "McDonald's", "1,984", "well-known", "dogs", "ran", "."],
          ["DT", "NNP", "NNP", "NNP", "CD", "JJ", "NNS", "VBD", "."])


def predicates_fingerprint(use_pos: bool) -> str:
    """A short hash of the predicates of a fixed probe sentence.

    Saved with a model: if :mod:`egnlp.features.predicates` changes the predicates it
    emits, old models fail to load instead of decoding with shifted features.
    """
    preds = token_predicates(_PROBE[0], _PROBE[1], use_pos=use_pos)
    return hashlib.sha256("\n".join("\t".join(p) for p in preds).encode("utf-8")).hexdigest()[:16]


# ---------------------------------------------------------------------------
# Kernels over the token -> predicate -> (label, feature) arrays
# ---------------------------------------------------------------------------


class ChainArrays(NamedTuple):
    """What the kernels read of a corpus of chains (see the module docstring)."""

    part_ptr: np.ndarray  # (n_examples + 1,) int64: example e has the parts part_ptr[e]:part_ptr[e + 1]
    tok_ptr: np.ndarray  # (n_examples + 1,) int64: and the tokens tok_ptr[e]:tok_ptr[e + 1] (corpus-wide)
    pred_ptr: np.ndarray  # (n_tokens + 1,) int64: token t has the predicates pred_ids[pred_ptr[t]:pred_ptr[t + 1]]
    pred_ids: np.ndarray  # (n_token_predicates,) int32
    lab_ptr: np.ndarray  # (n_predicates + 1,) int64: predicate p has the labels lab_labels[lab_ptr[p]:lab_ptr[p + 1]]
    lab_labels: np.ndarray  # (n_node,) int32; entry m is the node feature m
    n_labels: int  # L
    fixed0: int  # feature id of the first part after a node block (= n_node)
    n_fixed: int  # parts after each node block, one feature each: T + 2L


# What _walk does at each (part r, feature m) entry of the parts lo:hi (see _visit).
_SCORE = 0
_SCATTER = 1
_SCATTER_RECORD = 2


@njit(cache=True, inline="always")
def _visit(mode, j, m, part_vec, feat_vec, touched, count):
    """One entry (part lo + j, feature m) of :func:`_walk`; returns the new ``count``.

    ``_SCORE``: part_vec[j] += feat_vec[m]; ``_SCATTER``: feat_vec[m] += part_vec[j];
    ``_SCATTER_RECORD``: the same and touched[count] = m, count + 1.
    """
    if mode == _SCORE:
        part_vec[j] += feat_vec[m]
    else:
        feat_vec[m] += part_vec[j]
        if mode == _SCATTER_RECORD:
            touched[count] = m
            count += 1
    return count


@njit(cache=True, inline="always")
def _walk(a, lo, hi, mode, part_vec, feat_vec, touched):
    """Visit the (part r, feature m) entries of the parts ``lo:hi`` of the corpus ``a``
    (a :class:`ChainArrays`) in a fixed order, applying ``mode`` to each (:func:`_visit`).

    Node part (t, y) of example e is ``part_ptr[e] + t L + y``: its entries are
    the m over the token's predicates with ``lab_labels[m] == y``.  The k-th
    part after the node block has the single feature ``fixed0 + k``.
    ``part_vec`` is (hi - lo,) and ``feat_vec`` (n_features,) float64;
    ``touched`` (int64) takes the feature ids in visiting order when recording.
    Returns the number of ids recorded.
    """
    n_ex = a.part_ptr.shape[0] - 1
    e0 = min(max(np.searchsorted(a.part_ptr, lo, side="right") - 1, 0), n_ex)
    e1 = max(min(np.searchsorted(a.part_ptr, hi, side="left"), n_ex), e0)
    L = a.n_labels
    count = 0
    for e in range(e0, e1):
        base = a.part_ptr[e]
        t0 = a.tok_ptr[e]
        for t in range(t0, a.tok_ptr[e + 1]):
            row = base + (t - t0) * L
            if row + L <= lo or row >= hi:
                continue
            for k in range(a.pred_ptr[t], a.pred_ptr[t + 1]):
                p = a.pred_ids[k]
                for m in range(a.lab_ptr[p], a.lab_ptr[p + 1]):
                    r = row + a.lab_labels[m]
                    if lo <= r < hi:
                        count = _visit(mode, r - lo, m, part_vec, feat_vec, touched, count)
        fixed = base + (a.tok_ptr[e + 1] - t0) * L
        for k in range(a.n_fixed):
            r = fixed + k
            if lo <= r < hi:
                count = _visit(mode, r - lo, a.fixed0 + k, part_vec, feat_vec, touched, count)
    return count


@njit(cache=True)
def _scores(a, lo, hi, w, out):
    """out[r - lo] = w . phi(r) for the parts r in lo:hi; out (hi - lo,) is zeroed first."""
    out[:] = 0.0
    _walk(a, lo, hi, _SCORE, out, w, np.empty(0, dtype=np.int64))


@njit(cache=True)
def _scatter(a, lo, hi, coef, target):
    """target += sum_r coef[r - lo] phi(r) over the parts r in lo:hi (coef (hi - lo,), target (n_features,))."""
    _walk(a, lo, hi, _SCATTER, coef, target, np.empty(0, dtype=np.int64))


@njit(cache=True)
def _delta(a, lo, hi, coef, buf, touched, w, ids, vals):
    """delta = sum_r coef[r - lo] phi(r) over the parts r in lo:hi, as a sparse vector.

    Scatters into ``buf`` (zero, (n_features,)) recording the feature ids it
    touches in ``touched`` (room for every entry of the parts), then moves
    the non-zeros among them to ``ids`` / ``vals`` (:func:`gather_nonzero`),
    so only touched features are read; ``buf`` is zero again on return.
    Returns (count, w . delta, ||delta||^2).
    """
    n = _walk(a, lo, hi, _SCATTER_RECORD, coef, buf, touched)
    return gather_nonzero(buf, touched[:n], w, ids, vals)


@njit(cache=True)
def _entry_counts(a):
    """Per example: the number of (part, feature) entries :func:`_walk` visits in its parts
    ((token, predicate, label) entries and the n_fixed parts after the node block), (n_examples,) int64."""
    n_ex = a.tok_ptr.shape[0] - 1
    out = np.zeros(n_ex, dtype=np.int64)
    for e in range(n_ex):
        c = a.n_fixed
        for t in range(a.tok_ptr[e], a.tok_ptr[e + 1]):
            for k in range(a.pred_ptr[t], a.pred_ptr[t + 1]):
                p = a.pred_ids[k]
                c += a.lab_ptr[p + 1] - a.lab_ptr[p]
        out[e] = c
    return out


# A lattice walk finds a token's allowed labels among a predicate's by bisection when the predicate has
# more than _NARROW times as many labels as the token may take (else it scans them).
_NARROW = 4


class LatticeArrays(NamedTuple):
    """What the kernels read of a corpus of chains with a lattice (see the module docstring)."""

    allow_ptr: np.ndarray  # (n_tokens + 1,) int64: token t takes the labels allow_labels[allow_ptr[t]:allow_ptr[t + 1]]
    allow_labels: np.ndarray  # (n_entries,) int32, sorted per token
    pair_ptr: np.ndarray  # (n_examples + 1,) int64: example e has the transition parts pair_ids[pair_ptr[e]:...]
    pair_ids: np.ndarray  # (n_sentence_pairs,) int32: indices into trans_pairs, increasing per example


@njit(cache=True, inline="always")
def _walk_lattice(a, la, lo, hi, mode, part_vec, feat_vec, touched, posmap):
    """:func:`_walk` over the parts of a lattice: token t's node parts are its allowed labels in order
    (a predicate's label that is not allowed there has no part), then the example's transition parts
    (``pair_ids``: feature ``fixed0 + k`` for the pair k), one start part per label of the first token
    (feature ``fixed0 + T + y``) and one stop part per label of the last (``fixed0 + T + L + y``).
    ``posmap`` (L,) int64 is -1 everywhere on entry and on return."""
    n_ex = a.part_ptr.shape[0] - 1
    e0 = min(max(np.searchsorted(a.part_ptr, lo, side="right") - 1, 0), n_ex)
    e1 = max(min(np.searchsorted(a.part_ptr, hi, side="left"), n_ex), e0)
    L = a.n_labels
    T = a.n_fixed - 2 * L
    count = 0
    for e in range(e0, e1):
        t0, t1 = a.tok_ptr[e], a.tok_ptr[e + 1]
        if t1 == t0:
            continue
        q0 = la.allow_ptr[t0]
        base = a.part_ptr[e]
        for t in range(t0, t1):
            row = base + la.allow_ptr[t] - q0
            width = la.allow_ptr[t + 1] - la.allow_ptr[t]
            if row + width <= lo or row >= hi:
                continue
            for j in range(width):
                posmap[la.allow_labels[la.allow_ptr[t] + j]] = j
            for k in range(a.pred_ptr[t], a.pred_ptr[t + 1]):
                p = a.pred_ids[k]
                m0, m1 = a.lab_ptr[p], a.lab_ptr[p + 1]
                if width * _NARROW < m1 - m0:
                    # a few allowed labels, a predicate seen with many: find each allowed label among the
                    # predicate's (sorted) by bisection; the same entries in the same order as the scan below
                    for j in range(width):
                        y = la.allow_labels[la.allow_ptr[t] + j]
                        b0, b1 = m0, m1
                        while b0 < b1:
                            mid = (b0 + b1) >> 1
                            if a.lab_labels[mid] < y:
                                b0 = mid + 1
                            else:
                                b1 = mid
                        if b0 < m1 and a.lab_labels[b0] == y:
                            r = row + j
                            if lo <= r < hi:
                                count = _visit(mode, r - lo, b0, part_vec, feat_vec, touched, count)
                    continue
                for m in range(m0, m1):
                    j = posmap[a.lab_labels[m]]
                    if j >= 0:
                        r = row + j
                        if lo <= r < hi:
                            count = _visit(mode, r - lo, m, part_vec, feat_vec, touched, count)
            for j in range(width):
                posmap[la.allow_labels[la.allow_ptr[t] + j]] = -1
        r = base + la.allow_ptr[t1] - q0
        for k in range(la.pair_ptr[e], la.pair_ptr[e + 1]):
            if lo <= r < hi:
                count = _visit(mode, r - lo, a.fixed0 + la.pair_ids[k], part_vec, feat_vec, touched, count)
            r += 1
        for q in range(la.allow_ptr[t0], la.allow_ptr[t0 + 1]):
            if lo <= r < hi:
                count = _visit(mode, r - lo, a.fixed0 + T + la.allow_labels[q], part_vec, feat_vec, touched, count)
            r += 1
        for q in range(la.allow_ptr[t1 - 1], la.allow_ptr[t1]):
            if lo <= r < hi:
                count = _visit(mode, r - lo, a.fixed0 + T + L + la.allow_labels[q], part_vec, feat_vec, touched,
                               count)
            r += 1
    return count


@njit(cache=True)
def _scores_lattice(a, la, lo, hi, w, out):
    """:func:`_scores` of a lattice's parts."""
    out[:] = 0.0
    _walk_lattice(a, la, lo, hi, _SCORE, out, w, np.empty(0, dtype=np.int64), np.full(a.n_labels, -1))


@njit(cache=True)
def _scatter_lattice(a, la, lo, hi, coef, target):
    """:func:`_scatter` of a lattice's parts."""
    _walk_lattice(a, la, lo, hi, _SCATTER, coef, target, np.empty(0, dtype=np.int64), np.full(a.n_labels, -1))


@njit(cache=True)
def _delta_lattice(a, la, lo, hi, coef, buf, touched, w, ids, vals):
    """:func:`_delta` of a lattice's parts."""
    n = _walk_lattice(a, la, lo, hi, _SCATTER_RECORD, coef, buf, touched, np.full(a.n_labels, -1))
    return gather_nonzero(buf, touched[:n], w, ids, vals)


@njit(cache=True)
def _sentence_pairs(tok_ptr, allow_ptr, allow_labels, pair_index, count_only, pair_ptr, pair_ids):
    """The transition parts of each example of a lattice: the pairs k (``pair_index[a, b]`` >= 0) with a
    allowed at some token t - 1 and b at t, increasing.  ``count_only``: pair_ptr[e + 1] = their number
    (pair_ids untouched); else pair_ids[pair_ptr[e]:pair_ptr[e + 1]] = them."""
    T = 0
    for a in range(pair_index.shape[0]):
        for b in range(pair_index.shape[1]):
            if pair_index[a, b] >= 0:
                T += 1
    seen = np.zeros(T, dtype=np.bool_)
    found = np.empty(T, dtype=np.int64)
    for e in range(tok_ptr.shape[0] - 1):
        c = 0
        for t in range(tok_ptr[e] + 1, tok_ptr[e + 1]):
            for r in range(allow_ptr[t - 1], allow_ptr[t]):
                for q in range(allow_ptr[t], allow_ptr[t + 1]):
                    k = pair_index[allow_labels[r], allow_labels[q]]
                    if k >= 0 and not seen[k]:
                        seen[k] = True
                        found[c] = k
                        c += 1
        kept = np.sort(found[:c])
        for j in range(c):
            seen[kept[j]] = False
        if count_only:
            pair_ptr[e + 1] = c
        else:
            for j in range(c):
                pair_ids[pair_ptr[e] + j] = kept[j]


# ---------------------------------------------------------------------------
# The part-feature container
# ---------------------------------------------------------------------------


@dataclass
class Encoded:
    """Sentences as predicate ids: the tokens of sentence s are ``tok_ptr[s]:tok_ptr[s + 1]``
    (corpus-wide token numbers), the predicate ids of token t ``pred_ids[pred_ptr[t]:pred_ptr[t + 1]]``."""

    tok_ptr: np.ndarray  # (n_sentences + 1,) int64
    pred_ptr: np.ndarray  # (n_tokens + 1,) int64
    pred_ids: np.ndarray  # (n_entries,) int32
    # with a tag dictionary: token t takes the labels allow_labels[allow_ptr[t]:allow_ptr[t + 1]]
    allow_ptr: np.ndarray | None = None  # (n_tokens + 1,) int64
    allow_labels: np.ndarray | None = None  # (n_allowed,) int32

    @property
    def n_sentences(self) -> int:
        return self.tok_ptr.shape[0] - 1

    def lengths(self) -> np.ndarray:
        return np.diff(self.tok_ptr)


@dataclass
class ChainFeatures:
    """Part features of a corpus of chains (see the module docstring); a
    :class:`egnlp.training.structured_problem.PartFeatureSet`.

    ``trans_pairs`` (T, 2) int64 are the (a, b) of the transition parts;
    ``lab_ptr`` / ``lab_labels`` the seen labels of each predicate (feature
    id = entry index); the T + 2L parts after each example's node block have
    the features ``n_node .. n_node + T + 2L - 1`` in order.
    """

    encoded: Encoded
    lab_ptr: np.ndarray  # (n_predicates + 1,) int64
    lab_labels: np.ndarray  # (n_node,) int32
    trans_pairs: np.ndarray  # (T, 2) int64
    n_labels: int
    part_ptr: np.ndarray = field(init=False)  # (n_examples + 1,) int64
    n_features: int = field(init=False)
    arrays: ChainArrays = field(init=False, repr=False, compare=False)  # what the kernels read
    _n_parts: int = field(init=False, repr=False, compare=False)
    _work: tuple | None = field(default=None, init=False, repr=False, compare=False)
    lattice: LatticeArrays | None = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        L = self.n_labels
        if self.lab_labels.size and (self.lab_labels.min() < 0 or self.lab_labels.max() >= L):
            raise ValueError(f"predicate labels must lie in 0..{L - 1}")
        if self.encoded.pred_ids.size and self.encoded.pred_ids.max() >= self.lab_ptr.shape[0] - 1:
            raise ValueError("a token refers to a predicate outside the predicate table")
        lengths = self.encoded.lengths()
        enc = self.encoded
        self.lattice = None
        if enc.allow_ptr is None:
            self.part_ptr = np.concatenate([[0], np.cumsum(lengths * L + self.n_fixed)]).astype(np.int64)
        else:
            self.lattice = self._lattice(enc, lengths)
        self.n_features = self.n_node + self.n_fixed
        self._n_parts = int(self.part_ptr[-1])
        self.arrays = ChainArrays(self.part_ptr, enc.tok_ptr, enc.pred_ptr, enc.pred_ids, self.lab_ptr,
                                  self.lab_labels, self.n_labels, self.n_node, self.n_fixed)

    def _lattice(self, enc: Encoded, lengths: np.ndarray) -> LatticeArrays:
        """The lattice's arrays (the transition parts of each example), and ``part_ptr``: an example has a
        node part per allowed label of each token, its transition parts, and a start and a stop part per
        allowed label of its first and last token."""
        L = self.n_labels
        ap = np.ascontiguousarray(enc.allow_ptr, dtype=np.int64)
        al = np.ascontiguousarray(enc.allow_labels, dtype=np.int32)
        if ap.shape != (enc.pred_ptr.shape[0],) or ap[0] != 0 or ap[-1] != al.shape[0] or (np.diff(ap) < 1).any():
            raise ValueError("the lattice needs at least one label per token (allow_ptr from 0 to len(allow_labels))")
        if al.size and (al.min() < 0 or al.max() >= L):
            raise ValueError(f"lattice labels must lie in 0..{L - 1}")
        # the walks bisect a predicate's labels and merge them with a token's: both increasing
        rising = np.diff(al.astype(np.int64)) > 0
        rising[ap[1:-1] - 1] = True
        fresh = np.diff(self.lab_labels.astype(np.int64)) > 0
        starts = self.lab_ptr[1:-1]
        fresh[starts[(starts > 0) & (starts < self.lab_labels.shape[0])] - 1] = True
        if not (rising.all() and fresh.all()):
            raise ValueError("a lattice needs each token's labels and each predicate's labels increasing")
        pair_index = np.full((L, L), -1, dtype=np.int64)
        pair_index[self.trans_pairs[:, 0], self.trans_pairs[:, 1]] = np.arange(self.n_transitions)
        pair_ptr = np.zeros(enc.n_sentences + 1, dtype=np.int64)
        _sentence_pairs(enc.tok_ptr, ap, al, pair_index, True, pair_ptr, np.zeros(0, dtype=np.int32))
        np.cumsum(pair_ptr, out=pair_ptr)
        pair_ids = np.empty(int(pair_ptr[-1]), dtype=np.int32)
        _sentence_pairs(enc.tok_ptr, ap, al, pair_index, False, pair_ptr, pair_ids)
        tp = enc.tok_ptr
        width = np.diff(ap)
        nonempty = lengths > 0
        first = np.zeros(enc.n_sentences, dtype=np.int64)
        last = np.zeros(enc.n_sentences, dtype=np.int64)
        first[nonempty] = width[tp[:-1][nonempty]]
        last[nonempty] = width[tp[1:][nonempty] - 1]
        sizes = ap[tp[1:]] - ap[tp[:-1]] + np.diff(pair_ptr) + first + last
        self.part_ptr = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        return LatticeArrays(ap, al, pair_ptr, pair_ids)

    @property
    def n_node(self) -> int:
        """Number of node (predicate, label) features; the first feature id of the transitions."""
        return int(self.lab_labels.shape[0])

    @property
    def n_transitions(self) -> int:
        return int(self.trans_pairs.shape[0])

    @property
    def n_fixed(self) -> int:
        """Parts after each example's node block: T transitions, L start, L stop."""
        return self.n_transitions + 2 * self.n_labels

    @property
    def n_examples(self) -> int:
        return self.encoded.n_sentences

    @property
    def n_parts(self) -> int:
        return self._n_parts

    def parts(self, i: int) -> tuple[int, int]:
        """The corpus-wide part range ``(lo, hi)`` of example ``i``."""
        return int(self.part_ptr[i]), int(self.part_ptr[i + 1])

    @property
    def nbytes(self) -> int:
        enc = self.encoded
        return (enc.tok_ptr.nbytes + enc.pred_ptr.nbytes + enc.pred_ids.nbytes + self.lab_ptr.nbytes
                + self.lab_labels.nbytes + self.trans_pairs.nbytes + self.part_ptr.nbytes)

    def _check_range(self, lo: int, hi: int) -> None:
        if not 0 <= lo <= hi <= self._n_parts:
            raise ValueError(f"part range {lo}:{hi} is outside 0:{self._n_parts}")

    def _check_w(self, w: np.ndarray, name: str = "w") -> None:
        if w.shape != (self.n_features,):
            raise ValueError(f"{name} has shape {w.shape}, expected ({self.n_features},)")

    def scores(self, lo: int, hi: int, w: np.ndarray) -> np.ndarray:
        """``w . phi(r)`` for the parts ``lo:hi``, shape (hi - lo,)."""
        self._check_w(w)
        self._check_range(lo, hi)
        out = np.empty(hi - lo)
        if self.lattice is None:
            _scores(self.arrays, lo, hi, w, out)
        else:
            _scores_lattice(self.arrays, self.lattice, lo, hi, w, out)
        return out

    def scatter(self, lo: int, hi: int, coef: np.ndarray, target: np.ndarray) -> None:
        """``target += sum_r coef[r - lo] phi(r)`` over the parts ``lo:hi``."""
        self._check_w(target, "target")
        if coef.shape != (hi - lo,):
            raise ValueError(f"coef has shape {coef.shape}, expected ({hi - lo},)")
        self._check_range(lo, hi)
        coef = np.ascontiguousarray(coef, dtype=np.float64)
        if self.lattice is None:
            _scatter(self.arrays, lo, hi, coef, target)
        else:
            _scatter_lattice(self.arrays, self.lattice, lo, hi, coef, target)

    def sparse_delta(self, lo: int, hi: int, coef: np.ndarray, w: np.ndarray):
        """delta = sum_r coef[r - lo] phi(r) over the parts ``lo:hi`` as a sparse vector.

        Returns ``(ids, vals, w . delta, ||delta||^2)``; ``ids`` and ``vals``
        are views into scratch buffers, valid until the next call.
        """
        self._check_w(w)
        if coef.shape != (hi - lo,):
            raise ValueError(f"coef has shape {coef.shape}, expected ({hi - lo},)")
        self._check_range(lo, hi)
        if self._work is None:
            entries = _entry_counts(self.arrays)
            entry_ptr = np.concatenate([[0], np.cumsum(entries)])
            longest = int(np.max(entries, initial=0))
            size = min(self.n_features, longest)
            self._work = (np.zeros(self.n_features), np.empty(longest, dtype=np.int64),
                          np.empty(size, dtype=np.int64), np.empty(size), entry_ptr)
        buf, touched, ids, vals, entry_ptr = self._work
        # The examples e0..e1-1 that lo:hi touches; more than one: room for all their entries and every feature.
        e0, e1 = self.part_ptr.searchsorted(lo, side="right") - 1, self.part_ptr.searchsorted(hi, side="left")
        if e1 - e0 > 1:
            touched = np.empty(entry_ptr[e1] - entry_ptr[e0], dtype=np.int64)
            ids, vals = np.empty(self.n_features, dtype=np.int64), np.empty(self.n_features)
        coef = np.ascontiguousarray(coef, dtype=np.float64)
        if self.lattice is None:
            count, dot, sq = _delta(self.arrays, lo, hi, coef, buf, touched, w, ids, vals)
        else:  # the dense layout's entry counts bound the lattice's
            count, dot, sq = _delta_lattice(self.arrays, self.lattice, lo, hi, coef, buf, touched, w, ids, vals)
        return ids[:count], vals[:count], dot, sq

    # -- the chain view of one example --------------------------------------

    def length(self, i: int) -> int:
        return int(self.encoded.tok_ptr[i + 1] - self.encoded.tok_ptr[i])

    def lattice_of(self, i: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Example i's lattice: ``(aptr (n + 1,), alab, pairs (P, 2))``, token t taking the labels
        ``alab[aptr[t]:aptr[t + 1]]`` and the transition parts the pairs ``pairs`` (the layout of
        :func:`egnlp.tagger.chain_inference.lattice_marginals`)."""
        la = self.lattice
        if la is None:
            raise ValueError("these features have no lattice (no tag dictionary)")
        t0, t1 = int(self.encoded.tok_ptr[i]), int(self.encoded.tok_ptr[i + 1])
        q0, q1 = int(la.allow_ptr[t0]), int(la.allow_ptr[t1])
        pairs = self.trans_pairs[la.pair_ids[la.pair_ptr[i]:la.pair_ptr[i + 1]]]
        return la.allow_ptr[t0:t1 + 1] - q0, la.allow_labels[q0:q1], pairs

    def labelling_parts(self, i: int, path: np.ndarray) -> np.ndarray:
        """The part-count vector (float64) of the labelling ``path`` (n,) of example i.

        Raises:
            ValueError: a label the lattice does not allow at its token.
        """
        path = np.asarray(path, dtype=np.int64)
        L, n = self.n_labels, len(path)
        if self.lattice is None:
            node = np.zeros((n, L))
            node[np.arange(n), path] = 1.0
            edge = np.zeros((L, L))
            np.add.at(edge, (path[:-1], path[1:]), 1.0)
            return self.pack(node, edge, node[0], node[-1])
        aptr, alab, pairs = self.lattice_of(i)
        lo, hi = self.parts(i)
        out = np.zeros(hi - lo)
        at = np.empty(n, dtype=np.int64)
        for t in range(n):
            hit = np.flatnonzero(alab[aptr[t]:aptr[t + 1]] == path[t])
            if hit.size == 0:
                raise ValueError(f"example {i}: label {path[t]} at token {t} is not in the lattice")
            at[t] = aptr[t] + hit[0]
        out[at] = 1.0
        Q, P = alab.shape[0], pairs.shape[0]
        if n > 1 and P:
            keys = pairs[:, 0] * L + pairs[:, 1]  # increasing: the pairs are sorted
            want = path[:-1] * L + path[1:]
            k = np.searchsorted(keys, want)
            listed = (k < P) & (keys[np.minimum(k, P - 1)] == want)
            np.add.at(out, Q + k[listed], 1.0)
        out[Q + P + at[0]] = 1.0
        out[Q + P + aptr[1] + at[-1] - aptr[n - 1]] = 1.0
        return out

    def unpack(self, i: int, theta: np.ndarray):
        """Split a per-part vector of example i into chain scores (emissions, transitions, start, stop).

        Transitions without a part get 0 (see the module docstring).  Features with a lattice have
        another layout (:meth:`lattice_of`).
        """
        if self.lattice is not None:
            raise ValueError("these features have a lattice: see lattice_of")
        n, L, T = self.length(i), self.n_labels, self.n_transitions
        if theta.shape != (n * L + T + 2 * L,):
            raise ValueError(f"example {i} has {n * L + T + 2 * L} parts, theta has shape {theta.shape}")
        em = theta[:n * L].reshape(n, L)
        tr = np.zeros((L, L))
        tr[self.trans_pairs[:, 0], self.trans_pairs[:, 1]] = theta[n * L:n * L + T]
        start = theta[n * L + T:n * L + T + L]
        stop = theta[n * L + T + L:]
        return em, tr, start, stop

    def pack(self, node: np.ndarray, edge: np.ndarray, first: np.ndarray, last: np.ndarray) -> np.ndarray:
        """The per-part vector of node (n, L), edge (L, L), start (L,) and stop (L,) values."""
        return np.concatenate([node.reshape(-1), edge[self.trans_pairs[:, 0], self.trans_pairs[:, 1]], first, last])

    def chain_scores(self, i: int, w: np.ndarray):
        """(emissions, transitions, start, stop) of example i under weights w."""
        lo, hi = self.parts(i)
        return self.unpack(i, self.scores(lo, hi, w))


# ---------------------------------------------------------------------------
# The featurizer: predicates -> ids, fitted on training data
# ---------------------------------------------------------------------------


def form_dictionary(tokens_list: Sequence[Sequence[str]], labels_list: Sequence[Sequence[str]],
                    labels: Sequence[str], min_count: int) -> tuple[list[str], np.ndarray, np.ndarray]:
    """The dictionary of seen forms (as MorphoDiTa's and UDPipe 1's taggers keep one, Straka et al. 2016):
    every form seen at least ``min_count`` times in the labelled sentences, with the ids (in ``labels``)
    of the labels it had, sorted. Returns (forms, ptr (F+1,), label ids)."""
    if min_count < 1:
        raise ValueError(f"min_count must be >= 1, not {min_count}")
    index = {y: k for k, y in enumerate(labels)}
    seen: dict[str, set[int]] = {}
    count: dict[str, int] = {}
    for toks, tags in zip(tokens_list, labels_list):
        for form, tag in zip(toks, tags):
            seen.setdefault(form, set()).add(index[tag])
            count[form] = count.get(form, 0) + 1
    forms = sorted(form for form, n in count.items() if n >= min_count)
    ptr = np.zeros(len(forms) + 1, dtype=np.int64)
    np.cumsum([len(seen[form]) for form in forms], out=ptr[1:])
    ids = np.array([k for form in forms for k in sorted(seen[form])], dtype=np.int64)
    return forms, ptr, ids


@njit(cache=True)
def _fill_lattice(which, ptr, ids, allow_ptr, L, allow):
    """allow[allow_ptr[t]:allow_ptr[t + 1]] = the labels of dictionary form which[t], or 0..L-1 when -1."""
    for t in range(which.shape[0]):
        q = allow_ptr[t]
        k = which[t]
        if k < 0:
            for y in range(L):
                allow[q + y] = y
        else:
            for j in range(ptr[k + 1] - ptr[k]):
                allow[q + j] = ids[ptr[k] + j]


def sentence_predicates(tokens_list, pos_list, use_pos: bool):
    """The predicate strings of every token of every sentence (a list of lists per sentence)."""
    if use_pos and pos_list is None:
        raise ValueError("this tagger reads POS tags (use_pos): give one POS tag per token")
    if pos_list is not None and len(pos_list) != len(tokens_list):
        raise ValueError(f"{len(pos_list)} POS sequences for {len(tokens_list)} sentences")
    for s, tokens in enumerate(tokens_list):
        pos = pos_list[s] if pos_list is not None else None
        if pos is not None and len(pos) != len(tokens):
            raise ValueError(f"sentence {s}: {len(pos)} POS tags for {len(tokens)} tokens")
        yield token_predicates(list(tokens), list(pos) if pos is not None and use_pos else None, use_pos=use_pos)


class ChainFeaturizer:
    """The feature space of a CRF tagger: predicate strings, labels, seen
    (predicate, label) pairs and the transitions that have parts.

    Build one with :meth:`fit`; :meth:`encode` maps new sentences to
    predicate ids (unknown predicates are skipped), :meth:`features`
    compiles them into a :class:`ChainFeatures` and :meth:`label_ids` maps
    label strings to ids.
    """

    def __init__(self, labels: Sequence[str], predicates: Sequence[str], lab_ptr: np.ndarray,
                 lab_labels: np.ndarray, trans_pairs: np.ndarray, *, use_pos: bool = False,
                 all_transitions: bool = False, dictionary: tuple[Sequence[str], np.ndarray, np.ndarray] | None = None,
                 min_count: int = 0):
        self.labels = list(labels)
        self.label_index = {lab: k for k, lab in enumerate(self.labels)}
        if len(self.label_index) != len(self.labels):
            raise ValueError("labels must be distinct")
        self.predicates = list(predicates)
        self.pred_index = dict(zip(self.predicates, range(len(self.predicates))))
        if len(self.pred_index) != len(self.predicates):
            raise ValueError("predicates must be distinct")
        self.lab_ptr = np.ascontiguousarray(lab_ptr, dtype=np.int64)
        self.lab_labels = np.ascontiguousarray(lab_labels, dtype=np.int32)
        self.trans_pairs = np.ascontiguousarray(trans_pairs, dtype=np.int64).reshape(-1, 2)
        L = len(self.labels)
        if self.lab_ptr.shape != (len(self.predicates) + 1,) or self.lab_ptr[0] != 0 \
                or self.lab_ptr[-1] != self.lab_labels.shape[0] or (np.diff(self.lab_ptr) < 0).any():
            raise ValueError("lab_ptr does not match the predicates and their labels")
        if self.lab_labels.size and (self.lab_labels.min() < 0 or self.lab_labels.max() >= L):
            raise ValueError(f"predicate labels must lie in 0..{L - 1}")
        if self.trans_pairs.size and (self.trans_pairs.min() < 0 or self.trans_pairs.max() >= L):
            raise ValueError(f"transition labels must lie in 0..{L - 1}")
        self.use_pos = bool(use_pos)
        self.all_transitions = bool(all_transitions)
        self.dictionary: tuple[list[str], np.ndarray, np.ndarray] | None = None
        self.min_count = 0
        self._form_index: dict[str, int] = {}
        if dictionary is not None:
            forms = [str(f) for f in dictionary[0]]
            ptr = np.ascontiguousarray(dictionary[1], dtype=np.int64)
            ids = np.ascontiguousarray(dictionary[2], dtype=np.int64)
            if ptr.shape != (len(forms) + 1,) or ptr[0] != 0 or ptr[-1] != ids.shape[0] or (np.diff(ptr) < 1).any():
                raise ValueError("inconsistent tag dictionary (each form needs one or more labels)")
            if ids.size and (ids.min() < 0 or ids.max() >= L):
                raise ValueError(f"dictionary labels must lie in 0..{L - 1}")
            self._form_index = {form: k for k, form in enumerate(forms)}
            if len(self._form_index) != len(forms):
                raise ValueError("repeated dictionary forms")
            if not (isinstance(min_count, int) and min_count >= 1):
                raise ValueError(f"a dictionary's least count must be >= 1, not {min_count!r}")
            self.dictionary, self.min_count = (forms, ptr, ids), min_count

    def with_dictionary(self, tokens_list: Sequence[Sequence[str]], labels_list: Sequence[Sequence[str]],
                        min_count: int) -> "ChainFeaturizer":
        """This feature space with a tag dictionary (:func:`form_dictionary`) of the labelled sentences:
        a form seen at least ``min_count`` times takes only the labels it had there (a lattice per
        sentence, see :class:`ChainFeatures`); 0: none."""
        if min_count == 0:
            dictionary = None
        else:
            dictionary = form_dictionary(tokens_list, labels_list, self.labels, min_count)
        return ChainFeaturizer(self.labels, self.predicates, self.lab_ptr, self.lab_labels, self.trans_pairs,
                               use_pos=self.use_pos, all_transitions=self.all_transitions, dictionary=dictionary,
                               min_count=min_count)

    def lattice(self, tokens_list: Sequence[Sequence[str]]) -> tuple[np.ndarray, np.ndarray]:
        """``(allow_ptr, allow_labels)`` of every token: a dictionary form's labels, else every label."""
        L = self.n_labels
        forms, ptr, ids = self.dictionary  # type: ignore[misc]
        get = self._form_index.get
        which = np.fromiter((get(w, -1) for toks in tokens_list for w in toks), dtype=np.int64)
        known = which >= 0
        width = np.full(which.shape[0], L, dtype=np.int64)
        width[known] = ptr[which[known] + 1] - ptr[which[known]]
        allow_ptr = np.zeros(which.shape[0] + 1, dtype=np.int64)
        np.cumsum(width, out=allow_ptr[1:])
        allow = np.empty(int(allow_ptr[-1]), dtype=np.int32)
        _fill_lattice(which, ptr, ids, allow_ptr, L, allow)
        return allow_ptr, allow

    @property
    def n_labels(self) -> int:
        return len(self.labels)

    @property
    def n_features(self) -> int:
        return int(self.lab_labels.shape[0] + self.trans_pairs.shape[0] + 2 * self.n_labels)

    @classmethod
    def fit(cls, tokens_list: Sequence[Sequence[str]], labels_list: Sequence[Sequence[str]],
            pos_list: Sequence[Sequence[str]] | None = None, *, all_transitions: bool = False) -> "ChainFeaturizer":
        """The feature space of the training data: ``use_pos`` when ``pos_list`` is given.

        Labels are sorted; predicates are numbered in order of first
        occurrence; the node features are the (predicate, label) pairs that
        occur in the data, grouped by predicate and sorted by label.
        """
        if len(labels_list) != len(tokens_list) or (pos_list is not None and len(pos_list) != len(tokens_list)):
            raise ValueError("tokens, labels (and POS) need one entry per sentence")
        labels = sorted({lab for seq in labels_list for lab in seq})
        if not labels:
            raise ValueError("no labelled tokens to fit on")
        label_index = {lab: k for k, lab in enumerate(labels)}
        L = len(labels)
        pred_index: dict[str, int] = {}
        pair_keys = []
        bigrams = set()
        for s, preds in enumerate(sentence_predicates(tokens_list, pos_list, pos_list is not None)):
            y = labels_list[s]
            if len(y) != len(preds):
                raise ValueError(f"sentence {s}: {len(y)} labels for {len(preds)} tokens")
            ids = [label_index[lab] for lab in y]
            bigrams.update(zip(ids, ids[1:]))
            keys = []
            for token_preds, lab in zip(preds, ids):
                keys.extend(pred_index.setdefault(p, len(pred_index)) * L + lab for p in token_preds)
            pair_keys.append(np.asarray(keys, dtype=np.int64))
        keys = np.unique(np.concatenate(pair_keys)) if pair_keys else np.zeros(0, dtype=np.int64)
        lab_ptr = np.zeros(len(pred_index) + 1, dtype=np.int64)
        np.cumsum(np.bincount(keys // L, minlength=len(pred_index)), out=lab_ptr[1:])
        if all_transitions:
            pairs = np.array([(a, b) for a in range(L) for b in range(L)], dtype=np.int64)
        else:
            pairs = np.array(sorted(bigrams), dtype=np.int64).reshape(-1, 2)
        return cls(labels, list(pred_index), lab_ptr, keys % L, pairs, use_pos=pos_list is not None,
                   all_transitions=all_transitions)

    def encode(self, tokens_list: Sequence[Sequence[str]], pos_list: Sequence[Sequence[str]] | None = None) -> Encoded:
        """Predicate ids of every token (unknown predicates skipped)."""
        lengths = [len(t) for t in tokens_list]
        tok_ptr = np.zeros(len(lengths) + 1, dtype=np.int64)
        np.cumsum(lengths, out=tok_ptr[1:])
        # every predicate's id, -1 for those the model does not know, then the known ones kept in order;
        # streamed into the array without a Python list of them (Brown: 17 M ids, 134 MB more at the peak,
        # and memory the C heap then keeps)
        sizes: list[int] = []
        get = self.pred_index.get

        def all_predicate_ids():
            for preds in sentence_predicates(tokens_list, pos_list, self.use_pos):
                for token_preds in preds:
                    sizes.append(len(token_preds))
                    yield from map(get, token_preds, repeat(-1))

        all_ids = np.fromiter(all_predicate_ids(), dtype=np.int64)
        known = all_ids >= 0
        counts = np.zeros(len(sizes), dtype=np.int64)
        if sizes:  # every token has predicates (its bias at least), so the starts increase
            starts = np.zeros(len(sizes), dtype=np.int64)
            np.cumsum(sizes[:-1], out=starts[1:])
            counts = np.add.reduceat(known.astype(np.int64), starts)
        pred_ptr = np.zeros(counts.shape[0] + 1, dtype=np.int64)
        np.cumsum(counts, out=pred_ptr[1:])
        if self.dictionary is None:
            return Encoded(tok_ptr, pred_ptr, all_ids[known].astype(np.int32))
        return Encoded(tok_ptr, pred_ptr, all_ids[known].astype(np.int32), *self.lattice(tokens_list))

    def features(self, encoded: Encoded) -> ChainFeatures:
        return ChainFeatures(encoded, self.lab_ptr, self.lab_labels, self.trans_pairs, self.n_labels)

    def label_ids(self, labels_list: Sequence[Sequence[str]]) -> list[np.ndarray]:
        out = []
        for s, seq in enumerate(labels_list):
            try:
                out.append(np.array([self.label_index[lab] for lab in seq], dtype=np.int64))
            except KeyError as exc:
                raise ValueError(f"sentence {s}: unknown label {exc.args[0]!r}") from None
        return out

    def config(self) -> dict[str, Any]:
        return {"use_pos": self.use_pos, "all_transitions": self.all_transitions,
                "predicates": predicates_fingerprint(self.use_pos), "dictionary": self.min_count}
