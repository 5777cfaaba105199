"""A lemmatizer learned from a CoNLL-U file's LEMMA column: :func:`train_lemmatizer`.

    from egnlp.corpora import read_conll
    from egnlp.lemmatizer_training import train_lemmatizer
    lemmatizer = train_lemmatizer(read_conll("pt_bosque-ud-test.conllu", require_heads=False))
    lemmatizer.lemmatize(sentences)  # LEMMA filled from FORM, UPOS, XPOS and FEATS

The dictionary, the edit scripts and the predicates come from
:mod:`egnlp.tagger.lemmatizer`; the classifier of edit scripts is a
:class:`~egnlp.training.maxent_problem.MaxentProblem` (one event per training
word whose script at least ``min_count`` words have; the script is the
label) trained by coordinate descent (Huang et al. 2010, Algorithm 3;
objective sum_i -log P(y_i | x_i) + C/2 ||w||^2). Unless the settings give
them, C (over :data:`~egnlp.settings.LEMMATIZER_C_GRID`), the dictionary's
form back-off and the known ratio (over
:data:`~egnlp.settings.LEMMATIZER_KNOWN_GRID`) are chosen on the last tenth of the training sentences, held
out from a model trained on the rest (lemma accuracy; among equals the
larger C, then the back-off, then the smaller ratio), and the final model is trained on every
sentence.
"""

from __future__ import annotations

import dataclasses
import time
from collections import Counter, defaultdict
from collections.abc import Sequence
from typing import Any

import numpy as np

from egnlp.base.errors import InputError
from egnlp.corpora import Sentence
from egnlp.corpora.sentence import FORM, LEMMA
from egnlp.features.lemma_predicates import lemma_predicates
from egnlp.settings import LEMMATIZER_C_GRID, LEMMATIZER_KNOWN_GRID, LemmatizerSettings
from egnlp.tagger.lemmatizer import EditScript, Lemmatizer, dictionary_keys, edit_script, word_columns
from egnlp.training.configs import CDConfig
from egnlp.training.coordinate_descent import fit_cd
from egnlp.training.maxent_problem import MaxentProblem

HELD_OUT = 0.1  # the share of the training sentences C and the back-off are tuned on (the project's rule)

__all__ = ["HELD_OUT", "classifier_problem", "fit_lemmatizer", "train_lemmatizer", "training_words", "tune"]

Word = tuple[str, tuple[str | None, str | None, str | None], str]  # form, (UPOS, XPOS, FEATS), lemma


def training_words(sentences: Sequence[Sentence], columns: Sequence[str]) -> list[Word]:
    """(form, tags read, gold lemma) of every word of ``sentences``."""
    return [(row[FORM], word_columns(columns, row), row[LEMMA]) for s in sentences for row in s.rows]


def train_lemmatizer(sentences: Sequence[Sentence], dev: Sequence[Sentence] | None = None,
                     settings: LemmatizerSettings | None = None, data: str | None = None,
                     **options: Any) -> Lemmatizer:
    """A :class:`~egnlp.tagger.lemmatizer.Lemmatizer` learned from the LEMMA column of CoNLL-U sentences
    (see the module docstring); ``dev``: sentences whose lemma accuracy the model's ``info`` records;
    ``data`` names the training data there.

    Raises:
        InputError: no word, or a word without a lemma in the training sentences.
    """
    settings = LemmatizerSettings.build(settings, **options)
    columns = settings.column_list
    sentences = [s for s in sentences if len(s)]
    if not sentences:
        raise InputError("no training sentences with words")
    start = time.process_time()
    tuning = None
    if (settings.C is None or settings.form_backoff is None or settings.known_ratio is None) and len(sentences) >= 10:
        cut = len(sentences) - max(1, round(HELD_OUT * len(sentences)))
        tuning = tune(training_words(sentences[:cut], columns), training_words(sentences[cut:], columns), settings)
        best = tuning["best"]
        settings = dataclasses.replace(settings, C=best["C"], form_backoff=best["form_backoff"],
                                       known_ratio=best["known_ratio"])
    settings = dataclasses.replace(settings, C=settings.C if settings.C is not None else LEMMATIZER_C_GRID[-1],
                                   form_backoff=settings.form_backoff if settings.form_backoff is not None else True,
                                   known_ratio=settings.known_ratio if settings.known_ratio is not None else 0.0)
    words = training_words(sentences, columns)
    lemmatizer = fit_lemmatizer(words, settings)
    lemmatizer.info.update({"data": data, "train_sentences": len(sentences), "train_words": len(words),
                            "settings": dataclasses.asdict(settings), "tuning": tuning,
                            "cpu_seconds": time.process_time() - start})
    if dev:
        dev_words = training_words(dev, columns)
        lemmatizer.info["dev_accuracy"] = _accuracy(lemmatizer, dev_words)
    return lemmatizer


def _check_lemmas(words: Sequence[Word]) -> None:
    for form, _, lemma in words:
        if not lemma:
            raise InputError(f"word {form!r} has an empty LEMMA; a lemmatizer trains on filled lemmas")


def classifier_problem(words: Sequence[Word], settings: LemmatizerSettings
                       ) -> tuple[MaxentProblem | None, list[str], list[EditScript], dict[str, Any]]:
    """The classifier's maxent problem (None without a script of ``min_count`` events), the names of its
    predicates, its scripts (the labels: most frequent first, ties by the script's string) and counts:
    one event per word whose form is rare (``rare_forms``) and whose script at least ``min_count`` such
    words have."""
    form_counts = Counter(form.lower() for form, _, _ in words)
    rare = settings.rare_forms
    scripts_of = [edit_script(form, lemma) if not rare or form_counts[form.lower()] <= rare else None
                  for form, _, lemma in words]
    counts = Counter(s for s in scripts_of if s is not None)
    # every label has events, so none scores 0 for want of features
    kept = sorted((s for s, n in counts.items() if n >= settings.min_count), key=lambda s: (-counts[s], str(s)))
    script_id = {s: k for k, s in enumerate(kept)}
    predicates: dict[str, int] = {}
    ev_pred: list[int] = []
    ev_ptr = [0]
    labels = []
    for (form, tags, _), script in zip(words, scripts_of):
        if script not in script_id:
            continue
        for p in lemma_predicates(form, *tags):
            ev_pred.append(predicates.setdefault(p, len(predicates)))
        ev_ptr.append(len(ev_pred))
        labels.append(script_id[script])
    record = {"scripts": len(counts), "classifier_scripts": len(kept), "events": len(labels)}
    if not kept:
        return None, list(predicates), kept, record
    problem = MaxentProblem.from_events(np.array(ev_ptr, dtype=np.int64), np.array(ev_pred, dtype=np.int64),
                                        np.array(labels, dtype=np.int64), len(kept), len(predicates))
    return problem, list(predicates), kept, record


def fit_lemmatizer(words: Sequence[Word], settings: LemmatizerSettings) -> Lemmatizer:
    """The lemmatizer of ``words`` with the settings' C, back-off, ``min_count`` and ``rare_forms`` (no
    tuning)."""
    _check_lemmas(words)
    problem, predicates, scripts, record = classifier_problem(words, settings)
    if problem is not None:
        result = fit_cd(problem, config=CDConfig(C=settings.C, max_passes=settings.max_passes, tol=settings.tol))
        feat_ptr, feat_label, weights = problem.feat_ptr, problem.feat_label, result.weights
        record.update(features=problem.n_features, C=settings.C, passes=len(result.records) - 1,
                      converged=result.converged, objective=result.final.primal)
    else:
        feat_ptr, feat_label, weights = np.zeros(len(predicates) + 1, np.int64), np.zeros(0, np.int64), np.zeros(0)
    return Lemmatizer(scripts, _dictionary(words, settings), predicates, feat_ptr, feat_label, weights,
                      columns=settings.column_list, form_backoff=bool(settings.form_backoff),
                      known_ratio=settings.known_ratio or 0.0, info={"classifier": record})


def _dictionary(words: Sequence[Word], settings: LemmatizerSettings) -> dict[str, str]:
    """Each key (:func:`~egnlp.tagger.lemmatizer.dictionary_keys`; the form back-off's only if the settings
    ask for it) -> the lemma seen most often with it (ties: the first in code-point order)."""
    seen: dict[str, Counter] = defaultdict(Counter)
    for form, tags, lemma in words:
        for key in dictionary_keys(form, tags, settings.form_backoff is not False):
            seen[key][lemma] += 1
    return {key: min(c, key=lambda lemma: (-c[lemma], lemma)) for key, c in seen.items()}


def _accuracy(lemmatizer: Lemmatizer, words: Sequence[Word]) -> float:
    predicted = lemmatizer.lemmas([(form, tags) for form, tags, _ in words])
    return 100.0 * sum(p == w[2] for p, w in zip(predicted, words)) / max(len(words), 1)


def tune(train: Sequence[Word], held_out: Sequence[Word], settings: LemmatizerSettings) -> dict:
    """The lemma accuracy on ``held_out`` of the lemmatizers trained on ``train`` over the C grid, the
    back-off on and off and the known-ratio grid (each where the settings leave it unset), and the best:
    the highest accuracy, among equals the larger C, then the back-off on, then the smaller ratio."""
    rows = []
    for C in (LEMMATIZER_C_GRID if settings.C is None else (settings.C,)):
        lemmatizer = fit_lemmatizer(train, dataclasses.replace(settings, C=C, form_backoff=True))
        for backoff in ((True, False) if settings.form_backoff is None else (settings.form_backoff,)):
            for ratio in (LEMMATIZER_KNOWN_GRID if settings.known_ratio is None else (settings.known_ratio,)):
                lemmatizer.form_backoff, lemmatizer.known_ratio = backoff, ratio
                rows.append({"C": C, "form_backoff": backoff, "known_ratio": ratio,
                             "accuracy": _accuracy(lemmatizer, held_out)})
    best = max(rows, key=lambda row: (row["accuracy"], row["C"], row["form_backoff"], -row["known_ratio"]))
    return {"held_out_words": len(held_out), "grid": rows, "best": best}
