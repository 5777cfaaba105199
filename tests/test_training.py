"""Online EG on the log-linear dual, checked on real parsing data.

EG must close the duality gap, never increase the dual on a step it takes,
and land on the optimum an independent optimiser (scipy's L-BFGS on the
primal) finds.
"""

import numpy as np
import pytest
from scipy.optimize import minimize

from egnlp.corpora import load_dataset
from egnlp.parser.eisner import inside_outside
from egnlp.parser_training import build_parsing_problem
from egnlp.training.eg import EGConfig, EGRun, fit_eg_ll
from egnlp.training.structured_problem import (example_blocks, log_linear_gradient, log_linear_primal, loss_augmented_examples,
                                    max_margin_primal, scored_examples)

from eg_checks import KEEP_ALL, accepted_steps_decrease_the_dual, dual_from_scratch

C = 10.0


@pytest.fixture(scope="module")
def problem():
    return build_parsing_problem(load_dataset("es", "train")[:25], "single", cache_bytes=KEEP_ALL)[1]


@pytest.fixture(scope="module")
def converged(problem):
    return fit_eg_ll(problem, config=EGConfig(C=C, max_passes=300, tol=1e-5, seed=0, anneal=False))


@pytest.fixture(scope="module")
def lbfgs_optimum(problem):
    d = problem.features.n_features
    res = minimize(lambda w: log_linear_gradient(problem, w, C), np.zeros(d), jac=True, method="L-BFGS-B",
                   options={"maxiter": 5000, "gtol": 1e-9, "ftol": 1e-14})
    return res.fun, res.x


def test_problem_oracles_match_the_kernels(problem):
    pf = problem.features
    rng = np.random.default_rng(0)
    for i in (0, 5):
        lo, hi = pf.parts(i)
        k = int(problem.sizes[i])
        theta = rng.normal(size=hi - lo)
        log_z, mu = problem.marginals(i, theta)
        ref_z, ref_mu = inside_outside(theta.reshape(k, k), root="single")
        assert log_z == pytest.approx(ref_z)
        np.testing.assert_allclose(mu, ref_mu.reshape(-1))
        assert problem.log_partition(i, theta) == pytest.approx(log_z)
        z = problem.argmax(i, theta).reshape(k, k)
        np.testing.assert_array_equal(z[:, 1:].sum(axis=0), np.ones(k - 1))
        assert z[0].sum() == 1  # single root
        gold = problem.gold[lo:hi].reshape(k, k)
        assert gold.sum() == k - 1
        assert problem.loss[lo:hi].sum() == (k - 1) * (k - 1) - (k - 1)


def test_objectives_at_w_zero_skip_the_features_and_equal_them(problem):
    # At w = 0 (where the max-margin trainers start) the scores are zeros without compiling any sentence;
    # they must be what the features give, and so must every objective computed from them.
    pf = problem.features
    zero = np.zeros(pf.n_features)
    compiled_before = pf.compiled
    pf.compiled = None  # any use of the features would now fail
    try:
        fast_mm = list(loss_augmented_examples(problem, zero))
        fast_ll = list(scored_examples(problem, zero))
        primal = max_margin_primal(problem, zero, C)
    finally:
        del pf.compiled
    assert pf.compiled == compiled_before
    hinges = 0.0
    for (i, lo, hi, s, z), (_, _, _, s_ll, log_z) in zip(fast_mm, fast_ll):
        ref = pf.scores(lo, hi, zero)
        np.testing.assert_array_equal(s, ref)
        np.testing.assert_array_equal(z, problem.argmax(i, ref + problem.loss[lo:hi]))
        assert log_z == problem.log_partition(i, ref)
        hinges += float(z @ problem.loss[lo:hi])
    assert primal == pytest.approx(hinges, rel=1e-15)
    # a w with one weight set goes through the features
    w = zero.copy()
    w[int(pf.n_features) // 2] = 1.0
    for (i, lo, hi, s, _) in loss_augmented_examples(problem, w):
        np.testing.assert_array_equal(s, pf.scores(lo, hi, w))


@pytest.mark.parametrize("size", [1, 700, 5000, 1 << 22])
def test_example_blocks_cover_every_part_once_in_whole_examples(problem, size):
    pf = problem.features
    blocks = list(example_blocks(pf, size))
    starts = {pf.parts(i)[0] for i in range(pf.n_examples)} | {pf.n_parts}
    assert blocks[0][0] == 0 and blocks[-1][1] == pf.n_parts
    assert all(a[1] == b[0] for a, b in zip(blocks, blocks[1:]))
    for lo, hi in blocks:
        assert lo in starts and hi in starts and hi > lo
        one_example = any(pf.parts(i) == (lo, hi) for i in range(pf.n_examples))
        assert hi - lo <= size or one_example
    # blocks are as long as allowed: two neighbours together would be too long
    assert all(b[1] - a[0] > size for a, b in zip(blocks, blocks[1:]))
    W_blocks, W_whole = np.zeros(pf.n_features), np.zeros(pf.n_features)
    coef = np.linspace(-1.0, 1.0, pf.n_parts)
    for lo, hi in blocks:
        pf.scatter(lo, hi, coef[lo:hi], W_blocks)
    pf.scatter(0, pf.n_parts, coef, W_whole)
    np.testing.assert_array_equal(W_blocks, W_whole)


def test_primal_gradient_matches_finite_differences(problem):
    rng = np.random.default_rng(1)
    d = problem.features.n_features
    w = rng.normal(scale=0.05, size=d)
    value, grad = log_linear_gradient(problem, w, C)
    assert value == pytest.approx(log_linear_primal(problem, C * w, C), rel=1e-12)
    for _ in range(4):
        v = rng.normal(size=d)
        v /= np.linalg.norm(v)
        h = 1e-5
        fd = (log_linear_gradient(problem, w + h * v, C)[0] - log_linear_gradient(problem, w - h * v, C)[0]) / (2 * h)
        assert fd == pytest.approx(grad @ v, rel=1e-5, abs=1e-6)


def test_every_accepted_step_decreases_the_dual_recomputed_from_scratch(problem):
    run = EGRun(problem, EGConfig(C=C, anneal=False))
    examples = np.random.default_rng(2).integers(0, problem.features.n_examples, size=60)
    assert accepted_steps_decrease_the_dual(problem, run, examples) > 30
    assert run.dual() == pytest.approx(dual_from_scratch(problem, run), rel=1e-9)


def test_duality_gap_closes_and_weak_duality_holds(converged):
    assert converged.converged
    assert converged.final.rel_gap < 1e-4
    for rec in converged.records:
        assert rec.primal >= -rec.dual - 1e-9 * abs(rec.primal)
    duals = [r.dual for r in converged.records]
    assert all(b <= a + 1e-9 * abs(a) for a, b in zip(duals, duals[1:]))


def test_eg_reaches_the_lbfgs_optimum(problem, converged, lbfgs_optimum):
    p_star, w_star = lbfgs_optimum
    p_eg = log_linear_primal(problem, C * converged.weights, C)
    assert p_eg == pytest.approx(p_star, rel=1e-4)
    assert -converged.final.dual <= p_star * (1 + 1e-9)  # the dual bounds the optimum
    assert np.linalg.norm(converged.weights - w_star) <= 1e-2 * np.linalg.norm(w_star)


def test_same_seed_same_model_and_order_matters(problem):
    cfg = EGConfig(C=C, max_passes=3, tol=0.0, seed=7)
    a = fit_eg_ll(problem, config=cfg)
    b = fit_eg_ll(problem, config=cfg)
    np.testing.assert_array_equal(a.weights, b.weights)
    c = fit_eg_ll(problem, config=EGConfig(C=C, max_passes=3, tol=0.0, seed=8))
    assert not np.array_equal(a.weights, c.weights)


def test_warm_start_continues_from_the_given_dual_point(problem, converged):
    again = fit_eg_ll(problem, config=EGConfig(C=C, max_passes=5, tol=1e-5, anneal=False), state=converged.state)
    assert again.records[0].rel_gap < 1e-4
    assert again.records[0].eff_iters == 0.0
    bigger = fit_eg_ll(problem, config=EGConfig(C=0.7 * C, max_passes=300, tol=1e-4, anneal=False),
                       state=converged.state)
    assert bigger.converged


@pytest.mark.parametrize("settings", [{"anneal": True}, {"anneal": False, "revisit_max": 0},
                                      {"anneal": True, "order": "cyclic"}])
def test_schedules_reach_the_same_optimum(problem, lbfgs_optimum, settings):
    result = fit_eg_ll(problem, config=EGConfig(C=C, max_passes=300, tol=1e-4, **settings))
    assert result.converged and result.final.C == C
    assert log_linear_primal(problem, C * result.weights, C) == pytest.approx(lbfgs_optimum[0], rel=1e-4)


def test_annealed_C_starts_at_ten_times_C_and_reaches_C():
    cfg = EGConfig(C=2.0, anneal=True)
    assert [cfg.C_at(p) for p in (1, 5)] == [20.0, 20.0]
    assert 2.0 < cfg.C_at(6) < cfg.C_at(5)
    assert cfg.C_at(60) == 2.0
    assert EGConfig(C=2.0, anneal=False).C_at(1) == 2.0


def test_long_sentences_holding_the_gap_get_extra_visits(problem):
    run = EGRun(problem, EGConfig(C=C, anneal=False, revisit_max=3, revisit_share=2.0, theta_init=0.0))
    for i in range(problem.features.n_examples):
        run.visit(i)
    run.primal()  # fills the per-example gaps
    assert run.example_gap.sum() == pytest.approx(run.primal() + run.dual(), rel=1e-9)
    order = run.pass_order(np.random.default_rng(0))
    counts = np.bincount(order, minlength=problem.features.n_examples)
    assert counts.min() == 1 and counts.max() <= 4
    heavy = run.example_gap >= 2.0 * run.example_gap.mean()
    assert heavy.any()
    np.testing.assert_array_equal(counts[~heavy], 1)
    assert (counts[heavy] > 1).all()


def test_config_rejects_bad_settings():
    for bad in ({"C": 0}, {"tol": -1}, {"order": "sorted"}, {"eta_init": 0}, {"max_passes": -1}):
        with pytest.raises(ValueError):
            EGConfig(**bad)


def test_annealed_records_hold_the_primal_at_the_target_C(problem):
    seen = []
    result = fit_eg_ll(problem, config=EGConfig(C=C, max_passes=8, tol=0.0), callbacks=(seen.append,))
    annealed = [r for r in result.records if r.C != C]
    assert annealed and all(r.dual is None and r.gap is None for r in annealed)
    assert seen == result.records
    # the recorded value is the primal at the target C of the w of that pass (checked for the last one)
    assert result.records[-1].primal == pytest.approx(log_linear_primal(problem, C * result.weights, C), rel=1e-9)
