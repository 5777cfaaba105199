"""The public Python API: train a parser, parse, evaluate.

    from egnlp.api import train_parser
    from corpora import load_dataset
    parser, result = train_parser(load_dataset("es", "train"), load_dataset("es", "dev"), root="single")
    trees = parser.parse(load_dataset("es", "test"))
"""

from __future__ import annotations

import dataclasses
import time
from typing import Sequence

import numpy as np

from corpora import Sentence, guess_root
from features.arcs import ArcFeaturizer
from parser.eisner import eisner_argmax
from parser.model import Parser
from parser.problem import ParsingProblem
from training.records import Callback, TrainResult
from training.registry import get_trainer


def uas_scorer(featurizer: ArcFeaturizer, sentences: Sequence[Sentence], root: str):
    """A ``w -> UAS`` function over ``sentences`` (punctuation counted), for dev records."""
    pf = featurizer.part_features(featurizer.encode(sentences))
    gold = [np.asarray(s.heads) for s in sentences]
    total = sum(len(g) for g in gold)

    def score(w: np.ndarray) -> float:
        correct = 0
        for s, g in enumerate(gold):
            lo, hi = pf.parts(s)
            k = len(g) + 1
            heads = eisner_argmax(pf.scores(lo, hi, w).reshape(k, k), root=root)
            correct += int((heads[1:] == g).sum())
        return 100.0 * correct / max(total, 1)

    return score


def train_parser(train: Sequence[Sentence], dev: Sequence[Sentence] | None = None, *,
                 trainer: str = "eg-ll", root: str | None = None, feature_mode: str = "alphabet",
                 hash_bits: int = 22, callbacks: Sequence[Callback] = (), **settings) -> tuple[Parser, TrainResult]:
    """Train a first-order projective parser on ``train`` (sentences with heads).

    ``root`` is "single" or "multi" (default: "single" when every training
    tree has one root child); ``settings`` go to the trainer's config (for
    ``eg-ll``: C, max_passes, tol, seed, eta_init, order, max_seconds).
    The dev set, if given, is scored (UAS) after every pass.
    """
    if not train:
        raise ValueError("no training sentences")
    missing = [i for i, s in enumerate(train) if s.heads is None]
    if missing:
        raise ValueError(f"training sentence {missing[0] + 1} has no heads")
    spec = get_trainer(trainer)
    config = spec.config(**settings)
    root = root or guess_root(train)
    start = time.perf_counter()
    featurizer = ArcFeaturizer.for_corpus(train, feature_mode, hash_bits)
    encoded = featurizer.encode(train)
    heads = [s.heads for s in train]
    featurizer.fit(encoded, heads)
    problem = ParsingProblem(featurizer.part_features(encoded), heads, root)
    extract_seconds = time.perf_counter() - start
    dev_score = uas_scorer(featurizer, dev, root) if dev else None
    result = spec.fit(problem, config=config, dev=dev_score, callbacks=tuple(callbacks))
    final = result.final
    info = {
        "trainer": trainer,
        "config": dataclasses.asdict(config),
        "train_sentences": len(train),
        "n_features": featurizer.n_features,
        "feature_entries": int(problem.features.feat_ids.size),
        "extract_seconds": extract_seconds,
        "converged": result.converged,
        "final": final.as_dict(),
    }
    return Parser(featurizer, result.weights, root, info), result
