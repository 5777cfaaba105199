"""Raw text -> sentences -> tokens, with the character offsets of every token in the text.

Sentences are split by NLTK's Punkt (``PunktSentenceTokenizer``, Kiss and
Strunk 2006) inside paragraphs (a blank line always ends a sentence). Its
parameters are the pretrained Punkt model of the language when NLTK's data
path has it (``tokenizers/punkt_tab/LANGUAGE``, installed by
``python -m nltk.downloader punkt_tab``); otherwise Punkt runs with the
built-in abbreviations and frequent sentence starters of the language
(English and Portuguese; none for the other Punkt languages), and an
:class:`~egnlp.base.errors.EgnlpWarning` says so once per language. Callers add
abbreviations of their own: :func:`vocabulary_abbreviations` takes them from
the word forms of a tagged corpus (a treebank keeps "Sr." or "U.S." whole
inside a sentence, and splits off a sentence-final period). A known
abbreviation ("p.m.", "U.S.", "e.g.") ends a sentence only when the next
word is a capitalised frequent sentence starter ("He", "The", "Depois");
a single capital letter ("J. Smith") is an initial. A break after ``?`` or
``!`` (and closing quotes or brackets) is undone when the next sentence
starts with a lower-case letter (``"Is it true?" she asked.``).

Words are split by NLTK's ``NLTKWordTokenizer`` (the improved Treebank
tokenizer behind ``nltk.word_tokenize``; the English contraction rules such
as "cannot" -> "can not" only for English). Each :class:`Token` keeps its
original characters (``form``), its offsets, the whitespace after it, and
the tokenizer's Penn Treebank form (``norm``: ``"`` becomes ``` `` ``` or
``''``), which is for features only. A sentence-final abbreviation keeps its
period ("etc." rather than "etc" and ".").

A sentence of more than :data:`~egnlp.corpora.sentence.MAX_WORDS` tokens is
cut into pieces of at most that many (after a token followed by whitespace
where the piece has one), since parsing takes memory in the square of the
length. Text holding a lone surrogate (a ``str`` that is not Unicode text,
e.g. bytes decoded with ``surrogateescape``) or a control character that a
CoNLL file cannot hold raises ValueError. A byte order mark (U+FEFF) that
begins the text is in no sentence or token; the offsets stay those of the text.
"""

from __future__ import annotations

import re
import warnings
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Iterable

from egnlp.base.errors import EgnlpWarning, SettingsError
from egnlp.base.files import FORBIDDEN_CHARACTERS
from egnlp.corpora.sentence import MAX_WORDS

if TYPE_CHECKING:  # NLTK loads when Punkt or the word tokenizer is first used (a trained tokenizer needs neither)
    from nltk.tokenize.punkt import PunktSentenceTokenizer

__all__ = ["LANGUAGES", "TextSentence", "Token", "check_text", "cut_pieces", "language_name", "paragraph_spans",
           "segment", "segment_lines", "sentence_splitter", "sentences_and_tokens", "split_sentences", "tokenize",
           "vocabulary_abbreviations"]

# The languages of NLTK's Punkt models, by name and by ISO 639-1 code.
LANGUAGES = {"cs": "czech", "da": "danish", "nl": "dutch", "en": "english", "et": "estonian", "fi": "finnish",
             "fr": "french", "de": "german", "el": "greek", "it": "italian", "ml": "malayalam",
             "no": "norwegian", "pl": "polish", "pt": "portuguese", "ru": "russian", "sl": "slovene",
             "es": "spanish", "sv": "swedish", "tr": "turkish"}

# Abbreviations as Punkt stores them: lower case, without the final period (internal periods kept).
_ABBREVIATIONS = {
    "english": """
        mr mrs ms dr prof sr jr st mt ft gen col lt sgt capt cmdr adm gov sen rep rev hon pres supt
        co corp inc ltd bros dept univ assn
        jan feb mar apr jun jul aug sep sept oct nov dec
        mon tue tues wed thu thurs fri
        vol pp fig figs ch sec ed eds est approx vs etc cf al
        u.s u.k u.n u.s.a e.g i.e a.m p.m n.y d.c l.a ph.d b.a m.a""",
    "portuguese": """
        sr sra srs sras srta dr dra drs dras prof profa profs eng arq av pç lg tel fax cx
        etc ex pág págs pp cap art arts núm nº vol ed obs cia ltda s.a jr sto sta gov dep sen pres min
        exa exmo exma v.exa vs e.g i.e a.c d.c séc
        jan fev abr jun jul ago out nov dez""",
}

# Capitalised words that often start a sentence: after an abbreviation they mean a sentence break.
_SENTENCE_STARTERS = {
    "english": """
        the a an this that these those there it he she they we i you his her their its our my
        but and or so yet however then thus also in on at for if when while as after before since""",
    "portuguese": """
        o os um uma uns umas este esta estes estas esse essa isso isto aquele aquela
        ele ela eles elas eu nós você vocês mas e ou porém contudo entretanto então depois
        também ainda já quando se como segundo para em no na nos nas com""",
}

_BYTE_ORDER_MARK = "\ufeff"  # a file's encoding signature, when it begins a text
_SURROGATE = re.compile(r"[\ud800-\udfff]")
_PARAGRAPH = re.compile(r"\n[^\S\n]*\n\s*")
_QUOTE = re.compile(r"\"|``|''")
_REOPEN = re.compile(r"[?!][\"'\u00bb\u201d\u2019)\]}]*$")  # a sentence ending in ? or ! (and closing marks)
_NONSPACE = re.compile(r"\S+")


@lru_cache(maxsize=2)
def _word_tokenizer(english: bool) -> Any:
    """NLTK's word tokenizer; for other languages than English without the English contraction rules
    ("cannot" -> "can not")."""
    from nltk.tokenize.destructive import NLTKWordTokenizer

    if english:
        return NLTKWordTokenizer()

    class Tokenizer(NLTKWordTokenizer):
        CONTRACTIONS2: list = []
        CONTRACTIONS3: list = []

    return Tokenizer()


@dataclass(frozen=True)
class Token:
    """One token of a text: ``text[start:end] == form``.

    ``norm`` is the tokenizer's Penn Treebank form (``` `` ``` or ``''`` for
    ``"``; else the form), for features only. ``space_after`` is the
    whitespace between the token and the next one, or None when the text ends
    after it.
    """

    start: int
    end: int
    form: str
    norm: str
    space_after: str | None


@dataclass(frozen=True)
class TextSentence:
    """One sentence of a text: ``text`` is ``original[start:end]`` (no whitespace at either end)."""

    start: int
    end: int
    text: str
    tokens: tuple[Token, ...]


def language_name(language: str) -> str:
    """The Punkt name of ``language`` (a Punkt name such as ``portuguese`` or its code ``pt``).

    Raises:
        SettingsError: a language Punkt has no model for, listing those it has.
    """
    name = str(language).strip().lower()
    name = LANGUAGES.get(name, name)
    if name not in LANGUAGES.values():
        raise SettingsError(f"unknown language {str(language)[:40]!r}; Punkt languages: "
                         + ", ".join(f"{n} ({c})" for c, n in sorted(LANGUAGES.items(), key=lambda kv: kv[1])))
    return name


def vocabulary_abbreviations(forms: Iterable[str] | None) -> frozenset[str]:
    """The abbreviations among the word forms of a tagged corpus, as Punkt stores them (``sr``, ``u.s``).

    A treebank splits the period off the word that ends a sentence, so a
    form that keeps its final period is an abbreviation: a word of at least
    two letters, or letters joined by periods ("J.M."), ending in a period.
    Single letters (initials) and numbers ("2.") are left to Punkt.
    """
    out = set()
    for form in forms or ():
        if len(form) < 3 or form[-1] != "." or not form[0].isalpha():
            continue
        body = form[:-1]
        if all(ch.isalpha() or ch == "." for ch in body) and sum(ch.isalpha() for ch in body) >= 2 \
                and ".." not in body:
            out.add(body.lower())
    return frozenset(out)


@lru_cache(maxsize=32)
def _splitter(name: str, extra: frozenset[str]) -> PunktSentenceTokenizer:
    from nltk.tokenize import punkt
    from nltk.tokenize.punkt import PunktParameters, PunktSentenceTokenizer

    try:
        if not hasattr(punkt, "PunktTokenizer"):  # NLTK 3.8.2 and later read the pickle-free models (punkt_tab)
            raise LookupError(name)
        splitter: PunktSentenceTokenizer = punkt.PunktTokenizer(name)  # the pretrained model, when installed
    except (LookupError, OSError, ValueError):
        rules = "built-in" if name in _ABBREVIATIONS else "no"
        warnings.warn(EgnlpWarning(f"NLTK's Punkt model for {name} is not on NLTK's data path: sentences are split "
                                   f"by Punkt with {rules} {name} abbreviations (install the model with: python -m "
                                   "nltk.downloader punkt_tab)"), stacklevel=4)
        params = PunktParameters()
        params.abbrev_types = set(_ABBREVIATIONS.get(name, "").split())
        params.sent_starters = set(_SENTENCE_STARTERS.get(name, "").split())
        splitter = PunktSentenceTokenizer(params)
    splitter._params.abbrev_types.update(extra)
    return splitter


def sentence_splitter(language: str = "english", abbreviations: Iterable[str] = ()) -> PunktSentenceTokenizer:
    """The Punkt sentence splitter of ``language`` (see the module docstring) knowing ``abbreviations``
    too (lower case, without the final period: ``sr``, ``u.s``)."""
    return _splitter(language_name(language), frozenset(a.lower().rstrip(".") for a in abbreviations if a))


def check_text(text: str) -> None:
    """Raise ValueError for text with a lone surrogate or a control character a CoNLL file cannot hold."""
    bad = _SURROGATE.search(text)
    if bad is not None:
        raise ValueError(f"text holds a lone surrogate U+{ord(bad.group()):04X} (character {bad.start() + 1}), "
                         "which is not Unicode text")
    for match in FORBIDDEN_CHARACTERS.finditer(text):
        if not match.group().isspace():
            raise ValueError(f"text holds the control character U+{ord(match.group()):04X} "
                             f"(character {match.start() + 1}), which a CoNLL file cannot hold")


def paragraph_spans(text: str) -> Iterable[tuple[int, int]]:
    """(start, end) of the paragraphs of ``text`` (pieces between blank lines); a byte order mark that
    begins the text (U+FEFF, a file's encoding signature) is in none."""
    begin = 1 if text.startswith(_BYTE_ORDER_MARK) else 0
    for match in _PARAGRAPH.finditer(text):
        yield begin, match.start()
        begin = match.end()
    yield begin, len(text)


def _sentence_spans(text: str, splitter: PunktSentenceTokenizer) -> list[tuple[int, int]]:
    spans: list[tuple[int, int]] = []
    for p_start, p_end in paragraph_spans(text):
        paragraph = text[p_start:p_end]
        if paragraph.isspace() or not paragraph:
            continue
        for start, end in splitter.span_tokenize(paragraph):
            start, end = p_start + start, p_start + end
            if spans and spans[-1][1] > p_start and text[start:start + 1].islower() \
                    and _REOPEN.search(text, spans[-1][0], spans[-1][1]):
                spans[-1] = (spans[-1][0], end)  # "Is it true?" she asked.
            else:
                spans.append((start, end))
    return spans


def _align(text: str, start: int, end: int, words: list[str]) -> list[tuple[int, int, str]]:
    """(start, end, Treebank form) of each tokenizer output in ``text[start:end]``. The tokenizer only
    inserts spaces and rewrites double quotes; should a word not be found, the rest of the piece is
    split at whitespace."""
    out: list[tuple[int, int, str]] = []
    pos = start
    for k, word in enumerate(words):
        while pos < end and text[pos].isspace():
            pos += 1
        if text.startswith(word, pos) and pos + len(word) <= end:
            out.append((pos, pos + len(word), word))
            pos += len(word)
            continue
        quote = _QUOTE.match(text, pos, end) if word in ("``", "''", '"') else None
        if quote is not None:
            out.append((pos, quote.end(), word))
            pos = quote.end()
            continue
        out.extend((m.start(), m.end(), m.group()) for m in _NONSPACE.finditer(text, pos, end))
        return out
    return out


def _tokens(text: str, start: int, end: int, name: str, abbreviations: set[str]) -> list[tuple[int, int, str]]:
    tokenizer = _word_tokenizer(name == "english")
    spans = _align(text, start, end, tokenizer.tokenize(text[start:end]))
    if len(spans) >= 2 and spans[-1][2] == "." and spans[-2][1] == spans[-1][0] \
            and spans[-2][2].lower() in abbreviations:
        spans[-2:] = [(spans[-2][0], spans[-1][1], text[spans[-2][0]:spans[-1][1]])]  # "etc." stays whole
    return spans


def cut_pieces(spans: list[tuple[int, int, str]]) -> list[list[tuple[int, int, str]]]:
    """``spans`` cut into runs of at most MAX_WORDS tokens, after a token followed by whitespace where the
    second half of a run has one."""
    out = []
    while len(spans) > MAX_WORDS:
        cut = MAX_WORDS
        for k in range(MAX_WORDS, MAX_WORDS // 2, -1):
            if spans[k][0] > spans[k - 1][1]:
                cut = k
                break
        out.append(spans[:cut])
        spans = spans[cut:]
    out.append(spans)
    return out


def segment(text: str, language: str = "english", abbreviations: Iterable[str] = ()) -> list[TextSentence]:
    """The sentences of ``text`` with their tokens and offsets (see the module docstring); sentences
    without tokens are dropped.

    Raises:
        ValueError: an unknown language; text with a lone surrogate or a control character.
    """
    splitter = sentence_splitter(language, abbreviations)
    name = language_name(language)
    check_text(text)
    known = splitter._params.abbrev_types
    return _sentences(text, [_tokens(text, start, end, name, known) for start, end in _sentence_spans(text, splitter)])


def segment_lines(text: str, language: str = "english", abbreviations: Iterable[str] = (), *,
                  tokenized: bool = False) -> list[TextSentence]:
    """:func:`segment` of text that holds one sentence per line (UDPipe's ``--input horizontal`` without
    ``tokenized``); with ``tokenized``, the tokens are the line's pieces between whitespace. Empty lines
    give no sentence.

    Raises:
        ValueError: as :func:`segment`.
    """
    name = language_name(language)
    check_text(text)
    splitter = None if tokenized else sentence_splitter(language, abbreviations)
    spans = []
    for line in re.finditer(r"[^\n]+", text):
        start, end = line.span()
        if splitter is None:
            spans.append([(m.start(), m.end(), m.group()) for m in _NONSPACE.finditer(text, start, end)])
        else:  # the word tokenizer splits a sentence's final stop only: a line's sentences one at a time
            spans.append([span for s_start, s_end in splitter.span_tokenize(text[start:end])
                          for span in _tokens(text, start + s_start, start + s_end, name,
                                              splitter._params.abbrev_types)])
    return _sentences(text, spans)


def _sentences(text: str, sentence_spans: list[list[tuple[int, int, str]]]) -> list[TextSentence]:
    """The TextSentences of each sentence's (start, end, Treebank form) token spans in ``text`` (long
    sentences cut into pieces, sentences without tokens dropped)."""
    runs = [run for spans in sentence_spans if spans for run in cut_pieces(spans)]
    # The whitespace after each token reaches to the next token, across sentences.
    flat = [span for run in runs for span in run]
    following = [text[flat[k][1]:flat[k + 1][0]] for k in range(len(flat) - 1)]
    if flat:
        following.append(text[flat[-1][1]:] or None)
    out, k = [], 0
    for run in runs:
        tokens = []
        for begin, finish, norm in run:
            form = text[begin:finish]
            tokens.append(Token(begin, finish, form, norm, following[k]))
            k += 1
        out.append(TextSentence(run[0][0], run[-1][1], text[run[0][0]:run[-1][1]], tuple(tokens)))
    return out


def split_sentences(text: str, language: str = "english", abbreviations: Iterable[str] = ()) -> list[str]:
    """The sentences of ``text`` in order, as their original characters (no whitespace at either end)."""
    return [s.text for s in segment(text, language, abbreviations)]


def tokenize(sentence: str, language: str = "english") -> list[str]:
    """Penn Treebank tokens of one sentence (``"`` as ``` `` ``` / ``''``; NLTK's word tokenizer)."""
    check_text(sentence)
    name = language_name(language)
    tokenizer = _word_tokenizer(name == "english")
    return [word for _, _, word in _align(sentence, 0, len(sentence), tokenizer.tokenize(sentence))]


def sentences_and_tokens(text: str, language: str = "english", abbreviations: Iterable[str] = ()) -> list[list[str]]:
    """Split ``text`` into sentences and each sentence into Penn Treebank tokens (their ``norm``)."""
    return [[t.norm for t in s.tokens] for s in segment(text, language, abbreviations)]
