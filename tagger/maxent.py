"""Ratnaparkhi-style maximum-entropy tagger: a local classifier decoded by beam search.

Context predicates of token i (Ratnaparkhi 1996): the observation predicates
of :func:`egnlp.features.predicates.token_predicates` plus two tag-history
predicates, ``y[-1]=A`` (previous tag) and ``y[-2]|y[-1]=B|A`` (previous two
tags), ``<s>`` before the sentence.  They are named ``y[...]`` rather than
``t[...]`` because ``t[...]`` already names the POS-input predicates used in
chunking.  Training uses the gold history, decoding the predicted one.

Features are the (predicate, label) pairs seen in training (Ratnaparkhi 1996;
OpenNLP, as in Huang et al. 2010, Sec. 5.1): unseen pairs would only learn
negative weights, and keeping them would multiply the feature count by the
number of labels.  Predicates seen fewer than ``cutoff`` times are dropped.

This module builds the training events (:func:`training_events`: one event
per token, its predicate ids and gold label) and decodes.  The application
layer (:func:`egnlp.tagger_training.train_maxent_tagger`) turns the events into a
:class:`egnlp.training.maxent_problem.MaxentProblem` and trains it with the
coordinate descent of Huang et al. (2010, Algorithm 3) or a baseline.
Decoding is a left-to-right beam search (Ratnaparkhi 1996), a Numba kernel.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np
from numba import njit

from egnlp.base.files import check_arrays, check_labels, check_weights, pack_strings, unpack_strings
from egnlp.features.label_pairs import label_scores
from egnlp.features.predicates import BOS, token_predicates

MODEL_FORMAT = 2  # 2: predicates as UTF-8 bytes + offsets (1: a fixed-width str array)
MAX_BEAM = 1000
# The arrays of a maxent model in a model file: name -> (dtype, number of dimensions).
ARRAYS = {"pred_bytes": ("|u1", 1), "pred_offsets": ("<i8", 1), "feat_ptr": ("<i8", 1), "feat_label": ("<i8", 1),
          "weights": ("<f8", 1)}
H1 = "y[-1]="
H2 = "y[-2]|y[-1]="
# The arrays of a model's dictionary of seen forms (optional): the forms as UTF-8 bytes + offsets, and for
# form k the label ids dict_label[dict_ptr[k]:dict_ptr[k+1]].
DICTIONARY_ARRAYS = {"dict_bytes": ("|u1", 1), "dict_offsets": ("<i8", 1), "dict_ptr": ("<i8", 1),
                     "dict_label": ("<i8", 1)}
# The score of a label the dictionary rules out: finite, so that no inf - inf reaches the dynamic programs.
RULED_OUT = -1e30


def history_predicates(prev2: str, prev1: str) -> tuple[str, str]:
    """The tag-history predicates of a position whose previous two tags are ``prev2``, ``prev1``."""
    return H1 + prev1, H2 + prev2 + "|" + prev1


def _check_corpus(tokens_list, labels_list, pos_list, use_pos: bool) -> None:
    n = len(tokens_list)
    if labels_list is not None and len(labels_list) != n:
        raise ValueError(f"{n} sentences but {len(labels_list)} label sequences")
    if use_pos and (pos_list is None or len(pos_list) != n):
        raise ValueError("use_pos needs one POS sequence per sentence")
    for s, toks in enumerate(tokens_list):
        if labels_list is not None and len(labels_list[s]) != len(toks):
            raise ValueError(f"sentence {s}: {len(toks)} tokens but {len(labels_list[s])} labels")
        if use_pos and len(pos_list[s]) != len(toks):
            raise ValueError(f"sentence {s}: {len(toks)} tokens but {len(pos_list[s])} POS tags")


@dataclass(frozen=True)
class TrainingEvents:
    """One event per training token: the ids of its predicates and its gold label.

    ``predicates`` and ``labels`` name the ids; the predicate ids of event
    ``i`` are ``ev_pred[ev_ptr[i]:ev_ptr[i+1]]`` (``ev_ptr`` (N+1,) int64),
    its gold label ``gold[i]`` (N,) int64.
    """

    predicates: list[str]
    labels: list[str]
    ev_ptr: np.ndarray
    ev_pred: np.ndarray
    gold: np.ndarray


def training_events(tokens_list: Sequence[Sequence[str]], labels_list: Sequence[Sequence[str]],
                    pos_list: Sequence[Sequence[str]] | None = None, *, use_pos: bool = False,
                    cutoff: int = 1, predicate_filter: Callable[[str], bool] | None = None) -> TrainingEvents:
    """The training events of labelled sentences, with the gold tag history.

    Predicate ids follow first occurrence; labels are sorted.  Predicates
    occurring in fewer than ``cutoff`` events, or rejected by
    ``predicate_filter``, are dropped (a model decodes with the predicates it
    knows, so a filtered alphabet is a smaller template set).
    """
    if cutoff < 1:
        raise ValueError(f"cutoff must be >= 1, not {cutoff}")
    _check_corpus(tokens_list, labels_list, pos_list, use_pos)
    labels = sorted({y for seq in labels_list for y in seq})
    if not labels:
        raise ValueError("no training tokens")
    label_id = {y: k for k, y in enumerate(labels)}
    index: dict[str, int] = {}
    ids: list[int] = []
    lengths: list[int] = []
    gold: list[int] = []
    for s, toks in enumerate(tokens_list):
        tags = labels_list[s]
        preds = token_predicates(toks, pos_list[s] if use_pos else None, use_pos)
        for i, row in enumerate(preds):
            row = row + list(history_predicates(tags[i - 2] if i >= 2 else BOS, tags[i - 1] if i >= 1 else BOS))
            if predicate_filter is not None:
                row = [p for p in row if predicate_filter(p)]
            for p in row:
                k = index.get(p)
                if k is None:
                    k = index[p] = len(index)
                ids.append(k)
            lengths.append(len(row))
            gold.append(label_id[tags[i]])
    names = list(index)
    ev_pred = np.array(ids, dtype=np.int64)
    ev_ptr = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=ev_ptr[1:])
    if cutoff > 1:
        keep = np.bincount(ev_pred, minlength=len(names)) >= cutoff
        remap = np.where(keep, np.cumsum(keep) - 1, -1)
        new = remap[ev_pred]
        event = np.repeat(np.arange(len(lengths)), lengths)[new >= 0]
        ev_pred = new[new >= 0]
        np.cumsum(np.bincount(event, minlength=len(lengths)), out=ev_ptr[1:])
        names = [p for p, k in zip(names, keep) if k]
    return TrainingEvents(names, labels, ev_ptr, ev_pred, np.array(gold, dtype=np.int64))


# ---------------------------------------------------------------------------
# decoding


@njit(cache=True)
def _add_predicate(sc, p, feat_ptr, feat_label, w):
    if p >= 0:
        for t in range(feat_ptr[p], feat_ptr[p + 1]):
            sc[feat_label[t]] += w[t]


# While a table of the y[-2]|y[-1] predicate of every pair of tags has at most this many entries (256 KiB:
# up to 180 labels) the beam search reads it; beyond, it searches the sorted pairs. The beam search of es
# train (27 labels, 2,654 sentences; min of 15, in process) took 0.073 s with the table, 0.075-0.081 s
# with the search.
DENSE_HISTORY = 1 << 15


def history_table(predicates: Sequence[str], labels: Sequence[str], dense_limit: int = DENSE_HISTORY
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The predicate ids of the tag histories, for the beam search: ``(hist1, dense, keys, ids)``.

    With Y labels and index Y standing for ``<s>``: ``hist1[a]`` (Y+1,) is the id of ``y[-1]=a`` (-1 if
    there is no such predicate); the id of ``y[-2]|y[-1]=b|a`` is ``ids[k]`` where ``keys[k] == b * (Y + 1)
    + a`` (keys sorted int64; a pair absent from them has no predicate), and ``dense[b * (Y + 1) + a]`` (-1
    for none) when (Y+1)^2 is at most ``dense_limit`` (else ``dense`` is empty).  The pairs are read from
    the predicates themselves: time and memory linear in the labels and predicates, where a table over
    every pair takes Y^2 (10,000 labels: 10^8 entries, 28 s and 1.7 GiB to load a model).  A label may
    hold ``|``: a predicate is listed under every split of its pair into two tags."""
    tags = [*labels, BOS]
    Y = len(labels)
    tag_ids: dict[str, list[int]] = {}
    for k, tag in enumerate(tags):
        tag_ids.setdefault(tag, []).append(k)
    hist1 = np.full(Y + 1, -1, dtype=np.int64)
    pairs: dict[int, int] = {}
    for p, name in enumerate(predicates):
        if name.startswith(H1):
            for a in tag_ids.get(name[len(H1):], ()):
                hist1[a] = p
        elif name.startswith(H2):
            pair = name[len(H2):]
            cut = pair.find("|")
            while cut >= 0:  # every split of b|a into two tags
                for b in tag_ids.get(pair[:cut], ()):
                    for a in tag_ids.get(pair[cut + 1:], ()):
                        pairs[b * (Y + 1) + a] = p
                cut = pair.find("|", cut + 1)
    keys = np.array(sorted(pairs), dtype=np.int64)
    ids = np.array([pairs[key] for key in keys.tolist()], dtype=np.int64)
    dense = np.full((Y + 1) ** 2 if (Y + 1) ** 2 <= dense_limit else 0, -1, dtype=np.int64)
    if dense.size:
        dense[keys] = ids
    return hist1, dense, keys, ids


@njit(cache=True, inline="always")
def _history2(dense, keys, ids, key):
    """The predicate id of the history pair ``key`` in :func:`history_table`'s arrays, -1 if none."""
    if dense.shape[0] > 0:
        return dense[key]
    k = np.searchsorted(keys, key)
    return ids[k] if k < keys.shape[0] and keys[k] == key else -1


@njit(cache=True)
def _beam_search(sent_ptr, static, hist1, hist2_dense, hist2_keys, hist2_ids, feat_ptr, feat_label, w, beam):
    """Left-to-right beam search (Ratnaparkhi 1996) over all sentences.

    ``static`` (tokens, Y): label scores of the observation predicates;
    ``hist1``, ``hist2_dense``, ``hist2_keys``, ``hist2_ids``: the predicate ids of the tag histories
    (:func:`history_table`).  Keeps the ``beam`` best prefixes by log-probability (ties: earlier
    hypothesis, then lower label).  Returns the tags and the log-probability of each sentence's best
    sequence.
    """
    n_sent = sent_ptr.shape[0] - 1
    Y = static.shape[1]
    tags = np.zeros(static.shape[0], dtype=np.int64)
    logp = np.zeros(n_sent)
    maxlen = 0
    for s in range(n_sent):
        maxlen = max(maxlen, sent_ptr[s + 1] - sent_ptr[s])
    back = np.zeros((maxlen, beam), dtype=np.int64)
    btag = np.zeros((maxlen, beam), dtype=np.int64)
    bl = np.zeros(beam)
    b1 = np.zeros(beam, dtype=np.int64)
    b2 = np.zeros(beam, dtype=np.int64)
    nl = np.zeros(beam)
    n1 = np.zeros(beam, dtype=np.int64)
    n2 = np.zeros(beam, dtype=np.int64)
    cand = np.zeros(beam * Y)
    used = np.zeros(beam * Y, dtype=np.bool_)
    sc = np.zeros(Y)
    for s in range(n_sent):
        a = sent_ptr[s]
        n = sent_ptr[s + 1] - a
        if n == 0:
            continue
        nb = 1
        bl[0] = 0.0
        b1[0] = Y
        b2[0] = Y
        for i in range(n):
            for h in range(nb):
                for y in range(Y):
                    sc[y] = static[a + i, y]
                _add_predicate(sc, hist1[b1[h]], feat_ptr, feat_label, w)
                p2 = _history2(hist2_dense, hist2_keys, hist2_ids, b2[h] * (Y + 1) + b1[h])
                _add_predicate(sc, p2, feat_ptr, feat_label, w)
                c = sc.max()
                z = 0.0
                for y in range(Y):
                    z += np.exp(sc[y] - c)
                lse = c + np.log(z)
                for y in range(Y):
                    cand[h * Y + y] = bl[h] + sc[y] - lse
            m = nb * Y
            k = min(beam, m)
            used[:m] = False
            for r in range(k):
                best = -np.inf
                bi = -1
                for j in range(m):
                    if not used[j] and (bi < 0 or cand[j] > best):
                        best = cand[j]
                        bi = j
                used[bi] = True
                h = bi // Y
                y = bi % Y
                back[i, r] = h
                btag[i, r] = y
                nl[r] = best
                n1[r] = y
                n2[r] = b1[h]
            nb = k
            for r in range(k):
                bl[r] = nl[r]
                b1[r] = n1[r]
                b2[r] = n2[r]
        logp[s] = bl[0]
        r = 0
        for i in range(n - 1, -1, -1):
            tags[a + i] = btag[i, r]
            r = back[i, r]
    return tags, logp


@njit(cache=True)
def _local_probs(row, h1, h2, feat_ptr, feat_label, w, sc, out):
    """out (Y,) = p(y | x_i, history): the softmax of the observation scores ``row`` (Y,) plus the
    weights of the history predicates ``h1``, ``h2`` (ids, or -1 when unknown), as the beam search
    scores them; ``sc`` (Y,) is scratch."""
    for y in range(row.shape[0]):
        sc[y] = row[y]
    _add_predicate(sc, h1, feat_ptr, feat_label, w)
    _add_predicate(sc, h2, feat_ptr, feat_label, w)
    c = sc.max()
    z = 0.0
    for y in range(sc.shape[0]):
        out[y] = np.exp(sc[y] - c)
        z += out[y]
    for y in range(sc.shape[0]):
        out[y] /= z


@njit(cache=True)
def _forward_marginals(sent_ptr, static, hist1, hist2_dense, hist2_keys, hist2_ids, feat_ptr, feat_label, w, node):
    """node (tokens, Y) = p(y_i = y | x) under the model's distribution p(y | x) = prod_i p(y_i | x, y_{i-2},
    y_{i-1}), whatever the beam.

    The forward pass over pairs of tags: ``alpha[a, b]`` = p(y_{i-1} = a, y_i = b | x), index Y
    standing for ``<s>``; alpha_i[a, b] = sum_c alpha_{i-1}[c, a] p(b | x_i, c, a).  A locally
    normalised model needs no backward pass (the future never changes the past: the backward
    quantities are all 1), and each alpha sums to 1, so it stays in linear space without overflow.
    ``hist1`` and the ``hist2_*`` arrays are :func:`history_table`'s. The histories (c, a) whose
    ``y[-2]|y[-1]`` predicate the model does not know share one local
    distribution, summed once: O(n Y (Y + K)) time for K known pairs (the beam's is O(n beam Y)).
    """
    Y = static.shape[1]
    alpha = np.zeros((Y + 1, Y))
    new = np.zeros((Y + 1, Y))
    sc = np.zeros(Y)
    p = np.zeros(Y)
    for s in range(sent_ptr.shape[0] - 1):
        a0 = sent_ptr[s]
        n = sent_ptr[s + 1] - a0
        if n == 0:
            continue
        alpha[:] = 0.0
        first = _history2(hist2_dense, hist2_keys, hist2_ids, Y * (Y + 1) + Y)
        _local_probs(static[a0], hist1[Y], first, feat_ptr, feat_label, w, sc, p)
        for y in range(Y):
            alpha[Y, y] = p[y]
            node[a0, y] = p[y]
        for i in range(1, n):
            new[:] = 0.0
            for a in range(Y):  # y_{i-1}
                shared = 0.0  # the mass of the histories (c, a) with no y[-2]|y[-1] predicate
                for c in range(Y + 1):  # y_{i-2}
                    mass = alpha[c, a]
                    if mass == 0.0:
                        continue
                    h2 = _history2(hist2_dense, hist2_keys, hist2_ids, c * (Y + 1) + a)
                    if h2 < 0:
                        shared += mass
                        continue
                    _local_probs(static[a0 + i], hist1[a], h2, feat_ptr, feat_label, w, sc, p)
                    for y in range(Y):
                        new[a, y] += mass * p[y]
                if shared > 0.0:
                    _local_probs(static[a0 + i], hist1[a], -1, feat_ptr, feat_label, w, sc, p)
                    for y in range(Y):
                        new[a, y] += shared * p[y]
            for y in range(Y):
                total = 0.0
                for a in range(Y + 1):
                    alpha[a, y] = new[a, y]
                    total += new[a, y]
                node[a0 + i, y] = total
    return node


class MaxentModel:
    """A trained maxent tagger: predicate alphabet, (predicate, label) features, weights.

    ``feat_ptr`` (P+1,): the features of predicate ``p`` are
    ``feat_ptr[p]:feat_ptr[p+1]``; ``feat_label`` / ``weights`` (n,) give
    their label and weight.
    """

    kind = "maxent"

    def __init__(self, labels: Sequence[str], predicates: Sequence[str], feat_ptr: np.ndarray,
                 feat_label: np.ndarray, weights: np.ndarray, *, use_pos: bool = False, beam: int = 3,
                 info: dict[str, Any] | None = None,
                 dictionary: tuple[Sequence[str], np.ndarray, np.ndarray] | None = None):
        self.labels = [str(y) for y in labels]
        self.predicates = [str(p) for p in predicates]
        self.feat_ptr = np.ascontiguousarray(feat_ptr, dtype=np.int64)
        self.feat_label = np.ascontiguousarray(feat_label, dtype=np.int64)
        self.weights = np.ascontiguousarray(weights, dtype=np.float64)
        self.use_pos = bool(use_pos)
        self.beam = int(beam)
        self.info = dict(info or {})
        Y, P, n = len(self.labels), len(self.predicates), self.feat_label.shape[0]
        if Y < 1 or len(set(self.labels)) != Y:
            raise ValueError("a maxent model needs at least one label and no repeated labels")
        if not 1 <= self.beam <= MAX_BEAM:
            raise ValueError(f"beam must be between 1 and {MAX_BEAM}, not {beam}")
        if not np.all(np.isfinite(self.weights)):
            raise ValueError("weights must be finite")
        if self.feat_ptr.shape != (P + 1,) or self.feat_ptr[0] != 0 or self.feat_ptr[-1] != n \
                or np.any(np.diff(self.feat_ptr) < 0):
            raise ValueError(f"feat_ptr must be a CSR pointer over {n} features for {P} predicates")
        if self.weights.shape != (n,) or self.feat_label.ndim != 1:
            raise ValueError(f"{self.weights.shape[0]} weights for {n} features")
        if n and (self.feat_label.min() < 0 or self.feat_label.max() >= Y):
            raise ValueError(f"feature labels must lie in [0, {Y})")
        self._index = {p: k for k, p in enumerate(self.predicates)}
        if len(self._index) != P:
            raise ValueError("repeated predicate strings")
        self._history = history_table(self.predicates, self.labels)
        self.dictionary: tuple[list[str], np.ndarray, np.ndarray] | None = None
        self._forms: dict[str, int] = {}
        if dictionary is not None:
            forms, ptr, ids = [str(f) for f in dictionary[0]], np.ascontiguousarray(dictionary[1], dtype=np.int64), \
                np.ascontiguousarray(dictionary[2], dtype=np.int64)
            if ptr.shape != (len(forms) + 1,) or ptr[0] != 0 or ptr[-1] != ids.shape[0] or np.any(np.diff(ptr) < 1):
                raise ValueError(f"dict_ptr must be a CSR pointer over {ids.shape[0]} labels for {len(forms)} forms")
            if ids.size and (ids.min() < 0 or ids.max() >= Y):
                raise ValueError(f"dictionary labels must lie in [0, {Y})")
            self._forms = {form: k for k, form in enumerate(forms)}
            if len(self._forms) != len(forms):
                raise ValueError("repeated dictionary forms")
            self.dictionary = (forms, ptr, ids)

    # -- decoding
    def restrict(self, static: np.ndarray, tokens_list: Sequence[Sequence[str]]) -> np.ndarray:
        """The label scores ``static`` (tokens, Y) of the tokens of ``tokens_list`` with every label a word's
        dictionary entry does not list set to :data:`RULED_OUT` (words not in the dictionary keep all);
        ``static`` itself without a dictionary."""
        if self.dictionary is None:
            return static
        _, ptr, ids = self.dictionary
        row = np.array([self._forms.get(w, -1) for toks in tokens_list for w in toks], dtype=np.int64)
        if row.shape[0] != static.shape[0]:
            raise ValueError(f"{row.shape[0]} tokens for {static.shape[0]} rows of scores")
        known = np.flatnonzero(row >= 0)
        allowed = np.ones(static.shape, dtype=bool)
        allowed[known] = False
        counts = ptr[row[known] + 1] - ptr[row[known]]
        starts = np.repeat(ptr[row[known]] - (np.cumsum(counts) - counts), counts)
        allowed[np.repeat(known, counts), ids[starts + np.arange(counts.sum())]] = True
        return np.where(allowed, static, RULED_OUT)

    def encode(self, tokens_list: Sequence[Sequence[str]], pos_list: Sequence[Sequence[str]] | None = None):
        """(sentence pointer, token pointer, predicate ids) of the observation predicates; unknown ones dropped."""
        _check_corpus(tokens_list, None, pos_list, self.use_pos)
        sent_ptr = np.zeros(len(tokens_list) + 1, dtype=np.int64)
        lengths: list[int] = []
        ids: list[int] = []
        get = self._index.get
        for s, toks in enumerate(tokens_list):
            sent_ptr[s + 1] = sent_ptr[s] + len(toks)
            for row in token_predicates(toks, pos_list[s] if self.use_pos else None, self.use_pos):
                known = [k for k in map(get, row) if k is not None]
                ids.extend(known)
                lengths.append(len(known))
        tok_ptr = np.zeros(len(lengths) + 1, dtype=np.int64)
        np.cumsum(lengths, out=tok_ptr[1:])
        return sent_ptr, tok_ptr, np.array(ids, dtype=np.int64)

    def decode_encoded(self, encoded, weights: np.ndarray | None = None, beam: int | None = None,
                       tokens_list: Sequence[Sequence[str]] | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(tag ids of all tokens, log-probability per sentence) by beam search with ``weights``; given the
        words (``tokens_list``), a dictionary's words take only their labels (:meth:`restrict`)."""
        w = self.weights if weights is None else np.ascontiguousarray(weights, dtype=np.float64)
        beam = self.beam if beam is None else int(beam)
        if beam < 1:
            raise ValueError(f"beam must be >= 1, not {beam}")
        if w.shape != self.weights.shape:
            raise ValueError(f"{w.shape} weights for {self.weights.shape[0]} features")
        sent_ptr, tok_ptr, tok_pred = encoded
        static = label_scores(tok_ptr, tok_pred, self.feat_ptr, self.feat_label, w, len(self.labels))
        if tokens_list is not None:
            static = self.restrict(static, tokens_list)
        return _beam_search(sent_ptr, static, *self._history, self.feat_ptr, self.feat_label, w, beam)

    def decode(self, tokens_list: list[list[str]], pos_list: list[list[str]] | None = None,
               beam: int | None = None) -> tuple[list[list[str]], np.ndarray]:
        """Tag sequences and their log-probabilities sum_i log P(y_i | x_i, y_{i-2}, y_{i-1})."""
        enc = self.encode(tokens_list, pos_list)
        tags, logp = self.decode_encoded(enc, beam=beam, tokens_list=tokens_list)
        sp = enc[0]
        return [[self.labels[k] for k in tags[sp[s]:sp[s + 1]]] for s in range(len(tokens_list))], logp

    def predict(self, tokens_list: list[list[str]], pos_list: list[list[str]] | None = None) -> list[list[str]]:
        return self.decode(tokens_list, pos_list)[0]

    def marginals_encoded(self, encoded, tokens_list: Sequence[Sequence[str]] | None = None) -> np.ndarray:
        """p(y_i = y | x) of every token of ``encoded`` (:meth:`encode`), (tokens, Y) float64, columns in
        the order of :attr:`labels`: exact under the model's distribution (the product of the local
        distributions p(y_i | x, y_{i-2}, y_{i-1}) over whole tag sequences), by a forward pass over the
        local distributions (:func:`_forward_marginals`) rather than the beam's approximation; given the
        words (``tokens_list``), under the dictionary's restriction (:meth:`restrict`)."""
        sent_ptr, tok_ptr, tok_pred = encoded
        static = label_scores(tok_ptr, tok_pred, self.feat_ptr, self.feat_label, self.weights, len(self.labels))
        if tokens_list is not None:
            static = self.restrict(static, tokens_list)
        node = np.zeros((static.shape[0], len(self.labels)))
        return _forward_marginals(sent_ptr, static, *self._history, self.feat_ptr, self.feat_label, self.weights,
                                  node)

    def marginals(self, tokens: list[str], pos: list[str] | None = None) -> np.ndarray:
        """p(y_t = label | sentence) for every token, shape (n, L), columns in the order of ``labels``
        (:meth:`marginals_encoded`)."""
        return self.marginals_encoded(self.encode([tokens], [pos] if pos is not None else None), [tokens])

    def predict_marginals(self, tokens_list: list[list[str]], pos_list: list[list[str]] | None = None
                          ) -> tuple[list[list[str]], list[np.ndarray]]:
        """The beam's labels of every sentence and its tokens' label marginals, (n, L) each
        (:meth:`marginals_encoded`), from one encoding."""
        enc = self.encode(tokens_list, pos_list)
        tags, _ = self.decode_encoded(enc, tokens_list=tokens_list)
        node = self.marginals_encoded(enc, tokens_list)
        sp = enc[0]
        labels = [[self.labels[k] for k in tags[sp[s]:sp[s + 1]]] for s in range(len(tokens_list))]
        return labels, [node[sp[s]:sp[s + 1]] for s in range(len(tokens_list))]

    # -- storage
    def to_arrays(self) -> tuple[dict[str, np.ndarray], dict]:
        pred_bytes, pred_offsets = pack_strings(self.predicates)
        arrays = {"pred_bytes": pred_bytes, "pred_offsets": pred_offsets, "feat_ptr": self.feat_ptr,
                  "feat_label": self.feat_label, "weights": self.weights}
        meta = {"kind": self.kind, "format": MODEL_FORMAT, "labels": list(self.labels), "use_pos": self.use_pos,
                "beam": self.beam, "history": [H1, H2], "info": self.info, "dictionary": self.dictionary is not None}
        if self.dictionary is not None:
            forms, ptr, ids = self.dictionary
            dict_bytes, dict_offsets = pack_strings(forms)
            arrays.update(dict_bytes=dict_bytes, dict_offsets=dict_offsets, dict_ptr=ptr, dict_label=ids)
        return arrays, meta

    @classmethod
    def from_arrays(cls, arrays: dict[str, np.ndarray], meta: dict) -> "MaxentModel":
        if not isinstance(meta, dict) or meta.get("kind") != cls.kind:
            kind = meta.get("kind") if isinstance(meta, dict) else None
            raise ValueError(f"not a maxent model (kind {repr(kind)[:40]})")
        if meta.get("format") != MODEL_FORMAT:
            raise ValueError(f"maxent model format {repr(meta.get('format'))[:40]} is not supported (this reads "
                             f"{MODEL_FORMAT}); retrain the model")
        if meta.get("history") != [H1, H2]:
            raise ValueError(f"maxent model with history predicates {repr(meta.get('history'))[:60]}, "
                             f"expected {[H1, H2]}")
        has_dictionary = meta.get("dictionary", False)
        if not isinstance(has_dictionary, bool):
            raise ValueError("inconsistent maxent model (dictionary must be true or false)")
        check_arrays(arrays, {**ARRAYS, **DICTIONARY_ARRAYS} if has_dictionary else ARRAYS)
        check_weights(arrays["weights"])
        check_labels(meta.get("labels"))
        beam, use_pos, info = meta.get("beam"), meta.get("use_pos"), meta.get("info")
        if type(beam) is not int or not 1 <= beam <= MAX_BEAM:
            raise ValueError(f"beam must be an integer between 1 and {MAX_BEAM}, not {str(beam)[:40]}")
        if not isinstance(use_pos, bool) or not isinstance(info, dict):
            raise ValueError("inconsistent maxent model (use_pos must be true or false, info a JSON object)")
        preds = unpack_strings(arrays["pred_bytes"], arrays["pred_offsets"])
        dictionary = (unpack_strings(arrays["dict_bytes"], arrays["dict_offsets"]), arrays["dict_ptr"],
                      arrays["dict_label"]) if has_dictionary else None
        return cls(meta["labels"], preds, arrays["feat_ptr"], arrays["feat_label"], arrays["weights"],
                   use_pos=use_pos, beam=beam, info=info, dictionary=dictionary)
