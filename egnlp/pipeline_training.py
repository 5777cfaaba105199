"""Train a whole raw-text pipeline from one treebank: tokenizer, multiword tokens, taggers, lemmatizer, parser.

    from egnlp import load_dataset, read_conll
    from egnlp.pipeline_training import train_pipeline
    pipeline = train_pipeline(read_conll("pt_bosque-ud-test.conllu"), language="pt")
    pipeline.save("pt.model")

First a tokenizer learns the treebank's sentences and tokens from its text
(:mod:`egnlp.tokenizer_training`: a character CRF trained by EG), and a
treebank with multiword tokens (``1-2`` ranges) gets an expander of tokens
into words (:mod:`egnlp.multiword_training`). The treebank's filled columns
decide the other stages (:func:`pipeline_columns`): one joint tagger of UPOS,
XPOS and FEATS (``morph``, so that the three agree), or a tagger per column
where the file fills one only; a lemmatizer (:mod:`egnlp.lemmatizer_training`)
where the file has lemmas, reading the tag columns the taggers fill; and a
parser whose features read the tag columns (``--pos upos``, ``xpos`` or
``both``), FEATS and LEMMA where the pipeline predicts them.

The parser is trained on what the pipeline will give it, not on the gold
columns (jackknifing, so that it learns from the noise it will meet): the training sentences are cut into ``folds``
contiguous parts, and each part's tags, features and lemmas are those of
taggers and a lemmatizer trained on the other parts; the columns no stage
predicts are blank. ``folds`` 0 trains the parser on the gold columns
instead (quicker, and 1.8 LAS worse on pt_bosque from raw text when LEMMA and
FEATS are gold). ``stages`` leaves stages out (:data:`STAGES`): without a
tokenizer the pipeline splits text with NLTK's Punkt, without a parser it tags
only. Each stage trains with the defaults of its own command (``egnlp tagger
train``, ``egnlp lemmatizer train``, ``egnlp parser train``) unless settings
are given.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Sequence
from typing import Any

from egnlp.base.errors import InputError, SettingsError
from egnlp.corpora import Sentence
from egnlp.corpora.sentence import BLANK, CPOS, FEATS, LEMMA, POS
from egnlp.lemmatizer_training import train_lemmatizer
from egnlp.multiword_training import train_multiword
from egnlp.parser_training import train_parser
from egnlp.pipeline import COLUMN_NAMES, Pipeline, tag_sentences
from egnlp.settings import JACKKNIFE_FOLDS, PARTS, PIPELINE_STAGES as STAGES, LemmatizerSettings, \
    ParserSettings, TaggerSettings, TokenizerSettings
from egnlp.tagger.lemmatizer import Lemmatizer
from egnlp.tagger.multiword import surface_tokens
from egnlp.tagger.tagger_model import Tagger
from egnlp.tagger_training import tagged_columns, train_tagger
from egnlp.tokenizer_training import train_tokenizer
from egnlp.training.records import Callback

__all__ = ["JACKKNIFE_FOLDS", "PIPELINE_PARSER", "STAGES", "filled_in", "jackknifed", "parser_of_order",
           "pipeline_columns", "train_pipeline"]

# The pipeline's parser by default: third order (Koo and Collins 2010) pruned by a first-order model's
# arc marginals (parser/cascade.py). From the raw text of pt_bosque dev, trained on test with jackknifed
# columns, it scores LAS 75.59 and MLAS 56.67 against 74.87 and 55.96 for the second-order parser
# (McDonald and Pereira 2006), and the pipeline runs in 5.5 CPU s against 4.6 s (UDPipe 1: 8.6 s).
# 'pipeline train --order 2' or '--order 1' picks a smaller model.
PIPELINE_PARSER = ParserSettings(parts="grandparents")
# The parser's --pos setting for the tag columns the pipeline's taggers fill.
_PARSER_TAGS = {frozenset({"upos"}): "upos", frozenset({"pos"}): "xpos", frozenset({"upos", "pos"}): "both"}
# A lemmatizer's name of each corpus column the taggers fill.
_LEMMATIZER_COLUMNS = {"upos": "upos", "pos": "xpos", "feats": "feats"}
_INDEX = {"upos": CPOS, "pos": POS, "feats": FEATS, "lemma": LEMMA}


def parser_of_order(order: int) -> ParserSettings:
    """The default parser settings of a first-, second- or third-order model (``pipeline train --order``); the
    third-order one pruned by a first-order cascade (:data:`PIPELINE_PARSER`)."""
    return PIPELINE_PARSER if order == 3 else ParserSettings(parts=PARTS[order - 1])


def filled_in(sentences: Sequence[Sentence]) -> set[str]:
    """The corpus columns a pipeline learns from ``sentences``: ``upos`` when every word has a UPOS, ``pos``
    (XPOS) when every word has an XPOS and the column is not the UPOS column again, ``feats`` when some word
    has features."""
    words = [(row[CPOS], row[POS], row[FEATS]) for s in sentences for row in s.rows]
    upos = bool(words) and all(u != BLANK for u, _, _ in words)
    xpos = bool(words) and all(x != BLANK for _, x, _ in words) and any(u != x for u, x, _ in words)
    feats = any(f != BLANK for _, _, f in words)
    return {name for name, filled in (("upos", upos), ("pos", xpos), ("feats", feats)) if filled}


def pipeline_columns(sentences: Sequence[Sentence]) -> tuple[str, ...]:
    """The tagger columns (:data:`~egnlp.pipeline.COLUMN_NAMES`) of a pipeline trained on ``sentences``
    (:func:`filled_in`), in the order they run: a UPOS tagger and a joint tagger of ``morph`` reading its
    UPOS when the file has XPOS or FEATS beside UPOS (UPOS, XPOS and FEATS predicted together never
    disagree); else ``upos`` or ``pos`` (XPOS), whichever it has.

    Raises:
        InputError: neither tag column is filled.
    """
    filled = filled_in(sentences)
    if "upos" in filled and filled & {"pos", "feats"}:
        return ("upos", "morph")
    columns = tuple(c for c in ("upos", "pos") if c in filled)
    if not columns:
        raise InputError("the training sentences need a UPOS or an XPOS tag on every word: the pipeline's "
                         "parser reads tags that its taggers learn from them")
    return columns


def _has_lemmas(sentences: Sequence[Sentence]) -> bool:
    """Whether the file has lemmas to learn (a LEMMA on some word)."""
    return any(row[LEMMA] != BLANK for s in sentences for row in s.rows)


def _blanked(sentences: Sequence[Sentence], keep: set[str]) -> list[Sentence]:
    """``sentences`` with UPOS, XPOS, FEATS and LEMMA blank but for the columns in ``keep``: the columns the
    pipeline fills are predicted, the others never seen."""
    blank = [index for column, index in _INDEX.items() if column not in keep]

    def row_of(row: tuple[str, ...]) -> tuple[str, ...]:
        cells = list(row)
        for index in blank:
            cells[index] = BLANK
        return tuple(cells)
    return [dataclasses.replace(s, rows=tuple(row_of(row) for row in s.rows)) for s in sentences]


def jackknifed(sentences: Sequence[Sentence], folds: int,
               fit: Callable[[list[Sentence]], Callable[[list[Sentence]], list[Sentence]]]) -> list[Sentence]:
    """``sentences`` cut into ``folds`` contiguous parts, each annotated by ``fit(the other parts)``: what a
    model trained without a sentence predicts for it. ``fit`` returns the annotating function.

    Raises:
        SettingsError: fewer than two folds, or more folds than sentences.
    """
    if not 2 <= folds <= len(sentences):
        raise SettingsError(f"jackknifing needs 2 to {len(sentences)} folds (one sentence each at least), "
                            f"not {folds}")
    bounds = [len(sentences) * k // folds for k in range(folds + 1)]
    out: list[Sentence] = []
    for lo, hi in zip(bounds, bounds[1:]):
        annotate = fit(list(sentences[:lo]) + list(sentences[hi:]))
        annotated = annotate(list(sentences[lo:hi]))
        if len(annotated) != hi - lo:
            raise ValueError(f"the annotator gave {len(annotated)} sentences for {hi - lo}")
        out.extend(annotated)
    return out


def _cpu() -> float:
    """CPU seconds of this process and of its finished children (the workers that score dev sets)."""
    times = os.times()
    return times.user + times.system + times.children_user + times.children_system


@dataclasses.dataclass
class _Tagging:
    """The taggers and lemmatizer of a pipeline: how to train them and the trained ones."""

    columns: tuple[str, ...]
    filled: set[str]  # the corpus columns the taggers learn (a joint tag's XPOS may be '_' throughout)
    lemmas: bool
    tagger_settings: TaggerSettings
    lemmatizer_settings: LemmatizerSettings
    data: str | None

    def train_taggers(self, train: Sequence[Sentence], dev: Sequence[Sentence] | None = None,
                      callbacks: Callable[[str], Sequence[Callback]] | None = None) -> dict[str, Tagger]:
        """The taggers of :attr:`columns`: the joint ``morph`` one a maxent tagger reading UPOS (faster than a
        CRF over hundreds of joint tags, and as accurate: ``benchmarks/morphology.py``), the others with the
        tagger settings."""
        taggers = {}
        for column in self.columns:
            joint = column == "morph"
            settings = TaggerSettings(column=column, model="maxent", reads_upos=True) if joint else \
                dataclasses.replace(self.tagger_settings, column=column)
            tokens, labels, read = tagged_columns(train, column, "training", reads_upos=joint)
            taggers[column], _ = train_tagger(
                tokens, labels, read, settings, dev=tagged_columns(dev, column, "dev", reads_upos=joint) if dev
                else None, callbacks=callbacks(column) if callbacks else (), data=self.data)
        return taggers

    def train_lemmatizer(self, train: Sequence[Sentence], dev: Sequence[Sentence] | None = None
                         ) -> Lemmatizer | None:
        if not self.lemmas:
            return None
        columns = ",".join(_LEMMATIZER_COLUMNS[c] for c in ("upos", "pos", "feats") if c in self.filled)
        return train_lemmatizer(train, dev, dataclasses.replace(self.lemmatizer_settings, columns=columns),
                                data=self.data)

    def fit(self, train: list[Sentence]) -> Callable[[list[Sentence]], list[Sentence]]:
        """The annotator of a jackknifing fold: the taggers and the lemmatizer trained on ``train``."""
        taggers, lemmatizer = self.train_taggers(train), self.train_lemmatizer(train)
        return lambda sentences: tag_sentences(sentences, taggers, lemmatizer)


def _check_stages(stages: Sequence[str]) -> tuple[str, ...]:
    """The stages asked for, in :data:`STAGES`' order; SettingsError for an unknown one, none, or no tagger."""
    unknown = [s for s in stages if s not in STAGES]
    if unknown or not stages:
        raise SettingsError(f"--stages: {', '.join(unknown) or 'none given'}: choose among {', '.join(STAGES)}")
    if "tagger" not in stages:
        raise SettingsError("--stages: a pipeline tags its words (and its parser reads the tags); add tagger")
    return tuple(s for s in STAGES if s in stages)


def train_pipeline(train: Sequence[Sentence], dev: Sequence[Sentence] | None = None, *,
                   language: str = "english", parser_settings: ParserSettings | None = None,
                   tagger_settings: TaggerSettings | None = None,
                   tokenizer_settings: TokenizerSettings | None = None,
                   lemmatizer_settings: LemmatizerSettings | None = None, stages: Sequence[str] = STAGES,
                   folds: int = JACKKNIFE_FOLDS, data: str | None = None,
                   on_stage: Callable[..., Sequence[Callback]] | None = None) -> Pipeline:
    """Train the stages of a :class:`~egnlp.pipeline.Pipeline` on ``train`` (sentences with heads and tags;
    see the module docstring), scoring ``dev`` (if given) after every pass of each stage.

    ``stages``: those of :data:`STAGES` to train (a multiword expander only where the file has ranges, a
    lemmatizer only where it has lemmas). ``folds``: the jackknifing of the parser's training columns (0:
    the gold columns). ``on_stage(name, description[, progress])`` is called as each stage starts and
    returns the callbacks of its trainer (progress, say); ``progress`` False: a stage without passes,
    None: a line of the stage under way (what the parser says of its cascade and labeler). ``language`` is
    the text's language (Punkt's abbreviations). The pipeline's ``info`` records each stage's training CPU
    seconds, the columns and the folds.

    Raises:
        InputError: no training sentences, or no tag column (:func:`pipeline_columns`).
        SettingsError, CorpusError: unknown stages; as :func:`~egnlp.parser_training.train_parser` and
            :func:`~egnlp.tagger_training.train_tagger`.
    """
    if not train:
        raise InputError("no training sentences")
    stages = _check_stages(stages)
    if folds and (folds < 2 or folds > len(train)):
        raise SettingsError(f"--folds must be 0 (no jackknifing) or 2 to {len(train)}, not {folds}")
    columns, filled = pipeline_columns(train), filled_in(train)
    tagging = _Tagging(columns, filled, "lemmatizer" in stages and _has_lemmas(train),
                       TaggerSettings.build(tagger_settings), LemmatizerSettings.build(lemmatizer_settings), data)
    ranges = "multiword" in stages and any(len(token.words) > 1 for s in train for token in surface_tokens(s))
    jackknife = "parser" in stages and folds > 0
    names = [s for s in stages if s not in ("multiword", "lemmatizer") or (ranges if s == "multiword" else
                                                                          tagging.lemmas)]
    names[names.index("tagger"):names.index("tagger") + 1] = columns
    if jackknife:
        names.insert(names.index("parser"), "jackknife")
    seconds: dict[str, float] = {}
    numbered = iter(range(1, len(names) + 1))

    def begin(name: str, description: str, progress: bool = True) -> Sequence[Callback]:
        seconds[name] = _cpu()
        if on_stage is None:
            return ()
        text = f"[{next(numbered)}/{len(names)}] {description}"
        return on_stage(name, text) if progress else (on_stage(name, text, False) or ())

    def end(name: str) -> None:
        seconds[name] = _cpu() - seconds[name]

    tokenizer = multiword = lemmatizer = parser = None
    taggers: dict[str, Tagger] = {}
    if "tokenizer" in stages:
        tokenizer, _ = train_tokenizer(train, tokenizer_settings, callbacks=begin("tokenizer", "tokenizer"),
                                       data=data)
        end("tokenizer")
    if ranges:
        begin("multiword", "multiword tokens", False)
        multiword = train_multiword(train, data=data)
        end("multiword")
    if "tagger" in stages:
        for column in columns:
            callbacks = begin(column, f"{COLUMN_NAMES[column]} tagger")
            taggers.update(_one_tagger(tagging, column, train, dev, callbacks))
            end(column)
    if tagging.lemmas:
        begin("lemmatizer", "lemmatizer", False)
        lemmatizer = tagging.train_lemmatizer(train, dev)
        tuned = lemmatizer.info["settings"]  # the folds' lemmatizers take the settings tuned on the whole file
        tagging.lemmatizer_settings = dataclasses.replace(
            tagging.lemmatizer_settings, **{k: tuned[k] for k in ("C", "form_backoff", "known_ratio")})
        end("lemmatizer")
    if "parser" in stages:
        keep = filled | ({"lemma"} if tagging.lemmas else set())
        if jackknife:
            begin("jackknife", f"jackknifing: taggers{' and lemmatizer' if tagging.lemmas else ''} on "
                               f"{folds} folds", False)
            parser_train = jackknifed(_blanked(train, keep), folds, tagging.fit)
            end("jackknife")
        else:
            parser_train = _blanked(train, keep)
        parser_dev = tag_sentences(_blanked(dev, keep), taggers, lemmatizer) if dev and jackknife else \
            (_blanked(dev, keep) if dev else None)
        tags = _PARSER_TAGS[frozenset(filled & {"upos", "pos"})]
        settings = ParserSettings.build(parser_settings or PIPELINE_PARSER, tags=tags)
        callbacks = begin("parser", "parser")
        lines = None if on_stage is None else (lambda _, text: on_stage("parser", f"  {text}", None))
        parser, _ = train_parser(parser_train, parser_dev, settings, callbacks=callbacks, data=data, on_stage=lines)
        end("parser")
    info: dict[str, Any] = {"data": data, "columns": [COLUMN_NAMES[c] for c in columns],
                            "sentences": len(train), "train_cpu_seconds": seconds, "stages": list(stages),
                            "parser_columns": (f"predicted by the pipeline's stages, jackknifed on {folds} folds"
                                               if jackknife else "gold columns"),
                            "tokenizer": "egnlp character CRF" if tokenizer is not None else "NLTK Punkt"}
    return Pipeline(list(taggers.values()), parser, language=language, tokenizer=tokenizer, multiword=multiword,
                    lemmatizer=lemmatizer, info=info)


def _one_tagger(tagging: _Tagging, column: str, train: Sequence[Sentence], dev: Sequence[Sentence] | None,
                callbacks: Sequence[Callback]) -> dict[str, Tagger]:
    """The tagger of one column of ``tagging`` trained on ``train`` with the stage's callbacks."""
    one = dataclasses.replace(tagging, columns=(column,))
    return one.train_taggers(train, dev, lambda _: callbacks)
