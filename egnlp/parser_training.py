"""Parser training: features, problem, trainer, labeler, one :class:`~egnlp.parser.Parser`.

    from egnlp import train_parser
    from egnlp.corpora import load_dataset
    parser, result = train_parser(load_dataset("es", "train"), load_dataset("es", "dev"), root="single")
    trees = parser.parse_corpus(load_dataset("es", "test"))

:func:`train_parser` takes a :class:`~egnlp.settings.ParserSettings` or its
fields as keyword arguments (the command line's ``parser train`` builds the
same object): one run, a warm-started path of C values (``C_path``), or
CoCoA+ rounds on a Dask cluster (``dask``, :mod:`egnlp.distributed`).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from typing import Any, Sequence

import numpy as np

from egnlp.base.errors import InputError
from egnlp.base.workers import map_blocks, resolve_jobs
from egnlp.corpora import Sentence, guess_root
from egnlp.features.arc_featurizer import ArcFeaturizer
from egnlp.features.arc_labels import LABEL_TEMPLATES_VERSION
from egnlp.features.arc_parts import ArcPartFeatures, CacheBudget
from egnlp.features.grandparents import GrandFeaturizer, GrandPartFeatures
from egnlp.features.hashing import KeyTable
from egnlp.features.siblings import SiblingFeaturizer, SiblingPartFeatures
from egnlp.model_info import cascade_line, tree_choice_line
from egnlp.parser.cascade import ArcPruner, choose_threshold, count_kept
from egnlp.parser.eisner_grandparents import grand_argmax
from egnlp.parser.eisner_siblings import n_sibling_parts, sibling_argmax
from egnlp.parser.labeler import ArcLabeler, allowed_labels, arc_label_keys, predicate_ids
from egnlp.parser.parser_model import Parser, final_punct
from egnlp.parser.parsing_problem import GrandParsingProblem, ParsingProblem, SiblingParsingProblem
from egnlp.parser.rearrange import rearrange
from egnlp.parser.trees import (AUTO, FINAL_ON_ROOT_SHARE, NON_PROJECTIVE, PROJECTIVE, check_final_on_root,
                                final_on_root_argmax, final_on_root_share, tree_space)
from egnlp.settings import ParserSettings
from egnlp.training.maxent_problem import MaxentProblem
from egnlp.training.path import regularization_path
from egnlp.training.records import (BestPass, Callback, TrainingInterrupted, TrainResult, fit_or_best,
                                    interrupts_between_passes)
from egnlp.training.registry import MAXENT, get_trainer, make_config

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
    return CacheBudget(int(cache_mb * (1 << 20)))


def release_freed_memory() -> None:
    """Free what only reference cycles still hold, then give the pages of freed memory inside the C heap
    back to the system (glibc's ``malloc_trim``).

    Arrays of a few hundred KB, such as the compiled sentences a training run keeps, come from the C
    heap, and freeing them leaves their pages in the process; the labeler's arrays, each larger, are
    mapped afresh and do not reuse them, so they would add to its peak (es with 64 MiB of kept
    sentences: 490 MiB without this, 453 MiB with it, 431 MiB when none are kept; ``/usr/bin/time``).
    A finished training problem is such garbage until the collector's next full pass: collected here, and
    after a cascade's pruner, ``parser train --data es --tree projective --parts grandparents`` peaks at
    592 MB instead of 653 MB (two runs side by side, ``/usr/bin/time``; the labeler starts at 376 MB of
    RSS).  Nothing is given back where the C library has no ``malloc_trim``."""
    import ctypes
    import gc

    gc.collect()

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


def _dev_correct(job: tuple, block: Sequence[int]) -> list[int]:
    """The number of words with the right head in each dev sentence of ``block`` (``job``: see uas_scorer)."""
    pf, gold, argmax, root, order, w, finals, keeps, rearranged = job
    out = []
    for s in block:
        lo, hi = pf.parts(s)
        k = len(gold[s]) + 1
        parts = pf.layout(s) if keeps is not None else None  # the kept arcs' parts only
        if order == 3:
            theta = pf.scores(lo, hi, w)
            if parts is not None:
                sib, grand = theta[:parts.n_sib], theta[parts.n_sib:]
                heads = grand_argmax(sib, grand, k, root, parts=parts)
            else:
                middle = n_sibling_parts(k)
                sib, grand = theta[:middle], theta[middle:].reshape(k, k, k)
                heads = grand_argmax(sib, grand, k, root)
            if rearranged:
                heads = rearrange(heads, sib, grand, root, parts=parts)[0]
        elif order == 2:
            theta = pf.scores(lo, hi, w)
            heads = sibling_argmax(theta, k, root, parts=parts)
            if rearranged:
                heads = rearrange(heads, theta, None, root, parts=parts)[0]
        elif finals is not None and finals[s]:
            heads = final_on_root_argmax(argmax, pf.scores(lo, hi, w).reshape(k, k), root)
        else:
            heads = argmax(pf.scores(lo, hi, w).reshape(k, k), root=root)
        out.append(int((heads[1:] == gold[s]).sum()))
    return out


def uas_scorer(featurizer: ArcFeaturizer, sentences: Sequence[Sentence], root: str, tree: str = PROJECTIVE,
               siblings: SiblingFeaturizer | None = None, budget: CacheBudget | None = None, jobs: int = 1,
               grand: GrandFeaturizer | None = None, final_on_root: bool = False, pruner: ArcPruner | None = None):
    """A ``w -> UAS`` function over ``sentences`` (punctuation counted) in a tree space, for dev records;
    with ``siblings``, of the second-order parser with those sibling features (and with ``grand``, of
    the third-order one with those grandparent features too); ``final_on_root``: decoded as a
    :class:`~egnlp.parser.parser_model.Parser` with it decodes.  ``budget``: compiled
    sentences kept between calls (none by default); ``jobs``: processes that decode the sentences
    (:func:`~egnlp.base.workers.map_blocks`; the score is the same for any number), for a first-order
    parser only from :data:`DEV_JOBS_MIN_SENTENCES` sentences up; ``pruner``: a cascade's first stage, whose
    masks of the dev sentences (made once) the higher-order charts decode over.  A higher-order parser in the
    non-projective space rearranges the projective chart's tree as :class:`~egnlp.parser.parser_model.Parser`
    does (McDonald and Pereira 2006, Sec. 3.2)."""
    argmax = tree_space(tree).argmax
    encoded = featurizer.encode(sentences)
    keeps = list(pruner.masks(featurizer, encoded)) if pruner is not None else None
    pf = ArcPartFeatures(featurizer, encoded, budget if budget is not None else 0, keeps)
    if siblings is not None:
        pf = SiblingPartFeatures(pf, siblings, encoded, keeps)
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
        job = (pf, gold, argmax, root, order, w, finals, keeps, order > 1 and tree == NON_PROJECTIVE)
        correct = map_blocks(_dev_correct, job, range(len(gold)), jobs)
        return 100.0 * sum(correct) / max(total, 1)

    return score


def choose_final_on_root(given: bool | None, train: Sequence[Sentence], root: str, higher_order: bool) -> bool:
    """Whether a parser decodes final punctuation as a leaf of the root's child: ``given`` (checked by the
    settings), or by default (None) for a first-order, single-root parser whose training trees that end in
    punctuation do so at least :data:`~egnlp.parser.trees.FINAL_ON_ROOT_SHARE` of the time."""
    if given is None:
        return (root == "single" and not higher_order and final_on_root_share(
            [s.heads for s in train], final_punct(train)) >= FINAL_ON_ROOT_SHARE)
    return bool(given)


def build_parsing_problem(train: Sequence[Sentence], root: str, feature_mode: str = "alphabet",
                          hash_bits: int = 22, tags: str | None = None,
                          tree: str = PROJECTIVE, featurizer: ArcFeaturizer | None = None,
                          cache_bytes: int | CacheBudget = 0, siblings: bool = False, grandparents: bool = False,
                          keep: Sequence[np.ndarray] | None = None
                          ) -> tuple[ArcFeaturizer, ParsingProblem | SiblingParsingProblem, float]:
    """Fit the arc features on ``train`` and set up its parsing problem; also the seconds it took.

    The features of the arcs are computed one sentence at a time as training asks for them
    (:class:`~egnlp.features.arc_parts.ArcPartFeatures`), not stored.

    ``tags`` (both, upos, xpos; default: chosen from the data) names the tag columns the templates
    read; ``tree`` (projective, non-projective) and ``root`` (single, multi) are the tree space.
    With a fitted ``featurizer`` the problem uses its features as they are (the feature settings are
    not read): one shard of a training set whose features were fitted on the whole set.
    ``cache_bytes`` keeps compiled sentences (arcs and siblings) for later passes up to that many bytes,
    or a :class:`~egnlp.features.arc_parts.CacheBudget` shared with other part feature sets.
    ``siblings`` adds sibling parts: a second-order
    :class:`~egnlp.parser.parsing_problem.SiblingParsingProblem` over projective trees, whose argmax with
    ``tree`` non-projective is the chart's tree rearranged (McDonald and Pereira 2006, Sec. 3.2:
    :mod:`egnlp.parser.rearrange`; the marginals stay projective), whose
    features' ``siblings`` hold the sibling templates' alphabet, fitted on ``train``.  ``grandparents``
    adds grandparent parts to the sibling ones: a third-order
    :class:`~egnlp.parser.parsing_problem.GrandParsingProblem` whose features' ``grand`` hold the grandparent
    templates' alphabet.  ``keep`` (second and third order): a cascade's masks of the kept arcs of every
    sentence, the gold arcs among them (:mod:`egnlp.parser.cascade`); the parts are then those of the
    kept arcs only (:mod:`egnlp.features.kept_parts`).
    """
    siblings = siblings or grandparents
    missing = [i for i, s in enumerate(train) if s.heads is None]
    if missing:
        raise InputError(f"training sentence {missing[0] + 1} has no heads")
    start = time.perf_counter()
    fitted = featurizer is not None
    featurizer = featurizer if fitted else ArcFeaturizer.for_corpus(train, feature_mode, hash_bits, tags)
    encoded = featurizer.encode(train)
    heads = [s.heads for s in train]
    if not fitted:
        featurizer.fit(encoded, heads)
    arcs = ArcPartFeatures(featurizer, encoded, cache_bytes, keep if (siblings or grandparents) else None)
    if grandparents:
        sib = SiblingPartFeatures(arcs, SiblingFeaturizer().fit(encoded, heads), encoded, keep)
        problem = GrandParsingProblem(GrandPartFeatures(sib, GrandFeaturizer().fit(encoded, heads), encoded),
                                      heads, root, keep, tree == NON_PROJECTIVE)
    elif siblings:
        problem = SiblingParsingProblem(SiblingPartFeatures(arcs, SiblingFeaturizer().fit(encoded, heads), encoded,
                                                            keep), heads, root, keep, tree == NON_PROJECTIVE)
    else:
        problem = ParsingProblem(arcs, heads, root, tree)
    return featurizer, problem, time.perf_counter() - start


@dataclasses.dataclass(frozen=True)
class TreeChoice:
    """The tree space a parser decodes in, as the settings and the training trees decide it (``tree`` is
    ``auto`` until :func:`measure_tree` has measured it)."""

    root: str  # single or multi
    tree: str  # projective, non-projective, or auto (not measured yet)
    final_on_root: bool  # final punctuation decoded on the root's child

    @classmethod
    def of(cls, train: Sequence[Sentence], settings: ParserSettings) -> TreeChoice:
        root = settings.root or guess_root(train)
        settings.check_final_on_root(root)
        higher = settings.order_of_model > 1
        tree = settings.tree if settings.tree == AUTO else tree_space(settings.tree).name
        return cls(root, tree, choose_final_on_root(settings.final_on_root, train, root, higher))


# What ``train_parser`` tells of a stage that runs besides the trainer's passes: on_stage(name, text), a
# line saying what the stage does as it starts or what it found as it ends (``parser train`` prints it).
StageNote = Callable[[str, str], None]


def _say(on_stage: StageNote | None, name: str, text: str) -> None:
    if on_stage is not None:
        on_stage(name, text)


def tuning_cut(n: int) -> int:
    """How many of ``n`` training sentences the held-out tuning models train on: all but the last tenth
    (all of them below 10 sentences)."""
    return n - n // 10 if n >= 10 else n


def measure_tree(train: Sequence[Sentence], settings: ParserSettings, space: TreeChoice,
                 featurizer: ArcFeaturizer | None = None, pruner: ArcPruner | None = None,
                 keep: Sequence[np.ndarray] | None = None, on_stage: StageNote | None = None) -> tuple[str, dict]:
    """``--tree auto`` by measurement: the settings' model (its order, trainer and features; no dev set, no
    early stop) trained on the first nine tenths of ``train`` decodes the last tenth both ways, and the
    space with the higher UAS there wins, projective on a tie.  One model is trained in each space, as
    the settings would train it there, and decodes in it: first order, Eisner's algorithm against
    Chu-Liu-Edmonds; second and third order, the projective chart against its rearrangement (McDonald and
    Pereira 2006, Sec. 3.2; trained with the rearranged argmax).  A pruned third-order model trained over
    projective trees decodes worse rearranged (UAS on the tenth: eu 2.0, pt-bosque 2.7 lower; on eu test and
    the UD dev files 2.1 to 3.5 lower), so one model decoded both ways would not measure the space.  The dev
    data are never read.

    ``featurizer``, ``pruner``, ``keep``: a cascade's arc features (fitted on all of ``train``), its first
    stage (trained on the same nine tenths) and the masks of every training sentence; the tenth is decoded
    over the pruner's masks, without its gold arcs.  Without a featurizer the features are fitted on the
    nine tenths.  Returns the tree space and what the model records: both UAS, the sentences and the CPU
    seconds; ``on_stage`` (:data:`StageNote`) hears of the measurement as it starts (``tree``) and of its
    result (``tree_choice``)."""
    start = time.process_time()
    cut = tuning_cut(len(train))
    tune = train[cut:]
    if not tune:
        return PROJECTIVE, {"chosen": PROJECTIVE, "tuning_sentences": 0, "seconds": 0.0}
    _say(on_stage, "tree", f"--tree auto: a model trained in each tree space on the first {cut:,} sentences, "
                           f"each decoding the last {len(tune):,}")
    sub = dataclasses.replace(settings, tree=PROJECTIVE, patience=None, C_path=None, max_seconds=None,
                              cache_mb=None)
    spec, config = sub.spec, sub.trainer_configs()[0]
    jobs = resolve_jobs(settings.jobs)
    higher = settings.order_of_model > 1
    scores = {}
    for tree in (PROJECTIVE, NON_PROJECTIVE):
        fitted, problem, _ = build_parsing_problem(
            train[:cut], space.root, settings.feature_mode, settings.hash_bits, settings.tags, tree, featurizer,
            siblings=settings.siblings, grandparents=settings.grandparents,
            keep=keep[:cut] if keep is not None else None)
        problem.jobs = jobs
        with interrupts_between_passes():
            weights = spec.fit(problem, config=config).weights
        siblings = problem.features.siblings if higher else None
        grand = problem.features.grand if settings.grandparents else None
        del problem
        scores[tree] = uas_scorer(fitted, tune, space.root, tree, siblings, jobs=jobs, grand=grand,
                                  final_on_root=space.final_on_root, pruner=pruner)(weights)
    chosen = NON_PROJECTIVE if scores[NON_PROJECTIVE] > scores[PROJECTIVE] else PROJECTIVE
    info = {"chosen": chosen, "tuning_sentences": len(tune), "uas": scores, "seconds": time.process_time() - start}
    _say(on_stage, "tree_choice", tree_choice_line(info))
    return chosen, info


@dataclasses.dataclass
class ArcRun:
    """What training the arcs gave: the features, the trainer's result and what the model records of it."""

    featurizer: ArcFeaturizer
    result: TrainResult
    config: Any  # the trainer's config (of the best C on a path)
    extract_seconds: float
    siblings: SiblingFeaturizer | None = None
    grand: GrandFeaturizer | None = None
    interrupted: Any = None  # the last PassRecord of a run that Ctrl-C stopped
    pruner: ArcPruner | None = None  # a cascade's first stage
    info: dict = dataclasses.field(default_factory=dict)  # best_pass, early_stop, C_path, distributed, tree_choice
    tree: str = PROJECTIVE  # the tree space decoded (``auto`` measured)


def train_parser(train: Sequence[Sentence], dev: Sequence[Sentence] | None = None,
                 settings: ParserSettings | None = None, *, callbacks: Sequence[Callback] = (),
                 state: dict | None = None, data: str | None = None, on_point=None, client: Any = None,
                 on_stage: StageNote | None = None, **options: Any) -> tuple[Parser, TrainResult]:
    """Train a parser on ``train`` (sentences with heads) and its arc labeler when the sentences carry labels.

    ``settings`` (a :class:`~egnlp.settings.ParserSettings`; its fields also as keyword ``options``, and
    any other setting of the trainer's config, such as ``eta_init``) say the model, the tree space and
    the trainer: ``parts`` arcs (first order), siblings (second order, McDonald and Pereira 2006) or
    grandparents (third order, Koo and Collins 2010), a higher order pruned by a first-order ``cascade``
    unless it is False; one run, a warm-started path of C values (``C_path``,
    Collins et al. 2008, Sec. 7.1.2: the C with the best dev UAS is kept, ``on_point`` sees each), or
    CoCoA+ rounds of online EG on a Dask cluster (``dask``; ``client``, or a new local cluster).

    The dev set, if given, is scored (UAS) after every pass; with a patience (by default for the online
    trainers) or a time budget the model has the weights of the best dev pass (``info["best_pass"]``).
    ``state`` warm-starts the trainer; the result carries the trainer's state only when no labeler is
    trained (its memory goes before the labeler's). With ``save_on_interrupt`` (or a
    :class:`~egnlp.training.records.BestPass` among the ``callbacks``), Ctrl-C raises
    :class:`~egnlp.training.records.TrainingInterrupted` carrying the parser of the best pass so far.
    The model's ``info`` records the training data (``data`` names it), the settings and the trainer's
    config (``egnlp model info`` prints them).  ``on_stage`` (:data:`StageNote`) hears of the stages that
    run besides the trainer's passes, which the ``callbacks`` see: a cascade's pruner, ``--tree auto``'s
    measurement, the labeler.

    Raises:
        SettingsError: settings that do not go together, or that the data rule out.
        InputError: no training sentences, or one without heads.
    """
    settings = ParserSettings.build(settings, **options)
    if not train:
        raise InputError("no training sentences")
    settings.check_data(bool(dev))
    space = TreeChoice.of(train, settings)
    callbacks = (*([BestPass()] if settings.save_on_interrupt else []), *callbacks)
    if settings.dask:
        arcs = _train_arcs_on_dask(train, dev, settings, space, callbacks, state, client, on_stage)
    else:
        arcs = _train_arcs(train, dev, settings, space, callbacks, state, on_point, on_stage)
    result = arcs.result
    if settings.labels and has_labels(train) and result.state:
        # the trainer's state goes before the labeler trains, from the arcs' run too (es: the peak of the
        # default training went from 604 to 463 MB, /usr/bin/time)
        result = arcs.result = TrainResult(weights=result.weights, records=result.records, converged=result.converged)
    release_freed_memory()  # the kept sentences' pages too, which the labeler's large arrays would not reuse
    labeler, labeler_info, interrupted = None, {}, arcs.interrupted
    if interrupted is None:
        try:
            with interrupts_between_passes():  # Ctrl-C stops the labeler between its passes, never in a kernel
                labeler = labeler_for(arcs.featurizer, train, settings.labels, labeler_info, on_stage)
        except KeyboardInterrupt:  # the arcs are trained: keep the best pass when asked to
            best = next((cb for cb in callbacks if isinstance(cb, BestPass) and cb.best is not None), None)
            if best is None:
                raise
            result, interrupted = best.result(), best.last
    info = model_info(settings, arcs.config, train, dev, data, arcs.featurizer, arcs.extract_seconds, result)
    info.update(arcs.info)
    info.update(labeler_info)
    if interrupted is not None:
        info["interrupted_after_pass"] = interrupted.passes
    parser = Parser(arcs.featurizer, result.weights, space.root, info, labeler, arcs.tree, siblings=arcs.siblings,
                    grand=arcs.grand, final_on_root=space.final_on_root, pruner=arcs.pruner)
    if interrupted is not None:
        raise TrainingInterrupted(parser, result, interrupted)
    return parser, result


def _train_arcs(train: Sequence[Sentence], dev: Sequence[Sentence] | None, settings: ParserSettings,
                space: TreeChoice, callbacks: Sequence[Callback], state: dict | None, on_point,
                on_stage: StageNote | None = None) -> ArcRun:
    """The arcs trained in this process: one run or a path of C values."""
    spec, configs = settings.spec, settings.trainer_configs()
    budget = cache_budget(spec.name, settings.cache_mb, has_dev=bool(dev))
    jobs = resolve_jobs(settings.jobs)
    featurizer, pruner, keep, cascade_info = None, None, None, {}
    if settings.cascaded:
        featurizer = ArcFeaturizer.for_corpus(train, settings.feature_mode, settings.hash_bits, settings.tags)
        featurizer.fit(featurizer.encode(train), [s.heads for s in train])
        pruner, keep, cascade_info = train_pruner(featurizer, train, settings, space.root, on_stage)
        release_freed_memory()  # the pruner's problem, before the model's
    tree_info = None
    if space.tree == AUTO:
        tree, tree_info = measure_tree(train, settings, space, featurizer, pruner, keep, on_stage)
        space = dataclasses.replace(space, tree=tree)
    featurizer, problem, seconds = build_parsing_problem(
        train, space.root, settings.feature_mode, settings.hash_bits, settings.tags, space.tree, featurizer,
        cache_bytes=budget, siblings=settings.siblings, grandparents=settings.grandparents, keep=keep)
    problem.jobs = jobs
    run = ArcRun(featurizer, None, configs[0], seconds,  # type: ignore[arg-type]
                 siblings=problem.features.siblings if settings.order_of_model > 1 else None,
                 grand=problem.features.grand if settings.grandparents else None, pruner=pruner, tree=space.tree)
    if cascade_info:
        run.info["cascade"] = cascade_info
    if tree_info is not None:
        run.info["tree_choice"] = tree_info
    dev_score = (uas_scorer(featurizer, dev, space.root, space.tree, run.siblings,
                            dev_cache_budget(spec.name, settings.cache_mb, budget), jobs, run.grand,
                            space.final_on_root, pruner) if dev else None)
    if settings.Cs is not None:
        points = regularization_path(problem, spec, configs, dev=dev_score, callbacks=tuple(callbacks),
                                     on_point=on_point)
        best = max(range(len(points)), key=lambda k: points[k].dev_uas)
        run.result, run.config = points[best].result, configs[best]
        run.info["C_path"] = [p.row() for p in points]
        return run
    patience = settings.patience_with(bool(dev))
    keeper = (BestPass(patience, run.config.C)
              if patience is not None or getattr(run.config, "max_seconds", None) is not None else None)
    run.result, run.interrupted = fit_or_best(spec.fit, problem, config=run.config, dev=dev_score,
                                              callbacks=(*callbacks, *([keeper] if keeper is not None else [])),
                                              state=state)
    kept = keeper.result() if keeper is not None and dev and run.interrupted is None else None
    if kept is not None:
        if kept.final.passes != run.result.final.passes:  # the best dev pass was not the last
            run.result = TrainResult(weights=kept.weights, records=run.result.records, converged=False)
        run.info.update(best_pass=kept.final.as_dict(), early_stop=bool(keeper.stop))
    return run


def train_pruner(featurizer: ArcFeaturizer, train: Sequence[Sentence], settings: ParserSettings, root: str,
                 on_stage: StageNote | None = None) -> tuple[ArcPruner, list[np.ndarray], dict]:
    """A cascade's first stage (Koo and Collins 2010, Sec. 5; pruning by max-marginals, Rush and Petrov
    2012): a first-order projective model over the fitted
    arc features ``featurizer``, trained as the settings' first-order parser would be (``cascade_passes``
    passes at most when given) on all but the training file's last tenth (the tuning split), and its
    threshold, the largest of
    :data:`~egnlp.parser.cascade.THRESHOLDS` that keeps ``cascade_recall`` of the tuning split's gold arcs
    with ``cascade_top_k`` heads per word at most (:func:`~egnlp.parser.cascade.choose_threshold`).  Also the
    masks of every training sentence, the gold arcs added, and what the model records: the threshold, the
    rows tried, and the first stage's recall (gold arcs kept without that help) and kept share of the
    training sentences.  ``on_stage`` (:data:`StageNote`) hears of the pruner as it starts (``pruner``)
    and of the threshold chosen (``cascade``)."""
    start = time.process_time()
    cut = tuning_cut(len(train))
    first = dataclasses.replace(settings, parts="arcs", cascade=False, patience=None,
                                C_path=None, max_seconds=None, max_passes=settings.cascade_passes)
    spec, config = first.spec, first.trainer_configs()[0]
    passes = getattr(config, "max_passes", None)
    _say(on_stage, "pruner", f"cascade: a first-order pruner trained on the first {cut:,} sentences"
                             + (f" ({passes} passes)" if passes else "")
                             + f", its threshold chosen on the last {len(train) - cut:,}")
    if getattr(config, "evaluate", False):  # the pruner's objectives are never read: not computed (BCFW)
        config = dataclasses.replace(config, evaluate=False)
    _, problem, _ = build_parsing_problem(train[:cut], root, tree=PROJECTIVE, featurizer=featurizer)
    problem.jobs = resolve_jobs(settings.jobs)
    with interrupts_between_passes():
        weights = spec.fit(problem, config=config).weights
    tune = train[cut:] or train
    pruner = ArcPruner(weights, root, 1.0, settings.cascade_top_k)
    tune_mu = list(pruner.marginals(featurizer, featurizer.encode(tune)))
    threshold, rows = choose_threshold(tune_mu, [s.heads for s in tune], settings.cascade_top_k,
                                       settings.cascade_recall)
    pruner = ArcPruner(weights, root, threshold, settings.cascade_top_k)
    keep = list(pruner.masks(featurizer, featurizer.encode(train)))
    featurizer.release_score_lookup()  # the model's passes compile ids instead: the table would sit idle
    pruner.release_weights()  # so would the pruner's weights as the direct scorer reads them
    counts = count_kept(keep, [s.heads for s in train])
    for mask, sentence in zip(keep, train):  # the gold arcs too
        mask[np.asarray(sentence.heads, dtype=np.int64), np.arange(1, len(sentence) + 1)] = 1
    info = {"threshold": threshold, "top_k": settings.cascade_top_k, "values": pruner.values,
            "tuning_sentences": len(tune),
            "tuning": rows, "train_recall": counts.recall, "train_kept": counts.kept_share,
            "seconds": time.process_time() - start}
    _say(on_stage, "cascade", f"cascade: {cascade_line(info)}; {info['seconds']:.1f} CPU s")
    return pruner, keep, info


def _train_arcs_on_dask(train: Sequence[Sentence], dev: Sequence[Sentence] | None, settings: ParserSettings,
                        space: TreeChoice, callbacks: Sequence[Callback], state: dict | None, client: Any,
                        on_stage: StageNote | None = None) -> ArcRun:
    """The arcs trained by CoCoA+ on a Dask cluster (:mod:`egnlp.distributed`): the features fitted here and
    shipped, one EG state per shard on the workers."""
    from contextlib import nullcontext

    from egnlp.distributed import dask_client, fit_cocoa, n_workers

    config = settings.trainer_configs()[0]
    tree_info = None
    if space.tree == AUTO:
        tree, tree_info = measure_tree(train, settings, space, on_stage=on_stage)
        space = dataclasses.replace(space, tree=tree)
    featurizer, _, seconds = build_parsing_problem(train, space.root, settings.feature_mode, settings.hash_bits,
                                                   settings.tags, space.tree)
    dev_score = uas_scorer(featurizer, dev, space.root, space.tree, final_on_root=space.final_on_root) if dev else None
    with nullcontext(client) if client is not None else dask_client("local", settings.workers) as cluster:
        shards = settings.workers or n_workers(cluster)
        result = fit_cocoa(cluster, featurizer, train, space.root, space.tree, settings.spec.objective, shards,
                           config=config, dev=dev_score, callbacks=tuple(callbacks), state=state)
    run = ArcRun(featurizer, result, config, seconds, tree=space.tree)
    if tree_info is not None:
        run.info["tree_choice"] = tree_info
    run.info["distributed"] = {"engine": "dask", "method": "cocoa+", "shards": shards, "sigma": shards}
    return run

MAX_SOURCES = 20  # the files a model's metadata names at most


def model_info(settings: ParserSettings, config: Any, train: Sequence[Sentence], dev: Sequence[Sentence] | None,
               data: str | None, featurizer: ArcFeaturizer, extract_seconds: float, result: TrainResult) -> dict:
    """The ``info`` a trained parser carries: the trainer and its configuration, the training data
    (:func:`training_data`), the settings as given, the feature count and the final pass."""
    return {
        "trainer": settings.trainer_name,
        "config": dataclasses.asdict(config),
        "data": training_data(train, dev, data),
        "settings": settings.as_dict(),
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


def labeler_for(featurizer: ArcFeaturizer, train: Sequence[Sentence], labels: bool, info: dict,
                on_stage: StageNote | None = None) -> ArcLabeler | None:
    """The arc labeler of a parser trained on ``train``, when wanted and the data are labeled;
    what it took goes to ``info["labeler"]``, and ``on_stage`` (:data:`StageNote`) hears of it as it starts
    (``labeler``)."""
    if not (labels and has_labels(train)):
        return None
    _say(on_stage, "labeler", f"arc labeler: maxent over the {sum(map(len, train)):,} training arcs, "
                              f"{LABELER_PASSES} passes of coordinate descent at most")
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
                  dev: Sequence[Sentence] | None = None, callbacks: Sequence[Callback] = (),
                  templates: int = LABEL_TEMPLATES_VERSION) -> tuple[ArcLabeler, TrainResult]:
    """Train the second-stage arc labeler on the gold trees of ``train`` (McDonald, Lerman and
    Pereira 2006): one event per word, the label of its gold arc, features of
    :mod:`egnlp.features.arc_labels`; maxent coordinate descent (``cd``) with prior variance
    ``sigma2``; predicate keys seen fewer than ``cutoff`` times are dropped.  ``dev`` (gold
    trees) is scored by label accuracy (%) after every pass.  ``templates``: the version of the label
    templates (:data:`~egnlp.features.arc_labels.LABEL_TEMPLATES_VERSION`, the default, or an older one)."""
    encoded = featurizer.encode(train)
    heads = [s.heads for s in train]
    ev_ptr, keys = arc_label_keys(train, encoded, heads, templates=templates)
    unique, counts = np.unique(keys, return_counts=True)
    alphabet = KeyTable(unique[counts >= cutoff])
    del unique, counts
    ev_ptr, ids = predicate_ids(alphabet, ev_ptr, keys)
    del keys  # every event's keys (es: 29 MiB) are its predicate ids now
    names = sorted({label for s in train for label in s.deprels})
    index = {label: k for k, label in enumerate(names)}
    gold = np.array([index[label] for s in train for label in s.deprels], dtype=np.int64)
    at_root = np.array([h == 0 for s in train for h in s.heads])
    root_ok, other_ok = allowed_labels(gold, at_root, len(names))
    problem = MaxentProblem.from_events(ev_ptr, ids, gold, len(names), len(alphabet))
    del ev_ptr, ids  # the problem has its own copy, without repeated predicates: gone before the trainer's arrays
    labeler = ArcLabeler(names, root_ok, other_ok, alphabet.keys, problem.feat_ptr, problem.feat_label,
                         np.zeros(problem.n_features), templates=templates)
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
