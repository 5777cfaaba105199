"""Pruned decoding: the arcs whose tags no gold training arc joined in their direction and distance."""

import copy

import numpy as np
import pytest

from egnlp.parser_training import train_parser
from egnlp.corpora import load_dataset
from egnlp.corpora.sentence import CPOS as CPOS_COLUMN
from egnlp.corpora.sentence import POS as POS_COLUMN
from egnlp.corpora.sentence import Sentence
from egnlp.features.arc_featurizer import ArcFeaturizer
from egnlp.features.arc_templates import CPOS, dirdist_slot
from egnlp.parser.parser_model import Parser


def _reach(f: ArcFeaturizer, train) -> dict:
    """The farthest distance bin at which a gold arc of ``train`` joined each (head, modifier) coarse tag
    pair in each direction, the tags as encoded."""
    enc = f.encode(train)
    reach: dict = {}
    for s, sent in enumerate(train):
        base = int(enc.tok_ptr[s])
        for m, h in enumerate(sent.heads, start=1):
            key = (enc.atoms[base + h, CPOS], enc.atoms[base + m, CPOS], h < m)
            reach[key] = max(reach.get(key, 0), dirdist_slot(h, m) % 8)
    return reach


@pytest.mark.parametrize("data", ["es", "wsj"])
def test_pruned_scores_rule_out_exactly_the_arcs_no_gold_arc_reached(data):
    """Brute force over the gold arcs: an arc h -> m (h >= 1) gets -inf exactly when no gold training arc
    joined its coarse tags in its direction at its distance bin or farther; every other score keeps its
    bits, in a block and alone, and every gold arc of the training data stays."""
    train = load_dataset(data, "train")[:300]
    dev = load_dataset(data, "dev")[:40]
    f = ArcFeaturizer.for_corpus(train)
    f.fit(f.encode(train), [s.heads for s in train])
    reach = _reach(f, train)
    w = np.random.default_rng(0).normal(size=f.n_features)
    pruned_total = arcs_total = 0
    for sentences in (dev, train[:20]):
        enc = f.encode(sentences)
        for s, block in enumerate(f.block_arc_scores(enc, w, prune=True)):
            full = f.arc_scores(enc, s, w)
            alone = f.arc_scores(enc, s, w, prune=True)
            np.testing.assert_array_equal(block, alone)
            n = enc.length(s)
            base = int(enc.tok_ptr[s])
            expected = np.ones((n + 1, n + 1), dtype=bool)
            for h in range(1, n + 1):
                for m in range(1, n + 1):
                    if h != m:
                        key = (enc.atoms[base + h, CPOS], enc.atoms[base + m, CPOS], h < m)
                        expected[h, m] = reach.get(key, 0) >= dirdist_slot(h, m) % 8
            np.testing.assert_array_equal(alone == -np.inf, ~expected)
            np.testing.assert_array_equal(alone[expected], full[expected])
            pruned_total += int((~expected).sum())
            arcs_total += n * n
            if sentences is not dev:
                heads = sentences[s].heads
                assert all(alone[h, m] > -np.inf for m, h in enumerate(heads, start=1))
    assert 0.2 < pruned_total / arcs_total < 0.9  # real pruning, not all or nothing


def test_hash_features_are_never_pruned():
    train = load_dataset("es", "train")[:100]
    f = ArcFeaturizer.for_corpus(train, "hash", hash_bits=16)
    enc = f.encode(load_dataset("es", "dev")[:10])
    w = np.random.default_rng(1).normal(size=f.n_features)
    for s, block in enumerate(f.block_arc_scores(enc, w, prune=True)):
        np.testing.assert_array_equal(block, f.arc_scores(enc, s, w))


@pytest.fixture(scope="module")
def es_parser() -> Parser:
    parser, _ = train_parser(load_dataset("es", "train")[:300], root="single", tree="non-projective",
                             max_passes=3, parts="arcs")
    return parser


def _score(arc: np.ndarray, heads) -> float:
    return float(sum(arc[h, m] for m, h in enumerate(heads, start=1)))


def test_pruned_parse_is_the_best_tree_of_the_allowed_arcs(es_parser: Parser):
    """Where the best tree uses no pruned arc, pruning finds it; elsewhere the pruned tree uses only
    allowed arcs and scores no more, or (no tree of allowed arcs) it is the best tree.  Accuracy moves
    by little on real data, even from a small training set (whose gold arcs allow fewer tag pairs)."""
    dev = load_dataset("es", "dev")
    exact = copy.copy(es_parser)
    exact.prune = False
    assert es_parser.prune and es_parser.final_on_root
    pruned_heads, exact_heads = es_parser.predict_heads(dev), exact.predict_heads(dev)
    f = es_parser.featurizer
    enc = f.encode(dev)
    differ = 0
    for s, (p, e) in enumerate(zip(pruned_heads, exact_heads)):
        full = f.arc_scores(enc, s, es_parser.weights)
        allowed = f.arc_scores(enc, s, es_parser.weights, prune=True) > -np.inf
        if all(allowed[h, m] for m, h in enumerate(e, start=1)):
            assert p == e
        elif all(allowed[h, m] for m, h in enumerate(p, start=1)):
            differ += p != e
            assert _score(full, p) <= _score(full, e) + 1e-9
        else:
            assert p == e
    assert differ < len(dev) / 5  # 29 of 295 trees, from 300 training sentences
    gold = [s.heads for s in dev]

    def uas(pred):
        return sum(a == b for g, h in zip(gold, pred) for a, b in zip(g, h)) / sum(map(len, gold))

    assert abs(uas(pruned_heads) - uas(exact_heads)) < 0.005  # 72.84 against 72.73


def test_a_sentence_with_no_allowed_tree_is_decoded_exactly(es_parser: Parser):
    """Tags no training arc had prune every arc between words: no single-root tree is left, so the
    sentence is decoded over every arc, as with pruning off."""
    sent = load_dataset("es", "dev")[0]
    unseen = Sentence(tuple(row[:CPOS_COLUMN] + ("zz", "zz") + row[POS_COLUMN + 1:] for row in sent.rows))
    f = es_parser.featurizer
    arc = f.arc_scores(f.encode([unseen]), 0, es_parser.weights, prune=True)
    between_words = ~np.eye(arc.shape[0], dtype=bool)
    between_words[0, :] = between_words[:, 0] = False
    assert np.all(arc[between_words] == -np.inf) and np.all(arc[0, 1:] > -np.inf)
    exact = copy.copy(es_parser)
    exact.prune = False
    assert es_parser.predict_heads([unseen]) == exact.predict_heads([unseen])
