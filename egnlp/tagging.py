"""The public Python API for taggers: train a linear-chain CRF POS tagger or chunker.

    from nltk.corpus import conll2000
    from egnlp.tagging import train_crf_tagger
    sents = conll2000.tagged_sents("train.txt")
    tokens = [[w for w, _ in s] for s in sents]
    tags = [[t for _, t in s] for s in sents]
    tagger, result = train_crf_tagger(tokens, tags)
    tagger.tag("The economy grew. Prices fell.")

:func:`train_maxent_tagger` trains the maxent tagger (``egnlp.tagger.maxent``) the
same way.  Any trainer of :mod:`egnlp.training.registry` works on the CRF's structured
problem (:class:`egnlp.tagger.problem.TaggingProblem` over the features of
:mod:`egnlp.features.chain`); the default is online EG on the log-linear dual (``eg-ll``).
"""

from __future__ import annotations

import dataclasses
import time
from typing import Callable, Sequence

import numpy as np

from egnlp.features.chain import ChainFeaturizer
from egnlp.tagger.crf import CRFModel, decode_ids
from egnlp.tagger.model import Tagger
from egnlp.tagger.problem import TaggingProblem
from egnlp.training.records import Callback, TrainResult
from egnlp.training.registry import get_trainer

# Regularisation constant of the CRF tagger when none is given (the primal is
# sum_i loss_i + C/2 ||w||^2, a sum over sentences).  Chosen by a dev sweep on
# conll2000 POS with eg-ll (annealed, tol 1e-3), dev = train.txt sentences 8000-8499:
#   1,000 train sentences, 30 passes: C = 0.3 / 1 / 3 / 10 / 30 -> 94.67 / 94.94 / 94.57 / 93.25 / 90.38 %
#   3,000 train sentences, 45 passes: C = 0.5 / 1 / 2 / 4      -> 96.07 / 96.85 / 96.70 / 96.38 %
# Smaller C converges more slowly (C = 1 on 3,000 sentences: relative gap 0.13
# after 45 passes; C = 2: 1e-3; C = 4: converged after 37).
DEFAULT_C = 1.0

# A per-pass scorer for dev records: given the featurizer fitted on the training data,
# a function of the weights (n_features,) returning the score recorded after every pass.
DevScorer = Callable[[ChainFeaturizer], Callable[[np.ndarray], float]]


def accuracy_scorer(featurizer: ChainFeaturizer, tokens: Sequence[Sequence[str]], labels: Sequence[Sequence[str]],
                    pos: Sequence[Sequence[str]] | None = None):
    """A ``w -> token accuracy (%)`` function over labelled sentences, for dev records.

    A dev label never seen in training counts as an error (id -1 matches no prediction).
    """
    features = featurizer.features(featurizer.encode(tokens, pos if featurizer.use_pos else None))
    index = featurizer.label_index
    gold = [np.array([index.get(lab, -1) for lab in seq], dtype=np.int64) for seq in labels]
    total = sum(len(g) for g in gold)

    def score(w: np.ndarray) -> float:
        correct = sum(int((p == g).sum()) for p, g in zip(decode_ids(features, w), gold))
        return 100.0 * correct / max(total, 1)

    return score


def label_columns(sentences: Sequence, column: str = "pos"):
    """(tokens, labels, POS input or None) of tagged sentences: a chunker's labels are the
    chunk column and it reads the POS column; a POS tagger reads words only."""
    tokens = [s.forms for s in sentences]
    if column == "chunk":
        return tokens, [s.chunks for s in sentences], [s.pos for s in sentences]
    return tokens, [s.pos for s in sentences], None


def _non_empty(tokens_list, labels, pos):
    """The training sentences that have tokens (as lists), after checking the three inputs line up."""
    if len(labels) != len(tokens_list) or (pos is not None and len(pos) != len(labels)):
        raise ValueError("tokens, labels (and POS) need one entry per training sentence")
    keep = [s for s, toks in enumerate(tokens_list) if len(toks)]
    if not keep:
        raise ValueError("no non-empty training sentences")
    return ([list(tokens_list[s]) for s in keep], [list(labels[s]) for s in keep],
            [list(pos[s]) for s in keep] if pos is not None else None)


def train_crf_tagger(train_sentences_tokens: Sequence[Sequence[str]], labels: Sequence[Sequence[str]],
                     pos: Sequence[Sequence[str]] | None = None, *, dev: tuple | None = None,
                     dev_scorer: DevScorer | None = None, trainer: str = "eg-ll", column: str | None = None,
                     all_transitions: bool = False, callbacks: Sequence[Callback] = (),
                     **settings) -> tuple[Tagger, TrainResult]:
    """Train a linear-chain CRF on tokenised sentences and their labels.

    ``pos`` (one POS tag per token) makes a chunker that reads POS tags
    (``use_pos``); without it the tagger reads words only.  ``dev`` is
    ``(tokens, labels)`` or ``(tokens, labels, pos)``, scored (token
    accuracy, %, :func:`accuracy_scorer`) after every pass.  ``dev_scorer``
    instead supplies the caller's own per-pass score: it is called once with
    the featurizer fitted on the training sentences and returns the
    ``w -> score`` function recorded as the dev score after every pass (give
    at most one of ``dev`` and ``dev_scorer``).  ``column`` is the Tagger's
    label column (default ``chunk`` with POS input, ``pos`` otherwise).
    ``settings`` go to the trainer's config; C defaults to
    :data:`DEFAULT_C`.  Empty sentences are left out of training (they carry
    no information).
    """
    if dev is not None and dev_scorer is not None:
        raise ValueError("give dev or dev_scorer, not both")
    tokens, gold, pos_kept = _non_empty(train_sentences_tokens, labels, pos)
    spec = get_trainer(trainer)
    fields = {f.name for f in dataclasses.fields(spec.config)}
    if "C" in fields:
        settings.setdefault("C", DEFAULT_C)
    config = spec.config(**settings)

    start = time.perf_counter()
    featurizer = ChainFeaturizer.fit(tokens, gold, pos_kept, all_transitions=all_transitions)
    problem = TaggingProblem.from_sentences(featurizer, tokens, gold, pos_kept)
    extract_seconds = time.perf_counter() - start
    dev_score = dev_scorer(featurizer) if dev_scorer is not None else None
    if dev is not None:
        if len(dev) not in (2, 3):
            raise ValueError("dev must be (tokens, labels) or (tokens, labels, pos)")
        dev_tokens, dev_labels = dev[0], dev[1]
        dev_pos = dev[2] if len(dev) == 3 else None
        if featurizer.use_pos and dev_pos is None:
            raise ValueError("a chunker's dev set needs POS tags: (tokens, labels, pos)")
        dev_score = accuracy_scorer(featurizer, dev_tokens, dev_labels, dev_pos)
    result = spec.fit(problem, config=config, dev=dev_score, callbacks=tuple(callbacks))
    pf = problem.features
    info = {
        "trainer": trainer,
        "config": dataclasses.asdict(config),
        "train_sentences": len(tokens),
        "skipped_empty": len(train_sentences_tokens) - len(tokens),
        "train_tokens": int(pf.encoded.tok_ptr[-1]),
        "n_labels": featurizer.n_labels,
        "n_features": pf.n_features,
        "n_transition_parts": pf.n_transitions,
        "n_parts": pf.n_parts,
        "extract_seconds": extract_seconds,
        "converged": result.converged,
        "final": result.final.as_dict(),
    }
    vocabulary = {w for toks in tokens for w in toks}
    return Tagger(CRFModel(featurizer, result.weights), column, info, vocabulary), result


def train_maxent_tagger(train_sentences_tokens: Sequence[Sequence[str]], labels: Sequence[Sequence[str]],
                        pos: Sequence[Sequence[str]] | None = None, *, dev: tuple | None = None,
                        trainer: str = "cd", column: str | None = None, callbacks: Sequence = (),
                        **settings) -> tuple[Tagger, list]:
    """Train a maxent tagger (:func:`egnlp.tagger.maxent.train_maxent`) and wrap it in a :class:`Tagger`.

    ``pos`` makes a chunker, as for :func:`train_crf_tagger`; ``dev`` is
    ``(tokens, labels)`` or ``(tokens, labels, pos)``; ``settings`` (sigma2,
    max_passes, tol, seed, beam, ...) go to ``train_maxent``.  Returns the
    Tagger (with its training vocabulary) and the per-pass records.
    """
    from egnlp.tagger.maxent import train_maxent

    tokens, gold, pos_kept = _non_empty(train_sentences_tokens, labels, pos)
    if dev is not None and len(dev) == 2:
        dev = (dev[0], dev[1], None)
    start = time.perf_counter()
    model, history = train_maxent(tokens, gold, pos_kept, trainer=trainer, dev=dev, callbacks=tuple(callbacks),
                                  **settings)
    info = {"trainer": trainer, "settings": dict(settings), "train_sentences": len(tokens),
            "skipped_empty": len(train_sentences_tokens) - len(tokens),
            "train_tokens": sum(len(t) for t in tokens), "n_labels": len(model.labels),
            "seconds": time.perf_counter() - start, **dict(getattr(model, "info", {}) or {})}
    if history:
        info["final"] = history[-1].as_dict()
    vocabulary = {w for toks in tokens for w in toks}
    return Tagger(model, column, info, vocabulary), history
