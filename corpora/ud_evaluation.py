"""The CoNLL 2018 shared task metrics of a system's CoNLL-U output against gold sentences.

The metrics are those of the shared task (Zeman et al. 2018, "CoNLL 2018
Shared Task: Multilingual Parsing from Raw Text to Universal Dependencies",
Sec. 2-3; https://universaldependencies.org/conll18/evaluation.html), which
the official scorer (``udeval -v GOLD SYSTEM`` of udtools) prints. A system
may segment the text into sentences, tokens and words differently from the
gold file, so everything is scored after an alignment:

- Both files must hold the same text once whitespace is removed: the FORMs of
  their surface tokens (a multiword token's own FORM, not its words'), joined,
  without the characters of Unicode category Zs. Positions in that string are
  the character offsets used below.
- **Tokens** and **Sentences** compare spans of offsets: a system token (or
  sentence, from its first token's start to its last token's end) is correct
  when a gold one has the same span.
- **Words** are aligned in order. Outside multiword tokens, a system word is
  aligned to the gold word with the same span. Where a multiword token (gold
  or system) is involved, the words of a *multiword region* (below) are
  aligned along a longest common subsequence of their lower-cased FORMs.
  Words precision is aligned words / system words, recall aligned words / gold
  words.
- The other metrics count an aligned word as correct when its annotation
  matches: UPOS, XPOS, UFeats (the universal features only, see
  :data:`UNIVERSAL_FEATURES`), AllTags (UPOS, XPOS and UFeats), Lemmas (a gold
  lemma ``_`` accepts any lemma), UAS (the system head is aligned to the gold
  head, or both are the root), LAS (UAS and the universal relation, the DEPREL
  before any ``:``). CLAS, MLAS and BLEX score content words only (universal
  relation in :data:`CONTENT_RELATIONS`): CLAS as LAS; MLAS also asks for
  UPOS, UFeats and the same function-word children (relation in
  :data:`FUNCTION_RELATIONS`), each with its alignment, relation, UPOS and
  UFeats, in order; BLEX asks for LAS and the lemma.
  Precision divides by the system's words (its content words for CLAS, MLAS
  and BLEX), recall by the gold's; the aligned accuracy divides by the aligned
  words (aligned to a gold content word for CLAS, MLAS and BLEX).

A multiword region opens where the walk over both word sequences meets a
word of a multiword token, at that word (when the other side's current word
is a plain word starting before the token, it is passed over). The region
ends at its token's end and grows, taking the next word of whichever side
starts first (gold on a tie), while the next word of either side still lies
inside: a plain word ending at or before the region's end, or a word of a
multiword token starting before it, whose token's end then extends the
region. This is the official scorer's walk, so that the word alignments, not
only their number, agree with it.

The code is egnlp's own, written from that definition: udtools
(GPL-2.0-or-later) is not used at run time, only by the tests, which compare
every metric with its output. Like the official scorer,
:func:`conll18_scores` refuses texts that differ, and sentences whose heads
do not form one tree (a cycle, or more than one word attached to the root
unless ``multiple_roots`` is given). :func:`format_conll18_table` prints the
table of ``udeval -v`` (or of ``udeval -c``), without the enhanced-graph rows
ELAS and EULAS.
"""

from __future__ import annotations

import unicodedata
from bisect import bisect_right
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import NamedTuple

from egnlp.base.errors import InputError
from .sentence import BLANK, CPOS, DEPREL, FEATS, FORM, ID, LEMMA, POS, Sentence, find_cycle

# The metrics, in the order the official scorer prints them.
METRICS = ("Tokens", "Sentences", "Words", "UPOS", "XPOS", "UFeats", "AllTags", "Lemmas", "UAS", "LAS", "CLAS",
           "MLAS", "BLEX")

# The features of UD v2's universal inventory, the only ones UFeats (and AllTags, MLAS) compare.
UNIVERSAL_FEATURES = frozenset((
    "PronType", "NumType", "Poss", "Reflex", "Foreign", "Abbr", "Gender", "Animacy", "Number", "Case", "Definite",
    "Degree", "VerbForm", "Mood", "Tense", "Aspect", "Voice", "Evident", "Polarity", "Person", "Polite"))
# Universal relations of content words: the words CLAS, MLAS and BLEX score.
CONTENT_RELATIONS = frozenset((
    "nsubj", "obj", "iobj", "csubj", "ccomp", "xcomp", "obl", "vocative", "expl", "dislocated", "advcl", "advmod",
    "discourse", "nmod", "appos", "nummod", "acl", "amod", "conj", "fixed", "flat", "compound", "list", "parataxis",
    "orphan", "goeswith", "reparandum", "root", "dep"))
# Universal relations of function words: the children whose annotation MLAS checks with their head's.
# Neither set holds punct (nor any relation outside UD's inventory): such words count in neither.
FUNCTION_RELATIONS = frozenset(("aux", "cop", "mark", "det", "clf", "case", "cc"))

_ROOT = -1  # the head of a word attached to the root
_UNALIGNED = -2  # the gold word of a system word aligned to none
_SHOWN = 20  # characters shown on each side when the texts differ


@dataclass(frozen=True)
class Conll18Score:
    """One metric's counts, and its scores in percent.

    Attributes:
        correct: system tokens, sentences or words that are right.
        gold: gold ones (gold content words for CLAS, MLAS and BLEX).
        system: system ones (system content words for CLAS, MLAS and BLEX).
        aligned: the aligned words the metric looked at (aligned to a gold content
            word for CLAS, MLAS and BLEX); None for Tokens and Sentences.
        annotation: whether the metric scores the annotation of aligned words,
            so that it has an aligned accuracy (not Tokens, Sentences, Words).
    """

    correct: int
    gold: int
    system: int
    aligned: int | None = None
    annotation: bool = False

    # Each score is 100 * (a / b), in the official scorer's order of operations, so that both print the same digits.
    @property
    def precision(self) -> float:
        """Correct / system, in percent (0 without system items)."""
        return 100 * (self.correct / self.system) if self.system else 0.0

    @property
    def recall(self) -> float:
        """Correct / gold, in percent (0 without gold items)."""
        return 100 * (self.correct / self.gold) if self.gold else 0.0

    @property
    def f1(self) -> float:
        """The harmonic mean of precision and recall, 2 correct / (gold + system), in percent."""
        total = self.gold + self.system
        return 100 * (2 * self.correct / total) if total else 0.0

    @property
    def aligned_accuracy(self) -> float | None:
        """Correct / aligned, in percent (0 without aligned words); None for Tokens, Sentences and Words."""
        if not self.annotation:
            return None
        return 100 * (self.correct / self.aligned) if self.aligned else 0.0

    def as_dict(self) -> dict[str, float | int | None]:
        """The scores and counts as a plain dict (for JSON)."""
        return {"precision": self.precision, "recall": self.recall, "f1": self.f1,
                "aligned_accuracy": self.aligned_accuracy, "correct": self.correct, "gold": self.gold,
                "system": self.system, "aligned": self.aligned}


class _Word(NamedTuple):
    """A syntactic word as the metrics see it.

    ``start``, ``end``: the character span of its surface token (the whole
    multiword token for a word inside one); ``head``: the index of its head among
    all words of its side, or ``_ROOT``; ``feats``: its universal features,
    sorted; ``relation``: its universal relation.
    """

    start: int
    end: int
    in_multiword: bool
    form: str
    upos: str
    xpos: str
    feats: tuple[str, ...]
    lemma: str
    head: int
    relation: str


class _Side:
    """One file's sentences as the metrics see them: the text without whitespace, the spans of its
    tokens and sentences, its words, and each word's function-word children (indices, in order)."""

    def __init__(self, sentences: Sequence[Sentence], which: str, multiple_roots: bool) -> None:
        self.sentences = sentences
        pieces: list[str] = []
        self.tokens: list[tuple[int, int]] = []
        self.spans: list[tuple[int, int]] = []
        self.words: list[_Word] = []
        offset = 0
        for number, sentence in enumerate(sentences, start=1):
            _check_tree(sentence, which, number, multiple_roots)
            first_word = len(self.words)
            sentence_start = offset
            heads = iter(sentence.heads)  # checked by _check_tree
            for form, words, in_multiword in _surface_tokens(sentence):
                text = _without_spaces(form)
                if not text:
                    raise InputError(f"{sentence.source}:{sentence.line}: {which} sentence {number} has a token "
                                     f"whose FORM {form!r} is only whitespace")
                pieces.append(text)
                token = (offset, offset + len(text))
                offset = token[1]
                self.tokens.append(token)
                for row in words:
                    head = next(heads)
                    self.words.append(_Word(
                        token[0], token[1], in_multiword, row[FORM] if in_multiword else text, row[CPOS], row[POS],
                        _universal_features(row[FEATS]), row[LEMMA], first_word + head - 1 if head else _ROOT,
                        row[DEPREL].split(":", 1)[0]))
            self.spans.append((sentence_start, offset))
        self.text = "".join(pieces)
        self.children: dict[int, list[int]] = {}  # the words that have function-word children
        for index, word in enumerate(self.words):
            if word.head != _ROOT and word.relation in FUNCTION_RELATIONS:
                self.children.setdefault(word.head, []).append(index)

    def sentence_at(self, position: int) -> int:
        """The 0-based index of the sentence holding the character at ``position`` (the last one at the end)."""
        return max(bisect_right(self.spans, (position, len(self.text) + 1)) - 1, 0)


def conll18_scores(gold_sentences: Sequence[Sentence], system_sentences: Sequence[Sentence], *,
                   multiple_roots: bool = False) -> dict[str, Conll18Score]:
    """The CoNLL 2018 shared task metrics of ``system_sentences`` against ``gold_sentences`` (see the
    module docstring for their definition).

    Args:
        gold_sentences: the gold file's sentences, e.g. from :func:`egnlp.corpora.read_conll`.
        system_sentences: the system's sentences of the same text, segmented as the system did.
        multiple_roots: score sentences with more than one word attached to the root (as ``udeval
            --multiple-roots-okay`` does) instead of refusing them.

    Returns:
        One :class:`Conll18Score` per name of :data:`METRICS`, in that order.

    Raises:
        InputError: the texts differ once whitespace is removed (the message names the first differing
            character and the sentence holding it on each side), or a sentence has no heads, heads that
            do not form a tree, or (without ``multiple_roots``) several roots.
    """
    gold = _Side(gold_sentences, "gold", multiple_roots)
    system = _Side(system_sentences, "system", multiple_roots)
    if gold.text != system.text:
        raise _text_mismatch(gold, system)
    gold_of = _align_words(gold.words, system.words)
    scores = {
        "Tokens": _span_score(gold.tokens, system.tokens),
        "Sentences": _span_score(gold.spans, system.spans),
    }
    scores.update(_word_scores(gold, system, gold_of))
    return scores


def format_conll18_table(scores: Mapping[str, Conll18Score], *, counts: bool = False) -> str:
    """The table ``udeval -v`` prints (precision, recall, F1 and aligned accuracy, in percent with two
    decimals), or with ``counts`` the one ``udeval -c`` prints (correct, gold, system and aligned
    counts; as there, an aligned count of 0 is left blank but for Words): one line per metric of
    ``scores`` in :data:`METRICS` order, each line ending in a newline."""
    if counts:
        lines = ["Metric     | Correct   |      Gold | Predicted | Aligned"]
    else:
        lines = ["Metric     | Precision |    Recall |  F1 Score | AligndAcc"]
    lines.append("-----------+-----------+-----------+-----------+-----------")
    for name in METRICS:
        if name not in scores:
            continue
        score = scores[name]
        if counts:
            aligned = score.aligned if name == "Words" else score.aligned or ""  # as udeval -c prints them
            lines.append(f"{name:<11}|{score.correct:>10} |{score.gold:>10} |{score.system:>10} |{aligned:>10}")
        else:
            accuracy = score.aligned_accuracy
            lines.append(f"{name:<11}|{score.precision:10.2f} |{score.recall:10.2f} |{score.f1:10.2f} |"
                         + ("" if accuracy is None else f"{accuracy:10.2f}"))
    return "".join(line + "\n" for line in lines)


def _check_tree(sentence: Sentence, which: str, number: int, multiple_roots: bool) -> None:
    """Refuse a sentence the official scorer refuses: no words, no heads, heads that are not a tree,
    or (without ``multiple_roots``) several words attached to the root."""
    where = f"{sentence.source}:{sentence.line}: {which} sentence {number}"
    heads = sentence.heads
    if not sentence.rows:
        raise InputError(f"{where} has no words")
    if heads is None:
        raise InputError(f"{where} has no heads (HEAD '_'); the CoNLL 2018 metrics need a tree")
    if not all(0 <= head <= len(heads) for head in heads):
        raise InputError(f"{where} has a head outside 0..{len(heads)}")
    roots = heads.count(0)
    if roots == 0 or find_cycle(heads) is not None:
        raise InputError(f"{where} has heads that do not form a tree (a cycle)")
    if roots > 1 and not multiple_roots:
        raise InputError(f"{where} has {roots} words attached to the root (HEAD 0); the CoNLL 2018 scorer "
                         "takes one (multiple_roots=True scores them)")


def _surface_tokens(sentence: Sentence) -> list[tuple[str, Sequence[tuple[str, ...]], bool]]:
    """The sentence's surface tokens in order: (FORM, the rows of its words, whether it is a multiword
    token). Empty nodes are left out: they belong to the enhanced graph."""
    ranges: dict[int, tuple[int, str]] = {}  # first word (1-based) -> (last word, FORM) of each multiword token
    for _, line in sentence.aside:
        if line.startswith("#"):
            continue
        columns = line.split("\t", 2)
        first, dash, last = columns[ID].partition("-")
        if dash:
            ranges[int(first)] = (int(last), columns[FORM])
    rows = sentence.rows
    tokens = []
    word = 1
    while word <= len(rows):
        if word in ranges:
            last, form = ranges[word]
            tokens.append((form, rows[word - 1:last], True))
            word = last + 1
        else:
            tokens.append((rows[word - 1][FORM], rows[word - 1:word], False))
            word += 1
    return tokens


def _without_spaces(form: str) -> str:
    """``form`` without its characters of Unicode category Zs (the space separators)."""
    if form.isascii():
        return form.replace(" ", "")
    if form.isalnum():
        return form
    return "".join(char for char in form if unicodedata.category(char) != "Zs")


@lru_cache(maxsize=4096)
def _universal_features(feats: str) -> tuple[str, ...]:
    """The ``Name=Value`` items of a FEATS value whose name is universal, sorted (``_`` gives none)."""
    return tuple(sorted(item for item in feats.split("|") if item.split("=", 1)[0] in UNIVERSAL_FEATURES))


def _text_mismatch(gold: _Side, system: _Side) -> InputError:
    """The error for texts that differ: the first differing position (1-based, counted in the text
    without whitespace), the sentence holding it on each side, and what follows there."""
    position = next((i for i, (a, b) in enumerate(zip(gold.text, system.text)) if a != b),
                    min(len(gold.text), len(system.text)))

    def where(side: _Side, which: str) -> str:
        if not side.sentences:
            return f"the {which} file has no sentences"
        index = side.sentence_at(position)
        sentence = side.sentences[index]
        shown = side.text[position:position + _SHOWN]
        return (f"{which} sentence {index + 1} ({sentence.source}:{sentence.line}) has "
                + (repr(shown) if shown else "the end of the text"))

    source = system.sentences[0].source if system.sentences else "<system>"
    gold_source = gold.sentences[0].source if gold.sentences else "<gold>"
    return InputError(f"{source}: its text differs from {gold_source}'s at character {position + 1} (whitespace "
                      f"removed): {where(gold, 'gold')}, {where(system, 'system')}")


def _span_score(gold: Sequence[tuple[int, int]], system: Sequence[tuple[int, int]]) -> Conll18Score:
    """Tokens or Sentences: a system span is correct when the gold has the same one (spans of one side
    never share a start, so matching starts and comparing ends counts the common spans)."""
    return Conll18Score(len(set(gold) & set(system)), len(gold), len(system))


def _align_words(gold: Sequence[_Word], system: Sequence[_Word]) -> list[int]:
    """For each system word, the index of the gold word aligned to it, or ``_UNALIGNED``.

    Walks both sequences in order: plain words with the same span are aligned; of two plain words with
    different spans the one that starts first (gold on a tie) is passed over; a multiword token on either
    side opens a multiword region (module docstring), whose words are aligned by their forms.
    """
    gold_of = [_UNALIGNED] * len(system)
    g = s = 0
    while g < len(gold) and s < len(system):
        if gold[g].in_multiword or system[s].in_multiword:
            g_first, s_first, g, s = _multiword_region(gold, system, g, s)
            for g_index, s_index in _common_forms(gold[g_first:g], system[s_first:s]):
                gold_of[s_first + s_index] = g_first + g_index
        elif (gold[g].start, gold[g].end) == (system[s].start, system[s].end):
            gold_of[s] = g
            g += 1
            s += 1
        elif gold[g].start <= system[s].start:
            g += 1
        else:
            s += 1
    return gold_of


def _multiword_region(gold: Sequence[_Word], system: Sequence[_Word], g: int, s: int) -> tuple[int, int, int, int]:
    """The multiword region opened at gold word ``g`` and system word ``s``, one of them inside a
    multiword token: (first gold word, first system word, gold word after, system word after)."""
    if gold[g].in_multiword:
        end = gold[g].end
        if not system[s].in_multiword and system[s].start < gold[g].start:
            s += 1
    else:
        end = system[s].end
        if not gold[g].in_multiword and gold[g].start < system[s].start:
            g += 1
    g_first, s_first = g, s
    while _inside(gold, g, end) or _inside(system, s, end):
        if g < len(gold) and (s == len(system) or gold[g].start <= system[s].start):
            word = gold[g]
            g += 1
        else:
            word = system[s]
            s += 1
        if word.in_multiword:
            end = max(end, word.end)
    return g_first, s_first, g, s


def _inside(words: Sequence[_Word], index: int, end: int) -> bool:
    """Whether ``words[index]`` lies inside a multiword region ending at ``end``: a word of a multiword
    token that starts before the end, or a plain word that ends at or before it."""
    if index >= len(words):
        return False
    word = words[index]
    return word.start < end if word.in_multiword else word.end <= end


def _common_forms(gold: Sequence[_Word], system: Sequence[_Word]) -> list[tuple[int, int]]:
    """The (gold, system) index pairs of a longest common subsequence of the two words' lower-cased
    forms, read from the front: equal forms are paired, otherwise the gold word is passed over when the
    rest still has as long a common subsequence, else the system word."""
    a = [word.form.lower() for word in gold]
    b = [word.form.lower() for word in system]
    # longest[i][j]: the length of a longest common subsequence of a[i:] and b[j:].
    longest = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
    for i in range(len(a) - 1, -1, -1):
        for j in range(len(b) - 1, -1, -1):
            longest[i][j] = longest[i + 1][j + 1] + 1 if a[i] == b[j] else max(longest[i + 1][j], longest[i][j + 1])
    pairs = []
    i = j = 0
    while i < len(a) and j < len(b):
        if a[i] == b[j]:
            pairs.append((i, j))
            i += 1
            j += 1
        elif longest[i][j] == longest[i + 1][j]:
            i += 1
        else:
            j += 1
    return pairs


def _word_scores(gold: _Side, system: _Side, gold_of: Sequence[int]) -> dict[str, Conll18Score]:
    """Words and the metrics of aligned words' annotation, given each system word's gold word."""
    names = METRICS[3:]
    correct = dict.fromkeys(names, 0)
    aligned = content_aligned = 0

    def function_children(side: _Side, index: int, as_gold: Callable[[int], int]) -> list[tuple]:
        """The function-word children of a word: (their gold word, relation, UPOS, UFeats), in order."""
        return [(as_gold(child), side.words[child].relation, side.words[child].upos, side.words[child].feats)
                for child in side.children.get(index, ())]

    for s_index, g_index in enumerate(gold_of):
        if g_index == _UNALIGNED:
            continue
        g, s = gold.words[g_index], system.words[s_index]
        aligned += 1
        upos, xpos, feats = g.upos == s.upos, g.xpos == s.xpos, g.feats == s.feats
        lemma = g.lemma == BLANK or g.lemma == s.lemma
        attached = (s.head if s.head == _ROOT else gold_of[s.head]) == g.head
        labelled = attached and g.relation == s.relation
        correct["UPOS"] += upos
        correct["XPOS"] += xpos
        correct["UFeats"] += feats
        correct["AllTags"] += upos and xpos and feats
        correct["Lemmas"] += lemma
        correct["UAS"] += attached
        correct["LAS"] += labelled
        if g.relation in CONTENT_RELATIONS:
            content_aligned += 1
            correct["CLAS"] += labelled
            correct["BLEX"] += labelled and lemma
            correct["MLAS"] += (labelled and upos and feats and function_children(gold, g_index, lambda i: i)
                                == function_children(system, s_index, gold_of.__getitem__))
    n_gold, n_system = len(gold.words), len(system.words)
    gold_content = sum(word.relation in CONTENT_RELATIONS for word in gold.words)
    system_content = sum(word.relation in CONTENT_RELATIONS for word in system.words)
    scores = {"Words": Conll18Score(aligned, n_gold, n_system, aligned)}
    for name in names:
        if name in ("CLAS", "MLAS", "BLEX"):
            scores[name] = Conll18Score(correct[name], gold_content, system_content, content_aligned, True)
        else:
            scores[name] = Conll18Score(correct[name], n_gold, n_system, aligned, True)
    return scores
