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
from egnlp.tagger.chain_inference import forward_backward, viterbi

KIND = "crf"
# The arrays of a CRF in a model file: name -> (dtype, number of dimensions).
ARRAYS = {"weights": ("<f8", 1), "pred_bytes": ("|u1", 1), "pred_offsets": ("<i8", 1), "lab_ptr": ("<i8", 1),
          "lab_labels": ("<i4", 1), "trans_pairs": ("<i8", 2)}


def decode_ids(features: ChainFeatures, w: np.ndarray) -> list[np.ndarray]:
    """Viterbi label ids of every example of ``features`` under weights ``w`` (n_features,):
    one int64 array (n,) per sentence (empty sentences give empty arrays)."""
    out = []
    for i in range(features.n_examples):
        if features.length(i) == 0:
            out.append(np.zeros(0, dtype=np.int64))
        else:
            out.append(viterbi(*features.chain_scores(i, w))[0])
    return out


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
        return forward_backward(*feats.chain_scores(0, self.weights))[1]

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
            scores = feats.chain_scores(i, self.weights)
            labels.append([f.labels[k] for k in viterbi(*scores)[0]])
            marginals.append(forward_backward(*scores)[1])
        return labels, marginals

    def to_arrays(self) -> tuple[dict[str, np.ndarray], dict]:
        f = self.featurizer
        pred_bytes, pred_offsets = pack_strings(f.predicates)
        arrays = {"weights": self.weights, "pred_bytes": pred_bytes, "pred_offsets": pred_offsets,
                  "lab_ptr": f.lab_ptr, "lab_labels": f.lab_labels, "trans_pairs": f.trans_pairs}
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
        check_arrays(arrays, ARRAYS)
        check_weights(arrays["weights"])
        if arrays["trans_pairs"].shape[1] != 2:
            raise ValueError(f"trans_pairs of shape {arrays['trans_pairs'].shape}, expected (n, 2)")
        use_pos = meta["use_pos"]
        if meta["predicates"] != predicates_fingerprint(use_pos):
            raise ValueError("the model was trained with other observation predicates "
                             "(features/predicates.py changed); retrain it")
        featurizer = ChainFeaturizer(meta["labels"], unpack_strings(arrays["pred_bytes"], arrays["pred_offsets"]),
                                     arrays["lab_ptr"], arrays["lab_labels"], arrays["trans_pairs"],
                                     use_pos=use_pos, all_transitions=meta["all_transitions"])
        return cls(featurizer, arrays["weights"])
