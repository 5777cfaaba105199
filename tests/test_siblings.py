"""Second-order (sibling) parsing on real data: the features of every part against a plain re-derivation,
the feature-set operations against each other, the problem's gold and loss, and a shared cache budget
(tests/test_higher_orders.py has the trainers, save / load and command line of both higher orders)."""

from __future__ import annotations

import multiprocessing

import numpy as np
import pytest

from egnlp.parser_training import (DEV_CACHE_BYTES, FEATURE_CACHE_BYTES, build_parsing_problem, cache_budget,
                       train_parser)
from egnlp.corpora import load_dataset, write_conll
from egnlp.features.arc_parts import CacheBudget
from egnlp.features.arc_templates import dirdist_slot
from egnlp.features.siblings import _NONE, _T0, rows_delta
from egnlp.parser.eisner_siblings import n_sibling_parts, sibling_argmax, sibling_indicator, sibling_offsets, tree_parts
from egnlp.parser.parsing_problem import sibling_loss

from parser_file_checks import (check_feature_set, check_part_ids, compiled_sentences, reference_part_keys,
                                token_atoms)
from cli_helpers import run, usage_line


def _problem(sentences):
    return build_parsing_problem(sentences, "single", siblings=True)


def _reference_keys(atoms, base, h, s, m):
    """The keys of part (h, s, m) (s = -1: no sibling), from the module docstring's list of templates."""
    slot = dirdist_slot(s, m) if s >= 0 else dirdist_slot(h, m)
    _, hp, hc = token_atoms(atoms, base + h)
    sw, sp, sc = token_atoms(atoms, base + s) if s >= 0 else (_NONE,) * 3
    mw, mp, mc = token_atoms(atoms, base + m)
    return reference_part_keys(_T0, (sw, sp, sc), (mw, mp, mc), slot, (hp, sp, mp), (hc, sc, mc), slot + 16)


def test_every_part_has_the_ids_of_its_templates(es_train):
    """Each part's sibling ids, from the compiled rows and classes, equal the ids of its keys found
    directly in the alphabet; and every gold part's keys are in it."""
    sentences = es_train[:25]
    pf = _problem(sentences)[1].features
    for i, cs, base in compiled_sentences(pf.siblings, pf.encoded, (0, 3, 7, 24)):
        size = cs.size
        off = sibling_offsets(size)
        gold_parts = set(tree_parts([-1] + list(sentences[i].heads)).tolist())
        for h in range(size):
            for m in range(1, size):
                if m == h:
                    continue
                for k in range(abs(h - m)):
                    p = off[h, m] + k
                    s = -1 if k == 0 else (h + k if m > h else h - k)
                    row = s * size + m if s >= 0 else size * size + h * size + m
                    check_part_ids(np.concatenate([cs.row_ids[row], cs.class_ids[cs.part_class[p]]]), pf.siblings.keys,
                                   _reference_keys(pf.encoded.atoms, base, h, s, m), p in gold_parts, (i, h, s, m))


def test_scores_scatter_and_sparse_delta_agree(es_train):
    """scatter is the transpose of scores, sparse_delta the scatter of one sentence as a sparse vector; the
    gold tree's score is w . phi(gold)."""
    check_feature_set(_problem(es_train[:12])[1], np.random.default_rng(3))


def _unique_rows_delta(buf, row_ids, row_coef, class_ids, class_coef, w):
    """rows_delta as NumPy's unique of the touched ids gives it (the reference)."""
    for ids, coef in ((row_ids, row_coef), (class_ids, class_coef)):
        for r in np.flatnonzero(coef):
            for fid in ids[r][ids[r] >= 0]:
                buf[fid] += coef[r]
    ids = np.concatenate([row_ids[row_coef != 0.0].ravel(), class_ids[class_coef != 0.0].ravel()])
    ids = np.unique(ids[ids >= 0]).astype(np.int64)
    vals = buf[ids]
    buf[ids] = 0.0
    ids, vals = ids[vals != 0.0], vals[vals != 0.0]
    return ids, vals, float(w[ids] @ vals), float(vals @ vals)


@pytest.mark.parametrize("seed", range(5))
def test_rows_delta_is_the_unique_of_the_touched_ids(seed):
    """The ids each once and increasing, values that cancel to 0 dropped, the sums the same bits as through
    NumPy's unique; both scratch vectors zero again."""
    rng = np.random.default_rng(seed)
    n = 60
    row_ids = rng.integers(-1, n, size=(40, 10)).astype(np.int32)
    class_ids = rng.integers(-1, n, size=(7, 4)).astype(np.int32)
    row_coef = np.where(rng.random(40) < 0.5, 0.0, rng.choice([-1.0, 1.0, 0.25], size=40))
    class_coef = np.where(rng.random(7) < 0.3, 0.0, rng.normal(size=7))
    row_ids[1], row_coef[1], row_coef[2] = row_ids[2], 1.0, -1.0  # two rows that cancel
    w = rng.normal(size=n)
    buf, seen = np.zeros(n), np.zeros(n, dtype=np.uint8)
    got = rows_delta(buf, row_ids, row_coef, class_ids, class_coef, w, seen)
    want = _unique_rows_delta(np.zeros(n), row_ids, row_coef, class_ids, class_coef, w)
    np.testing.assert_array_equal(got[0], want[0])
    assert got[0].dtype == np.int64 and np.all(np.diff(got[0]) > 0)
    np.testing.assert_array_equal(got[1], want[1])
    assert got[2:] == want[2:]
    assert not buf.any() and not seen.any()


def test_gold_and_loss_count_words_and_wrong_heads(es_train):
    _, problem, _ = _problem(es_train[:10])
    rng = np.random.default_rng(0)
    for i, sent in enumerate(es_train[:10]):
        lo, hi = problem.features.parts(i)
        size = len(sent.heads) + 1
        assert hi - lo == n_sibling_parts(size)
        assert problem.gold[lo:hi].sum() == size - 1
        np.testing.assert_array_equal(problem.gold[lo:hi], sibling_indicator([-1, *sent.heads]))
        for _ in range(5):  # a tree's loss is its number of wrong heads
            heads = sibling_argmax(rng.normal(size=hi - lo), size, "single")
            wrong = int((heads[1:] != np.asarray(sent.heads)).sum())
            assert problem.loss[lo:hi] @ sibling_indicator(heads) == wrong
    np.testing.assert_array_equal(sibling_loss([0], 2), [0])
    # cells (0, 1), (0, 2) with two parts, (1, 2), (2, 1): word 1's head is 2, word 2's the root
    np.testing.assert_array_equal(sibling_loss([2, 0], 3), [1, 0, 0, 1, 0])


def test_gold_and_loss_are_made_a_sentence_at_a_time(es_train):
    """The second-order problem stores nothing per part: any slice of its gold and loss (whole sentences,
    parts of one, across several, empty) equals the same slice of the whole vectors made sentence by
    sentence from the heads; a sentence's values are read-only."""
    sentences = es_train[:6]
    _, problem, _ = _problem(sentences)
    pf = problem.features
    gold = np.concatenate([sibling_indicator([-1, *s.heads]).astype(np.uint8) for s in sentences])
    loss = np.concatenate([sibling_loss(s.heads, len(s) + 1) for s in sentences])
    np.testing.assert_array_equal(np.asarray(problem.gold), gold)
    np.testing.assert_array_equal(np.asarray(problem.loss), loss)
    n = pf.n_parts
    assert problem.loss.shape == (n,) and problem.loss.dtype == np.uint8 and len(problem.gold) == n
    cuts = [(0, n), pf.parts(2), (5, 17), (pf.parts(1)[0] - 3, pf.parts(3)[1] + 2), (n - 1, n), (7, 7), (n, n + 5)]
    for a, b in cuts + [(pf.parts(4)[0], pf.parts(4)[1]), (0, pf.parts(0)[1])]:
        np.testing.assert_array_equal(problem.loss[a:b], loss[a:b])
        np.testing.assert_array_equal(problem.gold[a:b], gold[a:b])
    np.testing.assert_array_equal(problem.loss[::7], loss[::7])
    lo, hi = pf.parts(3)
    with pytest.raises(ValueError, match="read-only"):
        problem.loss[lo:hi][0] = 1
    assert float(np.ones(n) @ problem.loss) == loss.sum()


def test_a_shared_cache_budget_keeps_sentences_and_changes_nothing(es_train):
    """Arc and sibling compilations kept under one budget give the scores of sentences compiled afresh, the
    budget is spent and never overdrawn, and parsers trained with a cache (of the training and the dev
    sentences) are the same bits as those trained without."""
    sentences = es_train[:30]
    _, plain, _ = _problem(sentences)
    budget = CacheBudget(3_000_000)
    _, cached, _ = build_parsing_problem(sentences, "single", siblings=True, cache_bytes=budget)
    rng = np.random.default_rng(5)
    w = rng.normal(size=plain.features.n_features)
    for i in [*range(30), *rng.permutation(30)]:  # two passes: the second reads what the first kept
        lo, hi = plain.features.parts(int(i))
        np.testing.assert_array_equal(cached.features.scores(lo, hi, w), plain.features.scores(lo, hi, w))
    assert 0 < len(cached.features._cache) < 30 and 0 < len(cached.features.arcs._cache) < 30
    assert 0 <= budget.room < 3_000_000 and cached.features.arcs.cache_room == budget.room
    with multiprocessing.get_context("fork").Pool(1) as pool:  # a worker process keeps nothing
        assert pool.apply(CacheBudget(100).take, (1,)) is False
    assert CacheBudget(100).take(1) is True
    dev = load_dataset("es", "dev")[:10]
    for parts in ("arcs", "siblings"):
        a, _ = train_parser(es_train[:30], dev, root="single", parts=parts, max_passes=2, labels=False)
        b, _ = train_parser(es_train[:30], dev, root="single", parts=parts, max_passes=2, labels=False,
                            cache_mb=64)
        np.testing.assert_array_equal(a.weights, b.weights)
    # without a dev set the training sentences take the dev's bytes by default: the same bits again
    assert cache_budget("bcfw", None, has_dev=False).room == DEV_CACHE_BYTES
    assert cache_budget("bcfw", None).room == 0 and cache_budget("egr", None).room == FEATURE_CACHE_BYTES
    a, _ = train_parser(es_train[:30], root="single", max_passes=2, parts="arcs")
    b, _ = train_parser(es_train[:30], root="single", max_passes=2, cache_mb=0, parts="arcs")
    np.testing.assert_array_equal(a.weights, b.weights)
    assert [s.lines() for s in a.parse(dev)] == [s.lines() for s in b.parse(dev)]  # the labelers too
    with pytest.raises(ValueError, match="at least 0"):
        train_parser(es_train[:5], root="single", cache_mb=-1)


def test_cli_refuses_a_cache_it_cannot_use(tmp_path, es_train):
    train = tmp_path / "train.conll"
    write_conll(train, es_train[:5])
    assert "--cache-mb" in usage_line(run("parser", "train", "--train", train, "--cache-mb", "-1",
                                          "-o", tmp_path / "x.npz"))
    assert "--cache-mb goes with training on one machine" in usage_line(
        run("parser", "train", "--train", train, "--cache-mb", "10", "--dask", "local", "-o", tmp_path / "x.npz"))
    assert not (tmp_path / "x.npz").exists()
