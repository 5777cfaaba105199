"""The linear-chain CRF tagger as a structured problem (see training/problem.py).

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
(ids ``n_node + k`` for the k-th part after the node block).  Kernels walk
token -> predicate -> label to score, scatter and collect sparse deltas.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np
from numba import njit

from egnlp.tagger.chain import forward_backward, log_partition, viterbi
from egnlp.features.predicates import token_predicates
from egnlp.corpora.files import pack_strings, unpack_strings

KIND = "crf"
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


@njit(cache=True)
def _scores(part_ptr, tok_ptr, pred_ptr, pred_ids, lab_ptr, lab_labels, n_labels, fixed0, n_fixed,
            e0, e1, lo, hi, w, out):
    """out[r - lo] = w . phi(r) for the parts r in lo:hi of examples e0..e1-1; out is zeroed first.

    Node part (t, y) of example e is part_ptr[e] + t L + y: the sum of
    w[m] over the entries m of the token's predicates with lab_labels[m] == y.
    The k-th part after the node block has the single feature fixed0 + k.
    """
    for j in range(hi - lo):
        out[j] = 0.0
    for e in range(e0, e1):
        base = part_ptr[e]
        t0 = tok_ptr[e]
        for t in range(t0, tok_ptr[e + 1]):
            row = base + (t - t0) * n_labels
            if row + n_labels <= lo or row >= hi:
                continue
            for k in range(pred_ptr[t], pred_ptr[t + 1]):
                p = pred_ids[k]
                for m in range(lab_ptr[p], lab_ptr[p + 1]):
                    r = row + lab_labels[m]
                    if lo <= r < hi:
                        out[r - lo] += w[m]
        fb = base + (tok_ptr[e + 1] - t0) * n_labels
        for k in range(n_fixed):
            r = fb + k
            if lo <= r < hi:
                out[r - lo] = w[fixed0 + k]


@njit(cache=True)
def _scatter(part_ptr, tok_ptr, pred_ptr, pred_ids, lab_ptr, lab_labels, n_labels, fixed0, n_fixed,
             e0, e1, lo, hi, coef, target):
    """target += sum_r coef[r - lo] phi(r) over the parts r in lo:hi of examples e0..e1-1."""
    for e in range(e0, e1):
        base = part_ptr[e]
        t0 = tok_ptr[e]
        for t in range(t0, tok_ptr[e + 1]):
            row = base + (t - t0) * n_labels
            if row + n_labels <= lo or row >= hi:
                continue
            for k in range(pred_ptr[t], pred_ptr[t + 1]):
                p = pred_ids[k]
                for m in range(lab_ptr[p], lab_ptr[p + 1]):
                    r = row + lab_labels[m]
                    if lo <= r < hi:
                        target[m] += coef[r - lo]
        fb = base + (tok_ptr[e + 1] - t0) * n_labels
        for k in range(n_fixed):
            r = fb + k
            if lo <= r < hi:
                target[fixed0 + k] += coef[r - lo]


@njit(cache=True)
def _collect(part_ptr, tok_ptr, pred_ptr, pred_ids, lab_ptr, lab_labels, n_labels, fixed0, n_fixed,
             e0, e1, lo, hi, buf, w, ids, vals):
    """Move the non-zeros of ``buf`` (a dense delta filled by ``_scatter``) to ids / vals.

    Walks the same entries as ``_scatter`` so only touched features are
    read; ``buf`` is zero again on return.  Returns (count, w . delta, ||delta||^2).
    """
    count = 0
    dot = 0.0
    sq = 0.0
    for e in range(e0, e1):
        base = part_ptr[e]
        t0 = tok_ptr[e]
        for t in range(t0, tok_ptr[e + 1]):
            row = base + (t - t0) * n_labels
            if row + n_labels <= lo or row >= hi:
                continue
            for k in range(pred_ptr[t], pred_ptr[t + 1]):
                p = pred_ids[k]
                for m in range(lab_ptr[p], lab_ptr[p + 1]):
                    v = buf[m]
                    if v != 0.0:
                        ids[count] = m
                        vals[count] = v
                        count += 1
                        dot += w[m] * v
                        sq += v * v
                        buf[m] = 0.0
        for k in range(n_fixed):
            j = fixed0 + k
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
def _entry_counts(tok_ptr, pred_ptr, pred_ids, lab_ptr):
    """Per example: the number of (token, predicate, label) entries its node parts read."""
    n_ex = tok_ptr.shape[0] - 1
    out = np.zeros(n_ex, dtype=np.int64)
    for e in range(n_ex):
        c = 0
        for t in range(tok_ptr[e], tok_ptr[e + 1]):
            for k in range(pred_ptr[t], pred_ptr[t + 1]):
                p = pred_ids[k]
                c += lab_ptr[p + 1] - lab_ptr[p]
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
    :class:`egnlp.training.problem.PartFeatureSet`.

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
    part_ptr: np.ndarray = field(init=False)
    n_features: int = field(init=False)
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
        return int(self.part_ptr[-1])

    def parts(self, i: int) -> tuple[int, int]:
        """The corpus-wide part range ``(lo, hi)`` of example ``i``."""
        return int(self.part_ptr[i]), int(self.part_ptr[i + 1])

    @property
    def nbytes(self) -> int:
        enc = self.encoded
        return (enc.tok_ptr.nbytes + enc.pred_ptr.nbytes + enc.pred_ids.nbytes + self.lab_ptr.nbytes
                + self.lab_labels.nbytes + self.trans_pairs.nbytes + self.part_ptr.nbytes)

    def _args(self, lo: int, hi: int):
        if not 0 <= lo <= hi <= self.n_parts:
            raise ValueError(f"part range {lo}:{hi} is outside 0:{self.n_parts}")
        e0 = int(np.searchsorted(self.part_ptr, lo, side="right")) - 1
        e1 = int(np.searchsorted(self.part_ptr, hi, side="left"))
        e0 = min(max(e0, 0), self.n_examples)
        e1 = max(min(e1, self.n_examples), e0)
        enc = self.encoded
        return (self.part_ptr, enc.tok_ptr, enc.pred_ptr, enc.pred_ids, self.lab_ptr, self.lab_labels,
                self.n_labels, self.n_node, self.n_fixed, e0, e1, lo, hi)

    def _check_w(self, w: np.ndarray, name: str = "w") -> None:
        if w.shape != (self.n_features,):
            raise ValueError(f"{name} has shape {w.shape}, expected ({self.n_features},)")

    def scores(self, lo: int, hi: int, w: np.ndarray) -> np.ndarray:
        """``w . phi(r)`` for the parts ``lo:hi``, shape (hi - lo,)."""
        self._check_w(w)
        out = np.empty(hi - lo)
        _scores(*self._args(lo, hi), w, out)
        return out

    def scatter(self, lo: int, hi: int, coef: np.ndarray, target: np.ndarray) -> None:
        """``target += sum_r coef[r - lo] phi(r)`` over the parts ``lo:hi``."""
        self._check_w(target, "target")
        if coef.shape != (hi - lo,):
            raise ValueError(f"coef has shape {coef.shape}, expected ({hi - lo},)")
        _scatter(*self._args(lo, hi), np.ascontiguousarray(coef, dtype=np.float64), target)

    def sparse_delta(self, lo: int, hi: int, coef: np.ndarray, w: np.ndarray):
        """delta = sum_r coef[r - lo] phi(r) over the parts ``lo:hi`` as a sparse vector.

        Returns ``(ids, vals, w . delta, ||delta||^2)``; ``ids`` and ``vals``
        are views into scratch buffers, valid until the next call.
        """
        self._check_w(w)
        if coef.shape != (hi - lo,):
            raise ValueError(f"coef has shape {coef.shape}, expected ({hi - lo},)")
        args = self._args(lo, hi)
        if self._work is None:
            enc = self.encoded
            longest = int(np.max(_entry_counts(enc.tok_ptr, enc.pred_ptr, enc.pred_ids, self.lab_ptr), initial=0))
            size = min(self.n_features, longest + self.n_fixed)
            self._work = (np.zeros(self.n_features), np.empty(size, dtype=np.int64), np.empty(size))
        buf, ids, vals = self._work
        if args[10] - args[9] > 1:  # more than one example: room for every feature
            ids, vals = np.empty(self.n_features, dtype=np.int64), np.empty(self.n_features)
        _scatter(*args, np.ascontiguousarray(coef, dtype=np.float64), buf)
        count, dot, sq = _collect(*args, buf, w, ids, vals)
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
# The structured problem
# ---------------------------------------------------------------------------


class TaggingProblem:
    """Linear-chain CRF tagging of a corpus compiled into ``egnlp.features`` (a :class:`ChainFeatures`).

    ``gold_labels``: one int array of label ids per sentence.  Gold is the
    part-count vector of the gold sequence (transition parts count the
    transitions); loss is Hamming: 1 - gold on node parts, 0 on the others.
    Both are stored as unsigned integers (uint16 counts, uint8 loss), exact
    and a quarter or an eighth of float64: with the 183 tags of Brown's training split a sentence
    has 183 parts per token plus its 4,761 transition parts: 363 M parts in all.
    """

    def __init__(self, features: ChainFeatures, gold_labels: Sequence[Sequence[int]]):
        if len(gold_labels) != features.n_examples:
            raise ValueError(f"{len(gold_labels)} gold sequences for {features.n_examples} sentences")
        L = features.n_labels
        self.features = features
        longest = max((features.length(i) for i in range(features.n_examples)), default=0)
        self.gold = np.zeros(features.n_parts, dtype=np.uint16 if longest < 2 ** 16 else np.uint32)
        self.loss = np.zeros(features.n_parts, dtype=np.uint8)
        part_of = np.full((L, L), -1, dtype=np.int64)
        part_of[features.trans_pairs[:, 0], features.trans_pairs[:, 1]] = np.arange(features.n_transitions)
        for i, labels in enumerate(gold_labels):
            y = np.asarray(labels, dtype=np.int64)
            n = features.length(i)
            if n == 0:
                raise ValueError(f"sentence {i} is empty")
            if y.shape != (n,):
                raise ValueError(f"sentence {i}: {y.shape[0] if y.ndim == 1 else y.shape} labels for {n} tokens")
            if n and (y.min() < 0 or y.max() >= L):
                raise ValueError(f"sentence {i}: label ids must lie in 0..{L - 1}")
            lo, hi = features.parts(i)
            node = np.zeros((n, L), dtype=np.uint8)
            node[np.arange(n), y] = 1.0
            ks = part_of[y[:-1], y[1:]]
            if (ks < 0).any():
                t = int(np.argmax(ks < 0)) + 1
                raise ValueError(f"sentence {i}: gold transition {y[t - 1]} -> {y[t]} has no part "
                                 "(not seen when the features were fitted)")
            g = self.gold[lo:hi]
            g[:n * L] = node.reshape(-1)
            np.add.at(g, n * L + ks, 1)
            if n:
                g[n * L + features.n_transitions + y[0]] = 1
                g[n * L + features.n_transitions + L + y[-1]] = 1
            self.loss[lo:lo + n * L] = 1 - node.reshape(-1)

    def marginals(self, i: int, theta: np.ndarray) -> tuple[float, np.ndarray]:
        log_z, node, edge = forward_backward(*self.features.unpack(i, theta))
        return log_z, self.features.pack(node, edge, node[0], node[-1])

    def log_partition(self, i: int, theta: np.ndarray) -> float:
        return log_partition(*self.features.unpack(i, theta))

    def argmax(self, i: int, theta: np.ndarray) -> np.ndarray:
        path, _ = viterbi(*self.features.unpack(i, theta))
        return self.path_parts(i, path)

    def path_parts(self, i: int, path: np.ndarray) -> np.ndarray:
        """The part-count vector of labelling ``path`` of sentence i."""
        L = self.features.n_labels
        n = len(path)
        node = np.zeros((n, L))
        node[np.arange(n), path] = 1.0
        edge = np.zeros((L, L))
        np.add.at(edge, (path[:-1], path[1:]), 1.0)
        return self.features.pack(node, edge, node[0], node[-1])


# ---------------------------------------------------------------------------
# Featurizer: predicates -> ids, fitted on training data
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
    predicate ids (unknown predicates are skipped) and :meth:`egnlp.features`
    compiles them into a :class:`ChainFeatures`.
    """

    def __init__(self, labels: Sequence[str], predicates: Sequence[str], lab_ptr: np.ndarray,
                 lab_labels: np.ndarray, trans_pairs: np.ndarray, *, use_pos: bool = False,
                 all_transitions: bool = False):
        self.labels = list(labels)
        self.label_index = {lab: k for k, lab in enumerate(self.labels)}
        if len(self.label_index) != len(self.labels):
            raise ValueError("labels must be distinct")
        self.predicates = list(predicates)
        self.pred_index = {p: k for k, p in enumerate(self.predicates)}
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
        counts = np.zeros(int(tok_ptr[-1]), dtype=np.int64)
        ids: list[int] = []
        t = 0
        get = self.pred_index.get
        for preds in sentence_predicates(tokens_list, pos_list, self.use_pos):
            for token_preds in preds:
                before = len(ids)
                ids.extend(k for k in map(get, token_preds) if k is not None)
                counts[t] = len(ids) - before
                t += 1
        pred_ptr = np.zeros(counts.shape[0] + 1, dtype=np.int64)
        np.cumsum(counts, out=pred_ptr[1:])
        return Encoded(tok_ptr, pred_ptr, np.asarray(ids, dtype=np.int32))

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

    def problem(self, tokens_list, labels_list, pos_list=None) -> TaggingProblem:
        """The structured problem of labelled sentences under this feature space."""
        return TaggingProblem(self.features(self.encode(tokens_list, pos_list)), self.label_ids(labels_list))

    def decode(self, tokens_list, pos_list, w: np.ndarray) -> list[list[str]]:
        """Viterbi labels of every sentence under weights ``w``."""
        return [[self.labels[k] for k in path] for path in self.decode_ids(self.features(self.encode(tokens_list, pos_list)), w)]

    def decode_ids(self, features: ChainFeatures, w: np.ndarray) -> list[np.ndarray]:
        """Viterbi label ids of every example of ``egnlp.features`` (empty sentences give empty arrays)."""
        out = []
        for i in range(features.n_examples):
            if features.length(i) == 0:
                out.append(np.zeros(0, dtype=np.int64))
            else:
                out.append(viterbi(*features.chain_scores(i, w))[0])
        return out

    def config(self) -> dict[str, Any]:
        return {"use_pos": self.use_pos, "all_transitions": self.all_transitions,
                "predicates": predicates_fingerprint(self.use_pos)}


# ---------------------------------------------------------------------------
# The inner model of a Tagger
# ---------------------------------------------------------------------------


class CRFModel:
    """A trained linear-chain CRF: featurizer + weights (the ``crf`` kind of a :class:`tagger.Tagger`)."""

    kind = KIND

    def __init__(self, featurizer: ChainFeaturizer, weights: np.ndarray):
        weights = np.ascontiguousarray(weights, dtype=np.float64)
        if weights.shape != (featurizer.n_features,):
            raise ValueError(f"{weights.shape} weights for {featurizer.n_features} features")
        if not np.all(np.isfinite(weights)):
            raise ValueError("weights must be finite")
        self.featurizer = featurizer
        self.weights = weights

    @property
    def labels(self) -> list[str]:
        return self.featurizer.labels

    @property
    def use_pos(self) -> bool:
        return self.featurizer.use_pos

    def predict(self, tokens_list: list[list[str]], pos_list: list[list[str]] | None = None) -> list[list[str]]:
        return self.featurizer.decode(tokens_list, pos_list, self.weights)

    def marginals(self, tokens: list[str], pos: list[str] | None = None) -> np.ndarray:
        """p(y_t = label) for every token, shape (n, L), columns in the order of ``labels``."""
        if not tokens:
            return np.zeros((0, self.featurizer.n_labels))
        f = self.featurizer
        feats = f.features(f.encode([tokens], [pos] if pos is not None else None))
        return forward_backward(*feats.chain_scores(0, self.weights))[1]

    def to_arrays(self) -> tuple[dict[str, np.ndarray], dict]:
        f = self.featurizer
        pred_bytes, pred_offsets = pack_strings(f.predicates)
        arrays = {"weights": self.weights, "pred_bytes": pred_bytes, "pred_offsets": pred_offsets,
                  "lab_ptr": f.lab_ptr, "lab_labels": f.lab_labels, "trans_pairs": f.trans_pairs}
        meta = {"labels": f.labels, **f.config()}
        return arrays, meta

    @classmethod
    def from_arrays(cls, arrays: dict[str, np.ndarray], meta: dict) -> "CRFModel":
        """Rebuild a model; raises ValueError / KeyError / TypeError on inconsistent input."""
        use_pos = bool(meta["use_pos"])
        if meta["predicates"] != predicates_fingerprint(use_pos):
            raise ValueError("the model was trained with other observation predicates "
                             "(features/predicates.py changed); retrain it")
        featurizer = ChainFeaturizer(meta["labels"], unpack_strings(arrays["pred_bytes"], arrays["pred_offsets"]),
                                     arrays["lab_ptr"], arrays["lab_labels"], arrays["trans_pairs"],
                                     use_pos=use_pos, all_transitions=bool(meta["all_transitions"]))
        return cls(featurizer, arrays["weights"])
