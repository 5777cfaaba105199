"""First-order arc feature templates for dependency parsing.

The templates follow McDonald, Crammer and Pereira (2005), "Online
large-margin training of dependency parsers", Table 1, as used for the
CoNLL-X Spanish experiment of Collins et al. (2008, Sec. 7.2).  For an arc
from head h to modifier m (position 0 is the root):

- unigram and bigram templates over (word, POS) of h and m: hw.hp, hw, hp,
  mw.mp, mw, mp, hw.hp.mw.mp, hp.mw.mp, hw.mw.mp, hw.hp.mp, hw.hp.mw, hw.mw,
  hp.mp; the same 13 again over (3-character suffix of the lower-cased word,
  coarse POS), where MSTParser has the 5-character prefix: the suffix carries
  the inflection (case, agreement) that attachment depends on, and scores
  higher on the tuning splits of Basque, Dutch and Portuguese
  (``docs/accuracy.md``);
- in-between: hp.bp.mp for the POS bp of every word strictly between h and m;
- surrounding POS 4-grams (h-1, h, m-1, m), (h, h+1, m-1, m),
  (h-1, h, m, m+1), (h, h+1, m, m+1), over fine and over coarse POS;
- a bias.

Every template fires twice: alone (slot 0) and conjoined with the attachment
direction and the binned distance |h - m| in {1, 2, 3, 4, 5, 6-10, 11+}
(slots 1..15, :func:`dirdist_slot`).

A template instance is a non-zero uint64 key: the hash of the template
number and the atoms it reads (:func:`template_key`).  This module only makes keys;
:mod:`egnlp.features.arc_featurizer` turns them into feature ids and arc
scores.

Encoded corpora: ``tok_ptr`` (n_sentences + 1,) int64 and ``atoms``
(n_rows, N_ATOMS) int64, one row per token plus a leading root row per
sentence, columns ``WORD, PREFIX, POS, CPOS, LEMMA, FEATS, SUFFIX`` (hashes of
the strings; the arc labeler reads the prefix).  Sentence ``s`` has rows
``tok_ptr[s]:tok_ptr[s + 1]``, its root first; the kernels take a sentence
as ``atoms``, the row ``base`` of its root and its number of words ``n``.
"""

from __future__ import annotations

from dataclasses import dataclass
from operator import itemgetter

import numpy as np
from numba import njit

from egnlp.corpora.sentence import CPOS as CPOS_COLUMN
from egnlp.corpora.sentence import FEATS as FEATS_COLUMN
from egnlp.corpora.sentence import FORM as FORM_COLUMN
from egnlp.corpora.sentence import LEMMA as LEMMA_COLUMN
from egnlp.corpora.sentence import POS as POS_COLUMN
from egnlp.features.hashing import StringHasher, combine, hash_string

WORD, PREFIX, POS, CPOS, LEMMA, FEATS, SUFFIX = 0, 1, 2, 3, 4, 5, 6
N_ATOMS = 7
PREFIX_LEN = 5
SUFFIX_LEN = 3
ROOT_TOKEN = "<root>"
#: Version of the template set: part of every model file, checked on load.
TEMPLATES_VERSION = "mcdonald2005-first-order-v3"

N_FIXED = 39 + 4 + 8 + 1  # pair templates, FEATS, surrounding POS 4-grams, bias
N_BETWEEN = 2  # in-between trigrams per word between head and modifier
N_SLOTS = 16  # slot 0: a template alone; 1..15: with direction and distance
USE_LEMMA = 1
USE_FEATS = 2
PAD_LEFT = np.int64(hash_string("<pad-left>"))
PAD_RIGHT = np.int64(hash_string("<pad-right>"))


@dataclass
class EncodedCorpus:
    """Sentences as integer atoms (see the module docstring)."""

    tok_ptr: np.ndarray
    atoms: np.ndarray

    def __len__(self) -> int:
        return self.tok_ptr.shape[0] - 1

    def length(self, s: int) -> int:
        """Number of words of sentence ``s`` (without the root)."""
        return int(self.tok_ptr[s + 1] - self.tok_ptr[s] - 1)

    def heads_rows(self, heads_list) -> np.ndarray:
        """Gold heads laid out like ``atoms`` rows (-1 on root rows)."""
        out = np.full(self.atoms.shape[0], -1, dtype=np.int64)
        for s, heads in enumerate(heads_list):
            base = int(self.tok_ptr[s])
            out[base + 1 : base + 1 + len(heads)] = heads
        return out


TAG_COLUMNS = ("both", "upos", "xpos")


def encode(sentences, hasher: StringHasher | None = None, tags: str = "both") -> EncodedCorpus:
    """Turn :class:`~egnlp.corpora.Sentence` objects (FORM, LEMMA, CPOSTAG, POSTAG and FEATS) into atoms.

    ``tags`` says which tag columns the POS and coarse-POS atoms read:
    ``both`` (POS from POSTAG / CoNLL-U XPOS, coarse from CPOSTAG / UPOS),
    ``upos`` (both from CPOSTAG / UPOS: for treebanks whose XPOS is ``_``) or
    ``xpos`` (POS from POSTAG, the coarse tag its first character: for
    treebanks without a coarse tag column, e.g. the WSJ).

    The columns are read off the rows, each form lowered once and a tag column hashed once where two
    atoms read it: pt_bosque dev x8 in 0.24 s against 0.30 s through the Sentence properties.
    """
    if tags not in TAG_COLUMNS:
        raise ValueError(f"tags must be one of {', '.join(TAG_COLUMNS)}, not {tags!r}")
    hasher = hasher or StringHasher()
    lengths = np.array([len(s) + 1 for s in sentences], dtype=np.int64)
    tok_ptr = np.zeros(len(sentences) + 1, dtype=np.int64)
    np.cumsum(lengths, out=tok_ptr[1:])
    atoms = np.empty((int(tok_ptr[-1]), N_ATOMS), dtype=np.int64)
    atoms[tok_ptr[:-1]] = hasher(ROOT_TOKEN)
    words = np.ones(atoms.shape[0], dtype=bool)  # every row but the roots, one column hashed at a time
    words[tok_ptr[:-1]] = False
    rows = [row for sent in sentences for row in sent.rows]
    forms = list(map(itemgetter(FORM_COLUMN), rows))
    lowered = list(map(str.lower, forms))
    prefixes = [form[:PREFIX_LEN] for form in lowered]
    atoms[words, WORD] = hasher.array(forms)
    atoms[words, PREFIX] = hasher.array(prefixes)
    coarse = hasher.array(list(map(itemgetter(CPOS_COLUMN), rows))) if tags != "xpos" else None
    if tags == "upos":
        atoms[words, POS] = coarse
        atoms[words, CPOS] = coarse
    else:
        fine = list(map(itemgetter(POS_COLUMN), rows))
        atoms[words, POS] = hasher.array(fine)
        atoms[words, CPOS] = hasher.array([tag[:1] for tag in fine]) if tags == "xpos" else coarse
    atoms[words, LEMMA] = hasher.array([lemma.lower() if lemma != "_" else prefix
                                        for lemma, prefix in zip(map(itemgetter(LEMMA_COLUMN), rows), prefixes)])
    atoms[words, FEATS] = hasher.array(list(map(itemgetter(FEATS_COLUMN), rows)))
    atoms[words, SUFFIX] = hasher.array([form[-SUFFIX_LEN:] for form in lowered])
    return EncodedCorpus(tok_ptr, atoms)


@njit(cache=True)
def template_key(template, a, b, c, d):
    """Key of a template over up to four atoms (unused atoms are 0)."""
    k = combine(np.uint64(template + 1), a)
    k = combine(k, b)
    k = combine(k, c)
    return combine(k, d)


@njit(cache=True, no_cpython_wrapper=True)
def nonzero_key(key):
    """``key``, or 1 for the key 0, which marks the empty slots of the hash tables."""
    return key if key != 0 else np.uint64(1)


@njit(cache=True, no_cpython_wrapper=True)
def _emit(out, count, key):
    # One template instance.
    out[count] = nonzero_key(key)
    return count + 1


@njit(cache=True)
def dirdist_slot(h, m):
    """Slot 1..15 of the direction (bit 8: head left of modifier) and distance bin."""
    dist = abs(h - m)
    dbin = dist if dist <= 5 else (6 if dist <= 10 else 7)
    return dbin + (8 if h < m else 0)


@njit(cache=True, no_cpython_wrapper=True)
def _atom(atoms, base, n, pos, col):
    if pos < 0:
        return PAD_LEFT
    if pos > n:
        return PAD_RIGHT
    return atoms[base + pos, col]


# Template numbers (part of every feature key, so fixed by TEMPLATES_VERSION): 13 per
# (word, POS) pair set starting at 0, 13 and 26; then FEATS, surrounding POS, bias, in-between.
_T_FEATS = 39
_T_SURROUND = 43
_T_BIAS = 51
_T_BETWEEN = 52
_PAIR_SETS = ((WORD, POS), (SUFFIX, CPOS), (LEMMA, POS))


@njit(cache=True, no_cpython_wrapper=True)
def n_pair_sets(flags):
    """The number of (word, POS) pair sets the templates read under ``flags``: 3 with the lemma's, else 2."""
    return 3 if flags & USE_LEMMA else 2


@njit(cache=True, no_cpython_wrapper=True)
def token_keys(atoms, base, x, flags, role, out, c):
    """Templates of token x alone, written to ``out`` from ``c``: as the head (``role`` 0: hw.hp, hw,
    hp per pair set, then hp.hf) or as the modifier (``role`` 1: mw.mp, mw, mp, then mp.mf)."""
    for j in range(n_pair_sets(flags)):
        wcol, pcol = _PAIR_SETS[j]
        t = 13 * j + 3 * role
        word = atoms[base + x, wcol]
        tag = atoms[base + x, pcol]
        c = _emit(out, c, template_key(t + 0, word, tag, 0, 0))
        c = _emit(out, c, template_key(t + 1, word, 0, 0, 0))
        c = _emit(out, c, template_key(t + 2, tag, 0, 0, 0))
    if flags & USE_FEATS:
        c = _emit(out, c, template_key(_T_FEATS + role, atoms[base + x, CPOS], atoms[base + x, FEATS], 0, 0))
    return c


@njit(cache=True)
def _pair_keys(atoms, base, n, h, m, flags, out, c, known=-1):
    """Templates over head and modifier together: the bigrams, FEATS pairs and surrounding POS 4-grams.

    ``known`` (scoring only) leaves out bigrams that cannot be in an alphabet
    built from gold arcs: per pair set j, bit 4j is set when the head's hw.hp
    key is in the alphabet, 4j+1 its hw, 4j+2 the modifier's mw.mp, 4j+3 its
    mw.  A gold arc that put hw.hp.mw.mp in the alphabet also put hw.hp and
    mw.mp there, and so on for each bigram below; -1 emits every key.
    """
    for j in range(n_pair_sets(flags)):
        wcol, pcol = _PAIR_SETS[j]
        t = 13 * j
        hw = atoms[base + h, wcol]
        hp = atoms[base + h, pcol]
        mw = atoms[base + m, wcol]
        mp = atoms[base + m, pcol]
        bits = known >> (4 * j)
        head_pair, head_word, mod_pair, mod_word = bits & 1, bits & 2, bits & 4, bits & 8
        if head_pair and mod_pair:
            c = _emit(out, c, template_key(t + 6, hw, hp, mw, mp))
        if mod_pair:
            c = _emit(out, c, template_key(t + 7, hp, mw, mp, 0))
        if head_word and mod_pair:
            c = _emit(out, c, template_key(t + 8, hw, mw, mp, 0))
        if head_pair:
            c = _emit(out, c, template_key(t + 9, hw, hp, mp, 0))
        if head_pair and mod_word:
            c = _emit(out, c, template_key(t + 10, hw, hp, mw, 0))
        if head_word and mod_word:
            c = _emit(out, c, template_key(t + 11, hw, mw, 0, 0))
        c = _emit(out, c, template_key(t + 12, hp, mp, 0, 0))
    if flags & USE_FEATS:
        hp = atoms[base + h, CPOS]
        mp = atoms[base + m, CPOS]
        hf = atoms[base + h, FEATS]
        mf = atoms[base + m, FEATS]
        c = _emit(out, c, template_key(_T_FEATS + 2, hp, hf, mp, mf))
        c = _emit(out, c, template_key(_T_FEATS + 3, hf, mf, 0, 0))
    t = _T_SURROUND
    for pcol in (POS, CPOS):
        hp = atoms[base + h, pcol]
        mp = atoms[base + m, pcol]
        hl = _atom(atoms, base, n, h - 1, pcol)
        hr = _atom(atoms, base, n, h + 1, pcol)
        ml = _atom(atoms, base, n, m - 1, pcol)
        mr = _atom(atoms, base, n, m + 1, pcol)
        c = _emit(out, c, template_key(t + 0, hl, hp, ml, mp))
        c = _emit(out, c, template_key(t + 1, hp, hr, ml, mp))
        c = _emit(out, c, template_key(t + 2, hl, hp, mp, mr))
        c = _emit(out, c, template_key(t + 3, hp, hr, mp, mr))
        t += 4
    return c


@njit(cache=True, no_cpython_wrapper=True)
def bias_key(out, c):
    """The bias key, written to ``out[c]``; returns c + 1."""
    return _emit(out, c, template_key(_T_BIAS, 0, 0, 0, 0))


# The keys of _pair_keys again, from per-token parts: a key is a chain of combine() over the template
# number and its atoms, and the head's atoms come first in every pair template, so the state after them
# (the head's prefix, head_prefixes) is computed once per token, and so are the modifier's atoms
# (modifier_atoms); a key is then the prefix of h followed by the atoms of m (head_pair_keys: two or
# three combines, in loops without branches).  Pair template k: 7 j + 0..6 are t + 6..12 of pair set j
# (hw.hp.mw.mp, hp.mw.mp, hw.mw.mp, hw.hp.mp, hw.hp.mw, hw.mw, hp.mp); then the FEATS pairs
# (hc.hf.mc.mf, hf.mf) and the surrounding 4-grams, fine then coarse.
N_PAIR = 31
K_FEATS = 21
K_SURROUND = 23
# The combines after the head's prefix: the modifier's two atoms (a missing one is 0), and one more 0
# where template_key had a third unused atom after the modifier's.
_PAIR_TAIL = np.array([2, 3, 3, 2, 2, 3, 3] * 3 + [2, 3] + [2] * 8, dtype=np.int64)


@njit(cache=True)
def pair_used(k, flags):
    """Whether pair template k fires under ``flags`` (see ``N_PAIR``)."""
    if k < K_FEATS:
        return k < 7 * n_pair_sets(flags)
    if k < K_SURROUND:
        return (flags & USE_FEATS) != 0
    return True


@njit(cache=True, no_cpython_wrapper=True)
def head_prefixes(atoms, base, n, flags, out):
    """out[x, k] (n+1, N_PAIR) uint64: the key of pair template k with token x as the head, before the
    modifier's atoms are mixed in (templates that ``flags`` leave out are not written)."""
    for x in range(n + 1):
        for j in range(n_pair_sets(flags)):
            wcol, pcol = _PAIR_SETS[j]
            t = np.uint64(13 * j + 1)
            hw = atoms[base + x, wcol]
            hp = atoms[base + x, pcol]
            k = 7 * j
            out[x, k] = combine(combine(t + np.uint64(6), hw), hp)
            out[x, k + 1] = combine(t + np.uint64(7), hp)
            out[x, k + 2] = combine(t + np.uint64(8), hw)
            out[x, k + 3] = combine(combine(t + np.uint64(9), hw), hp)
            out[x, k + 4] = combine(combine(t + np.uint64(10), hw), hp)
            out[x, k + 5] = combine(t + np.uint64(11), hw)
            out[x, k + 6] = combine(t + np.uint64(12), hp)
        if flags & USE_FEATS:
            hf = atoms[base + x, FEATS]
            out[x, K_FEATS] = combine(combine(np.uint64(_T_FEATS + 3), atoms[base + x, CPOS]), hf)
            out[x, K_FEATS + 1] = combine(np.uint64(_T_FEATS + 4), hf)
        k = K_SURROUND
        for pcol in (POS, CPOS):
            hp = atoms[base + x, pcol]
            hl = _atom(atoms, base, n, x - 1, pcol)
            hr = _atom(atoms, base, n, x + 1, pcol)
            t = np.uint64(_T_SURROUND + k - K_SURROUND + 1)
            out[x, k] = combine(combine(t, hl), hp)
            out[x, k + 1] = combine(combine(t + np.uint64(1), hp), hr)
            out[x, k + 2] = combine(combine(t + np.uint64(2), hl), hp)
            out[x, k + 3] = combine(combine(t + np.uint64(3), hp), hr)
            k += 4


@njit(cache=True, no_cpython_wrapper=True)
def modifier_atoms(atoms, base, n, flags, out):
    """out[k, :, x] (N_PAIR, 2, n+1) int64: the two atoms token x adds as the modifier to the key of pair
    template k (0 for a missing one; templates that ``flags`` leave out are not written)."""
    for x in range(n + 1):
        for j in range(n_pair_sets(flags)):
            wcol, pcol = _PAIR_SETS[j]
            mw = atoms[base + x, wcol]
            mp = atoms[base + x, pcol]
            k = 7 * j
            for r in range(3):  # hw.hp.mw.mp, hp.mw.mp, hw.mw.mp
                out[k + r, 0, x] = mw
                out[k + r, 1, x] = mp
            out[k + 3, 0, x] = mp  # hw.hp.mp
            out[k + 4, 0, x] = mw  # hw.hp.mw
            out[k + 5, 0, x] = mw  # hw.mw
            out[k + 6, 0, x] = mp  # hp.mp
            for r in range(3, 7):
                out[k + r, 1, x] = 0
        if flags & USE_FEATS:
            out[K_FEATS, 0, x] = atoms[base + x, CPOS]
            out[K_FEATS, 1, x] = atoms[base + x, FEATS]
            out[K_FEATS + 1, 0, x] = atoms[base + x, FEATS]
            out[K_FEATS + 1, 1, x] = 0
        k = K_SURROUND
        for pcol in (POS, CPOS):
            mp = atoms[base + x, pcol]
            ml = _atom(atoms, base, n, x - 1, pcol)
            mr = _atom(atoms, base, n, x + 1, pcol)
            for r in range(2):  # (h-1, h, m-1, m), (h, h+1, m-1, m)
                out[k + r, 0, x] = ml
                out[k + r, 1, x] = mp
            for r in range(2, 4):  # (h-1, h, m, m+1), (h, h+1, m, m+1)
                out[k + r, 0, x] = mp
                out[k + r, 1, x] = mr
            k += 4


@njit(cache=True)
def head_pair_keys(prefixes, mod_atoms, h, flags, out):
    """out[k, m] = the key of pair template k of the arc h -> m, for every token m (m = 0 and m = h
    too), from :func:`head_prefixes` and :func:`modifier_atoms`: equal to what :func:`_pair_keys` emits."""
    size = mod_atoms.shape[2]
    for k in range(N_PAIR):
        if not pair_used(k, flags):
            continue
        p = prefixes[h, k]
        first = mod_atoms[k, 0]
        second = mod_atoms[k, 1]
        if _PAIR_TAIL[k] == 3:
            for m in range(size):
                out[k, m] = nonzero_key(combine(combine(combine(p, first[m]), second[m]), 0))
        else:
            for m in range(size):
                out[k, m] = nonzero_key(combine(combine(p, first[m]), second[m]))


@njit(cache=True, no_cpython_wrapper=True)
def prefix_key(prefixes, mod_atoms, h, m, k):
    """The key of pair template k of the arc h -> m from h's prefix and m's atoms (see head_pair_keys)."""
    key = combine(combine(prefixes[h, k], mod_atoms[k, 0, m]), mod_atoms[k, 1, m])
    if _PAIR_TAIL[k] == 3:
        key = combine(key, 0)
    return nonzero_key(key)


@njit(cache=True, no_cpython_wrapper=True)
def prefix_pair_keys(prefixes, mod_atoms, h, m, flags, out, c, known=-1, word_pairs=-1):
    """The keys that :func:`_pair_keys` emits for h -> m under the same ``known`` bits, in its order, from
    :func:`head_prefixes` and :func:`modifier_atoms`: two or three combines a key where _pair_keys
    takes four (the direct scorer's arc scores of pt_bosque dev and es test in 0.64 to 0.85 of the time, the
    same bits).

    ``word_pairs`` (scoring only): bit j clear when pair set j's hw.mw key is not in the alphabet, which
    leaves out hw.mw and the bigrams that contain it, hw.hp.mw.mp, hw.mw.mp and hw.hp.mw (a gold arc that
    put one of them in the alphabet put its hw.mw there too); -1 leaves out none."""
    for j in range(n_pair_sets(flags)):
        bits = known >> (4 * j)
        head_pair, head_word, mod_pair, mod_word = bits & 1, bits & 2, bits & 4, bits & 8
        word_pair = (word_pairs >> j) & 1
        k = 7 * j
        if word_pair and head_pair and mod_pair:
            c = _emit(out, c, prefix_key(prefixes, mod_atoms, h, m, k))
        if mod_pair:
            c = _emit(out, c, prefix_key(prefixes, mod_atoms, h, m, k + 1))
        if word_pair and head_word and mod_pair:
            c = _emit(out, c, prefix_key(prefixes, mod_atoms, h, m, k + 2))
        if head_pair:
            c = _emit(out, c, prefix_key(prefixes, mod_atoms, h, m, k + 3))
        if word_pair and head_pair and mod_word:
            c = _emit(out, c, prefix_key(prefixes, mod_atoms, h, m, k + 4))
        if word_pair and head_word and mod_word:
            c = _emit(out, c, prefix_key(prefixes, mod_atoms, h, m, k + 5))
        c = _emit(out, c, prefix_key(prefixes, mod_atoms, h, m, k + 6))
    if flags & USE_FEATS:
        c = _emit(out, c, prefix_key(prefixes, mod_atoms, h, m, K_FEATS))
        c = _emit(out, c, prefix_key(prefixes, mod_atoms, h, m, K_FEATS + 1))
    for k in range(K_SURROUND, N_PAIR):
        c = _emit(out, c, prefix_key(prefixes, mod_atoms, h, m, k))
    return c


@njit(cache=True)
def _tag_template(k):
    """Whether pair template k reads tags and FEATS only (hp.mp, the FEATS pairs, the 4-grams): few
    distinct keys, looked up on every arc."""
    return (k < K_FEATS and k % 7 == 6) or k >= K_FEATS


BETWEEN_COLUMNS = (POS, CPOS)  # the atoms of the in-between trigrams: fine POS (j = 0), coarse POS (j = 1)


@njit(cache=True, no_cpython_wrapper=True)
def between_key(j, hp, bp, mp):
    """The in-between trigram hp.bp.mp over column ``BETWEEN_COLUMNS[j]`` (0: fine POS, 1: coarse)."""
    return nonzero_key(template_key(_T_BETWEEN + j, hp, bp, mp, 0))


@njit(cache=True)
def _between_keys(atoms, base, h, m, out, c):
    """In-between POS trigrams hp.bp.mp, fine then coarse, one per word strictly between h and m."""
    for j in range(2):
        pcol = BETWEEN_COLUMNS[j]
        hp = atoms[base + h, pcol]
        mp = atoms[base + m, pcol]
        for b in range(min(h, m) + 1, max(h, m)):
            out[c] = between_key(j, hp, atoms[base + b, pcol], mp)
            c += 1
    return c


@njit(cache=True)
def arc_keys(atoms, base, n, h, m, flags, out):
    """Write the template keys of arc h -> m into ``out``; return their number.

    ``flags``: ``USE_LEMMA`` adds the (lemma, POS) pair set, ``USE_FEATS``
    the FEATS templates (templates over empty columns would only repeat others).

    ``out`` needs room for ``N_FIXED + N_BETWEEN * n`` keys.  Each key is a feature alone
    (slot 0) and conjoined with :func:`dirdist_slot` (slots 1..15).
    """
    c = token_keys(atoms, base, h, flags, 0, out, 0)
    c = token_keys(atoms, base, m, flags, 1, out, c)
    c = _pair_keys(atoms, base, n, h, m, flags, out, c)
    c = bias_key(out, c)
    return _between_keys(atoms, base, h, m, out, c)


@njit(cache=True)
def max_length(tok_ptr):
    """The number of words of the longest sentence."""
    return np.max(tok_ptr[1:] - tok_ptr[:-1]) - 1


@njit(cache=True)
def _key_positions(flags):
    """Bit 16 for the positions of :func:`arc_keys`' fixed keys that come from templates over tags only
    (the pair templates of :func:`_tag_template`), 0 for the others; in-between keys follow them."""
    n_keys = 2 * (3 * n_pair_sets(flags) + (1 if flags & USE_FEATS else 0))
    out = np.zeros(N_FIXED, dtype=np.int64)
    c = n_keys
    for k in range(N_PAIR):
        if pair_used(k, flags):
            out[c] = (1 << 16) if _tag_template(k) else 0
            c += 1
    return out[:c + 1]  # and the bias


@njit(cache=True)
def _insert(keys, masks, key, bits):
    """Add ``bits`` to the mask of ``key`` in the open-addressing set ``keys`` / ``masks``; returns 1 if
    the key is new."""
    wrap = np.uint64(keys.shape[0] - 1)
    at = key & wrap  # a key is a hash: its low bits are its home slot
    while keys[at] != 0 and keys[at] != key:
        at = (at + np.uint64(1)) & wrap
    masks[at] |= bits
    if keys[at] == key:
        return 0
    keys[at] = key
    return 1


@njit(cache=True)
def gold_alphabet(tok_ptr, atoms, flags, head_rows):
    """The distinct template keys of the gold arcs, each with a mask: bit s for every direction/distance
    slot s it was seen in (bit 0 always: the template alone) and bit 16 when a template over tags only
    (:func:`_tag_template`, in-between trigrams) made it.  Held in a hash set, so memory grows with the
    distinct keys, not with the arcs."""
    positions = _key_positions(flags)
    keys = np.zeros(1 << 16, dtype=np.uint64)
    masks = np.zeros(1 << 16, dtype=np.int64)
    count = 0
    buf = np.empty(N_FIXED + N_BETWEEN * max_length(tok_ptr), dtype=np.uint64)
    for s in range(tok_ptr.shape[0] - 1):
        base = tok_ptr[s]
        n = tok_ptr[s + 1] - base - 1
        for m in range(1, n + 1):
            h = head_rows[base + m]
            k = arc_keys(atoms, base, n, h, m, flags, buf)
            slot_bits = 1 | (1 << dirdist_slot(h, m))
            for j in range(k):
                tag = positions[j] if j < positions.shape[0] else (1 << 16)
                count += _insert(keys, masks, buf[j], slot_bits | tag)
                if 2 * count > keys.shape[0]:  # grow: keep the set at most half full
                    old_keys, old_masks = keys, masks
                    keys = np.zeros(2 * old_keys.shape[0], dtype=np.uint64)
                    masks = np.zeros(2 * old_keys.shape[0], dtype=np.int64)
                    for i in range(old_keys.shape[0]):
                        if old_keys[i] != 0:
                            _insert(keys, masks, old_keys[i], old_masks[i])
    used = keys != 0
    return keys[used], masks[used]
