"""The Parser model: features + weights + tree space; parse, save, load.

A model file is one ``.npz`` (numpy's zip of arrays, read with
``allow_pickle=False`` so loading never runs code) holding:

- ``weights`` (n_features,) float64;
- ``keys`` (uint64) and ``codes`` (int64): the feature alphabet;
- ``labeler_*``: the arc labeler's arrays, when the parser has one (its
  labels are in the metadata);
- ``meta``: UTF-8 JSON bytes (uint8) with the format version, the model kind,
  the feature configuration, the tree space, the labels, the dtype and shape
  of every array, and the training settings and final objective values.

The file carries a checksum of all its bytes, and loading checks every
array against its record and the metadata before using it
(:mod:`egnlp.corpora.files`). It is written to a temporary file beside the
target and renamed, so a crash never leaves a half-written model.
"""

from __future__ import annotations

import os
from typing import Any, Sequence

import numpy as np

from egnlp.corpora import Sentence
from egnlp.corpora.files import ModelError, check_arrays, check_labels, read_npz, write_npz_atomic
from egnlp.features.arc_featurizer import ArcFeaturizer
from egnlp.features.arc_templates import TEMPLATES_VERSION, EncodedCorpus
from egnlp.parser.labeler import ArcLabeler
from egnlp.parser.trees import PROJECTIVE, check_root, tree_space

FORMAT_VERSION = 3  # 2: tag columns by name, the arc labeler; 3: a checksum and the arrays' records
MODEL_KIND = "egnlp-parser"
# The arrays of a parser file but the labeler's: name -> (dtype, number of dimensions).
ARRAYS = {"weights": ("<f8", 1), "keys": ("<u8", 1), "codes": ("<i8", 1)}
FEATURE_SETTINGS = {"templates": str, "mode": str, "hash_bits": int, "use_lemma": bool, "use_feats": bool,
                    "tags": str}


class Parser:
    """A first-order dependency parser, with a second-stage arc labeler when trained on labels.

    ``tree`` (projective, non-projective) and ``root`` (single, multi) are the
    tree space it predicts in (:mod:`egnlp.parser.trees`); ``labeler`` (an
    :class:`~egnlp.parser.labeler.ArcLabeler`, or None for an unlabeled
    parser) gives every predicted arc its DEPREL.
    """

    def __init__(self, featurizer: ArcFeaturizer, weights: np.ndarray, root: str = "multi",
                 info: dict[str, Any] | None = None, labeler: ArcLabeler | None = None, tree: str = PROJECTIVE):
        check_root(root)
        self.space = tree_space(tree)
        weights = np.array(weights, dtype=np.float64, order="C")  # a read-only copy of the caller's array
        if weights.shape != (featurizer.n_features,):
            raise ValueError(f"{weights.shape[0]} weights for {featurizer.n_features} features")
        weights.setflags(write=False)
        self.featurizer = featurizer
        self._weights = weights
        self.root = root
        self.info = dict(info or {})
        self.labeler = labeler
        self._slot_w: np.ndarray | None = None

    @property
    def tree(self) -> str:
        return self.space.name

    @property
    def weights(self) -> np.ndarray:
        """The feature weights (read-only: a parser with other weights is a new ``Parser``)."""
        return self._weights

    def _slot_weights(self) -> np.ndarray:
        # The weights in the scorer's layout, built on the first parse (read-only weights keep it valid).
        if self._slot_w is None:
            self._slot_w = self.featurizer.slot_weights(self.weights)
        return self._slot_w

    def predict_heads(self, sentences: Sequence[Sentence]) -> list[list[int]]:
        """The best tree of each sentence as heads of words 1..n (0 = root)."""
        return self._heads(self.featurizer.encode(sentences))

    def _heads(self, encoded: EncodedCorpus) -> list[list[int]]:
        slot_w = self._slot_weights()
        out = []
        for s in range(len(encoded)):
            heads = self.space.argmax(self.featurizer.arc_scores(encoded, s, self.weights, slot_w), root=self.root)
            out.append(heads[1:].tolist())
        return out

    def predict(self, sentences: Sequence[Sentence]) -> tuple[list[list[int]], list[list[str]] | None]:
        """Heads of every sentence's best tree, and the labels of its arcs (None without a labeler)."""
        encoded = self.featurizer.encode(sentences)
        heads = self._heads(encoded)
        return heads, self.labeler.label(sentences, encoded, heads) if self.labeler is not None else None

    def parse(self, sentences: Sequence[Sentence]) -> list[Sentence]:
        """Copies of ``sentences`` with predicted heads and labels (DEPREL ``_`` without a labeler)."""
        heads, labels = self.predict(sentences)
        return [s.with_heads(h, labels[k] if labels is not None else None)
                for k, (s, h) in enumerate(zip(sentences, heads))]

    def save(self, path: str | os.PathLike[str]) -> None:
        meta = {
            "kind": MODEL_KIND,
            "format_version": FORMAT_VERSION,
            "features": self.featurizer.config(),
            "root": self.root,
            "tree": self.tree,
            "labels": self.labeler.labels if self.labeler is not None else None,
            "info": self.info,
        }
        arrays = {"weights": self.weights, "keys": self.featurizer.keys, "codes": self.featurizer.codes}
        if self.labeler is not None:
            arrays.update(self.labeler.arrays())
        write_npz_atomic(path, arrays, meta)

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> "Parser":
        """Read a parser file (see the module docstring).

        Raises:
            ModelError: any file that is not a parser model of this format, or whose contents do not agree.
        """
        arrays, meta = read_npz(path, MODEL_KIND, FORMAT_VERSION)
        features = meta.get("features")
        if not isinstance(features, dict):
            raise ModelError(f"{path}: inconsistent model file (no feature configuration)")
        if features.get("templates") != TEMPLATES_VERSION:
            raise ModelError(f"{path}: model uses feature templates {str(features.get('templates'))[:40]!r}, "
                             f"this egnlp has {TEMPLATES_VERSION!r}; retrain the model")
        try:
            if set(features) != set(FEATURE_SETTINGS) or any(
                    type(features[name]) is not kind for name, kind in FEATURE_SETTINGS.items()):
                raise ValueError("malformed feature configuration")
            for name in ("root", "tree"):
                if not isinstance(meta.get(name), str):
                    raise ValueError(f"no {name} in the metadata")
            info = meta.get("info")
            if not isinstance(info, dict):
                raise ValueError("'info' is not a JSON object")
            labels = meta.get("labels")
            if labels is not None:
                check_labels(labels, "arc labels")
            check_arrays({k: v for k, v in arrays.items() if not k.startswith("labeler_")}, ARRAYS)
            if not np.all(np.isfinite(arrays["weights"])):
                raise ValueError("weights that are not finite")
            featurizer = ArcFeaturizer(features["mode"], features["hash_bits"] or 22,
                                       use_lemma=features["use_lemma"], use_feats=features["use_feats"],
                                       tags=features["tags"],
                                       keys=arrays["keys"], codes=arrays["codes"])
            labeler_arrays = {k: v for k, v in arrays.items() if k.startswith("labeler_")}
            if labels is None and labeler_arrays:
                raise ValueError(f"unexpected array {next(iter(labeler_arrays))!r}")
            labeler = ArcLabeler.from_arrays(labels, labeler_arrays) if labels is not None else None
            return cls(featurizer, arrays["weights"], meta["root"], info, labeler, meta["tree"])
        except (KeyError, ValueError, TypeError) as exc:
            raise ModelError(f"{path}: inconsistent model file ({exc})") from None
