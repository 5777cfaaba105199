"""The public Python API: train a parser, parse, evaluate.

    from egnlp.api import train_parser
    from egnlp.corpora import load_dataset
    parser, result = train_parser(load_dataset("es", "train"), load_dataset("es", "dev"), root="single")
    trees = parser.parse(load_dataset("es", "test"))
"""

from __future__ import annotations

import dataclasses
import time
from typing import Sequence

import numpy as np

from egnlp.corpora import Sentence, guess_root
from egnlp.features.arc_featurizer import ArcFeaturizer
from egnlp.parser.eisner import eisner_argmax
from egnlp.parser.model import Parser
from egnlp.parser.problem import ParsingProblem
from egnlp.training.path import PathPoint, regularization_path
from egnlp.training.records import Callback, TrainResult
from egnlp.training.registry import get_trainer, make_config


# The parser's defaults, chosen on dev.  Max-margin EG at C = 100 (the best C of
# Collins et al. 2008, Sec. 8, for max-margin parsing) against log-linear EG at
# C = 20 (the best of a warm-started sweep on es dev): dev UAS 80.90 against
# 80.14 on es, 88.76 against 87.1 on wsj.
DEFAULT_PARSER_TRAINER = "eg-mm"
DEFAULT_PARSER_C = {"ll": 20.0, "mm": 100.0}


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


def build_parsing_problem(train: Sequence[Sentence], root: str, feature_mode: str = "alphabet",
                          hash_bits: int = 22) -> tuple[ArcFeaturizer, ParsingProblem, float]:
    """Fit the arc features on ``train`` and compile its parsing problem; also the seconds it took."""
    missing = [i for i, s in enumerate(train) if s.heads is None]
    if missing:
        raise ValueError(f"training sentence {missing[0] + 1} has no heads")
    start = time.perf_counter()
    featurizer = ArcFeaturizer.for_corpus(train, feature_mode, hash_bits)
    encoded = featurizer.encode(train)
    heads = [s.heads for s in train]
    featurizer.fit(encoded, heads)
    problem = ParsingProblem(featurizer.part_features(encoded), heads, root)
    return featurizer, problem, time.perf_counter() - start


def train_parser(train: Sequence[Sentence], dev: Sequence[Sentence] | None = None, *,
                 trainer: str = DEFAULT_PARSER_TRAINER, root: str | None = None, feature_mode: str = "alphabet",
                 hash_bits: int = 22, callbacks: Sequence[Callback] = (), state: dict | None = None, **settings) -> tuple[Parser, TrainResult]:
    """Train a first-order projective parser on ``train`` (sentences with heads).

    ``root`` is "single" or "multi" (default: "single" when every training
    tree has one root child); ``settings`` go to the trainer's config (for
    EG: C, max_passes, tol, seed, eta_init, order, max_seconds, anneal; see
    ``egnlp.training.registry.TRAINERS`` for the others).  C defaults to
    :data:`DEFAULT_PARSER_C` of the trainer's objective.  ``state`` warm-starts
    the trainer.
    The dev set, if given, is scored (UAS) after every pass.
    """
    if not train:
        raise ValueError("no training sentences")
    spec = get_trainer(trainer)
    settings.setdefault("C", DEFAULT_PARSER_C[spec.objective])
    config = make_config(spec, **settings)
    root = root or guess_root(train)
    featurizer, problem, extract_seconds = build_parsing_problem(train, root, feature_mode, hash_bits)
    dev_score = uas_scorer(featurizer, dev, root) if dev else None
    result = spec.fit(problem, config=config, dev=dev_score, callbacks=tuple(callbacks), state=state)
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


def train_parser_path(train: Sequence[Sentence], dev: Sequence[Sentence], Cs: Sequence[float], *,
                      trainer: str = DEFAULT_PARSER_TRAINER, root: str | None = None, feature_mode: str = "alphabet",
                      hash_bits: int = 22, tol: float = 1e-3, callbacks: Sequence[Callback] = (), on_point=None,
                      **settings) -> tuple[Parser, list[PathPoint]]:
    """Train a warm-started path of C values (Collins et al. 2008, Sec. 7.1.2) and return the
    parser of the C with the best dev UAS, with the path's points."""
    if not train:
        raise ValueError("no training sentences")
    if not dev:
        raise ValueError("a regularization path picks C on dev data: give a dev set")
    spec = get_trainer(trainer)
    root = root or guess_root(train)
    featurizer, problem, extract_seconds = build_parsing_problem(train, root, feature_mode, hash_bits)
    points = regularization_path(problem, spec, list(Cs), dev=uas_scorer(featurizer, dev, root), tol=tol,
                                 callbacks=tuple(callbacks), on_point=on_point, **settings)
    best = max(points, key=lambda p: p.dev_uas)
    info = {
        "trainer": trainer,
        "C_path": [p.row() for p in points],
        "config": {"C": best.C, "tol": tol, **settings},
        "train_sentences": len(train),
        "n_features": featurizer.n_features,
        "extract_seconds": extract_seconds,
        "converged": best.converged,
        "final": best.result.final.as_dict(),
    }
    return Parser(featurizer, best.result.weights, root, info), points
