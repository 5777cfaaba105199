"""Tests for parser.rearrange: the greedy non-projective rearrangement of McDonald and Pereira (2006, Sec. 3.2).

A tree's score is checked against the sum of its parts (``tree_parts``, ``grand_parts``); the rearranged
tree against the projective argmax it starts from and against every single head change (brute force):
none may raise its score, none may leave the root constraint or the cascade's mask.
"""

from __future__ import annotations

import numpy as np
import pytest

from egnlp.parser.eisner_grandparents import grand_argmax, grand_parts
from egnlp.features.kept_parts import grand_cells, kept_parts
from egnlp.parser.eisner_siblings import n_sibling_parts, sibling_argmax, sibling_offsets, tree_parts
from egnlp.parser.rearrange import rearrange, tree_score
from egnlp.parser.tree_checks import check_tree

from tree_space_checks import ROOTS, random_tree


def parts_score(heads: np.ndarray, theta: np.ndarray, G: np.ndarray | None) -> float:
    """The score of a tree as the sum of its parts, through the charts' own part lists."""
    total = float(theta[tree_parts(heads)].sum())
    if G is not None:
        g = grand_parts(heads)
        total += float(G[g[:, 0], g[:, 1], g[:, 2]].sum())
    return total


def random_parts(rng: np.random.Generator, n: int, grand: bool) -> tuple[np.ndarray, np.ndarray | None]:
    size = n + 1
    theta = rng.normal(size=n_sibling_parts(size))
    return theta, (rng.normal(size=(size, size, size)) if grand else None)


def is_tree(heads: np.ndarray) -> bool:
    try:
        check_tree(heads)
    except ValueError:
        return False
    return True


def single_changes(heads: np.ndarray, root: str, keep: np.ndarray | None):
    """Every tree one head change away from ``heads`` that keeps the root constraint and the mask."""
    n1 = len(heads)
    for m in range(1, n1):
        for h in range(n1):
            if h in (m, heads[m]) or (keep is not None and not keep[h, m]):
                continue
            other = heads.copy()
            other[m] = h
            if is_tree(other) and (root == "multi" or int((other[1:] == 0).sum()) == 1):
                yield other


def projective_start(theta, G, size, root, keep=None):
    return sibling_argmax(theta, size, root, keep) if G is None else grand_argmax(theta, G, size, root, keep)


@pytest.mark.parametrize("grand", [False, True])
@pytest.mark.parametrize("seed", range(5))
def test_tree_score_is_the_sum_of_the_tree_parts(seed, grand):
    rng = np.random.default_rng(seed)
    for n in (1, 2, 5, 9):
        theta, G = random_parts(rng, n, grand)
        for _ in range(10):
            heads = random_tree(rng, n)
            assert tree_score(heads, theta, G) == pytest.approx(parts_score(heads, theta, G), abs=1e-9)


@pytest.mark.parametrize("grand", [False, True])
@pytest.mark.parametrize("root", ROOTS)
@pytest.mark.parametrize("seed", range(12))
def test_rearranged_tree_is_a_tree_at_least_as_good_and_a_local_optimum(seed, root, grand):
    rng = np.random.default_rng(100 + seed)
    n = int(rng.integers(2, 8))
    size = n + 1
    theta, G = random_parts(rng, n, grand)
    start = projective_start(theta, G, size, root)
    heads, score, steps = rearrange(start, theta, G, root)
    assert is_tree(heads) and heads.dtype == np.int64
    assert root == "multi" or int((heads[1:] == 0).sum()) == 1
    assert score == pytest.approx(parts_score(heads, theta, G), abs=1e-9)
    assert score >= parts_score(start, theta, G) - 1e-12
    assert (steps == 0) == bool((heads == start).all())
    for other in single_changes(heads, root, None):
        assert parts_score(other, theta, G) <= score + 1e-9, (heads, other)


def test_rearrangement_leaves_projective_trees_and_climbs_to_a_crossing_tree():
    """Parts that favour the crossing arcs 0 -> 2, 2 -> 4, 4 -> 1, 1 -> 3: the projective chart cannot give
    them, the search does."""
    size = 5
    arcs = np.full((size, size), -5.0)
    for h, m in ((0, 2), (2, 4), (4, 1), (1, 3)):
        arcs[h, m] = 5.0
    theta = np.empty(n_sibling_parts(size))
    from egnlp.parser.eisner_siblings import sibling_offsets
    off = sibling_offsets(size)
    for h in range(size):
        for m in range(1, size):
            if m != h:
                theta[off[h, m]: off[h, m] + abs(h - m)] = arcs[h, m]
    start = sibling_argmax(theta, size, "single")
    heads, score, steps = rearrange(start, theta, None, "single")
    assert heads.tolist() == [-1, 4, 0, 1, 2] and score == 20.0 and steps >= 1
    assert parts_score(start, theta, None) < 20.0


@pytest.mark.parametrize("root", ROOTS)
@pytest.mark.parametrize("seed", range(8))
def test_moves_stay_within_the_cascade_mask(seed, root):
    rng = np.random.default_rng(200 + seed)
    n = int(rng.integers(3, 9))
    size = n + 1
    theta, G = random_parts(rng, n, bool(seed % 2))
    keep = (rng.random((size, size)) < 0.5).astype(np.uint8)
    keep[np.arange(n), np.arange(1, size)] = 1  # the chain 0 -> 1 -> ... -> n: a tree of both root spaces
    start = projective_start(theta, G, size, root, keep)
    heads, score, _ = rearrange(start, theta, G, root, keep)
    assert all(keep[heads[m], m] for m in range(1, size))
    assert score >= parts_score(start, theta, G) - 1e-12
    for other in single_changes(heads, root, keep):
        assert parts_score(other, theta, G) <= score + 1e-9


@pytest.mark.parametrize("root", ROOTS)
@pytest.mark.parametrize("seed", range(6))
def test_a_pruned_layout_rearranges_as_the_full_one_over_its_mask(seed, root):
    """The cascade's compact layout (egnlp.features.kept_parts: the kept arcs' parts only) gives the tree,
    score and steps of the full layout with the same mask."""
    rng = np.random.default_rng(300 + seed)
    n = int(rng.integers(3, 9))
    size = n + 1
    theta, G = random_parts(rng, n, bool(seed % 2))
    keep = (rng.random((size, size)) < 0.5).astype(np.uint8)
    keep[np.arange(n), np.arange(1, size)] = 1
    parts = kept_parts(keep)
    full_off = sibling_offsets(size)
    compact = np.zeros(parts.n_sib)
    for h in range(size):
        for m in range(1, size):
            if h != m and parts.keep[h, m]:
                k = abs(h - m)
                compact[parts.off[h, m]:parts.off[h, m] + k] = theta[full_off[h, m]:full_off[h, m] + k]
    slots = None if G is None else G[grand_cells(parts)]
    start = projective_start(theta, G, size, root, keep)
    assert np.array_equal(start, sibling_argmax(compact, size, root, parts=parts) if G is None
                          else grand_argmax(compact, slots, size, root, parts=parts))
    full = rearrange(start, theta, G, root, keep)
    pruned = rearrange(start, compact, slots, root, parts=parts)
    assert np.array_equal(full[0], pruned[0]) and full[1:] == pytest.approx(pruned[1:])
    with pytest.raises(ValueError, match="not both"):
        rearrange(start, compact, slots, root, keep=keep, parts=parts)


def test_bad_inputs_are_refused():
    theta = np.zeros(n_sibling_parts(4))
    good = np.array([-1, 0, 1, 2])
    with pytest.raises(ValueError, match="cycle"):
        rearrange(np.array([-1, 2, 1, 0]), theta)
    with pytest.raises(ValueError, match="n_sibling_parts"):
        rearrange(good, theta[:-1])
    with pytest.raises(ValueError, match="G must have shape"):
        rearrange(good, theta, np.zeros((3, 3, 3)))
    with pytest.raises(ValueError, match="one root child"):
        rearrange(np.array([-1, 0, 0, 2]), theta, root="single")
    with pytest.raises(ValueError, match="keep must have shape"):
        rearrange(good, theta, keep=np.ones((3, 3)))
    with pytest.raises(ValueError, match="NaN"):
        tree_score(good, np.full(n_sibling_parts(4), np.nan))


# ---------------------------------------------------------------------------
# The parser: trained over projective trees, decoded by rearrangement; --tree auto by measurement
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("order", ["siblings", "grandparents"])
def test_non_projective_higher_order_parser_rearranges_the_chart_tree(order, es_train, tmp_path):
    """With ``tree="non-projective"`` the problem's argmax (the max-margin trainers' oracle) is the chart's tree
    rearranged, the marginals stay projective; the parser decodes each sentence as the chart's tree rearranged
    over the cascade's mask, and its file keeps the space."""
    from egnlp.corpora import load_dataset
    from egnlp.parser.parser_model import Parser
    from egnlp.parser.trees import tree_space
    from egnlp.parser_training import build_parsing_problem, train_parser

    train = [s for s in es_train if len(s) <= 20][:50]
    dev = load_dataset("es", "dev")[:15]
    _, problem, _ = build_parsing_problem(train[:6], "single", tree="non-projective", **{order: True})
    _, chart, _ = build_parsing_problem(train[:6], "single", **{order: True})
    assert problem.rearranged and not chart.rearranged
    rng = np.random.default_rng(7)
    for i in range(6):
        lo, hi = problem.features.parts(i)
        theta = rng.normal(size=hi - lo)
        size = len(train[i]) + 1
        sib = theta[:n_sibling_parts(size)]
        G = theta[n_sibling_parts(size):].reshape(size, size, size) if order == "grandparents" else None
        want = rearrange(projective_start(sib, G, size, "single"), sib, G, "single")[0]
        got = problem.argmax(i, theta)
        assert np.array_equal(got[:n_sibling_parts(size)][tree_parts(want)], np.ones(size - 1))
        assert np.array_equal(problem.marginals(i, theta)[1], chart.marginals(i, theta)[1])
    parser, _ = train_parser(train, tree="non-projective", root="single", max_passes=2, labels=False, parts=order)
    assert parser.tree == "non-projective"
    heads = parser.predict_heads(dev)
    f = parser.featurizer
    masks = list(parser.pruner.masks(f, f.encode(dev)))
    for h, mask in zip(heads, masks):
        tree = np.array([-1, *h])
        assert is_tree(tree) and int((tree[1:] == 0).sum()) == 1
        assert all(mask[head, m] for m, head in enumerate(h, start=1))
    path = tmp_path / "m.npz"
    parser.save(path)
    loaded = Parser.load(path)
    assert loaded.tree == "non-projective" and loaded.predict_heads(dev) == heads
    loaded.space = tree_space("projective")  # the chart's trees: the rearrangement starts there, never worse
    assert loaded.predict_heads(dev) != heads or all(map(is_projective_heads, heads))


def is_projective_heads(heads) -> bool:
    from egnlp.corpora.sentence import is_projective
    return is_projective(heads)


def test_tree_auto_picks_the_space_that_scores_higher_on_the_last_tenth(es_train, monkeypatch):
    """``measure_tree`` trains on the first nine tenths only and takes the space whose UAS on the last tenth
    is higher, projective on a tie; ``train_parser(tree="auto")`` records both scores and keeps the choice."""
    import egnlp.parser_training as pt
    from egnlp.settings import ParserSettings

    train = [s for s in es_train if len(s) <= 15][:40]
    settings = ParserSettings.build(None, root="single", max_passes=1, labels=False, tree="auto")
    space = pt.TreeChoice.of(train, settings)
    assert space.tree == "auto"
    seen = {}
    real_build = pt.build_parsing_problem

    def build(sentences, *args, **kwargs):
        seen["train"] = list(sentences)
        return real_build(sentences, *args, **kwargs)

    monkeypatch.setattr(pt, "build_parsing_problem", build)
    for scores, want in (({"projective": 80.0, "non-projective": 80.5}, "non-projective"),
                         ({"projective": 80.5, "non-projective": 80.0}, "projective"),
                         ({"projective": 80.0, "non-projective": 80.0}, "projective")):
        monkeypatch.setattr(pt, "uas_scorer", lambda f, tune, root, tree, *a, _s=scores, **k: (
            seen.__setitem__("tune", list(tune)) or (lambda w: _s[tree])))
        chosen, info = pt.measure_tree(train, settings, space)
        assert chosen == want == info["chosen"] and info["uas"] == scores
        assert seen["train"] == train[:36] and seen["tune"] == train[36:] and info["tuning_sentences"] == 4
    monkeypatch.undo()
    parser, _ = pt.train_parser(train, settings=settings)
    choice = parser.info["tree_choice"]
    uas = choice["uas"]
    assert parser.tree == choice["chosen"] == ("non-projective" if uas["non-projective"] > uas["projective"]
                                               else "projective")
