"""Third-order (sibling and grandparent) parsing on real data: the grandparent features of every cell against
a plain re-derivation, the feature-set operations against each other, and the problem's gold and loss
(tests/test_higher_orders.py has the trainers, save / load and command line of both higher orders)."""

from __future__ import annotations


import numpy as np
import pytest

from egnlp.parser_training import build_parsing_problem
from egnlp.features.arc_templates import dirdist_slot
from egnlp.features.grandparents import _T0
from egnlp.parser.eisner_siblings import n_sibling_parts, sibling_indicator
from egnlp.parser.eisner_grandparents import grand_argmax, grand_indicator
from egnlp.parser.parsing_problem import sibling_loss

from parser_file_checks import (check_feature_set, check_part_ids, compiled_sentences, reference_part_keys,
                                token_atoms)


def _problem(sentences):
    return build_parsing_problem(sentences, "single", grandparents=True)


def _reference_keys(atoms, base, g, h, m):
    """The keys of grandparent part (g, h, m), from the module docstring's list of templates."""
    gw, gp, gc = token_atoms(atoms, base + g)
    _, hp, hc = token_atoms(atoms, base + h)
    mw, mp, mc = token_atoms(atoms, base + m)
    d = (1 if g < h else 0) + (2 if h < m else 0)
    return reference_part_keys(_T0, (gw, gp, gc), (mw, mp, mc), dirdist_slot(g, m), (gp, hp, mp), (gc, hc, mc), d + 1)


def test_every_cell_has_the_ids_of_its_templates(es_train):
    """Each grandparent part's ids, from the compiled rows and classes, equal the ids of its keys found
    directly in the alphabet; every gold part's keys are in it; cells that are no part score 0."""
    sentences = es_train[:25]
    pf = _problem(sentences)[1].features
    grand = pf.grand
    w = np.random.default_rng(1).normal(size=grand.n_features)
    # 15, 27, 19 and 20 words: every direction, and distances past the last slot
    for i, cg, base in compiled_sentences(grand, pf.encoded, (1, 5, 9, 14)):
        size = cg.size
        heads = [-1, *sentences[i].heads]
        gold = {(heads[h], h, m) for m, h in enumerate(heads) if m >= 1 and h >= 1}
        scores = grand.scores(cg, w)
        for g in range(size):
            for h in range(size):
                for m in range(size):
                    if h == 0 or m == 0 or h == m or g == h or g == m:
                        assert scores[g, h, m] == 0.0 and cg.part_class[(g * size + h) * size + m] == -1
                        continue
                    cls = cg.part_class[(g * size + h) * size + m]
                    ids = check_part_ids(np.concatenate([cg.row_ids[g * size + m], cg.class_ids[cls]]), grand.keys,
                                         _reference_keys(pf.encoded.atoms, base, g, h, m), (g, h, m) in gold,
                                         (i, g, h, m))
                    assert scores[g, h, m] == pytest.approx(w[ids].sum(), abs=1e-12)


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
