"""The maxent tagger and its trainers, checked on real CoNLL-2000 data.

The objective must match a dense re-implementation and its gradient finite
differences; CD (Huang et al. 2010, Algorithm 3), GIS, SCGIS and L-BFGS must
land on the same optimum; every accepted CD step must satisfy the sufficient
decrease condition (35) when replayed on the exact objective; beam search
must agree with an independent greedy decoder and never score below it.
"""

import io
import json

import numpy as np
import pytest
from nltk.corpus import conll2000

from egnlp.features.predicates import token_predicates
from egnlp.tagger.maxent import BOS, MaxentModel, history_predicates, history_table, training_events
from egnlp.tagger_training import train_maxent_tagger
from egnlp.training.coordinate_descent import CDConfig, fit_cd
from egnlp.training.iterative_scaling import GISConfig, SCGISConfig
from egnlp.training.maxent_problem import Columns, MaxentProblem, Sums, update_sums
from egnlp.training.primal import LBFGSConfig, fit_maxent_lbfgs
from egnlp.training.registry import MAXENT, get_trainer, make_config, trainer_names
from maxent_checks import dense_objective

CONFIGS = {"cd": CDConfig, "gis": GISConfig, "scgis": SCGISConfig, "lbfgs": LBFGSConfig}


def build_problem(*args, **kwargs):
    """(events, problem) of labelled sentences, as the maxent tagger trains on them."""
    events = training_events(*args, **kwargs)
    problem = MaxentProblem.from_events(events.ev_ptr, events.ev_pred, events.gold, len(events.labels),
                                        len(events.predicates))
    return events, problem


def train_maxent(tokens, labels, pos=None, **settings):
    """(inner MaxentModel, records) of a maxent tagger trained through the application layer."""
    tagger, result = train_maxent_tagger(tokens, labels, pos, **settings)
    return tagger.model, result.records


def _pos(split: str, start: int, stop: int):
    sents = conll2000.tagged_sents(split)[start:stop]
    return [[w for w, _ in s] for s in sents], [[t for _, t in s] for s in sents]


@pytest.fixture(scope="module")
def tiny():
    """A few hundred tokens, all predicates."""
    toks, tags = _pos("train.txt", 0, 12)
    return build_problem(toks, tags)


@pytest.fixture(scope="module")
def small():
    """100 sentences, all predicates seen at least twice; sigma^2 = 10 (C = 0.1) as in Sec. 5.1."""
    toks, tags = _pos("train.txt", 0, 100)
    return build_problem(toks, tags, cutoff=2)[1]


@pytest.fixture(scope="module")
def reduced():
    """60 sentences with word, suffix and tag-history predicates only: f^# = 4, so GIS converges in a test."""
    toks, tags = _pos("train.txt", 100, 160)
    return build_problem(toks, tags, predicate_filter=lambda p: p.startswith(("lw=", "s2=", "y[")))[1]


@pytest.fixture(scope="module")
def pos_model():
    toks, tags = _pos("train.txt", 0, 300)
    model, history = train_maxent(toks, tags, max_passes=10, tol=0.0)
    return model, history


@pytest.fixture(scope="module")
def pos_test():
    return _pos("test.txt", 0, 200)


# --------------------------------------------------------------------------- objective



def test_objective_matches_dense_formula(tiny):
    events, data = tiny
    w = np.random.default_rng(0).normal(scale=0.7, size=data.n_features)
    assert data.objective(w, 0.1) == pytest.approx(dense_objective(data, w, 0.1), rel=1e-12)
    assert data.objective(np.zeros(data.n_features), 0.1) == pytest.approx(data.n_events * np.log(len(events.labels)))


def test_data_layout(tiny):
    events, data = tiny
    assert 200 < data.n_events < 400 and len(events.labels) == data.n_labels
    # columns are the transpose of rows
    rows = {(i, p) for i in range(data.n_events) for p in data.ev_pred[data.ev_ptr[i]:data.ev_ptr[i + 1]]}
    cols = {(i, p) for p in range(data.n_predicates) for i in data.pr_ev[data.pr_ptr[p]:data.pr_ptr[p + 1]]}
    assert rows == cols and len(rows) == data.ev_pred.size
    # features: exactly the (predicate, gold label) pairs, with their counts
    seen: dict = {}
    for i, p in rows:
        key = (p, data.labels[i])
        seen[key] = seen.get(key, 0) + 1
    feats = dict(zip(zip(data.feat_pred.tolist(), data.feat_label.tolist()), data.emp.tolist()))
    assert feats == seen
    for p in range(data.n_predicates):
        assert np.all(data.feat_pred[data.feat_ptr[p]:data.feat_ptr[p + 1]] == p)


def test_gradient_matches_finite_differences(tiny):
    _, data = tiny
    rng = np.random.default_rng(1)
    w = rng.normal(scale=0.5, size=data.n_features)
    f, g = data.objective_and_gradient(w, 0.1)
    assert f == pytest.approx(data.objective(w, 0.1), rel=1e-13)
    h = 1e-5
    for t in rng.choice(data.n_features, size=40, replace=False):
        e = np.zeros(data.n_features)
        e[t] = h
        fd = (data.objective(w + e, 0.1) - data.objective(w - e, 0.1)) / (2 * h)
        assert fd == pytest.approx(g[t], rel=1e-5, abs=1e-6)
    d = rng.normal(size=data.n_features)
    fd = (data.objective(w + h * d, 0.1) - data.objective(w - h * d, 0.1)) / (2 * h)
    assert fd == pytest.approx(g @ d, rel=1e-6)


# --------------------------------------------------------------------------- trainers


def test_cd_reaches_lbfgs_optimum_sigma2_10(small):
    ref = fit_maxent_lbfgs(small, config=LBFGSConfig(C=0.1, max_passes=1000, tol=0.0, gtol=1e-6))
    assert ref.converged
    cd = fit_cd(small, config=CDConfig(C=0.1, max_passes=400, tol=0.0, gtol=3e-3))
    assert cd.converged
    f_star = ref.final.primal
    assert abs(cd.final.primal - f_star) / f_star < 1e-5
    # f is (1/sigma^2)-strongly convex: ||w - w*|| <= sigma^2 ||grad f(w)||
    assert np.linalg.norm(cd.weights - ref.weights) <= 10.0 * (cd.final.grad_norm + ref.final.grad_norm)
    assert np.max(np.abs(cd.weights - ref.weights)) < 2e-2


def test_all_trainers_reach_the_same_optimum(reduced):
    ref = fit_maxent_lbfgs(reduced, config=LBFGSConfig(C=1.0, max_passes=1000, tol=0.0, gtol=1e-7))
    f_star = ref.final.primal
    for name in ("cd", "gis", "scgis", "lbfgs"):
        trainer = get_trainer(name, MAXENT)
        gtol = {"gtol": 1e-5} if name == "lbfgs" else {"gtol": 1e-3}  # L-BFGS: max |g_t|; the others: ||g||
        res = trainer.fit(reduced, config=make_config(trainer, C=1.0, max_passes=3000, tol=0.0, **gtol))
        assert res.converged, name
        assert abs(res.final.primal - f_star) / f_star < 1e-5, name
        assert np.linalg.norm(res.weights - ref.weights) <= 1.0 * (res.final.grad_norm + ref.final.grad_norm), name
        assert np.max(np.abs(res.weights - ref.weights)) < 1e-3, name
        assert res.final.grad_norm == pytest.approx(np.linalg.norm(reduced.objective_and_gradient(res.weights,
                                                                                                1.0)[1]))


@pytest.mark.parametrize("name", ["cd", "gis", "scgis"])
def test_objective_never_increases(small, name):
    trainer = get_trainer(name, MAXENT)
    res = trainer.fit(small, config=make_config(trainer, max_passes=25, tol=0.0))
    f = np.array([r.primal for r in res.records])
    assert len(f) == 26 and f[-1] < 0.2 * f[0]
    assert np.all(np.diff(f) <= 1e-12 * np.abs(f[1:]))


def test_cd_steps_satisfy_sufficient_decrease(tiny):
    """Replay every accepted CD step on the exact objective: A'(0) is the gradient, and (35) holds."""
    _, data = tiny
    config = CDConfig(C=0.1, max_passes=3, tol=0.0, record_steps=10 ** 6)
    res = fit_cd(data, config=config)
    steps_t, steps_z = res.state["steps_t"], res.state["steps_z"]
    steps_g, by_bound = res.state["steps_grad"], res.state["steps_by_bound"]
    assert steps_t.size > 2 * data.n_features  # nearly every feature moves in each pass
    assert 0 < by_bound.sum() < by_bound.size  # both the bound (38) and the exact test (35) accepted steps
    w = np.zeros(data.n_features)
    f, g = data.objective_and_gradient(w, config.C)
    for t, z, gp in zip(steps_t, steps_z, steps_g):
        assert gp == pytest.approx(g[t], rel=1e-6, abs=1e-6)  # S, T drift a little within a pass
        w[t] += z
        f_new, g = data.objective_and_gradient(w, config.C)
        assert f_new - f <= config.gamma * z * gp + 1e-10 * abs(f)
        assert z * gp < 0
        f = f_new
    np.testing.assert_allclose(w, res.weights, rtol=0, atol=1e-12)
    assert f == pytest.approx(res.final.primal, rel=1e-10)


def test_sum_update_keeps_a_dominant_label_alive():
    """w_t += z with z = -60 on a label holding all but 1e-30 of an event's mass.

    e^z - 1 rounds to -1 there, so the update S + S (e^z - 1) made S exactly 0
    and that label's probability could never grow again.
    """
    S = np.array([[1.0], [1e-30]])  # (labels, events)
    T = np.array([1.0])
    one = np.array([0], dtype=np.int64)
    update_sums(0, -60.0, Columns(one, one, np.array([0, 1], dtype=np.int64), np.array([0], dtype=np.int32)),
                Sums(S, T))
    p = np.exp(-60.0) / (np.exp(-60.0) + 1e-30)
    assert S[0, 0] / T[0] == pytest.approx(p, rel=1e-12)
    assert S[1, 0] / T[0] == pytest.approx(1 - p, rel=1e-9)


def test_cd_on_full_conll2000_pos_decreases_the_objective():
    """The whole conll2000-pos training set (190,717 events): pass 2 once tripled f by the fault above."""
    toks, tags = _pos("train.txt", 0, None)
    data = build_problem(toks[:8042], tags[:8042])[1]
    res = fit_cd(data, config=CDConfig(max_passes=2, tol=0.0))
    f = np.array([r.primal for r in res.records])
    assert int(res.state["failed_pass"]) == 0 and len(f) == 3
    assert np.all(np.diff(f) < 0) and f[-1] < 0.6 * f[1]  # 0.45 f[1] now


def test_stopping_rules_and_records(small):
    res = fit_cd(small, config=CDConfig(max_passes=200, tol=1e-3))
    f = [r.primal for r in res.records]
    change = [(a - b) / max(abs(b), 1.0) for a, b in zip(f, f[1:])]
    assert res.converged and change[-1] <= 1e-3 < change[-2]
    assert [r.passes for r in res.records] == list(range(len(res.records)))
    assert [r.eff_iters for r in res.records] == list(range(len(res.records)))
    assert all(b.seconds >= a.seconds for a, b in zip(res.records, res.records[1:]))
    assert all(r.dual is None and r.gap is None and r.C == 0.1 for r in res.records)
    # without the gradient norm (the arc labeler): the same steps and objectives, a pass over the events less
    quiet = fit_cd(small, config=CDConfig(max_passes=200, tol=1e-3, grad_norm=False))
    assert np.array_equal(quiet.weights, res.weights) and [r.primal for r in quiet.records] == f
    assert all(r.grad_norm is None for r in quiet.records) and all(r.grad_norm > 0 for r in res.records)
    f0, g0, sums0 = small.evaluate(res.weights, 0.1)
    f1, g1, sums1 = small.evaluate(res.weights, 0.1, gradient=False)
    assert f1 == f0 and g1 is None and g0.shape == res.weights.shape
    assert np.array_equal(sums1.S, sums0.S) and np.array_equal(sums1.T, sums0.T)
    seen = []
    res = fit_maxent_lbfgs(small, config=LBFGSConfig(C=0.1, max_passes=5, tol=0.0), callbacks=(seen.append,),
                           dev=lambda w: float(np.abs(w).sum()))
    assert not res.converged and len(res.records) == 6 and seen == res.records
    assert seen[0].dev == 0.0 and seen[-1].dev == pytest.approx(np.abs(res.weights).sum())


def test_registry_and_validation(small):
    assert trainer_names(MAXENT) == ["cd", "gis", "scgis", "lbfgs"]
    for name, config in CONFIGS.items():
        assert get_trainer(name, MAXENT).config is config and not get_trainer(name, MAXENT).has_dual
    with pytest.raises(ValueError, match="unknown trainer 'x'; trainers: cd, gis, scgis, lbfgs"):
        get_trainer("x", MAXENT)
    with pytest.raises(ValueError, match="unknown trainer 'cd' \\('cd' trains maxent problems\\)"):
        get_trainer("cd")
    for bad in ({"C": 0.0}, {"max_passes": -1}, {"tol": -1.0}, {"gtol": -1.0}, {"beta": 1.0}, {"gamma": 0.5}):
        with pytest.raises(ValueError):
            CDConfig(**bad)
    with pytest.raises(ValueError, match="newton"):
        SCGISConfig(newton_iters=0)
    with pytest.raises(ValueError, match="no setting beta"):
        make_config(get_trainer("gis", MAXENT), beta=0.5)
    with pytest.raises(ValueError, match="weights"):
        small.objective(np.zeros(3), 0.1)
    with pytest.raises(ValueError, match="labels"):
        MaxentProblem.from_events(np.array([0, 1]), np.array([0]), np.array([5]), 3, 1)
    with pytest.raises(ValueError, match="MaxentProblem"):
        fit_cd(object())
    with pytest.raises(ValueError, match="unknown trainer 'sgd'"):
        train_maxent([["a"]], [["X"]], trainer="sgd")
    with pytest.raises(ValueError, match="labels"):
        train_maxent([["a", "b"]], [["X"]])


# --------------------------------------------------------------------------- decoding


def _reference_scorer(model: MaxentModel):
    """Label log-probabilities of a position from predicate strings, independent of the Numba kernels."""
    weights: dict[str, dict[int, float]] = {}
    for p, name in enumerate(model.predicates):
        for t in range(model.feat_ptr[p], model.feat_ptr[p + 1]):
            weights.setdefault(name, {})[int(model.feat_label[t])] = model.weights[t]

    def logprobs(static: list[str], prev2: str, prev1: str) -> np.ndarray:
        s = np.zeros(len(model.labels))
        for p in static + list(history_predicates(prev2, prev1)):
            for k, v in weights.get(p, {}).items():
                s[k] += v
        return s - np.logaddexp.reduce(s)

    return logprobs


def _greedy(model, logprobs, toks):
    out = []
    for row in token_predicates(toks):
        lp = logprobs(row, out[-2] if len(out) >= 2 else BOS, out[-1] if out else BOS)
        out.append(model.labels[int(np.argmax(lp))])
    return out


def _seq_logprob(model, logprobs, toks, tags):
    total = 0.0
    for i, row in enumerate(token_predicates(toks)):
        lp = logprobs(row, tags[i - 2] if i >= 2 else BOS, tags[i - 1] if i >= 1 else BOS)
        total += lp[model.labels.index(tags[i])]
    return total


def test_beam_one_is_greedy_and_wider_beams_score_higher(pos_model, pos_test):
    model, _ = pos_model
    toks, _ = pos_test
    logprobs = _reference_scorer(model)
    tags1, lp1 = model.decode(toks, beam=1)
    assert tags1 == [_greedy(model, logprobs, s) for s in toks]
    for beam in (3, 10):
        tags_b, lp_b = model.decode(toks, beam=beam)
        assert np.all(lp_b >= lp1 - 1e-9)
        assert np.any(lp_b > lp1 + 1e-6)  # the beam does change some sentences
        for s in range(0, len(toks), 10):
            assert lp_b[s] == pytest.approx(_seq_logprob(model, logprobs, toks[s], tags_b[s]), abs=1e-8)
    assert model.predict(toks) == model.decode(toks, beam=3)[0]


def test_accuracy_well_above_majority_baseline(pos_model, pos_test):
    model, history = pos_model
    toks, gold = pos_test
    train_toks, train_tags = _pos("train.txt", 0, 300)
    counts: dict = {}
    for ws, ts in zip(train_toks, train_tags):
        for w, t in zip(ws, ts):
            counts.setdefault(w, {}).setdefault(t, 0)
            counts[w][t] += 1
    overall: dict = {}
    for c in counts.values():
        for t, k in c.items():
            overall[t] = overall.get(t, 0) + k
    top = max(overall, key=overall.get)
    flat_gold = [t for s in gold for t in s]
    base = np.mean([(max(counts[w], key=counts[w].get) if w in counts else top) == t
                    for s, g in zip(toks, gold) for w, t in zip(s, g)])
    acc = np.mean([p == t for p, t in zip([t for s in model.predict(toks) for t in s], flat_gold)])
    assert base < 0.8 and acc > 0.88 and acc > base + 0.08
    assert np.all(np.diff([r.primal for r in history]) <= 0)


def test_round_trip_through_npz(pos_model, pos_test):
    model, _ = pos_model
    toks, _ = pos_test
    arrays, meta = model.to_arrays()
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    buf.seek(0)
    with np.load(buf, allow_pickle=False) as data:
        loaded = MaxentModel.from_arrays({k: data[k] for k in data.files}, json.loads(json.dumps(meta)))
    assert loaded.predict(toks) == model.predict(toks)
    assert loaded.labels == model.labels and loaded.info == model.info and loaded.beam == 3
    with pytest.raises(ValueError, match="not a maxent model"):
        MaxentModel.from_arrays(arrays, {**meta, "kind": "crf"})
    with pytest.raises(ValueError, match="weights"):
        MaxentModel.from_arrays({**arrays, "weights": arrays["weights"][:-1]}, meta)
    with pytest.raises(ValueError, match="missing"):
        MaxentModel.from_arrays({k: v for k, v in arrays.items() if k != "feat_ptr"}, meta)


def test_history_table_has_the_predicate_of_every_pair_of_tags():
    """The history table's sorted pairs and its dense table (while small) give, for every (y[-2], y[-1])
    pair of tags, the id of the predicate ``y[-2]|y[-1]=b|a`` (-1 for none), as a lookup of its string
    does; labels may hold ``|`` (a predicate string then names several pairs) or be ``<s>``."""
    labels = ["A", "A|B", "B|C", "C", "<s>", "D"]
    tags = labels + [BOS]
    rng = np.random.default_rng(0)
    names = ["bias", *(history_predicates(tags[b], tags[a])[k] for b, a in rng.integers(len(tags), size=(30, 2))
                       for k in (0, 1))]
    predicates = list(dict.fromkeys(names))
    hist1, dense, keys, ids = history_table(predicates, labels)
    assert dense.size == len(tags) ** 2 and np.array_equal(history_table(predicates, labels, 0)[1], [])
    index = {p: k for k, p in enumerate(predicates)}
    Y = len(labels)
    for a, prev1 in enumerate(tags):
        assert hist1[a] == index.get(history_predicates(BOS, prev1)[0], -1)
        for b, prev2 in enumerate(tags):
            k = np.searchsorted(keys, b * (Y + 1) + a)
            found = ids[k] if k < keys.size and keys[k] == b * (Y + 1) + a else -1
            assert found == dense[b * (Y + 1) + a] == index.get(history_predicates(prev2, prev1)[1], -1)


def _with_labels(model: MaxentModel, n_labels: int) -> MaxentModel:
    """``model`` with new labels up to ``n_labels`` in all: each new label has the feature (bias, label) of
    weight -100 (it never wins) and both history predicates of the previous label followed by it."""
    labels = model.labels + [f"X{k}" for k in range(n_labels - len(model.labels))]
    predicates = list(model.predicates)
    counts = np.diff(model.feat_ptr)
    triples = list(zip(np.repeat(np.arange(len(predicates)), counts).tolist(), model.feat_label.tolist(),
                       model.weights.tolist()))
    bias = predicates.index("bias")
    for k in range(len(model.labels), n_labels):
        triples.append((bias, k, -100.0))
        for name in history_predicates(labels[k - 1], labels[k]):
            predicates.append(name)
            triples.append((len(predicates) - 1, k, 1.0))
    triples.sort()
    pred, label, weight = (np.array(column) for column in zip(*triples))
    ptr = np.zeros(len(predicates) + 1, dtype=np.int64)
    np.cumsum(np.bincount(pred, minlength=len(predicates)), out=ptr[1:])
    return MaxentModel(labels, predicates, ptr, label, weight, beam=model.beam)


def test_many_labels_load_and_tag_in_memory_linear_in_the_labels(pos_model, pos_test, tmp_path):
    """A model of 5,000 labels loads and tags without a labels x labels table: the memory Python allocates
    (tracemalloc's peak) stays within a few times the model's own arrays, and the tags are the model's."""
    import tracemalloc

    from egnlp.tagger import Tagger

    model, _ = pos_model
    toks = pos_test[0][:5]
    big = _with_labels(model, 5000)
    path = tmp_path / "many.npz"
    Tagger(big, "pos").save(path)
    tracemalloc.start()
    try:
        loaded = Tagger.load(path)
        tags = loaded.predict(toks)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    arrays = sum(a.nbytes for a in big.to_arrays()[0].values())
    static = sum(map(len, toks)) * len(big.labels) * 8  # the label scores of every token
    assert peak < 8 * arrays + 4 * static + (8 << 20), (peak, arrays, static)
    assert tags == model.predict(toks)


def test_chunking_uses_pos_inputs():
    sents = conll2000.iob_sents("train.txt")[:150]
    test = conll2000.iob_sents("test.txt")[:60]

    def cols(ss):
        return [[w for w, _, _ in s] for s in ss], [[p for _, p, _ in s] for s in ss], [[c for _, _, c in s] for s in ss]

    toks, pos, chunks = cols(sents)
    model, _ = train_maxent(toks, chunks, pos, max_passes=8, tol=0.0)
    assert model.use_pos and any(p.startswith("t[0]=") for p in model.predicates)
    assert any(p.startswith("y[-2]|y[-1]=") for p in model.predicates)
    ttoks, tpos, tchunks = cols(test)
    pred = model.predict(ttoks, tpos)
    acc = np.mean([a == b for p, g in zip(pred, tchunks) for a, b in zip(p, g)])
    assert acc > 0.85
    with pytest.raises(ValueError, match="POS"):
        model.predict(ttoks)


def _reference_problem(ev_ptr, ev_pred, labels, n_labels, n_predicates):
    """from_events' arrays built independently with numpy sorts: unique (event, predicate) pairs,
    a stable argsort by predicate and unique (predicate, label) pairs with their counts."""
    n = labels.shape[0]
    event = np.repeat(np.arange(n, dtype=np.int64), np.diff(ev_ptr))
    key = np.unique(event * n_predicates + ev_pred)
    event, pred = key // n_predicates, key % n_predicates
    ptr = np.concatenate([[0], np.cumsum(np.bincount(event, minlength=n))])
    pr_ptr = np.concatenate([[0], np.cumsum(np.bincount(pred, minlength=n_predicates))])
    pr_ev = event[np.argsort(pred, kind="stable")]
    pairs, counts = np.unique(pred * n_labels + labels[event], return_counts=True)
    feat_pred, feat_label = pairs // n_labels, pairs % n_labels
    feat_ptr = np.searchsorted(feat_pred, np.arange(n_predicates + 1))
    return ptr, pred, pr_ptr, pr_ev, feat_ptr, feat_pred, feat_label, counts


@pytest.mark.parametrize("source", ["conll2000", "es-labeler"])
def test_from_events_equals_numpy_construction(source) -> None:
    """The CSR rows (repeats dropped), columns and seen (predicate, label) pairs of from_events are
    those of an independent numpy construction, on the maxent tagger's events and on the arc
    labeler's (whose events repeat predicates)."""
    if source == "conll2000":
        events = training_events(*_pos("train.txt", 0, 300))
        ev_ptr, ev_pred, gold, L, P = events.ev_ptr, events.ev_pred, events.gold, len(events.labels), \
            len(events.predicates)
    else:
        from egnlp.corpora import load_dataset
        from egnlp.features.arc_featurizer import ArcFeaturizer
        from egnlp.features.hashing import KeyTable
        from egnlp.parser.labeler import arc_label_keys, predicate_ids

        train = load_dataset("es", "train")[:300]
        featurizer = ArcFeaturizer()
        ev_ptr, keys = arc_label_keys(train, featurizer.encode(train), [s.heads for s in train])
        table = KeyTable(np.unique(keys))
        ev_ptr, ev_pred = predicate_ids(table, ev_ptr, keys)
        names = sorted({d for s in train for d in s.deprels})
        gold = np.array([names.index(d) for s in train for d in s.deprels])
        L, P = len(names), len(table)
    assert np.diff(ev_ptr).sum() > np.unique(np.repeat(np.arange(len(gold)), np.diff(ev_ptr)) * P + ev_pred).size \
        or source == "conll2000"  # the labeler's events do repeat predicates
    problem = MaxentProblem.from_events(ev_ptr, ev_pred, gold, L, P)
    expected = _reference_problem(np.asarray(ev_ptr), np.asarray(ev_pred, dtype=np.int64), np.asarray(gold), L, P)
    got = (problem.ev_ptr, problem.ev_pred, problem.pr_ptr, problem.pr_ev, problem.feat_ptr, problem.feat_pred,
           problem.feat_label, problem.emp)
    for name, a, b in zip(["ev_ptr", "ev_pred", "pr_ptr", "pr_ev", "feat_ptr", "feat_pred", "feat_label", "emp"],
                          got, expected):
        np.testing.assert_array_equal(a, b, err_msg=name)
