"""The public Python API: train a parser, parse, evaluate.

    from egnlp.parser_training import train_parser
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
from egnlp.base.workers import map_blocks, resolve_jobs
from egnlp.features.arc_featurizer import ArcFeaturizer
from egnlp.features.arc_parts import ArcPartFeatures, CacheBudget
from egnlp.features.hashing import KeyTable
from egnlp.features.grandparents import GrandFeaturizer, GrandPartFeatures
from egnlp.features.siblings import SiblingFeaturizer, SiblingPartFeatures
from egnlp.parser.eisner_siblings import n_sibling_parts, sibling_argmax
from egnlp.parser.eisner_grandparents import grand_argmax
from egnlp.parser.trees import (AUTO, FINAL_ON_ROOT_SHARE, PROJECTIVE, check_final_on_root, choose_tree,
                                final_on_root_argmax, final_on_root_share, tree_space)
from egnlp.parser.labeler import ArcLabeler, arc_label_keys, predicate_ids
from egnlp.parser.parser_model import Parser, final_punct
from egnlp.parser.parsing_problem import GrandParsingProblem, ParsingProblem, SiblingParsingProblem
from egnlp.training.path import PathPoint, regularization_path
from egnlp.training.records import BestPass, Callback, TrainingInterrupted, TrainResult, fit_or_best
from egnlp.training.maxent_problem import MaxentProblem
from egnlp.training.registry import MAXENT, check_settings, get_trainer, make_config


# The parser's defaults, chosen on dev.  The max-margin objective at C = 100 (the best C of
# Collins et al. 2008, Sec. 8, for max-margin parsing; 30 since, below) against the log-linear one at C = 20
# (the best of a warm-started sweep on es dev): dev UAS 80.90 against 80.14 on es, 88.76 against 87.1 on wsj.
# Its default trainer is BCFW with the weighted average of its iterates (the pass limits below): on es it reaches
# the dev UAS that max-margin EG reaches after 30 to 60 passes (81.25 at pass 13 against EG's best of
# 81.09), so a default run costs a fraction of EG's CPU time (docs/accuracy.md); EG stays one option
# away (--trainer eg-mm).
DEFAULT_PARSER_TRAINER = "bcfw"
# The max-margin C parses best at 30 on every tuning split, first order (dev UAS at C = 30 / 100: es 81.25 /
# 81.08, eu 79.06 / 78.72, nl-alpino 82.96 / 81.67, pt-bosque 83.90 / 83.78) and with sibling parts (es
# 82.70 / 82.12, pt-bosque 85.22 / 84.82, nl-alpino 82.22 / 80.83); docs/accuracy.md.  The log-linear C
# is the best of a warm-started path on es (README).
DEFAULT_PARSER_C = {"ll": 20.0, "mm": 30.0}
# Settings the parser gives a trainer unless the caller does (the trainers' own defaults otherwise).
DEFAULT_PARSER_SETTINGS = {"bcfw": {"average": True, "max_passes": 12}}
# ... and those of a first-order model, over them.  Averaged BCFW's pass limit without a dev set, first
# order, dev UAS (mean of seeds 0 and 1) on es / eu / nl-alpino / pt-bosque: 8 passes 81.02 / 79.03 / 82.87 /
# 83.97, mean 81.72; 12 passes 81.32 / 78.90 / 82.60 / 83.85, mean 81.66 (docs/accuracy.md): the four means
# of 8 to 15 passes lie within 0.1, and 8 is the best of them for two thirds of the arc trainer's time.
# The second- and third-order models keep 12 (their best dev passes were 5 to 13).
FIRST_ORDER_SETTINGS = {"bcfw": {"max_passes": 8}}
# parser train's early stop when there is a dev set: no better dev UAS for this many passes, for the
# trainers that step sentence by sentence, whose dev score climbs pass after pass.  The batch ones can
# stall for several iterations before they climb (egr on es: a patience of 3 would stop it at iteration 10,
# dev UAS 67.96, where it goes on to 81.3), so they run to their tolerance or pass limit.
DEFAULT_PATIENCE = 3
ONLINE_TRAINERS = ("bcfw", "eg-mm", "eg-ll", "sgd")
# Bytes of compiled sentences kept for the trainers that visit every sentence several times an iteration
# (egr: three times) and for the benches; the others compile a sentence once a visit, which keeps parser
# training memory flat.
FEATURE_CACHE_BYTES = 1 << 30
FEATURE_CACHE_TRAINERS = ("egr",)
# Bytes of compiled dev sentences kept by default for the others: the dev set is decoded after every pass
# and is small (es: 295 sentences in 29 MiB), so it is compiled once instead of once a pass (es: 96.0
# against 99.9 CPU s); a larger dev set is kept up to this and compiled a pass at a time beyond it.
DEV_CACHE_BYTES = 64 << 20
# A first-order dev set of fewer sentences than this is decoded in the training process whatever --jobs
# says: es dev (295 sentences) takes 0.105 CPU s a pass there, and 0.150 CPU s on two forked workers for
# 0.02 s less wall time (the workers' start costs more than they save).  A second- or third-order dev set
# always takes the workers: es dev with sibling parts, 0.70 CPU s in one process, 0.77 on two for 0.28 s
# less wall time.
DEV_JOBS_MIN_SENTENCES = 1000


def cache_budget(trainer: str, cache_mb: float | None, has_dev: bool = True) -> CacheBudget:
    """The bytes of compiled sentences a parser's training keeps for later passes: ``cache_mb`` MiB, or by
    default :data:`FEATURE_CACHE_BYTES` for the trainers of :data:`FEATURE_CACHE_TRAINERS`; for the others
    :data:`DEV_CACHE_BYTES` when there is no dev set to keep (``has_dev`` False: the dev's bytes go to the
    training sentences), else none.  Kept sentences are not compiled again (the model is the same bits),
    at that much memory.  On es, trained on its dev split too, 64 MiB hold 671 of the 2,949 sentences,
    whose compilation takes 0.86 of the 3.94 s of a pass: about 9.5 CPU s of a run's 130, for a peak of
    454 MiB against 429 (``farm-bench -n 3 --vs``, whose CPU figures this host's noise left unresolved)."""
    if cache_mb is None:
        if trainer in FEATURE_CACHE_TRAINERS:
            return CacheBudget(FEATURE_CACHE_BYTES)
        return CacheBudget(0 if has_dev else DEV_CACHE_BYTES)
    if not cache_mb >= 0:
        raise ValueError(f"the cache size must be at least 0 MB, not {cache_mb}")
    return CacheBudget(int(cache_mb * (1 << 20)))


def release_freed_memory() -> None:
    """Give the pages of freed memory inside the C heap back to the system (glibc's ``malloc_trim``).

    Arrays of a few hundred KB, such as the compiled sentences a training run keeps, come from the C
    heap, and freeing them leaves their pages in the process; the labeler's arrays, each larger, are
    mapped afresh and do not reuse them, so they would add to its peak (es with 64 MiB of kept
    sentences: 490 MiB without this, 453 MiB with it, 431 MiB when none are kept; ``/usr/bin/time``).
    Nothing happens where the C library has no ``malloc_trim``."""
    import ctypes

    try:
        trim = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError, TypeError):
        return
    trim.argtypes = [ctypes.c_size_t]
    trim(0)


def dev_cache_budget(trainer: str, cache_mb: float | None, budget: CacheBudget) -> CacheBudget:
    """The budget of the dev scorer's compiled sentences: the training's own ``budget`` when ``cache_mb``
    is given or the trainer caches by default, else :data:`DEV_CACHE_BYTES` of its own."""
    if cache_mb is None and trainer not in FEATURE_CACHE_TRAINERS:
        return CacheBudget(DEV_CACHE_BYTES)
    return budget


def default_patience(trainer: str) -> int | None:
    """parser train's patience for ``trainer`` when a dev set is given and no patience is."""
    return DEFAULT_PATIENCE if trainer in ONLINE_TRAINERS else None


def parser_settings(trainer: str, settings: dict, first_order: bool = True) -> dict:
    """``settings`` with the parser's defaults for ``trainer`` filled in: C of its objective
    (:data:`DEFAULT_PARSER_C`), :data:`DEFAULT_PARSER_SETTINGS`, and for a ``first_order`` model
    :data:`FIRST_ORDER_SETTINGS`."""
    spec = get_trainer(trainer)
    order_settings = FIRST_ORDER_SETTINGS.get(trainer, {}) if first_order else {}
    return {"C": DEFAULT_PARSER_C[spec.objective], **DEFAULT_PARSER_SETTINGS.get(trainer, {}), **order_settings,
            **settings}


def _dev_correct(job: tuple, block: Sequence[int]) -> list[int]:
    """The number of words with the right head in each dev sentence of ``block`` (``job``: see uas_scorer)."""
    pf, gold, argmax, root, order, w, finals = job
    out = []
    for s in block:
        lo, hi = pf.parts(s)
        k = len(gold[s]) + 1
        if order == 3:
            theta = pf.scores(lo, hi, w)
            middle = n_sibling_parts(k)
            heads = grand_argmax(theta[:middle], theta[middle:].reshape(k, k, k), k, root)
        elif order == 2:
            heads = sibling_argmax(pf.scores(lo, hi, w), k, root)
        elif finals is not None and finals[s]:
            heads = final_on_root_argmax(argmax, pf.scores(lo, hi, w).reshape(k, k), root)
        else:
            heads = argmax(pf.scores(lo, hi, w).reshape(k, k), root=root)
        out.append(int((heads[1:] == gold[s]).sum()))
    return out


def uas_scorer(featurizer: ArcFeaturizer, sentences: Sequence[Sentence], root: str, tree: str = PROJECTIVE,
               siblings: SiblingFeaturizer | None = None, budget: CacheBudget | None = None, jobs: int = 1,
               grand: GrandFeaturizer | None = None, final_on_root: bool = False):
    """A ``w -> UAS`` function over ``sentences`` (punctuation counted) in a tree space, for dev records;
    with ``siblings``, of the second-order parser with those sibling features (and with ``grand``, of
    the third-order one with those grandparent features too); ``final_on_root``: decoded as a
    :class:`~egnlp.parser.parser_model.Parser` with it decodes.  ``budget``: compiled
    sentences kept between calls (none by default); ``jobs``: processes that decode the sentences
    (:func:`~egnlp.base.workers.map_blocks`; the score is the same for any number), for a first-order
    parser only from :data:`DEV_JOBS_MIN_SENTENCES` sentences up."""
    argmax = tree_space(tree).argmax
    encoded = featurizer.encode(sentences)
    pf = ArcPartFeatures(featurizer, encoded, budget if budget is not None else 0)
    if siblings is not None:
        pf = SiblingPartFeatures(pf, siblings, encoded)
    if grand is not None:
        pf = GrandPartFeatures(pf, grand, encoded)
    order = 1 if siblings is None else 2 if grand is None else 3
    if order == 1 and len(sentences) < DEV_JOBS_MIN_SENTENCES:
        jobs = 1
    if final_on_root:
        check_final_on_root(root, order)
    finals = final_punct(sentences) if final_on_root else None
    gold = [np.asarray(s.heads) for s in sentences]
    total = sum(len(g) for g in gold)

    unkept = [budget is not None and budget.room > 0]

    def score(w: np.ndarray) -> float:
        if unkept[0]:  # the sentences the budget holds are compiled here, once, before any worker forks
            unkept[0] = False
            for i in range(len(gold)):
                if not pf.keep(i):
                    break
        correct = map_blocks(_dev_correct, (pf, gold, argmax, root, order, w, finals), range(len(gold)), jobs)
        return 100.0 * sum(correct) / max(total, 1)

    return score


def choose_final_on_root(given: bool | None, train: Sequence[Sentence], root: str, siblings: bool) -> bool:
    """Whether a parser decodes final punctuation as a leaf of the root's child: ``given``, or by default
    (None) for a first-order, single-root parser whose training trees that end in punctuation do so
    at least :data:`~egnlp.parser.trees.FINAL_ON_ROOT_SHARE` of the time."""
    if given is None:
        return (root == "single" and not siblings and final_on_root_share(
            [s.heads for s in train], final_punct(train)) >= FINAL_ON_ROOT_SHARE)
    if given:
        check_final_on_root(root, 2 if siblings else 1)
    return bool(given)


def build_parsing_problem(train: Sequence[Sentence], root: str, feature_mode: str = "alphabet",
                          hash_bits: int = 22, tags: str | None = None,
                          tree: str = PROJECTIVE, featurizer: ArcFeaturizer | None = None,
                          cache_bytes: int | CacheBudget = 0, siblings: bool = False, grandparents: bool = False
                          ) -> tuple[ArcFeaturizer, ParsingProblem | SiblingParsingProblem, float]:
    """Fit the arc features on ``train`` and set up its parsing problem; also the seconds it took.

    The features of the arcs are computed one sentence at a time as training asks for them
    (:class:`~egnlp.features.arc_parts.ArcPartFeatures`), not stored.

    ``tags`` (both, upos, xpos; default: chosen from the data) names the tag columns the templates
    read; ``tree`` (projective, non-projective) and ``root`` (single, multi) are the tree space.
    With a fitted ``featurizer`` the problem uses its features as they are (the feature settings are
    not read): one shard of a training set whose features were fitted on the whole set.
    ``cache_bytes`` keeps compiled sentences (arcs and siblings) for later passes up to that many bytes,
    or a :class:`~egnlp.features.arc_parts.CacheBudget` shared with other part feature sets.  ``siblings`` adds sibling parts: a
    second-order :class:`~egnlp.parser.parsing_problem.SiblingParsingProblem`, projective trees only, whose
    features' ``siblings`` hold the sibling templates' alphabet, fitted on ``train``.  ``grandparents``
    adds grandparent parts to the sibling ones: a third-order
    :class:`~egnlp.parser.parsing_problem.GrandParsingProblem` whose features' ``grand`` hold the grandparent
    templates' alphabet.
    """
    siblings = siblings or grandparents
    if siblings and tree != PROJECTIVE:
        raise ValueError(f"{'third' if grandparents else 'second'}-order parsing predicts projective trees "
                         f"only, not {tree} ones (use --tree projective)")
    missing = [i for i, s in enumerate(train) if s.heads is None]
    if missing:
        raise ValueError(f"training sentence {missing[0] + 1} has no heads")
    start = time.perf_counter()
    fitted = featurizer is not None
    featurizer = featurizer if fitted else ArcFeaturizer.for_corpus(train, feature_mode, hash_bits, tags)
    encoded = featurizer.encode(train)
    heads = [s.heads for s in train]
    if not fitted:
        featurizer.fit(encoded, heads)
    arcs = ArcPartFeatures(featurizer, encoded, cache_bytes)
    if grandparents:
        sib = SiblingPartFeatures(arcs, SiblingFeaturizer().fit(encoded, heads), encoded)
        problem = GrandParsingProblem(GrandPartFeatures(sib, GrandFeaturizer().fit(encoded, heads), encoded),
                                      heads, root)
    elif siblings:
        problem = SiblingParsingProblem(SiblingPartFeatures(arcs, SiblingFeaturizer().fit(encoded, heads), encoded),
                                        heads, root)
    else:
        problem = ParsingProblem(arcs, heads, root, tree)
    return featurizer, problem, time.perf_counter() - start


def train_parser(train: Sequence[Sentence], dev: Sequence[Sentence] | None = None, *,
                 trainer: str = DEFAULT_PARSER_TRAINER, root: str | None = None, feature_mode: str = "alphabet",
                 hash_bits: int = 22, tags: str | None = None, tree: str = PROJECTIVE, labels: bool = True,
                 callbacks: Sequence[Callback] = (), state: dict | None = None, data: str | None = None,
                 patience: int | None = None, siblings: bool = False, cache_mb: float | None = None,
                 jobs: int | None = 1, grandparents: bool = False, final_on_root: bool | None = None,
                 **settings) -> tuple[Parser, TrainResult]:
    """Train a parser on ``train`` (sentences with heads), and its arc labeler when the
    sentences carry labels (unless ``labels`` is False): first-order (arc parts), or second-order with
    ``siblings`` (arcs and sibling parts, McDonald and Pereira 2006; projective trees only, which
    ``tree="auto"`` then picks), or third-order with ``grandparents`` (sibling and grandparent parts,
    Koo and Collins 2010; projective trees only).

    ``root`` is "single" or "multi" (default: "single" when every training
    tree has one root child); ``tree`` is "projective" (the default: it
    parses better than the non-projective space on es, pt-bosque and
    nl-alpino, see docs/accuracy.md), "non-projective" or "auto"
    (non-projective when more than 1% of the training trees are);
    ``final_on_root`` decodes a sentence's final punctuation as a leaf of the root's one child
    (:func:`choose_final_on_root`; by default when the training trees do so);
    ``settings`` go to the trainer's config (for
    EG: C, max_passes, tol, seed, eta_init, order, max_seconds, anneal; see
    ``egnlp.training.registry.TRAINERS`` for the others).  C defaults to
    :data:`DEFAULT_PARSER_C` of the trainer's objective.
    ``state`` warm-starts the trainer; the result carries the trainer's state for another warm start
    only when no labeler is trained (its memory goes before the labeler's).  ``cache_mb`` keeps that
    many MiB of compiled training and dev sentences for later passes (:func:`cache_budget`; by default
    the dev sentences, or without a dev set the training sentences, up to :data:`DEV_CACHE_BYTES`,
    :func:`dev_cache_budget`): less time, the same model.  ``jobs`` processes
    (None: every core) decode the dev set after each pass and compute the trainer's evaluation passes
    (primal, dual, gaps: :func:`~egnlp.training.structured_problem.loss_augmented_examples`): the same records and
    model for any number.
    The dev set, if given, is scored (UAS) after every pass.  ``patience``
    P (needs a dev set) stops the run once the dev score has not improved for
    P passes at the final C (passes of annealed EG at a larger C do not
    count); with a patience or a ``max_seconds`` budget and a dev set, the
    model has the weights of the best dev pass (``info["best_pass"]``), not
    the last pass's; the result keeps every pass's record.  With a
    :class:`~egnlp.training.records.BestPass` among the ``callbacks``, Ctrl-C
    raises :class:`~egnlp.training.records.TrainingInterrupted` carrying the
    parser of the best pass so far (without its labeler) instead of a bare
    KeyboardInterrupt.  The model's
    ``info`` records the training data (``data``, a name for it, and the
    files the sentences came from), the settings as given and the trainer's
    config (``egnlp model info`` prints them).
    """
    if not train:
        raise ValueError("no training sentences")
    siblings = siblings or grandparents
    spec = get_trainer(trainer)
    settings = parser_settings(trainer, settings, first_order=not siblings)
    config = make_config(spec, **settings)
    keeper = (BestPass(patience, getattr(config, "C", None))
              if patience is not None or getattr(config, "max_seconds", None) is not None else None)
    if patience is not None and not dev:
        raise ValueError("a patience needs a dev set to score the passes (give --dev, or a data set with one)")
    given_root, given_tree = root, tree
    root = root or guess_root(train)
    # the second-order model has one tree space: auto is projective there
    tree = PROJECTIVE if siblings and tree == AUTO else choose_tree([s.heads for s in train], tree)
    given_final, final_on_root = final_on_root, choose_final_on_root(final_on_root, train, root, siblings)
    budget = cache_budget(trainer, cache_mb, has_dev=bool(dev))
    jobs = resolve_jobs(jobs)
    featurizer, problem, extract_seconds = build_parsing_problem(train, root, feature_mode, hash_bits, tags, tree,
                                                                 cache_bytes=budget, siblings=siblings,
                                                                 grandparents=grandparents)
    problem.jobs = jobs
    sibling_features = problem.features.siblings if siblings else None
    grand_features = problem.features.grand if grandparents else None
    dev_score = (uas_scorer(featurizer, dev, root, tree, sibling_features, dev_cache_budget(trainer, cache_mb, budget),
                            jobs, grand_features, final_on_root) if dev else None)
    result, interrupted = fit_or_best(spec.fit, problem, config=config, dev=dev_score,
                                      callbacks=(*callbacks, *([keeper] if keeper is not None else [])), state=state)
    kept = keeper.result() if keeper is not None and dev and interrupted is None else None
    if kept is not None and kept.final.passes != result.final.passes:  # the best dev pass was not the last
        result = TrainResult(weights=kept.weights, records=result.records, converged=False)
    del problem, dev_score  # the arc features and their id tables go before the labeler trains
    if labels and has_labels(train) and result.state:
        # and so does the trainer's state (BCFW's on es: about 90 MB that would sit under the labeler's peak)
        result = TrainResult(weights=result.weights, records=result.records, converged=result.converged)
    release_freed_memory()  # the kept sentences' pages too, which the labeler's large arrays would not reuse
    labeler, labeler_info = None, {}
    if interrupted is None:
        try:
            labeler = _labeler(featurizer, train, labels, labeler_info)
        except KeyboardInterrupt:  # the arcs are trained: keep the best pass when asked to
            best = next((cb for cb in callbacks if isinstance(cb, BestPass) and cb.best is not None), None)
            if best is None:
                raise
            result, interrupted = best.result(), best.last
    info = model_info(trainer, dataclasses.asdict(config), train, dev, data,
                      {"root": given_root, "tree": given_tree, "tags": tags, "feature_mode": feature_mode,
                       "hash_bits": hash_bits, "labels": labels, "siblings": siblings,
                       "grandparents": grandparents, "final_on_root": given_final},
                      featurizer, extract_seconds, result)
    if kept is not None:
        info["best_pass"] = kept.final.as_dict()
        info["early_stop"] = bool(keeper.stop)
    info.update(labeler_info)
    if interrupted is not None:
        info["interrupted_after_pass"] = interrupted.passes
        raise TrainingInterrupted(Parser(featurizer, result.weights, root, info, None, tree,
                                         siblings=sibling_features, grand=grand_features,
                                         final_on_root=final_on_root), result, interrupted)
    return Parser(featurizer, result.weights, root, info, labeler, tree, siblings=sibling_features,
                  grand=grand_features, final_on_root=final_on_root), result


def train_parser_path(train: Sequence[Sentence], dev: Sequence[Sentence], Cs: Sequence[float], *,
                      trainer: str = DEFAULT_PARSER_TRAINER, root: str | None = None, feature_mode: str = "alphabet",
                      hash_bits: int = 22, tags: str | None = None, tree: str = PROJECTIVE, tol: float = 1e-3,
                      labels: bool = True, callbacks: Sequence[Callback] = (), on_point=None,
                      data: str | None = None, siblings: bool = False, cache_mb: float | None = None,
                      jobs: int | None = 1, grandparents: bool = False, final_on_root: bool | None = None,
                      **settings) -> tuple[Parser, list[PathPoint]]:
    """Train a warm-started path of C values (Collins et al. 2008, Sec. 7.1.2) and return the
    parser of the C with the best dev UAS, with the path's points (its ``info``, ``cache_mb``, ``jobs``
    and ``final_on_root`` as for :func:`train_parser`)."""
    if not train:
        raise ValueError("no training sentences")
    if not dev:
        raise ValueError("a regularization path picks C on dev data: give a dev set")
    siblings = siblings or grandparents
    spec = get_trainer(trainer)
    if "C" in settings:
        raise ValueError("a regularization path takes its C values from Cs, not from C=")
    check_settings(spec, {"C": Cs[0] if len(Cs) else 1.0, **settings})
    given_root, given_tree = root, tree
    root = root or guess_root(train)
    # the second-order model has one tree space: auto is projective there
    tree = PROJECTIVE if siblings and tree == AUTO else choose_tree([s.heads for s in train], tree)
    given_final, final_on_root = final_on_root, choose_final_on_root(final_on_root, train, root, siblings)
    budget = cache_budget(trainer, cache_mb)
    jobs = resolve_jobs(jobs)
    featurizer, problem, extract_seconds = build_parsing_problem(train, root, feature_mode, hash_bits, tags, tree,
                                                                 cache_bytes=budget, siblings=siblings,
                                                                 grandparents=grandparents)
    problem.jobs = jobs
    sibling_features = problem.features.siblings if siblings else None
    grand_features = problem.features.grand if grandparents else None
    points = regularization_path(problem, spec, list(Cs),
                                 dev=uas_scorer(featurizer, dev, root, tree, sibling_features,
                                                dev_cache_budget(trainer, cache_mb, budget), jobs, grand_features,
                                                final_on_root),
                                 tol=tol,
                                 callbacks=tuple(callbacks), on_point=on_point, **settings)
    best = max(points, key=lambda p: p.dev_uas)
    info = model_info(trainer, {"C": best.C, "tol": tol, **settings}, train, dev, data,
                      {"root": given_root, "tree": given_tree, "tags": tags, "feature_mode": feature_mode,
                       "hash_bits": hash_bits, "labels": labels, "siblings": siblings,
                       "grandparents": grandparents, "final_on_root": given_final}, featurizer, extract_seconds,
                      best.result)
    info["C_path"] = [p.row() for p in points]
    labeler = _labeler(featurizer, train, labels, info)
    return Parser(featurizer, best.result.weights, root, info, labeler, tree, siblings=sibling_features,
                  grand=grand_features, final_on_root=final_on_root), points


MAX_SOURCES = 20  # the files a model's metadata names at most


def model_info(trainer: str, config: dict, train: Sequence[Sentence], dev: Sequence[Sentence] | None,
               data: str | None, settings: dict, featurizer, extract_seconds: float, result: TrainResult) -> dict:
    """The ``info`` a trained parser carries: the trainer and its configuration, the training data
    (:func:`training_data`), the settings as given, the feature count and the final pass."""
    return {
        "trainer": trainer,
        "config": config,
        "data": training_data(train, dev, data),
        "settings": settings,
        "train_sentences": len(train),
        "n_features": int(np.size(result.weights)),  # arc and sibling features
        "extract_seconds": extract_seconds,
        "converged": result.converged,
        "final": result.final.as_dict(),
    }


def training_data(train: Sequence[Sentence], dev: Sequence[Sentence] | None, name: str | None = None) -> dict:
    """What a model records of its training data: ``name`` (as the caller calls it, or None), the files
    its sentences came from (at most :data:`MAX_SOURCES`), and the sentences and tokens of train and dev."""
    sources = list(dict.fromkeys(s.source for s in train if s.source and s.source != "<string>"))
    return {"name": name, "sources": sources[:MAX_SOURCES], "more_sources": max(len(sources) - MAX_SOURCES, 0),
            "train_sentences": len(train), "train_tokens": sum(len(s) for s in train),
            "dev_sentences": len(dev) if dev else 0}


def _labeler(featurizer: ArcFeaturizer, train: Sequence[Sentence], labels: bool, info: dict) -> ArcLabeler | None:
    """The arc labeler of a parser trained on ``train``, when wanted and the data are labeled;
    what it took goes to ``info["labeler"]``."""
    if not (labels and has_labels(train)):
        return None
    start = time.perf_counter()
    labeler, result = train_labeler(featurizer, train)
    info["labeler"] = {"labels": len(labeler.labels), "n_features": int(labeler.weights.size),
                       "seconds": time.perf_counter() - start, "final": result.final.as_dict()}
    return labeler


# The labeler's defaults (a maxent classifier per arc trained by coordinate descent, Huang et al.
# 2010): chosen on es dev, see docs/labels.md.  Gold-tree label accuracy on the dev splits after 13 / 18 /
# 58 passes: es 95.33 / 95.38 / 95.32, eu 88.30 / 88.76 / 88.46, pt-bosque 95.26 / 95.23 / 95.29,
# nl-alpino 93.15 / 93.06 / 93.15: 20 passes (about 0.9 CPU s each on es with the objective) lose nothing
# against 60 and save 40 CPU s of an es training run.
LABELER_SIGMA2 = 10.0
LABELER_CUTOFF = 1
LABELER_PASSES = 20


def has_labels(sentences: Sequence[Sentence]) -> bool:
    """Whether the sentences carry dependency labels (some DEPREL other than ``_``)."""
    return any(label != "_" for s in sentences for label in s.deprels or ())


def train_labeler(featurizer: ArcFeaturizer, train: Sequence[Sentence], *, sigma2: float = LABELER_SIGMA2,
                  cutoff: int = LABELER_CUTOFF, max_passes: int = LABELER_PASSES, tol: float = 1e-4,
                  dev: Sequence[Sentence] | None = None, callbacks: Sequence[Callback] = ()
                  ) -> tuple[ArcLabeler, TrainResult]:
    """Train the second-stage arc labeler on the gold trees of ``train`` (McDonald, Lerman and
    Pereira 2006): one event per word, the label of its gold arc, features of
    :mod:`egnlp.features.arc_labels`; maxent coordinate descent (``cd``) with prior variance
    ``sigma2``; predicate keys seen fewer than ``cutoff`` times are dropped.  ``dev`` (gold
    trees) is scored by label accuracy (%) after every pass."""
    encoded = featurizer.encode(train)
    heads = [s.heads for s in train]
    ev_ptr, keys = arc_label_keys(train, encoded, heads)
    unique, counts = np.unique(keys, return_counts=True)
    alphabet = KeyTable(unique[counts >= cutoff])
    ev_ptr, ids = predicate_ids(alphabet, ev_ptr, keys)
    names = sorted({label for s in train for label in s.deprels})
    index = {label: k for k, label in enumerate(names)}
    gold = np.array([index[label] for s in train for label in s.deprels], dtype=np.int64)
    at_root = np.array([h == 0 for s in train for h in s.heads])
    root_ok = np.bincount(gold[at_root], minlength=len(names)) > 0
    other_ok = np.bincount(gold[~at_root], minlength=len(names)) > 0
    problem = MaxentProblem.from_events(ev_ptr, ids, gold, len(names), len(alphabet))
    labeler = ArcLabeler(names, root_ok, other_ok, alphabet.keys, problem.feat_ptr, problem.feat_label,
                         np.zeros(problem.n_features))
    dev_score = None
    if dev:
        dev_events = labeler.events(dev, featurizer.encode(dev), [s.heads for s in dev])
        dev_gold = np.array([index.get(label, -1) for s in dev for label in s.deprels])
        dev_root = np.array([h == 0 for s in dev for h in s.heads])

        def dev_score(w: np.ndarray) -> float:
            return 100.0 * float(np.mean(labeler.best(labeler.scores(dev_events, w), dev_root) == dev_gold))

    spec = get_trainer("cd", MAXENT)
    config = make_config(spec, C=1.0 / sigma2, max_passes=max_passes, tol=tol, grad_norm=False)
    result = spec.fit(problem, config=config, dev=dev_score, callbacks=tuple(callbacks))
    labeler.weights = np.ascontiguousarray(result.weights)
    return labeler, result
