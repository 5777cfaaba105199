"""Feature ids and scores of first-order arcs, from the template keys of :mod:`egnlp.features.arc_templates`.

Keys become ids through an alphabet (the keys of the gold arcs of the
training data, as MSTParser does) or by hashing into 2^bits buckets; each
key gives one feature alone and one conjoined with the arc's direction and
distance slot (McDonald, Crammer and Pereira 2005).

Training reads the ids of every arc as CSR arrays
(:meth:`ArcFeaturizer.part_features`): the parts of a sentence of n words
are the (n+1) x (n+1) cells [head, modifier] in row-major order; cells with
m = 0 or h = m have no features.  Parsing computes the same sums
``w . phi(h -> m)`` directly (:meth:`ArcFeaturizer.arc_scores`), without
storing ids, and can leave out the arcs whose coarse tags no gold arc
joined in their direction at their distance or farther (``prune``).

The kernels take their inputs in the named tuples :class:`SentenceAtoms`
(one sentence of an encoded corpus), :class:`KeyLookup` (how keys become
ids) and :class:`ArcWeights` (the weights in the layouts the scorer reads).
"""

from __future__ import annotations

import weakref
from typing import Iterator, NamedTuple, Sequence

import numpy as np
from numba import njit

from egnlp.features.arc_templates import (BETWEEN_COLUMNS, CPOS, FEATS, LEMMA, N_ATOMS, N_BETWEEN, N_FIXED, N_PAIR,
                                          N_SLOTS, POS, TAG_COLUMNS, TEMPLATES_VERSION, USE_FEATS, USE_LEMMA, WORD,
                                          EncodedCorpus, arc_keys, between_key, bias_key, dirdist_slot, encode,
                                          gold_alphabet, head_prefixes, max_length, modifier_atoms, n_pair_sets,
                                          prefix_key, prefix_pair_keys, token_keys)
from egnlp.features.csr import PartFeatures
from egnlp.features.hashing import (KeyTable, StringHasher, cached_lookup, combine, new_cache, popcount,
                                    prefetch, table_lookup)


class SentenceAtoms(NamedTuple):
    """One sentence of an :class:`EncodedCorpus`: rows ``atoms[base : base + n + 1]``, its root first."""

    atoms: np.ndarray  # (n_rows, N_ATOMS) int64: the atoms of the whole corpus
    base: int  # the row of the sentence's root
    n: int  # the number of words


class KeyLookup(NamedTuple):
    """How template keys become feature ids.

    Alphabet mode (``hash_bits == 0``): a key's row is its rank among the
    alphabet's keys, found in the open-addressing table of
    :class:`egnlp.features.hashing.KeyTable` behind the direct-mapped cache
    of :func:`egnlp.features.hashing.new_cache`; ``idmap[row, slot]`` is the
    id of the key in that slot, -1 where the alphabet has no such feature.
    Hash mode: the id of a key in a slot is the top ``hash_bits`` bits of
    ``combine(key, slot)`` and the arrays are not read.
    """

    table_keys: np.ndarray  # (capacity,) uint64, 0 in empty slots
    table_vals: np.ndarray  # (capacity,) int64: the row of each key (the scorer's: its packed ids)
    idmap: np.ndarray  # (n_keys, N_SLOTS) int32
    hash_bits: int  # 0 in alphabet mode
    cache: np.ndarray  # (2 cache size,) int64 (new_cache): CACHE_SIZE, or SCORE_CACHE_SIZE in the scorer's


class ArcWeights(NamedTuple):
    """The weight vectors the direct scorer reads (:meth:`ArcFeaturizer.arc_weights`).

    ``pair`` holds, at the id of a key's feature in slot s >= 1, that weight plus the weight of the key
    alone (slot 0) when the key has one, and at the id of slot 0 that weight alone: an arc's pair key
    then adds one number where it added the two weights, the same sum (pair_weights).
    """

    w: np.ndarray  # (n_features,) float64, read-only (:func:`read_only`)
    pair: np.ndarray  # (n_features,) float64, read-only; ``w`` itself in hash mode


class BetweenStore(NamedTuple):
    """The in-between weights that :func:`_between_counted` has summed, kept for every sentence of an
    encoded block (:meth:`ArcFeaturizer.block_arc_scores`) or made for one sentence (``n_tags`` 0).

    ``ids[row, j]`` numbers the tags of column ``BETWEEN_COLUMNS[j]`` over the block's rows (< ``n_tags``);
    ``memo_key``/``memo_row`` hold each trigram's key and packed ids (key 0: not looked up yet), at
    ``((j n_tags + head tag) n_tags + modifier tag) n_tags + tag between``; ``sums`` the weight of a
    trigram alone plus in a slot (NaN: not summed yet), at ``(((j n_tags + head tag) n_tags + modifier
    tag) N_SLOTS + slot) n_tags + tag between``.  ``merged``: the two columns hold the same atoms (the
    ``upos`` tag columns), so ``sums`` (j = 0) holds both trigrams' weights together.
    """

    ids: np.ndarray  # (n_rows, 2) int64
    n_tags: int
    merged: bool
    memo_key: np.ndarray  # (2 n_tags^3,) uint64
    memo_row: np.ndarray  # (2 n_tags^3,) int64
    sums: np.ndarray  # ((1 if merged else 2) n_tags^3 N_SLOTS,) float64


def between_store(ids: np.ndarray, n_tags: int, merged: bool) -> BetweenStore:
    """An empty :class:`BetweenStore` for tag numbers ``ids`` below ``n_tags`` (0: none, each sentence
    makes its own)."""
    cube = n_tags ** 3
    return BetweenStore(ids, n_tags, merged, np.zeros(2 * cube, dtype=np.uint64), np.empty(2 * cube, dtype=np.int64),
                        np.full((1 if merged else 2) * cube * N_SLOTS, np.nan))


class TokenStore(NamedTuple):
    """The weights of each token's templates alone, as the head and as the modifier, summed per slot
    (``_arc_scores``' ``head`` and ``mod`` rows) with its ``known`` bits, kept for the tokens of a block
    under one weight vector: a token whose atoms are all those of one kept copies its sums instead of
    looking its 20 keys up again.  A direct-mapped memo of ``TOKEN_MEMO_SIZE`` entries, indexed by a
    hash of the token's word, lemma, FEATS and POS and checked on all its atoms."""

    atoms: np.ndarray  # (size, N_ATOMS) int64: the atoms of the token kept in each entry
    filled: np.ndarray  # (size,) bool: whether the entry holds a token
    head: np.ndarray  # (size, N_SLOTS) float64
    mod: np.ndarray  # (size, N_SLOTS) float64
    known: np.ndarray  # (size, 2) int64: its head bits and its modifier bits (known_bits)


# Entries of a TokenStore: frequent words recur within a block and 4,096 keep most of them (pt_bosque dev x8:
# the direct scorer in 0.954 of the time, median ratio of 5 alternating rounds in process, and a whole-process
# parse in 0.977, farm-bench -n 10 pair median; 1,024 and 16,384 entries 0.967 in process), the same sums;
# 1.3 MiB, made once a block.
TOKEN_MEMO_SIZE = 1 << 12


def token_store(size: int = TOKEN_MEMO_SIZE) -> TokenStore:
    """An empty :class:`TokenStore` of ``size`` entries (a power of two)."""
    return TokenStore(np.empty((size, N_ATOMS), dtype=np.int64), np.zeros(size, dtype=np.bool_),
                      np.empty((size, N_SLOTS)), np.empty((size, N_SLOTS)), np.empty((size, 2), dtype=np.int64))


class SecondWeights(NamedTuple):
    """A second weight vector whose arc scores :func:`_arc_scores` sums in the same walk as its first's
    (:meth:`ArcFeaturizer.block_arc_score_pairs`): the keys, their lookups, the arcs ruled out and the
    stores' keys serve both, and what depends on the weights is kept here.  ``None`` in its place (one
    weight vector) is another type to Numba, which then compiles the kernels without any of the second
    sums (its branches on ``second is not None`` pruned before typing)."""

    weights: ArcWeights
    head: np.ndarray  # (TOKEN_MEMO_SIZE, N_SLOTS) float64: the TokenStore's head sums under these weights
    mod: np.ndarray  # (TOKEN_MEMO_SIZE, N_SLOTS) float64: its modifier sums
    sums: np.ndarray  # the sums of the first weights' BetweenStore under these weights (same shape, NaN: none)
    out: np.ndarray  # the scores, at the offsets of the first weights' scores


def _second_weights(weights: ArcWeights, tokens: TokenStore, store: BetweenStore, size: int) -> SecondWeights:
    """A :class:`SecondWeights` of ``weights`` beside the first weights' ``tokens`` and ``store`` (empty sums
    of its own) with ``size`` scores."""
    return SecondWeights(weights, np.empty_like(tokens.head), np.empty_like(tokens.mod),
                         np.full(store.sums.shape[0], np.nan), np.empty(size))


def read_only(w: np.ndarray) -> np.ndarray:
    """``w`` as a read-only array (a view when it is writable).  The scoring kernels take their weights
    this way whether they come from a model file (read-only) or from training: Numba compiles a kernel
    once per array type, and the direct arc scorer alone takes about 9 s to compile."""
    if w.flags.writeable:
        w = w.view()
        w.flags.writeable = False
    return w


@njit(cache=True, no_cpython_wrapper=True)
def hashed_id(key, slot, hash_bits):
    """Hash mode: the id of ``key`` in ``slot``."""
    return np.int64(combine(key, slot) >> np.uint64(64 - hash_bits))


@njit(cache=True, no_cpython_wrapper=True)
def _key_row(lookup, key):
    """Alphabet mode: the row of ``key`` (-1: absent) through ``lookup``'s cache."""
    return cached_lookup(lookup.table_keys, lookup.table_vals, lookup.cache, key)


# The id tables of training (ArcFeaturizer.id_tables): (capacity + capacity / FILTER_SHARE, 2) uint64
# arrays.  The first capacity rows hold a key (0: empty) and its ids packed as (first id << 16) | mask,
# bit s of the mask set when the key has a feature in slot s.  A key's ids are consecutive (the codes are
# sorted row by row), so its id in slot s is the first id plus the mask bits below s: one probe gives every
# id of a key, where the table and idmap of KeyLookup take three scattered reads.  Half empty, like
# KeyTable.  The rows after them are a filter of 16 bits a slot, one bit set per key, found by other bits
# of the key's hash (es: 861,077 keys, 32 MiB of slots and 4 MiB of filter): most keys looked up while a
# sentence is compiled are absent (pairs of words no gold arc joined), and the filter turns about 97% of
# those away without a read of the table's rows: es's training sentences compile in 1.87-2.04 s
# against 2.12-2.15 s without it.
FILTER_SHARE = 8


@njit(cache=True)
def _capacity(table):
    """The slots of an id table (a power of two), its rows less the filter's."""
    return table.shape[0] * FILTER_SHARE // (FILTER_SHARE + 1)


@njit(cache=True)
def _filter_bit(table, key):
    """(row, column, bit) of a key's bit in an id table's filter, from bits 24 and up of the key (a hash:
    its low bits are its home slot)."""
    capacity = _capacity(table)
    b = (key >> np.uint64(24)) & np.uint64(capacity * 128 // FILTER_SHARE - 1)
    return capacity + (b >> np.uint64(7)), (b >> np.uint64(6)) & np.uint64(1), b & np.uint64(63)


# The entries of the direct scorer's cache in front of its key table (2 MiB).  The tag n-grams, FEATS pairs
# and tag pairs of an arc (13 of its 20 keys on pt_bosque dev) recur across sentences in more distinct keys
# than the 2^14 entries of training's cache hold: with 2^17 the scorer took 0.94 of the time (pt_bosque
# dev x8 in process, median ratio of 10 alternating rounds; 2^18 0.95, 2^16 0.99), the same sums.
SCORE_CACHE_SIZE = 1 << 17

# The mask of arc scores that leave out no arc (ArcFeaturizer.block_arc_scores).
_NO_MASK = np.zeros(0, dtype=np.uint8)

# The idmap of a KeyLookup whose ids are not read (scoring, hash mode): the same Numba type as a real one.
_NO_IDMAP = np.full((0, N_SLOTS), -1, dtype=np.int32)


class IdTables:
    """The id tables of training (:meth:`ArcFeaturizer.id_tables`): ``all`` keys, and ``tags``, those of
    the templates over tags only (or ``all`` again)."""

    __slots__ = ("all", "tags", "__weakref__")

    def __init__(self, everything: np.ndarray, tags: np.ndarray):
        self.all = everything
        self.tags = tags


def build_id_table(keys: np.ndarray, codes: np.ndarray, rows: np.ndarray | None = None) -> np.ndarray:
    """The id table of an alphabet (sorted unique non-zero ``keys``, sorted ``codes``), of all its keys
    or of the keys at ``rows``."""
    keys = np.ascontiguousarray(keys, dtype=np.uint64)
    codes = np.ascontiguousarray(codes, dtype=np.int64)
    rows = np.arange(keys.size) if rows is None else np.unique(np.asarray(rows, dtype=np.int64))
    if rows.size and (rows[0] < 0 or rows[-1] >= keys.size):
        raise ValueError("rows outside the alphabet")
    capacity = 1 << max(4, int(2 * max(rows.size, 1) - 1).bit_length())
    table = np.zeros((capacity + capacity // FILTER_SHARE, 2), dtype=np.uint64)
    _fill_id_table(keys, codes, rows, table)
    return table


def empty_id_table() -> np.ndarray:
    """An id table without keys (the type of one where none is read: hash mode)."""
    return build_id_table(np.zeros(0, dtype=np.uint64), np.zeros(0, dtype=np.int64))


@njit(cache=True)
def packed_rows(n_keys, codes):
    """Each alphabet row's ids packed as (first id << 16) | mask (the layout of the id tables above;
    -1 for a row without features), from the sorted ``codes``."""
    first = np.zeros(n_keys, dtype=np.int64)
    mask = np.zeros(n_keys, dtype=np.int64)
    for i in range(codes.shape[0] - 1, -1, -1):
        row = codes[i] // N_SLOTS
        first[row] = i
        mask[row] |= 1 << (codes[i] % N_SLOTS)
    out = np.full(n_keys, -1, dtype=np.int64)
    for row in range(n_keys):
        if mask[row] != 0:
            out[row] = (first[row] << 16) | mask[row]
    return out


@njit(cache=True)
def pair_weights(codes, w):
    """:attr:`ArcWeights.pair` of the weights ``w`` of the features ``codes`` (sorted row * N_SLOTS + slot,
    a key's features side by side, its slot 0 first when it has one): the direct scorer's pair keys of
    pt_bosque dev x8 read one number for two, the arc scores in 0.972 of the time (median ratio of 5
    alternating rounds, a process each), the same sums (w[alone] + w[slot] is what was added).  Once per
    weight vector: a kernel, where NumPy took 20 ms for a million features."""
    out = np.empty(codes.shape[0])
    row = -1
    alone = -1  # the id of the current key's feature alone, -1: none
    for i in range(codes.shape[0]):
        if codes[i] // N_SLOTS != row:
            row = codes[i] // N_SLOTS
            alone = i if codes[i] % N_SLOTS == 0 else -1
        out[i] = w[i] if alone < 0 or alone == i else w[alone] + w[i]
    return out


@njit(cache=True)
def _fill_id_table(keys, codes, rows, table):
    packed = packed_rows(keys.shape[0], codes)
    wrap = np.uint64(_capacity(table) - 1)
    for row in rows:
        r, c, bit = _filter_bit(table, keys[row])
        table[r, c] |= np.uint64(1) << bit
        slot = keys[row] & wrap
        while table[slot, 0] != 0:
            slot = (slot + np.uint64(1)) & wrap
        table[slot, 0] = keys[row]
        table[slot, 1] = np.uint64(packed[row])


@njit(cache=True)
def find_ids(table, key):
    """The packed ids of the non-zero ``key`` in an id table, -1 when the alphabet lacks it."""
    r, c, bit = _filter_bit(table, key)
    if (table[r, c] >> bit) & np.uint64(1) == 0:
        return np.int64(-1)
    wrap = np.uint64(_capacity(table) - 1)
    slot = key & wrap
    while True:
        k = table[slot, 0]
        if k == key:
            return np.int64(table[slot, 1])
        if k == 0:
            return np.int64(-1)
        slot = (slot + np.uint64(1)) & wrap


@njit(cache=True)
def slot_id(packed, slot):
    """The id of the feature in ``slot`` of a key whose packed ids :func:`find_ids` gave, -1 if none."""
    mask = packed & 0xFFFF
    if (mask >> slot) & 1 == 0:
        return np.int64(-1)
    return (packed >> 16) + popcount(mask & ((1 << slot) - 1))  # the first id, then one per slot below


@njit(cache=True)
def _arc_ids(sentence, h, m, flags, lookup, keys, ids):
    """Feature ids of arc h -> m of ``sentence`` written to ``ids``; returns their number.

    ``sentence``: a :class:`SentenceAtoms`; ``lookup``: a :class:`KeyLookup`;
    ``keys`` (N_FIXED + N_BETWEEN * n,) uint64 is work space for
    :func:`arc_keys`; ``ids`` (2 * keys.shape[0],) int64.
    """
    k = arc_keys(sentence.atoms, sentence.base, sentence.n, h, m, flags, keys)
    slot = dirdist_slot(h, m)
    c = 0
    for j in range(k):
        key = keys[j]
        if lookup.hash_bits > 0:
            ids[c] = hashed_id(key, 0, lookup.hash_bits)
            ids[c + 1] = hashed_id(key, slot, lookup.hash_bits)
            c += 2
            continue
        row = _key_row(lookup, key)
        if row < 0:
            continue
        for fid in (lookup.idmap[row, 0], lookup.idmap[row, slot]):
            if fid >= 0:
                ids[c] = fid
                c += 1
    return c


@njit(cache=True)
def _entry_bound(tok_ptr):
    # An upper bound on the number of feature entries of all arcs.
    total = 0
    for s in range(tok_ptr.shape[0] - 1):
        n = tok_ptr[s + 1] - tok_ptr[s] - 1
        for h in range(n + 1):
            for m in range(1, n + 1):
                if h != m:
                    total += 2 * (N_FIXED + N_BETWEEN * (abs(h - m) - 1))
    return total


@njit(cache=True)
def _extract(tok_ptr, atoms, flags, lookup, feat_ptr, feat_ids):
    """Write the feature ids of every arc of the corpus as CSR arrays; return their number.

    ``feat_ptr`` (n_parts + 1,) int64 and ``feat_ids`` (at least
    :func:`_entry_bound` entries) int32, parts as in the module docstring;
    ``lookup``: a :class:`KeyLookup`.
    """
    max_n = max_length(tok_ptr)
    keys = np.empty(N_FIXED + N_BETWEEN * max_n, dtype=np.uint64)
    ids = np.empty(2 * keys.shape[0], dtype=np.int64)
    p = 0
    c = 0
    for s in range(tok_ptr.shape[0] - 1):
        base = tok_ptr[s]
        n = tok_ptr[s + 1] - base - 1
        sentence = SentenceAtoms(atoms, base, n)
        for h in range(n + 1):
            for m in range(n + 1):
                feat_ptr[p] = c
                p += 1
                if m == 0 or h == m:
                    continue
                k = _arc_ids(sentence, h, m, flags, lookup, keys, ids)
                for j in range(k):
                    feat_ids[c + j] = ids[j]
                c += k
    feat_ptr[p] = c
    return c


@njit(cache=True, no_cpython_wrapper=True)
def _lookup_rows(lookup, keys, lo, hi, rows):
    """rows[j] = the value of keys[j] in ``lookup``'s table (-1: absent) for lo <= j < hi: its alphabet row,
    or its packed ids in the scorer's lookup.

    The lookups of many keys are issued in one loop, apart from the weight
    reads that depend on them, so the processor overlaps their cache misses:
    reading each key's weights right after its lookup ran 3x slower.  A first
    loop asks for every key's cache entry and home slot (:func:`prefetch`):
    the direct scorer's arc scores of pt_bosque dev x8 in 0.91 to 0.935 of the
    time of a loop that loaded each home slot's key (which itself had made the
    es test set 10% faster), the same values.
    """
    table_keys, table_vals = lookup.table_keys, lookup.table_vals
    cache = lookup.cache
    mask = np.uint64(table_keys.shape[0] - 1)  # a key's low bits are its home slot (_table_slot)
    cache_mask = np.uint64(cache.shape[0] // 2 - 1)
    for j in range(lo, hi):
        prefetch(cache, 2 * np.int64(keys[j] & cache_mask))
        prefetch(table_keys, keys[j] & mask)
        prefetch(table_vals, keys[j] & mask)
    for j in range(lo, hi):
        rows[j] = _key_row(lookup, keys[j])


@njit(cache=True, no_cpython_wrapper=True)
def _add_slot_weights(keys, c, lookup, weights, rows, acc):
    """acc[s] += the weights of keys[:c] in slot s, for s = 0 (alone) .. 15 (with direction/distance).

    ``acc`` (N_SLOTS,) float64; ``lookup``: the scorer's :class:`KeyLookup`
    (:meth:`ArcFeaturizer.score_lookup`); ``weights``: an :class:`ArcWeights`;
    ``rows`` (at least c,) int64 receives the keys' packed ids (alphabet mode only).
    """
    if lookup.hash_bits == 0:
        _lookup_rows(lookup, keys, 0, c, rows)
    _slot_sums(keys, c, lookup.hash_bits, weights.w, rows, acc)


@njit(cache=True, no_cpython_wrapper=True)
def _slot_sums(keys, c, hash_bits, w, rows, acc):
    """acc[s] += the weights ``w`` of keys[:c] in slot s, the keys' packed ids in ``rows`` (alphabet mode):
    the sums of :func:`_add_slot_weights` once it has looked the keys up."""
    if hash_bits > 0:
        for j in range(c):
            for slot in range(N_SLOTS):
                acc[slot] += w[hashed_id(keys[j], slot, hash_bits)]
        return
    for j in range(c):
        packed = rows[j]
        if packed >= 0:
            fid = packed >> 16  # a key's ids are consecutive, in slot order
            for slot in range(N_SLOTS):
                if (packed >> slot) & 1:
                    acc[slot] += w[fid]
                    fid += 1


@njit(cache=True, no_cpython_wrapper=True)
def known_bits(rows, n_sets, shift):
    """Bits (4j + shift, 4j + shift + 1) for the rows of the word.tag and word keys of each pair set j.

    ``rows`` holds the lookups of :func:`token_keys` (head or modifier)
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


@njit(cache=True, no_cpython_wrapper=True)
def _word_pairs(prefixes, mod_atoms, known, h, n, flags, lookup, keys, rows, pairs, allowed):
    """pairs[m]: bit j set when the hw.mw key of pair set j of h -> m is in the alphabet (alphabet mode),
    for :func:`~egnlp.features.arc_templates.prefix_pair_keys`; ``known`` the bits of :func:`known_bits`.

    Every key of a gold arc is in an alphabet that :meth:`ArcFeaturizer.fit` built, so hw.mw absent rules
    out hw.hp.mw.mp, hw.mw.mp and hw.hp.mw, as in training (:func:`egnlp.features.arc_parts._pair_lookups`).
    Most word pairs were never seen: on pt_bosque dev the scorer makes 21.9 M lookups against 24.8 M, 6.3 M
    of them probes of the table (misses of the cache) against 8.9 M (counted), and takes 0.86 to 0.94 of
    the time (in process, medians of the ratios of 15 alternating rounds, four runs), the same bits.
    Gating the templates of hp.mp as well (hp.mw.mp, hw.hp.mp) took as long as before; training's three
    rounds of lookups over a fixed layout of the keys (every rule of arc_parts) 1.0 to 1.1 of the time.
    """
    size = n + 1
    n_sets = n_pair_sets(flags)
    c = 0
    for m in range(1, size):
        if m == h or not allowed[m]:
            continue
        bits = known[h] & known[size + m]
        for j in range(n_sets):
            if (bits >> (4 * j)) & 10 == 10:  # the head's word and the modifier's word are in the alphabet
                keys[c] = prefix_key(prefixes, mod_atoms, h, m, 7 * j + 5)
                c += 1
    _lookup_rows(lookup, keys, 0, c, rows)
    c = 0
    for m in range(1, size):
        if m == h or not allowed[m]:
            continue
        bits = known[h] & known[size + m]
        present = 0
        for j in range(n_sets):
            if (bits >> (4 * j)) & 10 == 10:
                if rows[c] >= 0:
                    present |= 1 << j
                c += 1
        pairs[m] = present


_MEMO_BITS = 14
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
# The in-between memo of a sentence with at most this many distinct tags in a column is a dense array
# over (column, head tag, modifier tag, tag between): 2 T^3 entries, 1 MiB of each array at 40.
_DENSE_TAGS = 40
# A sentence with at most this many distinct tags in a column has its words between counted
# (_between_counted), with a BetweenStore of its own unless its block's serves: 2 T^3 N_SLOTS sums,
# 1 MiB at 16 (pt_bosque dev has at most 14, the WSJ's 45 fine tags exceed it in long sentences).
_COUNTED_TAGS = 16
# A block with at most this many distinct tags in a column keeps one BetweenStore for all its sentences
# (ArcFeaturizer.block_arc_scores): at most 3.4 MiB of sums (pt_bosque has 17 tags and the root).
_BLOCK_TAGS = 24


@njit(cache=True)
def _local_ids(atoms, base, n, col):
    """Each token's rank among the distinct values of column ``col`` in the sentence (root included).

    The distinct values are kept sorted by insertion (a sentence has few distinct tags) and each token's
    rank found by bisection: the same ranks as ``np.searchsorted(np.unique(values), values)``, without
    NumPy's sort, whose compilation took about a fifth of a first parse's."""
    m = n + 1
    distinct = np.empty(m, dtype=atoms.dtype)
    k = 0
    for i in range(m):
        v = atoms[base + i, col]
        at = _bisect(distinct, k, v)
        if at < k and distinct[at] == v:
            continue
        for j in range(k, at, -1):
            distinct[j] = distinct[j - 1]
        distinct[at] = v
        k += 1
    ranks = np.empty(m, dtype=np.int64)
    for i in range(m):
        ranks[i] = _bisect(distinct, k, atoms[base + i, col])
    return ranks


@njit(cache=True, no_cpython_wrapper=True)
def _n_values(ranks):
    """The number of distinct values that :func:`_local_ids` ranked: its largest rank + 1 (a loop: NumPy's
    ``max`` compiled in a fifth of a second of a first parse)."""
    top = np.int64(-1)
    for rank in ranks:
        top = max(top, rank)
    return top + 1


@njit(cache=True, no_cpython_wrapper=True)
def _bisect(values, k, v):
    """The first index of the sorted ``values[:k]`` whose value is not below ``v``."""
    lo, hi = 0, k
    while lo < hi:
        mid = (lo + hi) >> 1
        if values[mid] < v:
            lo = mid + 1
        else:
            hi = mid
    return lo


@njit(cache=True, no_cpython_wrapper=True)
def _between_counted(atoms, base, n, lookup, w, out, ids, n_tags, merged, memo_key, memo_row, sums, second, out2,
                     sums2):
    """out[h, m] += the weights of the in-between trigrams of h -> m, for a sentence with at most
    ``_COUNTED_TAGS`` tags in a column, from the tables of a :class:`BetweenStore` (``ids`` (n + 1, 2):
    its rows of the store's tag numbers); with a :class:`SecondWeights` ``second`` (or None), out2[h, m] +=
    those of its weights too, their sums in ``sums2``.

    The words between h and m are counted by tag, going out from h one word at a time, and an arc adds
    each tag's count times its trigram's weights (alone and in the arc's slot), summed once per store;
    where the two tag columns are the same atoms (``merged``), both trigrams' weights are summed together.
    An arc then costs one term per distinct tag between instead of two per word, and with a store kept
    for a block of sentences the weights are looked up once per block instead of once per sentence: a
    whole-process parse of pt_bosque dev takes 0.81 of the CPU time of the word-by-word sums, of its
    eight copies 0.71 (pair medians of 8 and 6 runs), with the same output.  The sums are those of the
    training features up to rounding (the terms come in another order), and do not depend on the block.
    """
    hash_bits = lookup.hash_bits
    n_cols = 1 if merged else 2
    count = np.zeros((2, n_tags), dtype=np.int64)  # the words between h and m of each tag
    seen = np.empty((2, n_tags), dtype=np.int64)  # the tags counted, in the order they came
    where = np.empty((2, n_tags), dtype=np.int64)  # a word of each tag counted
    n_seen = np.zeros(2, dtype=np.int64)
    for h in range(n + 1):
        for step in (-1, 1):
            for j in range(n_cols):
                for k in range(n_seen[j]):
                    count[j, seen[j, k]] = 0
                n_seen[j] = 0
            b = h + step  # the word next to h, then each word between h and m in turn
            m = b + step
            while 1 <= m <= n:
                for j in range(n_cols):
                    t = ids[b, j]
                    if count[j, t] == 0:
                        seen[j, n_seen[j]] = t
                        where[j, t] = b
                        n_seen[j] += 1
                    count[j, t] += 1
                slot = dirdist_slot(h, m)
                acc = out[h, m]
                if second is not None:
                    acc2 = out2[h, m]
                for j in range(n_cols if acc != -np.inf else 0):  # none for a pruned arc (-inf)
                    at = (((j * n_tags + ids[h, j]) * n_tags + ids[m, j]) * N_SLOTS + slot) * n_tags
                    for k in range(n_seen[j]):
                        t = seen[j, k]
                        v = sums[at + t]
                        if v != v:  # not summed yet: the trigrams' weights, of one column or (merged) of both
                            v = 0.0
                            if second is not None:
                                v2 = 0.0
                            for c in range(j, 2 if merged else j + 1):
                                i = ((c * n_tags + ids[h, j]) * n_tags + ids[m, j]) * n_tags + t
                                if memo_key[i] == 0:  # keys are never 0
                                    pcol = BETWEEN_COLUMNS[c]
                                    memo_key[i] = between_key(c, atoms[base + h, pcol], atoms[base + where[j, t], pcol],
                                                               atoms[base + m, pcol])
                                    memo_row[i] = -1 if hash_bits > 0 else table_lookup(lookup.table_keys,
                                                                                         lookup.table_vals, memo_key[i])
                                # written out as in _add_between and _arc_scores: a helper for this miss path,
                                # which takes the weights, made the summed loop 1.2 to 1.4 times slower, and
                                # helpers shared with _add_between, inlined by Numba (inline="always"), took
                                # 1.02 to 1.08 times as long over the arc scores of es test x4 (paired runs)
                                if hash_bits > 0:
                                    key = memo_key[i]
                                    i0, i1 = hashed_id(key, 0, hash_bits), hashed_id(key, slot, hash_bits)
                                    v += w[i0] + w[i1]
                                    if second is not None:
                                        v2 += second.weights.w[i0] + second.weights.w[i1]
                                elif memo_row[i] >= 0:
                                    i0, i1 = slot_id(memo_row[i], 0), slot_id(memo_row[i], slot)
                                    v += (w[i0] if i0 >= 0 else 0.0) + (w[i1] if i1 >= 0 else 0.0)
                                    if second is not None:
                                        w2 = second.weights.w
                                        v2 += (w2[i0] if i0 >= 0 else 0.0) + (w2[i1] if i1 >= 0 else 0.0)
                            sums[at + t] = v
                            if second is not None:
                                sums2[at + t] = v2
                        acc += count[j, t] * v
                        if second is not None:
                            acc2 += count[j, t] * sums2[at + t]
                out[h, m] = acc
                if second is not None:
                    out2[h, m] = acc2
                b = m
                m += step


@njit(cache=True, no_cpython_wrapper=True)
def _add_between(atoms, base, n, lookup, w, out, store, second, out2):
    """out[h, m] += the weights of the in-between trigrams of h -> m: counted by tag
    (:func:`_between_counted`, with ``store``'s tables unless its ``n_tags`` is 0) in a sentence with at
    most ``_COUNTED_TAGS`` distinct tags in a column; in another, fine POS then coarse, each in the
    order of the words between.  With a :class:`SecondWeights` ``second`` (or None), out2[h, m] += those
    of its weights too.

    A pass of its own after the other templates: in the same loop as the pair templates, these sums
    took about twice as long (pt_bosque dev: the direct scorer in 0.88 to 0.94 of the time, the same bits).
    In-between trigrams recur all over a sentence (on the es test set 3.7 M of them are 0.25 M distinct
    keys): a per-sentence memo maps (column, tags) to the key and its row, indexed by the sentence-local
    tag numbers directly when the sentence has at most ``_DENSE_TAGS`` distinct tags in a column, and
    through a hash of them otherwise.
    """
    hash_bits = lookup.hash_bits
    local_ids = (_local_ids(atoms, base, n, POS), _local_ids(atoms, base, n, CPOS))
    n_tags = max(_n_values(local_ids[0]), _n_values(local_ids[1]))
    if n_tags <= _COUNTED_TAGS:
        if store.n_tags > 0:
            _between_counted(atoms, base, n, lookup, w, out, store.ids[base : base + n + 1], store.n_tags,
                             store.merged, store.memo_key, store.memo_row, store.sums, second, out2,
                             store.sums if second is None else second.sums)
        else:
            ids = np.empty((n + 1, 2), dtype=np.int64)
            for r in range(n + 1):  # a loop: a slice assignment compiles in Numba's shape-error messages (unicode)
                ids[r, 0] = local_ids[0][r]
                ids[r, 1] = local_ids[1][r]
            cube = n_tags * n_tags * n_tags
            sums = np.full((1 if store.merged else 2) * cube * N_SLOTS, np.nan)
            _between_counted(atoms, base, n, lookup, w, out, ids, n_tags, store.merged,
                             np.zeros(2 * cube, dtype=np.uint64), np.empty(2 * cube, dtype=np.int64), sums,
                             second, out2, sums if second is None else np.full(sums.shape[0], np.nan))
        return
    dense = n_tags <= _DENSE_TAGS
    size = 2 * n_tags * n_tags * n_tags if dense else 1 << _MEMO_BITS
    memo_tags = np.full(size, -1, dtype=np.int64)  # the tags (as one number) of each entry, -1: none
    memo_key = np.empty(size, dtype=np.uint64)
    memo_row = np.empty(size, dtype=np.int64)
    for h in range(n + 1):
        for m in range(1, n + 1):
            if abs(h - m) < 2:
                continue
            slot = dirdist_slot(h, m)
            acc = out[h, m]
            if acc == -np.inf:
                continue
            if second is not None:
                acc2 = out2[h, m]
            for j in range(2):
                local = local_ids[j]
                tags_hm = (j * n_tags + local[h]) * n_tags + local[m]
                for b in range(min(h, m) + 1, max(h, m)):
                    tags = tags_hm * n_tags + local[b]  # < 2 (n + 1)^3: exact up to a million words
                    i = tags if dense else np.int64((np.uint64(tags) * _GOLDEN) >> np.uint64(64 - _MEMO_BITS))
                    if memo_tags[i] != tags:
                        pcol = BETWEEN_COLUMNS[j]
                        key = between_key(j, atoms[base + h, pcol], atoms[base + b, pcol], atoms[base + m, pcol])
                        memo_tags[i] = tags
                        memo_key[i] = key
                        memo_row[i] = -1 if hash_bits > 0 else table_lookup(lookup.table_keys, lookup.table_vals, key)
                    if hash_bits > 0:
                        key = memo_key[i]
                        i0, i1 = hashed_id(key, 0, hash_bits), hashed_id(key, slot, hash_bits)
                        acc += w[i0] + w[i1]
                        if second is not None:
                            acc2 += second.weights.w[i0] + second.weights.w[i1]
                    elif memo_row[i] >= 0:
                        i0, i1 = slot_id(memo_row[i], 0), slot_id(memo_row[i], slot)
                        acc += (w[i0] if i0 >= 0 else 0.0) + (w[i1] if i1 >= 0 else 0.0)
                        if second is not None:
                            w2 = second.weights.w
                            acc2 += (w2[i0] if i0 >= 0 else 0.0) + (w2[i1] if i1 >= 0 else 0.0)
            out[h, m] = acc
            if second is not None:
                out2[h, m] = acc2


# The pair template of the coarse hp.mp key (pair set 1, SUFFIX and CPOS: template 7 j + 6, see N_PAIR).
_COARSE_TAG_PAIR = 7 * 1 + 6


@njit(cache=True, no_cpython_wrapper=True)
def _allowed_arcs(prefixes, mod_atoms, atoms, base, n, lookup, allowed):
    """allowed[h, m] = False (h >= 1) where no gold training arc joined h's and m's coarse tags in the
    direction of h -> m at its distance bin (:func:`dirdist_slot`) or a farther one: the alphabet's
    coarse hp.mp key (pair set 1) is absent, or has no feature in those slots.  Arcs from the root stay
    allowed.  Each tag pair is looked up once per sentence (``lookup`` is the scorer's: its values are
    packed ids, whose mask says which slots a key has).

    The rule lost the least UAS of four on the coarse tags on the tuning splits of five treebanks (mean
    0.11; the README's "Pruned decoding").  On their test sets (models trained with the defaults), arcs
    ruled out and UAS against every arc decoded: es 43% (83.05 -> 83.01), eu 22% (82.51 -> 82.47),
    wsj 31% (89.60 -> 89.54), nl-alpino 59% (82.19 -> 82.23), pt-bosque 61% (83.73 -> 83.74).  The slot
    alone rules out more and loses up to 0.21 (es); the fine tags as well lose 0.25 to 1.77.
    """
    local = _local_ids(atoms, base, n, CPOS)
    t = _n_values(local)
    memo = np.full(t * t, -2, dtype=np.int64)
    for h in range(1, n + 1):
        for m in range(1, n + 1):
            if h == m:
                continue
            i = local[h] * t + local[m]
            if memo[i] == -2:
                memo[i] = _key_row(lookup, prefix_key(prefixes, mod_atoms, h, m, _COARSE_TAG_PAIR))
            r = memo[i]
            slot = dirdist_slot(h, m)
            # the slots of the arc's direction (bits 1-7 or 9-15: distance bins 1-7) from its bin on
            if r < 0 or ((r >> (slot & 8)) & 0xFF) >> (slot & 7) == 0:
                allowed[h, m] = False


@njit(cache=True, no_cpython_wrapper=True)
def _arc_scores(sentence, flags, lookup, weights, store, tokens, prune, out, mask, second, out2):
    """out[h, m] = w . phi(h -> m): the sums of the CSR features, computed with less work.

    ``sentence``: a :class:`SentenceAtoms`; ``lookup``: a :class:`KeyLookup`;
    ``weights``: an :class:`ArcWeights`; ``store``: a :class:`BetweenStore`; ``tokens``: a
    :class:`TokenStore` made for ``weights``; ``out`` (n+1, n+1) float64.
    ``lookup`` gives each key its packed ids (:meth:`ArcFeaturizer.score_lookup`):
    a key's ids are consecutive, so a key costs one table lookup and its
    weights sit side by side in ``weights.w``.  Templates of the head alone, of the
    modifier alone and the bias are summed once per token and slot, not once
    per arc (and once per block for a token that recurs, kept in ``tokens``);
    the in-between trigrams follow in a pass of their own
    (:func:`_add_between`).  With ``prune`` (alphabet mode), the arcs that
    :func:`_allowed_arcs` rules out get -inf and cost no lookups; so do the arcs
    [head, modifier] where ``mask`` ((n+1)^2 uint8 row-major, or empty: none) is 0 (a
    cascade's arcs not kept).

    ``second``: a :class:`SecondWeights`, whose scores go to ``out2`` (n+1, n+1) in the same walk (each
    the bits its weights give alone), or None (``out2`` is then not written).
    """
    atoms, base, n = sentence.atoms, sentence.base, sentence.n
    hash_bits = lookup.hash_bits
    w, pair = weights.w, weights.pair
    keys = np.empty(N_FIXED * (n + 1), dtype=np.uint64)  # the pair keys of all arcs from one head
    rows = np.empty(keys.shape[0], dtype=np.int64)
    head = np.zeros((n + 1, N_SLOTS))
    mod = np.zeros((n + 1, N_SLOTS))
    bias = np.zeros(N_SLOTS)
    if second is not None:  # the same sums under the second weights
        head2 = np.zeros((n + 1, N_SLOTS))
        mod2 = np.zeros((n + 1, N_SLOTS))
        bias2 = np.zeros(N_SLOTS)
    known = np.full(2 * (n + 1), -1, dtype=np.int64)  # the bits of _pair_keys: head ones, then modifier ones
    memo_mask = np.uint64(tokens.filled.shape[0] - 1)
    for x in range(n + 1):
        # written out here: as a helper of its own it saved a fifth of what it saves here
        r = base + x
        entry = np.int64(combine(combine(combine(np.uint64(atoms[r, WORD]), atoms[r, LEMMA]), atoms[r, FEATS]),
                                 atoms[r, POS]) & memo_mask)
        hit = tokens.filled[entry]
        for c in range(N_ATOMS if hit else 0):
            if tokens.atoms[entry, c] != atoms[r, c]:
                hit = False
                break
        if hit:  # element by element: slices of the rows took as long as the lookups saved
            for slot in range(N_SLOTS):
                head[x, slot] = tokens.head[entry, slot]
                mod[x, slot] = tokens.mod[entry, slot]
            if second is not None:
                for slot in range(N_SLOTS):
                    head2[x, slot] = second.head[entry, slot]
                    mod2[x, slot] = second.mod[entry, slot]
            known[x] = tokens.known[entry, 0]
            known[n + 1 + x] = tokens.known[entry, 1]
            continue
        k = token_keys(atoms, base, x, flags, 0, keys, 0)
        _add_slot_weights(keys, k, lookup, weights, rows, head[x])
        if second is not None:
            _slot_sums(keys, k, hash_bits, second.weights.w, rows, head2[x])
        if hash_bits == 0:
            known[x] = known_bits(rows, n_pair_sets(flags), 0)
        k = token_keys(atoms, base, x, flags, 1, keys, 0)
        _add_slot_weights(keys, k, lookup, weights, rows, mod[x])
        if second is not None:
            _slot_sums(keys, k, hash_bits, second.weights.w, rows, mod2[x])
        if hash_bits == 0:
            known[n + 1 + x] = known_bits(rows, n_pair_sets(flags), 2)
        tokens.filled[entry] = True
        for c in range(N_ATOMS):
            tokens.atoms[entry, c] = atoms[r, c]
        for slot in range(N_SLOTS):
            tokens.head[entry, slot] = head[x, slot]
            tokens.mod[entry, slot] = mod[x, slot]
        if second is not None:
            for slot in range(N_SLOTS):
                second.head[entry, slot] = head2[x, slot]
                second.mod[entry, slot] = mod2[x, slot]
        tokens.known[entry, 0] = known[x]
        tokens.known[entry, 1] = known[n + 1 + x]
    k = bias_key(keys, 0)
    _add_slot_weights(keys, k, lookup, weights, rows, bias)
    if second is not None:
        _slot_sums(keys, k, hash_bits, second.weights.w, rows, bias2)
    ends = np.empty(n + 2, dtype=np.int64)
    prefixes = np.empty((n + 1, N_PAIR), dtype=np.uint64)  # the pair keys' head parts, and modifier atoms
    head_prefixes(atoms, base, n, flags, prefixes)
    mod_atoms = np.zeros((N_PAIR, 2, n + 1), dtype=np.int64)
    modifier_atoms(atoms, base, n, flags, mod_atoms)
    pairs = np.full(n + 1, -1, dtype=np.int64)  # the hw.mw keys in the alphabet (_word_pairs), all in hash mode
    allowed = np.ones((n + 1, n + 1), dtype=np.bool_)
    if prune and hash_bits == 0:
        _allowed_arcs(prefixes, mod_atoms, atoms, base, n, lookup, allowed)
    if mask.shape[0] > 0:
        for h in range(n + 1):
            for m in range(n + 1):
                if mask[h * (n + 1) + m] == 0:
                    allowed[h, m] = False
    for h in range(n + 1):
        if hash_bits == 0:
            _word_pairs(prefixes, mod_atoms, known, h, n, flags, lookup, keys, rows, pairs, allowed[h])
        # the keys of every arc from h, then their lookups in one run, then the sums
        c = 0
        for m in range(n + 1):
            ends[m] = c
            if m == 0 or h == m or not allowed[h, m]:
                continue
            c = prefix_pair_keys(prefixes, mod_atoms, h, m, flags, keys, c, known[h] & known[n + 1 + m], pairs[m])
        ends[n + 1] = c
        if hash_bits == 0:
            _lookup_rows(lookup, keys, 0, c, rows)
        for m in range(n + 1):
            if m == 0 or h == m:
                out[h, m] = 0.0
                if second is not None:
                    out2[h, m] = 0.0
                continue
            if not allowed[h, m]:
                out[h, m] = -np.inf
                if second is not None:
                    out2[h, m] = -np.inf
                continue
            slot = dirdist_slot(h, m)
            acc = head[h, 0] + head[h, slot] + mod[m, 0] + mod[m, slot] + bias[0] + bias[slot]
            if second is not None:
                acc2 = head2[h, 0] + head2[h, slot] + mod2[m, 0] + mod2[m, slot] + bias2[0] + bias2[slot]
            # This weight sum and _add_between's stay written out: one shared helper for them made
            # parsing the es test set 2.3x slower (0.99 s -> 2.28 s).
            for j in range(ends[m], ends[m + 1]):
                if hash_bits > 0:
                    i0, i1 = hashed_id(keys[j], 0, hash_bits), hashed_id(keys[j], slot, hash_bits)
                    acc += w[i0] + w[i1]
                    if second is not None:
                        acc2 += second.weights.w[i0] + second.weights.w[i1]
                elif rows[j] >= 0:  # w[slot 0] + w[slot], or one of them, read as one number
                    packed = rows[j]
                    if (packed >> slot) & 1:
                        i = (packed >> 16) + popcount(packed & ((1 << slot) - 1))
                        acc += pair[i]
                        if second is not None:
                            acc2 += second.weights.pair[i]
                    elif packed & 1:
                        acc += pair[packed >> 16]
                        if second is not None:
                            acc2 += second.weights.pair[packed >> 16]
            out[h, m] = acc
            if second is not None:
                out2[h, m] = acc2
    _add_between(atoms, base, n, lookup, w, out, store, second, out2)


# The arc scores that one call of _block_arc_scores makes at most (unless one sentence needs more): 4 MiB.
SCORES_AT_ONCE = 1 << 19


@njit(cache=True)
def _block_arc_scores(atoms, tok_ptr, flags, lookup, weights, store, tokens, prune, starts, out, masks, second):
    """The :func:`_arc_scores` of each sentence ``s`` of ``tok_ptr`` (a run of an :class:`EncodedCorpus`'s,
    ``starts`` (sentences + 1,) the offsets of their scores in ``out``), (n + 1) x (n + 1) at a time;
    ``masks``: each sentence's mask at the same offsets as its scores, or empty (none); ``second``: a
    :class:`SecondWeights` (its scores at the same offsets in ``second.out``) or None.

    One call for many sentences: a call of a kernel from Python checks and unpacks its arguments (here
    some thirty arrays) for about 8 microseconds; pt_bosque dev x8 makes 9,376 of them.
    """
    for s in range(tok_ptr.shape[0] - 1):
        size = tok_ptr[s + 1] - tok_ptr[s]
        scores = out[starts[s] : starts[s + 1]].reshape((size, size))
        _arc_scores(SentenceAtoms(atoms, tok_ptr[s], size - 1), flags, lookup, weights, store, tokens, prune,
                    scores, masks[starts[s] : starts[s + 1]] if masks.shape[0] > 0 else masks, second,
                    scores if second is None else second.out[starts[s] : starts[s + 1]].reshape((size, size)))


@njit(cache=True)
def _mask_codes(masks):
    """The codes row * N_SLOTS + slot, in order, of the slots set in each row's mask (bits 0..15)."""
    total = 0
    for row in range(masks.shape[0]):
        for slot in range(N_SLOTS):
            total += (masks[row] >> slot) & 1
    out = np.empty(total, dtype=np.int64)
    c = 0
    for row in range(masks.shape[0]):
        for slot in range(N_SLOTS):
            if (masks[row] >> slot) & 1:
                out[c] = row * N_SLOTS + slot
                c += 1
    return out


def _filled(sentences, column: str) -> bool:
    """Whether most tokens of ``sentences`` have a value other than ``_`` in ``column`` (an attribute)."""
    tokens = max(sum(len(s) for s in sentences), 1)
    return sum(v != "_" for s in sentences for v in getattr(s, column)) >= tokens / 2


def tag_columns(sentences) -> str:
    """The tag columns the arc templates read for these training sentences: ``both`` when POSTAG
    (XPOS) and an informative CPOSTAG (UPOS) are filled, ``upos`` when XPOS is not, else ``xpos``
    (the coarse tag from the POS tag's first character)."""
    informative_cpos = not all(c in ("_", p) for s in sentences for c, p in zip(s.cpos, s.pos))
    if not informative_cpos:
        return "xpos"
    return "both" if _filled(sentences, "pos") else "upos"


class ArcFeaturizer:
    """Maps arcs of encoded sentences to feature ids and scores.

    ``mode="alphabet"`` (MSTParser's choice): the features are those of the
    gold arcs seen by :meth:`fit`, each template instance alone and with its
    direction/distance; other keys are dropped.  A template key is looked up
    once in a hash table whose row (``idmap``, ``N_SLOTS`` ids, -1 where
    absent) gives both ids.  ``mode="hash"``: every feature is hashed into
    ``2**hash_bits`` ids; nothing is dropped and collisions share a weight.

    Which columns the templates read is decided once from the training data
    (:meth:`for_corpus`) and saved with the model: LEMMA and FEATS templates
    only when most training tokens fill those columns, and the tag columns
    (``tags``, see :func:`~egnlp.features.arc_templates.encode`): both where
    both say something, else the one that does (UPOS alone where XPOS is
    ``_``; XPOS with its first character as the coarse tag where the CPOS
    column repeats POS, as in the WSJ data).
    """

    def __init__(self, mode: str = "alphabet", hash_bits: int = 22, *, use_lemma: bool = True,
                 use_feats: bool = True, tags: str = "both",
                 keys: np.ndarray | None = None, codes: np.ndarray | None = None):
        if not isinstance(mode, str) or mode not in ("alphabet", "hash"):
            raise ValueError(f"feature mode must be 'alphabet' or 'hash', not {mode!r}")
        if mode == "hash" and (isinstance(hash_bits, bool) or not isinstance(hash_bits, (int, np.integer))
                               or not 8 <= hash_bits <= 30):
            raise ValueError(f"hash_bits must be between 8 and 30, not {hash_bits!r}")
        if mode == "hash" and ((keys is not None and len(keys)) or (codes is not None and len(codes))):
            raise ValueError("a hashing featurizer has no alphabet (keys, codes)")
        self.mode = mode
        self.hash_bits = hash_bits if mode == "hash" else 0
        self.use_lemma = bool(use_lemma)
        self.use_feats = bool(use_feats)
        if not isinstance(tags, str) or tags not in TAG_COLUMNS:
            raise ValueError(f"tags must be one of {', '.join(TAG_COLUMNS)}, not {tags!r}")
        self.tags = tags
        self.flags = (USE_LEMMA if self.use_lemma else 0) | (USE_FEATS if self.use_feats else 0)
        self.hasher = StringHasher()
        self._set_alphabet(np.zeros(0, np.uint64) if keys is None else keys,
                           np.zeros(0, np.int64) if codes is None else codes)

    def _set_alphabet(self, keys: np.ndarray, codes: np.ndarray) -> None:
        """``keys``: sorted template keys; ``codes``: sorted ``row * N_SLOTS + slot`` of each feature."""
        self.keys = np.ascontiguousarray(keys, dtype=np.uint64)
        self.codes = np.ascontiguousarray(codes, dtype=np.int64)
        if self.keys.ndim != 1 or self.codes.ndim != 1 or np.any(self.keys[1:] <= self.keys[:-1]) \
                or np.any(self.codes[1:] <= self.codes[:-1]):
            raise ValueError("template keys and feature codes must be sorted and unique")
        if self.keys.size and self.keys[0] == 0:
            raise ValueError("feature keys must be non-zero")
        if self.codes.size and (self.codes.min() < 0 or self.codes.max() >= self.keys.size * N_SLOTS):
            raise ValueError("feature codes do not match the template keys")
        if self.codes.size >= 2**31:
            raise ValueError("more than 2^31 - 1 features")
        self._cache = new_cache()
        # Built when first needed: parsing and the CSR arrays read the table and idmap, training reads
        # the id tables (arc_parts); one of them is enough at a time.  The id tables are held by the
        # feature sets that read them and only looked up here, so they go when training is done.
        self._table: KeyTable | None = None
        self._idmap: np.ndarray | None = None
        self._id_tables: weakref.ref | None = None
        self._score_lookup: KeyLookup | None = None
        self._tag_rows: np.ndarray | None = None  # set by fit: the rows of the keys of tag templates

    def __getstate__(self) -> dict:
        """The state a copy needs (pickled to a Dask worker or a process pool): the alphabet and
        settings, without the id-table reference (a weakref: it cannot be pickled, and a copy builds
        its own tables when it needs them)."""
        state = dict(self.__dict__)
        state["_id_tables"] = None
        state["_score_lookup"] = None
        return state

    @property
    def table(self) -> KeyTable:
        """The alphabet's key -> row table."""
        if self._table is None:
            self._table = KeyTable(self.keys)
        return self._table

    @property
    def idmap(self) -> np.ndarray:
        """(n_keys, N_SLOTS) int32: the id of each key's feature in each slot, -1 where there is none."""
        if self._idmap is None:
            idmap = np.full((self.keys.size, N_SLOTS), -1, dtype=np.int32)
            idmap.reshape(-1)[self.codes] = np.arange(self.codes.size, dtype=np.int32)
            self._idmap = idmap
        return self._idmap

    def id_tables(self) -> "IdTables":
        """The alphabet as open-addressing tables from key to all its ids (:func:`build_id_table`), for
        training: every key, and the keys of the templates over tags only (``_tag_template`` and the
        in-between trigrams) in a table of their own, small enough to stay in the processor's cache.
        The second is known after :meth:`fit` only; without it (an alphabet read from a model file)
        it is the first.  Empty in hash mode.  Shared while someone holds them, not kept otherwise."""
        tables = self._id_tables() if self._id_tables is not None else None
        if tables is None:
            everything = build_id_table(self.keys, self.codes)
            tags = everything if self._tag_rows is None else build_id_table(self.keys, self.codes, self._tag_rows)
            tables = IdTables(everything, tags)
            self._id_tables = weakref.ref(tables)
        return tables

    @classmethod
    def for_corpus(cls, sentences, mode: str = "alphabet", hash_bits: int = 22,
                   tags: str | None = None) -> "ArcFeaturizer":
        """A featurizer whose column choices suit the training ``sentences``; ``tags`` (both, upos,
        xpos) overrides the choice of tag columns."""
        return cls(mode, hash_bits, use_lemma=_filled(sentences, "lemmas"), use_feats=_filled(sentences, "feats"),
                   tags=tags or tag_columns(sentences))

    @property
    def n_features(self) -> int:
        return (1 << self.hash_bits) if self.mode == "hash" else int(self.codes.size)

    def fit(self, encoded: EncodedCorpus, heads_list) -> "ArcFeaturizer":
        """Build the alphabet from the gold arcs (nothing to do in hash mode)."""
        if self.mode == "alphabet":
            keys, masks = gold_alphabet(encoded.tok_ptr, encoded.atoms, self.flags, encoded.heads_rows(heads_list))
            order = np.argsort(keys)
            keys, masks = keys[order], masks[order]
            self._set_alphabet(keys, _mask_codes(masks))
            self._tag_rows = np.flatnonzero(masks >> N_SLOTS)
        return self

    def encode(self, sentences) -> EncodedCorpus:
        return encode(sentences, self.hasher, self.tags)

    def _key_lookup(self) -> KeyLookup:
        """The alphabet (key -> row, and each row's ids) or hash state the CSR extraction reads."""
        idmap = self.idmap if self.mode == "alphabet" else _NO_IDMAP
        return KeyLookup(self.table.table_keys, self.table.table_vals, idmap, self.hash_bits, self._cache)

    def part_features(self, encoded: EncodedCorpus) -> PartFeatures:
        """Compile every arc of every sentence into CSR arrays."""
        lengths = np.diff(encoded.tok_ptr)  # n + 1 per sentence
        part_ptr = np.zeros(len(encoded) + 1, dtype=np.int64)
        np.cumsum(lengths * lengths, out=part_ptr[1:])
        feat_ptr = np.empty(int(part_ptr[-1]) + 1, dtype=np.int64)
        feat_ids = np.empty(_entry_bound(encoded.tok_ptr), dtype=np.int32)
        used = _extract(encoded.tok_ptr, encoded.atoms, self.flags, self._key_lookup(), feat_ptr, feat_ids)
        return PartFeatures(part_ptr, feat_ptr, feat_ids[:used].copy(), self.n_features)

    def score_lookup(self) -> KeyLookup:
        """The direct scorer's lookup (built once): the alphabet's key table, its values the keys'
        packed ids (:func:`packed_rows`) instead of their rows, behind a cache of its own.  A key's
        weights are then read from the weight vector itself, where its ids sit side by side: no
        table of 16 weights per key (on es 100 MB, built at every model load)."""
        if self._score_lookup is None:
            cache = new_cache(SCORE_CACHE_SIZE)
            if self.mode == "alphabet":
                # a table of its own, filled with the packed ids directly (parsing never needs the rows)
                table = KeyTable(self.keys, packed_rows(self.keys.size, self.codes))
                self._score_lookup = KeyLookup(table.table_keys, table.table_vals, _NO_IDMAP, 0, cache)
            else:
                empty_keys, empty_vals = np.zeros(16, dtype=np.uint64), np.zeros(16, dtype=np.int64)
                self._score_lookup = KeyLookup(empty_keys, empty_vals, _NO_IDMAP, self.hash_bits, cache)
        return self._score_lookup

    def release_score_lookup(self) -> None:
        """Let go of :meth:`score_lookup`'s table (built again when next asked for): a training run that
        decoded with it, as a cascade's pruner does, need not hold it through the passes that follow (es:
        34 MB of RSS)."""
        self._score_lookup = None

    def arc_scores(self, encoded: EncodedCorpus, s: int, w: np.ndarray | ArcWeights, prune: bool = False
                   ) -> np.ndarray:
        """Arc scores ``w . phi(h, m)`` of sentence ``s``, shape (n+1, n+1), without storing ids.

        ``prune`` (alphabet mode; ignored in hash mode, whose features say nothing of the gold arcs):
        -inf for every arc h -> m (h >= 1) whose coarse tags no gold training arc joined in its
        direction at its distance bin or a farther one, read off the slots of the alphabet's coarse
        hp.mp features (:func:`_allowed_arcs`, with what it costs in accuracy); the other scores are
        the same.  On pt_bosque dev, with a model trained on its test file, 61% of the arcs go and the
        arc scores take about 0.55 of the time.
        """
        rows = encoded.atoms[encoded.tok_ptr[s] : encoded.tok_ptr[s + 1]]
        store = between_store(np.empty((0, 2), dtype=np.int64), 0, self._merged_tags(rows))
        return self._scores(encoded, s, self.arc_weights(w), store, token_store(), prune)

    def arc_score_pair(self, encoded: EncodedCorpus, s: int, w: np.ndarray | ArcWeights, v: np.ndarray | ArcWeights,
                       prune: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`arc_scores` of sentence ``s`` under ``w`` and under ``v``, bit for bit, in one walk of its arcs
        (by the kernel of :meth:`block_arc_score_pairs`, which a cascade's parse compiles alone)."""
        rows = encoded.atoms[encoded.tok_ptr[s] : encoded.tok_ptr[s + 1]]
        store = between_store(np.empty((0, 2), dtype=np.int64), 0, self._merged_tags(rows))
        tokens = token_store()
        size = encoded.length(s) + 1
        out = np.empty(size * size)
        second = _second_weights(self.arc_weights(v), tokens, store, out.shape[0])
        _block_arc_scores(encoded.atoms, encoded.tok_ptr[s : s + 2], self.flags, self.score_lookup(),
                          self.arc_weights(w), store, tokens, prune, np.array([0, size * size]), out, _NO_MASK,
                          second)
        return out.reshape(size, size), second.out.reshape(size, size)

    def block_arc_scores(self, encoded: EncodedCorpus, w: np.ndarray | ArcWeights, prune: bool = False,
                         masks: Sequence[np.ndarray] | None = None) -> Iterator[np.ndarray]:
        """The arc scores of every sentence of ``encoded`` in turn, equal to :meth:`arc_scores`'s.

        The in-between trigrams' weights are summed once for the whole block (one
        :class:`BetweenStore`) when it has at most ``_BLOCK_TAGS`` distinct tags in a column, and the
        templates of a token alone once for the tokens that recur (one :class:`TokenStore`).  The scores
        of many sentences are made by one call of a kernel (:func:`_block_arc_scores`), into one array
        of at most ``SCORES_AT_ONCE`` numbers unless a sentence needs more.  ``masks`` (one (n+1, n+1)
        mask [head, modifier] per sentence, a cascade's kept arcs): the others get -inf and cost no
        lookups, as the arcs that ``prune`` rules out do.
        """
        for scores, _ in self._block_scores(encoded, self.arc_weights(w), None, prune, masks):
            yield scores

    def block_arc_score_pairs(self, encoded: EncodedCorpus, w: np.ndarray | ArcWeights, v: np.ndarray | ArcWeights,
                              prune: bool = False) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """The arc scores of every sentence of ``encoded`` under two weight vectors ``w`` and ``v`` (a cascade's
        pruner and its model), each equal to :meth:`block_arc_scores`'s, in one walk of the arcs: the keys,
        their lookups and the arcs ``prune`` rules out serve both (:class:`SecondWeights`)."""
        yield from self._block_scores(encoded, self.arc_weights(w), self.arc_weights(v), prune, None)

    def _block_scores(self, encoded: EncodedCorpus, weights: ArcWeights, second: ArcWeights | None, prune: bool,
                      masks: Sequence[np.ndarray] | None) -> Iterator[tuple[np.ndarray, np.ndarray | None]]:
        """(the scores under ``weights``, those under ``second`` or None) of every sentence of ``encoded``:
        :meth:`block_arc_scores` and :meth:`block_arc_score_pairs`."""
        if masks is not None and len(masks) != len(encoded):
            raise ValueError(f"{len(masks)} masks for {len(encoded)} sentences")
        store = self._block_store(encoded)
        tokens = token_store()
        pair = None if second is None else _second_weights(second, tokens, store, 0)
        sizes = np.diff(encoded.tok_ptr)  # n + 1 a sentence
        ends = np.cumsum(sizes * sizes)
        first = 0
        while first < len(encoded):  # the sentences whose scores fill SCORES_AT_ONCE, or one longer sentence
            before = ends[first] - sizes[first] ** 2  # the scores of the sentences before ``first``
            last = max(int(np.searchsorted(ends, before + SCORES_AT_ONCE, "right")), first + 1)
            starts = np.concatenate(([0], ends[first:last] - before))
            out = np.empty(int(starts[-1]))
            flat = _NO_MASK
            if masks is not None:
                flat = np.empty(int(starts[-1]), dtype=np.uint8)
                for s in range(last - first):
                    mask = np.asarray(masks[first + s])
                    if mask.shape != (sizes[first + s],) * 2:
                        raise ValueError(f"sentence {first + s}: a mask of shape {mask.shape}")
                    flat[starts[s]:starts[s + 1]] = (mask != 0).reshape(-1)
            if pair is not None:  # the same stores, scores of their own
                pair = pair._replace(out=np.empty(out.shape[0]))
            _block_arc_scores(encoded.atoms, encoded.tok_ptr[first : last + 1], self.flags, self.score_lookup(),
                              weights, store, tokens, prune, starts, out, flat, pair)
            for s in range(last - first):
                shape = (sizes[first + s], sizes[first + s])
                yield (out[starts[s] : starts[s + 1]].reshape(shape),
                       None if pair is None else pair.out[starts[s] : starts[s + 1]].reshape(shape))
            first = last

    def _block_store(self, encoded: EncodedCorpus) -> BetweenStore:
        """The :class:`BetweenStore` of a block (``n_tags`` 0 when it has more than ``_BLOCK_TAGS`` tags)."""
        rows = encoded.atoms
        ids = np.empty((rows.shape[0], 2), dtype=np.int64)
        n_tags = 0
        for j, col in enumerate((POS, CPOS)):
            values, ids[:, j] = np.unique(rows[:, col], return_inverse=True)
            n_tags = max(n_tags, values.size)
        return between_store(ids, n_tags if n_tags <= _BLOCK_TAGS else 0, self._merged_tags(rows))

    def arc_weights(self, w: np.ndarray | ArcWeights) -> ArcWeights:
        """The weights ``w`` as the direct scorer reads them (:class:`ArcWeights`); one made already is
        returned as it is.  A model whose weights do not change keeps one
        (:class:`~egnlp.parser.parser_model.Parser`)."""
        if isinstance(w, ArcWeights):
            if w.w.shape != (self.n_features,):
                raise ValueError(f"{w.w.shape[0]} weights for {self.n_features} features")
            return w
        w = np.ascontiguousarray(w, dtype=np.float64)
        if w.shape != (self.n_features,):
            raise ValueError(f"{w.shape[0]} weights for {self.n_features} features")
        w = read_only(w)
        return ArcWeights(w, read_only(pair_weights(self.codes, w)) if self.mode == "alphabet" else w)

    def _merged_tags(self, rows: np.ndarray) -> bool:
        """Whether the two tag columns of these atoms are the same (the ``upos`` columns, as encoded)."""
        return self.tags == "upos" and np.array_equal(rows[:, POS], rows[:, CPOS])

    def _scores(self, encoded: EncodedCorpus, s: int, weights: ArcWeights, store: BetweenStore,
                tokens: TokenStore, prune: bool = False) -> np.ndarray:
        size = encoded.length(s) + 1
        out = np.empty(size * size)
        _block_arc_scores(encoded.atoms, encoded.tok_ptr[s : s + 2], self.flags, self.score_lookup(), weights,
                          store, tokens, prune, np.array([0, size * size]), out, _NO_MASK, None)
        return out.reshape(size, size)

    def config(self) -> dict:
        return {"templates": TEMPLATES_VERSION, "mode": self.mode, "hash_bits": self.hash_bits,
                "use_lemma": self.use_lemma, "use_feats": self.use_feats, "tags": self.tags}
