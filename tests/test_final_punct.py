"""Final punctuation decoded as a leaf of the root's one child (``parser.trees.final_on_root_argmax``).

The decoder is checked against every tree of each single-root space that
keeps the last word a leaf of the root child (brute force, n <= 6); the
convention is read from real treebanks; a parser trained on es decodes so by
default, keeps the choice in its file, and can be told not to.
"""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest

from cli_helpers import assert_ok, run, usage_line
from tree_space_checks import projective_trees

from egnlp.parser_training import choose_final_on_root, train_parser
from egnlp.settings import ParserSettings
from egnlp.corpora import load_dataset, read_conll, write_conll
from egnlp.base.files import read_npz, write_npz_atomic
from egnlp.corpora.sentence import is_projective
from egnlp.parser.eisner import tree_score
from egnlp.parser.parser_model import FORMAT_VERSION, MODEL_KIND, Parser, final_punct
from egnlp.parser.trees import (FINAL_ON_ROOT_SHARE, NON_PROJECTIVE, PROJECTIVE, final_on_root_argmax,
                                final_on_root_share, keeps_final_on_root, tree_space)


def single_root_trees(n: int, tree: str) -> np.ndarray:
    """Every single-root tree over n words of the space, (K, n + 1), heads[:, 0] = -1."""
    if tree == PROJECTIVE:
        trees = projective_trees(n, "single")
        return trees[(trees[:, 1:] == 0).sum(axis=1) == 1]
    out = []
    for heads in itertools.product(range(n + 1), repeat=n):
        if sum(h == 0 for h in heads) != 1 or any(h == m for m, h in enumerate(heads, start=1)):
            continue
        reach = True
        for m in range(1, n + 1):
            x, steps = m, 0
            while x != 0 and steps <= n:
                x, steps = heads[x - 1], steps + 1
            reach = reach and x == 0
        if reach:
            out.append((-1, *heads))
    return np.array(out, dtype=np.int64)


def keeps_convention(heads: np.ndarray) -> bool:
    n = len(heads) - 1
    root_child = int(np.flatnonzero(heads[1:] == 0)[0]) + 1
    return heads[n] == root_child and n not in heads[1:]


@pytest.mark.parametrize("tree", [PROJECTIVE, NON_PROJECTIVE])
@pytest.mark.parametrize("n", [2, 3, 4, 5])
def test_decoder_is_the_best_tree_that_keeps_the_convention(tree, n):
    trees = single_root_trees(n, tree)
    kept = np.array([keeps_convention(t) for t in trees])
    assert 0 < kept.sum() < len(trees)
    argmax = tree_space(tree).argmax
    rng = np.random.default_rng(n)
    for _ in range(25):
        scores = rng.normal(scale=3.0, size=(n + 1, n + 1))
        heads = final_on_root_argmax(argmax, scores)
        assert keeps_convention(heads)
        assert tree != PROJECTIVE or is_projective(heads[1:].tolist())
        best = max(tree_score(scores, t) for t in trees[kept])
        assert tree_score(scores, heads) == pytest.approx(best, abs=1e-9)


def test_decoder_on_six_words_and_at_the_edges():
    n = 6
    trees = single_root_trees(n, PROJECTIVE)
    kept = trees[np.array([keeps_convention(t) for t in trees])]
    scores = np.random.default_rng(6).normal(scale=1e3, size=(n + 1, n + 1))  # large scores stay exact
    heads = final_on_root_argmax(tree_space(PROJECTIVE).argmax, scores)
    assert tree_score(scores, heads) == pytest.approx(max(tree_score(scores, t) for t in kept), rel=1e-12)
    one = np.zeros((2, 2))
    assert final_on_root_argmax(tree_space(PROJECTIVE).argmax, one).tolist() == [-1, 0]  # one word: its own root
    with pytest.raises(ValueError, match="single-root"):
        final_on_root_argmax(tree_space(PROJECTIVE).argmax, scores, "multi")


def test_the_convention_in_real_treebanks():
    """es hangs 99.4% of its final punctuation on the root child; Basque, with several root children,
    rarely; the default follows the data, first-order single-root parsers only."""
    es = load_dataset("es", "train")
    eu = load_dataset("eu", "train")
    assert final_on_root_share([s.heads for s in es], final_punct(es)) > 0.99
    assert final_on_root_share([s.heads for s in eu], final_punct(eu)) < 0.1
    assert final_on_root_share([[0, 1]], [False]) == 0.0
    assert keeps_final_on_root([2, 0, 2]) and not keeps_final_on_root([2, 0, 1])
    assert not keeps_final_on_root([3, 0, 2]) and not keeps_final_on_root([0, 0, 2])  # not a leaf; two roots
    assert FINAL_ON_ROOT_SHARE == 0.9
    assert choose_final_on_root(None, es, "single", False) is True
    assert choose_final_on_root(None, es, "single", True) is False
    assert choose_final_on_root(None, es, "multi", False) is False
    assert choose_final_on_root(None, eu, "single", False) is False
    assert choose_final_on_root(False, es, "single", False) is False
    assert choose_final_on_root(True, es, "single", False) is True
    with pytest.raises(ValueError, match="first-order, single-root"):  # the settings' rule
        ParserSettings(final_on_root=True, root="multi")
    with pytest.raises(ValueError, match="first-order, single-root"):
        ParserSettings(final_on_root=True, parts="siblings")


@pytest.fixture(scope="module")
def es_parsers():
    train, dev = load_dataset("es", "train")[:150], load_dataset("es", "dev")[:30]
    kw = dict(max_passes=2, labels=False, patience=None, parts="arcs")
    return (train_parser(train, dev, root="single", **kw)[0],
            train_parser(train, dev, root="single", final_on_root=False, **kw)[0])


def test_a_parser_trained_on_es_decodes_final_punctuation_on_the_root_child(es_parsers, tmp_path):
    on, off = es_parsers
    assert on.final_on_root and not off.final_on_root
    assert np.array_equal(on.weights, off.weights)  # training is the same; decoding differs
    test = load_dataset("es", "test")[:150]
    heads_on, heads_off = on.predict_heads(test), off.predict_heads(test)
    ending = [k for k, s in enumerate(test) if final_punct([s])[0] and len(s) > 1]
    assert len(ending) > 140
    for k in ending:
        assert keeps_convention(np.array([-1, *heads_on[k]]))
    assert sum(not keeps_convention(np.array([-1, *heads_off[k]])) for k in ending) > 0
    for k in set(range(len(test))) - set(ending):
        assert heads_on[k] == heads_off[k]
    path = tmp_path / "on.npz"
    on.save(path)
    loaded = Parser.load(path)
    assert loaded.final_on_root and loaded.predict_heads(test) == heads_on
    assert loaded.predict(test, jobs=2)[0] == heads_on
    arrays, meta = read_npz(path, MODEL_KIND, FORMAT_VERSION)
    write_npz_atomic(tmp_path / "before.npz", arrays, {k: v for k, v in meta.items() if k != "final_on_root"})
    assert not Parser.load(tmp_path / "before.npz").final_on_root  # a file written before decodes as before
    write_npz_atomic(tmp_path / "bad.npz", arrays, {**meta, "final_on_root": "yes"})
    with pytest.raises(Exception, match="inconsistent model file \\(final_on_root 'yes'\\)"):
        Parser.load(tmp_path / "bad.npz")
    with pytest.raises(ValueError, match="first-order, single-root"):
        Parser(on.featurizer, on.weights, "multi", final_on_root=True)


def test_cli_records_and_shows_the_choice(tmp_path):
    train, model = tmp_path / "train.conll", tmp_path / "m.npz"
    write_conll(train, load_dataset("es", "train")[:120])
    for flag, expected in (("--final-punct", True), ("--no-final-punct", False)):
        result = run("parser", "train", "--train", train, flag, "--passes", "2", "--no-labels", "--parts", "arcs",
                     "-o", model, "--json")
        assert_ok(result)
        assert json.loads(result.stdout)["final_on_root"] is expected
        info = run("model", "info", model)
        assert_ok(info)
        assert ("final punctuation a leaf of the root's child" in info.stdout) is expected
    test = tmp_path / "test.conll"
    write_conll(test, load_dataset("es", "test")[:20])
    assert_ok(run("parser", "parse", model, test, "-o", tmp_path / "out.conll", "-q"))
    assert len(read_conll(tmp_path / "out.conll")) == 20
    message = usage_line(run("parser", "train", "--train", train, "--final-punct", "--parts", "siblings", "-o", model))
    assert "first-order, single-root" in message
