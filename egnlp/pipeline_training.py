"""Train a whole raw-text pipeline from one treebank: the POS taggers the parser reads, then the parser.

    from egnlp import load_dataset, read_conll
    from egnlp.pipeline_training import train_pipeline
    pipeline = train_pipeline(read_conll("pt_bosque-ud-test.conllu"), language="pt")
    pipeline.save("pt.model")

First a tokenizer learns the treebank's sentences and tokens from its text
(:mod:`egnlp.tokenizer_training`: a character CRF trained by EG), and a
treebank with multiword tokens (``1-2`` ranges) gets an expander of tokens
into words (:mod:`egnlp.multiword_training`). The treebank's filled tag
columns decide the other stages: a UPOS tagger when
every word has a UPOS, an XPOS tagger when every word has an XPOS that is
not a copy of its UPOS, and a parser whose features read exactly those
columns (``--pos upos``, ``xpos`` or ``both``). The parser trains on the
gold tags of the file. No stage predicts LEMMA or FEATS, so the parser is
trained with those columns blank: features of columns the pipeline leaves
``_`` would only be seen in training (they cost 1.8 LAS on pt_bosque from raw
text). Each stage trains with the defaults of its own command (``egnlp tagger
train``, ``egnlp parser train``) unless settings are given.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Sequence
from typing import Any

from egnlp.base.errors import InputError
from egnlp.corpora import Sentence
from egnlp.corpora.sentence import BLANK, FEATS, LEMMA
from egnlp.multiword_training import train_multiword
from egnlp.tagger.multiword import surface_tokens
from egnlp.parser_training import train_parser
from egnlp.pipeline import COLUMN_NAMES, Pipeline
from egnlp.settings import ParserSettings, TaggerSettings, TokenizerSettings
from egnlp.tagger_training import tagged_columns, train_tagger
from egnlp.tokenizer_training import train_tokenizer
from egnlp.training.records import Callback

__all__ = ["PIPELINE_PARSER", "parser_of_order", "pipeline_columns", "train_pipeline"]

# The pipeline's parser by default: second order (McDonald and Pereira 2006). From the raw text of
# pt_bosque dev it scores LAS 73.79 against 73.16 for first order and 75.10 for third order (Koo and
# Collins 2010), but the third-order parse takes 8.6 CPU s there against 3.3 s: the default keeps the
# pipeline's run within UDPipe 1's CPU (8.6 s) with room to spare. 'pipeline train --order 3' picks it.
PIPELINE_PARSER = ParserSettings(siblings=True)
# The parser's --pos setting for the tag columns the pipeline's taggers fill.
_PARSER_TAGS = {("upos",): "upos", ("pos",): "xpos", ("upos", "pos"): "both"}


def parser_of_order(order: int) -> ParserSettings:
    """The default parser settings of a first-, second- or third-order model (``pipeline train --order``)."""
    return ParserSettings(siblings=order == 2, grandparents=order == 3)


def pipeline_columns(sentences: Sequence[Sentence]) -> tuple[str, ...]:
    """The tag columns a pipeline trained on ``sentences`` predicts: ``upos`` when every word has a UPOS,
    ``pos`` (XPOS) when every word has an XPOS and the XPOS column is not the UPOS column again.

    Raises:
        InputError: neither column is filled.
    """
    words = [(row[3], row[4]) for s in sentences for row in s.rows]
    upos = bool(words) and all(u != BLANK for u, _ in words)
    xpos = bool(words) and all(x != BLANK for _, x in words) and any(u != x for u, x in words)
    columns = (("upos",) if upos else ()) + (("pos",) if xpos else ())
    if not columns:
        raise InputError("the training sentences need a UPOS or an XPOS tag on every word: the pipeline's "
                         "parser reads tags that its taggers learn from them")
    return columns


def _unfilled(sentences: Sequence[Sentence]) -> list[Sentence]:
    """The sentences with LEMMA and FEATS blank (no stage of the pipeline predicts them)."""
    def blank(row: tuple[str, ...]) -> tuple[str, ...]:
        return row[:LEMMA] + (BLANK,) + row[LEMMA + 1:FEATS] + (BLANK,) + row[FEATS + 1:]
    return [dataclasses.replace(s, rows=tuple(blank(row) for row in s.rows)) for s in sentences]


def _cpu() -> float:
    """CPU seconds of this process and of its finished children (the workers that score dev sets)."""
    times = os.times()
    return times.user + times.system + times.children_user + times.children_system


def train_pipeline(train: Sequence[Sentence], dev: Sequence[Sentence] | None = None, *,
                   language: str = "english", parser_settings: ParserSettings | None = None,
                   tagger_settings: TaggerSettings | None = None,
                   tokenizer_settings: TokenizerSettings | None = None, data: str | None = None,
                   on_stage: Callable[..., Sequence[Callback]] | None = None) -> Pipeline:
    """Train the taggers and the parser of a :class:`~egnlp.pipeline.Pipeline` on ``train`` (sentences with
    heads and tags; see the module docstring), scoring ``dev`` (if given) after every pass of each stage.

    ``on_stage(name, description)`` is called as each stage starts (``multiword``, ``upos``, ``pos``,
    ``parser``) and
    returns the callbacks of its trainer (progress, say). ``language`` is the text's language (Punkt's
    abbreviations). The pipeline's ``info`` records each stage's training seconds and the columns.

    Raises:
        InputError: no training sentences, or no tag column (:func:`pipeline_columns`).
        SettingsError, CorpusError: as :func:`~egnlp.parser_training.train_parser` and
            :func:`~egnlp.tagger_training.train_tagger`.
    """
    if not train:
        raise InputError("no training sentences")
    columns = pipeline_columns(train)
    tagger_settings = TaggerSettings.build(tagger_settings)
    parser_settings = ParserSettings.build(parser_settings or PIPELINE_PARSER, tags=_PARSER_TAGS[columns])
    ranges = any(len(token.words) > 1 for s in train for token in surface_tokens(s))
    stages = 1 + ranges + len(columns) + 1
    seconds: dict[str, float] = {}
    callbacks = on_stage("tokenizer", f"[1/{stages}] tokenizer") if on_stage else ()
    start = _cpu()
    tokenizer, _ = train_tokenizer(train, tokenizer_settings, callbacks=callbacks, data=data)
    seconds["tokenizer"] = _cpu() - start
    multiword = None
    if ranges:
        if on_stage:
            on_stage("multiword", f"[2/{stages}] multiword tokens", False)
        start = _cpu()
        multiword = train_multiword(train, data=data)
        seconds["multiword"] = _cpu() - start
    taggers = []
    for k, column in enumerate(columns, start=2 + ranges):
        callbacks = on_stage(column, f"[{k}/{stages}] {COLUMN_NAMES[column]} tagger") if on_stage else ()
        start = _cpu()
        tokens, labels, _ = tagged_columns(train, column, "training")
        tagger, _ = train_tagger(tokens, labels, None, dataclasses.replace(tagger_settings, column=column),
                                 dev=tagged_columns(dev, column, "dev")[:2] if dev else None,
                                 callbacks=callbacks, data=data)
        taggers.append(tagger)
        seconds[column] = _cpu() - start
    callbacks = on_stage("parser", f"[{stages}/{stages}] parser") if on_stage else ()
    start = _cpu()
    parser, _ = train_parser(_unfilled(train), _unfilled(dev) if dev else None, parser_settings,
                             callbacks=callbacks, data=data)
    seconds["parser"] = _cpu() - start
    info: dict[str, Any] = {"data": data, "columns": [COLUMN_NAMES[c] for c in columns],
                            "sentences": len(train), "train_cpu_seconds": seconds,
                            "tokenizer": "egnlp character CRF"}
    return Pipeline(taggers, parser, language=language, tokenizer=tokenizer, multiword=multiword, info=info)
