"""The tagging problem: the tagger side of the structured-problem seam (see training/structured_problem.py).

A corpus of labelled sentences, compiled into the chain parts of
:mod:`egnlp.features.chain_features` (node parts, one block of transition parts per
sentence, start and stop parts), becomes a structured problem for the
trainers: the gold part counts, a per-part Hamming loss, and the oracles
the EG algorithms of Collins et al. (2008), Sec. 4, need over the labellings
of one sentence, the chain MRF of Bartlett et al. (2004), Sec. 2.1, Example 1:

- ``marginals`` by forward-backward (the transition parts' pairs only) and ``log_partition`` by the forward algorithm,
- ``argmax`` (loss-augmented when the loss is added to theta) by Viterbi,

both from :mod:`egnlp.tagger.chain_inference`: the marginals and log Z straight from
the per-part vector (its layout is that of :mod:`egnlp.features.chain_features`), Viterbi
on the (n, L) emissions, (L, L) transitions, (L,) start and (L,) stop scores that
:meth:`egnlp.features.chain_features.ChainFeatures.unpack` cuts from it.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from egnlp.features.chain_features import ChainFeatures, ChainFeaturizer
from egnlp.tagger.chain_inference import (lattice_log_partition, lattice_marginals, lattice_viterbi,
                                          part_log_partition, part_marginals, viterbi)


class TaggingProblem:
    """Linear-chain CRF tagging of a corpus compiled into ``features`` (a :class:`ChainFeatures`).

    ``gold_labels``: one int array of label ids per sentence.  ``gold``
    (n_parts,) is the part-count vector of the gold sequence (transition
    parts count the transitions); ``loss`` (n_parts,) is Hamming: 1 - gold
    on node parts, 0 on the others.
    Both are stored as unsigned integers (counts in uint8 while every sentence is shorter than 256
    tokens, else uint16 or uint32; loss in uint8), exact and an eighth of float64: with the 183 tags
    of Brown's training split a sentence has 183 parts per token plus its 4,761 transition parts:
    363 M parts in all.
    """

    @classmethod
    def from_sentences(cls, featurizer: ChainFeaturizer, tokens_list: Sequence[Sequence[str]],
                       labels_list: Sequence[Sequence[str]],
                       pos_list: Sequence[Sequence[str]] | None = None) -> "TaggingProblem":
        """The problem of labelled sentences under the feature space of ``featurizer``."""
        return cls(featurizer.features(featurizer.encode(tokens_list, pos_list)), featurizer.label_ids(labels_list))

    def __init__(self, features: ChainFeatures, gold_labels: Sequence[Sequence[int]]):
        if len(gold_labels) != features.n_examples:
            raise ValueError(f"{len(gold_labels)} gold sequences for {features.n_examples} sentences")
        L = features.n_labels
        self.features = features
        longest = max((features.length(i) for i in range(features.n_examples)), default=0)
        # a transition part counts up to n - 1 in a sentence of n tokens
        count_type = np.uint8 if longest < 2 ** 8 else np.uint16 if longest < 2 ** 16 else np.uint32
        self.gold = np.zeros(features.n_parts, dtype=count_type)
        self.loss = np.zeros(features.n_parts, dtype=np.uint8)
        if features.lattice is not None:
            self._lattice_gold(gold_labels)
            return
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

    def _lattice_gold(self, gold_labels: Sequence[Sequence[int]]) -> None:
        """gold and loss in the layout of a lattice (:meth:`ChainFeatures.lattice_of`)."""
        f = self.features
        for i, labels in enumerate(gold_labels):
            y = np.asarray(labels, dtype=np.int64)
            n = f.length(i)
            if n == 0:
                raise ValueError(f"sentence {i} is empty")
            if y.shape != (n,):
                raise ValueError(f"sentence {i}: {y.shape[0] if y.ndim == 1 else y.shape} labels for {n} tokens")
            if y.min() < 0 or y.max() >= f.n_labels:
                raise ValueError(f"sentence {i}: label ids must lie in 0..{f.n_labels - 1}")
            lo, hi = f.parts(i)
            parts = f.labelling_parts(i, y)
            aptr, alab, pairs = f.lattice_of(i)
            if parts[alab.shape[0]:alab.shape[0] + pairs.shape[0]].sum() != n - 1:
                raise ValueError(f"sentence {i}: a gold transition has no part (not seen when the features were "
                                 "fitted)")
            self.gold[lo:hi] = parts
            self.loss[lo:lo + alab.shape[0]] = 1 - parts[:alab.shape[0]]

    def marginals(self, i: int, theta: np.ndarray) -> tuple[float, np.ndarray]:
        f = self.features
        if f.lattice is not None:
            return lattice_marginals(theta, *f.lattice_of(i), f.n_labels)
        return part_marginals(theta, f.length(i), f.n_labels, f.trans_pairs)

    def log_partition(self, i: int, theta: np.ndarray) -> float:
        f = self.features
        if f.lattice is not None:
            return lattice_log_partition(theta, *f.lattice_of(i), f.n_labels)
        return part_log_partition(theta, f.length(i), f.n_labels, f.trans_pairs)

    def argmax(self, i: int, theta: np.ndarray) -> np.ndarray:
        f = self.features
        if f.lattice is not None:
            path, _ = lattice_viterbi(theta, *f.lattice_of(i), f.n_labels)
        else:
            path, _ = viterbi(*f.unpack(i, theta))
        return self.path_parts(i, path)

    def path_parts(self, i: int, path: np.ndarray) -> np.ndarray:
        """The part-count vector of labelling ``path`` of sentence i."""
        return self.features.labelling_parts(i, path)
