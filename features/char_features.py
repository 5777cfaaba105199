"""The features of the tokenizer's chain: one position per non-whitespace character of a paragraph.

A tokenizer reads a paragraph as a chain of its non-whitespace characters
and labels each (:data:`LABELS`): ``I`` the token goes on after the
character, ``T`` a token ends with it, ``S`` a token and its sentence end
with it. Whitespace is no position: it is read by the features of the
characters around it, so a text without spaces between its words (Chinese,
Japanese, Thai) is the same problem with other evidence. The chain and its
parts are those of the CRF tagger (:mod:`egnlp.features.chain_features`):
node parts (position, label), one block of the 9 label pairs, start and
stop; :class:`CharFeaturizer` builds the same :class:`ChainFeatures` from
characters instead of words, so the tagging problem, the trainers and
Viterbi serve both.

Predicates
----------
Every predicate of a character is a 64-bit key: the hash (:func:`combine`)
of its template number and the integer atoms it reads, made by one kernel
(:func:`_position_keys`) over the code points of the paragraph. ``c[k]`` is
the lower-cased character at offset k from the position (every whitespace
character reads as one space; -1 before the paragraph, -2 after it), ``k[k]``
its class (:func:`char_class`: case, digit, letter, mark, the punctuation
that ends sentences and splits tokens as itself, the other punctuation
and symbols by Unicode category). The templates (:data:`TEMPLATES`):

- ``bias``;
- ``c[k]`` for k = -3..3, and the n-grams around the gap after the
  character: ``c[-2..-1]``, ``c[-1..0]``, ``c[0..1]``, ``c[1..2]``,
  ``c[-2..0]``, ``c[-1..1]``, ``c[0..2]``, ``c[1..3]``, ``c[-2..1]``,
  ``c[-1..2]``, ``c[-2..2]``;
- ``k[k]`` for k = -2..2, and ``k[-1..1]``, ``k[-2..2]``, ``k[-3..3]``;
- the whitespace-delimited chunk around the character (lower case): its
  part up to the character (``chunk<``, the last :data:`MAX_PIECE`
  characters), its part after it (``chunk>``, the first
  :data:`MAX_PIECE`), the whole chunk when at most 2 :data:`MAX_PIECE`
  long (``chunk``); ``word<``: the letters and digits that end at the
  character (or just before it, with the character itself), as in
  ``sr.`` of "Sr." or ``lhe`` of "disse-lhe";
- where whitespace follows: the next chunk (its first :data:`MAX_PIECE`
  characters, lower-cased: ``next``; as written: ``Next``, since "Estão"
  starts sentences where "estão" does not) and the class of its first
  character with the character (``k[next]+c[0]``: a period before a
  capital) and with the chunk (``k[next]+chunk``, when ``chunk`` is made);
  before the paragraph's first ``.``, ``!``, ``?`` or ``…``, the classes
  of the character and of the next one (``lead+k[0]+k[next]``: a headline
  ends without a stop, and comes first);
- in a run of one repeated character that is no letter or digit (``,,``,
  ``--``, ``...``), the character, the run's length and the character's
  place in it, both up to 3 (``run``).

Predicates are conjoined with the labels seen with them in training
(:class:`CharFeaturizer`), as the CRF tagger's are.
"""

from __future__ import annotations

import hashlib
import unicodedata
from dataclasses import dataclass
from typing import Sequence

import numpy as np
from numba import njit

from egnlp.features.chain_features import ChainFeatures, Encoded
from egnlp.features.hashing import combine

# The labels of a character: the token goes on (I), a token ends (T), a token and its sentence end (S).
LABELS = ("I", "T", "S")
INSIDE, TOKEN_END, SENTENCE_END = range(3)
MAX_PIECE = 10  # the characters a chunk or word predicate reads at most
TEMPLATES = ("bias", "c[-3]", "c[-2]", "c[-1]", "c[0]", "c[1]", "c[2]", "c[3]",
             "c[-2..-1]", "c[-1..0]", "c[0..1]", "c[1..2]", "c[-2..0]", "c[-1..1]", "c[0..2]", "c[1..3]",
             "c[-2..1]", "c[-1..2]", "c[-2..2]",
             "k[-2]", "k[-1]", "k[0]", "k[1]", "k[2]", "k[-1..1]", "k[-2..2]", "k[-3..3]",
             "chunk<", "chunk>", "chunk", "word<", "next", "Next", "k[next]+c[0]", "k[next]+chunk",
             "lead+k[0]+k[next]", "run")
N_TEMPLATES = len(TEMPLATES)
_SALT = np.uint64(0x746F6B656E697A65)  # "tokenize"
_SEEDS = np.array([combine(_SALT, k) for k in range(N_TEMPLATES)], dtype=np.uint64)

# The character classes (:func:`char_class`); a class's atom is its index here.
_OWN = ".,;:!?-'\"()[]/&%$@#*+=<>_~`"
CLASSES = ("space", "upper", "lower", "letter", "digit", "number", "mark", *_OWN, "dash", "open", "close", "quote",
           "punct", "currency", "symbol", "other")
_CLASS_INDEX = {name: k for k, name in enumerate(CLASSES)}
_CATEGORY_CLASS = {"Lu": "upper", "Lt": "upper", "Ll": "lower", "Nd": "digit", "Pd": "dash", "Ps": "open",
                   "Pe": "close", "Pi": "quote", "Pf": "quote", "Sc": "currency"}
_GROUP_CLASS = {"L": "letter", "N": "number", "M": "mark", "P": "punct", "S": "symbol"}
_PROBE = "Disse-lhe o Sr. Silva: «US$ 1.984,50 às 9h30!» Ja, zo'n 10 % — 東京に行った。\te-mail x@y.pt"


def char_class(ch: str) -> str:
    """The class of one character: ``space``, ``upper``, ``lower``, ``letter`` (other letters), ``digit``,
    ``number``, ``mark``, the ASCII punctuation of :data:`_OWN` as itself, else by Unicode category:
    ``dash``, ``open``, ``close``, ``quote``, ``punct``, ``currency``, ``symbol``, ``other``."""
    if ch.isspace():
        return "space"
    if ch in _OWN:
        return ch
    category = unicodedata.category(ch)
    return _CATEGORY_CLASS.get(category) or _GROUP_CLASS.get(category[0], "other")


def char_atoms(text: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """What the key kernel reads of ``text``, one entry per character: the code point, the lower-cased
    code point (whitespace as 32 in both), the class index, whether it is a letter or digit, whether it
    is whitespace."""
    codes = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32).astype(np.int64)
    distinct, inverse = np.unique(codes, return_inverse=True)
    chars = [chr(c) for c in distinct]
    raw = np.array([32 if ch.isspace() else ord(ch) for ch in chars], dtype=np.int64)
    lower = np.array([32 if ch.isspace() else ord(ch.lower()) if len(ch.lower()) == 1 else ord(ch) for ch in chars],
                     dtype=np.int64)
    classes = np.array([_CLASS_INDEX[char_class(ch)] for ch in chars], dtype=np.int64)
    alnum = np.array([ch.isalnum() for ch in chars], dtype=np.bool_)
    space = np.array([ch.isspace() for ch in chars], dtype=np.bool_)
    inverse = inverse.reshape(-1)
    return raw[inverse], lower[inverse], classes[inverse], alnum[inverse], space[inverse]


def nonspace_positions(text: str) -> np.ndarray:
    """The offsets of the non-whitespace characters of ``text``: the tokenizer's chain positions, (n,) int64."""
    return np.flatnonzero(~char_atoms(text)[4]) if text else np.zeros(0, dtype=np.int64)


@njit(cache=True, inline="always")
def _at(values, i):
    """values[i], or -1 before the paragraph and -2 after it."""
    if i < 0:
        return -1
    if i >= values.shape[0]:
        return -2
    return values[i]


@njit(cache=True, inline="always")
def _span(seed, values, lo, hi):
    """The key of values[lo:hi] read by the template of ``seed`` (the offsets past the ends read -1 / -2)."""
    h = seed
    for i in range(lo, hi):
        h = combine(h, _at(values, i))
    return h


@njit(cache=True)
def _position_keys(raw, low, cls, alnum, space, seeds, max_piece):
    """The predicate keys of every non-whitespace character of one paragraph (see the module docstring).

    ``raw``, ``low``, ``cls`` (n,) int64, ``alnum``, ``space`` (n,) bool: :func:`char_atoms`; ``seeds``
    (N_TEMPLATES,) uint64 the templates' seeds. Returns (positions (m,) int64, key_ptr (m + 1,) int64,
    keys uint64): the keys of position j are ``keys[key_ptr[j]:key_ptr[j + 1]]``.
    """
    n = low.shape[0]
    m = 0
    for i in range(n):
        if not space[i]:
            m += 1
    positions = np.empty(m, dtype=np.int64)
    keys = np.empty(m * seeds.shape[0], dtype=np.uint64)
    key_ptr = np.zeros(m + 1, dtype=np.int64)
    # chunk_start[i] / chunk_end[i]: the whitespace-delimited chunk of character i; word_start: its run of
    # letters and digits (i + 1 when i is neither)
    chunk_start = np.empty(n, dtype=np.int64)
    chunk_end = np.empty(n, dtype=np.int64)
    word_start = np.empty(n, dtype=np.int64)
    start = 0
    for i in range(n):
        if space[i]:
            start = i + 1
        chunk_start[i] = start
        if alnum[i]:
            word_start[i] = word_start[i - 1] if i > 0 and alnum[i - 1] else i
        else:
            word_start[i] = i + 1
    end = n
    for i in range(n - 1, -1, -1):
        if space[i]:
            end = i
        chunk_end[i] = end
    lead = n  # the first sentence-final stop of the paragraph
    for i in range(n):
        if raw[i] == 46 or raw[i] == 33 or raw[i] == 63 or raw[i] == 8230:  # . ! ? …
            lead = i
            break
    j = 0
    k = 0
    for p in range(n):
        if space[p]:
            continue
        positions[j] = p
        keys[k] = seeds[0]
        k += 1
        t = 1
        for o in range(-3, 4):  # c[-3] .. c[3]
            keys[k] = combine(seeds[t], _at(low, p + o))
            k += 1
            t += 1
        # the n-grams around the gap after p: (first offset, last offset), in TEMPLATES' order
        for a, b in ((-2, -1), (-1, 0), (0, 1), (1, 2), (-2, 0), (-1, 1), (0, 2), (1, 3), (-2, 1), (-1, 2), (-2, 2)):
            keys[k] = _span(seeds[t], low, p + a, p + b + 1)
            k += 1
            t += 1
        for o in range(-2, 3):  # k[-2] .. k[2]
            keys[k] = combine(seeds[t], _at(cls, p + o))
            k += 1
            t += 1
        for r in (1, 2, 3):  # k[-1..1], k[-2..2], k[-3..3]
            keys[k] = _span(seeds[t], cls, p - r, p + r + 1)
            k += 1
            t += 1
        cs, ce = chunk_start[p], chunk_end[p]
        lo = max(cs, p + 1 - max_piece)
        h = _span(seeds[t], low, lo, p + 1)  # chunk<
        keys[k] = combine(h, -3) if lo > cs else h
        k += 1
        t += 1
        hi = min(ce, p + 1 + max_piece)
        h = _span(seeds[t], low, p + 1, hi)  # chunk>
        keys[k] = combine(h, -3) if hi < ce else h
        k += 1
        t += 1
        whole = ce - cs <= 2 * max_piece
        if whole:  # chunk
            keys[k] = _span(seeds[t], low, cs, ce)
            k += 1
        t += 1
        w = word_start[p] if alnum[p] else (word_start[p - 1] if p > 0 else p)  # word<
        keys[k] = _span(seeds[t], low, max(w, p + 1 - max_piece), p + 1)
        k += 1
        t += 1
        if p + 1 < n and space[p + 1]:
            q = p + 1
            while q < n and space[q]:
                q += 1
            if q < n:  # next, Next, k[next]+c[0], k[next]+chunk
                keys[k] = _span(seeds[t], low, q, min(chunk_end[q], q + max_piece))
                k += 1
                keys[k] = _span(seeds[t + 1], raw, q, min(chunk_end[q], q + max_piece))
                k += 1
                keys[k] = combine(combine(seeds[t + 2], cls[q]), low[p])
                k += 1
                if whole:
                    keys[k] = combine(_span(seeds[t + 3], low, cs, ce), cls[q])
                    k += 1
                if p < lead:  # lead+k[0]+k[next]
                    keys[k] = combine(combine(seeds[t + 4], cls[p]), cls[q])
                    k += 1
        t += 5
        if not alnum[p] and (p > 0 and raw[p - 1] == raw[p] or p + 1 < n and raw[p + 1] == raw[p]):  # run
            a = p
            while a > 0 and raw[a - 1] == raw[p] and p - a < 3:
                a -= 1
            b = p + 1
            while b < n and raw[b] == raw[p] and b - a < 3:
                b += 1
            keys[k] = combine(combine(seeds[t], raw[p]), 4 * (b - a) + (p - a))
            k += 1
        t += 1
        j += 1
        key_ptr[j] = k
    return positions, key_ptr, keys[:k]


@dataclass
class CharKeys:
    """The predicate keys of the chain positions of some paragraphs.

    ``positions[d]``: the offsets of paragraph d's positions in its text; ``pos_ptr`` (n_texts + 1,):
    paragraph d has the positions ``pos_ptr[d]:pos_ptr[d + 1]`` of the flat numbering; position j the
    keys ``keys[key_ptr[j]:key_ptr[j + 1]]``.
    """

    positions: list[np.ndarray]
    pos_ptr: np.ndarray
    key_ptr: np.ndarray
    keys: np.ndarray


def char_keys(texts: Sequence[str]) -> CharKeys:
    """The :class:`CharKeys` of the paragraphs ``texts``."""
    positions, key_ptrs, keys = [], [np.zeros(1, dtype=np.int64)], []
    done = 0
    for text in texts:
        if text:
            pos, ptr, k = _position_keys(*char_atoms(text), _SEEDS, MAX_PIECE)
        else:
            pos, ptr, k = np.zeros(0, dtype=np.int64), np.zeros(1, dtype=np.int64), np.zeros(0, dtype=np.uint64)
        positions.append(pos)
        key_ptrs.append(ptr[1:] + done)
        keys.append(k)
        done += k.shape[0]
    pos_ptr = np.zeros(len(positions) + 1, dtype=np.int64)
    np.cumsum([p.shape[0] for p in positions], out=pos_ptr[1:])
    return CharKeys(positions, pos_ptr, np.concatenate(key_ptrs),
                    np.concatenate(keys) if keys else np.zeros(0, dtype=np.uint64))


def templates_fingerprint() -> str:
    """A short hash of the keys of a fixed probe text: saved with a model, so that a model whose
    predicates this code no longer makes fails to load instead of reading shifted features."""
    found = char_keys([_PROBE])
    data = found.keys.tobytes() + found.key_ptr.tobytes() + ",".join(TEMPLATES).encode() + ",".join(CLASSES).encode()
    return hashlib.sha256(data).hexdigest()[:16]


class CharFeaturizer:
    """The feature space of a tokenizer: the predicate keys seen in training (sorted) and the labels seen
    with each (feature id = entry of ``lab_labels``, as in :class:`ChainFeatures`), and the 9 label pairs."""

    labels = LABELS

    def __init__(self, pred_keys: np.ndarray, lab_ptr: np.ndarray, lab_labels: np.ndarray):
        self.pred_keys = np.ascontiguousarray(pred_keys, dtype=np.uint64)
        self.lab_ptr = np.ascontiguousarray(lab_ptr, dtype=np.int64)
        self.lab_labels = np.ascontiguousarray(lab_labels, dtype=np.int32)
        L = len(LABELS)
        if self.pred_keys.ndim != 1 or (self.pred_keys.size > 1 and not (np.diff(self.pred_keys) > 0).all()):
            raise ValueError("predicate keys must be sorted and distinct")
        if self.lab_ptr.shape != (self.pred_keys.size + 1,) or self.lab_ptr[0] != 0 \
                or self.lab_ptr[-1] != self.lab_labels.shape[0] or (np.diff(self.lab_ptr) < 0).any():
            raise ValueError("lab_ptr does not match the predicates and their labels")
        if self.lab_labels.size and (self.lab_labels.min() < 0 or self.lab_labels.max() >= L):
            raise ValueError(f"predicate labels must lie in 0..{L - 1}")
        self.trans_pairs = np.array([(a, b) for a in range(L) for b in range(L)], dtype=np.int64)

    @property
    def n_labels(self) -> int:
        return len(LABELS)

    @property
    def n_features(self) -> int:
        return int(self.lab_labels.shape[0] + self.trans_pairs.shape[0] + 2 * self.n_labels)

    @classmethod
    def fit(cls, found: CharKeys, labels: Sequence[np.ndarray]) -> "CharFeaturizer":
        """The predicates of ``found`` and the (predicate, label) pairs of the gold ``labels`` (one int
        array of label ids per paragraph, one per position)."""
        if len(labels) != len(found.positions):
            raise ValueError(f"{len(labels)} label sequences for {len(found.positions)} paragraphs")
        for d, (y, pos) in enumerate(zip(labels, found.positions)):
            if len(y) != len(pos):
                raise ValueError(f"paragraph {d}: {len(y)} labels for {len(pos)} characters")
        L = len(LABELS)
        pred_keys, ids = np.unique(found.keys, return_inverse=True)
        flat = np.concatenate([np.asarray(y, dtype=np.int64) for y in labels]) if labels else np.zeros(0, np.int64)
        if flat.size and (flat.min() < 0 or flat.max() >= L):
            raise ValueError(f"label ids must lie in 0..{L - 1}")
        pairs = np.unique(ids.reshape(-1) * L + np.repeat(flat, np.diff(found.key_ptr)))
        lab_ptr = np.zeros(pred_keys.size + 1, dtype=np.int64)
        np.cumsum(np.bincount(pairs // L, minlength=pred_keys.size), out=lab_ptr[1:])
        return cls(pred_keys, lab_ptr, pairs % L)

    def encode(self, found: CharKeys, example_ptr: np.ndarray | None = None) -> Encoded:
        """The predicate ids of every position of ``found`` (unknown predicates skipped), as chains: one per
        paragraph, or those of ``example_ptr`` (increasing flat position numbers from 0 to the last)."""
        tok_ptr = found.pos_ptr if example_ptr is None else np.ascontiguousarray(example_ptr, dtype=np.int64)
        if tok_ptr[0] != 0 or tok_ptr[-1] != found.pos_ptr[-1] or (np.diff(tok_ptr) < 0).any():
            raise ValueError("example_ptr must rise from 0 to the number of positions")
        if self.pred_keys.size == 0:
            ids = np.zeros(found.keys.shape[0], dtype=np.int64)
            known = np.zeros(found.keys.shape[0], dtype=np.bool_)
        else:
            ids = np.minimum(np.searchsorted(self.pred_keys, found.keys), self.pred_keys.size - 1)
            known = self.pred_keys[ids] == found.keys
        counts = np.add.reduceat(known.astype(np.int64), found.key_ptr[:-1]) if found.keys.size else \
            np.zeros(found.key_ptr.shape[0] - 1, dtype=np.int64)
        pred_ptr = np.zeros(counts.shape[0] + 1, dtype=np.int64)
        np.cumsum(counts, out=pred_ptr[1:])
        return Encoded(np.array(tok_ptr, dtype=np.int64), pred_ptr, ids[known].astype(np.int32))

    def features(self, encoded: Encoded) -> ChainFeatures:
        return ChainFeatures(encoded, self.lab_ptr, self.lab_labels, self.trans_pairs, self.n_labels)
