"""Third-order (sibling and grandparent) parsing on real data: the grandparent features of every cell against
a plain re-derivation, the feature-set operations against each other, the problem's gold and loss, trainers
reaching one optimum, and the model's save / load and command line."""

from __future__ import annotations


import numpy as np
import pytest

from egnlp.parser_training import build_parsing_problem, train_parser
from egnlp.corpora import load_dataset
from egnlp.features.arc_templates import CPOS, POS, WORD, dirdist_slot, template_key
from egnlp.features.grandparents import _T0
from egnlp.parser.eisner_siblings import n_sibling_parts, sibling_indicator
from egnlp.parser.eisner_grandparents import grand_argmax, grand_indicator
from egnlp.parser.parsing_problem import sibling_loss

from parser_file_checks import (check_cli_model, check_eg_reaches_lbfgs, check_feature_set,
                                check_max_margin_trainers_agree, check_saved_parser)


@pytest.fixture(scope="module")
def es_train():
    return load_dataset("es", "train")


@pytest.fixture(scope="module")
def es_short(es_train):
    """Training sentences of at most 12 words: the trainers' tests solve their problems to a tight gap."""
    return [s for s in es_train if len(s) <= 12]


def _problem(sentences):
    return build_parsing_problem(sentences, "single", grandparents=True)


def _reference_keys(atoms, base, g, h, m):
    """The keys of grandparent part (g, h, m), from the module docstring's list of templates."""
    gw, gp, gc = atoms[base + g, WORD], atoms[base + g, POS], atoms[base + g, CPOS]
    mw, mp, mc = atoms[base + m, WORD], atoms[base + m, POS], atoms[base + m, CPOS]
    hp, hc = atoms[base + h, POS], atoms[base + h, CPOS]
    slot = dirdist_slot(g, m)
    d = (1 if g < h else 0) + (2 if h < m else 0)
    keys = []
    for t, (a, b) in enumerate([(gp, mp), (gw, mw), (gw, mp), (gp, mw), (gc, mc)]):
        keys += [template_key(_T0 + t, a, b, 0, 0), template_key(_T0 + t, a, b, slot, 1)]
    keys += [template_key(_T0 + 5, gp, hp, mp, 0), template_key(_T0 + 5, gp, hp, mp, d + 1),
             template_key(_T0 + 6, gc, hc, mc, 0), template_key(_T0 + 6, gc, hc, mc, d + 1)]
    return keys


def test_every_cell_has_the_ids_of_its_templates(es_train):
    """Each grandparent part's ids, from the compiled rows and classes, equal the ids of its keys found
    directly in the alphabet; every gold part's keys are in it; cells that are no part score 0."""
    sentences = es_train[:25]
    _, problem, _ = _problem(sentences)
    pf = problem.features
    grand = pf.grand
    keys = grand.keys
    enc = pf.encoded
    rng = np.random.default_rng(1)
    w = rng.normal(size=grand.n_features)
    for i in (1, 5, 9, 14):  # 15, 27, 19 and 20 words: every direction, and distances past the last slot
        cg = grand.compile(enc, i)
        size = cg.size
        base = int(enc.tok_ptr[i])
        heads = [-1, *sentences[i].heads]
        gold = {(heads[h], h, m) for m, h in enumerate(heads) if m >= 1 and h >= 1}
        scores = grand.scores(cg, w)
        for g in range(size):
            for h in range(size):
                for m in range(size):
                    if h == 0 or m == 0 or h == m or g == h or g == m:
                        assert scores[g, h, m] == 0.0
                        continue
                    d = (1 if g < h else 0) + (2 if h < m else 0)
                    cls = cg.memo[((cg.tag[g] * cg.nt + cg.tag[h]) * cg.nt + cg.tag[m]) * 4 + d]
                    got = sorted(int(x) for x in np.concatenate([cg.row_ids[g * size + m], cg.class_ids[cls]])
                                 if x >= 0)
                    want_keys = np.array(_reference_keys(enc.atoms, base, g, h, m), dtype=np.uint64)
                    at = np.searchsorted(keys, want_keys)
                    found = (at < keys.size) & (keys[np.minimum(at, keys.size - 1)] == want_keys)
                    assert got == sorted(at[found].tolist()), (i, g, h, m)
                    assert scores[g, h, m] == pytest.approx(w[at[found]].sum(), abs=1e-12)
                    if (g, h, m) in gold:
                        assert found.all()


def test_scores_scatter_and_sparse_delta_agree(es_train):
    """scatter is the transpose of scores, sparse_delta the scatter of one sentence as a sparse vector; the
    gold tree's score is w . phi(gold); a sentence's parts are its sibling parts, then its cells."""
    sentences = es_train[:8]
    _, problem, _ = _problem(sentences)
    pf = problem.features
    assert pf.n_features == pf.arcs.n_features + pf.siblings.n_features + pf.grand.n_features

    def parts_of(i, lo, hi, s, w):
        size = len(sentences[i]) + 1
        assert hi - lo == n_sibling_parts(size) + size ** 3
        slo, shi = pf.sib.parts(i)
        np.testing.assert_array_equal(s[:shi - slo], pf.sib.scores(slo, shi, w[:pf.n_sib_features]))

    check_feature_set(problem, np.random.default_rng(3), parts_of)


def test_gold_and_loss_count_words_and_wrong_heads(es_train):
    sentences = es_train[:10]
    _, problem, _ = _problem(sentences)
    rng = np.random.default_rng(0)
    for i, sent in enumerate(sentences):
        lo, hi = problem.features.parts(i)
        size = len(sent) + 1
        k = n_sibling_parts(size)
        heads = np.array([-1, *sent.heads])
        gold = problem.gold[lo:hi]
        np.testing.assert_array_equal(gold[:k], sibling_indicator(heads))
        np.testing.assert_array_equal(gold[k:], grand_indicator(heads).reshape(-1))
        assert gold[k:].sum() == int((heads[1:] != 0).sum())  # every word whose head is a word
        np.testing.assert_array_equal(problem.loss[lo:hi][:k], sibling_loss(sent.heads, size))
        assert not problem.loss[lo:hi][k:].any()
        for _ in range(3):  # the oracle's tree: its parts, and its loss is its number of wrong heads
            theta = rng.normal(size=hi - lo)
            tree = problem.argmax(i, theta)
            predicted = grand_argmax(theta[:k], theta[k:].reshape(size, size, size), size, "single")
            np.testing.assert_array_equal(tree[:k], sibling_indicator(predicted))
            np.testing.assert_array_equal(tree[k:], grand_indicator(predicted).reshape(-1))
            assert tree @ problem.loss[lo:hi] == int((predicted[1:] != heads[1:]).sum())


LL_C = 10.0


def test_log_linear_eg_reaches_the_lbfgs_optimum(es_short):
    """EG over third-order marginals and scipy's L-BFGS on the log-linear primal of the same problem reach
    one optimum; EG's duality gap closes."""
    check_eg_reaches_lbfgs(_problem(es_short[:10])[1], LL_C)


def test_max_margin_trainers_agree_and_close_the_gap(es_short):
    check_max_margin_trainers_agree(_problem(es_short[:8])[1])


def test_third_order_parser_saves_loads_and_parses_the_same(es_train, tmp_path):
    dev = load_dataset("es", "dev")[:15]
    parser, result = train_parser(es_train[:40], dev, root="single", grandparents=True, max_passes=2)
    assert parser.order == 3 and parser.labeler is not None and parser.info["settings"]["grandparents"] is True
    assert parser.weights.size == (parser.featurizer.n_features + parser.siblings.n_features
                                   + parser.grand.n_features)
    check_saved_parser(parser, dev, tmp_path, "grand_keys", "grand_templates",
                       "grandparent templates 'older'.*retrain the model")
    with pytest.raises(ValueError, match="third-order parsing predicts projective trees only"):
        train_parser(es_train[:20], root="single", grandparents=True, tree="non-projective")


def test_cli_trains_and_parses_with_grandparents(tmp_path, es_train):
    info, text = check_cli_model(tmp_path, es_train[:40], "--grandparents", 2)
    assert info["order"] == 3 and info["training"]["settings"]["grandparents"] is True
    assert 0 < info["features"]["grand_count"] < info["features"]["count"] - info["features"]["sibling_count"]
    assert "arcs, siblings and grandparents (third order)" in text
