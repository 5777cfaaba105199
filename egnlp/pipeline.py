"""From raw text to dependency trees: split and tokenise, split multiword tokens, tag, parse; CoNLL-U out
(:class:`Pipeline`, saved as one model file).

    from egnlp import Pipeline
    pipeline = Pipeline.load("pt.model")                  # egnlp pipeline train pt_bosque-ud-test.conllu
    print(pipeline.conllu("O Sr. Silva chegou às 9h30. Saiu."))

The text is first normalised to Unicode NFC (composed characters), which the
UD validator requires of every line. Sentences and tokens come from the
pipeline's tokenizer (:mod:`egnlp.tagger.tokenizer_model`, trained on the
treebank's text) or, without one, from :mod:`egnlp.tagger.text` (NLTK's Punkt
and word tokenizer, with the offsets of every token), knowing the
abbreviations of the taggers' training vocabularies as well as the
language's; the multiword expander (:mod:`egnlp.tagger.multiword`) splits
tokens into the words that are tagged and parsed, written below a ``1-2``
range line that carries the token. Each
sentence is written with ``# sent_id = N`` and ``# text = ...`` (its original
characters, a line break as a space); FORM is the token's original
characters; MISC says ``SpaceAfter=No`` where no whitespace follows the token
and ``SpacesAfter=...`` (UD's escapes ``\\s``, ``\\t``, ``\\n``, ``\\r``,
``\\uXXXX``) where other whitespace than one space does, so that the text can
be rebuilt from the tokens.

The taggers fill the tag columns of their models (UPOS, XPOS, FEATS, or the
three at once from one joint tag, so that they never disagree), at least
those the parser reads (its feature setting ``tags``: ``upos``, ``xpos``,
``both``; FEATS when it was trained with them); no column is copied into
another. The lemmatizer (:mod:`egnlp.tagger.lemmatizer`) fills LEMMA from the
form and the predicted tags. A column no stage fills is ``_``. The taggers
and the parser see a token's Penn Treebank form (``` `` ``` for ``"``)
instead of its characters where the tagger's training vocabulary has the one
and not the other. DEPREL is the parser's labels (``_`` for an unlabelled
parser). With ``confidence``, MISC also holds each word's probability of its
tags and head under the models (``UPosProb``, ``XPosProb``, ``FeatsProb``,
``TagsProb``, ``HeadProb``).

A pipeline file holds each stage's arrays as ``STAGE__NAME`` and each stage's
metadata under ``stages`` (kind ``egnlp-pipeline``): the stages are the
tokenizer, the multiword expander, the taggers (``morph``, ``upos``, ``pos``,
``feats``), the lemmatizer and the parser, each read by its own model class's checks.
"""

from __future__ import annotations

import dataclasses
import os
import re
import unicodedata
import warnings
from typing import Any, Sequence

import numpy as np

from egnlp.base.errors import EgnlpWarning, InputError, ModelError
from egnlp.base.files import read_npz, write_npz_atomic
from egnlp.corpora import Sentence, format_conll
from egnlp.corpora.morphology import split_morph
from egnlp.corpora.sentence import BLANK, CPOS, FEATS, FORM, POS, probability_text
from egnlp.parser.parser_model import Parser
from egnlp.corpora.tagging import slash_text
from egnlp.tagger.lemmatizer import Lemmatizer
from egnlp.tagger.multiword import MultiwordExpander
from egnlp.tagger.tokenizer_model import Tokenizer
from egnlp.tagger.tagger_model import Tagger
from egnlp.tagger.text import TextSentence, language_name, segment, segment_lines, vocabulary_abbreviations

__all__ = ["COLUMN_NAMES", "FILLS", "INPUTS", "Pipeline", "filled_columns", "parse_text", "parser_columns",
           "slash_text", "tag_sentences", "tag_text", "text_sentences", "to_conllu", "tokens_sentence", "with_lemmas"]

_SPACE = re.compile(r"\s+")
_LINE_BREAK = re.compile(r"[^\S ]")  # whitespace other than a space, written as a space in '# text'
# A pipeline tagger's column and its name in messages. A tagger of column 'pos' predicts XPOS (POSTAG); one of
# column 'morph' the joint tag UPOS#XPOS#FEATS, written back into the three columns.
COLUMN_NAMES = {"upos": "UPOS", "pos": "XPOS", "feats": "FEATS", "morph": "joint UPOS/XPOS/FEATS"}
# The corpus columns each tagger column fills (FILLS) and their indices in a row.
FILLS = {"morph": ("upos", "pos", "feats"), "upos": ("upos",), "pos": ("pos",), "feats": ("feats",)}
_INDEX = {"upos": CPOS, "pos": POS, "feats": FEATS}
# The tagger columns a parser's features read, by its ``tags`` setting.
PARSER_COLUMNS = {"upos": ("upos",), "xpos": ("pos",), "both": ("upos", "pos")}
# How a pipeline reads its input (UDPipe's input formats): raw text split into sentences and tokens; one
# sentence a line; one sentence a line with its tokens between spaces; CoNLL-U, whose words are kept.
INPUTS = ("text", "lines", "tokens", "conllu")
PIPELINE_KIND = "egnlp-pipeline"
PIPELINE_VERSION = 1
_STAGE_MARK = "__"  # between a stage's name and its array's name in a pipeline file
_SPACE_ESCAPES = {" ": "\\s", "\t": "\\t", "\n": "\\n", "\r": "\\r"}


def tokens_sentence(tokens: Sequence[str], tags: Sequence[str] | None = None,
                    comments: Sequence[str] = ()) -> Sentence:
    """A ten-column Sentence of ``tokens`` (POS tags in CPOSTAG and POSTAG, ``_`` without tags).

    ``comments`` are whole lines (starting with ``#``) put before the tokens.
    """
    if tags is not None and len(tags) != len(tokens):
        raise InputError(f"{len(tags)} tags for {len(tokens)} tokens")
    rows = []
    for i, form in enumerate(tokens):
        if not form or any(ch.isspace() for ch in form):
            raise InputError(f"token {i + 1} {form!r} is empty or holds whitespace")
        tag = tags[i] if tags is not None else BLANK
        rows.append((str(i + 1), form, BLANK, tag, tag, BLANK, BLANK, BLANK, BLANK, BLANK))
    aside = tuple((0, line) for line in comments)
    return Sentence(tuple(rows), aside)


def text_sentences(text: str, language: str = "english", abbreviations: Sequence[str] = ()
                   ) -> list[tuple[str, list[str]]]:
    """(sentence text with whitespace runs as one space, its Penn Treebank tokens) for each non-empty
    sentence of ``text``."""
    return [(_SPACE.sub(" ", s.text), [t.norm for t in s.tokens]) for s in segment(text, language, abbreviations)]


def parser_columns(parser: Parser) -> tuple[str, ...]:
    """The tagger columns (``upos``, ``pos``) whose tags ``parser`` reads."""
    return PARSER_COLUMNS[parser.featurizer.tags]


def _taggers_by_column(taggers: "Tagger | Sequence[Tagger]") -> dict[str, Tagger]:
    """The taggers given, by the column each predicts (:data:`COLUMN_NAMES`), in the order they run: those of
    words only first, then a FEATS or joint tagger reading their UPOS (``--reads-upos``), which then writes
    every column it predicts. InputError for anything else, for two taggers of words that fill a column, or
    for a tagger reading a UPOS that no tagger gives."""
    given = [taggers] if isinstance(taggers, Tagger) else list(taggers)
    if not given:
        raise InputError("no tagger given: the parser reads tags, give a POS tagger model")
    out: dict[str, Tagger] = {}
    for tagger in sorted(given, key=lambda t: t.input_column is not None if isinstance(t, Tagger) else False):
        if not isinstance(tagger, Tagger):
            raise InputError(f"a tagger must be an egnlp Tagger, not {type(tagger).__name__}")
        reads = tagger.input_column
        if tagger.column not in COLUMN_NAMES or reads not in (None, "upos"):
            raise InputError(f"the tagger must be a POS tagger (or a morphology tagger reading words or UPOS), "
                             f"not a {tagger.column} model" + (" reading POS tags" if reads == "pos" else ""))
        if reads == "upos" and "upos" not in filled_columns(out):
            raise InputError(f"the {COLUMN_NAMES[tagger.column]} tagger reads UPOS tags: give a UPOS tagger too")
        filled = filled_columns(out) & set(FILLS[tagger.column])
        if filled and reads is None:
            raise InputError(f"two taggers predict {', '.join(COLUMN_NAMES[c] for c in sorted(filled))}; give one "
                             "tagger per tag column")
        if tagger.column in out:
            raise InputError(f"two taggers predict {COLUMN_NAMES[tagger.column]}; give one tagger per tag column")
        out[tagger.column] = tagger
    return out


def filled_columns(taggers: dict[str, Tagger]) -> set[str]:
    """The corpus columns (``upos``, ``pos``, ``feats``) that ``taggers`` (by column) fill."""
    return {c for column in taggers for c in FILLS[column]}


def _feature_forms(words: Sequence[tuple[str, str]], vocabulary: set[str] | None) -> list[str]:
    """The forms a tagger sees of (form, Treebank form) words: the Treebank form of a word whose characters
    the tagger never saw in training while it saw the Treebank form (``` `` ``` for ``"`` in PTB data);
    else the characters."""
    if vocabulary is None:
        return [norm for _, norm in words]
    return [norm if norm != form and form not in vocabulary and norm in vocabulary else form for form, norm in words]


def _misc(space_after: str | None) -> str:
    """The MISC field of a token followed by ``space_after`` (None: the end of the text)."""
    if space_after is None or space_after == " ":
        return BLANK
    if space_after == "":
        return "SpaceAfter=No"
    return "SpacesAfter=" + "".join(_SPACE_ESCAPES.get(ch, f"\\u{ord(ch):04X}") for ch in space_after)


def tag_text(text: str, taggers: "Tagger | Sequence[Tagger]", *, comments: bool = True,
             language: str = "english") -> list[Sentence]:
    """Split and tokenise ``text`` and tag it with POS taggers (one per column: UPOS and/or XPOS), each
    filling its own column: one CoNLL-U Sentence (no heads) per sentence (see the module docstring)."""
    by_column = _taggers_by_column(taggers)
    return _tagged(_segmented(text, "text", language, by_column), by_column, comments)[0]


def _segmented(text: str, mode: str, language: str, by_column: dict[str, Tagger],
               tokenizer: Tokenizer | None = None) -> list[TextSentence]:
    """The sentences and tokens of ``text`` read as ``mode`` (``text``, ``lines`` or ``tokens``: see
    :data:`INPUTS`), in Unicode NFC (UD's FORM and text): by ``tokenizer`` if given, else by Punkt and the
    Treebank word tokenizer, knowing the abbreviations of the taggers' training vocabularies."""
    text = unicodedata.normalize("NFC", text)
    if tokenizer is not None and mode == "text":
        return tokenizer.tokenize(text)
    if tokenizer is not None and mode == "lines":
        return [_one_sentence(tokenizer.tokenize(line.group()), line.start())
                for line in re.finditer(r"[^\n]*\S[^\n]*", text)]
    vocabularies = [set(t.vocabulary) if t.vocabulary is not None else None for t in by_column.values()]
    abbreviations = sorted(set().union(*(vocabulary_abbreviations(v) for v in vocabularies)))
    if mode == "text":
        return segment(text, language, abbreviations)
    # a line is a sentence: the line break after its last token is no part of the text
    return [dataclasses.replace(s, tokens=(*s.tokens[:-1], dataclasses.replace(s.tokens[-1], space_after=" ")))
            for s in segment_lines(text, language, abbreviations, tokenized=mode == "tokens")]


def _one_sentence(sentences: Sequence[TextSentence], offset: int) -> TextSentence:
    """The sentences of a line as one sentence, its offsets moved by ``offset``, the line's end no space."""
    tokens = [dataclasses.replace(t, start=t.start + offset, end=t.end + offset) for s in sentences for t in s.tokens]
    tokens[-1] = dataclasses.replace(tokens[-1], space_after=" ")
    text = "".join(t.form + (t.space_after or "") for t in tokens[:-1]) + tokens[-1].form
    return TextSentence(tokens[0].start, tokens[-1].end, text, tuple(tokens))


def _tagged(pieces: Sequence[TextSentence], by_column: dict[str, Tagger], comments: bool, jobs: int | None = 1,
            multiword: MultiwordExpander | None = None, confidence: bool = False,
            lemmatizer: Lemmatizer | None = None):
    """(tagged Sentences with original forms, the same with the forms the models see): the tokens of each
    piece, split into words by ``multiword`` (if given), tagged by each tagger, lemmatized by ``lemmatizer``
    (if given); with ``confidence``, each tag's probability in MISC under its tagger's key
    (:attr:`Tagger.confidence_key`)."""
    untagged, words = [], []
    for k, piece in enumerate(pieces):
        lines = (f"# sent_id = {k + 1}", f"# text = {_LINE_BREAK.sub(' ', piece.text)}") if comments else ()
        miscs = [_misc(token.space_after) for token in piece.tokens]
        if multiword is not None:
            sentence = multiword.sentence([token.form for token in piece.tokens], miscs, lines)
            if len(sentence) > len(piece.tokens):  # the models see split words as they are
                untagged.append(sentence)
                words.append([(form, form) for form in sentence.forms])
                continue
        untagged.append(Sentence(tuple((str(i + 1), token.form, *(BLANK,) * 7, misc)
                                       for i, (token, misc) in enumerate(zip(piece.tokens, miscs))),
                                 tuple((0, line) for line in lines)))
        words.append([(token.form, token.norm) for token in piece.tokens])
    model_forms = None
    tagged = untagged
    for column, tagger in by_column.items():
        vocabulary = set(tagger.vocabulary) if tagger.vocabulary is not None else None
        forms = [_feature_forms(w, vocabulary) for w in words]
        tagged = _with_tags(tagged, tagger, forms, jobs, confidence)
        if model_forms is None or "pos" in FILLS[column]:
            model_forms = forms  # the parser sees the forms of its fine-tag tagger
    tagged = with_lemmas(tagged, lemmatizer)
    return tagged, [_with_forms(s, f) for s, f in zip(tagged, model_forms or [s.forms for s in tagged])]


def _with_tags(sentences: Sequence[Sentence], tagger: Tagger, forms: Sequence[Sequence[str]], jobs: int | None,
               confidence: bool) -> list[Sentence]:
    """``sentences`` with the tags ``tagger`` gives ``forms`` in the columns it fills (:data:`FILLS`: a joint
    tag split into UPOS, XPOS and FEATS) and, with ``confidence``, their probabilities in MISC."""
    read = [s.labels(tagger.input_column) for s in sentences] if tagger.input_column else None
    found = tagger.predict(forms, read, jobs=jobs, confidence=True) if confidence else \
        (tagger.predict(forms, read, jobs=jobs),)
    indices = [_INDEX[c] for c in FILLS[tagger.column]]

    def written(row: tuple[str, ...], tag: str) -> tuple[str, ...]:
        values = split_morph(tag) if tagger.column == "morph" else (tag,)
        cells = list(row)
        for index, value in zip(indices, values):
            cells[index] = value
        return tuple(cells)

    out = [dataclasses.replace(s, rows=tuple(written(row, tag) for row, tag in zip(s.rows, t)))
           for s, t in zip(sentences, found[0])]
    if confidence:
        out = [s.with_misc(tagger.confidence_key, [probability_text(p) for p in probs])
               for s, probs in zip(out, found[1])]
    return out


def tag_sentences(sentences: Sequence[Sentence], taggers: dict[str, Tagger], lemmatizer: Lemmatizer | None = None,
                  *, jobs: int | None = 1, confidence: bool = False) -> list[Sentence]:
    """``sentences`` (words given) with the columns ``taggers`` (by column, in :data:`COLUMN_NAMES`' order)
    fill, then LEMMA by ``lemmatizer`` (if given); ``confidence``: the tags' probabilities in MISC."""
    tagged = list(sentences)
    if not tagged:
        return []
    for tagger in taggers.values():
        tagged = _with_tags(tagged, tagger, [s.forms for s in tagged], jobs, confidence)
    return with_lemmas(tagged, lemmatizer)


def with_lemmas(sentences: Sequence[Sentence], lemmatizer: Lemmatizer | None) -> list[Sentence]:
    """``sentences`` with the lemmas of ``lemmatizer`` in LEMMA (as they are without one)."""
    return list(sentences) if lemmatizer is None else lemmatizer.lemmatize(sentences)


def _with_forms(sentence: Sentence, forms: Sequence[str]) -> Sentence:
    """A copy of ``sentence`` with other FORMs."""
    rows = tuple(row[:FORM] + (form,) + row[FORM + 1:] for row, form in zip(sentence.rows, forms))
    return dataclasses.replace(sentence, rows=rows)


def _stage_parts(stages: dict[str, tuple[dict[str, np.ndarray], dict[str, Any]]], meta: dict[str, Any]
                 ) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """One model file's arrays and metadata holding each stage's (arrays, metadata): the arrays named
    ``STAGE__NAME`` (a model file's array names are identifiers), the metadata under ``stages``."""
    arrays = {f"{stage}{_STAGE_MARK}{name}": array
              for stage, (parts, _) in stages.items() for name, array in parts.items()}
    return arrays, {**meta, "stages": {stage: stage_meta for stage, (_, stage_meta) in stages.items()}}


def _stages_of(arrays: dict[str, np.ndarray], meta: dict[str, Any], path: str
               ) -> dict[str, tuple[dict[str, np.ndarray], dict[str, Any]]]:
    """The inverse of :func:`_stage_parts` (ModelError for arrays of no stage, or metadata not an object)."""
    stages = meta.get("stages")
    if not isinstance(stages, dict) or not all(isinstance(m, dict) for m in stages.values()):
        raise ModelError(f"{path}: inconsistent model file (no stages in its metadata)")
    out: dict[str, tuple[dict[str, np.ndarray], dict[str, Any]]] = {stage: ({}, m) for stage, m in stages.items()}
    for name, array in arrays.items():
        stage, _, inner = name.partition(_STAGE_MARK)
        if stage not in out or not inner:
            raise ModelError(f"{path}: inconsistent model file (array {name[:40]!r} of no stage)")
        out[stage][0][inner] = array
    return out


class Pipeline:
    """Raw text to dependency trees: sentences and tokens (:mod:`egnlp.tagger.text`), the taggers (UPOS, XPOS,
    FEATS, or the three as one joint tag; at least those the parser reads, :func:`parser_columns`), the
    lemmatizer, the parser.

        from egnlp import Parser, Pipeline, Tagger
        pipeline = Pipeline([Tagger.load("pt-upos.npz")], Parser.load("pt.npz"), language="pt")
        print(pipeline.conllu("O Sr. Silva chegou às 9h30. Saiu."))
        pipeline.save("pt.model")                       # one file: egnlp pipeline run pt.model text.txt
        Pipeline.load("pt.model").conllu("Saiu.")

    ``language`` picks Punkt's model and abbreviations (a Punkt language name or code, e.g. ``portuguese``
    or ``pt``) when there is no ``tokenizer`` (:class:`~egnlp.tagger.tokenizer_model.Tokenizer`, trained
    on the treebank's text), which splits raw text into sentences and tokens. ``multiword`` splits tokens
    into syntactic words (``do`` = ``de o``, written as a CoNLL-U range) before tagging; ``lemmatizer``
    fills LEMMA after the taggers. ``info`` is what the pipeline's training records (``egnlp model info``
    shows it).

    Raises:
        InputError, ModelError: a tagger that is not a POS or morphology tagger (a chunker, say), or two that
            fill a column; a tag column the parser reads that no tagger fills (FEATS or LEMMA: a warning).
        ValueError: an unknown language.
    """

    def __init__(self, taggers: "Tagger | Sequence[Tagger]", parser: Parser | None, *, language: str = "english",
                 tokenizer: Tokenizer | None = None, multiword: MultiwordExpander | None = None,
                 lemmatizer: Lemmatizer | None = None, info: dict[str, Any] | None = None) -> None:
        if parser is not None and not isinstance(parser, Parser):
            raise InputError(f"parser must be an egnlp Parser or None, not {type(parser).__name__}")
        if multiword is not None and not isinstance(multiword, MultiwordExpander):
            raise InputError(f"multiword must be an egnlp MultiwordExpander, not {type(multiword).__name__}")
        if tokenizer is not None and not isinstance(tokenizer, Tokenizer):
            raise InputError(f"tokenizer must be an egnlp Tokenizer, not {type(tokenizer).__name__}")
        if lemmatizer is not None and not isinstance(lemmatizer, Lemmatizer):
            raise InputError(f"lemmatizer must be an egnlp Lemmatizer, not {type(lemmatizer).__name__}")
        self.tokenizer = tokenizer
        self.lemmatizer = lemmatizer
        language_name(language)
        self.taggers = _taggers_by_column(taggers)
        self.parser = parser
        self.multiword = multiword
        self.language = language
        self.info = dict(info or {})
        if parser is not None:
            self._check_parser(parser)

    def _check_parser(self, parser: Parser) -> None:
        """InputError unless the stages fill every column ``parser`` reads."""
        needed = parser_columns(parser)
        reads = " and ".join(COLUMN_NAMES[c] for c in needed)
        setting = f"trained with --pos {parser.featurizer.tags}"
        filled = filled_columns(self.taggers)
        for column in needed:
            if column not in filled:
                option = "upos" if column == "upos" else "xpos"
                raise InputError(f"the parser reads {reads} tags ({setting}) but no tagger predicts "
                                 f"{COLUMN_NAMES[column]}: give one trained with 'egnlp tagger train --column "
                                 f"{option}' (or --column morph)")
        unfilled = [name for name, used, given in (("FEATS", parser.featurizer.use_feats, "feats" in filled),
                                                   ("LEMMA", parser.featurizer.use_lemma, self.lemmatizer is not None))
                    if used and not given]
        if unfilled:
            warnings.warn(f"the parser was trained with {' and '.join(unfilled)} but no stage of the pipeline "
                          "predicts them: it sees '_' there, and parses less accurately than it would (a pipeline "
                          "from 'egnlp pipeline train' predicts what its parser reads)", EgnlpWarning, stacklevel=3)

    def parse(self, text: str, *, input: str = "text", comments: bool = True, jobs: int | None = 1,
              confidence: bool = False) -> list[Sentence]:
        """One CoNLL-U Sentence per sentence of ``text`` with the predicted tags, heads and labels, with
        ``# sent_id`` / ``# text`` comments unless ``comments`` is False (see the module docstring); text
        without tokens gives []. ``input`` says how to read ``text`` (:data:`INPUTS`); with ``conllu``
        the words, comments and multiword tokens are kept (and ``comments`` has no effect). ``jobs``
        processes (None: every core) tag and parse blocks of sentences; the result is the same for any
        number.

        With ``confidence``, MISC also holds each word's probabilities under the models: of its tags
        (``UPosProb``, ``XPosProb``: :meth:`Tagger.predict <egnlp.tagger.Tagger.predict>`) and of its head
        (``HeadProb``: :meth:`Parser.predict <egnlp.parser.Parser.predict>`), e.g.
        ``HeadProb=0.8731|SpaceAfter=No|UPosProb=0.9954``.

        Raises:
            ValueError: an unknown ``input``; text with a lone surrogate or a control character.
            CorpusError: ``conllu`` input that is not CoNLL-U.
        """
        if input not in INPUTS:
            raise ValueError(f"input must be one of {', '.join(INPUTS)}, not {input!r}")
        if input == "conllu":
            from egnlp.corpora import parse_corpus
            return self.parse_sentences(parse_corpus(text, "<text>", "conll", require_heads=False)[1], jobs=jobs,
                                        confidence=confidence)
        pieces = _segmented(text, input, self.language, self.taggers, self.tokenizer)
        shown, seen = _tagged(pieces, self.taggers, comments, jobs, self.multiword, confidence, self.lemmatizer)
        if not shown or self.parser is None:
            return shown
        parsed = self.parser.parse_corpus(seen, jobs=jobs, confidence=confidence)
        return [_with_forms(tree, original.forms) for tree, original in zip(parsed, shown)]

    def parse_sentences(self, sentences: Sequence[Sentence], *, jobs: int | None = 1,
                        confidence: bool = False) -> list[Sentence]:
        """Tag and parse sentences whose words are given (a CoNLL-U file's): the taggers' columns, LEMMA (with
        a lemmatizer), HEAD and DEPREL are predicted, DEPS cleared; FORM, MISC, comments, multiword-token
        lines and the columns no stage fills are kept (``confidence``: as :meth:`parse`)."""
        tagged = self.tag_sentences(sentences, jobs=jobs, confidence=confidence)
        if not tagged or self.parser is None:
            return tagged
        return self.parser.parse_corpus(tagged, jobs=jobs, confidence=confidence)

    def tag_sentences(self, sentences: Sequence[Sentence], *, jobs: int | None = 1,
                      confidence: bool = False) -> list[Sentence]:
        """:meth:`parse_sentences` without the parser: the taggers' columns and LEMMA (with a lemmatizer)."""
        return tag_sentences(sentences, self.taggers, self.lemmatizer, jobs=jobs, confidence=confidence)

    def conllu(self, text: str, *, input: str = "text", jobs: int | None = 1, confidence: bool = False) -> str:
        """The CoNLL-U text of :meth:`parse`."""
        return to_conllu(self.parse(text, input=input, jobs=jobs, confidence=confidence))

    # -- files ---------------------------------------------------------------

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the whole pipeline (taggers, parser, language, info) as one model file, atomically."""
        stages = {name: stage.file_parts() for name, stage in (("tokenizer", self.tokenizer),
                                                                   ("multiword", self.multiword)) if stage is not None}
        stages.update((column, tagger.file_parts()) for column, tagger in self.taggers.items())
        if self.lemmatizer is not None:
            stages["lemmatizer"] = self.lemmatizer.file_parts()
        if self.parser is not None:
            stages["parser"] = self.parser.file_parts()
        meta = {"kind": PIPELINE_KIND, "format_version": PIPELINE_VERSION, "language": self.language,
                "info": self.info}
        write_npz_atomic(path, *_stage_parts(stages, meta))

    @classmethod
    def load(cls, path: str | os.PathLike[str], *, prune: bool = True) -> "Pipeline":
        """Read a pipeline file written by :meth:`save` (``prune``: as :meth:`Parser.load`).

        Raises:
            ModelError: any file that is not a pipeline model of this format, or whose contents do not agree.
        """
        arrays, meta = read_npz(path, PIPELINE_KIND, PIPELINE_VERSION)
        path = str(path)
        stages = _stages_of(arrays, meta, path)
        language, info = meta.get("language"), meta.get("info")
        if not stages.keys() - {"parser", "tokenizer", "multiword", "lemmatizer"} <= COLUMN_NAMES.keys():
            raise ModelError(f"{path}: inconsistent model file (stages {', '.join(sorted(stages))[:60]})")
        if not isinstance(language, str) or not isinstance(info, dict):
            raise ModelError(f"{path}: inconsistent model file (no language or info)")
        parser = Parser.from_file_parts(*stages.pop("parser"), path, prune=prune) if "parser" in stages else None
        multiword = MultiwordExpander.from_file_parts(*stages.pop("multiword"), path) if "multiword" in stages else None
        tokenizer = Tokenizer.from_file_parts(*stages.pop("tokenizer"), path) if "tokenizer" in stages else None
        lemmatizer = Lemmatizer.from_file_parts(*stages.pop("lemmatizer"), path) if "lemmatizer" in stages else None
        taggers = [Tagger.from_file_parts(*stages[column], path) for column in COLUMN_NAMES if column in stages]
        try:
            return cls(taggers, parser, language=language, tokenizer=tokenizer, multiword=multiword,
                       lemmatizer=lemmatizer, info=info)
        except (InputError, ValueError) as exc:
            raise ModelError(f"{path}: inconsistent model file ({exc})") from None


def parse_text(text: str, taggers: "Tagger | Sequence[Tagger]", parser: Parser, *, comments: bool = True,
               language: str = "english", jobs: int | None = 1, confidence: bool = False) -> list[Sentence]:
    """Dependency trees of raw ``text``: :meth:`Pipeline.parse` of ``Pipeline(taggers, parser, language=...)``."""
    return Pipeline(taggers, parser, language=language).parse(text, comments=comments, jobs=jobs,
                                                              confidence=confidence)


def check_pos_tagger(tagger: Tagger, pos_model: Tagger | None, name: object = "--pos-tagger") -> None:
    """A POS tagger given to tag a chunker's input (``name`` names its file): ModelError unless ``tagger``
    is a chunker reading POS tags and ``pos_model`` a POS tagger reading words."""
    if pos_model is None:
        return
    if not tagger.use_pos:
        raise ModelError("--pos-tagger goes with a chunker; this model reads words only")
    if pos_model.column != "pos" or pos_model.use_pos:
        raise ModelError(f"{name}: not a POS tagger (it predicts the {pos_model.column} column)")


def sentences_to_tag(text: str, name: str, fmt: str, tagger: Tagger, pos_model: Tagger | None,
                     language: str = "english") -> list[Sentence]:
    """The sentences of a whole input to tag: raw text (``fmt`` ``text``) split and tokenised, knowing the
    abbreviations of the model's training vocabulary; else the corpus parsed (a chunker's POS column
    checked unless a POS tagger tags it first)."""
    from egnlp.corpora import parse_corpus
    from egnlp.corpora.formats import TEXT
    from egnlp.corpora.tagging import check_tags

    if fmt != TEXT:
        _, sentences = parse_corpus(text, name, fmt, require_heads=False)
        if tagger.use_pos and pos_model is None:
            check_tags(sentences, "pos", "a chunker reads the POS column (or give --pos-tagger MODEL)")
        return sentences
    if tagger.use_pos and pos_model is None:
        raise ModelError("this model is a chunker and reads POS tags: give --pos-tagger MODEL to tag raw text, "
                         "or tag a corpus file with a POS column")
    abbreviations = vocabulary_abbreviations((pos_model or tagger).vocabulary)
    return [tokens_sentence(tokens) for _, tokens in text_sentences(text, language, abbreviations)]


def format_tagged(sentences: Sequence[Sentence], target: str, column: str) -> str:
    """Tagged sentences as ``conll``, ``conll2000`` or ``text`` (word/TAG of ``column``, a sentence a line)."""
    from egnlp.corpora.tagging import format_conll2000

    if target == "conll":
        return format_conll(sentences)
    return format_conll2000(sentences) if target == "conll2000" else slash_text(sentences, column)


def to_conllu(sentences: Sequence[Sentence]) -> str:
    """CoNLL-U text of the sentences (their lines, a blank line after each)."""
    return format_conll(sentences)


