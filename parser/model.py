"""The Parser model: features + weights + tree space; parse, save, load.

A model file is one ``.npz`` (numpy's zip of arrays, read with
``allow_pickle=False`` so loading never runs code) holding:

- ``weights`` (n_features,) float64;
- ``keys`` (uint64) and ``codes`` (int64): the feature alphabet;
- ``meta``: UTF-8 JSON bytes (uint8) with the format version, the model kind,
  the feature configuration, the tree space, and the training settings and
  final objective values.

It is written to a temporary file beside the target and renamed, so a crash
never leaves a half-written model.
"""

from __future__ import annotations

import os
from typing import Any, Sequence

import numpy as np

from egnlp.corpora import Sentence
from egnlp.corpora.files import ModelError, read_npz, write_npz_atomic
from egnlp.features.arc_featurizer import ArcFeaturizer
from egnlp.features.arc_templates import TEMPLATES_VERSION, EncodedCorpus
from egnlp.parser.labeler import ArcLabeler
from egnlp.parser.trees import PROJECTIVE, check_root, tree_space

FORMAT_VERSION = 2  # 2: tag columns by name, the arc labeler
MODEL_KIND = "egnlp-parser"


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
        return heads, self.labeler.label(encoded, heads) if self.labeler is not None else None

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
        arrays, meta = read_npz(path, MODEL_KIND, FORMAT_VERSION)
        features = meta.get("features")
        if not isinstance(features, dict):
            raise ModelError(f"{path}: inconsistent model file (no feature configuration)")
        if features.get("templates") != TEMPLATES_VERSION:
            raise ModelError(f"{path}: model uses feature templates {features.get('templates')!r}, "
                             f"this egnlp has {TEMPLATES_VERSION!r}; retrain the model")
        try:
            featurizer = ArcFeaturizer(features["mode"], features["hash_bits"] or 22,
                                       use_lemma=features["use_lemma"], use_feats=features["use_feats"],
                                       tags=features["tags"],
                                       keys=arrays["keys"], codes=arrays["codes"])
            labels = meta.get("labels")
            labeler = ArcLabeler.from_arrays(labels, arrays) if labels is not None else None
            return cls(featurizer, arrays["weights"], meta["root"], meta.get("info"), labeler, meta["tree"])
        except (KeyError, ValueError, TypeError) as exc:
            raise ModelError(f"{path}: inconsistent model file ({exc})") from None
