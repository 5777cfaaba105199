"""Multiword-token expansion learned from a CoNLL-U file: :func:`train_multiword`.

    from egnlp.corpora import read_conll
    from egnlp.multiword_training import train_multiword
    expander = train_multiword(read_conll("pt_bosque-ud-test.conllu", require_heads=False))
    expander.expand(["Disse-lhe", "que", "vinha", "do", "Porto", "."])
    # [('Disse', 'lhe'), ('que',), ('vinha',), ('de', 'o'), ('Porto',), ('.',)]

The table, the rules and the classifier's events come from
:mod:`egnlp.tagger.multiword`; the classifier is a
:class:`~egnlp.training.maxent_problem.MaxentProblem` trained by coordinate
descent (Huang et al. 2010, Algorithm 3; objective sum_i -log P(y_i | x_i) +
C/2 ||w||^2). With ``tune`` (the default), the rule thresholds and C are
chosen on the last tenth of the training sentences, held out from a model
trained on the rest (word F1 of the expansion; among equal scores the
entry nearest the given settings), and the final model is trained on every
sentence.
"""

from __future__ import annotations

import dataclasses
import itertools
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from egnlp.base.errors import InputError, SettingsError
from egnlp.corpora import Sentence
from egnlp.tagger.multiword import (AffixRules, FormClassifier, HyphenRules, MultiwordExpander, SurfaceToken,
                                    classifier_events, expansion_counts, expansion_scores, surface_tokens)
from egnlp.training.configs import CDConfig
from egnlp.training.coordinate_descent import fit_cd
from egnlp.training.maxent_problem import MaxentProblem

# The grids :func:`train_multiword` tunes on the held-out tenth, most conservative first.
SUPPORT_GRID = (3.0, 2.0, 1.0)
PRECISION_GRID = (0.9, 0.75, 0.5)
C_GRID = (1.0, 0.1, 10.0)


@dataclass(frozen=True)
class MultiwordSettings:
    """What :func:`train_multiword` takes.

    ``C``: the classifier's prior, 1 / sigma^2 (coordinate descent runs at
    most ``max_passes`` passes, to a relative decrease ``tol``);
    ``min_support``, ``min_precision``: the rules' thresholds (see
    :meth:`egnlp.tagger.multiword.AffixRules.decide`). ``tune``: choose the
    three on the last ``held_out`` share of the sentences (the given values
    are then ignored).
    """

    C: float = 1.0
    max_passes: int = 200
    tol: float = 1e-7
    min_support: float = 2.0
    min_precision: float = 0.75
    tune: bool = True
    held_out: float = 0.1

    def __post_init__(self) -> None:
        if not self.C > 0 or self.max_passes < 1 or not self.tol >= 0:
            raise SettingsError(f"need C > 0, max_passes >= 1, tol >= 0, not {self.C}, {self.max_passes}, {self.tol}")
        if not (self.min_support >= 1 and 0 < self.min_precision <= 1):
            raise SettingsError(f"need min_support >= 1 and 0 < min_precision <= 1, not {self.min_support}, "
                                f"{self.min_precision}")
        if not 0 < self.held_out < 1:
            raise SettingsError(f"held_out must lie strictly between 0 and 1, not {self.held_out}")

    @classmethod
    def build(cls, settings: "MultiwordSettings | None" = None, **options: Any) -> "MultiwordSettings":
        """``settings`` (or the defaults) with ``options`` replaced; SettingsError for an unknown option."""
        base = settings if settings is not None else cls()
        unknown = sorted(set(options) - {f.name for f in dataclasses.fields(cls)})
        if unknown:
            raise SettingsError(f"unknown multiword setting {unknown[0]!r}")
        return dataclasses.replace(base, **options)


def train_multiword(sentences: Sequence[Sentence], settings: MultiwordSettings | None = None, *,
                    data: str | None = None, **options: Any) -> MultiwordExpander:
    """A :class:`~egnlp.tagger.multiword.MultiwordExpander` learned from the range lines of CoNLL-U
    sentences (see the module docstring). ``data`` names the training data in the model's ``info``.

    Raises:
        InputError: no sentence with a token.
    """
    settings = MultiwordSettings.build(settings, **options)
    token_lists = [surface_tokens(s) for s in sentences if len(s)]
    if not token_lists:
        raise InputError("no training sentences with tokens")
    start = time.process_time()
    tuning = None
    if settings.tune and len(token_lists) >= 10:
        cut = len(token_lists) - max(1, round(settings.held_out * len(token_lists)))
        tuning = tune(token_lists[:cut], token_lists[cut:], settings)
        best = tuning["best"]
        settings = dataclasses.replace(settings, C=best["C"], min_support=best["min_support"],
                                       min_precision=best["min_precision"])
    expander = fit_expander(token_lists, settings)
    expander.info.update({"data": data, "train_sentences": len(token_lists),
                          "train_tokens": sum(map(len, token_lists)),
                          "multiword_tokens": sum(len(t.words) > 1 for tokens in token_lists for t in tokens),
                          "settings": dataclasses.asdict(settings), "tuning": tuning,
                          "cpu_seconds": time.process_time() - start})
    return expander


def fit_expander(token_lists: Sequence[Sequence[SurfaceToken]], settings: MultiwordSettings) -> MultiwordExpander:
    """The expander of the surface tokens ``token_lists`` with the settings' C and thresholds (no tuning)."""
    counts = expansion_counts(token_lists)
    outcomes = ["", *sorted({o for c in counts.values() for o in c if o})]
    outcome_id = {o: k for k, o in enumerate(outcomes)}
    ranked = {form: sorted(c, key=lambda o: (-c[o], o)) for form, c in counts.items()}
    ambiguous = {form: order for form, order in ranked.items() if len(order) > 1}
    table = {form: outcome_id[order[0]] for form, order in ranked.items() if len(order) == 1}
    classifier, record = _fit_classifier(token_lists, ambiguous, outcome_id, settings)
    info = {"classifier": record, "ambiguous_forms": len(ambiguous)}
    known = {w.lower() for tokens in token_lists for t in tokens for w in t.words}
    return MultiwordExpander(outcomes, table, classifier, AffixRules.learn("suffix", counts),
                             AffixRules.learn("prefix", counts, known),
                             HyphenRules.learn(expansion_counts(token_lists, lower=False), known),
                             min_support=settings.min_support,
                             min_precision=settings.min_precision, info=info)


def classifier_problem(token_lists: Sequence[Sequence[SurfaceToken]],
                       ambiguous: dict[str, list[str]]) -> tuple[MaxentProblem, list[str]]:
    """The maxent problem of the occurrences of the ``ambiguous`` forms (form -> outcome strings, most
    frequent first) and the names of its predicates; labels are candidate indices."""
    events = classifier_events(token_lists, ambiguous)
    n_labels = max(len(order) for order in ambiguous.values())
    problem = MaxentProblem.from_events(events.ev_ptr, events.ev_pred, events.gold, n_labels, len(events.predicates))
    return problem, events.predicates


def _fit_classifier(token_lists, ambiguous: dict[str, list[str]], outcome_id: dict[str, int],
                    settings: MultiwordSettings) -> tuple[FormClassifier, dict]:
    """The classifier of the ambiguous forms (an empty one without them) and what its training recorded."""
    if not ambiguous:
        return FormClassifier.empty(), {"events": 0}
    problem, predicates = classifier_problem(token_lists, ambiguous)
    config = CDConfig(C=settings.C, max_passes=settings.max_passes, tol=settings.tol)
    result = fit_cd(problem, config=config)
    forms = sorted(ambiguous)
    sizes = [len(ambiguous[f]) for f in forms]
    cand_ptr = np.zeros(len(forms) + 1, dtype=np.int64)
    np.cumsum(sizes, out=cand_ptr[1:])
    cand_outcome = np.array([outcome_id[o] for f in forms for o in ambiguous[f]], dtype=np.int64)
    classifier = FormClassifier(forms, cand_ptr, cand_outcome, predicates, problem.feat_ptr, problem.feat_label,
                                result.weights)
    return classifier, {"events": problem.n_events, "features": problem.n_features, "C": settings.C,
                        "passes": len(result.records) - 1, "converged": result.converged,
                        "objective": result.final.primal}


def tune(train: Sequence[Sequence[SurfaceToken]], held_out: Sequence[Sequence[SurfaceToken]],
         settings: MultiwordSettings) -> dict:
    """The word F1 on ``held_out`` of the expanders trained on ``train`` over :data:`C_GRID` x
    :data:`SUPPORT_GRID` x :data:`PRECISION_GRID`, and the best: the highest F1, among equals the
    entry nearest ``settings`` (a held-out tenth holds few unseen forms, so ties are common)."""
    forms = [[t.form for t in tokens] for tokens in held_out]
    rows = []
    for C in C_GRID:
        expander = fit_expander(train, dataclasses.replace(settings, C=C))
        for support, precision in itertools.product(SUPPORT_GRID, PRECISION_GRID):
            expander.min_support, expander.min_precision = support, precision
            scores = expansion_scores(held_out, [expander.expand(f) for f in forms])
            rows.append({"C": C, "min_support": support, "min_precision": precision, "f1": scores["f1"]})
    def distance(row: dict) -> int:  # how many of the three differ from the given settings
        return (row["C"] != settings.C) + (row["min_support"] != settings.min_support) \
            + (row["min_precision"] != settings.min_precision)

    best = max(rows, key=lambda row: (row["f1"], -distance(row)))  # then the first of equals
    return {"held_out_sentences": len(held_out), "grid": rows, "best": best}


__all__ = ["C_GRID", "MultiwordSettings", "PRECISION_GRID", "SUPPORT_GRID", "classifier_problem",
           "fit_expander", "train_multiword", "tune"]
