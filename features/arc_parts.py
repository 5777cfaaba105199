"""The arc part features of training, computed one sentence at a time instead of stored per part.

:class:`ArcPartFeatures` is the parser's :class:`~egnlp.training.structured_problem.PartFeatureSet`:
the parts of a sentence of n words are the (n+1) x (n+1) cells [head,
modifier] in row-major order, with the feature ids of
:meth:`~egnlp.features.arc_featurizer.ArcFeaturizer.part_features` (the CSR
arrays); what it keeps of the corpus is the atoms (48 bytes a token) and
the featurizer's id tables, so its memory does not grow with the number of
arcs.

A sentence is compiled (:func:`_compile`) when a call first needs it and kept
until another sentence is asked for: the scores and the sparse changes of one
EG visit share one compilation.  With a ``cache_bytes`` budget (a
:class:`CacheBudget`, which several part feature sets may share), compiled
sentences are also kept for later passes until the budget is spent (a
trainer that visits every sentence several times an iteration, ``egr``, then
compiles each once: compiling is about half the cost of a visit).  A compiled
sentence holds

- *entries*: template keys with their 16 ids (alone, then with each
  direction and distance slot; -1 where the alphabet has no such feature):
  the keys of each token alone as the head and as the modifier, the bias, and
  the distinct in-between trigrams (head tag, tag between, modifier tag).
  Scores sum an entry's weights once per token and slot; scatters sum the
  coefficients of all arcs per entry and slot first, as
  :meth:`~egnlp.features.arc_featurizer.ArcFeaturizer.arc_scores` does;
- the ids of the pair templates (bigrams, FEATS pairs, surrounding POS
  4-grams) of every cell: ``pair_ids[pair_ptr[r]:pair_ptr[r + 1]]``, those
  of each key alone and in the cell's slot that the alphabet has;
- the in-between trigrams as a table (column, head tag, modifier tag) ->
  block, block[tag between] -> entry, over sentence-local tag numbers.

Keys become ids through :meth:`ArcFeaturizer.id_tables` (one probe gives all
ids of a key; the keys of the templates over tags only, looked up on every
arc, have a small table of their own) or by hashing.  Pair keys are made
from per-token parts (:func:`~egnlp.features.arc_templates.head_pair_keys`)
and looked up one head and template at a time, each distinct key once per
sentence (a memo over classes of heads and modifiers that give the same
keys); in alphabet mode those that cannot be in the alphabet are not looked
up.  Every key of a gold arc is in an alphabet that :meth:`ArcFeaturizer.fit`
built, so: a head or modifier (word, tag) or word key that is absent rules
out the bigrams that contain it (as in ``arc_scores``); hw.mw absent rules out
hw.hp.mw.mp, hw.mw.mp and hw.hp.mw; hp.mp absent rules out hw.hp.mw.mp,
hp.mw.mp and hw.hp.mp; hw.hp.mw.mp needs the four trigrams; hc.hf.mc.mf
needs hf.mf.

Only the order of the sums differs from the CSR arrays; a test keeps ids,
scores, scatters and sparse changes equal on ``es`` and ``wsj`` in both
modes, and a short training run equal on both.
"""

from __future__ import annotations

import os
from typing import NamedTuple

import numpy as np
from numba import njit

from egnlp.features.arc_featurizer import SentenceAtoms, empty_id_table, find_ids, hashed_id, known_bits
from egnlp.features.arc_templates import (BETWEEN_COLUMNS, K_FEATS, N_PAIR, N_SLOTS, USE_FEATS, EncodedCorpus,
                                          between_key, bias_key, dirdist_slot, head_pair_keys, head_prefixes,
                                          modifier_atoms, n_pair_sets, pair_used, token_keys)
from egnlp.features.csr import gather_nonzero
from egnlp.features.hashing import combine, popcount


class CompiledSentence(NamedTuple):
    """The feature ids of one sentence (see the module docstring)."""

    n: int  # words
    n_keys: int  # keys of a token alone in one role: entry (2 x + role) n_keys + k, role 0 head, 1 modifier
    ent_ids: np.ndarray  # (n_ent, N_SLOTS) int32: tokens' entries, the bias (2 (n+1) n_keys), in-between ones
    pair_ptr: np.ndarray  # ((n+1)^2 + 1,) int64: cell r = h (n+1) + m has pair_ids[pair_ptr[r]:pair_ptr[r + 1]]
    pair_ids: np.ndarray  # int32, at least pair_ptr[-1] long
    tags: np.ndarray  # (2, n+1) int64: each token's local number in the in-between columns (fine, coarse POS)
    pair_block: np.ndarray  # (2, L, L) int32: the block of (column, head tag, modifier tag), -1 if none
    blocks: np.ndarray  # (n_blocks, L) int32: the entry of each tag between, -1 if the key has no feature


_NOT_NEEDED = -2
_NEEDED = -3


@njit(cache=True)
def _token_key_count(flags):
    return 3 * n_pair_sets(flags) + (1 if flags & USE_FEATS else 0)


@njit(cache=True)
def _set_entry(ent_ids, e, key, packed, hash_bits):
    """Entry e gets the ids of ``key``: hashed, or from its packed ids (-1: absent; see
    :func:`~egnlp.features.arc_featurizer.slot_id`)."""
    if hash_bits > 0:
        for slot in range(N_SLOTS):
            ent_ids[e, slot] = hashed_id(key, slot, hash_bits)
        return
    mask = packed & 0xFFFF if packed >= 0 else 0
    fid = packed >> 16
    for slot in range(N_SLOTS):
        if (mask >> slot) & 1:
            ent_ids[e, slot] = fid
            fid += 1
        else:
            ent_ids[e, slot] = -1


_UNKNOWN = -2
_NO_MASK = np.zeros(0, dtype=np.uint8)  # scores of every cell (_scores)
_QUEUED = -3


@njit(cache=True)
def _find_row(table, keys, h, gate, memo, mod_class, out, queue):
    """out[m] = the packed ids of keys[m] (-1: absent) for the modifiers m of head h where gate[m] is set,
    -1 elsewhere.  ``memo`` holds what is known of this head's class per modifier class ``mod_class[m]``
    (:data:`_UNKNOWN` where nothing): a key is looked up once per sentence.  The lookups run in one loop
    of their own, so that their cache misses overlap; ``queue`` (n+1,) int64 is work space."""
    size = out.shape[0]
    count = 0
    for m in range(size):
        if gate[m] and m != h and m != 0 and memo[mod_class[m]] == _UNKNOWN:
            memo[mod_class[m]] = _QUEUED
            queue[count] = m
            count += 1
    for q in range(count):
        m = queue[q]
        memo[mod_class[m]] = find_ids(table, keys[m])
    for m in range(size):
        out[m] = memo[mod_class[m]] if gate[m] and m != h and m != 0 else np.int64(-1)


@njit(cache=True)
def pair_classes(first, second, out):
    """out[x] = the class of the pair (first[x], second[x]): equal pairs share one, numbered from 0 in
    order of first occurrence; returns the number of classes.  Exact (pairs are compared, not hashed)."""
    size = first.shape[0]
    capacity = 16
    while capacity < 2 * size:
        capacity *= 2
    wrap = np.uint64(capacity - 1)
    slot_a = np.empty(capacity, dtype=first.dtype)
    slot_b = np.empty(capacity, dtype=second.dtype)
    slot_class = np.full(capacity, -1, dtype=np.int64)
    count = 0
    for x in range(size):
        at = combine(combine(np.uint64(0), np.int64(first[x])), np.int64(second[x])) & wrap
        while slot_class[at] >= 0 and (slot_a[at] != first[x] or slot_b[at] != second[x]):
            at = (at + np.uint64(1)) & wrap
        if slot_class[at] < 0:
            slot_a[at] = first[x]
            slot_b[at] = second[x]
            slot_class[at] = count
            count += 1
        out[x] = slot_class[at]
    return count


@njit(cache=True)
def _pair_memo(prefixes, mod_atoms, flags, head_class, mod_class, start):
    """The memo of a sentence's pair lookups: each token has a class as the head (its prefix state) and
    as the modifier (its atoms) of every pair template, such that a key is a function of the two, and
    the memo has one cell per template and pair of classes.  Writes head_class[k, x], mod_class[k, x],
    start[k] (where template k's cells start, in order of head class then modifier class) and
    start[N_PAIR + 1 + k] (its number of modifier classes); returns the memo's size."""
    size = prefixes.shape[0]
    zeros = np.zeros(size, dtype=np.uint64)
    total = 0
    for k in range(N_PAIR):
        start[k] = total
        start[N_PAIR + 1 + k] = 0
        if pair_used(k, flags):
            heads = pair_classes(prefixes[:, k].copy(), zeros, head_class[k])
            start[N_PAIR + 1 + k] = pair_classes(mod_atoms[k, 0], mod_atoms[k, 1], mod_class[k])
            total += heads * start[N_PAIR + 1 + k]
    start[N_PAIR] = total
    return total


@njit(cache=True)
def _look(table, k, h, keys, gate, memo, row, n_mod, mod_class, packed, queue, allowed):
    """packed[k] for head h through :func:`_find_row`, with template k's memo row of h's class; only the
    modifiers m that ``allowed[m]`` lets h take are looked up (``gate`` is narrowed to them)."""
    for m in range(gate.shape[0]):
        gate[m] = gate[m] and allowed[m]
    _find_row(table, keys[k], h, gate, memo[row[k]:row[k] + n_mod[k]], mod_class[k], packed[k], queue)


@njit(cache=True)
def _pair_lookups(table, tag_table, keys, known, h, flags, memo, head_class, mod_class, start, packed, gate, queue,
                  allowed):
    """packed[k, m]: the packed ids of pair template k of h -> m (-1: absent, or ruled out without a
    lookup), for every m; ``keys`` from :func:`head_pair_keys`, the memo from :func:`_pair_memo`.

    Three rounds: hw.mw, hp.mp, hf.mf and the 4-grams; then the trigrams those allow; then hw.hp.mw.mp
    where its four trigrams are there (see the module docstring).  Templates over tags only are looked
    up in ``tag_table``.  ``known``: the bits of :func:`known_bits`, the heads' then the modifiers';
    ``gate`` (n+1,) bool and ``queue`` (n+1,) int64 are work space.  ``allowed`` (n+1,) bool: the modifiers
    whose pairs are looked up (the others get -1: a cascade's arcs not kept, whose parts are not laid out).
    """
    size = keys.shape[1]
    head_bits = known[h]
    n_mod = start[N_PAIR + 1:]
    row = start[:N_PAIR] + head_class[:, h] * n_mod  # where this head's memo row of each template starts
    for j in range(n_pair_sets(flags)):
        k = 7 * j
        for m in range(size):  # the head's word and the modifier's word
            gate[m] = (((head_bits & known[size + m]) >> (4 * j)) & 10) == 10
        _look(table, k + 5, h, keys, gate, memo, row, n_mod, mod_class, packed, queue, allowed)
        gate[:] = True
        _look(tag_table, k + 6, h, keys, gate, memo, row, n_mod, mod_class, packed, queue, allowed)
    gate[:] = True
    for k in range(K_FEATS + 1, N_PAIR):
        if pair_used(k, flags):
            _look(tag_table, k, h, keys, gate, memo, row, n_mod, mod_class, packed, queue, allowed)
    for j in range(n_pair_sets(flags)):
        k = 7 * j
        for m in range(size):  # hp.mp and the modifier's word.tag
            gate[m] = packed[k + 6, m] >= 0 and ((known[size + m] >> (4 * j)) & 4) != 0
        _look(table, k + 1, h, keys, gate, memo, row, n_mod, mod_class, packed, queue, allowed)
        for m in range(size):  # hw.mw and the modifier's word.tag
            gate[m] = packed[k + 5, m] >= 0 and ((known[size + m] >> (4 * j)) & 4) != 0
        _look(table, k + 2, h, keys, gate, memo, row, n_mod, mod_class, packed, queue, allowed)
        head_pair = ((head_bits >> (4 * j)) & 1) != 0  # the head's word.tag
        for m in range(size):
            gate[m] = head_pair and packed[k + 6, m] >= 0
        _look(table, k + 3, h, keys, gate, memo, row, n_mod, mod_class, packed, queue, allowed)
        for m in range(size):
            gate[m] = head_pair and packed[k + 5, m] >= 0
        _look(table, k + 4, h, keys, gate, memo, row, n_mod, mod_class, packed, queue, allowed)
        for m in range(size):
            gate[m] = packed[k + 1, m] >= 0 and packed[k + 2, m] >= 0 and packed[k + 3, m] >= 0 \
                and packed[k + 4, m] >= 0
        _look(table, k, h, keys, gate, memo, row, n_mod, mod_class, packed, queue, allowed)
    if flags & USE_FEATS:
        for m in range(size):
            gate[m] = packed[K_FEATS + 1, m] >= 0
        _look(tag_table, K_FEATS, h, keys, gate, memo, row, n_mod, mod_class, packed, queue, allowed)


@njit(cache=True)
def _pair_ids(sentence, flags, table, tag_table, hash_bits, known, pair_ptr, pair_ids, allowed):
    """The ids of the pair templates of every cell into ``pair_ptr`` / ``pair_ids`` (room for
    2 N_PAIR ids a cell), those of a key alone then in the cell's slot, templates in key order; in
    alphabet mode only of the cells [head, modifier] that ``allowed`` (n+1, n+1) bool allows."""
    atoms, base, n = sentence.atoms, sentence.base, sentence.n
    size = n + 1
    prefixes = np.empty((size, N_PAIR), dtype=np.uint64)
    head_prefixes(atoms, base, n, flags, prefixes)
    mod_atoms = np.zeros((N_PAIR, 2, size), dtype=np.int64)
    modifier_atoms(atoms, base, n, flags, mod_atoms)
    keys = np.zeros((N_PAIR, size), dtype=np.uint64)
    packed = np.full((N_PAIR, size), -1, dtype=np.int64)
    gate = np.empty(size, dtype=np.bool_)
    queue = np.empty(size, dtype=np.int64)
    head_class = np.zeros((N_PAIR, size), dtype=np.int64)
    mod_class = np.zeros((N_PAIR, size), dtype=np.int64)
    start = np.zeros(2 * N_PAIR + 1, dtype=np.int64)
    memo = np.empty(0, dtype=np.int64)
    if hash_bits == 0:
        memo = np.full(_pair_memo(prefixes, mod_atoms, flags, head_class, mod_class, start), _UNKNOWN,
                       dtype=np.int64)
    c = 0
    for h in range(size):
        head_pair_keys(prefixes, mod_atoms, h, flags, keys)
        if hash_bits == 0:
            _pair_lookups(table, tag_table, keys, known, h, flags, memo, head_class, mod_class, start, packed, gate,
                          queue, allowed[h])
        for m in range(size):
            pair_ptr[h * size + m] = c
            if m == 0 or m == h:
                continue
            slot = dirdist_slot(h, m)
            below = (1 << slot) - 1
            for k in range(N_PAIR):
                if hash_bits > 0:
                    if pair_used(k, flags):
                        pair_ids[c] = hashed_id(keys[k, m], 0, hash_bits)
                        pair_ids[c + 1] = hashed_id(keys[k, m], slot, hash_bits)
                        c += 2
                else:  # without branches: the ids of a key alone and in the slot, where it has them
                    p = packed[k, m]
                    mask = p & 0xFFFF if p >= 0 else 0
                    pair_ids[c] = p >> 16
                    c += mask & 1
                    pair_ids[c] = (p >> 16) + popcount(mask & below)
                    c += (mask >> slot) & 1
    pair_ptr[size * size] = c


@njit(cache=True)
def _token_keys_of(sentence, flags, table, hash_bits, keys, packed, known):
    """The keys of each token alone (entry (2 x + role) n_keys + k) and the bias (the last entry) with
    their packed ids, and the known bits of :func:`~egnlp.features.arc_featurizer.known_bits`, the
    heads' then the modifiers'."""
    atoms, base, n = sentence.atoms, sentence.base, sentence.n
    size = n + 1
    n_keys = _token_key_count(flags)
    for x in range(size):
        for role in range(2):
            at = (2 * x + role) * n_keys
            token_keys(atoms, base, x, flags, role, keys, at)
            if hash_bits == 0:
                for k in range(n_keys):
                    packed[at + k] = find_ids(table, keys[at + k])
                known[role * size + x] = known_bits(packed[at:], n_pair_sets(flags), 2 * role)
    last = keys.shape[0] - 1
    bias_key(keys, last)
    if hash_bits == 0:
        packed[last] = find_ids(table, keys[last])


@njit(cache=True)
def _between_blocks(atoms, base, n):
    """The in-between trigrams of a sentence: each token's local tag numbers (2, n+1) and the atom of
    each (2, L); pair_block (2, L, L) numbering the (column, head tag, modifier tag) of the arcs that
    have words between; blocks (n_blocks, L), _NEEDED for each tag found between such an arc's ends
    (_NOT_NEEDED elsewhere); block_of (n_blocks, 3) the column and tags of each block; and the number
    needed."""
    size = n + 1
    tags = np.empty((2, size), dtype=np.int64)
    values = np.zeros((2, size), dtype=np.int64)
    n_tags = 1
    for j in range(2):
        column = atoms[base: base + size, BETWEEN_COLUMNS[j]].copy()
        distinct = np.unique(column)
        tags[j] = np.searchsorted(distinct, column)
        values[j, : distinct.shape[0]] = distinct
        n_tags = max(n_tags, distinct.shape[0])
    pair_block = np.full((2, n_tags, n_tags), -1, dtype=np.int32)
    n_blocks = 0
    for h in range(size):
        for m in range(1, size):
            if abs(h - m) >= 2:
                for j in range(2):
                    if pair_block[j, tags[j, h], tags[j, m]] < 0:
                        pair_block[j, tags[j, h], tags[j, m]] = n_blocks
                        n_blocks += 1
    blocks = np.full((n_blocks, n_tags), _NOT_NEEDED, dtype=np.int32)
    block_of = np.empty((n_blocks, 3), dtype=np.int64)
    needed = 0
    for h in range(size):
        for m in range(1, size):
            if abs(h - m) >= 2:
                for j in range(2):
                    pb = pair_block[j, tags[j, h], tags[j, m]]
                    block_of[pb, 0] = j
                    block_of[pb, 1] = tags[j, h]
                    block_of[pb, 2] = tags[j, m]
                    for b in range(min(h, m) + 1, max(h, m)):
                        if blocks[pb, tags[j, b]] == _NOT_NEEDED:
                            blocks[pb, tags[j, b]] = _NEEDED
                            needed += 1
    return tags, values[:, :n_tags].copy(), pair_block, blocks, block_of, needed


@njit(cache=True)
def _entries(tok_keys, tok_packed, values, blocks, block_of, needed, table, hash_bits):
    """The ids of every entry: the tokens' keys and the bias, then the in-between trigrams that
    :func:`_between_blocks` marked and the alphabet has (``blocks`` gets their entry numbers, -1
    for the others).  Returns the ids (n_ent, N_SLOTS) int32 and what they were made from, (n_ent,)
    int64: the packed ids, or in hash mode the key's bits (:func:`_expand_entries` makes the ids again)."""
    n_tok = tok_keys.shape[0]
    ent_ids = np.empty((n_tok + needed, N_SLOTS), dtype=np.int32)
    ent_src = np.empty(n_tok + needed, dtype=np.int64)
    for e in range(n_tok):
        _set_entry(ent_ids, e, tok_keys[e], tok_packed[e], hash_bits)
        ent_src[e] = np.int64(tok_keys[e]) if hash_bits > 0 else tok_packed[e]
    e = n_tok
    for pb in range(blocks.shape[0]):
        j, th, tm = block_of[pb, 0], block_of[pb, 1], block_of[pb, 2]
        for t in range(blocks.shape[1]):
            if blocks[pb, t] != _NEEDED:
                continue
            key = between_key(j, values[j, th], values[j, t], values[j, tm])
            packed = find_ids(table, key) if hash_bits == 0 else np.int64(0)
            if packed >= 0:
                _set_entry(ent_ids, e, key, packed, hash_bits)
                ent_src[e] = np.int64(key) if hash_bits > 0 else packed
                blocks[pb, t] = e
                e += 1
            else:
                blocks[pb, t] = -1
    return ent_ids[:e], ent_src[:e]


@njit(cache=True)
def _expand_entries(ent_src, hash_bits):
    """The (n_ent, N_SLOTS) int32 ids of entries kept as :func:`_entries`' sources (8 bytes an entry
    instead of 64)."""
    ent_ids = np.empty((ent_src.shape[0], N_SLOTS), dtype=np.int32)
    for e in range(ent_src.shape[0]):
        _set_entry(ent_ids, e, np.uint64(ent_src[e]), ent_src[e], hash_bits)
    return ent_ids


@njit(cache=True)
def _compile(sentence, flags, table, tag_table, hash_bits, pair_ids, allowed):
    """Compile one sentence (a :class:`~egnlp.features.arc_featurizer.SentenceAtoms`).

    ``table`` and ``tag_table``: the tables of :meth:`ArcFeaturizer.id_tables` in alphabet mode
    (``hash_bits`` 0), unused in hash mode; ``pair_ids`` (int32,
    room for 2 N_PAIR ids a cell) receives the pair ids; ``allowed`` (n+1, n+1) bool: the cells whose pair
    templates are looked up (alphabet mode), every one but for a cascade's sentence.  Returns the other fields of a
    :class:`CompiledSentence` after ``n``, in order, with the entries' sources after ``ent_ids``.
    """
    size = sentence.n + 1
    n_keys = _token_key_count(flags)
    tok_keys = np.empty(2 * size * n_keys + 1, dtype=np.uint64)
    tok_packed = np.full(tok_keys.shape[0], -1, dtype=np.int64)
    known = np.full(2 * size, -1, dtype=np.int64)
    _token_keys_of(sentence, flags, table, hash_bits, tok_keys, tok_packed, known)
    pair_ptr = np.empty(size * size + 1, dtype=np.int64)
    _pair_ids(sentence, flags, table, tag_table, hash_bits, known, pair_ptr, pair_ids, allowed)
    tags, values, pair_block, blocks, block_of, needed = _between_blocks(sentence.atoms, sentence.base, sentence.n)
    ent_ids, ent_src = _entries(tok_keys, tok_packed, values, blocks, block_of, needed, tag_table, hash_bits)
    return n_keys, ent_ids, ent_src, pair_ptr, tags, pair_block, blocks


@njit(cache=True)
def _entry_weights(ent_ids, w, out):
    """out[e, slot] = the weight of entry e's id in slot (0 where none)."""
    for e in range(ent_ids.shape[0]):
        for slot in range(N_SLOTS):
            fid = ent_ids[e, slot]
            out[e, slot] = w[fid] if fid >= 0 else 0.0


@njit(cache=True)
def _scores(cs, ws, outs, mask):
    """outs[t] (n+1, n+1) = ws[t] . phi(h -> m) of the compiled sentence ``cs`` for each weight vector of
    the tuple ``ws``: the sums of the CSR features in another order (that of ArcFeaturizer.arc_scores);
    0 on the cells where ``mask`` ((n+1)^2 uint8, or empty: none) is 0 (a cascade's arcs not kept, whose
    scores no part reads: their in-between walk is skipped).
    Several vectors share one walk over the ids (BCFW scores an example at the iterate and at the point
    it records: about 0.75 of the time of two calls on es); each vector's sums are taken in the same
    order as alone, so the scores are the same bits."""
    k = len(ws)
    n, n_keys = cs.n, cs.n_keys
    size = n + 1
    ent_w = np.empty((k, cs.ent_ids.shape[0], N_SLOTS))
    head = np.zeros((k, size, N_SLOTS))
    mod = np.zeros((k, size, N_SLOTS))
    for t in range(k):
        _entry_weights(cs.ent_ids, ws[t], ent_w[t])
        for x in range(size):
            for key in range(n_keys):
                for slot in range(N_SLOTS):
                    head[t, x, slot] += ent_w[t, 2 * x * n_keys + key, slot]
                    mod[t, x, slot] += ent_w[t, (2 * x + 1) * n_keys + key, slot]
    bias_at = 2 * size * n_keys
    acc = np.empty(k)
    pair_ptr, pair_ids, tags, pair_block, blocks = cs.pair_ptr, cs.pair_ids, cs.tags, cs.pair_block, cs.blocks
    masked = mask.shape[0] > 0
    for h in range(size):
        for m in range(size):
            if m == 0 or h == m or (masked and mask[h * size + m] == 0):
                for t in range(k):
                    outs[t][h, m] = 0.0
                continue
            slot = dirdist_slot(h, m)
            for t in range(k):
                acc[t] = (head[t, h, 0] + head[t, h, slot] + mod[t, m, 0] + mod[t, m, slot]
                          + ent_w[t, bias_at, 0] + ent_w[t, bias_at, slot])
            r = h * size + m
            for q in range(pair_ptr[r], pair_ptr[r + 1]):
                fid = pair_ids[q]
                for t in range(k):
                    acc[t] += ws[t][fid]
            if abs(h - m) >= 2:
                for j in range(2):
                    pb = pair_block[j, tags[j, h], tags[j, m]]
                    for b in range(min(h, m) + 1, max(h, m)):
                        e = blocks[pb, tags[j, b]]
                        if e >= 0:
                            for t in range(k):
                                acc[t] += ent_w[t, e, 0] + ent_w[t, e, slot]
            for t in range(k):
                outs[t][h, m] = acc[t]


@njit(cache=True)
def _scatter(cs, coef, target, record, pair_record):
    """target += sum_r coef[r] phi(r) over the cells r of the compiled sentence ``cs`` (coef ((n+1)^2,)).

    The coefficients of each entry (token keys alone, the bias, in-between trigrams) are summed per
    slot first and added to their ids at the end, entry by entry in order; only the entries of the
    cells with a coefficient are visited (a visit of BCFW or EG changes a few heads of a sentence, and
    its other cells cost a test each).  With ``record`` (int64, room for n_ent N_SLOTS ids) those
    entries' ids are written there, with ``pair_record`` (room for pair_ptr[-1]) the pair ids of the
    cells with a coefficient.  Returns the numbers recorded in each.
    """
    count = 0
    pairs = 0
    n, n_keys = cs.n, cs.n_keys
    size = n + 1
    n_ent = cs.ent_ids.shape[0]
    ent_c = np.empty((n_ent, N_SLOTS))  # rows set to 0 when first used
    used = np.zeros(n_ent, dtype=np.bool_)
    tok = np.zeros((2 * size, N_SLOTS))  # per token and role: rows x (head) and size + x (modifier)
    tok_used = np.zeros(2 * size, dtype=np.bool_)
    bias_at = 2 * size * n_keys
    pair_ptr, pair_ids, tags, pair_block, blocks = cs.pair_ptr, cs.pair_ids, cs.tags, cs.pair_block, cs.blocks
    for h in range(size):
        for m in range(1, size):
            c = coef[h * size + m]
            if c == 0.0 or h == m:
                continue
            slot = dirdist_slot(h, m)
            tok[h, 0] += c
            tok[h, slot] += c
            tok[size + m, 0] += c
            tok[size + m, slot] += c
            tok_used[h] = True
            tok_used[size + m] = True
            if not used[bias_at]:
                used[bias_at] = True
                ent_c[bias_at, :] = 0.0
            ent_c[bias_at, 0] += c
            ent_c[bias_at, slot] += c
            r = h * size + m
            for q in range(pair_ptr[r], pair_ptr[r + 1]):
                target[pair_ids[q]] += c
            if pair_record.shape[0] > 0:
                for q in range(pair_ptr[r], pair_ptr[r + 1]):
                    pair_record[pairs] = pair_ids[q]
                    pairs += 1
            # the walk over the arc's in-between entries of _scores, written out in both: a helper (inlined)
            # listing the entries in a buffer made scores and scatter 1.09 times slower (es train, 8 pairs)
            if abs(h - m) >= 2:
                for j in range(2):
                    pb = pair_block[j, tags[j, h], tags[j, m]]
                    for b in range(min(h, m) + 1, max(h, m)):
                        e = blocks[pb, tags[j, b]]
                        if e >= 0:
                            if not used[e]:
                                used[e] = True
                                ent_c[e, :] = 0.0
                            ent_c[e, 0] += c
                            ent_c[e, slot] += c
    for x in range(size):
        for role in range(2):
            if tok_used[role * size + x]:
                for k in range(n_keys):
                    e = (2 * x + role) * n_keys + k
                    used[e] = True
                    ent_c[e, :] = tok[role * size + x, :]
    recording = record.shape[0] > 0
    for e in range(n_ent):
        if not used[e]:
            continue
        for slot in range(N_SLOTS):
            v = ent_c[e, slot]
            fid = cs.ent_ids[e, slot]
            if v != 0.0 and fid >= 0:
                target[fid] += v
                if recording:
                    record[count] = fid
                    count += 1
    return count, pairs


@njit(cache=True)
def _delta(cs, coef, buf, w, ids, vals):
    """delta = sum_r coef[r] phi(r) over the cells of the compiled sentence as a sparse vector: scattered
    into the zero work array ``buf`` (n_features,), then its non-zeros moved to ``ids`` / ``vals`` (room
    for n_ent N_SLOTS + pair_ptr[-1]; ``buf`` is zero again).  Returns (count, w . delta, ||delta||^2).
    Only the ids of the cells with a coefficient are read back (4 times faster than all the sentence's
    pair ids on es, where a visit changes a few heads)."""
    touched = np.empty(cs.ent_ids.shape[0] * N_SLOTS, dtype=np.int64)
    touched_pairs = np.empty(max(cs.pair_ptr[-1], 1), dtype=np.int64)
    recorded, pairs = _scatter(cs, coef, buf, touched, touched_pairs)
    count, dot, sq = gather_nonzero(buf, touched[:recorded], w, ids, vals)
    more, dot2, sq2 = gather_nonzero(buf, touched_pairs[:pairs], w, ids[count:], vals[count:])
    return count + more, dot + dot2, sq + sq2


@njit(cache=True)
def _cell_ids(cs, h, m, out):
    """The ids of cell h -> m (m > 0, h != m) of the compiled sentence into ``out``; returns their number."""
    size = cs.n + 1
    slot = dirdist_slot(h, m)
    c = 0
    for x, role in ((h, 0), (m, 1)):
        for k in range(cs.n_keys):
            e = (2 * x + role) * cs.n_keys + k
            for s in (0, slot):
                if cs.ent_ids[e, s] >= 0:
                    out[c] = cs.ent_ids[e, s]
                    c += 1
    r = h * size + m
    for q in range(cs.pair_ptr[r], cs.pair_ptr[r + 1]):
        out[c] = cs.pair_ids[q]
        c += 1
    bias_at = 2 * size * cs.n_keys
    for s in (0, slot):
        if cs.ent_ids[bias_at, s] >= 0:
            out[c] = cs.ent_ids[bias_at, s]
            c += 1
    if abs(h - m) >= 2:
        for j in range(2):
            pb = cs.pair_block[j, cs.tags[j, h], cs.tags[j, m]]
            for b in range(min(h, m) + 1, max(h, m)):
                e = cs.blocks[pb, cs.tags[j, b]]
                if e >= 0:
                    for s in (0, slot):
                        if cs.ent_ids[e, s] >= 0:
                            out[c] = cs.ent_ids[e, s]
                            c += 1
    return c


@njit(cache=True)
def _cells(cs, r0, r1, coef, w, scores, buf, touched):
    """The cells r0:r1 of the compiled sentence one at a time (a part range inside one sentence).

    Writes ``scores[r - r0]`` = w . phi(r) when ``scores`` is not empty; adds coef[r - r0] phi(r) to
    ``buf`` when ``buf`` is not empty, recording the ids in ``touched`` (room for all ids of the
    cells); returns the number recorded.
    """
    size = cs.n + 1
    ids = np.empty(2 * (2 * cs.n_keys + N_PAIR + 1 + 2 * size), dtype=np.int64)
    count = 0
    for r in range(r0, r1):
        h, m = r // size, r % size
        k = 0 if m == 0 or h == m else _cell_ids(cs, h, m, ids)
        if scores.shape[0] > 0:
            acc = 0.0
            for q in range(k):
                acc += w[ids[q]]
            scores[r - r0] = acc
        if buf.shape[0] > 0 and coef[r - r0] != 0.0:
            for q in range(k):
                buf[ids[q]] += coef[r - r0]
                touched[count] = ids[q]
                count += 1
    return count


class KeptSentence(NamedTuple):
    """A compiled sentence as the cache keeps it, in about half the bytes: each entry's packed ids (or key)
    instead of its 16 ids, ``pair_ptr`` as int32 and ``blocks`` as int16 where they fit.  :meth:`unpack`
    gives the :class:`CompiledSentence` back, the same arrays; a copy of ent_ids costs a few microseconds
    against the 0.3-1.3 ms of compiling a sentence."""

    n: int
    n_keys: int
    ent_src: np.ndarray
    pair_ptr: np.ndarray
    pair_ids: np.ndarray
    tags: np.ndarray
    pair_block: np.ndarray
    blocks: np.ndarray

    @staticmethod
    def _narrow(cs: CompiledSentence) -> tuple[type, type]:
        return (np.int32 if cs.pair_ptr[-1] <= np.iinfo(np.int32).max else np.int64,
                np.int16 if cs.ent_ids.shape[0] <= np.iinfo(np.int16).max else np.int32)

    @classmethod
    def size_of(cls, cs: CompiledSentence, ent_src: np.ndarray) -> int:
        """The bytes :meth:`pack` would keep."""
        ptr_type, block_type = cls._narrow(cs)
        return (ent_src.nbytes + cs.pair_ptr.size * np.dtype(ptr_type).itemsize
                + int(cs.pair_ptr[-1]) * cs.pair_ids.itemsize + cs.tags.nbytes + cs.pair_block.nbytes
                + cs.blocks.size * np.dtype(block_type).itemsize)

    @classmethod
    def pack(cls, cs: CompiledSentence, ent_src: np.ndarray) -> "KeptSentence":
        """``cs`` (whose entries ``ent_src`` made) to keep: its own copy of the used part of pair_ids."""
        ptr_type, block_type = cls._narrow(cs)
        return cls(cs.n, cs.n_keys, ent_src, cs.pair_ptr.astype(ptr_type), cs.pair_ids[:cs.pair_ptr[-1]].copy(),
                   cs.tags, cs.pair_block, cs.blocks.astype(block_type))

    def unpack(self, hash_bits: int) -> CompiledSentence:
        return CompiledSentence(self.n, self.n_keys, _expand_entries(self.ent_src, hash_bits),
                                self.pair_ptr.astype(np.int64), self.pair_ids, self.tags, self.pair_block,
                                self.blocks.astype(np.int32))

    @property
    def nbytes(self) -> int:
        return sum(getattr(self, f).nbytes for f in ("ent_src", "pair_ptr", "pair_ids", "tags", "pair_block",
                                                        "blocks"))


def checked_vector(v: np.ndarray, name: str, length: int) -> np.ndarray:
    """``v`` as contiguous float64 when it is an array of shape (length,); ValueError naming it otherwise."""
    if not isinstance(v, np.ndarray) or v.shape != (length,):
        raise ValueError(f"{name} must be an array of shape ({length},), not {getattr(v, 'shape', type(v))}")
    return np.ascontiguousarray(v, dtype=np.float64)


def check_target(target: np.ndarray, length: int) -> None:
    """ValueError unless ``target`` is a writable float64 array of shape (length,) (a scatter's target)."""
    if not isinstance(target, np.ndarray) or target.shape != (length,) \
            or target.dtype != np.float64 or not target.flags.writeable:
        raise ValueError(f"target must be a writable float64 array of shape ({length},)")


class PartRanges:
    """The part numbering of a corpus: example i has the parts ``part_ptr[i]:part_ptr[i + 1]``."""

    part_ptr: np.ndarray

    @property
    def n_examples(self) -> int:
        return self.part_ptr.shape[0] - 1

    @property
    def n_parts(self) -> int:
        return int(self.part_ptr[-1])

    def parts(self, i: int) -> tuple[int, int]:
        """The corpus-wide part range ``(lo, hi)`` of example ``i``."""
        return int(self.part_ptr[i]), int(self.part_ptr[i + 1])

    def whole_examples(self, lo: int, hi: int) -> range:
        """The examples whose parts are ``lo:hi``, which must be whole examples."""
        first = int(np.searchsorted(self.part_ptr, lo, side="right")) - 1 if lo < self.n_parts else self.n_examples
        last = int(np.searchsorted(self.part_ptr, hi, side="left"))
        if not (0 <= lo <= hi <= self.n_parts) or (lo < hi and (self.part_ptr[first] != lo
                                                                or self.part_ptr[last] != hi)):
            raise ValueError(f"part range {lo}:{hi} is not whole sentences of 0:{self.n_parts}")
        return range(first, last) if lo < hi else range(0)

    def dense_delta(self, lo: int, hi: int, coef: np.ndarray, w: np.ndarray):
        """``sparse_delta`` through a dense vector (for a range of none or several sentences):
        ``(ids, vals, w . delta, ||delta||^2)``."""
        dense = np.zeros(self.n_features)
        self.scatter(lo, hi, coef, dense)
        ids = np.flatnonzero(dense)
        vals = dense[ids]
        return ids, vals, float(w[ids] @ vals), float(vals @ vals)


class CacheBudget:
    """The bytes that compiled sentences may still take, shared by the part feature sets given it
    (the training sentences' arcs and siblings, the dev sentences'): the first to compile take it.
    Only the process that made it spends it: a forked worker (``parser train --jobs``) reads the
    sentences kept before it started, and what it would keep would die with it."""

    def __init__(self, nbytes: int) -> None:
        if nbytes < 0:
            raise ValueError(f"cache_bytes must be at least 0, not {nbytes}")
        self.room = int(nbytes)
        self._owner = os.getpid()

    def take(self, nbytes: int) -> bool:
        """Spend ``nbytes`` of the budget if that many are left (and this is its process); whether they were."""
        if nbytes > self.room or os.getpid() != self._owner:
            return False
        self.room -= nbytes
        return True


class ArcPartFeatures(PartRanges):
    """The arc features of an encoded corpus under an :class:`~egnlp.features.arc_featurizer.ArcFeaturizer`,
    computed one sentence at a time (see the module docstring): a
    :class:`~egnlp.training.structured_problem.PartFeatureSet` with the parts and ids of
    :meth:`ArcFeaturizer.part_features`.  Keep the featurizer's alphabet fixed while it is used.

    ``keeps`` (optional, one (n+1, n+1) mask [head, modifier] per sentence: a cascade's kept arcs): in
    alphabet mode the pair templates of the other arcs are not looked up, so their features lack them,
    and a whole sentence's scores are 0 on them; for the parts above a cascade's arcs
    (:mod:`egnlp.features.kept_parts`), which read the kept arcs' only."""

    def __init__(self, featurizer, encoded: EncodedCorpus, cache_bytes: "int | CacheBudget" = 0, keeps=None):
        self.keeps = keeps
        if keeps is not None and len(keeps) != len(encoded):
            raise ValueError("one mask of kept arcs per sentence is needed")
        self.budget = cache_bytes if isinstance(cache_bytes, CacheBudget) else CacheBudget(cache_bytes)
        self.encoded = encoded
        self.flags = int(featurizer.flags)
        self.hash_bits = int(featurizer.hash_bits)
        if self.hash_bits == 0:
            self._tables = featurizer.id_tables()
            self.table, self.tag_table = self._tables.all, self._tables.tags
        else:
            self.table = self.tag_table = empty_id_table()
        self.n_features = int(featurizer.n_features)
        sizes = np.diff(encoded.tok_ptr)  # n + 1 per sentence
        if sizes.size and sizes.min() < 1:
            raise ValueError("every sentence needs its root row")
        self.part_ptr = np.zeros(sizes.shape[0] + 1, dtype=np.int64)
        np.cumsum(sizes * sizes, out=self.part_ptr[1:])
        self._pair_ids = np.empty(0, dtype=np.int32)
        self._compiled: tuple[int, CompiledSentence] | None = None
        self._buf: np.ndarray | None = None
        self._cache: dict[int, CompiledSentence] = {}

    @property
    def cache_room(self) -> int:
        """Bytes of the cache budget not yet spent (by this set or those sharing its budget)."""
        return self.budget.room

    @property
    def nbytes(self) -> int:
        """Bytes of the corpus arrays and cached sentences kept (not the id table, the featurizer's)."""
        cached = sum(kept.nbytes for kept in self._cache.values())
        return self.encoded.tok_ptr.nbytes + self.encoded.atoms.nbytes + self.part_ptr.nbytes + cached

    def compiled(self, i: int) -> CompiledSentence:
        """Sentence ``i`` compiled (kept until another sentence is compiled)."""
        if self._compiled is not None and self._compiled[0] == i:
            return self._compiled[1]
        kept = self._cache.get(i)
        if kept is not None:
            cs = kept.unpack(self.hash_bits)
            self._compiled = (i, cs)
            return cs
        if not 0 <= i < self.n_examples:
            raise IndexError(f"sentence {i} of {self.n_examples}")
        self._compiled = None
        enc = self.encoded
        n = enc.length(i)
        room = 2 * N_PAIR * (n + 1) * (n + 1)
        if self._pair_ids.shape[0] < room:
            self._pair_ids = np.empty(room, dtype=np.int32)
        sentence = SentenceAtoms(enc.atoms, int(enc.tok_ptr[i]), n)
        if self.keeps is None:
            allowed = np.ones((n + 1, n + 1), dtype=np.bool_)
        else:
            allowed = np.asarray(self.keeps[i]) != 0
            if allowed.shape != (n + 1, n + 1):
                raise ValueError(f"sentence {i}: a mask of shape {allowed.shape} for {n} words")
        n_keys, ent_ids, ent_src, pair_ptr, tags, pair_block, blocks = _compile(
            sentence, self.flags, self.table, self.tag_table, self.hash_bits, self._pair_ids, allowed)
        cs = CompiledSentence(n, n_keys, ent_ids, pair_ptr, self._pair_ids, tags, pair_block, blocks)
        if self.budget.room > 0 and self.budget.take(KeptSentence.size_of(cs, ent_src)):
            kept = self._cache[i] = KeptSentence.pack(cs, ent_src)
            cs = cs._replace(pair_ids=kept.pair_ids)  # the shared buffer is written by the next compile
        self._compiled = (i, cs)
        return cs

    def keep(self, i: int) -> bool:
        """Compile sentence ``i`` now, keeping it while the budget has room; whether it is kept (a process
        that will fork workers keeps their sentences first, so that they inherit them)."""
        self.compiled(i)
        return i in self._cache

    def part_ids(self, r: int) -> np.ndarray:
        """The feature ids of part ``r`` (a corpus-wide part number), in no particular order."""
        i, r0, _ = self._range(r, r + 1)[0]
        cs = self.compiled(i)
        size = cs.n + 1
        h, m = divmod(r0, size)
        ids = np.empty(self._id_room(cs, 1), dtype=np.int64)
        return ids[:_cell_ids(cs, h, m, ids)] if m and h != m else ids[:0]

    def _range(self, lo: int, hi: int) -> list[tuple[int, int, int]]:
        """The examples whose parts meet ``lo:hi``, as (example, first cell, end cell) in its own cells."""
        if not 0 <= lo <= hi <= self.n_parts:
            raise ValueError(f"part range {lo}:{hi} is outside 0:{self.n_parts}")
        out = []
        i = int(np.searchsorted(self.part_ptr, lo, side="right")) - 1
        while lo < hi:
            a, b = self.parts(i)
            end = min(b, hi)
            out.append((i, lo - a, end - a))
            lo = end
            i += 1
        return out

    def scores(self, lo: int, hi: int, w: np.ndarray) -> np.ndarray:
        """``w . phi(r)`` for the parts ``lo:hi``, shape (hi - lo,)."""
        return self.scores_many(lo, hi, (w,))[0]

    def scores_many(self, lo: int, hi: int, ws) -> list[np.ndarray]:
        """``scores(lo, hi, w)`` for each ``w`` of the sequence ``ws`` (one or two vectors), the same bits,
        in one walk over each sentence's ids (see :func:`_scores`)."""
        ws = tuple(checked_vector(w, "w", self.n_features) for w in ws)
        if len(ws) not in (1, 2):
            raise ValueError(f"one or two weight vectors, not {len(ws)}")
        outs = [np.empty(hi - lo) for _ in ws]
        at = 0
        for i, r0, r1 in self._range(lo, hi):
            cs = self.compiled(i)
            size = cs.n + 1
            if r1 - r0 == size * size:
                mask = _NO_MASK if self.keeps is None else (np.asarray(self.keeps[i]) != 0).astype(np.uint8).reshape(-1)
                _scores(cs, ws, tuple(out[at:at + size * size].reshape(size, size) for out in outs), mask)
            else:
                for w, out in zip(ws, outs):
                    _cells(cs, r0, r1, out[:0], w, out[at:at + r1 - r0], out[:0], np.empty(0, dtype=np.int64))
            at += r1 - r0
        return outs

    def scatter(self, lo: int, hi: int, coef: np.ndarray, target: np.ndarray) -> None:
        """``target += sum_r coef[r - lo] phi(r)`` over the parts ``lo:hi``."""
        coef = checked_vector(coef, "coef", hi - lo)
        check_target(target, self.n_features)
        at = 0
        no_record = np.empty(0, dtype=np.int64)
        for i, r0, r1 in self._range(lo, hi):
            cs = self.compiled(i)
            size = cs.n + 1
            c = coef[at:at + r1 - r0]
            if r1 - r0 == size * size:
                _scatter(cs, c, target, no_record, no_record)
            else:
                _cells(cs, r0, r1, c, target, c[:0], target, np.empty(self._id_room(cs, r1 - r0), dtype=np.int64))
            at += r1 - r0

    @staticmethod
    def _id_room(cs: CompiledSentence, cells: int) -> int:
        # a bound on the ids of ``cells`` cells of the sentence
        return cells * 2 * (2 * cs.n_keys + N_PAIR + 1 + 2 * cs.n)

    def sparse_delta(self, lo: int, hi: int, coef: np.ndarray, w: np.ndarray):
        """delta = sum_r coef[r - lo] phi(r) over the parts ``lo:hi`` as a sparse vector.

        Returns ``(ids, vals, w . delta, ||delta||^2)``; ``ids`` and ``vals``
        are views into scratch buffers, valid until the next call.
        """
        coef = checked_vector(coef, "coef", hi - lo)
        w = checked_vector(w, "w", self.n_features)
        ranges = self._range(lo, hi)
        if len(ranges) != 1:  # none or several sentences: through a dense vector
            return self.dense_delta(lo, hi, coef, w)
        i, r0, r1 = ranges[0]
        cs = self.compiled(i)
        size = cs.n + 1
        if self._buf is None:
            self._buf = np.zeros(self.n_features)
        if r1 - r0 == size * size:
            ids = np.empty(cs.ent_ids.shape[0] * N_SLOTS + int(cs.pair_ptr[-1]), dtype=np.int64)
            vals = np.empty(ids.shape[0])
            count, dot, sq = _delta(cs, coef, self._buf, w, ids, vals)
        else:
            touched = np.empty(self._id_room(cs, r1 - r0), dtype=np.int64)
            used = _cells(cs, r0, r1, coef, w, coef[:0], self._buf, touched)
            ids = np.empty(used, dtype=np.int64)
            vals = np.empty(used)
            count, dot, sq = gather_nonzero(self._buf, touched[:used], w, ids, vals)
        return ids[:count], vals[:count], dot, sq
