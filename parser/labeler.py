"""The second-stage arc labeler: DEPREL for every arc of a tree (McDonald, Lerman and Pereira 2006).

A maximum-entropy classifier over the labels of each word's arc, with the
features of :mod:`egnlp.features.arc_labels` (the head, the modifier and the
tree around them).  Its features are (predicate, label) pairs seen in
training (:mod:`egnlp.features.label_pairs`); a predicate is a template key
of :mod:`egnlp.features.arc_labels`, looked up in an alphabet of the keys
seen in training.  Decoding takes, per arc, the best label among those seen
with the same kind of head in training: a label seen only under the root
(UD ``root``) is never given to another arc, and a word attached to the root
gets a label seen there.  A kind of head no training arc had (every training
word attached to the root) allows every label (:func:`allowed_labels`).

Why a second stage rather than labeled arc parts: ``docs/labels.md``.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np
from numba import njit

from egnlp.base.files import check_arrays, check_labels, check_weights
from egnlp.corpora import Sentence
from egnlp.features.arc_labels import LABEL_TEMPLATES_VERSION, feature_atoms, label_keys
from egnlp.features.arc_templates import EncodedCorpus
from egnlp.features.hashing import KeyTable, table_lookup
from egnlp.features.label_pairs import DENSE_LABELS, dense_rows, label_scores


@njit(cache=True)
def _lookup(table_keys, table_vals, ev_ptr, keys):
    """Map every key to its alphabet row, dropping keys that are not there: ``(ev_ptr, ids)``."""
    out_ptr = np.zeros(ev_ptr.shape[0], dtype=np.int64)
    ids = np.empty(keys.shape[0], dtype=np.int64)
    c = 0
    for i in range(ev_ptr.shape[0] - 1):
        for j in range(ev_ptr[i], ev_ptr[i + 1]):
            row = table_lookup(table_keys, table_vals, keys[j])
            if row >= 0:
                ids[c] = row
                c += 1
        out_ptr[i + 1] = c
    return out_ptr, ids[:c]


def arc_label_keys(sentences: Sequence[Sentence], encoded: EncodedCorpus, heads_list: Sequence[Sequence[int]],
                   feats_memo: dict[str, tuple[int, ...]] | None = None,
                   templates: int = LABEL_TEMPLATES_VERSION) -> tuple[np.ndarray, np.ndarray]:
    """The keys of label templates version ``templates`` of every word's arc
    (:func:`~egnlp.features.arc_labels.label_keys`); ``feats_memo``: see
    :func:`~egnlp.features.arc_labels.feature_atoms`."""
    return label_keys(encoded.tok_ptr, encoded.atoms, encoded.heads_rows(heads_list),
                      *feature_atoms(sentences, memo=feats_memo), templates)


def predicate_ids(table: KeyTable, ev_ptr: np.ndarray, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The alphabet rows of the keys of every event (keys not in ``table`` dropped): CSR ``(ev_ptr, ids)``."""
    return _lookup(table.table_keys, table.table_vals, ev_ptr, keys)


def allowed_labels(gold: np.ndarray, at_root: np.ndarray, n_labels: int) -> tuple[np.ndarray, np.ndarray]:
    """``(root_ok, other_ok)`` (n_labels,) bool of :class:`ArcLabeler` from the gold label id of every
    training arc and whether its head is the root (both (arcs,)): the labels seen under the root, and those
    seen under a word.  A kind of head that no training arc has allows every label: when every training
    word hangs from the root, a parsed tree may still attach a word to a word, and it gets the best label
    of all."""
    root_ok = np.bincount(gold[at_root], minlength=n_labels) > 0
    other_ok = np.bincount(gold[~at_root], minlength=n_labels) > 0
    return (root_ok if root_ok.any() else np.ones(n_labels, dtype=np.bool_),
            other_ok if other_ok.any() else np.ones(n_labels, dtype=np.bool_))


# The arrays of a labeler in a model file: name -> (dtype, number of dimensions).
LABELER_ARRAYS = {"labeler_keys": ("<u8", 1), "labeler_feat_ptr": ("<i8", 1), "labeler_feat_label": ("<i8", 1),
                  "labeler_weights": ("<f8", 1), "labeler_root_ok": ("|b1", 1), "labeler_other_ok": ("|b1", 1)}


class ArcLabeler:
    """Labels of arcs: an alphabet of predicate keys, (predicate, label) features and their weights.

    Args:
        labels: the label names; ``root_ok`` / ``other_ok`` (len(labels),)
            bool say which labels may go on an arc from the root / from a word.
        keys: (P,) uint64 predicate keys, sorted and unique (predicate id = rank).
        feat_ptr: (P+1,) int64, the features of predicate p are
            ``feat_ptr[p]:feat_ptr[p+1]``; ``feat_label`` (n,) their labels;
            ``weights`` (n,) float64.
        templates: the version of the label templates the keys are of (1 up to
            :data:`~egnlp.features.arc_labels.LABEL_TEMPLATES_VERSION`, the default).
    """

    def __init__(self, labels: Sequence[str], root_ok: np.ndarray, other_ok: np.ndarray, keys: np.ndarray,
                 feat_ptr: np.ndarray, feat_label: np.ndarray, weights: np.ndarray, *,
                 templates: int = LABEL_TEMPLATES_VERSION):
        if type(templates) is not int or not 1 <= templates <= LABEL_TEMPLATES_VERSION:
            raise ValueError(f"label templates {str(templates)[:20]!r}: this egnlp has versions 1 to "
                             f"{LABEL_TEMPLATES_VERSION}")
        self.templates = templates
        self.labels = [str(label) for label in labels]
        L = len(self.labels)
        if L < 1 or len(set(self.labels)) != L:
            raise ValueError("a labeler needs at least one label and no repeated labels")
        self.root_ok = np.asarray(root_ok, dtype=np.bool_)
        self.other_ok = np.asarray(other_ok, dtype=np.bool_)
        self.keys = np.ascontiguousarray(keys, dtype=np.uint64)
        self.feat_ptr = np.ascontiguousarray(feat_ptr, dtype=np.int64)
        self.feat_label = np.ascontiguousarray(feat_label, dtype=np.int64)
        self.weights = weights
        n = self.feat_label.shape[0]
        if self.root_ok.shape != (L,) or self.other_ok.shape != (L,) or not self.root_ok.any() \
                or not self.other_ok.any():
            raise ValueError("root_ok and other_ok need one flag per label, some of each set")
        if self.keys.ndim != 1 or (self.keys.size > 1 and np.any(self.keys[1:] <= self.keys[:-1])):
            raise ValueError("predicate keys must be sorted and unique")
        if self.feat_ptr.shape != (self.keys.size + 1,) or self.feat_ptr[0] != 0 or self.feat_ptr[-1] != n \
                or np.any(np.diff(self.feat_ptr) < 0):
            raise ValueError(f"feat_ptr must be a CSR pointer over {n} features for {self.keys.size} predicates")
        if self.weights.shape != (n,) or (n and (self.feat_label.min() < 0 or self.feat_label.max() >= L)):
            raise ValueError(f"{self.weights.shape[0]} weights for {n} features, labels in [0, {L})")
        self.table = KeyTable(self.keys)
        self._feats_memo: dict[str, tuple[int, ...]] = {}  # FEATS text -> its atoms, for every call of events

    @property
    def weights(self) -> np.ndarray:
        """The feature weights (n,) float64."""
        return self._weights

    @weights.setter
    def weights(self, value: np.ndarray) -> None:
        self._weights = np.ascontiguousarray(value, dtype=np.float64)
        self._dense: tuple[np.ndarray, np.ndarray] | None = None  # label_pairs.dense_rows, when first scored

    def events(self, sentences: Sequence[Sentence], encoded: EncodedCorpus,
               heads_list: Sequence[Sequence[int]]) -> tuple[np.ndarray, np.ndarray]:
        """Predicate ids of every word's arc in the trees ``heads_list`` of ``sentences`` (encoded as
        ``encoded``): CSR ``(ev_ptr, ids)``."""
        return predicate_ids(self.table, *arc_label_keys(sentences, encoded, heads_list, self._feats_memo,
                                                         self.templates))

    def scores(self, events: tuple[np.ndarray, np.ndarray], weights: np.ndarray | None = None) -> np.ndarray:
        """Label scores (words, labels) of encoded events under ``weights`` (default: the model's)."""
        if weights is None:  # the model's own weights: the frequent predicates' dense rows, built once
            if self._dense is None:
                self._dense = dense_rows(self.feat_ptr, self.feat_label, self.weights, len(self.labels), DENSE_LABELS)
            return label_scores(events[0], events[1], self.feat_ptr, self.feat_label, self.weights,
                                len(self.labels), self._dense)
        w = np.ascontiguousarray(weights, dtype=np.float64)
        return label_scores(events[0], events[1], self.feat_ptr, self.feat_label, w, len(self.labels))

    def best(self, scores: np.ndarray, at_root: np.ndarray) -> np.ndarray:
        """The best allowed label id of every word, given whether its head is the root (both (words,))."""
        allowed = np.where(at_root[:, None], self.root_ok[None, :], self.other_ok[None, :])
        return np.where(allowed, scores, -np.inf).argmax(axis=1)

    def label(self, sentences: Sequence[Sentence], encoded: EncodedCorpus,
              heads_list: Sequence[Sequence[int]]) -> list[list[str]]:
        """DEPREL of every word of the trees ``heads_list`` (one list of heads per sentence, 0 = root)."""
        at_root = np.array(list(itertools.chain.from_iterable(heads_list)), dtype=np.int64) == 0
        names = [self.labels[k] for k in self.best(self.scores(self.events(sentences, encoded, heads_list)),
                                                   at_root).tolist()]
        ends = itertools.accumulate(map(len, heads_list))
        return [names[end - len(heads):end] for heads, end in zip(heads_list, ends)]

    def arrays(self) -> dict[str, np.ndarray]:
        """The arrays of a model file (the labels and :attr:`templates` are stored by the caller's metadata)."""
        return {"labeler_keys": self.keys, "labeler_feat_ptr": self.feat_ptr, "labeler_feat_label": self.feat_label,
                "labeler_weights": self.weights, "labeler_root_ok": self.root_ok, "labeler_other_ok": self.other_ok}

    @classmethod
    def from_arrays(cls, labels: Sequence[str], arrays: dict[str, np.ndarray], *, templates: int) -> "ArcLabeler":
        """The labeler of a model file: ``labels`` and the ``templates`` version from its metadata, ``arrays``
        those of :meth:`arrays`.

        Raises:
            ValueError: labels that are not distinct non-empty strings without whitespace, a templates version
                this egnlp does not have, a missing,
                unexpected or mistyped array, weights that could overflow a score
                (:func:`~egnlp.base.files.check_weights`), or arrays that do not agree.
        """
        check_labels(labels, "arc labels")
        check_arrays(arrays, LABELER_ARRAYS)
        check_weights(arrays["labeler_weights"], "labeler weights")
        return cls(labels, arrays["labeler_root_ok"], arrays["labeler_other_ok"], arrays["labeler_keys"],
                   arrays["labeler_feat_ptr"], arrays["labeler_feat_label"], arrays["labeler_weights"],
                   templates=templates)
