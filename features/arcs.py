"""First-order arc features for dependency parsing.

The templates follow McDonald, Crammer and Pereira (2005), "Online
large-margin training of dependency parsers", Table 1, as used for the
CoNLL-X Spanish experiment of Collins et al. (2008, Sec. 7.2).  For an arc
from head h to modifier m (position 0 is the root):

- unigram and bigram templates over (word, POS) of h and m: hw.hp, hw, hp,
  mw.mp, mw, mp, hw.hp.mw.mp, hp.mw.mp, hw.mw.mp, hw.hp.mp, hw.hp.mw, hw.mw,
  hp.mp; the same 13 again over (5-character prefix of the lower-cased word,
  coarse POS), so long words back off to their prefix;
- in-between: hp.bp.mp for the POS bp of every word strictly between h and m;
- surrounding POS 4-grams (h-1, h, m-1, m), (h, h+1, m-1, m),
  (h-1, h, m, m+1), (h, h+1, m, m+1), over fine and over coarse POS;
- a bias.

Every template fires twice: alone and conjoined with the attachment
direction and the binned distance |h - m| in {1, 2, 3, 4, 5, 6-10, 11+}.

Keys become ids through an alphabet (the keys of the gold arcs of the
training data, as MSTParser does) or by hashing into 2^bits buckets.

Encoded corpora: ``tok_ptr`` (n_sentences + 1,) int64 and ``atoms``
(n_rows, 4) int64, one row per token plus a leading root row per sentence,
columns ``WORD, PREFIX, POS, CPOS`` (hashes of the strings).  Sentence ``s``
has rows ``tok_ptr[s]:tok_ptr[s + 1]``, its root first.  Parts are the
(n+1) x (n+1) cells [head, modifier] in row-major order; cells with m = 0
or h = m have no features.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit

from egnlp.features.csr import PartFeatures
from egnlp.features.hashing import (KeyTable, StringHasher, cached_lookup, combine, hash_string, new_cache,
                              table_lookup)

WORD, PREFIX, POS, CPOS, LEMMA, FEATS = 0, 1, 2, 3, 4, 5
N_ATOMS = 6
PREFIX_LEN = 5
ROOT_TOKEN = "<root>"
#: Version of the template set: part of every model file, checked on load.
TEMPLATES_VERSION = "mcdonald2005-first-order-v2"

_N_FIXED = 39 + 4 + 8 + 1  # pair templates, FEATS, surrounding POS 4-grams, bias
_N_BETWEEN = 2  # in-between trigrams per word between head and modifier
N_SLOTS = 16  # slot 0: a template alone; 1..15: with direction and distance
USE_LEMMA = 1
USE_FEATS = 2
_PAD_LEFT = np.int64(hash_string("<pad-left>"))
_PAD_RIGHT = np.int64(hash_string("<pad-right>"))


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


def encode(sentences, hasher: StringHasher | None = None, coarse_from_pos: bool = False) -> EncodedCorpus:
    """Turn sentences (``forms``, ``lemmas``, ``cpos``, ``pos``, ``feats``) into atoms.

    With ``coarse_from_pos`` the coarse tag is the first character of the
    POS tag (for treebanks without a coarse tag column, e.g. the WSJ).
    """
    hasher = hasher or StringHasher()
    lengths = np.array([len(s) + 1 for s in sentences], dtype=np.int64)
    tok_ptr = np.zeros(len(sentences) + 1, dtype=np.int64)
    np.cumsum(lengths, out=tok_ptr[1:])
    atoms = np.empty((int(tok_ptr[-1]), N_ATOMS), dtype=np.int64)
    root = hasher(ROOT_TOKEN)
    for s, sent in enumerate(sentences):
        base = int(tok_ptr[s])
        atoms[base] = root
        rows = slice(base + 1, int(tok_ptr[s + 1]))
        atoms[rows, WORD] = hasher.array(sent.forms)
        atoms[rows, PREFIX] = hasher.array([f.lower()[:PREFIX_LEN] for f in sent.forms])
        atoms[rows, POS] = hasher.array(sent.pos)
        atoms[rows, CPOS] = hasher.array([p[:1] for p in sent.pos] if coarse_from_pos else sent.cpos)
        atoms[rows, LEMMA] = hasher.array([lemma.lower() if lemma != "_" else form.lower()[:PREFIX_LEN]
                                           for form, lemma in zip(sent.forms, sent.lemmas)])
        atoms[rows, FEATS] = hasher.array(sent.feats)
    return EncodedCorpus(tok_ptr, atoms)


@njit(cache=True)
def _key(template, a, b, c, d):
    """Key of a template over up to four atoms (unused atoms are 0)."""
    k = combine(np.uint64(template + 1), a)
    k = combine(k, b)
    k = combine(k, c)
    return combine(k, d)


@njit(cache=True)
def _nonzero(key):
    # 0 is reserved for empty hash-table slots.
    return key if key != 0 else np.uint64(1)


@njit(cache=True)
def _emit(out, count, key):
    # One template instance.
    out[count] = _nonzero(key)
    return count + 1


@njit(cache=True)
def dirdist_slot(h, m):
    """Slot 1..15 of the direction (bit 8: head left of modifier) and distance bin."""
    dist = abs(h - m)
    dbin = dist if dist <= 5 else (6 if dist <= 10 else 7)
    return dbin + (8 if h < m else 0)


@njit(cache=True)
def _atom(atoms, base, n, pos, col):
    if pos < 0:
        return _PAD_LEFT
    if pos > n:
        return _PAD_RIGHT
    return atoms[base + pos, col]


# Template numbers (part of every feature key, so fixed by TEMPLATES_VERSION): 13 per
# (word, POS) pair set starting at 0, 13 and 26; then FEATS, surrounding POS, bias, in-between.
_T_FEATS = 39
_T_SURROUND = 43
_T_BIAS = 51
_T_BETWEEN = 52
_PAIR_SETS = ((WORD, POS), (PREFIX, CPOS), (LEMMA, POS))


@njit(cache=True)
def _n_sets(flags):
    return 3 if flags & USE_LEMMA else 2


@njit(cache=True)
def _token_keys(atoms, base, x, flags, role, out, c):
    """Templates of token x alone, written to ``out`` from ``c``: as the head (``role`` 0: hw.hp, hw,
    hp per pair set, then hp.hf) or as the modifier (``role`` 1: mw.mp, mw, mp, then mp.mf)."""
    for j in range(_n_sets(flags)):
        wcol, pcol = _PAIR_SETS[j]
        t = 13 * j + 3 * role
        word = atoms[base + x, wcol]
        tag = atoms[base + x, pcol]
        c = _emit(out, c, _key(t + 0, word, tag, 0, 0))
        c = _emit(out, c, _key(t + 1, word, 0, 0, 0))
        c = _emit(out, c, _key(t + 2, tag, 0, 0, 0))
    if flags & USE_FEATS:
        c = _emit(out, c, _key(_T_FEATS + role, atoms[base + x, CPOS], atoms[base + x, FEATS], 0, 0))
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
    for j in range(_n_sets(flags)):
        wcol, pcol = _PAIR_SETS[j]
        t = 13 * j
        hw = atoms[base + h, wcol]
        hp = atoms[base + h, pcol]
        mw = atoms[base + m, wcol]
        mp = atoms[base + m, pcol]
        bits = known >> (4 * j)
        head_pair, head_word, mod_pair, mod_word = bits & 1, bits & 2, bits & 4, bits & 8
        if head_pair and mod_pair:
            c = _emit(out, c, _key(t + 6, hw, hp, mw, mp))
        if mod_pair:
            c = _emit(out, c, _key(t + 7, hp, mw, mp, 0))
        if head_word and mod_pair:
            c = _emit(out, c, _key(t + 8, hw, mw, mp, 0))
        if head_pair:
            c = _emit(out, c, _key(t + 9, hw, hp, mp, 0))
        if head_pair and mod_word:
            c = _emit(out, c, _key(t + 10, hw, hp, mw, 0))
        if head_word and mod_word:
            c = _emit(out, c, _key(t + 11, hw, mw, 0, 0))
        c = _emit(out, c, _key(t + 12, hp, mp, 0, 0))
    if flags & USE_FEATS:
        hp = atoms[base + h, CPOS]
        mp = atoms[base + m, CPOS]
        hf = atoms[base + h, FEATS]
        mf = atoms[base + m, FEATS]
        c = _emit(out, c, _key(_T_FEATS + 2, hp, hf, mp, mf))
        c = _emit(out, c, _key(_T_FEATS + 3, hf, mf, 0, 0))
    t = _T_SURROUND
    for pcol in (POS, CPOS):
        hp = atoms[base + h, pcol]
        mp = atoms[base + m, pcol]
        hl = _atom(atoms, base, n, h - 1, pcol)
        hr = _atom(atoms, base, n, h + 1, pcol)
        ml = _atom(atoms, base, n, m - 1, pcol)
        mr = _atom(atoms, base, n, m + 1, pcol)
        c = _emit(out, c, _key(t + 0, hl, hp, ml, mp))
        c = _emit(out, c, _key(t + 1, hp, hr, ml, mp))
        c = _emit(out, c, _key(t + 2, hl, hp, mp, mr))
        c = _emit(out, c, _key(t + 3, hp, hr, mp, mr))
        t += 4
    return c


@njit(cache=True)
def _bias_key(out, c):
    return _emit(out, c, _key(_T_BIAS, 0, 0, 0, 0))


_BETWEEN_COLS = (POS, CPOS)


@njit(cache=True)
def _between_key(j, hp, bp, mp):
    """The in-between trigram hp.bp.mp over column ``_BETWEEN_COLS[j]`` (0: fine POS, 1: coarse)."""
    return _nonzero(_key(_T_BETWEEN + j, hp, bp, mp, 0))


@njit(cache=True)
def _between_keys(atoms, base, h, m, out, c):
    """In-between POS trigrams hp.bp.mp, fine then coarse, one per word strictly between h and m."""
    for j in range(2):
        pcol = _BETWEEN_COLS[j]
        hp = atoms[base + h, pcol]
        mp = atoms[base + m, pcol]
        for b in range(min(h, m) + 1, max(h, m)):
            out[c] = _between_key(j, hp, atoms[base + b, pcol], mp)
            c += 1
    return c


@njit(cache=True)
def arc_keys(atoms, base, n, h, m, flags, out):
    """Write the template keys of arc h -> m into ``out``; return their number.

    ``flags``: ``USE_LEMMA`` adds the (lemma, POS) pair set, ``USE_FEATS``
    the FEATS templates (templates over empty columns would only repeat others).

    ``out`` needs room for ``_N_FIXED + _N_BETWEEN * n`` keys.  Each key is a feature alone
    (slot 0) and conjoined with :func:`dirdist_slot` (slots 1..15).
    """
    c = _token_keys(atoms, base, h, flags, 0, out, 0)
    c = _token_keys(atoms, base, m, flags, 1, out, c)
    c = _pair_keys(atoms, base, n, h, m, flags, out, c)
    c = _bias_key(out, c)
    return _between_keys(atoms, base, h, m, out, c)


@njit(cache=True)
def _arc_ids(atoms, base, n, h, m, flags, table_keys, table_vals, idmap, hash_bits, cache_keys, cache_vals,
             keys, ids):
    """Feature ids of arc h -> m written to ``ids``; returns their number.

    ``keys`` is work space for :func:`arc_keys`; ``ids`` needs twice its room;
    ``cache_keys`` / ``cache_vals`` come from :func:`egnlp.features.hashing.new_cache`.
    """
    k = arc_keys(atoms, base, n, h, m, flags, keys)
    slot = dirdist_slot(h, m)
    c = 0
    for j in range(k):
        key = keys[j]
        if hash_bits > 0:
            shift = np.uint64(64 - hash_bits)
            ids[c] = np.int64(combine(key, 0) >> shift)
            ids[c + 1] = np.int64(combine(key, slot) >> shift)
            c += 2
            continue
        row = cached_lookup(table_keys, table_vals, cache_keys, cache_vals, key)
        if row < 0:
            continue
        for fid in (idmap[row, 0], idmap[row, slot]):
            if fid >= 0:
                ids[c] = fid
                c += 1
    return c


@njit(cache=True)
def _max_length(tok_ptr):
    return np.max(tok_ptr[1:] - tok_ptr[:-1]) - 1


@njit(cache=True)
def _entry_bound(tok_ptr):
    # An upper bound on the number of feature entries of all arcs.
    total = 0
    for s in range(tok_ptr.shape[0] - 1):
        n = tok_ptr[s + 1] - tok_ptr[s] - 1
        for h in range(n + 1):
            for m in range(1, n + 1):
                if h != m:
                    total += 2 * (_N_FIXED + _N_BETWEEN * (abs(h - m) - 1))
    return total


@njit(cache=True)
def _extract(tok_ptr, atoms, flags, table_keys, table_vals, idmap, hash_bits, cache_keys, cache_vals, feat_ptr, feat_ids):
    max_n = _max_length(tok_ptr)
    keys = np.empty(_N_FIXED + _N_BETWEEN * max_n, dtype=np.uint64)
    ids = np.empty(2 * keys.shape[0], dtype=np.int64)
    p = 0
    c = 0
    for s in range(tok_ptr.shape[0] - 1):
        base = tok_ptr[s]
        n = tok_ptr[s + 1] - base - 1
        for h in range(n + 1):
            for m in range(n + 1):
                feat_ptr[p] = c
                p += 1
                if m == 0 or h == m:
                    continue
                k = _arc_ids(atoms, base, n, h, m, flags, table_keys, table_vals, idmap, hash_bits,
                             cache_keys, cache_vals, keys, ids)
                for j in range(k):
                    feat_ids[c + j] = ids[j]
                c += k
    feat_ptr[p] = c
    return c


@njit(cache=True)
def _hashed_id(key, slot, hash_bits):
    return np.int64(combine(key, slot) >> np.uint64(64 - hash_bits))


@njit(cache=True)
def _lookup_rows(keys, lo, hi, table_keys, table_vals, cache_keys, cache_vals, rows):
    """rows[j] = the alphabet row of keys[j] (-1: absent) for lo <= j < hi.

    The lookups of many keys are issued in one loop, apart from the weight
    reads that depend on them, so the processor overlaps their cache misses:
    reading each key's weights right after its lookup ran 3x slower.  A first
    loop that only loads each key's home slot overlaps them further (10%
    faster on the es test set); its result means nothing.
    """
    mask = np.uint64(table_keys.shape[0] - 1)
    touched = np.uint64(0)
    for j in range(lo, hi):  # first touch every key's home slot: independent loads, overlapped
        touched ^= table_keys[combine(keys[j], 0) & mask]
    for j in range(lo, hi):
        rows[j] = cached_lookup(table_keys, table_vals, cache_keys, cache_vals, keys[j])
    return touched


@njit(cache=True)
def _add_slot_weights(keys, c, table_keys, table_vals, hash_bits, cache_keys, cache_vals, slot_w, w, rows, acc):
    """acc[s] += the weights of keys[:c] in slot s, for s = 0 (alone) .. 15 (with direction/distance)."""
    if hash_bits > 0:
        for j in range(c):
            for slot in range(N_SLOTS):
                acc[slot] += w[_hashed_id(keys[j], slot, hash_bits)]
        return
    _lookup_rows(keys, 0, c, table_keys, table_vals, cache_keys, cache_vals, rows)
    for j in range(c):
        if rows[j] >= 0:
            for slot in range(N_SLOTS):
                acc[slot] += slot_w[rows[j], slot]


@njit(cache=True)
def _known_bits(rows, n_sets, shift):
    """Bits (4j + shift, 4j + shift + 1) for the rows of the word.tag and word keys of each pair set j.

    ``rows`` holds the lookups of :func:`_token_keys` (head or modifier)
    (three keys per set, the word.tag key first, then the word key); the
    other bits stay set.
    """
    bits = -1
    for j in range(n_sets):
        if rows[3 * j] < 0:
            bits &= ~(1 << (4 * j + shift))
        if rows[3 * j + 1] < 0:
            bits &= ~(2 << (4 * j + shift))
    return bits


_MEMO_BITS = 14
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


@njit(cache=True)
def _local_ids(atoms, base, n, col):
    """Each token's rank among the distinct values of column ``col`` in the sentence (root included)."""
    values = atoms[base : base + n + 1, col].copy()
    return np.searchsorted(np.unique(values), values)


@njit(cache=True)
def _arc_scores(atoms, base, n, flags, table_keys, table_vals, hash_bits, cache_keys, cache_vals, slot_w, w, out):
    """out[h, m] = w . phi(h -> m): the sums of the CSR features, computed with less work.

    Alphabet mode reads ``slot_w`` (:meth:`ArcFeaturizer.slot_weights`): one
    row of 16 weights per template key, so a key costs one table lookup and
    one row instead of a lookup, an id row and two scattered weights.  Hash
    mode reads ``w``.  Templates of the head alone, of the modifier alone and
    the bias are summed once per token and slot, not once per arc.  Local
    tag numbers are < 2^20, so sentences may have up to a million tokens.
    """
    keys = np.empty(_N_FIXED * (n + 1), dtype=np.uint64)  # the pair keys of all arcs from one head
    rows = np.empty(keys.shape[0], dtype=np.int64)
    head = np.zeros((n + 1, N_SLOTS))
    mod = np.zeros((n + 1, N_SLOTS))
    bias = np.zeros(N_SLOTS)
    known = np.full(2 * (n + 1), -1, dtype=np.int64)  # the bits of _pair_keys: head ones, then modifier ones
    for x in range(n + 1):
        _add_slot_weights(keys, _token_keys(atoms, base, x, flags, 0, keys, 0), table_keys, table_vals, hash_bits,
                          cache_keys, cache_vals, slot_w, w, rows, head[x])
        if hash_bits == 0:
            known[x] = _known_bits(rows, _n_sets(flags), 0)
        _add_slot_weights(keys, _token_keys(atoms, base, x, flags, 1, keys, 0), table_keys, table_vals, hash_bits,
                          cache_keys, cache_vals, slot_w, w, rows, mod[x])
        if hash_bits == 0:
            known[n + 1 + x] = _known_bits(rows, _n_sets(flags), 2)
    _add_slot_weights(keys, _bias_key(keys, 0), table_keys, table_vals, hash_bits, cache_keys, cache_vals,
                      slot_w, w, rows, bias)
    # In-between trigrams recur all over a sentence (on the es test set 3.7 M of them are 0.25 M
    # distinct keys): a small per-sentence memo maps (column, tags) to the key and its row.
    local_ids = (_local_ids(atoms, base, n, POS), _local_ids(atoms, base, n, CPOS))
    memo_tag = np.zeros(1 << _MEMO_BITS, dtype=np.uint64)
    memo_key = np.empty(1 << _MEMO_BITS, dtype=np.uint64)
    memo_row = np.empty(1 << _MEMO_BITS, dtype=np.int64)
    ends = np.empty(n + 2, dtype=np.int64)
    for h in range(n + 1):
        # the keys of every arc from h, then their lookups in one run, then the sums
        c = 0
        for m in range(n + 1):
            ends[m] = c
            if m == 0 or h == m:
                continue
            c = _pair_keys(atoms, base, n, h, m, flags, keys, c, known[h] & known[n + 1 + m])
        ends[n + 1] = c
        if hash_bits == 0:
            _lookup_rows(keys, 0, c, table_keys, table_vals, cache_keys, cache_vals, rows)
        for m in range(n + 1):
            if m == 0 or h == m:
                out[h, m] = 0.0
                continue
            slot = dirdist_slot(h, m)
            acc = head[h, 0] + head[h, slot] + mod[m, 0] + mod[m, slot] + bias[0] + bias[slot]
            # The two weight sums below stay written out: one shared helper for them made parsing
            # the es test set 2.3x slower (0.99 s -> 2.28 s).
            for j in range(ends[m], ends[m + 1]):
                if hash_bits > 0:
                    acc += w[_hashed_id(keys[j], 0, hash_bits)] + w[_hashed_id(keys[j], slot, hash_bits)]
                elif rows[j] >= 0:
                    acc += slot_w[rows[j], 0] + slot_w[rows[j], slot]
            for j in range(2):
                local = local_ids[j]
                for b in range(min(h, m) + 1, max(h, m)):
                    # (column, tag of h, tag of b, tag of m) as sentence-local tag numbers: exact, no hashing
                    tag = (((np.uint64(j) << np.uint64(20) | np.uint64(local[h])) << np.uint64(21)
                            | np.uint64(local[b])) << np.uint64(21) | np.uint64(local[m])) + np.uint64(1)
                    i = np.int64((tag * _GOLDEN) >> np.uint64(64 - _MEMO_BITS))
                    if memo_tag[i] != tag:
                        pcol = _BETWEEN_COLS[j]
                        key = _between_key(j, atoms[base + h, pcol], atoms[base + b, pcol], atoms[base + m, pcol])
                        memo_tag[i] = tag
                        memo_key[i] = key
                        memo_row[i] = -1 if hash_bits > 0 else table_lookup(table_keys, table_vals, key)
                    if hash_bits > 0:
                        key = memo_key[i]
                        acc += w[_hashed_id(key, 0, hash_bits)] + w[_hashed_id(key, slot, hash_bits)]
                    elif memo_row[i] >= 0:
                        acc += slot_w[memo_row[i], 0] + slot_w[memo_row[i], slot]
            out[h, m] = acc


@njit(cache=True)
def _gold_keys(tok_ptr, atoms, flags, head_rows):
    """Template keys of every gold arc and the direction/distance slot of each."""
    max_n = _max_length(tok_ptr)
    total = 0
    for s in range(tok_ptr.shape[0] - 1):
        n = tok_ptr[s + 1] - tok_ptr[s] - 1
        total += (_N_FIXED + _N_BETWEEN * n) * n
    out = np.empty(total, dtype=np.uint64)
    slots = np.empty(total, dtype=np.int64)
    buf = np.empty(_N_FIXED + _N_BETWEEN * max_n, dtype=np.uint64)
    c = 0
    for s in range(tok_ptr.shape[0] - 1):
        base = tok_ptr[s]
        n = tok_ptr[s + 1] - base - 1
        for m in range(1, n + 1):
            h = head_rows[base + m]
            k = arc_keys(atoms, base, n, h, m, flags, buf)
            out[c : c + k] = buf[:k]
            slots[c : c + k] = dirdist_slot(h, m)
            c += k
    return out[:c], slots[:c]


class ArcFeaturizer:
    """Maps arcs of encoded sentences to feature ids.

    ``mode="alphabet"`` (MSTParser's choice): the features are those of the
    gold arcs seen by :meth:`fit`, each template instance alone and with its
    direction/distance; other keys are dropped.  A template key is looked up
    once in a hash table whose row (``idmap``, ``N_SLOTS`` ids, -1 where
    absent) gives both ids.  ``mode="hash"``: every feature is hashed into
    ``2**hash_bits`` ids; nothing is dropped and collisions share a weight.

    Which columns the templates read is decided once from the training data
    (:meth:`for_corpus`) and saved with the model: LEMMA and FEATS templates
    only when most training tokens fill those columns, and a coarse tag made
    of the POS tag's first character when the CPOS column says nothing more
    than POS (as in the WSJ data).
    """

    def __init__(self, mode: str = "alphabet", hash_bits: int = 22, *, use_lemma: bool = True,
                 use_feats: bool = True, coarse_from_pos: bool = False,
                 keys: np.ndarray | None = None, codes: np.ndarray | None = None):
        if mode not in ("alphabet", "hash"):
            raise ValueError(f"feature mode must be 'alphabet' or 'hash', not {mode!r}")
        if mode == "hash" and not 8 <= hash_bits <= 30:
            raise ValueError(f"hash_bits must be between 8 and 30, not {hash_bits}")
        self.mode = mode
        self.hash_bits = hash_bits if mode == "hash" else 0
        self.use_lemma = bool(use_lemma)
        self.use_feats = bool(use_feats)
        self.coarse_from_pos = bool(coarse_from_pos)
        self.flags = (USE_LEMMA if self.use_lemma else 0) | (USE_FEATS if self.use_feats else 0)
        self.hasher = StringHasher()
        self._set_alphabet(np.zeros(0, np.uint64) if keys is None else keys,
                           np.zeros(0, np.int64) if codes is None else codes)

    def _set_alphabet(self, keys: np.ndarray, codes: np.ndarray) -> None:
        """``keys``: sorted template keys; ``codes``: sorted ``row * N_SLOTS + slot`` of each feature."""
        self.keys = np.ascontiguousarray(keys, dtype=np.uint64)
        self.codes = np.ascontiguousarray(codes, dtype=np.int64)
        if self.codes.size and (self.codes.min() < 0 or self.codes.max() >= self.keys.size * N_SLOTS):
            raise ValueError("feature codes do not match the template keys")
        self.table = KeyTable(self.keys)
        self._cache = new_cache()
        self.idmap = np.full((self.keys.size, N_SLOTS), -1, dtype=np.int32)
        self.idmap.reshape(-1)[self.codes] = np.arange(self.codes.size, dtype=np.int32)

    @classmethod
    def for_corpus(cls, sentences, mode: str = "alphabet", hash_bits: int = 22) -> "ArcFeaturizer":
        """A featurizer whose column choices suit the training ``sentences``."""
        tokens = max(sum(len(s) for s in sentences), 1)

        def filled(column: str) -> bool:
            return sum(v != "_" for s in sentences for v in getattr(s, column)) >= tokens / 2

        coarse_from_pos = all(c in ("_", p) for s in sentences for c, p in zip(s.cpos, s.pos))
        return cls(mode, hash_bits, use_lemma=filled("lemmas"), use_feats=filled("feats"),
                   coarse_from_pos=coarse_from_pos)

    @property
    def n_features(self) -> int:
        return (1 << self.hash_bits) if self.mode == "hash" else int(self.codes.size)

    def fit(self, encoded: EncodedCorpus, heads_list) -> "ArcFeaturizer":
        """Build the alphabet from the gold arcs (nothing to do in hash mode)."""
        if self.mode == "alphabet":
            keys, slots = _gold_keys(encoded.tok_ptr, encoded.atoms, self.flags, encoded.heads_rows(heads_list))
            plain, rows = np.unique(keys, return_inverse=True)
            codes = np.unique(np.concatenate([rows * N_SLOTS, rows * N_SLOTS + slots]))
            self._set_alphabet(plain, codes)
        return self

    def encode(self, sentences) -> EncodedCorpus:
        return encode(sentences, self.hasher, self.coarse_from_pos)

    def _tables(self):
        return (self.flags, self.table.table_keys, self.table.table_vals, self.idmap, self.hash_bits) + self._cache

    def part_features(self, encoded: EncodedCorpus) -> PartFeatures:
        """Compile every arc of every sentence into CSR arrays."""
        lengths = np.diff(encoded.tok_ptr)  # n + 1 per sentence
        part_ptr = np.zeros(len(encoded) + 1, dtype=np.int64)
        np.cumsum(lengths * lengths, out=part_ptr[1:])
        feat_ptr = np.empty(int(part_ptr[-1]) + 1, dtype=np.int64)
        feat_ids = np.empty(_entry_bound(encoded.tok_ptr), dtype=np.int32)
        used = _extract(encoded.tok_ptr, encoded.atoms, *self._tables(), feat_ptr, feat_ids)
        return PartFeatures(part_ptr, feat_ptr, feat_ids[:used].copy(), self.n_features)

    def slot_weights(self, w: np.ndarray) -> np.ndarray:
        """``w`` laid out as one row of ``N_SLOTS`` weights per template key (0 where no feature).

        Alphabet mode only (hash mode returns an empty array): :meth:`arc_scores`
        reads a key's weights from one row instead of through ``idmap``.
        """
        w = np.ascontiguousarray(w, dtype=np.float64)
        if w.shape != (self.n_features,):
            raise ValueError(f"{w.shape[0]} weights for {self.n_features} features")
        if self.mode == "hash":
            return np.zeros((0, N_SLOTS))
        out = np.zeros((self.keys.size, N_SLOTS))
        out.reshape(-1)[self.codes] = w
        return out

    def arc_scores(self, encoded: EncodedCorpus, s: int, w: np.ndarray,
                   slot_w: np.ndarray | None = None) -> np.ndarray:
        """Arc scores ``w . phi(h, m)`` of sentence ``s``, shape (n+1, n+1), without storing ids.

        Pass ``slot_w = self.slot_weights(w)`` when scoring many sentences with
        the same ``w``; it is computed here otherwise.
        """
        w = np.ascontiguousarray(w, dtype=np.float64)
        if slot_w is None:
            slot_w = self.slot_weights(w)
        n = encoded.length(s)
        out = np.empty((n + 1, n + 1))
        _arc_scores(encoded.atoms, encoded.tok_ptr[s], n, self.flags, self.table.table_keys, self.table.table_vals,
                    self.hash_bits, *self._cache, slot_w, w, out)
        return out

    def config(self) -> dict:
        return {"templates": TEMPLATES_VERSION, "mode": self.mode, "hash_bits": self.hash_bits,
                "use_lemma": self.use_lemma, "use_feats": self.use_feats, "coarse_from_pos": self.coarse_from_pos}
