"""The linear-chain CRF tagger model: a fitted feature space and its weights, decoded by Viterbi.

The feature space (:class:`egnlp.features.chain_features.ChainFeaturizer`: observation
predicates conjoined with labels, label transitions, start and stop
features) and its parts are described in :mod:`egnlp.features.chain_features`; the
structured problem the trainers solve over them is
:class:`egnlp.tagger.tagging_problem.TaggingProblem` (Collins et al. 2008, Sec. 4,
on the chain MRF of Bartlett et al. 2004, Sec. 2.1, Example 1).  A trained
:class:`CRFModel` tags by Viterbi and gives the token marginals by
forward-backward (:mod:`egnlp.tagger.chain_inference`).
"""

from __future__ import annotations

import numpy as np

from egnlp.base.files import check_arrays, check_labels, check_weights, pack_strings, unpack_strings
from egnlp.features.chain_features import ChainFeatures, ChainFeaturizer, predicates_fingerprint
from egnlp.tagger.chain_inference import forward_backward, lattice_marginals, lattice_viterbi, viterbi

KIND = "crf"
# The arrays of a CRF in a model file: name -> (dtype, number of dimensions).
ARRAYS = {"weights": ("<f8", 1), "pred_bytes": ("|u1", 1), "pred_offsets": ("<i8", 1), "lab_ptr": ("<i8", 1),
          "lab_labels": ("<i4", 1), "trans_pairs": ("<i8", 2)}
# The arrays of a CRF's tag dictionary (meta "dictionary" > 0): the forms as UTF-8 bytes + offsets, and for
# form k the label ids dict_label[dict_ptr[k]:dict_ptr[k + 1]].
DICTIONARY_ARRAYS = {"dict_bytes": ("|u1", 1), "dict_offsets": ("<i8", 1), "dict_ptr": ("<i8", 1),
                     "dict_label": ("<i8", 1)}


def decode_ids(features: ChainFeatures, w: np.ndarray) -> list[np.ndarray]:
    """Viterbi label ids of every example of ``features`` under weights ``w`` (n_features,):
    one int64 array (n,) per sentence (empty sentences give empty arrays); over each sentence's
    lattice when the features have one (a tag dictionary)."""
    return [decode_one(features, i, w) for i in range(features.n_examples)]


def decode_one(features: ChainFeatures, i: int, w: np.ndarray) -> np.ndarray:
    """The Viterbi label ids (n,) of example i of ``features`` (see :func:`decode_ids`)."""
    if features.length(i) == 0:
        return np.zeros(0, dtype=np.int64)
    if features.lattice is not None:
        lo, hi = features.parts(i)
        return lattice_viterbi(features.scores(lo, hi, w), *features.lattice_of(i), features.n_labels)[0]
    return viterbi(*features.chain_scores(i, w))[0]


def token_marginals(features: ChainFeatures, i: int, w: np.ndarray) -> np.ndarray:
    """p(y_t = label) of example i's tokens under weights ``w``, (n, L) (0 where its lattice rules a label out)."""
    if features.lattice is None:
        return forward_backward(*features.chain_scores(i, w))[1]
    lo, hi = features.parts(i)
    aptr, alab, pairs = features.lattice_of(i)
    _, mu = lattice_marginals(features.scores(lo, hi, w), aptr, alab, pairs, features.n_labels)
    n = aptr.shape[0] - 1
    node = np.zeros((n, features.n_labels))
    node[np.repeat(np.arange(n), np.diff(aptr)), alab] = mu[:alab.shape[0]]
    return node


def chain_weights(weights: np.ndarray, n_features: int) -> np.ndarray:
    """``weights`` as a chain model keeps them: contiguous float64, one per feature, finite.

    Raises:
        ValueError: another shape, or weights that are not finite.
    """
    weights = np.ascontiguousarray(weights, dtype=np.float64)
    if weights.shape != (n_features,):
        raise ValueError(f"{weights.shape} weights for {n_features} features")
    if not np.all(np.isfinite(weights)):
        raise ValueError("weights must be finite")
    return weights


class CRFModel:
    """A trained linear-chain CRF: featurizer + weights (the ``crf`` kind of a :class:`tagger.Tagger`)."""

    kind = KIND

    def __init__(self, featurizer: ChainFeaturizer, weights: np.ndarray):
        self.featurizer = featurizer
        self.weights = chain_weights(weights, featurizer.n_features)

    @property
    def labels(self) -> list[str]:
        return self.featurizer.labels

    @property
    def use_pos(self) -> bool:
        return self.featurizer.use_pos

    def predict(self, tokens_list: list[list[str]], pos_list: list[list[str]] | None = None) -> list[list[str]]:
        """The Viterbi labels of every sentence."""
        f = self.featurizer
        paths = decode_ids(f.features(f.encode(tokens_list, pos_list)), self.weights)
        return [[f.labels[k] for k in path] for path in paths]

    def marginals(self, tokens: list[str], pos: list[str] | None = None) -> np.ndarray:
        """p(y_t = label) for every token, shape (n, L), columns in the order of ``labels``."""
        if not tokens:
            return np.zeros((0, self.featurizer.n_labels))
        f = self.featurizer
        feats = f.features(f.encode([tokens], [pos] if pos is not None else None))
        return token_marginals(feats, 0, self.weights)

    def predict_marginals(self, tokens_list: list[list[str]], pos_list: list[list[str]] | None = None
                          ) -> tuple[list[list[str]], list[np.ndarray]]:
        """The Viterbi labels of every sentence and its tokens' label marginals p(y_t = label | sentence), (n,
        L) each (forward-backward), from one encoding and the same chain scores."""
        f = self.featurizer
        feats = f.features(f.encode(tokens_list, pos_list))
        labels, marginals = [], []
        for i in range(feats.n_examples):
            if feats.length(i) == 0:
                labels.append([])
                marginals.append(np.zeros((0, f.n_labels)))
                continue
            labels.append([f.labels[k] for k in decode_one(feats, i, self.weights)])
            marginals.append(token_marginals(feats, i, self.weights))
        return labels, marginals

    def to_arrays(self) -> tuple[dict[str, np.ndarray], dict]:
        f = self.featurizer
        pred_bytes, pred_offsets = pack_strings(f.predicates)
        arrays = {"weights": self.weights, "pred_bytes": pred_bytes, "pred_offsets": pred_offsets,
                  "lab_ptr": f.lab_ptr, "lab_labels": f.lab_labels, "trans_pairs": f.trans_pairs}
        if f.dictionary is not None:
            forms, ptr, ids = f.dictionary
            dict_bytes, dict_offsets = pack_strings(forms)
            arrays.update(dict_bytes=dict_bytes, dict_offsets=dict_offsets, dict_ptr=ptr, dict_label=ids)
        meta = {"labels": f.labels, **f.config()}
        return arrays, meta

    @classmethod
    def from_arrays(cls, arrays: dict[str, np.ndarray], meta: dict) -> "CRFModel":
        """Rebuild a model; raises ValueError / KeyError / TypeError on inconsistent input (labels that are
        not distinct non-empty strings without whitespace, a missing, unexpected or mistyped array, weights that
        could overflow a score (:func:`~egnlp.base.files.check_weights`), ...)."""
        if not isinstance(meta["use_pos"], bool) or not isinstance(meta["all_transitions"], bool):
            raise ValueError("use_pos and all_transitions must be true or false")
        check_labels(meta["labels"])
        min_count = meta.get("dictionary", 0)  # models from before tag dictionaries have none
        if isinstance(min_count, bool) or not isinstance(min_count, int) or min_count < 0:
            raise ValueError("the dictionary's least count must be a whole number >= 0")
        check_arrays(arrays, {**ARRAYS, **DICTIONARY_ARRAYS} if min_count else ARRAYS)
        check_weights(arrays["weights"])
        if arrays["trans_pairs"].shape[1] != 2:
            raise ValueError(f"trans_pairs of shape {arrays['trans_pairs'].shape}, expected (n, 2)")
        use_pos = meta["use_pos"]
        if meta["predicates"] != predicates_fingerprint(use_pos):
            raise ValueError("the model was trained with other observation predicates "
                             "(features/predicates.py changed); retrain it")
        featurizer = ChainFeaturizer(meta["labels"], unpack_strings(arrays["pred_bytes"], arrays["pred_offsets"]),
                                     arrays["lab_ptr"], arrays["lab_labels"], arrays["trans_pairs"],
                                     use_pos=use_pos, all_transitions=meta["all_transitions"],
                                     dictionary=(unpack_strings(arrays["dict_bytes"], arrays["dict_offsets"]),
                                                 arrays["dict_ptr"], arrays["dict_label"]) if min_count else None,
                                     min_count=min_count)
        return cls(featurizer, arrays["weights"])
