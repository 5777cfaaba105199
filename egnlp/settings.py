"""One settings object per job: how a parser or a tagger is trained, its defaults and its rules, once.

:class:`ParserSettings`, :class:`TaggerSettings` and :class:`TokenizerSettings` are frozen dataclasses.
The command line builds them from its options (each field's metadata is its
option: flag, help and shown default, so ``--help`` and ``docs/cli.md`` are
made from here), the Python API from its keyword arguments
(:func:`egnlp.train_parser`, :func:`egnlp.train_tagger`) and the Dask driver
from its own; each checks every rule when it is made and raises
:class:`~egnlp.base.errors.SettingsError` naming the settings by their
command-line flags. A field left ``None`` is decided by the rules below (the
trainer's own default, the data's), and the resolved values are properties.

This module imports no NumPy and no kernels: ``egnlp --help`` reads it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from egnlp.base.errors import SettingsError
from egnlp.training.configs import ORDERS, EGConfig
from egnlp.training.registry import (MAXENT, STRUCTURED, Trainer, check_value, get_trainer, make_config,
                                     path_configs, trainer_names)

# --- the parser's defaults, chosen on the tuning splits (docs/accuracy.md) ----------------------------
# Averaged BCFW on the max-margin objective: on es it reaches the dev UAS that max-margin EG reaches after
# 30 to 60 passes at a fraction of EG's CPU time; EG stays one option away (--trainer eg-mm).
PARSER_TRAINER = "bcfw"
DASK_TRAINERS = ("eg-mm", "eg-ll")  # online EG: the trainers whose state a Dask shard keeps; the first by default
# The max-margin C parses best at 30 on every tuning split, first order and with sibling parts; the
# log-linear C is the best of a warm-started path on es.
PARSER_C = {"mm": 30.0, "ll": 20.0}
# Averaged BCFW's pass limit: 8 for a first-order model (the mean dev UAS of 8 to 15 passes on four
# treebanks lies within 0.1, and 8 takes two thirds of the time of 12), 12 with sibling or grandparent parts.
FIRST_ORDER_PASSES = 8
HIGHER_ORDER_PASSES = 12
# The early stop with a held-out dev set, for the trainers that step sentence by sentence (their dev score
# climbs pass after pass; the batch ones can stall for several iterations before they climb).
PATIENCE = 3
ONLINE_TRAINERS = ("bcfw", "eg-mm", "eg-ll", "sgd")
PATH_TOL = 1e-3  # the relative duality gap at which each C of a --C-path stops
# The parser's BCFW computes the primal and the duality gap of its last point only (--gap-every): after every
# pass they took a quarter of es's training CPU with --parts grandparents (204 CPU s in all, 157 with none
# computed, in process, one run each), and a default run never reads them before its end (the pass limit
# stops it, not the gap).
PARSER_GAP_EVERY = 0

# --- the taggers' defaults ------------------------------------------------------------------------------
TAGGER_TRAINERS = {"crf": "eg-ll", "maxent": "cd"}
# The CRF's C: the best of a dev sweep on conll2000 POS with eg-ll (0.3 to 30).
CRF_C = 1.0
# The maxent tagger's prior variance (Huang et al. 2010, Sec. 5.1: sigma^2 = 10; C = 1 / sigma^2), its pass
# limit and tolerance.
MAXENT_SIGMA2 = 10.0
MAXENT_PASSES = 100
# The maxent pass limit and predicate cutoff of the FEATS and joint taggers (--column feats, morph) when none is
# given, tuned on the last tenth of pt_bosque test (trained on the rest, reading a CRF's UPOS): AllTags 89.50
# in 17.8 CPU s, against 89.32 in 28.7 s (20 passes, cutoff 1), 89.41 in 52.8 s (40, 1), 89.20 in 14.6 s (10, 1).
MORPH_PASSES = 15
MORPH_CUTOFF = 2
# The dictionary of seen forms of the FEATS and joint maxent taggers when none is given: a word seen at least
# once takes a label it had. On the last tenth of test (a CRF's UPOS read), AllTags pt 89.50 -> 89.53
# (89.69 at 2), nl 89.63 -> 90.56 (89.35 at 2).
MORPH_DICTIONARY = 1
# The CRF's tag dictionary when none is given: off, unless the CRF without one would have more than
# CRF_DICTIONARY_PARTS parts (its EG state is 16 bytes a part: theta and the marginals in float64), then
# a word seen at least CRF_DICTIONARY times takes only the tags it had. Brown (183 tags, 41 k sentences,
# default EG, test accuracy): 363 M parts without it (97.25%, 7,227 MB peak, 1,985 CPU s); 25 M with N = 3
# (97.15%, 1,519 MB, about 500 CPU s); 1,828 MB and 567 CPU s for 97.21% with N = 5, too close to the
# 600 s the issue allows on a shared machine. conll2000 (18 M) and ptb-pos (7 M) stay under the threshold.
CRF_DICTIONARY = 3
CRF_DICTIONARY_PARTS = 100_000_000
MORPH_COLUMNS = ("feats", "morph")
MAXENT_TOL = 1e-5
MAXENT_BEAM = 3

# --- the tokenizer's defaults (benchmarks/tokenizer_accuracy.py tunes them on the last tenth of the training
# file) -------------------------------------------------------------------------------------------------------
TOKENIZER_TRAINER = "eg-ll"
TOKENIZER_C = 1.0
TOKENIZER_PASSES = 20
# The non-whitespace characters of a training example at least (whole sentences of one paragraph).
TOKENIZER_EXAMPLE_CHARS = 1000

# --- the lemmatizer's defaults (egnlp/lemmatizer_training.py tunes C and the back-off on the last tenth) -----
LEMMATIZER_C_GRID = (0.03, 0.1, 0.3)
LEMMATIZER_PASSES = 20
LEMMATIZER_RARE = 5
LEMMATIZER_TOL = 1e-3
LEMMATIZER_COLUMNS = ("upos", "xpos", "feats")
LEMMATIZER_KNOWN_GRID = (0.0, 0.01, 0.03, 0.1)

# --- the benches' runs (egnlp bench): the comparisons of Collins et al. (2008) and Zhang et al. (2011) ---------
BENCH_TRAINERS = {"ll": ("eg-ll", "lbfgs", "sgd", "eg-ll-batch"), "mm": ("eg-mm", "cutting-plane", "bcfw")}
RATE_TRAINERS = ("egr", "egr/paper", "eg-mm-batch/fixed", "eg-mm", "eg-mm/gap", "bcfw", "bcfw/gap", "cutting-plane")

# The choices of the options (the parser's and the features' own checks guard their code; these are what a user
# may ask for, auto included).
ROOTS = ("single", "multi")
TREES = ("projective", "non-projective", "auto")
PARTS = ("arcs", "siblings", "grandparents")
TAG_COLUMNS = ("both", "upos", "xpos")
FEATURE_MODES = ("alphabet", "hash")
TAGGER_MODELS = ("crf", "maxent")
TAGGER_COLUMNS = ("xpos", "upos", "chunk", "pos", "feats", "morph")


def option(default: Any, flags: str, help: str, *, shown: str | None = None, choices: tuple[str, ...] = (),
           metavar: str | None = None) -> Any:
    """A settings field that is also a command-line option: ``flags`` (``--C``, ``--labels/--no-labels``,
    ``--jobs,-j``), its ``help``, the default as ``--help`` shows it when the value alone does not say it
    (``shown``), the values it takes (``choices``)."""
    return field(default=default, metadata={"flags": flags, "help": help, "shown": shown, "choices": choices,
                                            "metavar": metavar})


def same_option(settings: type, name: str) -> Any:
    """A field of another settings class again: the same default, flag and help."""
    given = settings.__dataclass_fields__[name]
    return field(default=given.default, metadata=given.metadata)


def flag_of(settings: type, name: str) -> str:
    """The command-line flag of a settings field (``max_passes`` -> ``--passes``)."""
    return next(f.metadata["flags"] for f in dataclasses.fields(settings) if f.name == name).split("/")[0].split(",")[0]


def _check_choice(settings: Any, name: str) -> None:
    value = getattr(settings, name)
    choices = next(f.metadata["choices"] for f in dataclasses.fields(settings) if f.name == name)
    if value is not None and value not in choices:
        raise SettingsError(f"{flag_of(type(settings), name)}: invalid choice {value!r} "
                            f"(choose from {', '.join(choices)})")


def _check_types(settings: Any) -> None:
    """Every option field's value of its annotated type (``--passes`` an integer or None, ...)."""
    for f in dataclasses.fields(settings):
        if "flags" in f.metadata:
            check_value(flag_of(type(settings), f.name), getattr(settings, f.name), f.type)


def _check_count(settings: Any, name: str, least: float) -> None:
    value = getattr(settings, name)
    if value is not None and not value >= least:
        raise SettingsError(f"{flag_of(type(settings), name)} must be at least {least:g}, not {value}")


def _config(spec: Trainer, what: dict[str, Any], settings: type) -> Any:
    """``spec``'s config from ``what``; a settings field the trainer does not have names its flag, another
    setting it does not have the valid ones (:func:`~egnlp.training.registry.check_settings`)."""
    fields = {f.name for f in dataclasses.fields(spec.config)}
    options = {f.name for f in dataclasses.fields(settings)}
    for name in what:
        if name not in fields and name in options:
            raise SettingsError(f"trainer '{spec.name}' has no setting {flag_of(settings, name)}")
    return make_config(spec, **what)


def parse_c_path(spec: str) -> tuple[float, ...]:
    """``"1000:0.7:21"`` -> 21 values 1000, 700, 490, ... (START:FACTOR:COUNT)."""
    parts = spec.split(":")
    try:
        if len(parts) != 3:
            raise ValueError
        start, factor, count = float(parts[0]), float(parts[1]), int(parts[2])
    except ValueError:
        raise SettingsError(f"--C-path wants START:FACTOR:COUNT, e.g. 1000:0.7:21, not {spec!r}") from None
    if not (start > 0 and 0 < factor < 1 and count >= 1):
        raise SettingsError(f"--C-path {spec!r}: need START > 0, 0 < FACTOR < 1 and COUNT >= 1")
    return tuple(start * factor ** k for k in range(count))


@dataclass(frozen=True)
class ParserSettings:
    """How a dependency parser is trained (``egnlp parser train``, :func:`egnlp.train_parser`).

    The model: first order (arcs), second (``siblings``, McDonald and Pereira 2006) or third
    (``grandparents``, Koo and Collins 2010) over a tree space (``tree``, ``root``), features over
    the ``tags`` columns; the arc labeler (McDonald, Lerman and Pereira 2006) when ``labels`` and the
    data have labels. The trainer (:mod:`egnlp.training.registry`) and its settings; the settings of
    the trainer's config that have no field here go in ``trainer_options``.
    """

    trainer: str | None = option(None, "--trainer", "Trainer: online EG (eg-ll, eg-mm; Collins et al. 2008), "
                                 "batch EG, L-BFGS, SGD, cutting plane, BCFW or EGR (docs/guide.md#trainers).",
                                 shown=f"{PARSER_TRAINER} (with --dask: {DASK_TRAINERS[0]})",
                                 choices=tuple(trainer_names(STRUCTURED)))
    C: float | None = option(None, "--C", "Regularisation constant C of sum_i loss_i + C/2 ||w||^2.",
                             shown=f"{PARSER_C['mm']:g} for max-margin trainers, {PARSER_C['ll']:g} for log-linear "
                                   "ones")
    C_path: str | None = option(None, "--C-path", "START:FACTOR:COUNT, e.g. 1000:0.7:21: train a warm-started path "
                                "of C values (Collins et al. 2008, Sec. 7.1.2), print a table, keep the best on dev.",
                                metavar="START:FACTOR:COUNT")
    max_passes: int | None = option(None, "--passes", "Pass limit.",
                                    shown=f"{FIRST_ORDER_PASSES} for {PARSER_TRAINER} ({HIGHER_ORDER_PASSES} with "
                                          f"--parts siblings or grandparents), {EGConfig.max_passes} for EG, "
                                          "else the trainer's")
    tol: float | None = option(None, "--tol", "Stop when the relative duality gap is below this.",
                               shown=f"{EGConfig.tol:g} for EG, else the trainer's")
    anneal: bool | None = option(None, "--anneal/--no-anneal", "EG: start at 10 C and decay to C (Collins et al. "
                                 "2008, Sec. 7.1.1; much faster for small C).", shown="on")
    average: bool | None = option(None, "--average/--no-average", "BCFW: the model (and the objectives reported) "
                                  "is the weighted average of the iterates (Lacoste-Julien et al. 2013).",
                                  shown=f"on for {PARSER_TRAINER}")
    gap_every: int | None = option(None, "--gap-every", "BCFW: compute the primal objective and the duality gap "
                                   "(a second argmax per sentence) after every N-th pass, and of the last pass in "
                                   "any case; 0: of the last pass only. The model is the same for any N.",
                                   shown=f"{PARSER_GAP_EVERY} for {PARSER_TRAINER}, 1 with --tol or --order gap",
                                   metavar="N")
    order: str | None = option(None, "--order", "EG, BCFW: example order, random (a fresh permutation per pass), "
                               "cyclic, or gap (draws in proportion to each example's share of the duality gap).",
                               shown="random", choices=ORDERS)
    seed: int | None = option(None, "--seed", "Seed of every random choice (example or feature order); the same "
                              "seed gives the same model.", shown="0")
    max_seconds: float | None = option(None, "--max-seconds", "Stop after the pass that brings the optimisation "
                                       "time past this many seconds.", shown="no limit")
    patience: int | None = option(None, "--patience", "Stop when the dev score has not improved for this many "
                                  "passes at the final C (EG's annealed passes do not count); the model is the best "
                                  "dev pass's (as with --max-seconds and a dev set); 0: no early stop.",
                                  shown=f"{PATIENCE} with a held-out dev set, for the online trainers "
                                        f"({', '.join(ONLINE_TRAINERS)})")
    root: str | None = option(None, "--root", "Tree space: one root child or any number.",
                              shown="the data set's, or single if every training tree has one", choices=ROOTS)
    tree: str = option("projective", "--tree", "Tree space: projective (Eisner), non-projective (Chu-Liu-Edmonds, "
                       "matrix-tree theorem; with sibling or grandparent parts: the projective chart's tree with its "
                       "heads rearranged, McDonald and Pereira 2006, also as the max-margin trainers' argmax; EG's "
                       "marginals stay projective), or auto: the space whose parses score the higher UAS on the "
                       "training file's last tenth, decoded by a model of the first nine tenths trained in each space "
                       "(ties: projective; about 1.8x more training).",
                       choices=TREES)
    parts: str = option("arcs", "--parts", "The parts the model scores: arcs (first order, McDonald et al. 2005), "
                        "siblings (second order: arcs and sibling parts, McDonald and Pereira 2006) or grandparents "
                        "(third order: arcs, siblings and grandparent parts, Koo and Collins 2010; the most accurate, "
                        "about 4x the training time and 2.5x the parsing time of arcs, with the cascade).",
                        choices=PARTS)
    cascade: bool | None = option(None, "--cascade/--no-cascade", "Coarse-to-fine pruning of a second- or "
                                  "third-order model (Koo and Collins 2010, Sec. 5; Rush and Petrov 2012): a "
                                  "first-order model, trained first, keeps each word's likeliest heads; the "
                                  "higher-order model trains and parses over those arcs only.",
                                  shown="on with --parts siblings or grandparents")
    # 20: the recall sought is reached on the tuning splits (max-marginals: es 99.55% keeping 30.5% of the arcs,
    # pt_bosque 99.60% keeping 17.4%); 10 caps it below on es (98.32%), and 6 (marginals: es 95.50%, pt_bosque
    # 98.10%) lost es 0.45 UAS.
    cascade_top_k: int = option(20, "--cascade-top-k", "With --cascade: heads kept per word at most.")
    cascade_passes: int | None = option(None, "--cascade-passes", "With --cascade: the first-order pruner's pass "
                                        "limit (it only ranks each word's heads; --passes is the model's).",
                                        shown=f"{FIRST_ORDER_PASSES} for {PARSER_TRAINER}, else the trainer's",
                                        metavar="<int>")
    cascade_recall: float = option(0.995, "--cascade-recall", "With --cascade: the pruning threshold is the "
                                   "largest that keeps this share of the gold arcs of the tuning split (the "
                                   "training file's last tenth, held out from the first-order model).")
    final_on_root: bool | None = option(None, "--final-punct/--no-final-punct", "Decode a sentence's final "
                                        "punctuation as a leaf of the root's one child (first-order, single-root "
                                        "parsers).", shown="when at least 90% of the training trees that end in "
                                        "punctuation do")
    cache_mb: float | None = option(None, "--cache-mb", "Keep up to this many MiB of compiled training and dev "
                                    "sentences for later passes instead of compiling them again at every pass: less "
                                    "time, more memory, the same model (es: about 300 MiB keeps them all, about 1 "
                                    "GiB with --parts siblings); 0 keeps none.", metavar="<MB>",
                                    shown="1024 for egr, else 64: the dev sentences, or without a dev set the "
                                          "training sentences")
    tags: str | None = option(None, "--pos", "Tag columns the features read: both, upos (CPOSTAG) or xpos (POSTAG).",
                              shown="both where both are filled", choices=TAG_COLUMNS)
    labels: bool = option(True, "--labels/--no-labels", "Train the arc labeler when the training data have "
                          "DEPREL labels.")
    train_on_dev: bool | None = option(None, "--train-on-dev/--hold-out-dev", "Train on the dev sentences too, up "
                                       "to the pass limit, or hold them out: scored after every pass, the best "
                                       "pass kept (--patience, --C-path).", shown="train on a data set's dev "
                                       "split; hold out a --dev file, and any dev set with --patience or --C-path")
    feature_mode: str = option("alphabet", "--features", "Feature ids: gold-arc alphabet or hashing.",
                               choices=FEATURE_MODES)
    hash_bits: int = option(22, "--hash-bits", "With --features hash: 2^bits feature ids.")
    jobs: int | None = option(None, "--jobs,-j", "Processes that decode the dev set after each pass and compute "
                              "the trainer's evaluation passes (primal, dual, gaps); the model is the same for any "
                              "number.", shown="all cores", metavar="<int>")
    workers: int | None = option(None, "--workers", "With --dask: shards of the training sentences, one EG state "
                                 "each, trained by CoCoA+ rounds (--passes counts rounds).",
                                 shown="the cluster's workers", metavar="<int>")
    save_on_interrupt: bool = option(False, "--save-on-interrupt", "On Ctrl-C, write the model of the best pass so "
                                     "far (by dev score with a dev set, else the last pass) before stopping.")
    dask: bool = False  # trained on a Dask cluster (the command line's --dask ADDRESS; train_parser_dask)
    trainer_options: Mapping[str, Any] = field(default_factory=dict)  # the trainer's other config settings

    def __post_init__(self) -> None:
        object.__setattr__(self, "trainer_options", dict(self.trainer_options))
        _check_types(self)
        for name in ("trainer", "order", "root", "tree", "parts", "tags", "feature_mode"):
            _check_choice(self, name)
        for name, least in (("max_passes", 0), ("patience", 0), ("gap_every", 0), ("cache_mb", 0), ("jobs", 1),
                            ("workers", 1), ("hash_bits", 1), ("cascade_top_k", 1), ("cascade_passes", 1)):
            _check_count(self, name, least)
        self._check_combinations()
        self.check_final_on_root(self.root)
        self.trainer_configs()  # every setting the trainer has, in its range; none it does not have

    def _check_combinations(self) -> None:
        if self.C is not None and self.C_path is not None:
            raise SettingsError("give --C or --C-path, not both")
        if self.C_path is not None:
            parse_c_path(self.C_path)
            for given, flag in ((self.patience, "--patience stops one run"),
                                (self.save_on_interrupt, "--save-on-interrupt keeps the best pass of one run")):
                if given:
                    raise SettingsError(f"{flag}; it does not go with --C-path")
        if self.train_on_dev and (self.patience or self.C_path is not None):
            raise SettingsError(f"{'--patience' if self.patience else '--C-path'} scores a held-out dev set: it "
                                "does not go with --train-on-dev")
        if not 0.0 < self.cascade_recall <= 1.0:
            raise SettingsError(f"--cascade-recall {self.cascade_recall:g}: need 0 < RECALL <= 1")
        if self.cascade and (self.order_of_model == 1 or self.dask):
            raise SettingsError("--cascade prunes a second- or third-order model trained on one machine: "
                                "give --parts siblings or grandparents, without --dask")
        if not self.dask:
            if self.workers is not None:
                raise SettingsError("--workers goes with --dask")
            return
        if self.trainer is not None and self.trainer not in DASK_TRAINERS:
            raise SettingsError(f"--dask trains with online EG: trainer {' or '.join(DASK_TRAINERS)}, "
                                f"not {self.trainer}")
        for given, what in ((self.order_of_model > 1, f"--parts {self.parts} trains on one machine"),
                            (self.jobs is not None, "--jobs goes with training on one machine; with --dask, "
                                                    "--workers shards the data"),
                            (self.cache_mb is not None, "--cache-mb goes with training on one machine"),
                            (self.C_path is not None or self.patience or self.save_on_interrupt,
                             "--dask trains one run: it does not go with --C-path, --patience or "
                             "--save-on-interrupt")):
            if given:
                raise SettingsError(what if what.startswith("--dask") else f"{what}, not with --dask")

    @classmethod
    def build(cls, settings: ParserSettings | None = None, **options: Any) -> ParserSettings:
        """``settings`` (or the defaults) with ``options`` replacing fields; an option that is no field (a
        setting of the trainer's config such as ``eta_init``) goes to ``trainer_options``."""
        return _build(cls, settings, options)

    # --- resolved values -----------------------------------------------------------------------------------

    @property
    def order_of_model(self) -> int:
        """1 (arcs), 2 (sibling parts) or 3 (grandparent parts)."""
        return PARTS.index(self.parts) + 1

    @property
    def siblings(self) -> bool:
        """Whether the model scores sibling parts (second and third order)."""
        return self.order_of_model > 1

    @property
    def grandparents(self) -> bool:
        """Whether the model scores grandparent parts (third order)."""
        return self.order_of_model == 3

    @property
    def cascaded(self) -> bool:
        """Whether a first-order model prunes the arcs of the higher-order one: ``cascade``, by default for
        every second- and third-order model."""
        return self.cascade if self.cascade is not None else self.order_of_model > 1

    @property
    def trainer_name(self) -> str:
        return self.trainer or (DASK_TRAINERS[0] if self.dask else PARSER_TRAINER)

    @property
    def spec(self) -> Trainer:
        return get_trainer(self.trainer_name)

    @property
    def Cs(self) -> tuple[float, ...] | None:
        """The C values of ``--C-path``, or None for one run."""
        return parse_c_path(self.C_path) if self.C_path is not None else None

    def trainer_configs(self) -> list[Any]:
        """The trainer's config for each run: one, or one per C of the path; the parser's defaults filled in
        (C by the objective, averaged BCFW and its pass limit by the model's order)."""
        spec = self.spec
        defaults: dict[str, Any] = {}
        if spec.name == PARSER_TRAINER and not self.dask:
            # a --tol to stop at, or --order gap, reads the gap of every pass
            wants_gaps = self.tol is not None or self.order == "gap"
            defaults = {"average": True, "gap_every": 1 if wants_gaps else PARSER_GAP_EVERY,
                        "max_passes": FIRST_ORDER_PASSES if self.order_of_model == 1 else HIGHER_ORDER_PASSES}
        given = {name: value for name, value in (("max_passes", self.max_passes), ("tol", self.tol),
                                                 ("anneal", self.anneal), ("average", self.average),
                                                 ("gap_every", self.gap_every),
                                                 ("order", self.order), ("seed", self.seed),
                                                 ("max_seconds", self.max_seconds)) if value is not None}
        what = {**defaults, **given, **self.trainer_options}
        if self.Cs is not None:  # annealing off and one tolerance along the path (path_configs)
            _config(spec, {**what, "C": self.Cs[0]}, ParserSettings)  # names the flag of a setting the trainer lacks
            return path_configs(spec, self.Cs, tol=what.pop("tol", PATH_TOL), **what)
        return [_config(spec, {**what, "C": self.C if self.C is not None else PARSER_C[spec.objective]},
                        ParserSettings)]

    def check_final_on_root(self, root: str | None) -> None:
        """Final punctuation goes on the root's child only in a first-order, single-root parser (``root``
        None: not known yet)."""
        if self.final_on_root and (root not in (None, "single") or self.order_of_model > 1):
            raise SettingsError("final punctuation on the root's child (--final-punct) needs a first-order, "
                                "single-root parser (--root single --parts arcs)")

    def joins_dev(self, dev_is_a_file: bool) -> bool:
        """Whether the dev sentences are trained on: ``train_on_dev``, or by default a data set's dev split
        unless --patience or --C-path needs it held out (a --dev file is held out)."""
        if self.train_on_dev is not None:
            return self.train_on_dev
        return not dev_is_a_file and not self.patience and self.C_path is None

    def check_data(self, has_dev: bool) -> None:
        """The settings that need a held-out dev set have one (checked before training starts)."""
        if self.C_path is not None and not has_dev:
            raise SettingsError("--C-path picks C on dev data: give a dev set (--dev, or --data with a dev split)")
        self.patience_with(has_dev)

    def patience_with(self, has_dev: bool) -> int | None:
        """The early stop of a run with (or without) a dev set: ``patience`` (0: none), by default
        :data:`PATIENCE` for the online trainers with a held-out dev set."""
        if self.patience is not None:
            if self.patience and not has_dev:
                raise SettingsError("--patience needs a dev set: give --dev, or --data with a dev split")
            return self.patience or None
        default = has_dev and self.C_path is None and not self.dask and self.trainer_name in ONLINE_TRAINERS
        return PATIENCE if default else None

    def as_dict(self) -> dict[str, Any]:
        """The settings as given (JSON-ready), recorded in a model's metadata; the cascade as resolved."""
        return {**dataclasses.asdict(self), "cascade": self.cascaded,
                "trainer_options": dict(self.trainer_options)}


@dataclass(frozen=True)
class TaggerSettings:
    """How a POS tagger or chunker is trained (``egnlp tagger train``, :func:`egnlp.train_tagger`): a
    linear-chain CRF trained by a structured trainer (online EG by default, Collins et al. 2008), or a
    left-to-right maxent tagger (Ratnaparkhi 1996) trained by coordinate descent (Huang et al. 2010)."""

    model: str = option("crf", "--model", "Model family: crf (linear-chain CRF) or maxent (left-to-right "
                        "maximum-entropy tagger with a beam).", choices=TAGGER_MODELS)
    trainer: str | None = option(None, "--trainer", "CRF: a structured trainer of 'egnlp parser train'; maxent: "
                                 "cd, gis, scgis or lbfgs.",
                                 shown=f"{TAGGER_TRAINERS['crf']} for crf, {TAGGER_TRAINERS['maxent']} for maxent",
                                 choices=tuple(dict.fromkeys(trainer_names(STRUCTURED) + trainer_names(MAXENT))))
    C: float | None = option(None, "--C", "CRF: regularisation constant C of sum_i loss_i + C/2 ||w||^2.",
                             shown=f"{CRF_C:g}")
    sigma2: float | None = option(None, "--sigma2", "maxent: Gaussian prior variance.", shown=f"{MAXENT_SIGMA2:g}")
    max_passes: int | None = option(None, "--passes", "Pass limit.",
                                    shown=f"{MAXENT_PASSES} for maxent ({MORPH_PASSES} for feats and morph), "
                                    "else the trainer's")
    tol: float | None = option(None, "--tol", "Convergence tolerance.",
                               shown=f"{MAXENT_TOL:g} for maxent, else the trainer's")
    anneal: bool | None = same_option(ParserSettings, "anneal")
    order: str | None = same_option(ParserSettings, "order")
    max_seconds: float | None = same_option(ParserSettings, "max_seconds")
    seed: int | None = same_option(ParserSettings, "seed")
    beam: int | None = option(None, "--beam", "maxent: beam width of decoding.", shown=f"{MAXENT_BEAM}")
    cutoff: int | None = option(None, "--cutoff", "maxent: leave out the predicates seen in fewer training events "
                                "than this.", shown=f"1 ({MORPH_CUTOFF} for feats and morph)")
    compact: bool | None = option(None, "--compact-dual/--full-dual", "CRF, EG trainers: keep each sentence's "
                                  "dual scores in float32 and recompute its marginals when a visit needs them (a "
                                  "quarter of the memory, about twice the forward-backward work), or float64 "
                                  "scores and stored marginals.", shown="full")
    all_transitions: bool = option(False, "--all-transitions/--seen-transitions", "CRF: a feature for every pair "
                                   "of labels, or only for the pairs seen in training.")
    column: str | None = option(None, "--column", "Label column: xpos (or pos: CoNLL-X POSTAG, CoNLL-U XPOS), upos "
                                "(CoNLL-X CPOSTAG, CoNLL-U UPOS), feats (CoNLL-U FEATS), morph (UPOS, XPOS and "
                                "FEATS as one joint tag) or chunk. A chunker reads the POS column.",
                                shown="the data set's task; xpos for files", choices=TAGGER_COLUMNS)
    dictionary: int | None = option(None, "--dictionary", "A word seen at least this many times in training "
                                    "takes only the labels it had there, in training and tagging (0: any "
                                    "label); the CRF's parts shrink to the labels each word may take.",
                                    shown=f"maxent: {MORPH_DICTIONARY} for feats and morph, else 0; crf: "
                                          f"{CRF_DICTIONARY} when the CRF would otherwise have more than "
                                          f"{CRF_DICTIONARY_PARTS / 1e6:g} M parts (16 bytes each in EG), else 0")
    reads_upos: bool = option(False, "--reads-upos/--words-only", "feats and morph: also read the UPOS of each "
                              "word and its neighbours (given by a UPOS tagger when tagging), as a chunker reads "
                              "POS tags.")
    save_on_interrupt: bool = same_option(ParserSettings, "save_on_interrupt")
    trainer_options: Mapping[str, Any] = field(default_factory=dict)

    # the options of one model family only, and the family
    FAMILY_OPTIONS = {"C": "crf", "compact": "crf", "all_transitions": "crf", "sigma2": "maxent", "beam": "maxent",
                      "cutoff": "maxent"}

    def __post_init__(self) -> None:
        object.__setattr__(self, "trainer_options", dict(self.trainer_options))
        _check_types(self)
        for name in ("model", "trainer", "order", "column"):
            _check_choice(self, name)
        for name, least in (("max_passes", 0), ("beam", 1), ("cutoff", 1), ("dictionary", 0)):
            _check_count(self, name, least)
        if self.sigma2 is not None and not self.sigma2 > 0:
            raise SettingsError(f"--sigma2 must be positive, not {self.sigma2}")
        if self.reads_upos and self.column not in MORPH_COLUMNS:
            raise SettingsError("--reads-upos goes with --column feats or --column morph")
        for name, family in self.FAMILY_OPTIONS.items():
            if getattr(self, name) not in (None, False) and family != self.model:
                raise SettingsError(f"{flag_of(TaggerSettings, name)} applies to --model {family}"
                                    + ("; a CRF's regularisation is --C" if self.model == "crf"
                                       else "; the maxent regularisation is --sigma2"))
        self.trainer_config()

    @classmethod
    def build(cls, settings: TaggerSettings | None = None, **options: Any) -> TaggerSettings:
        """As :meth:`ParserSettings.build`."""
        return _build(cls, settings, options)

    @property
    def problem_kind(self) -> str:
        return STRUCTURED if self.model == "crf" else MAXENT

    @property
    def trainer_name(self) -> str:
        return self.trainer or TAGGER_TRAINERS[self.model]

    @property
    def spec(self) -> Trainer:
        kind = self.problem_kind
        if self.trainer_name not in trainer_names(kind):
            other = next(m for m in TAGGER_MODELS if m != self.model)
            hint = (f"'{self.trainer_name}' trains {other} taggers (--model {other}); "
                    if self.trainer_name in trainer_names(STRUCTURED if other == "crf" else MAXENT) else "")
            raise SettingsError(f"unknown trainer '{self.trainer_name}' for --model {self.model}: {hint}"
                                f"{self.model} trainers: {', '.join(trainer_names(kind))}")
        return get_trainer(self.trainer_name, kind)

    @property
    def maxent_cutoff(self) -> int:
        """The maxent tagger's predicate cutoff: ``cutoff``, by default :data:`MORPH_CUTOFF` for the FEATS and
        joint taggers and 1 (every predicate) for the others."""
        if self.cutoff is not None:
            return self.cutoff
        return MORPH_CUTOFF if self.column in MORPH_COLUMNS else 1

    def crf_dictionary(self, dense_parts: int) -> int:
        """The least count of a word in the CRF's tag dictionary (0: none) when the CRF without one has
        ``dense_parts`` parts: ``dictionary``, by default :data:`CRF_DICTIONARY` above
        :data:`CRF_DICTIONARY_PARTS` parts, else 0."""
        if self.dictionary is not None:
            return self.dictionary
        return CRF_DICTIONARY if dense_parts > CRF_DICTIONARY_PARTS else 0

    @property
    def maxent_dictionary(self) -> int:
        """The least count of a word in the maxent tagger's dictionary of seen forms (0: no dictionary):
        ``dictionary``, by default :data:`MORPH_DICTIONARY` for the FEATS and joint taggers, else 0."""
        if self.dictionary is not None:
            return self.dictionary
        return MORPH_DICTIONARY if self.column in MORPH_COLUMNS else 0

    @property
    def label_column(self) -> str | None:
        """The tagger's label column (``xpos`` is the corpus column ``pos``), or None: the data decide."""
        return "pos" if self.column == "xpos" else self.column

    def trainer_config(self) -> Any:
        """The trainer's config: C of the CRF (:data:`CRF_C`) or 1 / sigma2 of the maxent tagger, the maxent
        trainers' pass limit and tolerance, and the settings given."""
        spec = self.spec
        if self.model == "crf":
            base: dict[str, Any] = {"C": self.C if self.C is not None else CRF_C}
        else:
            base = {"C": 1.0 / (self.sigma2 if self.sigma2 is not None else MAXENT_SIGMA2),
                    "max_passes": MORPH_PASSES if self.column in MORPH_COLUMNS else MAXENT_PASSES,
                    "tol": MAXENT_TOL}
        given = {name: value for name, value in (("max_passes", self.max_passes), ("tol", self.tol),
                                                 ("anneal", self.anneal), ("order", self.order),
                                                 ("seed", self.seed), ("max_seconds", self.max_seconds),
                                                 ("compact", self.compact))
                 if value is not None}
        return _config(spec, {**base, **given, **self.trainer_options}, TaggerSettings)

    def as_dict(self) -> dict[str, Any]:
        return {**dataclasses.asdict(self), "trainer_options": dict(self.trainer_options)}


@dataclass(frozen=True)
class TokenizerSettings:
    """How a tokenizer is trained from a CoNLL-U file (:func:`egnlp.tokenizer_training.train_tokenizer`): a
    linear-chain CRF over the characters of the text (:mod:`egnlp.tagger.tokenizer_model`), trained by a
    structured trainer (online EG on the log-linear dual by default, Collins et al. 2008)."""

    trainer: str = option(TOKENIZER_TRAINER, "--trainer", "A structured trainer of 'egnlp parser train'.",
                          choices=tuple(trainer_names(STRUCTURED)))
    C: float = option(TOKENIZER_C, "--C", "Regularisation constant C of sum_i loss_i + C/2 ||w||^2.")
    max_passes: int = option(TOKENIZER_PASSES, "--passes", "Pass limit.")
    tol: float | None = option(None, "--tol", "Convergence tolerance.", shown="the trainer's")
    anneal: bool | None = same_option(ParserSettings, "anneal")
    order: str | None = same_option(ParserSettings, "order")
    max_seconds: float | None = same_option(ParserSettings, "max_seconds")
    seed: int | None = same_option(ParserSettings, "seed")
    example_chars: int = option(TOKENIZER_EXAMPLE_CHARS, "--example-chars", "Cut each paragraph into training "
                                "examples of whole sentences with at least this many non-whitespace characters.")
    trainer_options: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "trainer_options", dict(self.trainer_options))
        _check_types(self)
        for name in ("trainer", "order"):
            _check_choice(self, name)
        for name, least in (("max_passes", 0), ("example_chars", 1)):
            _check_count(self, name, least)
        self.trainer_config()

    @classmethod
    def build(cls, settings: TokenizerSettings | None = None, **options: Any) -> TokenizerSettings:
        """As :meth:`ParserSettings.build`."""
        return _build(cls, settings, options)

    @property
    def spec(self) -> Trainer:
        return get_trainer(self.trainer, STRUCTURED)

    def trainer_config(self) -> Any:
        """The trainer's config: C, the pass limit and the settings given."""
        given = {name: value for name, value in (("tol", self.tol), ("anneal", self.anneal), ("order", self.order),
                                                 ("seed", self.seed), ("max_seconds", self.max_seconds))
                 if value is not None}
        return _config(self.spec, {"C": self.C, "max_passes": self.max_passes, **given, **self.trainer_options},
                       TokenizerSettings)

    def as_dict(self) -> dict[str, Any]:
        return {**dataclasses.asdict(self), "trainer_options": dict(self.trainer_options)}


def _build(cls: type, settings: Any, options: Mapping[str, Any]) -> Any:
    names = {f.name for f in dataclasses.fields(cls)}
    fields = {name: value for name, value in options.items() if name in names}
    extra = {name: value for name, value in options.items() if name not in names}
    if extra:
        given = dict(settings.trainer_options) if settings is not None else {}
        fields["trainer_options"] = {**given, **fields.get("trainer_options", {}), **extra}
    if settings is None:
        return cls(**fields)
    return dataclasses.replace(settings, **fields)


# The stages a pipeline can train ('pipeline train --stages'), in their order.
PIPELINE_STAGES = ("tokenizer", "multiword", "tagger", "lemmatizer", "parser")
# The parts a pipeline parser's training file is cut into for its predicted columns (0: the gold columns).
JACKKNIFE_FOLDS = 5


@dataclass(frozen=True)

class LemmatizerSettings:
    """How a lemmatizer is trained from a CoNLL-U file (:func:`egnlp.lemmatizer_training.train_lemmatizer`):
    a dictionary of the training words and a maximum-entropy classifier of edit scripts for the others,
    trained by coordinate descent (Huang et al. 2010). C, the dictionary's form back-off and the known
    ratio left unset are chosen on the last tenth of the training sentences."""

    C: float | None = option(None, "--C", "The classifier's prior C of sum_i -log P(y_i|x_i) + C/2 ||w||^2.",
                             shown=f"tuned over {', '.join(map(str, LEMMATIZER_C_GRID))}")
    columns: str = option(",".join(LEMMATIZER_COLUMNS), "--columns", "The tag columns the lemmatizer reads, "
                          "comma-separated: any of upos, xpos, feats (the columns a file to lemmatize will have).")
    form_backoff: bool | None = option(None, "--form-backoff/--no-form-backoff", "Let the dictionary answer a "
                                       "word seen with other tags by the form's most frequent lemma.",
                                       shown="tuned")
    known_ratio: float | None = option(None, "--known-ratio", "Where the classifier's best lemma was never seen "
                                       "in training, take the best one that was if its probability is at least "
                                       "this share of the best's (0: never).",
                                       shown=f"tuned over {', '.join(map(str, LEMMATIZER_KNOWN_GRID))}")
    min_count: int = option(2, "--min-count", "The classifier's scripts: those of at least this many "
                            "training words.")
    rare_forms: int = option(LEMMATIZER_RARE, "--rare-forms", "The classifier learns from the words whose "
                             "form (lower-cased) is seen at most this many times in training, as the unseen words "
                             "it answers are rare ones; 0: from every word.")
    max_passes: int = option(LEMMATIZER_PASSES, "--passes", "Coordinate descent's pass limit.")
    tol: float = option(LEMMATIZER_TOL, "--tol", "Coordinate descent's relative decrease to stop at.")

    def __post_init__(self) -> None:
        _check_types(self)
        for name, least in (("max_passes", 1), ("min_count", 1), ("tol", 0), ("rare_forms", 0)):
            _check_count(self, name, least)
        if self.C is not None and not self.C > 0:
            raise SettingsError(f"--C must be positive, not {self.C}")
        if self.known_ratio is not None and not 0 <= self.known_ratio <= 1:
            raise SettingsError(f"--known-ratio must lie between 0 and 1, not {self.known_ratio}")
        names = self.column_list
        if not names or len(set(names)) != len(names) or any(c not in LEMMATIZER_COLUMNS for c in names):
            raise SettingsError(f"--columns: {self.columns!r} is not a comma-separated list of distinct names of "
                                f"{', '.join(LEMMATIZER_COLUMNS)}")

    @property
    def column_list(self) -> list[str]:
        return [c.strip() for c in self.columns.split(",") if c.strip()]

    @classmethod
    def build(cls, settings: LemmatizerSettings | None = None, **options: Any) -> LemmatizerSettings:
        """``settings`` (or the defaults) with ``options`` replaced; SettingsError for an unknown option."""
        unknown = sorted(set(options) - {f.name for f in dataclasses.fields(cls)})
        if unknown:
            raise SettingsError(f"unknown lemmatizer setting {unknown[0]!r}")
        return dataclasses.replace(settings if settings is not None else cls(), **options)
