"""Multiword tokens: surface tokens expanded into syntactic words, learned from a CoNLL-U file's ranges.

UD writes a contraction such as Portuguese ``do`` (= ``de`` + ``o``) as a
range line ``3-4  do`` followed by the words ``3  de`` and ``4  o``. A
:class:`MultiwordExpander` learns from a file's range lines how to split
tokens of new text, deciding each token in turn:

1. a form that the training file splits only sometimes (pt ``nos`` = ``em``
   + ``os`` or the pronoun; ``no``, ``das``, ``pelo``...) goes to a
   :class:`FormClassifier`: a maximum-entropy classifier over the form's
   outcomes seen in training, with the context predicates of
   :mod:`egnlp.features.multiword_predicates` (trained by coordinate
   descent, Huang et al. 2010, Algorithm 3, in
   :mod:`egnlp.multiword_training`);
2. any other form seen in training (lower-cased) takes its one outcome from
   the table: split as it was (``do`` -> ``de o``), or kept whole;
3. an unseen form is split by an :class:`AffixRules` rule when one is
   confident: a suffix rule rewrites the end of the form (clitics:
   ``-lhe`` -> ``""`` + ``lhe``, so ``disse-lhe`` -> ``disse lhe``; the
   mesoclisis ``-se-á`` -> ``á`` + ``se``), a prefix rule its start
   (contractions: ``nest`` -> ``em`` + ``est``, so ``nestas`` -> ``em
   estas``). A rule is keyed by the affix and counted over the training
   forms (types) that carry the affix; the longest affix seen on at least
   ``min_support`` forms decides, and splits when at least
   ``min_precision`` of those forms split this way. A prefix rule splits
   only where its last word is a training word (``dela`` -> ``de ela``,
   not ``nouveau`` -> ``em ouveau``). A hyphenated form that no affix rule
   splits may split at its last hyphen (:class:`HyphenRules`, keyed by the
   shape of the part after it: ``-lhe`` is ``xxx`` like ``-los``, ``-nos``);
4. otherwise the token stays one word.

The table and the classifier store lower-cased words; :func:`restore_case`
gives them the casing of the surface form (``Do`` -> ``De o``, ``DO`` -> ``DE
O``, ``além-Pirinéus`` -> ``além Pirinéus``). A rule keeps the form's own
characters for the part it does not rewrite.

:meth:`MultiwordExpander.expand` takes one sentence's tokens and returns the
words of each; :meth:`MultiwordExpander.sentence` builds the CoNLL-U
:class:`~egnlp.corpora.Sentence`: a range line ``a-b`` with the surface form
and the token's MISC (``SpaceAfter=No`` belongs there, UD says), then its
words, numbered from 1. A treebank without ranges (UD Dutch) learns an
expander that keeps every token whole.

Model file (:func:`egnlp.base.files.write_npz_atomic`, kind
:data:`MODEL_KIND`, version :data:`FORMAT_VERSION`): outcome strings (words
joined by TAB, the empty string for "keep"), the table, the classifier's
forms, candidates and (predicate, candidate) weights, the three rule tables
and the training words the prefix rules check, all as numeric arrays; thresholds and training information in the JSON
metadata.
"""

from __future__ import annotations

import os
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from egnlp.base.errors import InputError, ModelError
from egnlp.base.files import check_arrays, pack_strings, read_npz, unpack_strings, write_npz_atomic
from egnlp.corpora.sentence import BLANK, COL10, FORM, ID, MAX_WORDS, Sentence
from egnlp.features.multiword_predicates import TEMPLATE_VERSION, casing, context_predicates

MODEL_KIND = "egnlp-multiword"
FORMAT_VERSION = 1
KEEP = 0  # the outcome id of "one word, the token itself"
SEPARATOR = "\t"  # between the words of an outcome string (a CoNLL-U field holds no TAB)
SIDES = ("suffix", "prefix")

__all__ = ["AffixRules", "FORMAT_VERSION", "FormClassifier", "HyphenRules", "KEEP", "MODEL_KIND", "MultiwordExpander",
           "SurfaceToken", "classifier_events", "expansion_counts", "expansion_scores", "hyphen_shape",
           "restore_case", "surface_tokens"]


# --------------------------------------------------------------------------- tokens of a CoNLL-U sentence


class SurfaceToken(NamedTuple):
    """A surface token of a CoNLL-U sentence: its FORM, its MISC, and the FORMs of its words
    (one word, the token itself, outside a range)."""

    form: str
    misc: str
    words: tuple[str, ...]


def surface_tokens(sentence: Sentence) -> list[SurfaceToken]:
    """The surface tokens of ``sentence``: each range line ``a-b`` (kept aside by the reader) with words a..b,
    and each word outside a range. Empty nodes and comments are left out."""
    ranges: dict[int, tuple[int, str, str]] = {}  # first word (0-based) -> (last word, form, misc)
    for _, line in sentence.aside:
        if line.startswith("#"):
            continue
        columns = line.split("\t")
        first, dash, last = columns[ID].partition("-")
        if dash:
            ranges[int(first) - 1] = (int(last) - 1, columns[FORM], columns[COL10])
    out = []
    forms = sentence.forms
    i = 0
    while i < len(forms):
        if i in ranges:
            last, form, misc = ranges[i]
            out.append(SurfaceToken(form, misc, tuple(forms[i:last + 1])))
            i = last + 1
        else:
            out.append(SurfaceToken(forms[i], sentence.rows[i][COL10], (forms[i],)))
            i += 1
    return out


def expansion_counts(token_lists: Iterable[Sequence[SurfaceToken]], *, lower: bool = True) -> dict[str, Counter]:
    """For each lower-cased surface form (each form as it is, without ``lower``), how often each outcome
    was seen: the lower-cased words joined by :data:`SEPARATOR`, or ``""`` where the token is one word
    (kept whole)."""
    counts: dict[str, Counter] = defaultdict(Counter)
    for tokens in token_lists:
        for token in tokens:
            low = token.form.lower() if lower else token.form
            outcome = "" if len(token.words) == 1 else SEPARATOR.join(w.lower() for w in token.words)
            counts[low][outcome] += 1
    return dict(counts)


def expansion_scores(gold: Sequence[Sequence[SurfaceToken]],
                     predicted: Sequence[Sequence[Sequence[str]]]) -> dict[str, float]:
    """Word-level precision, recall and F1 (%) of predicted expansions of the gold surface tokens.

    ``predicted[s][k]`` holds the words of token k of sentence s. A predicted
    word is correct when the gold words of the same token hold it (as a
    multiset: ``de o`` against ``de a`` gets one of two). Also returns the
    counts and the token accuracy (tokens whose words are all right).
    """
    if len(gold) != len(predicted):
        raise InputError(f"{len(predicted)} predicted sentences for {len(gold)} gold ones")
    right = n_gold = n_pred = tokens = exact = 0
    for s, (tokens_gold, tokens_pred) in enumerate(zip(gold, predicted)):
        if len(tokens_gold) != len(tokens_pred):
            raise InputError(f"sentence {s + 1}: {len(tokens_pred)} predicted tokens for {len(tokens_gold)} gold ones")
        for token, words in zip(tokens_gold, tokens_pred):
            right += sum((Counter(token.words) & Counter(words)).values())
            n_gold += len(token.words)
            n_pred += len(words)
            tokens += 1
            exact += tuple(words) == token.words
    precision = 100.0 * right / max(n_pred, 1)
    recall = 100.0 * right / max(n_gold, 1)
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"precision": precision, "recall": recall, "f1": f1, "token_accuracy": 100.0 * exact / max(tokens, 1),
            "gold_words": n_gold, "predicted_words": n_pred, "correct_words": right, "tokens": tokens}


# --------------------------------------------------------------------------- casing


def restore_case(form: str, words: Sequence[str]) -> tuple[str, ...]:
    """``words`` (lower-cased) with the casing of the surface ``form``.

    A word found in the lower-cased form (the first word at its start, the
    others after the previous match) takes the form's characters there
    (``além-Pirinéus`` -> ``além Pirinéus``); any other word is upper-cased
    when the form is (``DO`` -> ``DE O``), and the first word gets a capital
    when the form starts with one (``Do`` -> ``De o``).
    """
    low = form.lower()
    shape = casing(form)
    aligned = len(low) == len(form)  # lower-casing kept every character in place
    out = []
    start = 0
    for k, word in enumerate(words):
        at = -1
        if aligned and word:
            at = (0 if low.startswith(word) else -1) if k == 0 else low.find(word, start)
        if at >= 0:
            out.append(form[at:at + len(word)])
            start = at + len(word)
        elif shape == "upper":
            out.append(word.upper())
        elif shape == "title" and k == 0:
            out.append(word[:1].upper() + word[1:])
        else:
            out.append(word)
    return tuple(out)


# --------------------------------------------------------------------------- rules for unseen forms


@dataclass(frozen=True)
class AffixRules:
    """Rewrite rules keyed by a suffix (``side="suffix"``) or a prefix (``"prefix"``) of a lower-cased form.

    ``keys[r]``: the affix; ``rewrites[r]``: its best rewrite, words joined
    by :data:`SEPARATOR` (a suffix rule's first part continues the kept stem,
    a prefix rule's last part goes before the kept tail); ``hits[r]``: the
    training forms (types, weighted by the share of their occurrences split
    so) that carry the affix and split by this rewrite; ``support[r]``: the
    training forms that carry the affix. With ``known`` (lower-cased training
    words), a rule only splits a form where the word holding the form's kept
    characters (a prefix rule's last word: ``dela`` -> ``de ela``) is known,
    and only such forms count in its support: ``nouveau`` does not become
    ``em ouveau``.
    """

    side: str
    keys: list[str]
    rewrites: list[str]
    hits: np.ndarray  # (R,) float64
    support: np.ndarray  # (R,) float64
    known: frozenset[str] | None = None

    def __post_init__(self) -> None:
        if self.side not in SIDES:
            raise ValueError(f"side must be one of {', '.join(SIDES)}, not {self.side!r}")
        n = len(self.keys)
        if len(self.rewrites) != n or self.hits.shape != (n,) or self.support.shape != (n,):
            raise ValueError(f"{n} rule keys with {len(self.rewrites)} rewrites, {self.hits.shape} hits and "
                             f"{self.support.shape} support")
        if len(set(self.keys)) != n or not all(self.keys):
            raise ValueError("rule keys must be distinct and non-empty")
        if n and (np.any(self.hits < 0) or np.any(self.hits > self.support)):
            raise ValueError("rule hits must lie between 0 and the rule's support")
        if any(len(r.split(SEPARATOR)) < 2 for r in self.rewrites):
            raise ValueError("a rule rewrite must make at least two words")
        object.__setattr__(self, "_index", {key: r for r, key in enumerate(self.keys)})

    @classmethod
    def learn(cls, side: str, counts: Mapping[str, Counter], known: Iterable[str] | None = None) -> "AffixRules":
        """The rules of every split in ``counts`` (:func:`expansion_counts`), with ``known`` words or None.

        A suffix rule of ``disse-lhe`` -> ``disse lhe`` is keyed by each suffix
        of the form that starts within the part shared with the first word
        (``-lhe``, ``e-lhe``, ..., ``isse-lhe``); a prefix rule of ``nestas``
        -> ``em estas`` by each prefix that ends within the part shared with
        the last word (``n``, ``ne``, ``nes``, ...). Only affixes shorter than
        the form are keys: they are for forms never seen.
        """
        if side not in SIDES:
            raise ValueError(f"side must be one of {', '.join(SIDES)}, not {side!r}")
        known = frozenset(known) if known is not None else None
        hits: dict[str, Counter] = defaultdict(Counter)
        for form, outcomes in counts.items():
            total = sum(outcomes.values())
            for outcome, n in outcomes.items():
                if outcome:
                    for key, rewrite in _affix_rewrites(side, form, outcome.split(SEPARATOR)):
                        hits[key][rewrite] += n / total
        if not hits:
            return cls(side, [], [], np.zeros(0), np.zeros(0), known)
        best = {key: max(found.items(), key=lambda item: (item[1], item[0])) for key, found in hits.items()}
        longest = max(map(len, hits))
        support: Counter = Counter()
        for form in counts:
            for length in range(1, min(longest, len(form) - 1) + 1):
                key = form[-length:] if side == "suffix" else form[:length]
                if key in best and (known is None or _kept_word(side, _rewrite(side, form, length, best[key][0]))
                                    in known):
                    support[key] += 1
        keys = sorted(hits)
        support_array = np.array([float(support[key]) for key in keys], dtype=np.float64)
        hits_array = np.minimum(np.array([best[key][1] for key in keys], dtype=np.float64), support_array)
        return cls(side, keys, [best[key][0] for key in keys], hits_array, support_array, known)

    def decide(self, form: str, min_support: float, min_precision: float) -> tuple[float, int, tuple[str, ...]] | None:
        """(precision, affix length, words) of the rule that splits ``form``, or None.

        The longest affix of the lower-cased form (shorter than the form) with
        at least ``min_support`` training forms decides: it splits when its
        best rewrite's share of them is at least ``min_precision``.
        """
        low = form.lower()
        if len(low) != len(form) or not self.keys:
            return None  # lower-casing changed the length (e.g. 'İ'): the affix would not line up
        for length in range(len(low) - 1, 0, -1):
            key = low[-length:] if self.side == "suffix" else low[:length]
            r = self._index.get(key)  # type: ignore[attr-defined]
            if r is None or self.support[r] < min_support:
                continue
            words = _rewrite(self.side, form, length, self.rewrites[r])
            if self.known is not None and _kept_word(self.side, words).lower() not in self.known:
                continue
            precision = float(self.hits[r] / self.support[r])
            if precision < min_precision:
                return None
            return precision, length, words
        return None

    def to_arrays(self) -> dict[str, np.ndarray]:
        """The arrays of the rules in a model file, named after the side (``suffix_key_bytes``, ...)."""
        prefix = self.side
        key_bytes, key_offsets = pack_strings(self.keys)
        rw_bytes, rw_offsets = pack_strings(self.rewrites)
        return {f"{prefix}_key_bytes": key_bytes, f"{prefix}_key_offsets": key_offsets,
                f"{prefix}_rewrite_bytes": rw_bytes, f"{prefix}_rewrite_offsets": rw_offsets,
                f"{prefix}_hits": self.hits, f"{prefix}_support": self.support}

    @classmethod
    def from_arrays(cls, side: str, arrays: Mapping[str, np.ndarray],
                    known: Iterable[str] | None = None) -> "AffixRules":
        """The rules of ``side`` in the arrays of a model file (:meth:`to_arrays`), with ``known`` words."""
        return cls(side, unpack_strings(arrays[f"{side}_key_bytes"], arrays[f"{side}_key_offsets"]),
                   unpack_strings(arrays[f"{side}_rewrite_bytes"], arrays[f"{side}_rewrite_offsets"]),
                   arrays[f"{side}_hits"], arrays[f"{side}_support"], None if known is None else frozenset(known))


def _rewrite(side: str, form: str, length: int, rewrite: str) -> tuple[str, ...]:
    """The words of ``form`` whose affix of ``length`` characters is rewritten by ``rewrite`` (parts joined
    by :data:`SEPARATOR`); the parts take the form's casing (:func:`restore_case`'s rules)."""
    parts = rewrite.split(SEPARATOR)
    shape = casing(form)
    if shape == "upper":
        parts = [p.upper() for p in parts]
    if side == "suffix":
        return (form[:len(form) - length] + parts[0], *parts[1:])
    if shape == "title":
        parts[0] = parts[0][:1].upper() + parts[0][1:]
    return (*parts[:-1], parts[-1] + form[length:])


def _kept_word(side: str, words: Sequence[str]) -> str:
    """The word of a rule's output that holds the form's kept characters."""
    return words[0] if side == "suffix" else words[-1]


def _affix_rewrites(side: str, form: str, words: list[str]) -> Iterable[tuple[str, str]]:
    """The (affix, rewrite) keys of one split of a lower-cased ``form`` into lower-cased ``words``."""
    if side == "suffix":
        shared = _common_prefix(form, words[0])
        for j in range(1, shared + 1):  # the affix form[j:] is shorter than the form
            if j < len(form):
                yield form[j:], SEPARATOR.join([words[0][j:], *words[1:]])
    else:
        shared = _common_prefix(form[::-1], words[-1][::-1])
        for t in range(1, shared + 1):  # the last t characters stay; the affix is form[:-t]
            if t < len(form):
                yield form[:-t], SEPARATOR.join([*words[:-1], words[-1][:len(words[-1]) - t]])


def _common_prefix(a: str, b: str) -> int:
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


def hyphen_shape(form: str) -> str | None:
    """The shape of what follows the hyphen of ``form``, one class per character: ``x`` lower-case,
    ``X`` capital, ``d`` digit, anything else itself (``disse-lhe`` -> ``xxx``, ``Guiné-Bissau`` ->
    ``Xxxxxx``, ``CD-ROM`` -> ``XXX``); None unless ``form`` has one hyphen with characters either side."""
    head, dash, tail = form.partition("-")
    if not dash or not head or not tail or "-" in tail:
        return None
    return "".join("x" if ch.islower() else "X" if ch.isupper() else "d" if ch.isdigit() else ch for ch in tail)


@dataclass(frozen=True)
class HyphenRules:
    """The back-off for hyphenated forms no affix rule decides: split at the hyphen into the part before
    and the part after (``proporcionar-lhe`` -> ``proporcionar lhe`` although no training form ends in
    ``-lhe``), keyed by the shape of the part after (:func:`hyphen_shape`).

    Only forms with one hyphen whose part after it is a ``known`` word (lower-cased) count and split:
    ``know-how`` stays whole. ``hits[r]``: the training forms (types, exact case, weighted by the
    share of their occurrences split so) of shape ``keys[r]`` that split at the hyphen; ``support[r]``:
    the training forms of that shape. A form splits when its shape has at least ``min_support`` forms,
    a share ``min_precision`` of which split.
    """

    keys: list[str]
    hits: np.ndarray  # (R,) float64
    support: np.ndarray  # (R,) float64
    known: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        n = len(self.keys)
        if self.hits.shape != (n,) or self.support.shape != (n,) or len(set(self.keys)) != n:
            raise ValueError(f"{n} hyphen shapes (distinct ones) with {self.hits.shape} hits and "
                             f"{self.support.shape} support")
        if n and (np.any(self.hits < 0) or np.any(self.hits > self.support)):
            raise ValueError("hyphen rule hits must lie between 0 and the rule's support")
        object.__setattr__(self, "_index", {key: r for r, key in enumerate(self.keys)})

    @classmethod
    def learn(cls, counts: Mapping[str, Counter], known: Iterable[str]) -> "HyphenRules":
        """The shapes of the hyphenated forms of ``counts`` (:func:`expansion_counts` without ``lower``)
        that split at the hyphen at least once, counted over the hyphenated forms whose part after the
        hyphen is ``known``."""
        known = frozenset(known)
        hits: Counter = Counter()
        support: Counter = Counter()
        for form, outcomes in counts.items():
            shape = hyphen_shape(form)
            head, _, tail = form.lower().partition("-")
            if shape is None or tail not in known:
                continue
            support[shape] += 1
            hits[shape] += outcomes.get(head + SEPARATOR + tail, 0) / sum(outcomes.values())
        keys = sorted(shape for shape in hits if hits[shape] > 0)
        support_array = np.array([float(support[k]) for k in keys], dtype=np.float64)
        return cls(keys, np.minimum(np.array([hits[k] for k in keys], dtype=np.float64), support_array),
                   support_array, known)

    def decide(self, form: str, min_support: float, min_precision: float) -> tuple[str, str] | None:
        """The two words of ``form`` split at its hyphen, or None (see the class docstring)."""
        r = self._index.get(hyphen_shape(form))  # type: ignore[attr-defined]
        if r is None or self.support[r] < min_support or self.hits[r] < min_precision * self.support[r]:
            return None
        head, _, tail = form.partition("-")
        return (head, tail) if tail.lower() in self.known else None

    def to_arrays(self) -> dict[str, np.ndarray]:
        """The arrays of the rules in a model file (``hyphen_key_bytes``, ...; the known words are the
        model's ``known_*`` arrays)."""
        key_bytes, key_offsets = pack_strings(self.keys)
        return {"hyphen_key_bytes": key_bytes, "hyphen_key_offsets": key_offsets, "hyphen_hits": self.hits,
                "hyphen_support": self.support}

    @classmethod
    def from_arrays(cls, arrays: Mapping[str, np.ndarray], known: Iterable[str]) -> "HyphenRules":
        return cls(unpack_strings(arrays["hyphen_key_bytes"], arrays["hyphen_key_offsets"]), arrays["hyphen_hits"],
                   arrays["hyphen_support"], frozenset(known))


# --------------------------------------------------------------------------- the classifier


class ClassifierEvents(NamedTuple):
    """One event per training occurrence of an ambiguous form: predicate ids in CSR (``ev_ptr`` (N+1,),
    ``ev_pred``), gold candidate index ``gold`` (N,), and the predicate strings of the ids."""

    predicates: list[str]
    ev_ptr: np.ndarray
    ev_pred: np.ndarray
    gold: np.ndarray


def classifier_events(token_lists: Sequence[Sequence[SurfaceToken]],
                      candidates: Mapping[str, Sequence[str]]) -> ClassifierEvents:
    """The events of the tokens whose lower-cased form is a key of ``candidates`` (form -> its outcome
    strings, :func:`expansion_counts`); the gold label is the index of the token's outcome there."""
    index: dict[str, int] = {}
    ids: list[int] = []
    lengths: list[int] = []
    gold: list[int] = []
    for tokens in token_lists:
        forms = [t.form for t in tokens]
        for i, token in enumerate(tokens):
            low = token.form.lower()
            if low not in candidates:
                continue
            outcome = "" if len(token.words) == 1 else SEPARATOR.join(w.lower() for w in token.words)
            row = context_predicates(forms, i)
            for p in row:
                ids.append(index.setdefault(p, len(index)))
            lengths.append(len(row))
            gold.append(list(candidates[low]).index(outcome))
    ev_ptr = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=ev_ptr[1:])
    return ClassifierEvents(list(index), ev_ptr, np.array(ids, dtype=np.int64), np.array(gold, dtype=np.int64))


class FormClassifier:
    """A maxent classifier of the outcome of each ambiguous form, per occurrence.

    ``forms`` (F,): the lower-cased ambiguous forms; the candidates of form
    f are the outcome ids ``cand_outcome[cand_ptr[f]:cand_ptr[f+1]]`` (most
    frequent first). Features are (predicate, candidate index) pairs: the
    features of predicate p are ``feat_ptr[p]:feat_ptr[p+1]`` (``feat_ptr``
    (P+1,)), their candidate index ``feat_label`` and weight ``weights``.
    A candidate's score is the sum of the weights of its features whose
    predicates fire; the best-scoring candidate of the form wins (ties: the
    more frequent).
    """

    def __init__(self, forms: Sequence[str], cand_ptr: np.ndarray, cand_outcome: np.ndarray,
                 predicates: Sequence[str], feat_ptr: np.ndarray, feat_label: np.ndarray, weights: np.ndarray):
        self.forms = list(forms)
        self.cand_ptr = np.ascontiguousarray(cand_ptr, dtype=np.int64)
        self.cand_outcome = np.ascontiguousarray(cand_outcome, dtype=np.int64)
        self.predicates = list(predicates)
        self.feat_ptr = np.ascontiguousarray(feat_ptr, dtype=np.int64)
        self.feat_label = np.ascontiguousarray(feat_label, dtype=np.int64)
        self.weights = np.ascontiguousarray(weights, dtype=np.float64)
        F, P, n = len(self.forms), len(self.predicates), self.feat_label.shape[0]
        if self.cand_ptr.shape != (F + 1,) or self.cand_ptr[0] != 0 or self.cand_ptr[-1] != self.cand_outcome.size \
                or np.any(np.diff(self.cand_ptr) < 2):
            raise ValueError(f"cand_ptr must be a CSR pointer of at least two candidates for each of {F} forms")
        if self.feat_ptr.shape != (P + 1,) or self.feat_ptr[0] != 0 or self.feat_ptr[-1] != n \
                or np.any(np.diff(self.feat_ptr) < 0):
            raise ValueError(f"feat_ptr must be a CSR pointer over {n} features for {P} predicates")
        if self.weights.shape != (n,) or not np.all(np.isfinite(self.weights)):
            raise ValueError(f"{self.weights.shape} weights for {n} features, or weights that are not finite")
        most = int(np.diff(self.cand_ptr).max()) if F else 0
        if n and (self.feat_label.min() < 0 or self.feat_label.max() >= most):
            raise ValueError(f"feature labels must lie in [0, {most})")
        self._form_index = {f: k for k, f in enumerate(self.forms)}
        self._pred_index = {p: k for k, p in enumerate(self.predicates)}
        if len(self._form_index) != F or len(self._pred_index) != P:
            raise ValueError("repeated forms or predicates")

    @classmethod
    def empty(cls) -> "FormClassifier":
        return cls([], np.zeros(1, np.int64), np.zeros(0, np.int64), [], np.zeros(1, np.int64),
                   np.zeros(0, np.int64), np.zeros(0))

    def __contains__(self, low: str) -> bool:
        return low in self._form_index

    def scores(self, forms: Sequence[str], i: int) -> np.ndarray:
        """The score of each candidate of token ``i`` of ``forms`` (its lower-cased form is ambiguous)."""
        f = self._form_index[forms[i].lower()]
        out = np.zeros(self.cand_ptr[f + 1] - self.cand_ptr[f])
        for p in context_predicates(forms, i):
            k = self._pred_index.get(p)
            if k is not None:
                for t in range(self.feat_ptr[k], self.feat_ptr[k + 1]):
                    if self.feat_label[t] < out.size:
                        out[self.feat_label[t]] += self.weights[t]
        return out

    def choose(self, forms: Sequence[str], i: int) -> int:
        """The outcome id of token ``i`` of ``forms``."""
        f = self._form_index[forms[i].lower()]
        return int(self.cand_outcome[self.cand_ptr[f] + int(np.argmax(self.scores(forms, i)))])

    def to_arrays(self) -> dict[str, np.ndarray]:
        form_bytes, form_offsets = pack_strings(self.forms)
        pred_bytes, pred_offsets = pack_strings(self.predicates)
        return {"amb_form_bytes": form_bytes, "amb_form_offsets": form_offsets, "cand_ptr": self.cand_ptr,
                "cand_outcome": self.cand_outcome, "pred_bytes": pred_bytes, "pred_offsets": pred_offsets,
                "feat_ptr": self.feat_ptr, "feat_label": self.feat_label, "weights": self.weights}

    @classmethod
    def from_arrays(cls, arrays: Mapping[str, np.ndarray]) -> "FormClassifier":
        return cls(unpack_strings(arrays["amb_form_bytes"], arrays["amb_form_offsets"]), arrays["cand_ptr"],
                   arrays["cand_outcome"], unpack_strings(arrays["pred_bytes"], arrays["pred_offsets"]),
                   arrays["feat_ptr"], arrays["feat_label"], arrays["weights"])


# --------------------------------------------------------------------------- the expander


_STRINGS = ("outcome", "table_form", "known", "amb_form", "pred", "suffix_key", "suffix_rewrite", "prefix_key",
            "prefix_rewrite", "hyphen_key")
# The arrays of a model file: name -> (dtype, number of dimensions).
ARRAYS = {**{f"{name}_bytes": ("|u1", 1) for name in _STRINGS}, **{f"{name}_offsets": ("<i8", 1) for name in _STRINGS},
          "table_outcome": ("<i8", 1), "cand_ptr": ("<i8", 1), "cand_outcome": ("<i8", 1), "feat_ptr": ("<i8", 1),
          "feat_label": ("<i8", 1), "weights": ("<f8", 1), "suffix_hits": ("<f8", 1), "suffix_support": ("<f8", 1),
          "prefix_hits": ("<f8", 1), "prefix_support": ("<f8", 1), "hyphen_hits": ("<f8", 1),
          "hyphen_support": ("<f8", 1)}


class MultiwordExpander:
    """Splits surface tokens into syntactic words (see the module docstring).

    ``outcomes``: outcome strings, id :data:`KEEP` (``""``) first; ``table``:
    lower-cased form -> outcome id, for every unambiguous training form;
    ``classifier``: the ambiguous forms; ``rules``: the suffix and prefix
    rules for unseen forms, used with ``min_support`` and ``min_precision``.
    Train one with :func:`egnlp.multiword_training.train_multiword`.
    """

    def __init__(self, outcomes: Sequence[str], table: Mapping[str, int], classifier: FormClassifier,
                 suffix_rules: AffixRules, prefix_rules: AffixRules, hyphen_rules: HyphenRules | None = None, *,
                 min_support: float = 2.0,
                 min_precision: float = 0.9, info: dict[str, Any] | None = None):
        self.outcomes = list(outcomes)
        if not self.outcomes or self.outcomes[KEEP] != "" or len(set(self.outcomes)) != len(self.outcomes):
            raise ValueError("outcomes must start with the empty outcome (keep) and hold no repeats")
        if any(o and (len(o.split(SEPARATOR)) < 2 or not all(o.split(SEPARATOR))) for o in self.outcomes[1:]):
            raise ValueError("an outcome must be two or more non-empty words")
        self.table = dict(table)
        if any(not 0 <= k < len(self.outcomes) for k in self.table.values()) \
                or np.any(classifier.cand_outcome >= len(self.outcomes)) or np.any(classifier.cand_outcome < 0):
            raise ValueError(f"outcome ids must lie in [0, {len(self.outcomes)})")
        if suffix_rules.side != "suffix" or prefix_rules.side != "prefix":
            raise ValueError("suffix_rules and prefix_rules must be the rules of their side")
        if not (min_support >= 1 and 0 < min_precision <= 1):
            raise ValueError(f"need min_support >= 1 and 0 < min_precision <= 1, not {min_support}, {min_precision}")
        self.classifier = classifier
        self.suffix_rules = suffix_rules
        self.prefix_rules = prefix_rules
        self.hyphen_rules = hyphen_rules if hyphen_rules is not None else HyphenRules([], np.zeros(0), np.zeros(0))
        self.min_support = float(min_support)
        self.min_precision = float(min_precision)
        self.info = dict(info or {})
        self._words = [tuple(o.split(SEPARATOR)) if o else () for o in self.outcomes]

    @property
    def splits_anything(self) -> bool:
        """Whether any token can be split: False for a model trained without multiword tokens."""
        return len(self.outcomes) > 1 or any(rules.keys for rules in (self.suffix_rules, self.prefix_rules,
                                                                      self.hyphen_rules))

    # -- expanding

    def expand(self, tokens: Sequence[str]) -> list[tuple[str, ...]]:
        """The words of each token of one sentence (a 1-tuple, the token itself, when it is not split).

        Raises:
            InputError: a token that is not a non-empty string without tabs or line breaks.
        """
        tokens = _checked_tokens(tokens)
        return [self._token_words(tokens, i) for i in range(len(tokens))]

    def _token_words(self, tokens: list[str], i: int) -> tuple[str, ...]:
        form = tokens[i]
        low = form.lower()
        if low in self.classifier:
            outcome = self.classifier.choose(tokens, i)
        else:
            outcome = self.table.get(low, -1)
        if outcome >= 0:
            return restore_case(form, self._words[outcome]) if outcome != KEEP else (form,)
        best = None
        for rules in (self.suffix_rules, self.prefix_rules):
            decided = rules.decide(form, self.min_support, self.min_precision)
            if decided is not None and (best is None or decided[:2] > best[:2]):
                best = decided
        if best is not None:
            return best[2]
        return self.hyphen_rules.decide(form, self.min_support, self.min_precision) or (form,)

    def words_and_ranges(self, tokens: Sequence[str]) -> tuple[list[str], list[tuple[int, int, int]]]:
        """(the words of the sentence, one ``(token index, first word, last word)`` per split token, word
        numbers 1-based as in CoNLL-U IDs)."""
        words: list[str] = []
        ranges = []
        for k, token_words in enumerate(self.expand(tokens)):
            if len(token_words) > 1:
                ranges.append((k, len(words) + 1, len(words) + len(token_words)))
            words.extend(token_words)
        return words, ranges

    def sentence(self, tokens: Sequence[str], miscs: Sequence[str] | None = None,
                 comments: Sequence[str] = ()) -> Sentence:
        """A CoNLL-U sentence of the words of ``tokens``: a range line per split token with its surface form
        and its MISC (``miscs``, one per token, ``_`` without), the words numbered from 1 (MISC ``_`` on
        the words of a range, the token's on a word that is the whole token), other columns ``_``;
        ``comments`` (whole ``#`` lines) first.

        Raises:
            InputError: bad tokens, a MISC per token missing, or more than
                :data:`~egnlp.corpora.sentence.MAX_WORDS` words.
        """
        tokens = _checked_tokens(tokens)
        miscs = [BLANK] * len(tokens) if miscs is None else list(miscs)
        if len(miscs) != len(tokens):
            raise InputError(f"{len(miscs)} MISC fields for {len(tokens)} tokens")
        rows: list[tuple[str, ...]] = []
        aside: list[tuple[int, str]] = [(0, line) for line in comments]
        for form, misc, words in zip(tokens, miscs, self.expand(tokens)):
            if not misc or any(ch in misc for ch in "\t\n\r"):
                raise InputError(f"MISC {misc!r} of token {form!r} is empty or holds a tab or a line break")
            if len(words) == 1:
                rows.append((str(len(rows) + 1), words[0], *(BLANK,) * 7, misc))
                continue
            first = len(rows) + 1
            aside.append((len(rows), "\t".join((f"{first}-{first + len(words) - 1}", form, *(BLANK,) * 7, misc))))
            rows.extend((str(first + k), word, *(BLANK,) * 8) for k, word in enumerate(words))
        if len(rows) > MAX_WORDS:
            raise InputError(f"{len(tokens)} tokens make {len(rows)} words; egnlp takes at most {MAX_WORDS} "
                             "words per sentence, split it")
        return Sentence(tuple(rows), tuple(aside))

    def expand_sentence(self, sentence: Sentence) -> Sentence:
        """``sentence``'s surface tokens (range lines' forms and the words outside ranges, with their MISC)
        expanded anew, its comments kept: gold tokens to predicted words."""
        comments = [line for _, line in sentence.aside if line.startswith("#")]
        tokens = surface_tokens(sentence)
        return self.sentence([t.form for t in tokens], [t.misc for t in tokens], comments)

    # -- files

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the model file (see the module docstring), atomically."""
        write_npz_atomic(path, *self.file_parts())

    def file_parts(self) -> tuple[dict[str, np.ndarray], dict]:
        """The arrays and metadata of the model file :meth:`save` writes (:meth:`from_file_parts` reads them)."""
        forms = list(self.table)
        known = self.prefix_rules.known
        if known is not None and self.hyphen_rules.keys and self.hyphen_rules.known != known:
            raise ValueError("the prefix and hyphen rules of a model file check the same known words")
        words = known if known is not None else self.hyphen_rules.known
        known_bytes, known_offsets = pack_strings(sorted(words))
        outcome_bytes, outcome_offsets = pack_strings(self.outcomes)
        form_bytes, form_offsets = pack_strings(forms)
        arrays = {"outcome_bytes": outcome_bytes, "outcome_offsets": outcome_offsets, "table_form_bytes": form_bytes,
                  "table_form_offsets": form_offsets, "known_bytes": known_bytes, "known_offsets": known_offsets,
                  "table_outcome": np.array([self.table[f] for f in forms], dtype=np.int64),
                  **self.classifier.to_arrays(), **self.suffix_rules.to_arrays(), **self.prefix_rules.to_arrays(),
                  **self.hyphen_rules.to_arrays()}
        meta = {"kind": MODEL_KIND, "format_version": FORMAT_VERSION, "templates": TEMPLATE_VERSION,
                "min_support": self.min_support, "min_precision": self.min_precision,
                "prefix_known": known is not None, "info": self.info}
        return arrays, meta

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> "MultiwordExpander":
        """Read a model file.

        Raises:
            ModelError: a file that is not a multiword model of this format, or whose contents do not agree.
        """
        return cls.from_file_parts(*read_npz(path, MODEL_KIND, FORMAT_VERSION), path)

    @classmethod
    def from_file_parts(cls, arrays: dict[str, np.ndarray], meta: dict, path: str | os.PathLike[str]
                        ) -> "MultiwordExpander":
        """The expander of :meth:`file_parts`' arrays and metadata read from ``path`` (named in errors).

        Raises:
            ModelError: contents that do not agree.
        """
        if meta.get("templates") != TEMPLATE_VERSION:
            raise ModelError(f"{path}: multiword predicates of version {repr(meta.get('templates'))[:40]}, this "
                             f"egnlp has version {TEMPLATE_VERSION}; retrain the model")
        try:
            check_arrays(arrays, ARRAYS)
            min_support, min_precision, info = meta["min_support"], meta["min_precision"], meta["info"]
            prefix_known = meta["prefix_known"]
            if not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in (min_support, min_precision)) \
                    or not isinstance(info, dict) or not isinstance(prefix_known, bool):
                raise ValueError("thresholds must be numbers, prefix_known true or false and info a JSON object")
            words = unpack_strings(arrays["known_bytes"], arrays["known_offsets"])
            known = words if prefix_known else None
            outcomes = unpack_strings(arrays["outcome_bytes"], arrays["outcome_offsets"])
            forms = unpack_strings(arrays["table_form_bytes"], arrays["table_form_offsets"])
            ids = arrays["table_outcome"].tolist()
            if len(ids) != len(forms) or len(set(forms)) != len(forms):
                raise ValueError(f"{len(forms)} table forms (distinct: {len(set(forms))}) for {len(ids)} outcomes")
            return cls(outcomes, dict(zip(forms, ids)), FormClassifier.from_arrays(arrays),
                       AffixRules.from_arrays("suffix", arrays), AffixRules.from_arrays("prefix", arrays, known),
                       HyphenRules.from_arrays(arrays, words),
                       min_support=min_support, min_precision=min_precision, info=info)
        except KeyError as exc:
            raise ModelError(f"{path}: inconsistent model file (no {exc.args[0]!r} in its metadata)") from None
        except (ValueError, TypeError, IndexError, OverflowError) as exc:
            raise ModelError(f"{path}: inconsistent model file ({exc})") from None


def _checked_tokens(tokens: Sequence[str]) -> list[str]:
    if isinstance(tokens, str):
        raise InputError("expected a list of tokens, not one string")
    tokens = list(tokens)
    for k, token in enumerate(tokens):
        if not isinstance(token, str) or not token or any(ch in token for ch in "\t\n\r"):
            raise InputError(f"token {k + 1} {str(token)[:40]!r} is not a non-empty string without tabs or line breaks")
    return tokens
