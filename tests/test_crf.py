"""The CRF tagger as a structured problem, on real conll2000 sentences.

- ``ChainFeatures`` (computed label-conjoined features) must score, scatter
  and build sparse deltas exactly like an explicit part -> feature-id CSR
  built independently from the predicate strings;
- ``TaggingProblem``'s marginals of the part vector must match brute-force
  enumeration on a short real sentence; gold, loss and argmax must agree;
- online EG must reach the primal optimum that scipy's L-BFGS finds.
"""

import itertools

import numpy as np
import pytest
from nltk.corpus import conll2000
from scipy.optimize import minimize

from egnlp.features.chain_features import ChainFeaturizer
from egnlp.features.csr import PartFeatures
from egnlp.features.predicates import token_predicates
from egnlp.tagger.crf import CRFModel
from egnlp.tagger.tagging_problem import TaggingProblem
from egnlp.training.eg import EGConfig, fit_eg_ll
from egnlp.training.structured_problem import log_linear_gradient, log_linear_primal


def pos_data(k, split="train.txt"):
    sents = conll2000.tagged_sents(split)[:k]
    return [[w for w, _ in s] for s in sents], [[t for _, t in s] for s in sents]


def chunk_data(k, split="train.txt"):
    sents = conll2000.iob_sents(split)[:k]
    return ([[w for w, _, _ in s] for s in sents], [[c for _, _, c in s] for s in sents],
            [[p for _, p, _ in s] for s in sents])


@pytest.fixture(scope="module")
def chunking():
    tokens, labels, pos = chunk_data(40)
    f = ChainFeaturizer.fit(tokens, labels, pos)
    return f, TaggingProblem.from_sentences(f, tokens, labels, pos), (tokens, labels, pos)


def explicit_features(f: ChainFeaturizer, tokens, labels, pos):
    """The part -> feature-ids CSR of the same corpus, built from strings and (predicate, label) pairs."""
    pair_id = {}
    for p, pred in enumerate(f.predicates):
        for m in range(f.lab_ptr[p], f.lab_ptr[p + 1]):
            pair_id[(pred, f.labels[f.lab_labels[m]])] = m
    # The node features are exactly the (predicate, label) pairs seen in training.
    seen = {(pred, lab) for s in range(len(tokens))
            for preds, lab in zip(token_predicates(tokens[s], pos[s] if pos else None, use_pos=f.use_pos), labels[s])
            for pred in preds}
    assert set(pair_id) == seen
    bigrams = sorted({(f.label_index[a], f.label_index[b]) for seq in labels for a, b in zip(seq, seq[1:])})
    assert [tuple(p) for p in f.trans_pairs] == bigrams
    n_node, L, T = len(pair_id), f.n_labels, len(bigrams)
    part_ptr, feat_lists = [0], []
    for s, toks in enumerate(tokens):
        for preds in token_predicates(toks, pos[s] if pos else None, use_pos=f.use_pos):
            for lab in f.labels:
                feat_lists.append([pair_id[(p, lab)] for p in preds if (p, lab) in pair_id])
        feat_lists.extend([n_node + k] for k in range(T + 2 * L))
        part_ptr.append(len(feat_lists))
    feat_ptr = np.concatenate([[0], np.cumsum([len(x) for x in feat_lists])]).astype(np.int64)
    feat_ids = np.array([j for x in feat_lists for j in x], dtype=np.int32)
    return PartFeatures(np.array(part_ptr, dtype=np.int64), feat_ptr, feat_ids, n_node + T + 2 * L)


def test_chain_features_match_an_explicit_construction(chunking):
    f, problem, (tokens, labels, pos) = chunking
    pf = problem.features
    ref = explicit_features(f, tokens, labels, pos)
    assert (pf.n_features, pf.n_parts, pf.n_examples) == (ref.n_features, ref.n_parts, ref.n_examples)
    np.testing.assert_array_equal(pf.part_ptr, ref.part_ptr)
    rng = np.random.default_rng(0)
    w = rng.normal(size=pf.n_features)
    ranges = [pf.parts(i) for i in range(pf.n_examples)] + [(0, pf.n_parts), (pf.parts(2)[0] + 7, pf.parts(5)[0] + 11), (3, 3)]
    for lo, hi in ranges:
        np.testing.assert_allclose(pf.scores(lo, hi, w), ref.scores(lo, hi, w), rtol=1e-12, atol=1e-12)
        coef = rng.normal(size=hi - lo)
        got, want = np.zeros(pf.n_features), np.zeros(pf.n_features)
        pf.scatter(lo, hi, coef, got)
        ref.scatter(lo, hi, coef, want)
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
        ids, vals, dot, sq = pf.sparse_delta(lo, hi, coef, w)
        dense = np.zeros(pf.n_features)
        dense[ids] = vals
        assert len(set(ids.tolist())) == len(ids)
        np.testing.assert_allclose(dense, want, rtol=1e-12, atol=1e-12)
        assert dot == pytest.approx(float(w @ want), rel=1e-10, abs=1e-10)
        assert sq == pytest.approx(float(want @ want), rel=1e-10, abs=1e-10)
    assert pf.nbytes > 0


def test_marginals_match_brute_force_on_a_real_sentence(chunking):
    f, problem, (tokens, labels, pos) = chunking
    pf = problem.features
    i = 29
    n, L = pf.length(i), f.n_labels
    assert n == 4 and L ** n <= 200_000
    lo, hi = pf.parts(i)
    theta = np.random.default_rng(1).normal(scale=2.0, size=hi - lo)
    # Part indices used by every labelling, built from the layout in the docstring.
    paths = np.array(list(itertools.product(range(L), repeat=n)))
    T = pf.n_transitions
    pair_part = {tuple(p): k for k, p in enumerate(pf.trans_pairs)}
    cols = [t * L + paths[:, t] for t in range(n)]
    cols += [n * L + T + paths[:, 0], n * L + T + L + paths[:, -1]]
    idx = np.stack(cols, axis=1)
    trans = np.array([[pair_part.get((a, b), -1) for a, b in zip(y, y[1:])] for y in paths.tolist()])
    scores = theta[idx].sum(axis=1) + np.where(trans >= 0, theta[n * L + trans], 0.0).sum(axis=1)
    log_z = np.logaddexp.reduce(scores)
    p = np.exp(scores - log_z)
    mu = np.zeros(hi - lo)
    for c in range(idx.shape[1]):
        np.add.at(mu, idx[:, c], p)
    for c in range(trans.shape[1]):
        ok = trans[:, c] >= 0
        np.add.at(mu, n * L + trans[ok, c], p[ok])
    got_z, got_mu = problem.marginals(i, theta)
    assert got_z == pytest.approx(log_z, rel=1e-12)
    assert problem.log_partition(i, theta) == pytest.approx(log_z, rel=1e-12)
    np.testing.assert_allclose(got_mu, mu, atol=1e-12)
    best = paths[int(np.argmax(scores))]
    np.testing.assert_array_equal(problem.argmax(i, theta), problem.path_parts(i, best))


def test_gold_loss_and_argmax(chunking):
    f, problem, (tokens, labels, pos) = chunking
    pf = problem.features
    L, T = f.n_labels, pf.n_transitions
    gold_ids = f.label_ids(labels)
    for i in (0, 7, 29):
        lo, hi = pf.parts(i)
        n = pf.length(i)
        g, e = problem.gold[lo:hi], problem.loss[lo:hi]
        np.testing.assert_array_equal(g, problem.path_parts(i, gold_ids[i]))
        assert g[:n * L].sum() == n and g[n * L:n * L + T].sum() == n - 1
        assert g[n * L + T:].sum() == 2
        np.testing.assert_array_equal(e[:n * L], 1.0 - g[:n * L])
        assert not e[n * L:].any()
        # Scores favouring the gold labels give the gold labelling back (not 5 * g: a
        # transition part counts, so repeating a gold transition would pay), and the
        # loss-augmented argmax of zero scores is a labelling with n errors.
        theta = np.zeros(hi - lo)
        theta[:n * L] = 5.0 * g[:n * L]
        np.testing.assert_array_equal(problem.argmax(i, theta), g)
        z = problem.argmax(i, e)
        assert float(z @ e) == n
    # Decoding with the model agrees with the problem's argmax.
    w = np.random.default_rng(2).normal(size=pf.n_features)
    decoded = CRFModel(f, w).predict(tokens[:5], pos[:5])
    for i in range(5):
        lo, hi = pf.parts(i)
        z = problem.argmax(i, pf.scores(lo, hi, w))
        np.testing.assert_array_equal(z, problem.path_parts(i, f.label_ids([decoded[i]])[0]))


def test_gold_and_loss_are_compact_and_trainers_start_in_float64(chunking):
    """uint8 gold and loss save memory; -10 * loss must not wrap around in uint8."""
    from egnlp.training.eg import EGConfig, EGRun

    f, problem, _ = chunking
    assert problem.gold.dtype == np.uint8 and problem.loss.dtype == np.uint8
    # a sentence of 300 tokens counts a transition 299 times: its gold needs uint16
    tokens, tags = ["the"] * 300, ["DT"] * 300
    pairs = f.trans_pairs.tolist()
    a = next(a for a, b in pairs if a == b)  # a label seen following itself (I-NP after I-NP)
    long = TaggingProblem(f.features(f.encode([tokens], [tags])), [[a] * 300])
    assert long.gold.dtype == np.uint16
    pf = long.features
    ab = pairs.index([a, a])
    assert long.gold[300 * pf.n_labels + ab] == 299 and long.gold.sum() == 300 + 299 + 2
    run = EGRun(problem, EGConfig(), "ll")
    assert run.theta.dtype == np.float64
    np.testing.assert_array_equal(run.theta, -10.0 * problem.loss.astype(np.float64))


def test_unknown_predicates_and_bad_input(chunking):
    f = chunking[0]
    enc = f.encode([["Zyxwvut", "qqq"]], [["NN", "NN"]])
    assert enc.pred_ids.size > 0  # bias, shapes and POS predicates are known
    assert all(0 <= k < len(f.predicates) for k in enc.pred_ids)
    with pytest.raises(ValueError, match="POS"):
        f.encode([["a"]])
    seen = {tuple(p) for p in f.trans_pairs.tolist()}
    unseen = next((a, b) for a in range(f.n_labels) for b in range(f.n_labels) if (a, b) not in seen)
    with pytest.raises(ValueError, match="no part"):
        TaggingProblem(f.features(f.encode([["a", "b"]], [["DT", "NN"]])), [list(unseen)])
    with pytest.raises(ValueError, match="labels for"):
        TaggingProblem(f.features(f.encode([["a", "b"]], [["DT", "NN"]])), [[0]])


def test_all_transitions_gives_every_pair_a_part():
    tokens, labels = pos_data(10)
    f = ChainFeaturizer.fit(tokens, labels, all_transitions=True)
    problem = TaggingProblem.from_sentences(f, tokens, labels)
    L = f.n_labels
    assert problem.features.n_transitions == L * L
    lo, hi = problem.features.parts(0)
    log_z, mu = problem.marginals(0, np.zeros(hi - lo))
    n = problem.features.length(0)
    # Uniform scores: every transition is equally likely at every position.
    np.testing.assert_allclose(mu[n * L:n * L + L * L], (n - 1) / L ** 2)
    assert log_z == pytest.approx(n * np.log(L))


def test_eg_reaches_the_lbfgs_optimum():
    tokens, labels = pos_data(50)
    problem = TaggingProblem.from_sentences(ChainFeaturizer.fit(tokens, labels), tokens, labels)
    C = 1.0
    result = fit_eg_ll(problem, config=EGConfig(C=C, anneal=False, tol=1e-4, max_passes=200, seed=0))
    assert result.converged and result.final.rel_gap <= 1e-4
    # The dual never went above the primal, and the gap shrank.
    assert all(r.gap >= -1e-8 for r in result.records)
    res = minimize(lambda w: log_linear_gradient(problem, w, C), np.zeros(problem.features.n_features),
                   jac=True, method="L-BFGS-B", options={"maxiter": 3000, "gtol": 1e-8, "ftol": 1e-15})
    eg_primal = log_linear_primal(problem, result.weights * C, C)
    assert eg_primal == pytest.approx(res.fun, rel=1e-4)
    assert res.fun <= eg_primal + 1e-6 * abs(res.fun)
    # -dual is a lower bound on the optimum.
    assert -result.final.dual <= res.fun * (1 + 1e-9)


def test_compact_eg_closes_the_gap_as_float64_does():
    """float32 theta and marginals recomputed at each visit: the same passes to the same optimum as the
    float64 state, and the final dual recomputed from scratch from the float32 theta alone is the one
    the run recorded (W, the terms and the marginals never drift from the stored state)."""
    from egnlp.training.eg import EGRun

    tokens, labels = pos_data(50)
    problem = TaggingProblem.from_sentences(ChainFeaturizer.fit(tokens, labels), tokens, labels)
    runs = [fit_eg_ll(problem, config=EGConfig(C=1.0, anneal=False, tol=1e-4, max_passes=200, seed=0,
                                                compact=compact)) for compact in (False, True)]
    full, compact = runs
    assert full.converged and compact.converged
    assert abs(len(full.records) - len(compact.records)) <= 1
    assert compact.final.rel_gap <= 1e-4
    assert compact.final.primal == pytest.approx(full.final.primal, rel=1e-6)
    np.testing.assert_allclose(compact.weights, full.weights, atol=1e-4)
    theta = compact.state["theta"]
    assert theta.dtype == np.float32 and full.state["theta"].dtype == np.float64
    again = EGRun(problem, EGConfig(C=1.0, anneal=False, compact=True), "ll", theta=theta)
    assert again.mu is None
    assert again.dual() == pytest.approx(compact.final.dual, rel=1e-9)


def test_token_predicates_spelled_out_and_unchanged_by_the_form_memo():
    # The predicates of each token in order (the order is part of the model: sums follow it). The
    # predicates of a form are kept between calls; a list handed out must stay the caller's own.
    toks = ["Well-known", "NASA", "won", "in", "1984", "Well-known"]
    expected_first = ["bias", "w=Well-known", "lw=well-known", "shape=Xx-x",
                      "p1=W", "s1=n", "p2=We", "s2=wn", "p3=Wel", "s3=own", "p4=Well", "s4=nown",
                      "has_hyphen", "init_cap_first",
                      "w[-2]=<s>", "w[-1]=<s>", "w[1]=nasa", "w[2]=won",
                      "w[-1]|w[0]=<s>|well-known", "w[0]|w[1]=well-known|nasa"]
    expected_nasa = ["bias", "w=NASA", "lw=nasa", "shape=X",
                     "p1=N", "s1=a", "p2=NA", "s2=sa", "p3=NAS", "s3=asa", "p4=NASA", "s4=nasa",
                     "init_cap", "all_caps",
                     "w[-2]=<s>", "w[-1]=well-known", "w[1]=won", "w[2]=in",
                     "w[-1]|w[0]=well-known|nasa", "w[0]|w[1]=nasa|won"]
    expected_year = ["bias", "w=1984", "lw=1984", "shape=d",
                     "p1=1", "s1=4", "p2=19", "s2=84", "p3=198", "s3=984", "p4=1984", "s4=1984",
                     "has_digit",
                     "w[-2]=won", "w[-1]=in", "w[1]=well-known", "w[2]=</s>",
                     "w[-1]|w[0]=in|1984", "w[0]|w[1]=1984|well-known"]
    for _ in range(2):  # the second call reads the kept forms
        preds = token_predicates(toks)
        assert preds[0] == expected_first
        assert preds[1] == expected_nasa
        assert preds[4] == expected_year
        assert "init_cap" in preds[5] and "init_cap_first" not in preds[5]
        preds[1].append("changed")
    chunk = token_predicates(["He", "ran"], ["PRP", "VBD"], use_pos=True)[1]
    assert chunk[-9:] == ["t[-2]=<s>", "t[-1]=PRP", "t[0]=VBD", "t[1]=</s>", "t[2]=</s>",
                          "t[-2]|t[-1]=<s>|PRP", "t[-1]|t[0]=PRP|VBD", "t[0]|t[1]=VBD|</s>", "t[1]|t[2]=</s>|</s>"]


# -- the tag dictionary: a lattice of labels per token ----------------------------------------------

def lattice_problems(k=40, least=2):
    tokens, labels = pos_data(k)
    plain = ChainFeaturizer.fit(tokens, labels)
    featurizer = plain.with_dictionary(tokens, labels, least)
    return (tokens, labels, TaggingProblem.from_sentences(plain, tokens, labels),
            TaggingProblem.from_sentences(featurizer, tokens, labels))


def test_lattice_parts_score_and_count_as_the_dense_parts_they_keep():
    """A node part of the lattice scores as the dense part (t, y); transition, start and stop parts as
    their pairs and labels; the gold parts give the same phi(gold); a word seen twice takes only its tags."""
    from egnlp.training.structured_problem import gold_minus

    tokens, labels, dense, lat = lattice_problems()
    fd, fl = dense.features, lat.features
    assert fl.lattice is not None and fl.n_parts < fd.n_parts / 2
    L, T = fd.n_labels, fd.n_transitions
    w = np.random.default_rng(0).normal(size=fd.n_features)
    ids = ChainFeaturizer.fit(tokens, labels).label_ids(labels)
    for i in range(fd.n_examples):
        s = fd.scores(*fd.parts(i), w)
        sl = fl.scores(*fl.parts(i), w)
        aptr, alab, pairs = fl.lattice_of(i)
        n, Q, P = len(tokens[i]), alab.shape[0], pairs.shape[0]
        rows = np.repeat(np.arange(n), np.diff(aptr))
        np.testing.assert_array_equal(sl[:Q], s[rows * L + alab])
        k = np.searchsorted(fd.trans_pairs[:, 0] * L + fd.trans_pairs[:, 1], pairs[:, 0] * L + pairs[:, 1])
        np.testing.assert_array_equal(sl[Q:Q + P], s[n * L + k])
        np.testing.assert_array_equal(sl[Q + P:Q + P + aptr[1]], s[n * L + T + alab[:aptr[1]]])
        np.testing.assert_array_equal(sl[Q + P + aptr[1]:], s[n * L + T + L + alab[aptr[n - 1]:]])
        lo, hi = fl.parts(i)
        np.testing.assert_array_equal(lat.path_parts(i, ids[i]), lat.gold[lo:hi])
        assert lat.loss[lo:lo + Q].sum() == Q - n
    np.testing.assert_allclose(gold_minus(lat, np.zeros(fl.n_parts)), gold_minus(dense, np.zeros(fd.n_parts)))
    counts = {}
    for toks in tokens:
        for word in toks:
            counts[word] = counts.get(word, 0) + 1
    the = [t for t, toks in enumerate(tokens) if "the" in toks][0]
    aptr, alab, _ = fl.lattice_of(the)
    at = tokens[the].index("the")
    seen = {y for toks, tags in zip(tokens, labels) for w_, y in zip(toks, tags) if w_ == "the"}
    assert len(alab[aptr[at]:aptr[at + 1]]) == len(seen)
    rare = [(t, j) for t, toks in enumerate(tokens) for j, word in enumerate(toks) if counts[word] == 1][0]
    aptr, alab, _ = fl.lattice_of(rare[0])
    assert aptr[rare[1] + 1] - aptr[rare[1]] == L


def test_eg_on_a_lattice_reaches_the_lbfgs_optimum_full_and_compact():
    """EG closes the duality gap on the lattice problem (float64 state and compact), at the optimum that
    L-BFGS finds for it; Viterbi decoding keeps to the lattice."""
    from egnlp.tagger.crf import decode_ids

    _, _, _, problem = lattice_problems(30)
    C = 1.0
    runs = [fit_eg_ll(problem, config=EGConfig(C=C, anneal=False, tol=1e-4, max_passes=200, seed=0,
                                                compact=compact)) for compact in (False, True)]
    full, compact = runs
    assert full.converged and compact.converged and compact.final.rel_gap <= 1e-4
    assert compact.final.primal == pytest.approx(full.final.primal, rel=1e-6)
    res = minimize(lambda w: log_linear_gradient(problem, w, C), np.zeros(problem.features.n_features),
                   jac=True, method="L-BFGS-B", options={"maxiter": 3000, "gtol": 1e-8, "ftol": 1e-15})
    assert log_linear_primal(problem, full.weights * C, C) == pytest.approx(res.fun, rel=1e-4)
    assert -full.final.dual <= res.fun * (1 + 1e-9)
    f = problem.features
    for i, path in enumerate(decode_ids(f, full.weights)):
        aptr, alab, _ = f.lattice_of(i)
        assert all(path[t] in alab[aptr[t]:aptr[t + 1]] for t in range(len(path)))


def test_a_crf_with_a_dictionary_saves_loads_and_tags_the_same(tmp_path):
    from egnlp.tagger.tagger_model import Tagger

    tokens, labels = pos_data(60)
    from egnlp.tagger_training import train_tagger
    tagger, _ = train_tagger(tokens, labels, max_passes=3, dictionary=2)
    assert tagger.info["dictionary"] == 2 and tagger.model.featurizer.min_count == 2
    test_tokens, _ = pos_data(20, "test.txt")
    tagger.save(tmp_path / "m.npz")
    loaded = Tagger.load(tmp_path / "m.npz")
    assert loaded.model.predict(test_tokens) == tagger.model.predict(test_tokens)
    node = loaded.model.marginals(test_tokens[0])
    np.testing.assert_allclose(node.sum(axis=1), 1.0)
    labels_, marginals = loaded.model.predict_marginals(test_tokens[:3])
    np.testing.assert_allclose(marginals[0], node)
    assert labels_ == tagger.model.predict(test_tokens[:3])
    plain, _ = train_tagger(tokens, labels, max_passes=1)
    assert plain.info["dictionary"] == 0 and plain.model.featurizer.dictionary is None
