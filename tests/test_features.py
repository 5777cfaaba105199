"""Arc feature templates, feature ids and the CSR part features."""

import numpy as np
import pytest
from numba import njit

from egnlp.corpora import load_dataset
from egnlp.corpora.sentence import CPOS, HEAD, POS, Sentence
from egnlp.features.arc_featurizer import (_BLOCK_TAGS, _COUNTED_TAGS, _DENSE_TAGS, TOKEN_MEMO_SIZE, ArcFeaturizer,
                                          pair_weights, token_store)
from egnlp.features.arc_templates import (N_BETWEEN, N_FIXED, N_PAIR, N_SLOTS, SUFFIX, WORD, _pair_keys, head_prefixes,
                                          modifier_atoms, prefix_pair_keys)
from egnlp.features.csr import PartFeatures, add_sparse, collect_delta
from egnlp.features.hashing import KeyTable, hash_string


@pytest.fixture(scope="module")
def sentences():
    return load_dataset("es", "train")[:30]


def test_string_hash_is_stable_across_processes_and_versions():
    # Model files store feature keys: the string hash must never change.
    assert hash_string("egnlp") == -536017736986596434
    assert hash_string("<root>") == 2117128791956475970


def test_popcount_counts_the_bits_of_any_integer():
    from numba import njit

    from egnlp.features.hashing import popcount

    @njit
    def counts(values):
        out = np.empty(values.shape[0], dtype=np.int64)
        for i in range(values.shape[0]):
            out[i] = popcount(values[i])
        return out

    rng = np.random.default_rng(0)
    values = np.concatenate([rng.integers(-2**63, 2**63 - 1, size=2000, dtype=np.int64), [0, -1, 1, 0xFFFF, -2**63]])
    assert counts(values).tolist() == [bin(int(v) & (2**64 - 1)).count("1") for v in values]
    masks = np.arange(1 << 16, dtype=np.uint16)  # every 16-bit slot mask, the packed ids' low bits
    assert counts(masks).tolist() == [bin(int(m)).count("1") for m in masks]


def test_prefetch_changes_nothing_and_never_faults():
    from numba import njit

    from egnlp.features.hashing import prefetch

    @njit
    def summed(values, indices):
        total = 0.0
        for i in indices:
            prefetch(values, i)  # past the end too: a hint, never a read
        for i in indices:
            if 0 <= i < values.shape[0]:
                total += values[i]
        return total

    values = np.arange(1000, dtype=np.float64)
    indices = np.array([0, 999, 1000, 10**12, 5, -3], dtype=np.int64)
    assert summed(values, indices) == 0 + 999 + 5
    assert summed(values, np.array([np.uint64(2**63 + 7)], dtype=np.uint64).view(np.int64)) == 0


def test_key_table_finds_every_key_and_only_those():
    rng = np.random.default_rng(0)
    keys = np.unique(rng.integers(1, 2**63, size=5000, dtype=np.int64).astype(np.uint64))
    table = KeyTable(keys)
    from egnlp.features.hashing import table_lookup
    for i in (0, 17, 4999 % keys.size, keys.size - 1):
        assert table_lookup(table.table_keys, table.table_vals, keys[i]) == i
    absent = np.uint64(12345)
    assert absent not in set(keys.tolist())
    assert table_lookup(table.table_keys, table.table_vals, absent) == -1
    with pytest.raises(ValueError):
        KeyTable(np.array([0, 5], dtype=np.uint64))
    # given values, a key maps to its value instead of its rank (the direct scorer's packed ids)
    values = rng.integers(-1, 2**40, size=keys.size)
    valued = KeyTable(keys, values)
    assert all(table_lookup(valued.table_keys, valued.table_vals, keys[i]) == values[i] for i in range(keys.size))
    assert table_lookup(valued.table_keys, valued.table_vals, absent) == -1
    with pytest.raises(ValueError, match="values for"):
        KeyTable(keys, values[1:])


def test_cached_lookup_gives_the_table_value_of_every_key_however_the_cache_entries_collide():
    from egnlp.features.hashing import cached_lookup, new_cache, table_lookup

    rng = np.random.default_rng(1)
    keys = np.unique(rng.integers(1, 2**64 - 1, size=3000, dtype=np.uint64))  # high bits set too
    table = KeyTable(keys[::2], rng.integers(-1, 2**40, size=keys[::2].size))
    queries = rng.choice(keys, size=20000)  # half of them absent, every key asked many times
    for size in (1, 2, 64, 1 << 14):
        cache = new_cache(size)
        assert cache.shape == (2 * size,) and not cache.any()
        got = [cached_lookup(table.table_keys, table.table_vals, cache, key) for key in queries]
        assert got == [table_lookup(table.table_keys, table.table_vals, key) for key in queries]


def _joined(sentences):
    """One sentence of more than 100 words made of consecutive real ones (heads shifted, one root)."""
    rows = []
    for sent in sentences:
        off = len(rows)
        for row in sent.rows:
            head = int(row[HEAD])
            head = head + off if head else (1 if off else 0)
            rows.append((str(len(rows) + 1),) + row[1:HEAD] + (str(head),) + row[HEAD + 1:])
        if len(rows) > 100:
            return Sentence(tuple(rows))
    raise AssertionError("not enough words")


def _assert_direct_scores_are_the_csr_sums(train, sentences, mode, seed):
    """Train an alphabet (or hash) on ``train``; the direct scorer's arc scores of ``sentences`` under random
    weights equal the sums of their CSR training features, and two weight vectors scored in one walk get
    the bits of a walk each (:func:`_assert_pairs_are_two_walks`)."""
    f = ArcFeaturizer.for_corpus(train, mode, hash_bits=18)
    f.fit(f.encode(train), [s.heads for s in train])
    enc = f.encode(sentences)
    pf = f.part_features(enc)
    w = np.random.default_rng(seed).normal(size=f.n_features)
    for s, block in enumerate(f.block_arc_scores(enc, w)):
        lo, hi = pf.parts(s)
        k = len(sentences[s]) + 1
        np.testing.assert_allclose(pf.scores(lo, hi, w).reshape(k, k), f.arc_scores(enc, s, w),
                                   rtol=1e-12, atol=1e-9)
        np.testing.assert_array_equal(block, f.arc_scores(enc, s, w))  # the block's store gives the same bits
    _assert_pairs_are_two_walks(f, enc, w, np.random.default_rng(seed + 1).normal(size=f.n_features))
    return f, enc


def _assert_pairs_are_two_walks(f, enc, w, v):
    """The scores of weights ``w`` and ``v`` made in one walk of the arcs (a block's pairs, and a sentence's
    alone) are, byte for byte, those of a walk for each, with the tag filter and without."""
    for prune in (False, True):
        pairs = list(f.block_arc_score_pairs(enc, w, v, prune))
        assert len(pairs) == len(enc)
        for (a, b), x, y in zip(pairs, f.block_arc_scores(enc, w, prune), f.block_arc_scores(enc, v, prune)):
            assert a.tobytes() == x.tobytes() and b.tobytes() == y.tobytes()
        for s in (0, len(enc) - 1):
            a, b = f.arc_score_pair(enc, s, w, v, prune)
            assert a.tobytes() == f.arc_scores(enc, s, w, prune).tobytes()
            assert b.tobytes() == f.arc_scores(enc, s, v, prune).tobytes()


@pytest.mark.parametrize("tags", ["both", "upos", "xpos"])
def test_encode_gives_each_word_the_atoms_of_its_own_columns(tags):
    """Every word's atoms are the hashes of its own columns, in the order of the atom columns."""
    from egnlp.corpora.sentence import FEATS, FORM, LEMMA
    from egnlp.features.arc_templates import ROOT_TOKEN, encode

    sentences = load_dataset("es", "train")[:300]
    enc = encode(sentences, tags=tags)
    assert (enc.atoms[enc.tok_ptr[:-1]] == hash_string(ROOT_TOKEN)).all()
    for s, sentence in enumerate(sentences):
        for i, row in enumerate(sentence.rows):
            low = row[FORM].lower()
            pos = row[CPOS] if tags == "upos" else row[POS]
            coarse = row[POS][:1] if tags == "xpos" else row[CPOS]
            lemma = row[LEMMA].lower() if row[LEMMA] != "_" else low[:5]
            texts = (row[FORM], low[:5], pos, coarse, lemma, row[FEATS], low[-3:])  # the order of the atoms
            assert enc.atoms[enc.tok_ptr[s] + 1 + i].tolist() == [hash_string(text) for text in texts]


@pytest.mark.parametrize("at_once", [1, 300, 1 << 19])
def test_block_scores_made_some_sentences_at_a_time_are_each_sentences_scores(sentences, at_once, monkeypatch):
    """However many sentences one kernel call scores (one, a few, all), each gets its own scores."""
    from egnlp.features import arc_featurizer

    monkeypatch.setattr(arc_featurizer, "SCORES_AT_ONCE", at_once)
    f = ArcFeaturizer.for_corpus(sentences, "alphabet")
    f.fit(f.encode(sentences), [s.heads for s in sentences])
    enc = f.encode(sentences)
    w = np.random.default_rng(4).normal(size=f.n_features)
    blocks = list(f.block_arc_scores(enc, w, prune=True))
    assert [b.shape for b in blocks] == [(len(s) + 1, len(s) + 1) for s in sentences]
    for s, block in enumerate(blocks):
        np.testing.assert_array_equal(block, f.arc_scores(enc, s, w, prune=True))
    v = np.random.default_rng(5).normal(size=f.n_features)
    for s, (a, b) in enumerate(f.block_arc_score_pairs(enc, w, v, prune=True)):  # the pairs' scores too
        assert a.tobytes() == blocks[s].tobytes() and b.tobytes() == f.arc_scores(enc, s, v, prune=True).tobytes()


def test_pair_weights_add_the_weight_of_the_key_alone_to_each_slot(sentences):
    f = ArcFeaturizer.for_corpus(sentences, "alphabet")
    f.fit(f.encode(sentences), [s.heads for s in sentences])
    w = np.random.default_rng(5).normal(size=f.n_features)
    ids = {divmod(int(code), N_SLOTS): i for i, code in enumerate(f.codes)}
    expected = [w[i] if slot == 0 or (row, 0) not in ids else w[ids[row, 0]] + w[i] for (row, slot), i in ids.items()]
    assert any(slot and (row, 0) in ids for row, slot in ids)
    np.testing.assert_array_equal(pair_weights(f.codes, w)[list(ids.values())], expected)
    # keys 0 and 2 have no feature alone (slot 0), key 1 has one
    codes = np.array([0 * N_SLOTS + 3, 1 * N_SLOTS + 0, 1 * N_SLOTS + 2, 2 * N_SLOTS + 5, 2 * N_SLOTS + 7])
    np.testing.assert_array_equal(pair_weights(codes, np.array([1.0, 2.0, 4.0, 8.0, 16.0])), [1.0, 2.0, 6.0, 8.0, 16.0])
    weights = f.arc_weights(w)
    assert f.arc_weights(weights) is weights
    enc = f.encode(sentences[:5])
    for s in range(5):
        np.testing.assert_array_equal(f.arc_scores(enc, s, weights, prune=True), f.arc_scores(enc, s, w, prune=True))


@pytest.mark.parametrize("mode", ["alphabet", "hash"])
def test_tokens_found_in_the_token_store_get_the_sums_kept_for_them(sentences, mode):
    """The arc scores with a block's TokenStore that already holds the tokens (a second pass) are those of
    a fresh store, bit for bit; with one or two entries, tokens that share an entry get their own sums."""
    f = ArcFeaturizer.for_corpus(sentences, mode, hash_bits=18)
    f.fit(f.encode(sentences), [s.heads for s in sentences])
    enc = f.encode(sentences)
    w = np.random.default_rng(3).normal(size=f.n_features)
    fresh = [f.arc_scores(enc, s, w) for s in range(len(enc))]
    weights = f.arc_weights(w)
    distinct = len({tuple(row) for row in enc.atoms})
    for size in (1, 2, TOKEN_MEMO_SIZE):
        tokens, store = token_store(size), f._block_store(enc)
        for _ in range(2):
            for s in range(len(enc)):
                np.testing.assert_array_equal(f._scores(enc, s, weights, store, tokens), fresh[s])
        assert tokens.filled.sum() == size if size < distinct else tokens.filled.sum() > 0.9 * distinct


@pytest.mark.parametrize("data", ["es", "wsj"])
@pytest.mark.parametrize("mode", ["alphabet", "hash"])
def test_csr_scores_equal_direct_arc_scores(data, mode):
    """The direct scorer of parsing (per-token sums, pruned bigrams, in-between memo) = the training features."""
    train = load_dataset(data, "train")[:300]
    dev = load_dataset(data, "dev")
    sentences = train[:10] + dev[:40] + [_joined(dev[40:])]  # dev words and pairs the alphabet lacks
    assert len(sentences[-1]) > 100
    _assert_direct_scores_are_the_csr_sums(train, sentences, mode, 1)


def _coarse_only(sentence, fine):
    """The sentence with its fine tags (XPOS) replaced: ``_`` (``fine`` False), or its coarse tags marked."""
    return Sentence(tuple(row[:POS] + (row[CPOS] + "." if fine else "_",) + row[POS + 1:] for row in sentence.rows))


@pytest.mark.parametrize("mode", ["alphabet", "hash"])
@pytest.mark.parametrize("tags", ["upos", "both"])
def test_direct_arc_scores_of_a_block_with_few_tags(mode, tags):
    """A block of sentences with few tags keeps one in-between store; with XPOS empty (``upos``) both
    in-between trigrams read UPOS and are summed together: the same sums as the training features, and the
    same bits as each sentence alone."""
    train = [_coarse_only(s, tags == "both") for s in load_dataset("es", "train")[:300]]
    dev = [_coarse_only(s, tags == "both") for s in load_dataset("es", "dev")]
    sentences = train[:10] + dev[:40] + [_joined(dev[40:])]
    f, enc = _assert_direct_scores_are_the_csr_sums(train, sentences, mode, 3)
    assert f.tags == tags and f._merged_tags(enc.atoms) == (tags == "upos")
    assert 0 < f._block_store(enc).n_tags <= _BLOCK_TAGS
    assert len({row[CPOS] for row in sentences[-1].rows}) < _COUNTED_TAGS  # the long sentence is counted too


def _retagged(sentence, split):
    """The sentence with each fine tag split into ``split`` tags by the word's position."""
    return Sentence(tuple(row[:POS] + (f"{row[POS]}{i % split}",) + row[POS + 1:]
                          for i, row in enumerate(sentence.rows)))


@pytest.mark.parametrize("mode", ["alphabet", "hash"])
def test_direct_arc_scores_with_more_tags_than_the_dense_memo_takes(mode):
    """A sentence with more distinct tags than _DENSE_TAGS keeps its in-between memo in a hash table:
    the same sums as the training features, and as the dense memo where a sentence has few tags."""
    train = [_retagged(s, 5) for s in load_dataset("wsj", "train")[:300]]
    dev = [_retagged(s, 5) for s in load_dataset("wsj", "dev")]
    few = [s for s in dev if len({row[POS] for row in s.rows}) < _DENSE_TAGS][:5]  # the root's tag is one more
    sentences = few + [_joined(dev)]
    assert len({row[POS] for row in sentences[-1].rows}) > _DENSE_TAGS
    _assert_direct_scores_are_the_csr_sums(train, sentences, mode, 2)


@njit
def _prefix_pair_keys(atoms, base, n, flags, h, m, out, known):
    """prefix_pair_keys of the arc h -> m, from the sentence's prefixes (the three are kernel-only helpers)."""
    prefixes = np.empty((n + 1, N_PAIR), dtype=np.uint64)
    head_prefixes(atoms, base, n, flags, prefixes)
    mod_atoms = np.zeros((N_PAIR, 2, n + 1), dtype=np.int64)
    modifier_atoms(atoms, base, n, flags, mod_atoms)
    return prefix_pair_keys(prefixes, mod_atoms, h, m, flags, out, 0, known)


def test_prefix_pair_keys_are_the_pair_keys_in_their_order():
    """The direct scorer's pair keys, made from per-token prefixes, are those of _pair_keys in the same order
    under any known bits (which leave out bigrams), with and without lemmas and FEATS."""
    sentences = load_dataset("es", "dev")[:12]
    rng = np.random.default_rng(3)
    for use_lemma, use_feats in ((True, True), (False, False)):
        f = ArcFeaturizer("alphabet", use_lemma=use_lemma, use_feats=use_feats)
        enc = f.encode(sentences)
        for s in range(len(sentences)):
            base, n = int(enc.tok_ptr[s]), enc.length(s)
            expected, got = np.empty(64, dtype=np.uint64), np.empty(64, dtype=np.uint64)
            for h in range(n + 1):
                for m in range(1, n + 1):
                    if m != h:
                        known = -1 if (h + m) % 3 == 0 else int(rng.integers(0, 1 << 12))
                        c = _pair_keys(enc.atoms, base, n, h, m, f.flags, expected, 0, known)
                        assert _prefix_pair_keys(enc.atoms, base, n, f.flags, h, m, got, known) == c
                        np.testing.assert_array_equal(got[:c], expected[:c])


def test_gold_arcs_keep_every_template_in_the_alphabet(sentences):
    f = ArcFeaturizer("alphabet")
    enc = f.encode(sentences)
    f.fit(enc, [s.heads for s in sentences])
    pf = f.part_features(enc)
    for s, sent in enumerate(sentences[:10]):
        lo, _ = pf.parts(s)
        k = len(sent) + 1
        for m, h in enumerate(sent.heads, start=1):
            r = lo + h * k + m
            ids = pf.feat_ids[pf.feat_ptr[r]:pf.feat_ptr[r + 1]]
            # every template alone and with direction/distance, in-between trigrams per word between
            assert ids.size == 2 * (N_FIXED + N_BETWEEN * (abs(h - m) - 1))
        # arcs into the root and self-loops carry no features
        for r in [lo + h * k for h in range(k)] + [lo + m * k + m for m in range(k)]:
            assert pf.feat_ptr[r] == pf.feat_ptr[r + 1]
    assert f.n_features <= len(f.keys) * N_SLOTS


def test_features_of_a_sentence_do_not_depend_on_its_corpus(sentences):
    f = ArcFeaturizer("alphabet")
    enc = f.encode(sentences)
    f.fit(enc, [s.heads for s in sentences])
    w = np.random.default_rng(2).normal(size=f.n_features)
    alone = f.encode(sentences[7:8])
    np.testing.assert_array_equal(f.arc_scores(alone, 0, w), f.arc_scores(enc, 7, w))


def test_unknown_words_drop_lexical_features_but_keep_pos_ones(sentences):
    f = ArcFeaturizer("alphabet")
    enc = f.encode(sentences)
    f.fit(enc, [s.heads for s in sentences])
    sent = sentences[0]
    other = type(sent)(tuple(row[:1] + ("zzzunseenzzz",) + row[2:] for row in sent.rows))
    a = f.part_features(f.encode([sent]))
    b = f.part_features(f.encode([other]))
    assert 0 < b.feat_ids.size < a.feat_ids.size


def test_unseen_words_keep_the_features_of_their_suffix(sentences):
    # The second pair set reads the last three letters of the lower-cased word: an unseen word with a
    # known ending keeps those features, one without loses them.
    f = ArcFeaturizer("alphabet")
    f.fit(f.encode(sentences), [s.heads for s in sentences])
    sent = sentences[0]

    def renamed(form_of):
        return type(sent)(tuple(row[:1] + (form_of(row[1]),) + row[2:] for row in sent.rows))

    same_ending = renamed(lambda form: "Qqqq" + form[-3:].upper() if len(form) >= 3 else form)
    new_ending = renamed(lambda form: "qqqqqq" if len(form) >= 3 else form)
    enc = f.encode([sent, same_ending, new_ending])
    base = enc.tok_ptr[:3]
    np.testing.assert_array_equal(enc.atoms[base[0]:base[1], SUFFIX], enc.atoms[base[1]:base[2], SUFFIX])
    assert (enc.atoms[base[0]:base[1], WORD] != enc.atoms[base[1]:base[2], WORD]).sum() > 5
    kept = f.part_features(f.encode([same_ending])).feat_ids.size
    assert f.part_features(f.encode([new_ending])).feat_ids.size < kept < f.part_features(f.encode([sent])).feat_ids.size


def test_collect_delta_matches_dense_computation():
    rng = np.random.default_rng(3)
    feat_ptr = np.array([0, 3, 3, 7, 9], dtype=np.int64)
    feat_ids = rng.integers(0, 6, size=9).astype(np.int32)
    pf = PartFeatures(np.array([0, 4]), feat_ptr, feat_ids, 6)
    coef = rng.normal(size=4)
    w = rng.normal(size=6)
    dense = np.zeros(6)
    pf.scatter(0, 4, coef, dense)
    buf = np.zeros(6)
    ids = np.empty(9, dtype=np.int64)
    vals = np.empty(9)
    count, dot, sq = collect_delta(feat_ptr, feat_ids, 0, 4, coef, buf, w, ids, vals)
    assert np.all(buf == 0.0)
    np.testing.assert_allclose(dot, w @ dense)
    np.testing.assert_allclose(sq, dense @ dense)
    target = np.zeros(6)
    add_sparse(target, ids, vals, count, 1.0)
    np.testing.assert_allclose(target, dense)


def test_local_ids_are_ranks_among_the_distinct_values() -> None:
    """The insertion-sorted ranks of a sentence's column equal NumPy's unique-and-search, on random columns
    with few and many distinct values, the root row included."""
    from egnlp.features.arc_featurizer import _local_ids

    rng = np.random.default_rng(0)
    for n, distinct in ((1, 1), (5, 2), (40, 7), (150, 60), (120, 1000)):
        atoms = rng.integers(-(2 ** 62), 2 ** 62, size=(distinct,), dtype=np.int64)[
            rng.integers(0, distinct, size=(n + 11, 3))]
        for col in range(3):
            values = atoms[4:4 + n + 1, col]
            assert np.array_equal(_local_ids(atoms, 4, n, col), np.searchsorted(np.unique(values), values))
