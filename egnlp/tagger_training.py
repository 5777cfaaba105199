"""Tagger training: a linear-chain CRF or a maxent POS tagger or chunker, one :class:`~egnlp.tagger.Tagger`.

    from nltk.corpus import conll2000
    from egnlp import train_tagger
    sents = conll2000.tagged_sents("train.txt")
    tokens = [[w for w, _ in s] for s in sents]
    tags = [[t for _, t in s] for s in sents]
    tagger, result = train_tagger(tokens, tags)
    tagger.tag("The economy grew. Prices fell.")

:func:`train_tagger` takes a :class:`~egnlp.settings.TaggerSettings` or its
fields as keyword arguments (the command line's ``tagger train`` builds the
same object). Any structured trainer of :mod:`egnlp.training.registry` trains
the CRF's problem (:class:`egnlp.tagger.tagging_problem.TaggingProblem` over
the features of :mod:`egnlp.features.chain_features`; online EG on the
log-linear dual by default); the maxent tagger's events
(:mod:`egnlp.tagger.maxent`) make a
:class:`egnlp.training.maxent_problem.MaxentProblem` for the maxent trainers
(coordinate descent by default).
"""

from __future__ import annotations

import dataclasses
import time
from typing import Any, Callable, Sequence

import numpy as np

from egnlp.base.errors import InputError
from egnlp.corpora import CorpusError, Sentence, dataset_task, load_sentences
from egnlp.corpora.morphology import canonical_feats, morph_label
from egnlp.corpora.sentence import BLANK
from egnlp.corpora.tagging import check_tags
from egnlp.features.chain_features import ChainFeaturizer, form_dictionary
from egnlp.tagger.crf import CRFModel, decode_ids
from egnlp.tagger.maxent import MaxentModel, training_events
from egnlp.tagger.tagger_model import Tagger
from egnlp.tagger.tagging_problem import TaggingProblem
from egnlp.settings import MAXENT_BEAM, TaggerSettings
from egnlp.training.maxent_problem import MaxentProblem
from egnlp.training.records import BestPass, Callback, TrainingInterrupted, TrainResult, fit_or_best

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


def label_columns(sentences: Sequence[Sentence], column: str = "pos", reads_upos: bool = False):
    """(tokens, labels, POS input or None) of tagged sentences: a chunker's labels are the
    chunk column and it reads the POS column; a POS tagger (``pos``: POSTAG / XPOS, ``upos``:
    CPOSTAG / UPOS) reads words only, a FEATS tagger (``feats``) and a joint tagger (``morph``:
    UPOS#XPOS#FEATS, :mod:`egnlp.corpora.morphology`) words and, with ``reads_upos``, the UPOS column
    as their POS input. FEATS come sorted as UD writes them
    (:func:`~egnlp.corpora.morphology.canonical_feats`)."""
    tokens = [s.forms for s in sentences]
    if column == "chunk":
        return tokens, [s.chunks for s in sentences], [s.pos for s in sentences]
    upos = [s.cpos for s in sentences] if reads_upos else None
    if column == "feats":
        return tokens, [[canonical_feats(f) for f in s.feats] for s in sentences], upos
    if column == "morph":
        return tokens, [[morph_label(u, x, canonical_feats(f)) for u, x, f in zip(s.cpos, s.pos, s.feats)]
                        for s in sentences], upos
    return tokens, [s.labels(column) for s in sentences], None


def task_column(dataset: str | None) -> str:
    """The label column of a data set's task (``chunk`` for a chunking set), ``pos`` for files."""
    return "chunk" if dataset is not None and dataset_task(dataset) == "chunk" else "pos"


def tagged_columns(sentences: Sequence[Sentence], column: str, what: str = "training", reads_upos: bool = False):
    """:func:`label_columns` of a training or dev set (``what``) after checking that every token
    carries the labels it needs: a tag in ``column`` (``_`` is no tag; see
    :func:`~egnlp.corpora.tagging.check_tags` for FEATS) and, for a chunker, a POS tag, for a
    tagger that ``reads_upos`` a UPOS tag.

    Raises:
        CorpusError: no sentences, or a token without a needed tag (naming its file and line).
    """
    if not sentences:
        raise CorpusError(f"the {what} set has no sentences")
    role = {"chunk": "a chunker trains on these tags", "feats": "a FEATS tagger trains on these features",
            "morph": "a joint UPOS, XPOS and FEATS tagger trains on these tags"}.get(
                column, "a POS tagger trains on these tags")
    if column in TAG_COLUMNS:
        other = "upos" if column == "pos" else "pos"
        if _filled(sentences, other):
            role += f"; the {TAG_COLUMNS[other]} column is filled: train on it with --column {other}"
    check_tags(sentences, column, role)
    if column == "chunk":
        check_tags(sentences, "pos", "a chunker reads the POS column")
    if reads_upos:
        check_tags(sentences, "upos", "this tagger reads the UPOS column (--reads-upos)")
    return label_columns(sentences, column, reads_upos)


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
        raise InputError("tokens, labels (and POS) need one entry per training sentence")
    keep = [s for s, toks in enumerate(tokens_list) if len(toks)]
    if not keep:
        raise InputError("no non-empty training sentences")
    return ([list(tokens_list[s]) for s in keep], [list(labels[s]) for s in keep],
            [list(pos[s]) for s in keep] if pos is not None else None)


def train_tagger(tokens: Sequence[Sequence[str]], labels: Sequence[Sequence[str]],
                 pos: Sequence[Sequence[str]] | None = None, settings: TaggerSettings | None = None, *,
                 dev: tuple | None = None, dev_scorer: DevScorer | None = None, callbacks: Sequence[Callback] = (),
                 state: dict | None = None, data: str | None = None, **options: Any) -> tuple[Tagger, TrainResult]:
    """Train a tagger on tokenised sentences and their labels: a linear-chain CRF (``model="crf"``, the
    default: any structured trainer, online EG on the log-linear dual by default) or a Ratnaparkhi-style
    maxent tagger (``model="maxent"``: :mod:`egnlp.tagger.maxent`, coordinate descent by default,
    Huang et al. 2010, Algorithm 3, with C = 1 / ``sigma2``).

    ``settings`` is a :class:`~egnlp.settings.TaggerSettings` (its fields also as keyword ``options``, and
    any other setting of the trainer's config). ``pos`` (one POS tag per token) makes a chunker that reads
    POS tags; without it the tagger reads words only. ``dev`` is ``(tokens, labels)`` or ``(tokens,
    labels, pos)``, scored (token accuracy, %) after every pass; ``dev_scorer`` (CRF) instead supplies
    the caller's own per-pass score: it is called once with the featurizer fitted on the training
    sentences and returns the ``w -> score`` function recorded after every pass. The tagger's label
    column is ``settings.column`` (default ``chunk`` with POS input, ``pos`` otherwise). Empty sentences
    are left out of training. ``data`` names the training data in the model's ``info``. With
    ``save_on_interrupt`` (or a :class:`~egnlp.training.records.BestPass` among the ``callbacks``),
    Ctrl-C raises :class:`~egnlp.training.records.TrainingInterrupted` carrying the tagger of the best
    pass so far.
    """
    settings = TaggerSettings.build(settings, **options)
    if dev is not None and dev_scorer is not None:
        raise InputError("give dev or dev_scorer, not both")
    if dev_scorer is not None and settings.model != "crf":
        raise InputError("dev_scorer goes with the CRF tagger")
    kept = _non_empty(tokens, labels, pos)
    callbacks = (*([BestPass()] if settings.save_on_interrupt else []), *callbacks)
    fit = _train_crf if settings.model == "crf" else _train_maxent
    tagger, result, interrupted = fit(settings, *kept, dev=_dev_columns(dev, kept[2] is not None),
                                      dev_scorer=dev_scorer, callbacks=callbacks, state=state, given=len(tokens),
                                      data=data)
    return _finished(tagger, result, interrupted)


def train_crf_tagger(tokens: Sequence[Sequence[str]], labels: Sequence[Sequence[str]],
                     pos: Sequence[Sequence[str]] | None = None, **options: Any) -> tuple[Tagger, TrainResult]:
    """:func:`train_tagger` of a linear-chain CRF."""
    return train_tagger(tokens, labels, pos, model="crf", **options)


def train_maxent_tagger(tokens: Sequence[Sequence[str]], labels: Sequence[Sequence[str]],
                        pos: Sequence[Sequence[str]] | None = None, **options: Any) -> tuple[Tagger, TrainResult]:
    """:func:`train_tagger` of a maxent tagger."""
    return train_tagger(tokens, labels, pos, model="maxent", **options)


def _train_crf(settings: TaggerSettings, tokens, gold, pos, *, dev, dev_scorer, callbacks, state, given, data):
    spec, config = settings.spec, settings.trainer_config()
    start = time.perf_counter()
    featurizer = ChainFeaturizer.fit(tokens, gold, pos, all_transitions=settings.all_transitions)
    L = featurizer.n_labels
    dense_parts = sum(map(len, tokens)) * L + len(tokens) * (featurizer.trans_pairs.shape[0] + 2 * L)
    least = settings.crf_dictionary(dense_parts)
    if least:
        featurizer = featurizer.with_dictionary(tokens, gold, least)
    problem = TaggingProblem.from_sentences(featurizer, tokens, gold, pos)
    extract_seconds = time.perf_counter() - start
    dev_score = dev_scorer(featurizer) if dev_scorer is not None else None
    if dev is not None:
        dev_score = accuracy_scorer(featurizer, *dev)
    result, interrupted = fit_or_best(spec.fit, problem, config=config, dev=dev_score, callbacks=tuple(callbacks),
                                      state=state)
    pf = problem.features
    info = _training_info(settings, config, result, tokens, given, extract_seconds, data=_data(data, dev),
                          n_labels=featurizer.n_labels, n_features=pf.n_features,
                          n_transition_parts=pf.n_transitions, n_parts=pf.n_parts, dictionary=least)
    column = settings.label_column or ("chunk" if pos is not None else "pos")
    return Tagger(CRFModel(featurizer, result.weights), column, info, _vocabulary(tokens)), result, interrupted


def _train_maxent(settings: TaggerSettings, tokens, gold, pos, *, dev, dev_scorer, callbacks, state, given, data):
    spec, config = settings.spec, settings.trainer_config()
    beam = settings.beam if settings.beam is not None else MAXENT_BEAM
    cutoff = settings.maxent_cutoff
    use_pos = pos is not None
    start = time.perf_counter()
    events = training_events(tokens, gold, pos, use_pos=use_pos, cutoff=cutoff)
    problem = MaxentProblem.from_events(events.ev_ptr, events.ev_pred, events.gold, len(events.labels),
                                        len(events.predicates))
    extract_seconds = time.perf_counter() - start
    least = settings.maxent_dictionary
    dictionary = form_dictionary(tokens, gold, events.labels, least) if least else None
    model = MaxentModel(events.labels, events.predicates, problem.feat_ptr, problem.feat_label,
                        np.zeros(problem.n_features), use_pos=use_pos, beam=beam, dictionary=dictionary)
    dev_score = maxent_accuracy_scorer(model, *dev) if dev is not None else None
    result, interrupted = fit_or_best(spec.fit, problem, config=config, dev=dev_score, callbacks=tuple(callbacks),
                                      state=state)
    model.weights = np.ascontiguousarray(result.weights, dtype=np.float64)
    info = _training_info(settings, config, result, tokens, given, extract_seconds, data=_data(data, dev),
                          sigma2=1.0 / config.C, cutoff=cutoff, beam=beam, dictionary=least,
                          n_labels=problem.n_labels,
                          n_events=problem.n_events, n_predicates=problem.n_predicates, n_features=problem.n_features)
    column = settings.label_column or ("chunk" if use_pos else "pos")
    return Tagger(model, column, info, _vocabulary(tokens)), result, interrupted


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
        found = model.decode_encoded(encoded, w, tokens_list=tokens)[0]
        return 100.0 * float(np.mean(found == gold)) if gold.size else 0.0

    return score


def _dev_columns(dev: tuple | None, use_pos: bool) -> tuple | None:
    """``(tokens, labels, pos or None)`` of a dev set given as ``(tokens, labels)`` or ``(tokens, labels, pos)``."""
    if dev is None:
        return None
    if len(dev) not in (2, 3):
        raise InputError("dev must be (tokens, labels) or (tokens, labels, pos)")
    pos = dev[2] if len(dev) == 3 else None
    if use_pos and pos is None:
        raise InputError("a chunker's dev set needs POS tags: (tokens, labels, pos)")
    return dev[0], dev[1], pos


def _vocabulary(tokens: Sequence[Sequence[str]]) -> set[str]:
    """The word forms of the training sentences (for accuracy on unknown words)."""
    return {w for toks in tokens for w in toks}


def _data(name: str | None, dev: tuple | None) -> dict:
    """What a tagger model records of its data beyond the training sizes: the name given, the dev sentences."""
    return {"name": name, "dev_sentences": len(dev[0]) if dev is not None else 0}


def _training_info(settings: TaggerSettings, config, result: TrainResult, tokens: Sequence[Sequence[str]],
                   given: int, extract_seconds: float, **sizes) -> dict:
    """What a tagger model records of its training: trainer, settings, data and problem sizes, outcome."""
    return {"trainer": settings.trainer_name, "config": dataclasses.asdict(config), "settings": settings.as_dict(),
            "train_sentences": len(tokens), "skipped_empty": given - len(tokens),
            "train_tokens": sum(len(t) for t in tokens), **sizes, "extract_seconds": extract_seconds,
            "converged": result.converged, "final": result.final.as_dict()}
