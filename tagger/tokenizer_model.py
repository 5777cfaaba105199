"""The Tokenizer model: raw text -> sentences -> tokens, learned from a treebank's own text.

A paragraph (text between blank lines) is a chain of its non-whitespace
characters, each labelled ``I`` (the token goes on), ``T`` (a token ends
with it) or ``S`` (a token and its sentence end with it); the features are
those of :mod:`egnlp.features.char_features` and the model is the CRF
tagger's linear chain (node, transition, start and stop parts; Viterbi
decoding, :mod:`egnlp.tagger.chain_inference`), trained as the CRF tagger is
(:mod:`egnlp.tokenizer_training`). The training labels come from the text a
CoNLL-U file holds (:mod:`egnlp.corpora.ud_text`): :func:`paragraph_labels`.

Three labels rather than a BIES scheme: every position is a character that
ends a token or not, so the token starts are implied (the character after a
token end) and B/S would only split the ``T`` and ``I`` decisions by what
came before, which the transition parts already see; a sentence end is a
token end, one label more. Whitespace needs no label: where the training
tokens never hold whitespace (``spaces_in_tokens`` false, as in every UD
treebank but a few), a character followed by whitespace always ends its
token when decoding; the model still decides whether it ends the sentence.

:meth:`Tokenizer.tokenize` gives the sentences in the shape of
:func:`egnlp.tagger.text.segment` (NLTK's Punkt and Treebank rules, the
fallback where there is no tokenizer model): :class:`~egnlp.tagger.text.TextSentence`
objects holding :class:`~egnlp.tagger.text.Token` objects with offsets into the
text, the characters as they are (``norm`` is the form) and the whitespace
after each token. A paragraph always ends a sentence, and a sentence of more than
:data:`~egnlp.corpora.sentence.MAX_WORDS` tokens is cut as ``segment`` cuts it.

A model file is one ``.npz`` read through :func:`egnlp.base.files.read_npz`
(kind ``egnlp-tokenizer``, :data:`FORMAT_VERSION`; never pickled): the
arrays ``weights`` (n_features,) float64, ``pred_keys`` (n_predicates,)
uint64 sorted, ``lab_ptr`` (n_predicates + 1,) int64 and ``lab_labels``
(n_node,) int32, and in ``meta`` the labels, the templates and their
fingerprint (a model whose predicates this code no longer makes does not
load), ``spaces_in_tokens`` and the training information.
"""

from __future__ import annotations

import os
import re
import unicodedata
from collections import Counter
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from egnlp.base.errors import InputError
from egnlp.base.files import ModelError, check_arrays, read_npz, write_npz_atomic
from egnlp.corpora.ud_text import Paragraph
from egnlp.features.char_features import (INSIDE, LABELS, MAX_PIECE, SENTENCE_END, TEMPLATES, TOKEN_END,
                                          CharFeaturizer, char_keys, nonspace_positions, templates_fingerprint)
from egnlp.tagger.chain_inference import viterbi
from egnlp.tagger.crf import chain_weights, decode_ids
from egnlp.tagger.text import TextSentence, Token, check_text, cut_pieces, paragraph_spans

FORMAT_VERSION = 1
MODEL_KIND = "egnlp-tokenizer"
RULED_OUT = -1e100  # the emission score of a label a constraint rules out
ARRAYS = {"weights": ("<f8", 1), "pred_keys": ("<u8", 1), "lab_ptr": ("<i8", 1), "lab_labels": ("<i4", 1)}

__all__ = ["FORMAT_VERSION", "MODEL_KIND", "Segmentation", "Tokenizer", "paragraph_labels", "segmentation_f1"]


def paragraph_labels(paragraph: Paragraph) -> np.ndarray:
    """The gold label id (:data:`~egnlp.features.char_features.LABELS`) of every non-whitespace character
    of a paragraph, (n,) int64 in text order."""
    labels = np.full(len(paragraph.text), INSIDE, dtype=np.int64)
    ends = np.array([end for _, end in paragraph.tokens], dtype=np.int64) - 1
    labels[ends] = TOKEN_END
    labels[ends[[stop - 1 for _, stop in paragraph.sentences]]] = SENTENCE_END
    return labels[nonspace_positions(paragraph.text)]


def spaces_in(paragraphs: Sequence[Paragraph]) -> bool:
    """Whether a token of ``paragraphs`` holds whitespace."""
    return any(ch.isspace() for paragraph in paragraphs for start, end in paragraph.tokens
               for ch in paragraph.text[start:end])


@dataclass(frozen=True)
class Segmentation:
    """Token and sentence spans, (start, end) character offsets into one text."""

    tokens: tuple[tuple[int, int], ...]
    sentences: tuple[tuple[int, int], ...]

    @classmethod
    def of(cls, sentences: Sequence[TextSentence]) -> "Segmentation":
        """The spans of :meth:`Tokenizer.tokenize`'s (or :func:`~egnlp.tagger.text.segment`'s) sentences."""
        return cls(tuple((t.start, t.end) for s in sentences for t in s.tokens),
                   tuple((s.start, s.end) for s in sentences))

    @classmethod
    def of_paragraphs(cls, paragraphs: Sequence[Paragraph], separator: str = "\n\n") -> "Segmentation":
        """The gold spans of ``paragraphs`` in the text ``separator.join(p.text for p in paragraphs)``."""
        tokens, sentences, at = [], [], 0
        for paragraph in paragraphs:
            spans = [(at + start, at + end) for start, end in paragraph.tokens]
            tokens.extend(spans)
            sentences.extend((spans[first][0], spans[stop - 1][1]) for first, stop in paragraph.sentences)
            at += len(paragraph.text) + len(separator)
        return cls(tuple(tokens), tuple(sentences))


def segmentation_f1(gold: Segmentation, predicted: Segmentation) -> dict[str, float]:
    """F1 (%) of the token spans and of the sentence spans that match exactly, as the CoNLL 2018
    evaluation counts them on one text: ``{"tokens": ..., "sentences": ...}``."""
    out = {}
    for name in ("tokens", "sentences"):
        g, p = set(getattr(gold, name)), set(getattr(predicted, name))
        both = len(g & p)
        out[name] = 200.0 * both / (len(g) + len(p)) if g or p else 100.0
    return out


def whole_tokens(paragraphs: Sequence[Paragraph], share: float = 0.9, least: int = 2) -> list[str]:
    """The punctuation tokens of two characters or more (the Dutch opening quote ``,,``, ``''``, ``...``)
    that the training text keeps whole: at least ``least`` times, and in at least ``share`` of the places
    where their characters occur. The tokenizer never ends a token inside them: a character model sees
    too few of them to learn that a run of commas is one token."""
    whole: Counter[str] = Counter()
    for paragraph in paragraphs:
        for start, end in paragraph.tokens:
            token = paragraph.text[start:end]
            if len(token) >= 2 and all(unicodedata.category(ch).startswith("P") for ch in token):
                whole[token] += 1
    found = Counter({t: sum(p.text.count(t) for p in paragraphs) for t in whole})
    return sorted(t for t, n in whole.items() if n >= least and n >= share * found[t])


class Tokenizer:
    """A trained character-chain tokenizer (see the module docstring).

    ``featurizer`` is the fitted :class:`~egnlp.features.char_features.CharFeaturizer`, ``weights`` its
    (n_features,) weights; ``spaces_in_tokens``: whether a token may hold whitespace (some training token
    did); ``info``: what the training recorded.
    """

    def __init__(self, featurizer: CharFeaturizer, weights: np.ndarray, *, spaces_in_tokens: bool = False,
                 whole: Sequence[str] = (), info: dict[str, Any] | None = None):
        self.featurizer = featurizer
        self.weights = chain_weights(weights, featurizer.n_features)
        self.spaces_in_tokens = bool(spaces_in_tokens)
        self.whole = tuple(sorted(set(whole), key=lambda t: (-len(t), t)))
        if any(len(t) < 2 or any(ch.isspace() for ch in t) for t in self.whole):
            raise ValueError("the tokens kept whole must be two characters or more, without whitespace")
        self._whole = re.compile("|".join(map(re.escape, self.whole))) if self.whole else None
        self.info = dict(info or {})

    labels = LABELS

    def __repr__(self) -> str:
        return f"Tokenizer(features={self.featurizer.n_features}, spaces_in_tokens={self.spaces_in_tokens})"

    def label_paragraphs(self, texts: Sequence[str]) -> list[np.ndarray]:
        """The Viterbi label ids of the non-whitespace characters of each paragraph text (one chain each)."""
        found = char_keys(texts)
        f = self.featurizer
        features = f.features(f.encode(found))
        if self._whole is None:
            return decode_ids(features, self.weights)
        out = []
        for i, paragraph in enumerate(texts):
            emissions, *rest = features.chain_scores(i, self.weights)
            inside = self._inside(paragraph)
            emissions[inside, :] = RULED_OUT  # Viterbi takes finite scores: a label no path can afford
            emissions[inside, INSIDE] = 0.0
            out.append(viterbi(emissions, *rest)[0])
        return out

    def _inside(self, paragraph: str) -> np.ndarray:
        """The chain positions (non-whitespace characters) of ``paragraph`` that the tokens kept whole
        (:attr:`whole`) hold but for their last character: no token ends there."""
        positions = nonspace_positions(paragraph)
        inside = [k for match in self._whole.finditer(paragraph) for k in range(match.start(), match.end() - 1)]
        return np.searchsorted(positions, np.array(inside, dtype=np.int64))

    def spans(self, text: str) -> list[list[tuple[int, int]]]:
        """The (start, end) of every token of every sentence of ``text``, before long sentences are cut."""
        pieces = [(start, end) for start, end in paragraph_spans(text) if text[start:end].strip()]
        texts = [text[start:end] for start, end in pieces]
        out: list[list[tuple[int, int]]] = []
        for (offset, _), paragraph, labels in zip(pieces, texts, self.label_paragraphs(texts)):
            positions = nonspace_positions(paragraph)
            ends = labels != INSIDE
            if not self.spaces_in_tokens:  # a character followed by whitespace ends its token
                ends[:-1] |= positions[1:] > positions[:-1] + 1
            ends[-1] = True
            sentence_ends = (labels == SENTENCE_END) & ends
            sentence_ends[-1] = True
            last = np.flatnonzero(ends)
            first = np.concatenate([[0], last[:-1] + 1])
            starts, stops = (positions[first] + offset).tolist(), (positions[last] + 1 + offset).tolist()
            breaks = np.flatnonzero(sentence_ends[last]) + 1
            for a, b in zip(np.concatenate([[0], breaks[:-1]]).tolist(), breaks.tolist()):
                out.append(list(zip(starts[a:b], stops[a:b])))
        return out

    def tokenize(self, text: str) -> list[TextSentence]:
        """The sentences of ``text`` with their tokens and offsets (see the module docstring): each
        token's ``text[start:end]`` is its form, and its ``space_after`` the text up to the next token
        (None after the last token when the text ends there).

        Raises:
            InputError: text that is not a ``str``, holds a lone surrogate or a control character that a
                CoNLL file cannot hold.
        """
        if not isinstance(text, str):
            raise InputError(f"a tokenizer reads a str, not {type(text).__name__}")
        try:
            check_text(text)
        except ValueError as exc:
            raise InputError(str(exc)) from None
        runs = [piece for sentence in self.spans(text)
                for piece in cut_pieces([(start, end, "") for start, end in sentence])]
        flat = [span for run in runs for span in run]
        out, k = [], 0
        for run in runs:
            tokens = []
            for start, end, _ in run:
                form = text[start:end]
                following = text[end:flat[k + 1][0]] if k + 1 < len(flat) else text[end:] or None
                tokens.append(Token(start, end, form, form, following))
                k += 1
            out.append(TextSentence(run[0][0], run[-1][1], text[run[0][0]:run[-1][1]], tuple(tokens)))
        return out

    def segmentation(self, text: str) -> Segmentation:
        """The token and sentence spans :meth:`tokenize` gives."""
        return Segmentation.of(self.tokenize(text))

    # -- files ---------------------------------------------------------------

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the model file (see the module docstring), atomically."""
        write_npz_atomic(path, *self.file_parts())

    def file_parts(self) -> tuple[dict[str, np.ndarray], dict]:
        """The arrays and metadata of the model file :meth:`save` writes (:meth:`from_file_parts` reads them)."""
        f = self.featurizer
        arrays = {"weights": self.weights, "pred_keys": f.pred_keys, "lab_ptr": f.lab_ptr, "lab_labels": f.lab_labels}
        meta = {"kind": MODEL_KIND, "format_version": FORMAT_VERSION, "labels": list(LABELS),
                "templates": list(TEMPLATES), "max_piece": MAX_PIECE, "fingerprint": templates_fingerprint(),
                "spaces_in_tokens": self.spaces_in_tokens, "whole": list(self.whole), "info": self.info}
        return arrays, meta

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> "Tokenizer":
        """Read a tokenizer file.

        Raises:
            ModelError: a file that is not a tokenizer of this format, one made with other features, or
                whose contents do not agree.
        """
        return cls.from_file_parts(*read_npz(path, MODEL_KIND, FORMAT_VERSION), path)

    @classmethod
    def from_file_parts(cls, arrays: dict[str, np.ndarray], meta: dict, path: str | os.PathLike[str]) -> "Tokenizer":
        """The tokenizer of :meth:`file_parts`' arrays and metadata read from ``path`` (named in errors).

        Raises:
            ModelError: contents that do not agree.
        """
        if meta.get("labels") != list(LABELS) or meta.get("templates") != list(TEMPLATES) \
                or meta.get("max_piece") != MAX_PIECE or meta.get("fingerprint") != templates_fingerprint():
            raise ModelError(f"{path}: the tokenizer was trained with other character features "
                             "(features/char_features.py changed); retrain it")
        info = meta.get("info", {})
        if not isinstance(meta.get("spaces_in_tokens"), bool) or not isinstance(info, dict):
            raise ModelError(f"{path}: inconsistent model file ('spaces_in_tokens' must be true or false, "
                             "'info' an object)")
        try:
            check_arrays(arrays, ARRAYS)
            featurizer = CharFeaturizer(arrays["pred_keys"], arrays["lab_ptr"], arrays["lab_labels"])
            whole = meta.get("whole", [])
            if not isinstance(whole, list) or not all(isinstance(t, str) for t in whole):
                raise ValueError("'whole' must be a list of strings")
            return cls(featurizer, arrays["weights"], spaces_in_tokens=meta["spaces_in_tokens"], whole=whole,
                       info=info)
        except (KeyError, ValueError, TypeError) as exc:
            detail = f"missing {exc.args[0]!r}" if isinstance(exc, KeyError) else str(exc)
            raise ModelError(f"{path}: inconsistent model file ({detail})") from None
