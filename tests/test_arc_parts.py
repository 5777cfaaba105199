"""The arc part features of training, computed one sentence at a time (ArcPartFeatures), against the
stored CSR arrays (ArcFeaturizer.part_features): the same ids per part, scores, scatters, sparse changes
and trained weights, on real data in both feature modes."""

import numpy as np
import pytest

from egnlp.corpora import load_dataset
from egnlp.corpora.sentence import Sentence
from egnlp.features.arc_featurizer import FILTER_SHARE, ArcFeaturizer, find_ids, slot_id
from egnlp.features.arc_parts import ArcPartFeatures, CompiledSentence
from egnlp.features.arc_templates import N_PAIR, N_SLOTS, _tag_template, arc_keys, dirdist_slot, pair_used
from egnlp.parser.parsing_problem import ParsingProblem
from egnlp.training.registry import get_trainer, make_config


def _shifted_tags(sent: Sentence) -> Sentence:
    """The sentence with each word given the tags of the next one: known words with (word, tag) pairs the
    alphabet lacks, so the lookups that known words and tags rule out are exercised."""
    rows = sent.rows
    return Sentence(tuple(row[:3] + rows[(i + 1) % len(rows)][3:5] + row[5:] for i, row in enumerate(rows)))


CASES = [("es", "alphabet"), ("es", "hash"), ("wsj", "alphabet"), ("wsj", "hash")]


@pytest.fixture(scope="module", params=CASES, ids=["-".join(c) for c in CASES])
def paths(request):
    """Both feature sets of a few dozen sentences: training sentences, dev ones (unknown words), training
    ones with shifted tags and the longest of 300 training sentences."""
    data, mode = request.param
    train = load_dataset(data, "train")[:300]
    dev = load_dataset(data, "dev")
    longest = max(train, key=len)
    sentences = train[:12] + dev[:12] + [_shifted_tags(s) for s in train[12:24]] + [longest]
    f = ArcFeaturizer.for_corpus(train, mode, hash_bits=18)
    f.fit(f.encode(train), [s.heads for s in train])
    enc = f.encode(sentences)
    return f.part_features(enc), ArcPartFeatures(f, enc)


def _dense(ids, vals, n):
    out = np.zeros(n)
    np.add.at(out, ids, vals)
    return out


def test_same_feature_ids_per_part(paths):
    csr, parts = paths
    assert (parts.n_examples, parts.n_parts, parts.n_features) == (csr.n_examples, csr.n_parts, csr.n_features)
    for i in range(csr.n_examples):
        assert parts.parts(i) == csr.parts(i)
    for r in range(csr.n_parts):
        expected = np.sort(csr.feat_ids[csr.feat_ptr[r]:csr.feat_ptr[r + 1]])
        np.testing.assert_array_equal(np.sort(parts.part_ids(r)), expected, err_msg=f"part {r}")
    assert csr.feat_ids.size > 50 * csr.n_parts / 2  # not a vacuous comparison


def test_same_scores(paths):
    csr, parts = paths
    w = np.random.default_rng(1).normal(size=csr.n_features)
    for i in range(csr.n_examples):
        lo, hi = csr.parts(i)
        expected = csr.scores(lo, hi, w)
        np.testing.assert_allclose(parts.scores(lo, hi, w), expected, rtol=1e-12, atol=1e-12 * np.abs(expected).max())
    # ranges that cut sentences
    lo, hi = csr.parts(3)[0] + 5, csr.parts(5)[0] + 7
    np.testing.assert_allclose(parts.scores(lo, hi, w), csr.scores(lo, hi, w), rtol=1e-12, atol=1e-10)
    np.testing.assert_allclose(parts.scores(0, csr.n_parts, w), csr.scores(0, csr.n_parts, w), rtol=1e-12, atol=1e-10)


def test_scores_of_two_vectors_in_one_walk_are_the_same_bits(paths):
    """scores_many (BCFW's iterate and recorded point together) gives each vector's scores to the bit, on
    whole sentences, on ranges that cut them and through the trainers' helper; three vectors are refused."""
    from egnlp.training.structured_problem import scores_many

    _, parts = paths
    rng = np.random.default_rng(2)
    w1, w2 = rng.normal(size=parts.n_features), rng.normal(size=parts.n_features)
    for lo, hi in [parts.parts(i) for i in range(parts.n_examples)] + [(parts.parts(3)[0] + 5, parts.parts(5)[0] + 7)]:
        s1, s2 = scores_many(parts, lo, hi, (w1, w2))
        assert np.array_equal(s1, parts.scores(lo, hi, w1)) and np.array_equal(s2, parts.scores(lo, hi, w2))
        assert not np.array_equal(s1, s2)
    with pytest.raises(ValueError, match="one or two"):
        parts.scores_many(0, 10, (w1, w2, w1))


def test_same_scatter(paths):
    csr, parts = paths
    rng = np.random.default_rng(2)
    for lo, hi in [(0, csr.n_parts), (csr.parts(2)[0] + 3, csr.parts(4)[1] - 2), (7, 8)]:
        coef = rng.normal(size=hi - lo)
        expected = np.zeros(csr.n_features)
        csr.scatter(lo, hi, coef, expected)
        got = np.zeros(csr.n_features)
        parts.scatter(lo, hi, coef, got)
        np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12 * np.abs(expected).max())


def test_same_sparse_delta(paths):
    csr, parts = paths
    rng = np.random.default_rng(3)
    w = rng.normal(size=csr.n_features)
    ranges = [csr.parts(i) for i in range(csr.n_examples)]
    ranges += [(csr.parts(6)[0] + 4, csr.parts(6)[1] - 3), (csr.parts(6)[0] + 8, csr.parts(6)[0] + 9)]
    for lo, hi in ranges:
        coef = rng.normal(size=hi - lo)
        coef[rng.random(hi - lo) < 0.3] = 0.0
        ids_a, vals_a, dot_a, sq_a = csr.sparse_delta(lo, hi, coef, w)
        ids_a, vals_a = ids_a.copy(), vals_a.copy()
        ids_b, vals_b, dot_b, sq_b = parts.sparse_delta(lo, hi, coef, w)
        assert np.unique(ids_b).size == ids_b.size
        np.testing.assert_array_equal(np.sort(ids_b), np.sort(ids_a))
        expected = _dense(ids_a, vals_a, csr.n_features)
        np.testing.assert_allclose(_dense(ids_b, vals_b, csr.n_features), expected, rtol=1e-12,
                                   atol=1e-12 * np.abs(expected).max())
        np.testing.assert_allclose([dot_b, sq_b], [dot_a, sq_a], rtol=1e-12, atol=1e-12 * sq_a)


@pytest.mark.parametrize("data", ["es", "wsj"])
@pytest.mark.parametrize("mode", ["alphabet", "hash"])
@pytest.mark.parametrize("trainer", ["eg-mm", "eg-ll"])
def test_training_gives_the_same_weights(data, mode, trainer):
    train = load_dataset(data, "train")[:50]
    heads = [s.heads for s in train]
    f = ArcFeaturizer.for_corpus(train, mode, hash_bits=18)
    enc = f.encode(train)
    f.fit(enc, heads)
    on_the_fly = ParsingProblem(ArcPartFeatures(f, enc), heads, "single")
    assert f._table is None and f._idmap is None  # training builds only the id table
    stored = ParsingProblem(f.part_features(enc), heads, "single")
    assert on_the_fly.gold.dtype == np.uint8 and on_the_fly.loss.dtype == np.uint8
    np.testing.assert_array_equal(on_the_fly.gold, stored.gold)
    np.testing.assert_array_equal(on_the_fly.loss, stored.loss)
    spec = get_trainer(trainer)
    config = make_config(spec, C=spec_c(trainer), max_passes=3, seed=0)
    a = spec.fit(on_the_fly, config=config)
    b = spec.fit(stored, config=config)
    assert len(a.records) == len(b.records) == 4
    assert np.abs(b.weights).max() > 1e-3
    np.testing.assert_allclose(a.weights, b.weights, rtol=1e-10, atol=1e-10 * np.abs(b.weights).max())
    for ra, rb in zip(a.records, b.records):
        assert ra.eff_iters == rb.eff_iters
        np.testing.assert_allclose(ra.primal, rb.primal, rtol=1e-10)


@pytest.mark.parametrize("mode", ["alphabet", "hash"])
def test_cached_sentences_give_the_same_scores_scatters_and_deltas(mode):
    """With a cache that holds some of the sentences, two passes in a shuffled order (cached sentences,
    sentences compiled again and cut ranges mixed) give exactly what an uncached set gives."""
    train = load_dataset("es", "train")[:40]
    f = ArcFeaturizer.for_corpus(train, mode, hash_bits=18)
    enc = f.encode(train)
    f.fit(enc, [s.heads for s in train])
    plain = ArcPartFeatures(f, enc)
    budget = 400_000
    cached = ArcPartFeatures(f, enc, cache_bytes=budget)
    rng = np.random.default_rng(4)
    w = rng.normal(size=plain.n_features)
    for i in np.concatenate([rng.permutation(plain.n_examples), rng.permutation(plain.n_examples)]):
        lo, hi = plain.parts(int(i))
        coef = rng.normal(size=hi - lo)
        np.testing.assert_array_equal(cached.scores(lo, hi, w), plain.scores(lo, hi, w))
        a, b = np.zeros(plain.n_features), np.zeros(plain.n_features)
        plain.scatter(lo, hi, coef, a)
        cached.scatter(lo, hi, coef, b)
        np.testing.assert_array_equal(b, a)
        got = cached.sparse_delta(lo + 3, hi - 2, coef[3:-2], w)
        want = plain.sparse_delta(lo + 3, hi - 2, coef[3:-2], w)
        np.testing.assert_array_equal(got[0], want[0])
        np.testing.assert_array_equal(got[1], want[1])
        assert got[2:] == want[2:]
    kept = len(cached._cache)
    assert 0 < kept < plain.n_examples  # the budget held some sentences, not all
    for i, packed in cached._cache.items():  # kept in fewer bytes, given back as compiled
        fresh, again = plain.compiled(i), packed.unpack(cached.hash_bits)
        assert packed.nbytes < 0.7 * (sum(getattr(fresh, f).nbytes for f in ("ent_ids", "pair_ptr", "tags",
                                                                             "pair_block", "blocks"))
                                      + 4 * int(fresh.pair_ptr[-1]))
        for field in CompiledSentence._fields:
            a, b = getattr(again, field), getattr(fresh, field)
            if field == "pair_ids":
                a, b = a[:again.pair_ptr[-1]], b[:fresh.pair_ptr[-1]]
            assert np.array_equal(a, b) and np.asarray(a).dtype == np.asarray(b).dtype, field
    assert 0 <= cached.cache_room < budget and cached.nbytes == plain.nbytes + budget - cached.cache_room
    with pytest.raises(ValueError, match="cache_bytes"):
        ArcPartFeatures(f, enc, cache_bytes=-1)


def spec_c(trainer: str) -> float:
    return 100.0 if trainer == "eg-mm" else 20.0


def test_a_head_outside_the_sentence_is_refused():
    train = load_dataset("es", "train")[:2]
    f = ArcFeaturizer.for_corpus(train)
    enc = f.encode(train)
    f.fit(enc, [s.heads for s in train])
    heads = [list(s.heads) for s in train]
    heads[1][2] = 3  # word 3 headed by itself
    with pytest.raises(ValueError, match="itself"):
        ParsingProblem(ArcPartFeatures(f, enc), heads)


@pytest.mark.parametrize("data", ["es", "wsj"])
def test_the_alphabet_is_that_of_the_gold_arcs(data):
    """fit's hash set of gold keys gives the alphabet of every key of every gold arc, each alone and in its
    arcs' slots; the id tables give each key's ids; the tag table holds the keys of the tag templates."""
    train = load_dataset(data, "train")[:60]
    f = ArcFeaturizer.for_corpus(train)
    enc = f.encode(train)
    f.fit(enc, [s.heads for s in train])
    keys, codes, tag_keys = [], [], []
    buf = np.empty(4096, dtype=np.uint64)
    used = [k for k in range(N_PAIR) if pair_used(k, f.flags)]
    n_token = 2 * (len([k for k in used if k < 21]) // 7 * 3 + (1 if f.use_feats else 0))
    for s, sent in enumerate(train):
        base = int(enc.tok_ptr[s])
        for m, h in enumerate(sent.heads, start=1):
            count = arc_keys(enc.atoms, base, len(sent), h, m, f.flags, buf)
            arc = buf[:count].copy()
            keys.append(arc)
            codes.append(np.stack([arc, np.full(count, dirdist_slot(h, m), dtype=np.uint64)]))
            pairs = arc[n_token:n_token + len(used)]
            tag_keys.append(pairs[[_tag_template(k) for k in used]])
            tag_keys.append(arc[n_token + len(used) + 1:])  # the in-between trigrams
    expected = np.unique(np.concatenate(keys))
    np.testing.assert_array_equal(f.keys, expected)
    both = np.concatenate(codes, axis=1)
    rows = np.searchsorted(expected, both[0])
    np.testing.assert_array_equal(f.codes, np.unique(np.concatenate([rows * N_SLOTS, rows * N_SLOTS
                                                                     + both[1].astype(np.int64)])))
    np.testing.assert_array_equal(f._tag_rows, np.searchsorted(expected, np.unique(np.concatenate(tag_keys))))
    tables = f.id_tables()
    idmap = f.idmap
    for row in range(0, f.keys.size, 97):
        packed = find_ids(tables.all, f.keys[row])
        assert [slot_id(packed, slot) for slot in range(N_SLOTS)] == idmap[row].tolist()
    for row in f._tag_rows[::13]:
        assert find_ids(tables.tags, f.keys[row]) == find_ids(tables.all, f.keys[row])
    absent = np.setdiff1d(f.keys, f.keys[f._tag_rows])[:50]
    assert all(find_ids(tables.tags, key) == -1 for key in absent)
    assert find_ids(tables.all, np.uint64(12345)) == -1 and np.uint64(12345) not in set(f.keys.tolist())
    # the filter after the slots turns most absent keys away: one bit per key, so at most a 32nd of its bits
    capacity = tables.all.shape[0] * FILTER_SHARE // (FILTER_SHARE + 1)
    assert capacity & (capacity - 1) == 0 and 2 * f.keys.size <= capacity
    set_bits = sum(bin(int(x)).count("1") for x in tables.all[capacity:].ravel())
    assert 0.9 * f.keys.size < set_bits <= f.keys.size and set_bits <= 16 * capacity / 32
    random_keys = np.setdiff1d(np.random.default_rng(6).integers(1, 2**63, size=2000, dtype=np.uint64), f.keys)
    assert all(find_ids(tables.all, key) == -1 for key in random_keys)
