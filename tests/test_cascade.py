"""Coarse-to-fine pruning (parser.cascade) and the second- and third-order charts over the kept arcs only.

The pruned charts are checked against enumeration of the projective trees that use kept arcs only (scored
through ``tree_parts`` and ``grand_parts``), against the unpruned charts given -inf on every part of a
pruned arc, and, with nothing pruned, against the unpruned charts bit for bit.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import logsumexp

from egnlp.parser.cascade import choose_threshold, gold_recall, kept_fraction, prune_arcs
from egnlp.parser.eisner_grandparents import grand_argmax, grand_log_partition, grand_marginals, grand_parts
from egnlp.parser.eisner_siblings import (n_sibling_parts, sibling_argmax, sibling_log_partition, sibling_marginals,
                                          sibling_offsets, tree_parts)

from tree_space_checks import ROOTS, projective_trees, random_tree


def naive_keep(mu: np.ndarray, threshold: float, top_k: int, gold=None) -> np.ndarray:
    """The definition of prune_arcs, one modifier at a time."""
    size = mu.shape[0]
    keep = np.zeros((size, size), dtype=np.uint8)
    for m in range(1, size):
        heads = [h for h in range(size) if h != m]
        ranked = sorted(heads, key=lambda h: (-mu[h, m], h))
        best = mu[ranked[0], m]
        for rank, h in enumerate(ranked):
            if rank == 0 or (rank < top_k and mu[h, m] >= threshold * best):
                keep[h, m] = 1
        if gold is not None:
            keep[gold[m - 1], m] = 1
    return keep


@pytest.mark.parametrize("seed", range(6))
def test_prune_arcs_matches_its_definition_and_recall_counts_gold_arcs(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 12))
    mu = rng.random((n + 1, n + 1)) ** 3
    if seed % 2:
        mu = np.round(mu, 1)  # ties
    gold = random_tree(rng, n)[1:]
    for threshold, top_k in ((0.0, 100), (0.1, 3), (0.5, 2), (1.0, 1)):
        keep = prune_arcs(mu, threshold, top_k)
        np.testing.assert_array_equal(keep, naive_keep(mu, threshold, top_k))
        assert (keep[:, 1:].sum(axis=0) >= 1).all() and (keep[:, 1:].sum(axis=0) <= max(top_k, 1)).all()
        kept, total = gold_recall(keep, gold)
        assert total == n and kept == sum(int(keep[gold[m - 1], m]) for m in range(1, n + 1))
        arcs, possible = kept_fraction(keep)
        assert possible == n * n and arcs == sum(int(keep[h, m]) for m in range(1, n + 1) for h in range(n + 1)
                                                 if h != m)
        with_gold = prune_arcs(mu, threshold, top_k, gold)
        np.testing.assert_array_equal(with_gold, naive_keep(mu, threshold, top_k, gold))
        assert gold_recall(with_gold, gold) == (n, n)
    assert kept_fraction(prune_arcs(mu, 0.0, n + 1)) == (n * n, n * n)


def sibling_masked(theta: np.ndarray, keep: np.ndarray) -> np.ndarray:
    """theta with -inf on every sibling part of an arc that ``keep`` rules out."""
    size = keep.shape[0]
    off = sibling_offsets(size)
    out = theta.copy()
    for h in range(size):
        for m in range(1, size):
            if h != m and not keep[h, m]:
                out[off[h, m]:off[h, m] + abs(h - m)] = -np.inf
    return out


def random_keep(rng: np.random.Generator, n: int, root: str) -> np.ndarray:
    """A random mask that keeps about half the arcs and the arcs of one projective tree of the space."""
    keep = (rng.random((n + 1, n + 1)) < 0.45).astype(np.uint8)
    trees = projective_trees(n, root)
    tree = trees[rng.integers(len(trees))]
    keep[tree[1:], np.arange(1, n + 1)] = 1
    keep[:, 0] = 0
    np.fill_diagonal(keep, 0)
    return keep


def kept_trees(n: int, root: str, keep: np.ndarray) -> np.ndarray:
    trees = projective_trees(n, root)
    return trees[keep[trees[:, 1:], np.arange(1, n + 1)].all(axis=1)]


def brute(theta: np.ndarray, G: np.ndarray | None, trees: np.ndarray) -> tuple[float, float, np.ndarray, np.ndarray]:
    """(best score, log Z, sibling-part marginals, grandparent marginals) over ``trees`` by enumeration."""
    size = trees.shape[1]
    scores = np.array([theta[tree_parts(t)].sum() + (0.0 if G is None else G[tuple(grand_parts(t).T)].sum())
                       for t in trees])
    log_z = float(logsumexp(scores))
    p = np.exp(scores - log_z)
    mu = np.zeros_like(theta)
    mu_g = np.zeros((size,) * 3)
    for k, t in enumerate(trees):
        mu[tree_parts(t)] += p[k]
        if G is not None:
            mu_g[tuple(grand_parts(t).T)] += p[k]
    return float(scores.max()), log_z, mu, mu_g


@pytest.mark.parametrize("root", ROOTS)
@pytest.mark.parametrize("n", [1, 2, 4, 6])
def test_pruned_charts_match_enumeration_over_the_kept_arcs(n, root):
    rng = np.random.default_rng(10 * n + len(root))
    size = n + 1
    for _ in range(4):
        keep = random_keep(rng, n, root)
        trees = kept_trees(n, root, keep)
        theta = rng.normal(scale=2.0, size=n_sibling_parts(size))
        G = rng.normal(scale=2.0, size=(size,) * 3)
        best, log_z, mu, _ = brute(theta, None, trees)
        heads = sibling_argmax(theta, size, root, keep)
        assert any((heads == t).all() for t in trees)
        assert theta[tree_parts(heads)].sum() == pytest.approx(best, abs=1e-9)
        assert sibling_log_partition(theta, size, root, keep) == pytest.approx(log_z, abs=1e-9)
        z, got = sibling_marginals(theta, size, root, keep)
        assert z == pytest.approx(log_z, abs=1e-9)
        np.testing.assert_allclose(got, mu, atol=1e-10)
        best, log_z, mu, mu_g = brute(theta, G, trees)
        heads = grand_argmax(theta, G, size, root, keep)
        assert any((heads == t).all() for t in trees)
        assert theta[tree_parts(heads)].sum() + G[tuple(grand_parts(heads).T)].sum() == pytest.approx(best, abs=1e-9)
        assert grand_log_partition(theta, G, size, root, keep) == pytest.approx(log_z, abs=1e-9)
        z, got, got_g = grand_marginals(theta, G, size, root, keep)
        assert z == pytest.approx(log_z, abs=1e-9)
        np.testing.assert_allclose(got, mu, atol=1e-10)
        np.testing.assert_allclose(got_g, mu_g, atol=1e-10)


@pytest.mark.parametrize("root", ROOTS)
def test_nothing_pruned_is_the_unpruned_chart_bit_for_bit(root):
    rng = np.random.default_rng(3)
    for n in (1, 3, 9, 17):
        size = n + 1
        theta = rng.normal(scale=3.0, size=n_sibling_parts(size))
        G = rng.normal(scale=3.0, size=(size,) * 3)
        every = np.ones((size, size), dtype=bool)
        np.testing.assert_array_equal(sibling_argmax(theta, size, root, every), sibling_argmax(theta, size, root))
        assert sibling_log_partition(theta, size, root, every) == sibling_log_partition(theta, size, root)
        for a, b in zip(sibling_marginals(theta, size, root, every), sibling_marginals(theta, size, root)):
            np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(grand_argmax(theta, G, size, root, every), grand_argmax(theta, G, size, root))
        assert grand_log_partition(theta, G, size, root, every) == grand_log_partition(theta, G, size, root)
        for a, b in zip(grand_marginals(theta, G, size, root, every), grand_marginals(theta, G, size, root)):
            np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("root", ROOTS)
def test_pruned_charts_match_the_unpruned_ones_with_pruned_parts_forbidden_on_long_sentences(root):
    """Top-3 pruning of random marginals on a 30-word sentence: the same trees, log Z and marginals as the
    unpruned charts with -inf on every part of a pruned arc."""
    rng = np.random.default_rng(7)
    n = 30
    size = n + 1
    gold = random_tree(rng, n)
    mu = rng.random((size, size)) ** 4
    keep = prune_arcs(mu, 0.01, 3, gold[1:])
    chain = np.arange(size) - 1  # a projective tree of every space: each word headed by its left neighbour
    keep[chain[1:], np.arange(1, size)] = 1
    theta = rng.normal(scale=2.0, size=n_sibling_parts(size))
    G = rng.normal(scale=2.0, size=(size,) * 3)
    masked = sibling_masked(theta, keep)
    np.testing.assert_array_equal(sibling_argmax(theta, size, root, keep), sibling_argmax(masked, size, root))
    z, mu_p = sibling_marginals(theta, size, root, keep)
    z_m, mu_m = sibling_marginals(masked, size, root)
    assert z == pytest.approx(z_m, rel=1e-12)
    np.testing.assert_allclose(mu_p, mu_m, atol=1e-12)
    np.testing.assert_array_equal(grand_argmax(theta, G, size, root, keep), grand_argmax(masked, G, size, root))
    z, mu_p, g_p = grand_marginals(theta, G, size, root, keep)
    z_m, mu_m, g_m = grand_marginals(masked, G, size, root)
    assert z == pytest.approx(z_m, rel=1e-12)
    np.testing.assert_allclose(mu_p, mu_m, atol=1e-12)
    np.testing.assert_allclose(g_p, g_m, atol=1e-12)


def test_bad_masks_are_refused():
    theta = np.zeros(n_sibling_parts(4))
    with pytest.raises(ValueError, match="keep must have shape"):
        sibling_argmax(theta, 4, "multi", np.ones((3, 3)))
    with pytest.raises(ValueError, match="threshold"):
        prune_arcs(np.ones((3, 3)), 1.5, 2)
    with pytest.raises(ValueError, match="top_k"):
        prune_arcs(np.ones((3, 3)), 0.5, 0)


def test_choose_threshold_takes_the_largest_that_reaches_the_recall():
    rng = np.random.default_rng(5)
    mus, golds = [], []
    for _ in range(20):
        n = int(rng.integers(2, 15))
        gold = random_tree(rng, n)[1:]
        mu = rng.random((n + 1, n + 1)) ** 6
        mu[gold, np.arange(1, n + 1)] += rng.random(n)
        mus.append(mu)
        golds.append(gold)
    thresholds = (0.5, 0.1, 0.01, 0.0)
    _, rows = choose_threshold(mus, golds, 100, 1.0, thresholds)
    for row in rows:  # by hand
        masks = [prune_arcs(mu, row["threshold"], 100) for mu in mus]
        assert row["recall"] == sum(gold_recall(k, g)[0] for k, g in zip(masks, golds)) / sum(map(len, golds))
        assert row["kept"] == sum(kept_fraction(k)[0] for k in masks) / sum(kept_fraction(k)[1] for k in masks)
    assert [r["threshold"] for r in rows] == [0.5, 0.1, 0.01, 0.0] and rows[-1]["recall"] == 1.0
    for want in (0.0, rows[1]["recall"], 1.0):
        chosen, _ = choose_threshold(mus, golds, 100, want, thresholds)
        assert chosen == next(r["threshold"] for r in rows if r["recall"] >= want)
    capped, rows = choose_threshold(mus, golds, 1, 1.0, thresholds)  # one head each: recall below 1 everywhere
    assert max(r["recall"] for r in rows) < 1.0 and capped == 0.5


@pytest.mark.parametrize("order", ["siblings", "grandparents"])
def test_cascade_trains_saves_loads_and_decodes_over_its_masks(order, es_train, tmp_path):
    """``train_parser(cascade=True)``: the pruner's masks of the training sentences keep every gold arc, the
    model decodes each sentence as the chart over the pruner's mask does, and its file keeps the cascade
    (saved, loaded, parsed the same; a file with a mangled cascade is refused)."""
    from egnlp.base.files import ModelError, read_npz, write_npz_atomic
    from egnlp.corpora import load_dataset
    from egnlp.parser.cascade import prune_arcs
    from egnlp.parser.eisner import inside_outside
    from egnlp.parser.parser_model import FORMAT_VERSION, MODEL_KIND, Parser
    from egnlp.parser_training import train_parser

    from egnlp.model_info import cascade_line

    train = [s for s in es_train if len(s) <= 25][:60]
    dev = load_dataset("es", "dev")[:12]
    stages: list[tuple[str, str]] = []
    parser, _ = train_parser(train, root="single", max_passes=2, cascade_top_k=4, parts=order,
                             on_stage=lambda name, text: stages.append((name, text)))
    info = parser.info["cascade"]
    # what parser train prints of the stages besides the passes: the pruner, its threshold, the labeler
    assert [name for name, _ in stages] == ["pruner", "cascade", "labeler"]
    assert "first 54 sentences" in stages[0][1] and "the last 6" in stages[0][1]
    assert stages[1][1] == f"cascade: {cascade_line(info)}; {info['seconds']:.1f} CPU s"
    assert f"over the {sum(map(len, train)):,} training arcs" in stages[2][1]
    assert parser.pruner is not None and parser.pruner.top_k == 4
    assert info["threshold"] == parser.pruner.threshold and info["tuning_sentences"] == 6
    assert 0.0 < info["train_kept"] < 1.0 and 0.0 < info["train_recall"] <= 1.0
    f = parser.featurizer
    assert f._score_lookup is None  # the pruner's decoding table, let go before the model's passes
    assert parser.pruner._arc_weights is None  # and its weights as that table's scorer reads them (made again below)
    masks = list(parser.pruner.masks(f, f.encode(dev)))
    for mask in masks:
        assert (mask[:, 1:].sum(axis=0) <= 4).all()
    unpruned = parser.pruner
    parser.pruner = None
    free = parser.predict_heads(dev)
    parser.pruner = unpruned
    heads = parser.predict_heads(dev)
    for h, mask in zip(heads, masks):
        assert all(mask[head, m] for m, head in enumerate(h, start=1))
    assert any(a != b for a, b in zip(heads, free)) or all(m[:, 1:].all() for m in masks)
    path = tmp_path / "m.npz"
    parser.save(path)
    loaded = Parser.load(path)
    assert loaded.pruner.threshold == parser.pruner.threshold and loaded.predict(dev) == parser.predict(dev)
    assert loaded.pruner.values == info["values"] == "max-marginals"
    arrays, meta = read_npz(path, MODEL_KIND, FORMAT_VERSION)
    # a file written before max-marginals names no values: its pruner keeps what the marginals keep
    old = {k: v for k, v in meta["cascade"].items() if k != "values"}
    write_npz_atomic(tmp_path / "old.npz", arrays, {**meta, "cascade": old})
    before = Parser.load(tmp_path / "old.npz").pruner
    assert before.values == "marginals"
    for mask, sentence in zip(before.masks(f, f.encode(dev)), dev):
        try:  # the tag filter's arcs, or every arc where those hold no tree
            mu = inside_outside(f.arc_scores(f.encode([sentence]), 0, before.weights, True), "single")[1]
        except ValueError:
            mu = inside_outside(f.arc_scores(f.encode([sentence]), 0, before.weights), "single")[1]
        assert mask.tobytes() == prune_arcs(mu, before.threshold, before.top_k).tobytes()
    for bad_arrays, bad_meta in (({k: v for k, v in arrays.items() if k != "pruner_weights"}, meta),
                                 (arrays, {**meta, "cascade": {"threshold": 0.1}}),
                                 (arrays, {**meta, "cascade": {**meta["cascade"], "values": "scores"}}),
                                 ({**arrays, "pruner_weights": arrays["pruner_weights"][:-1].copy()}, meta)):
        write_npz_atomic(tmp_path / "bad.npz", bad_arrays, bad_meta)
        with pytest.raises(ModelError):
            Parser.load(tmp_path / "bad.npz")


@pytest.mark.parametrize("n", [1, 2, 3, 5])
def test_a_mask_that_holds_no_tree_is_an_error_not_a_loop(n):
    """Only root arcs kept under a single root: no tree for n > 1, and the charts say so (NoTreeError)
    instead of backtracking through the split points of items never filled (the second-order chart
    looped for ever); under several roots the one tree is every word on the root."""
    from egnlp.parser.tree_checks import NoTreeError

    size = n + 1
    keep = np.zeros((size, size), dtype=np.uint8)
    keep[0, 1:] = 1
    theta, G = np.zeros(n_sibling_parts(size)), np.zeros((size, size, size))
    decoders = (lambda root: sibling_argmax(theta, size, root, keep),
                lambda root: grand_argmax(theta, G, size, root, keep))
    for decode in decoders:
        assert decode("multi").tolist() == [-1] + [0] * n
        if n == 1:
            assert decode("single").tolist() == [-1, 0]
        else:
            with pytest.raises(NoTreeError):
                decode("single")


@pytest.mark.parametrize("order", ["siblings", "grandparents"])
def test_a_sentence_whose_kept_arcs_hold_no_tree_is_decoded_over_every_arc(order, es_train, monkeypatch):
    """When a cascade's mask holds no tree of the space (here: only root arcs, one root), the parser decodes
    that sentence over every arc, as the model without its cascade does."""
    from egnlp.corpora import load_dataset
    from egnlp.parser.parser_model import Parser
    from egnlp.parser_training import train_parser

    train = [s for s in es_train if len(s) <= 25][:60]
    dev = [s for s in load_dataset("es", "dev") if len(s) > 1][:6]
    parser, _ = train_parser(train, root="single", max_passes=2, cascade_top_k=4, parts=order)
    pruner = parser.pruner
    parser.pruner = None
    free = parser.predict_heads(dev)
    parser.pruner = pruner

    def root_only(self, encoded, arc_w, prune):
        masks = []
        for s in range(len(encoded)):
            keep = np.zeros((encoded.length(s) + 1,) * 2, dtype=np.uint8)
            keep[0, 1:] = 1
            masks.append(keep)
        return zip(self.featurizer.block_arc_scores(encoded, arc_w, prune, masks), masks)

    monkeypatch.setattr(Parser, "_kept_arc_scores", root_only)
    assert parser.predict_heads(dev) == free


def compact(theta: np.ndarray, G: np.ndarray, parts) -> tuple[np.ndarray, np.ndarray]:
    """Full-layout scores gathered into the pruned layout ``parts``: the kept arcs' sibling parts in
    row-major order, and the grandparent slots."""
    from egnlp.features.kept_parts import grand_cells

    size = parts.size
    off = sibling_offsets(size)
    pieces = [theta[off[h, m]:off[h, m] + abs(h - m)] for h in range(size) for m in range(1, size)
              if h != m and parts.keep[h, m]]
    return np.concatenate(pieces), G[grand_cells(parts)]


@pytest.mark.parametrize("root", ROOTS)
@pytest.mark.parametrize("n", [1, 3, 6, 7])
def test_the_pruned_layout_decodes_as_the_full_layout_over_the_same_mask(n, root):
    """Scores laid out over the kept arcs only (features.kept_parts) give the same trees, log Z and marginals
    as the full layout with the mask, bit for bit, and the parts of a tree map between the two layouts."""
    from egnlp.features.kept_parts import grand_cells, kept_parts
    from egnlp.parser.eisner_grandparents import grand_indicator
    from egnlp.parser.eisner_siblings import arc_marginals, sibling_indicator

    rng = np.random.default_rng(100 + n + len(root))
    size = n + 1
    for _ in range(3):
        keep = random_keep(rng, n, root)
        parts = kept_parts(keep)
        assert parts.n_sib == sum(abs(h - m) for h in range(size) for m in range(1, size) if h != m and keep[h, m])
        theta = rng.normal(scale=2.0, size=n_sibling_parts(size))
        G = rng.normal(scale=2.0, size=(size,) * 3)
        theta_c, G_c = compact(theta, G, parts)
        heads = sibling_argmax(theta, size, root, keep)
        np.testing.assert_array_equal(sibling_argmax(theta_c, size, root, parts=parts), heads)
        assert sibling_log_partition(theta_c, size, root, parts=parts) == sibling_log_partition(theta, size, root, keep)
        z, mu = sibling_marginals(theta, size, root, keep)
        z_c, mu_c = sibling_marginals(theta_c, size, root, parts=parts)
        assert z_c == z
        np.testing.assert_array_equal(mu_c, compact(mu, G, parts)[0])
        np.testing.assert_array_equal(arc_marginals(mu_c, size, parts), arc_marginals(mu, size))
        np.testing.assert_array_equal(sibling_indicator(heads, parts), compact(sibling_indicator(heads), G, parts)[0])
        heads = grand_argmax(theta, G, size, root, keep)
        np.testing.assert_array_equal(grand_argmax(theta_c, G_c, size, root, parts=parts), heads)
        assert grand_log_partition(theta_c, G_c, size, root, parts=parts) == grand_log_partition(theta, G, size, root,
                                                                                                   keep)
        z, mu, mu_g = grand_marginals(theta, G, size, root, keep)
        z_c, mu_c, mu_gc = grand_marginals(theta_c, G_c, size, root, parts=parts)
        assert z_c == z
        np.testing.assert_array_equal(mu_c, compact(mu, G, parts)[0])
        np.testing.assert_array_equal(mu_gc, mu_g[grand_cells(parts)])
        indicator = grand_indicator(heads, size, parts)
        np.testing.assert_array_equal(indicator, grand_indicator(heads, size)[grand_cells(parts)])
        assert indicator.sum() == (heads[1:] > 0).sum()
    with pytest.raises(ValueError, match="layout"):
        sibling_argmax(np.zeros(parts.n_sib + 1), size, root, parts=parts)
    with pytest.raises(ValueError, match="not both"):
        sibling_argmax(theta_c, size, root, keep, parts=parts)


def reachable(parts) -> np.ndarray:
    """Whether each sibling part (h, s, m) of the pruned layout ``parts`` may be in a tree of its kept arcs:
    s is none or a kept modifier of h."""
    size = parts.size
    out = [k == 0 or bool(parts.keep[h, h + k if m > h else h - k]) for h in range(size) for m in range(1, size)
           if h != m and parts.keep[h, m] for k in range(abs(h - m))]
    return np.array(out, dtype=bool)


def test_pruned_layout_features_score_and_scatter_as_the_full_ones(es_train):
    """Sibling and grandparent part features over the kept arcs only (the arcs' pair templates looked up for
    the kept arcs only): the same scores as the full layout's on the parts a tree of kept arcs may have,
    and a scatter of coefficients on them the same feature vector."""
    from egnlp.features.arc_featurizer import ArcFeaturizer
    from egnlp.features.arc_parts import ArcPartFeatures
    from egnlp.features.grandparents import GrandFeaturizer, GrandPartFeatures
    from egnlp.features.kept_parts import grand_cells
    from egnlp.features.siblings import SiblingFeaturizer, SiblingPartFeatures

    train = [s for s in es_train if len(s) <= 20][:12]
    heads = [s.heads for s in train]
    f = ArcFeaturizer.for_corpus(train)
    encoded = f.encode(train)
    f.fit(encoded, heads)
    sib_f, grand_f = SiblingFeaturizer().fit(encoded, heads), GrandFeaturizer().fit(encoded, heads)
    rng = np.random.default_rng(5)
    keeps = []
    for h in heads:
        size = len(h) + 1
        keep = (rng.random((size, size)) < 0.3).astype(np.uint8)
        keep[np.asarray(h), np.arange(1, size)] = 1
        keeps.append(keep)
    full = GrandPartFeatures(SiblingPartFeatures(ArcPartFeatures(f, encoded), sib_f, encoded), grand_f, encoded)
    kept = GrandPartFeatures(SiblingPartFeatures(ArcPartFeatures(f, encoded, keeps=keeps), sib_f, encoded, keeps),
                             grand_f, encoded)
    assert kept.n_parts < full.n_parts
    w = rng.normal(size=full.n_features)
    for i in range(len(train)):
        parts = kept.layout(i)
        lo, mid, hi = full.split(i)
        klo, kmid, khi = kept.split(i)
        s_full, s_kept = full.scores(lo, hi, w), kept.scores(klo, khi, w)
        size = parts.size
        sib_full = s_full[:mid - lo]
        g_full = s_full[mid - lo:].reshape((size,) * 3)
        theta_c, g_c = compact(sib_full, g_full, parts)
        ok = reachable(parts)
        assert ok.sum() < ok.shape[0] or size < 4
        np.testing.assert_allclose(s_kept[:kmid - klo][ok], theta_c[ok], rtol=0, atol=1e-12)
        g, hh, m = grand_cells(parts)
        real = g != m
        np.testing.assert_allclose(s_kept[kmid - klo:][real], g_c[real], rtol=0, atol=1e-12)
        coef = rng.normal(size=khi - klo)
        coef[kmid - klo:][~real] = 0.0
        coef[:kmid - klo][~ok] = 0.0
        full_coef = np.zeros(hi - lo)
        off = sibling_offsets(size)
        at = 0
        for h_ in range(size):
            for m_ in range(1, size):
                if h_ != m_ and parts.keep[h_, m_]:
                    k = abs(h_ - m_)
                    full_coef[off[h_, m_]:off[h_, m_] + k] = coef[at:at + k]
                    at += k
        cube = np.zeros((size,) * 3)
        cube[g, hh, m] = coef[kmid - klo:]
        full_coef[mid - lo:] = cube.reshape(-1)
        a, b = np.zeros(full.n_features), np.zeros(full.n_features)
        full.scatter(lo, hi, full_coef, a)
        kept.scatter(klo, khi, coef, b)
        np.testing.assert_allclose(b, a, rtol=0, atol=1e-12)


def test_kept_arcs_counts_the_masks_the_parser_decodes_over(tmp_path):
    """``Parser.kept_arcs`` on sentences of a UD file: the gold arcs and the arcs that the cascade's masks keep,
    as counted by hand over masks built by the definition of prune_arcs (``naive_keep``) from the pruner's
    marginals; on the tuning split, the recall and kept share the training recorded at the chosen threshold,
    which ``model info`` reports; a parser without a cascade and sentences without heads are refused."""
    import os
    from pathlib import Path

    from egnlp.corpora import Sentence, read_conll
    from egnlp.corpora.sentence import HEAD
    from egnlp.model_info import format_info, model_info
    from egnlp.parser.cascade import KeptArcs
    from egnlp.parser.parser_model import Parser
    from egnlp.parser_training import train_parser, tuning_cut

    ud = Path(os.environ["EGNLP_UD_DIR"])
    train = [s for s in read_conll(ud / "nl_alpino-ud-test.conllu") if len(s) <= 20][:80]
    dev = [s for s in read_conll(ud / "nl_alpino-ud-dev.conllu") if len(s) <= 30][:30]
    parser, _ = train_parser(train, root="single", max_passes=2, cascade_top_k=2, parts="siblings")
    path = tmp_path / "cascade.npz"
    parser.save(path)
    loaded = Parser.load(path)
    f, pruner = loaded.featurizer, loaded.pruner
    gold_kept = gold = kept = possible = 0
    for mu, sentence in zip(pruner.marginals(f, f.encode(dev)), dev, strict=True):
        keep = naive_keep(mu, pruner.threshold, pruner.top_k)
        n = len(sentence)
        gold_kept += sum(int(keep[head, m]) for m, head in enumerate(sentence.heads, start=1))
        gold += n
        kept += sum(int(keep[h, m]) for h in range(n + 1) for m in range(1, n + 1) if h != m)
        possible += n * n
    counted = loaded.kept_arcs(dev)
    assert counted == KeptArcs(gold_kept, gold, kept, possible)
    assert 0.5 < counted.recall < 1.0 and gold <= kept <= 2 * gold < possible  # a word keeps one or two heads
    assert counted.recall == gold_kept / gold and counted.kept_share == kept / possible
    heads = loaded.predict_heads(dev)  # what it decodes lies in the masks it counted
    for h, mask in zip(heads, loaded.pruner.masks(f, f.encode(dev))):
        assert all(mask[head, m] for m, head in enumerate(h, start=1))

    record = parser.info["cascade"]
    tuned = next(row for row in record["tuning"] if row["threshold"] == record["threshold"])
    tune = loaded.kept_arcs(train[tuning_cut(len(train)):])
    assert (tune.recall, tune.kept_share) == (tuned["recall"], tuned["kept"])
    shown = model_info(path)["training"]["cascade"]
    assert (shown["threshold"], shown["top_k"], shown["tuning_sentences"]) == (record["threshold"], 2, 8)
    assert (shown["tuning_recall"], shown["tuning_kept"]) == (tune.recall, tune.kept_share)
    assert f"{100 * tune.recall:.2f}% of the gold arcs" in format_info(model_info(path))

    with pytest.raises(ValueError, match="no cascade"):
        Parser(f, loaded.weights[:f.n_features], "single").kept_arcs(dev)
    headless = Sentence(tuple(row[:HEAD] + ("_",) + row[HEAD + 1:] for row in dev[2].rows), source="x", line=7)
    with pytest.raises(ValueError, match="x:7: the sentence has no heads"):
        loaded.kept_arcs([*dev[:2], headless])


@pytest.mark.parametrize("mode", ["alphabet", "hash"])
def test_one_walk_gives_the_masks_and_the_model_scores_of_two_walks(mode):
    """``ArcPruner.kept_arc_scores`` scores the pruner's weights and a model's in one walk of the arcs: each
    pt_bosque sentence gets the mask of ``ArcPruner.masks`` and, byte for byte, the model's scores that
    ``block_arc_scores`` gives over the masks with the tag filter.  Sentences whose tags no training arc had
    leave no single-root tree under the filter (alphabet mode): their marginals come from every arc, and
    their kept arcs between words are -inf, as the masked scorer gives them."""
    import os
    from pathlib import Path

    from egnlp.corpora import Sentence, read_conll
    from egnlp.corpora.sentence import CPOS, POS
    from egnlp.features.arc_featurizer import ArcFeaturizer
    from egnlp.parser.cascade import ArcPruner

    ud = Path(os.environ["EGNLP_UD_DIR"])
    train = read_conll(ud / "pt_bosque-ud-test.conllu")[:300]
    dev = [s for s in read_conll(ud / "pt_bosque-ud-dev.conllu") if len(s) > 1][:40]
    unseen = [Sentence(tuple(row[:CPOS] + ("zz", "zz") + row[POS + 1:] for row in s.rows)) for s in dev[:3]]
    sentences = dev[:20] + unseen + dev[20:]
    f = ArcFeaturizer.for_corpus(train, mode, hash_bits=18)
    f.fit(f.encode(train), [s.heads for s in train])
    rng = np.random.default_rng(11)
    pruner = ArcPruner(rng.normal(size=f.n_features), "single", 0.01, 5)
    model = rng.normal(size=f.n_features)
    enc = f.encode(sentences)
    masks = list(pruner.masks(f, enc))
    expected = list(f.block_arc_scores(enc, model, True, masks))
    got = list(pruner.kept_arc_scores(f, enc, f.arc_weights(model)))
    assert len(got) == len(sentences)
    for (keep, arc), mask, scores in zip(got, masks, expected):
        assert keep.dtype == mask.dtype and keep.tobytes() == mask.tobytes()
        assert arc.tobytes() == scores.tobytes()
    filtered = [bool((arc[keep != 0] == -np.inf).any()) for keep, arc in got]
    assert filtered[20:23] == [mode == "alphabet"] * 3 and not any(filtered[:20])
