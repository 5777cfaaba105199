"""The public Python API for taggers: train a linear-chain CRF or a maxent POS tagger or chunker.

    from nltk.corpus import conll2000
    from egnlp.tagger_training import train_crf_tagger
    sents = conll2000.tagged_sents("train.txt")
    tokens = [[w for w, _ in s] for s in sents]
    tags = [[t for _, t in s] for s in sents]
    tagger, result = train_crf_tagger(tokens, tags)
    tagger.tag("The economy grew. Prices fell.")

Any structured trainer of :mod:`egnlp.training.registry` trains the CRF's
problem (:class:`egnlp.tagger.tagging_problem.TaggingProblem` over the features of
:mod:`egnlp.features.chain_features`); the default is online EG on the log-linear
dual (``eg-ll``).  :func:`train_maxent_tagger` builds the maxent tagger's
events (:mod:`egnlp.tagger.maxent`) into a
:class:`egnlp.training.maxent_problem.MaxentProblem` for the maxent trainers
(``cd`` by default).  Both return a :class:`~egnlp.tagger.tagger_model.Tagger`
and the run's :class:`~egnlp.training.records.TrainResult`.
"""

from __future__ import annotations

import dataclasses
import time
from typing import Callable, Sequence

import numpy as np

from egnlp.corpora import CorpusError, Sentence, dataset_task, load_sentences
from egnlp.corpora.sentence import BLANK
from egnlp.corpora.tagging import check_tags
from egnlp.features.chain_features import ChainFeaturizer
from egnlp.tagger.crf import CRFModel, decode_ids
from egnlp.tagger.maxent import MaxentModel, training_events
from egnlp.tagger.tagger_model import Tagger
from egnlp.tagger.tagging_problem import TaggingProblem
from egnlp.training.maxent_problem import MaxentProblem
from egnlp.training.records import Callback, TrainingInterrupted, TrainResult, fit_or_best
from egnlp.training.registry import MAXENT, Trainer, get_trainer, make_config

# Regularisation constant of the CRF tagger when none is given (the primal is
# sum_i loss_i + C/2 ||w||^2, a sum over sentences).  Chosen by a dev sweep on
# conll2000 POS with eg-ll (annealed, tol 1e-3), dev = train.txt sentences 8000-8499:
#   1,000 train sentences, 30 passes: C = 0.3 / 1 / 3 / 10 / 30 -> 94.67 / 94.94 / 94.57 / 93.25 / 90.38 %
#   3,000 train sentences, 45 passes: C = 0.5 / 1 / 2 / 4      -> 96.07 / 96.85 / 96.70 / 96.38 %
# Smaller C converges more slowly (C = 1 on 3,000 sentences: relative gap 0.13
# after 45 passes; C = 2: 1e-3; C = 4: converged after 37).
DEFAULT_C = 1.0

# The maxent tagger's prior variance when none is given (Huang et al. 2010, Sec. 5.1: sigma^2 = 10);
# its trainers take C = 1 / sigma^2.  Their pass limit and tolerance when none is given.
DEFAULT_SIGMA2 = 10.0
MAXENT_DEFAULTS = {"max_passes": 100, "tol": 1e-5}

# The tag columns a POS tagger trains on and their CoNLL-U names: POSTAG (CoNLL-X) is CoNLL-U's XPOS,
# CPOSTAG its UPOS.
TAG_COLUMNS = {"pos": "XPOS", "upos": "UPOS"}

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


def label_columns(sentences: Sequence[Sentence], column: str = "pos"):
    """(tokens, labels, POS input or None) of tagged sentences: a chunker's labels are the
    chunk column and it reads the POS column; a POS tagger (``pos``: POSTAG / XPOS, ``upos``:
    CPOSTAG / UPOS) reads words only."""
    tokens = [s.forms for s in sentences]
    if column == "chunk":
        return tokens, [s.chunks for s in sentences], [s.pos for s in sentences]
    return tokens, [s.labels(column) for s in sentences], None


def tagged_columns(sentences: Sequence[Sentence], column: str, what: str = "training"):
    """:func:`label_columns` of a training or dev set (``what``) after checking that every token
    carries the labels it needs: a tag in ``column`` (``_`` is no tag) and, for a chunker, a POS tag.

    Raises:
        CorpusError: no sentences, or a token without a needed tag (naming its file and line).
    """
    if not sentences:
        raise CorpusError(f"the {what} set has no sentences")
    role = "a chunker trains on these tags" if column == "chunk" else "a POS tagger trains on these tags"
    if column in TAG_COLUMNS:
        other = "upos" if column == "pos" else "pos"
        if _filled(sentences, other):
            role += f"; the {TAG_COLUMNS[other]} column is filled: train on it with --column {other}"
    check_tags(sentences, column, role)
    if column == "chunk":
        check_tags(sentences, "pos", "a chunker reads the POS column")
    return label_columns(sentences, column)


def _filled(sentences: Sequence[Sentence], column: str) -> bool:
    """Whether every token has a tag in ``column``."""
    return all(tag != BLANK for s in sentences for tag in s.labels(column) or (BLANK,))


def dataset_columns(name: str, split: str, limit: int | None = None):
    """(tokens, labels, POS input or None) of the non-empty sentences of a data set's split (the
    first ``limit`` of them), labelled with the data set's task column (chunks for a chunking set)."""
    sentences = [s for s in load_sentences(name, split) if len(s)][:limit]
    return label_columns(sentences, "chunk" if dataset_task(name) == "chunk" else "pos")


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
                     all_transitions: bool = False, callbacks: Sequence[Callback] = (), state: dict | None = None,
                     data: str | None = None, **settings) -> tuple[Tagger, TrainResult]:
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
    ``settings`` go to the trainer's config (see
    :mod:`egnlp.training.registry`); C defaults to :data:`DEFAULT_C`.
    ``state`` warm-starts the trainer.  Empty sentences are left out of
    training (they carry no information).  ``data`` names the training data
    in the model's ``info`` (with the trainer, its config and the data's
    size; ``egnlp model info`` prints them).  With a
    :class:`~egnlp.training.records.BestPass` among the ``callbacks``, Ctrl-C
    raises :class:`~egnlp.training.records.TrainingInterrupted` carrying the
    tagger of the best pass so far (both tagger trainers).
    """
    if dev is not None and dev_scorer is not None:
        raise ValueError("give dev or dev_scorer, not both")
    tokens, gold, pos_kept = _non_empty(train_sentences_tokens, labels, pos)
    spec = get_trainer(trainer)
    config = make_config(spec, **{"C": DEFAULT_C, **settings})
    dev_set = _dev_columns(dev, pos_kept is not None)

    start = time.perf_counter()
    featurizer = ChainFeaturizer.fit(tokens, gold, pos_kept, all_transitions=all_transitions)
    problem = TaggingProblem.from_sentences(featurizer, tokens, gold, pos_kept)
    extract_seconds = time.perf_counter() - start
    dev_score = dev_scorer(featurizer) if dev_scorer is not None else None
    if dev_set is not None:
        dev_score = accuracy_scorer(featurizer, *dev_set)
    result, interrupted = fit_or_best(spec.fit, problem, config=config, dev=dev_score, callbacks=tuple(callbacks),
                                      state=state)
    pf = problem.features
    info = _training_info(spec, config, result, tokens, len(train_sentences_tokens), extract_seconds,
                          data=_data(data, dev_set), all_transitions=all_transitions,
                          n_labels=featurizer.n_labels, n_features=pf.n_features,
                          n_transition_parts=pf.n_transitions, n_parts=pf.n_parts)
    return _finished(Tagger(CRFModel(featurizer, result.weights), column, info, _vocabulary(tokens)), result,
                     interrupted)


def train_maxent_tagger(train_sentences_tokens: Sequence[Sequence[str]], labels: Sequence[Sequence[str]],
                        pos: Sequence[Sequence[str]] | None = None, *, dev: tuple | None = None,
                        trainer: str = "cd", column: str | None = None, sigma2: float = DEFAULT_SIGMA2,
                        beam: int = 3, cutoff: int = 1, callbacks: Sequence[Callback] = (),
                        state: dict | None = None, data: str | None = None, **settings) -> tuple[Tagger, TrainResult]:
    """Train a Ratnaparkhi-style maxent tagger (:mod:`egnlp.tagger.maxent`) with a maxent trainer.

    The trainers (``cd``, the default: Huang et al. 2010, Algorithm 3;
    ``gis``, ``scgis``, ``lbfgs``) minimise sum_i -log P(y_i | x_i) +
    ||w||^2 / (2 sigma^2), i.e. C = 1 / ``sigma2``.  ``pos`` makes a
    chunker, as for :func:`train_crf_tagger`; ``dev`` is ``(tokens,
    labels)`` or ``(tokens, labels, pos)``, scored (token accuracy of beam
    decoding, %) after every pass; ``beam`` is the model's beam width;
    predicates seen in fewer than ``cutoff`` events are dropped.
    ``settings`` go to the trainer's config (max_passes and tol default to
    :data:`MAXENT_DEFAULTS`); ``data`` names the training data in the
    model's ``info``, as for :func:`train_crf_tagger`.  Returns the Tagger
    (with its training vocabulary) and the run's :class:`TrainResult`.
    """
    if "C" in settings:
        raise ValueError("the maxent tagger's regularisation is sigma2 (C = 1 / sigma2), not C")
    if not sigma2 > 0:
        raise ValueError(f"sigma2 must be positive, not {sigma2}")
    tokens, gold, pos_kept = _non_empty(train_sentences_tokens, labels, pos)
    spec = get_trainer(trainer, MAXENT)
    config = make_config(spec, **{**MAXENT_DEFAULTS, "C": 1.0 / sigma2, **settings})
    use_pos = pos_kept is not None
    dev_set = _dev_columns(dev, use_pos)

    start = time.perf_counter()
    events = training_events(tokens, gold, pos_kept, use_pos=use_pos, cutoff=cutoff)
    problem = MaxentProblem.from_events(events.ev_ptr, events.ev_pred, events.gold, len(events.labels),
                                        len(events.predicates))
    extract_seconds = time.perf_counter() - start
    model = MaxentModel(events.labels, events.predicates, problem.feat_ptr, problem.feat_label,
                        np.zeros(problem.n_features), use_pos=use_pos, beam=beam)
    dev_score = maxent_accuracy_scorer(model, *dev_set) if dev_set is not None else None
    result, interrupted = fit_or_best(spec.fit, problem, config=config, dev=dev_score, callbacks=tuple(callbacks),
                                      state=state)
    model.weights = np.ascontiguousarray(result.weights, dtype=np.float64)
    info = _training_info(spec, config, result, tokens, len(train_sentences_tokens), extract_seconds,
                          data=_data(data, dev_set), sigma2=sigma2, cutoff=cutoff, beam=beam,
                          n_labels=problem.n_labels, n_events=problem.n_events,
                          n_predicates=problem.n_predicates, n_features=problem.n_features)
    return _finished(Tagger(model, column, info, _vocabulary(tokens)), result, interrupted)


def _finished(tagger: Tagger, result: TrainResult, interrupted) -> tuple[Tagger, TrainResult]:
    """``(tagger, result)`` of a finished run; for a run Ctrl-C stopped (``interrupted``: its last pass),
    :class:`~egnlp.training.records.TrainingInterrupted` carrying the tagger of the best pass."""
    if interrupted is None:
        return tagger, result
    tagger.info["interrupted_after_pass"] = interrupted.passes
    raise TrainingInterrupted(tagger, result, interrupted)


def maxent_accuracy_scorer(model: MaxentModel, tokens: Sequence[Sequence[str]], labels: Sequence[Sequence[str]],
                           pos: Sequence[Sequence[str]] | None = None):
    """A ``w -> token accuracy (%)`` function of beam decoding with ``model``'s features and weights ``w``.

    A label never seen in training counts as an error.
    """
    encoded = model.encode(tokens, pos if model.use_pos else None)
    index = {y: k for k, y in enumerate(model.labels)}
    gold = np.array([index.get(y, -1) for seq in labels for y in seq], dtype=np.int64)

    def score(w: np.ndarray) -> float:
        return 100.0 * float(np.mean(model.decode_encoded(encoded, w)[0] == gold)) if gold.size else 0.0

    return score


def _dev_columns(dev: tuple | None, use_pos: bool) -> tuple | None:
    """``(tokens, labels, pos or None)`` of a dev set given as ``(tokens, labels)`` or ``(tokens, labels, pos)``."""
    if dev is None:
        return None
    if len(dev) not in (2, 3):
        raise ValueError("dev must be (tokens, labels) or (tokens, labels, pos)")
    pos = dev[2] if len(dev) == 3 else None
    if use_pos and pos is None:
        raise ValueError("a chunker's dev set needs POS tags: (tokens, labels, pos)")
    return dev[0], dev[1], pos


def _vocabulary(tokens: Sequence[Sequence[str]]) -> set[str]:
    """The word forms of the training sentences (for accuracy on unknown words)."""
    return {w for toks in tokens for w in toks}


def _data(name: str | None, dev: tuple | None) -> dict:
    """What a tagger model records of its data beyond the training sizes: the name given, the dev sentences."""
    return {"name": name, "dev_sentences": len(dev[0]) if dev is not None else 0}


def _training_info(spec: Trainer, config, result: TrainResult, tokens: Sequence[Sequence[str]], given: int,
                   extract_seconds: float, **sizes) -> dict:
    """What a tagger model records of its training: trainer, settings, data and problem sizes, outcome."""
    return {"trainer": spec.name, "config": dataclasses.asdict(config), "train_sentences": len(tokens),
            "skipped_empty": given - len(tokens), "train_tokens": sum(len(t) for t in tokens), **sizes,
            "extract_seconds": extract_seconds, "converged": result.converged, "final": result.final.as_dict()}
