"""Training a tokenizer from a CoNLL-U file: the text under the file, its characters' labels, EG.

    from egnlp.tokenizer_training import train_tokenizer
    tokenizer, result = train_tokenizer("pt_bosque-ud-test.conllu")
    tokenizer.tokenize("Disse-lhe o Sr. Silva: vou às 9h30. Depois volto.")

The file's paragraphs are rebuilt from its tokens (:func:`egnlp.corpora.ud_text.paragraphs`, each
sentence checked against its ``# text``), each non-whitespace character labelled
(:func:`egnlp.tagger.tokenizer_model.paragraph_labels`), each paragraph cut into examples of whole
sentences with at least ``example_chars`` characters (the features still read across the cuts:
they are made from the whole paragraph), and the chains become a
:class:`~egnlp.tagger.tagging_problem.TaggingProblem` over the features of
:mod:`egnlp.features.char_features`, trained by any structured trainer of
:mod:`egnlp.training.registry`: online EG on the log-linear dual by default (Collins et al. 2008,
Fig. 3 and the adaptive rate of Sec. 7), as the CRF tagger is. The settings are a
:class:`~egnlp.settings.TokenizerSettings`; ``seed`` makes the trainer's order, the only random
choice, repeatable.
"""

from __future__ import annotations

import dataclasses
import os
import time
from typing import Any, Sequence

import numpy as np

from egnlp.base.errors import InputError
from egnlp.corpora import Sentence, read_conll
from egnlp.corpora.ud_text import Paragraph, paragraphs
from egnlp.features.char_features import SENTENCE_END, CharFeaturizer, char_keys
from egnlp.settings import TokenizerSettings
from egnlp.tagger.tagging_problem import TaggingProblem
from egnlp.tagger.tokenizer_model import (Segmentation, Tokenizer, paragraph_labels, segmentation_f1, spaces_in,
                                          whole_tokens)
from egnlp.training.records import Callback, TrainResult, fit_or_best

Corpus = "str | os.PathLike[str] | Sequence[Sentence] | Sequence[Paragraph]"


def corpus_paragraphs(corpus: Any) -> list[Paragraph]:
    """The paragraphs of a CoNLL-U file (a path), of sentences, or the paragraphs given.

    Raises:
        CorpusError: a file that cannot be read, or whose tokens do not give its ``# text``.
        InputError: no paragraphs.
    """
    if isinstance(corpus, (str, os.PathLike)):
        corpus = read_conll(corpus, require_heads=False)
    items = list(corpus)
    if items and all(isinstance(item, Paragraph) for item in items):
        found = items
    elif all(isinstance(item, Sentence) for item in items):
        found = paragraphs(items)
    else:
        raise InputError("a tokenizer trains on a CoNLL-U file, Sentences or Paragraphs")
    if not found:
        raise InputError("no sentences to train a tokenizer on")
    return found


def example_cuts(labels: Sequence[np.ndarray], min_chars: int) -> np.ndarray:
    """The flat position numbers where the training examples start, and the total at the end: each
    paragraph cut after the first sentence end that gives an example at least ``min_chars`` positions."""
    cuts, base = [0], 0
    for y in labels:
        start = 0
        for end in np.flatnonzero(y == SENTENCE_END) + 1:
            if end - start >= min_chars and end < len(y):
                cuts.append(base + int(end))
                start = int(end)
        base += len(y)
        if cuts[-1] != base:
            cuts.append(base)
    return np.array(cuts, dtype=np.int64)


def f1_scorer(featurizer: CharFeaturizer, dev: Sequence[Paragraph], spaces_in_tokens: bool):
    """A ``w -> score`` function for dev records: the mean of the token and sentence F1 (%) of the dev
    paragraphs' text tokenized with weights ``w``."""
    text = "\n\n".join(p.text for p in dev)
    gold = Segmentation.of_paragraphs(dev)

    def score(w: np.ndarray) -> float:
        found = segmentation_f1(gold, Tokenizer(featurizer, w, spaces_in_tokens=spaces_in_tokens).segmentation(text))
        return (found["tokens"] + found["sentences"]) / 2

    return score


def train_tokenizer(corpus: Any, settings: TokenizerSettings | None = None, *, dev: Any = None,
                    callbacks: Sequence[Callback] = (), data: str | None = None,
                    **options: Any) -> tuple[Tokenizer, TrainResult]:
    """Train a tokenizer (see the module docstring) on ``corpus``: a CoNLL-U file, its Sentences or their
    Paragraphs. ``dev`` (the same kinds) is scored after every pass (the mean of token and sentence F1,
    %; the model is the last pass's all the same). ``settings`` or its fields as keyword ``options``
    (any other setting of the trainer's config too); ``data`` names the training data in ``info``.

    Raises:
        CorpusError: as :func:`corpus_paragraphs`.
        SettingsError: settings that cannot be used.
    """
    settings = TokenizerSettings.build(settings, **options)
    config = settings.trainer_config()
    start = time.perf_counter()
    train = corpus_paragraphs(corpus)
    texts = [p.text for p in train]
    labels = [paragraph_labels(p) for p in train]
    found = char_keys(texts)
    featurizer = CharFeaturizer.fit(found, labels)
    cuts = example_cuts(labels, settings.example_chars)
    problem = TaggingProblem(featurizer.features(featurizer.encode(found, cuts)),
                             [y for y in np.split(np.concatenate(labels), cuts[1:-1])])
    spaced = spaces_in(train)
    extract_seconds = time.perf_counter() - start
    dev_score = f1_scorer(featurizer, corpus_paragraphs(dev), spaced) if dev is not None else None
    result, _ = fit_or_best(settings.spec.fit, problem, config=config, dev=dev_score, callbacks=tuple(callbacks))
    pf = problem.features
    info = {"trainer": settings.trainer, "config": dataclasses.asdict(config), "settings": settings.as_dict(),
            "data": data, "train_paragraphs": len(train), "train_sentences": sum(len(p.sentences) for p in train),
            "train_tokens": sum(len(p.tokens) for p in train), "train_characters": int(found.pos_ptr[-1]),
            "examples": pf.n_examples, "n_features": pf.n_features, "n_parts": pf.n_parts,
            "extract_seconds": extract_seconds, "converged": result.converged, "final": result.final.as_dict()}
    tokenizer = Tokenizer(featurizer, result.weights, spaces_in_tokens=spaced, whole=whole_tokens(train), info=info)
    return tokenizer, result
