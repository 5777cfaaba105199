"""The Tagger model: an inner sequence model (CRF or maxent) + the column it fills; tag, save, load.

An inner model implements :class:`SequenceModel`; the CRF's is
:class:`egnlp.tagger.crf.CRFModel`, the maxent tagger's :class:`egnlp.tagger.maxent.MaxentModel`.

A model file is one ``.npz`` read with ``allow_pickle=False`` (loading never
runs code) holding the inner model's arrays and ``meta``: UTF-8 JSON with the
format version, the kind ``egnlp-tagger``, the inner kind (``crf`` or
``maxent``), the label column (``pos``, ``upos`` or ``chunk``), the inner model's own
metadata and the training information.  It is written to a temporary file
and renamed (:func:`egnlp.base.files.write_npz_atomic`); it carries a
checksum of all its bytes and the dtype and shape of every array, checked on
loading before any array is used (:mod:`egnlp.base.files`).

The training vocabulary (the sorted word forms of the training sentences, for
accuracy on unknown words) is stored, when the Tagger has one, as the arrays
``vocab_bytes`` (the UTF-8 forms concatenated, uint8) and ``vocab_offsets``
(int64, one more than the forms); files without them load with
``vocabulary = None``.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import Any, Literal, Protocol, Sequence, overload

import numpy as np

from egnlp.corpora import Sentence
from egnlp.base.workers import map_blocks
from egnlp.corpora.morphology import split_morph
from egnlp.corpora.sentence import LABEL_COLUMNS, probability_text
from egnlp.base.errors import registered
from egnlp.base.files import ModelError, check_arrays, pack_strings, read_npz, unpack_strings, write_npz_atomic
from egnlp.base.nltk_bases import NLTKBase, nltk_base
from egnlp.tagger.crf import CRFModel
from egnlp.tagger.maxent import MaxentModel

FORMAT_VERSION = 2  # 2: a checksum and the arrays' records
MODEL_KIND = "egnlp-tagger"
VOCAB_ARRAYS = ("vocab_bytes", "vocab_offsets")
VOCAB_DTYPES = {"vocab_bytes": ("|u1", 1), "vocab_offsets": ("<i8", 1)}
INNER_MODELS: dict[str, type] = {CRFModel.kind: CRFModel, MaxentModel.kind: MaxentModel}
# The MISC key of a label's probability (``tag_corpus(..., confidence=True)``), by the column the tagger fills.
CONFIDENCE_KEYS = {"pos": "XPosProb", "upos": "UPosProb", "chunk": "ChunkProb", "feats": "FeatsProb",
                   "morph": "TagsProb"}

__all__ = ["FORMAT_VERSION", "MODEL_KIND", "ModelError", "SequenceModel", "Tagger"]


class SequenceModel(Protocol):
    """What a Tagger needs of its inner model."""

    kind: str  # "crf" or "maxent"
    labels: list[str]
    use_pos: bool  # reads POS tags as input (chunking)

    def predict(self, tokens_list: list[list[str]], pos_list: list[list[str]] | None = None) -> list[list[str]]: ...

    def predict_marginals(self, tokens_list: list[list[str]], pos_list: list[list[str]] | None = None
                          ) -> tuple[list[list[str]], list[np.ndarray]]: ...

    def marginals(self, tokens: list[str], pos: list[str] | None = None) -> np.ndarray: ...

    def to_arrays(self) -> tuple[dict[str, np.ndarray], dict]: ...

    @classmethod
    def from_arrays(cls, arrays: dict[str, np.ndarray], meta: dict) -> "SequenceModel": ...


def _predict_block(model: SequenceModel, items: Sequence[tuple[list[str], list[str] | None]]) -> list[list[str]]:
    """The labels of a block of (tokens, POS or None) items, as ``model.predict`` gives them."""
    tokens = [t for t, _ in items]
    pos = [p for _, p in items] if items and items[0][1] is not None else None
    return [list(labels) for labels in model.predict(tokens, pos)]


def _confident_block(model: SequenceModel, items: Sequence[tuple[list[str], list[str] | None]]
                     ) -> list[tuple[list[str], list[float]]]:
    """(labels, the marginal probability of each label) of a block of (tokens, POS or None) items."""
    tokens = [t for t, _ in items]
    pos = [p for _, p in items] if items and items[0][1] is not None else None
    labels, marginals = model.predict_marginals(tokens, pos)
    index = {label: k for k, label in enumerate(model.labels)}
    return [(list(labs), probs[np.arange(len(labs)), [index[y] for y in labs]].tolist())
            for labs, probs in zip(labels, marginals)]


def _inner_class(kind: str) -> type:
    """The inner model class of ``kind``."""
    return registered(INNER_MODELS, kind,
                      lambda names: ModelError(f"unknown tagger model kind {kind!r} (known: {names})"))


def _vocab_to_arrays(forms: Sequence[str]) -> dict[str, np.ndarray]:
    data, offsets = pack_strings(forms)
    return {"vocab_bytes": data, "vocab_offsets": offsets}


def _vocab_from_arrays(arrays: dict[str, np.ndarray]) -> list[str] | None:
    """The vocabulary stored in ``arrays`` (removing its arrays), None when there is none; ValueError if broken."""
    present = [name for name in VOCAB_ARRAYS if name in arrays]
    if not present:
        return None
    if len(present) != len(VOCAB_ARRAYS):
        raise ValueError(f"vocabulary array {present[0]!r} without its partner")
    check_arrays({name: arrays[name] for name in VOCAB_ARRAYS}, VOCAB_DTYPES)
    return unpack_strings(arrays.pop("vocab_bytes"), arrays.pop("vocab_offsets"))


def _show(token: Any) -> str:
    """A short description of a token for messages: its repr (cut) and its type."""
    text = repr(token)
    return f"{text[:40] + '...' if len(text) > 40 else text} ({type(token).__name__})"


@nltk_base("nltk.tag.api", "TaggerI")
class Tagger(NLTKBase):
    """A POS tagger or chunker over tokens, raw text or corpora.

    It is an NLTK tagger (:class:`nltk.tag.api.TaggerI`, attached when NLTK is imported: see
    :mod:`egnlp.base.nltk_bases`): :meth:`tag`,
    :meth:`tag_sents`, and from NLTK ``accuracy(gold)``, ``confusion``,
    ``evaluate_per_tag`` on gold sentences of ``(word, tag)`` pairs.

    ``column`` is the label column the model predicts: ``"pos"`` (POSTAG,
    CoNLL-U XPOS), ``"upos"`` (CPOSTAG, CoNLL-U UPOS), ``"feats"`` (FEATS),
    ``"morph"`` (the joint tag ``UPOS#XPOS#FEATS``, :mod:`egnlp.corpora.morphology`,
    written back to the three columns) or ``"chunk"`` (default: ``"chunk"``
    when the model reads POS tags).
    ``vocabulary`` is the set of word forms seen in training (kept sorted;
    None when unknown), used to score accuracy on unknown words.
    """

    def __init__(self, model: SequenceModel, column: str | None = None, info: dict[str, Any] | None = None,
                 vocabulary: "Sequence[str] | set[str] | frozenset[str] | None" = None):
        column = column or ("chunk" if model.use_pos else "pos")
        if column not in LABEL_COLUMNS:
            raise ValueError(f"column must be one of {', '.join(LABEL_COLUMNS)}, not {column!r}")
        self.model = model
        self.column = column
        self.info = dict(info or {})
        self.vocabulary: list[str] | None = sorted(set(vocabulary)) if vocabulary is not None else None

    @property
    def kind(self) -> str:
        return self.model.kind

    @property
    def labels(self) -> list[str]:
        return list(self.model.labels)

    @property
    def use_pos(self) -> bool:
        return self.model.use_pos

    @property
    def input_column(self) -> str | None:
        """The tag column this tagger reads besides the words: ``upos`` for a FEATS or joint tagger trained
        with UPOS input (``--reads-upos``), ``pos`` for a chunker, None for a tagger of words only."""
        if not self.use_pos:
            return None
        return "upos" if self.column in ("feats", "morph") else "pos"

    def __repr__(self) -> str:
        return f"Tagger(kind={self.kind!r}, column={self.column!r}, labels={len(self.labels)})"

    # -- tagging -------------------------------------------------------------

    def _pos_for(self, tokens_list: list[list[str]], pos_list, pos_tagger: "Tagger | None"):
        if not self.use_pos:
            return None
        if pos_list is not None:
            return pos_list
        if pos_tagger is None:
            raise ValueError("this chunker reads POS tags: pass pos=... or pos_tagger=<a POS Tagger>")
        if pos_tagger.column != self.input_column or pos_tagger.use_pos:
            raise ValueError(f"pos_tagger must be a POS tagger (column {self.input_column!r}, reading words only)")
        return pos_tagger.predict(tokens_list)

    @overload
    def predict(self, tokens_list: Sequence[Sequence[str]], pos_list: Sequence[Sequence[str]] | None = None,
                *, pos_tagger: "Tagger | None" = None, jobs: int | None = 1, confidence: Literal[False] = False
                ) -> list[list[str]]: ...

    @overload
    def predict(self, tokens_list: Sequence[Sequence[str]], pos_list: Sequence[Sequence[str]] | None = None,
                *, pos_tagger: "Tagger | None" = None, jobs: int | None = 1, confidence: Literal[True]
                ) -> tuple[list[list[str]], list[list[float]]]: ...

    def predict(self, tokens_list: Sequence[Sequence[str]], pos_list: Sequence[Sequence[str]] | None = None,
                *, pos_tagger: "Tagger | None" = None, jobs: int | None = 1, confidence: bool = False):
        """Labels of many tokenised sentences (empty sentences give empty lists), tagged by ``jobs``
        processes (None: every core; the same labels for any number).

        With ``confidence``, (labels, probabilities): the probability of each predicted label, p(y_t = label
        | sentence) of :meth:`marginals` (the label is the model's best sequence's, Viterbi's or the
        beam's, which need not be the label of highest marginal).
        """
        if confidence:
            self._check_marginals("predict_marginals")
        tokens_list = [list(t) for t in tokens_list]
        pos_list = self._pos_for(tokens_list, pos_list, pos_tagger)
        keep = [s for s, t in enumerate(tokens_list) if t]
        out: list[list[str]] = [[] for _ in tokens_list]
        probs: list[list[float]] = [[] for _ in tokens_list]
        if keep:
            pos_kept = [list(pos_list[s]) for s in keep] if pos_list is not None else None
            items = [(tokens_list[s], pos_kept[k] if pos_kept is not None else None) for k, s in enumerate(keep)]
            for s, result in zip(keep, map_blocks(_confident_block if confidence else _predict_block, self.model,
                                                  items, jobs)):
                if confidence:
                    out[s], probs[s] = result
                else:
                    out[s] = list(result)
        return (out, probs) if confidence else out

    def tag_tokens(self, tokens: Sequence[str], pos: Sequence[str] | None = None, *,
                   pos_tagger: "Tagger | None" = None) -> list[str]:
        """The labels of one tokenised sentence."""
        return self.predict([tokens], [pos] if pos is not None else None, pos_tagger=pos_tagger)[0]

    def tag_sentences(self, text: str, *, pos_tagger: "Tagger | None" = None,
                      language: str = "english") -> list[list[tuple[str, str]]]:
        """Split raw ``text`` into sentences and tokens (:mod:`egnlp.tagger.text`; ``language``: a Punkt
        language name or code) and tag each sentence."""
        tokens_list = self._text_tokens(text, language)
        labels = self.predict(tokens_list, pos_tagger=pos_tagger)
        return [list(zip(toks, labs)) for toks, labs in zip(tokens_list, labels)]

    def _text_tokens(self, text: str, language: str) -> list[list[str]]:
        """The sentences and tokens of raw text, knowing the abbreviations of the training vocabulary."""
        from egnlp.tagger.text import sentences_and_tokens, vocabulary_abbreviations  # NLTK: only when text comes

        return sentences_and_tokens(text, language, vocabulary_abbreviations(self.vocabulary))

    # -- NLTK's TaggerI: tag, tag_sents (accuracy, confusion, evaluate_per_tag come with TaggerI) --------

    def tag(self, tokens: "str | Sequence[Any]", *, pos_tagger: "Tagger | None" = None,
            language: str = "english") -> list[tuple[Any, str]]:
        """(token, tag) pairs of one sentence, as NLTK's :meth:`nltk.tag.api.TaggerI.tag`.

        ``tokens`` is a list of word strings, or raw text (a ``str``), which is
        split into sentences and tokenised (:mod:`egnlp.tagger.text`), all its
        sentences tagged and concatenated in order (``language``: a Punkt
        language name or code, for the sentences and tokens).  A chunker reads POS tags:
        give it ``(word, POS)`` pairs, which come back as ``((word, POS),
        chunk)`` (NLTK's convention for chunk taggers), or words with
        ``pos_tagger``.

        Raises:
            ValueError: tokens that are not strings (or, for a chunker,
                ``(word, POS)`` pairs), naming the first one.
        """
        return self.tag_sents([tokens], pos_tagger=pos_tagger, language=language)[0]

    def tag_sents(self, sentences: "Iterable[str | Sequence[Any]]", *, pos_tagger: "Tagger | None" = None,
                  language: str = "english") -> list[list[tuple[Any, str]]]:
        """:meth:`tag` of every sentence (any iterable of token lists or strings), in one batch."""
        items: list[list[list[Any]]] = []  # per sentence: its pieces (text gives one per sentence it holds)
        for number, sentence in enumerate(sentences, start=1):
            if isinstance(sentence, str):
                items.append(self._text_tokens(sentence, language))
            elif isinstance(sentence, Iterable) and not isinstance(sentence, (bytes, Mapping)):
                items.append([list(sentence)])
            else:
                raise ValueError(f"sentence {number} is {_show(sentence)}; a tagger tags a list of tokens "
                                 f"or a string of text")
        words_list, pos_list = self._token_columns(items, pos_tagger)
        labels = iter(self.predict(words_list, pos_list, pos_tagger=pos_tagger))
        return [[pair for piece in pieces for pair in zip(piece, next(labels))] for pieces in items]

    def _token_columns(self, items: list[list[list[Any]]], pos_tagger: "Tagger | None"):
        """(words, POS or None) of every piece of every sentence, after checking each token (see :meth:`tag`)."""
        pieces = [piece for pieces in items for piece in pieces]
        paired = self.use_pos and any(piece and not isinstance(piece[0], str) for piece in pieces)
        for number, piece in ((n, piece) for n, pieces in enumerate(items, start=1) for piece in pieces):
            for i, token in enumerate(piece):
                if paired:
                    ok = isinstance(token, (tuple, list)) and len(token) == 2 and all(isinstance(x, str) for x in token)
                else:
                    ok = isinstance(token, str)
                if ok:
                    continue
                where = f"token {i + 1}" + (f" of sentence {number}" if len(items) > 1 else "")
                if paired:
                    want = "(word, POS) pairs (this chunker reads POS tags)"
                else:
                    want = "words (strings)" + (" or of (word, POS) pairs" if self.use_pos else "")
                hint = "; to tag several sentences use tag_sents" if isinstance(token, list) and not paired else ""
                raise ValueError(f"{where} is {_show(token)}; a tagger takes a string of text or a list of "
                                 f"{want}{hint}")
        if paired:
            return [[w for w, _ in piece] for piece in pieces], [[p for _, p in piece] for piece in pieces]
        if self.use_pos and pos_tagger is None and any(pieces):
            raise ValueError("this chunker reads POS tags: give it (word, POS) pairs, or words with "
                             "pos_tagger=<a POS Tagger>")
        return pieces, None

    def marginals(self, tokens: Sequence[str], pos: Sequence[str] | None = None, *,
                  as_array: bool = False) -> list[dict[str, float]] | np.ndarray:
        """p(label | sentence) of every token under the model's distribution over label sequences.

        A CRF's come from forward-backward over its chain (:func:`~egnlp.tagger.chain_inference.forward_backward`).
        A maxent tagger's local distributions p(y_t | x, y_{t-2}, y_{t-1}) read the two previous tags, so its
        marginals come from a forward pass over pairs of tags, exact under the product of the local
        distributions (:meth:`~egnlp.tagger.maxent.MaxentModel.marginals_encoded`), not the beam's
        approximation of it.

        A list with one ``{label: probability}`` dict per token, or with
        ``as_array`` an (n, L) array whose columns follow :attr:`labels`.
        """
        self._check_marginals("marginals")
        if self.use_pos and pos is None:
            raise ValueError("this chunker reads POS tags: pass pos=...")
        if not tokens:
            probs = np.zeros((0, len(self.labels)))
        else:
            probs = np.asarray(self.model.marginals(list(tokens), list(pos) if pos is not None else None))
        if as_array:
            return probs
        labels = self.labels
        return [dict(zip(labels, map(float, row))) for row in probs]

    def _check_marginals(self, method: str) -> None:
        """ValueError unless the inner model has ``method`` (an inner model of the protocol may lack them)."""
        if not callable(getattr(self.model, method, None)):
            raise ValueError(f"this {self.kind} model gives no label marginals (its class has no {method})")

    @property
    def confidence_key(self) -> str:
        """The MISC key of the probability of this tagger's labels: ``XPosProb`` (column ``pos``), ``UPosProb``
        (``upos``), ``FeatsProb`` (``feats``), ``TagsProb`` (``morph``: the joint tag's) or ``ChunkProb``."""
        return CONFIDENCE_KEYS[self.column]

    def tag_corpus(self, sentences: Sequence[Sentence], *, jobs: int | None = 1,
                   confidence: bool = False) -> list[Sentence]:
        """Copies of ``sentences`` with the predicted column (POS, UPOS, FEATS, the three columns of a joint
        tag, or chunks read from their POS), tagged by ``jobs`` processes (None: every core; the same result
        for any number).

        With ``confidence``, column 10 (CoNLL-U MISC) of every word also says the probability of its label
        (:meth:`predict`), under :attr:`confidence_key` (``XPosProb=0.9812``; other MISC entries kept, see
        :meth:`~egnlp.corpora.Sentence.with_misc`): for CoNLL-U sentences, CoNLL-X has no MISC column.
        """
        pos_list = [s.labels(self.input_column) for s in sentences] if self.input_column else None
        forms = [s.forms for s in sentences]
        if confidence:
            labels, probs = self.predict(forms, pos_list, jobs=jobs, confidence=True)
        else:
            labels = self.predict(forms, pos_list, jobs=jobs)
        tagged = [self._with_labels(s, lab) for s, lab in zip(sentences, labels)]
        if not confidence:
            return tagged
        return [s.with_misc(self.confidence_key, [probability_text(p) for p in ps]) for s, ps in zip(tagged, probs)]

    def _with_labels(self, sentence: Sentence, labels: list[str]) -> Sentence:
        """``sentence`` with ``labels`` in this tagger's column; a joint tag (``morph``) fills UPOS, XPOS
        and FEATS (:func:`~egnlp.corpora.morphology.split_morph`)."""
        if self.column == "morph":
            split = [split_morph(label) for label in labels]
            return sentence.with_tags(pos=[x for _, x, _ in split], upos=[u for u, _, _ in split],
                                      feats=[f for _, _, f in split])
        if self.column in ("pos", "upos", "feats"):
            return sentence.with_tags(**{self.column: labels})
        return sentence.with_tags(chunks=labels)

    # -- files ---------------------------------------------------------------

    def save(self, path: str | os.PathLike[str]) -> None:
        write_npz_atomic(path, *self.file_parts())

    def file_parts(self) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        """The arrays and metadata of the model file :meth:`save` writes (:meth:`from_file_parts` reads them)."""
        arrays, inner_meta = self.model.to_arrays()
        reserved = [name for name in ("meta", *VOCAB_ARRAYS) if name in arrays]
        if reserved:
            raise ValueError(f"an inner model may not name an array {reserved[0]!r}")
        if self.vocabulary is not None:
            arrays = {**arrays, **_vocab_to_arrays(self.vocabulary)}
        meta = {
            "kind": MODEL_KIND,
            "format_version": FORMAT_VERSION,
            "model": self.kind,
            "column": self.column,
            "inner": inner_meta,
            "info": self.info,
        }
        return arrays, meta

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> "Tagger":
        """Read a tagger file (see the module docstring).

        Raises:
            ModelError: any file that is not a tagger model of this format, or whose contents do not agree.
        """
        arrays, meta = read_npz(path, MODEL_KIND, FORMAT_VERSION)
        return cls.from_file_parts(arrays, meta, path)

    @classmethod
    def from_file_parts(cls, arrays: dict[str, np.ndarray], meta: dict[str, Any],
                        path: str | os.PathLike[str]) -> "Tagger":
        """The tagger of :meth:`file_parts`' arrays and metadata read from ``path`` (named in errors).

        Raises:
            ModelError: contents that do not agree.
        """
        try:
            kind, column, inner = meta["model"], meta["column"], meta["inner"]
        except KeyError as exc:
            raise ModelError(f"{path}: inconsistent model file (no {exc.args[0]!r} in its metadata)") from None
        if not isinstance(column, str) or column not in LABEL_COLUMNS:
            raise ModelError(f"{path}: unknown label column {repr(column)[:40]} (known: {', '.join(LABEL_COLUMNS)})")
        info = meta.get("info", {})
        if not isinstance(info, dict) or not isinstance(inner, dict):
            raise ModelError(f"{path}: inconsistent model file ('info' and 'inner' must be JSON objects)")
        try:
            inner_cls = _inner_class(kind if isinstance(kind, str) and len(kind) <= 40 else repr(kind)[:40])
        except ModelError as exc:
            raise ModelError(f"{path}: {exc}") from None
        try:
            vocabulary = _vocab_from_arrays(arrays)
            model = inner_cls.from_arrays(arrays, inner)
        except (KeyError, ValueError, TypeError, IndexError, OverflowError) as exc:
            detail = f"missing {exc.args[0]!r}" if isinstance(exc, KeyError) else str(exc)
            raise ModelError(f"{path}: inconsistent model file ({detail})") from None
        if getattr(model, "kind", None) != kind:
            raise ModelError(f"{path}: inconsistent model file (inner kind {kind!r} built a {model.kind!r} model)")
        return cls(model, column, info, vocabulary)
