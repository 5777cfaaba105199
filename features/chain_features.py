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

    def __post_init__(self) -> None:
        L = self.n_labels
        if self.lab_labels.size and (self.lab_labels.min() < 0 or self.lab_labels.max() >= L):
            raise ValueError(f"predicate labels must lie in 0..{L - 1}")
        if self.encoded.pred_ids.size and self.encoded.pred_ids.max() >= self.lab_ptr.shape[0] - 1:
            raise ValueError("a token refers to a predicate outside the predicate table")
        lengths = self.encoded.lengths()
        self.part_ptr = np.concatenate([[0], np.cumsum(lengths * L + self.n_fixed)]).astype(np.int64)
        self.n_features = self.n_node + self.n_fixed
        self._n_parts = int(self.part_ptr[-1])
        enc = self.encoded
        self.arrays = ChainArrays(self.part_ptr, enc.tok_ptr, enc.pred_ptr, enc.pred_ids, self.lab_ptr,
                                  self.lab_labels, self.n_labels, self.n_node, self.n_fixed)

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
        _scores(self.arrays, lo, hi, w, out)
        return out

    def scatter(self, lo: int, hi: int, coef: np.ndarray, target: np.ndarray) -> None:
        """``target += sum_r coef[r - lo] phi(r)`` over the parts ``lo:hi``."""
        self._check_w(target, "target")
        if coef.shape != (hi - lo,):
            raise ValueError(f"coef has shape {coef.shape}, expected ({hi - lo},)")
        self._check_range(lo, hi)
        _scatter(self.arrays, lo, hi, np.ascontiguousarray(coef, dtype=np.float64), target)

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
        count, dot, sq = _delta(self.arrays, lo, hi, np.ascontiguousarray(coef, dtype=np.float64), buf, touched,
                                w, ids, vals)
        return ids[:count], vals[:count], dot, sq

    # -- the chain view of one example --------------------------------------

    def length(self, i: int) -> int:
        return int(self.encoded.tok_ptr[i + 1] - self.encoded.tok_ptr[i])

    def unpack(self, i: int, theta: np.ndarray):
        """Split a per-part vector of example i into chain scores (emissions, transitions, start, stop).

        Transitions without a part get 0 (see the module docstring).
        """
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
                 all_transitions: bool = False):
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
        return Encoded(tok_ptr, pred_ptr, all_ids[known].astype(np.int32))

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
                "predicates": predicates_fingerprint(self.use_pos)}
