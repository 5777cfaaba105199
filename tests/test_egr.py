"""Excessive gap reduction (Zhang, Saha and Vishwanathan 2011) and the gap-driven example order, on real data.

``egr`` must land on the optimum eg-mm and bcfw find, report as its gap the
primal minus the dual recomputed from its weights and marginals, and keep the
excessive gap condition P_mu_k(w_k) <= D(alpha_k) (Eq. 7) at every
iteration, with the smoothed primal recomputed here from the oracles.
"""

import numpy as np
import pytest
from egnlp.corpora import load_dataset
from egnlp.training.eg import EGConfig, fit_eg_mm, gap_order
from egnlp.training.egr import (
    EGRConfig,
    fit_egr,
    lipschitz_bound,
    structure_norm_bounds,
)
from egnlp.training.max_margin import BCFWConfig, fit_bcfw
from egnlp.training.registry import get_trainer, make_config

from egnlp.parser_training import build_parsing_problem
from egnlp.comparisons import tagging_problem

from eg_checks import KEEP_ALL

C = 1000.0


@pytest.fixture(scope="module")
def problem():
    """Six short es training sentences (2 to 7 words): every trainer gets within 1e-5 in seconds."""
    sentences = [s for s in load_dataset("es", "train") if len(s) <= 8][:6]
    return build_parsing_problem(sentences, "single", cache_bytes=KEEP_ALL)[1]


@pytest.fixture(scope="module")
def chunk_problem():
    return tagging_problem("conll2000-chunk", 8)


def _fit_egr(problem, captured=None, **settings):
    """fit_egr whose dev hook records w_k of every record."""
    dev = (lambda w: captured.append(w.copy()) or 0.0) if captured is not None else None
    return fit_egr(problem, config=EGRConfig(**settings), dev=dev)


def _hinges(problem, w):
    """sum_i max_y [e_i(y) + s(y) - s(y_i)], from the loss-augmented argmax directly."""
    pf = problem.features
    total = 0.0
    for i in range(pf.n_examples):
        lo, hi = pf.parts(i)
        s = pf.scores(lo, hi, w)
        z = problem.argmax(i, s + problem.loss[lo:hi])
        total += float(z @ (s + problem.loss[lo:hi])) - float(problem.gold[lo:hi] @ s)
    return total


def _smoothed_primal(problem, w, mu, C):
    """P_mu(w) = C/2 ||w||^2 + sum_i [mu log mean_y exp((e(y) + s(y)) / mu) - s(y_i)] (Eq. 6 and 21),
    the mean over all structures: log Z(0) = log |Y_i|."""
    pf = problem.features
    total = 0.5 * C * float(w @ w)
    for i in range(pf.n_examples):
        lo, hi = pf.parts(i)
        s = pf.scores(lo, hi, w)
        log_mean = problem.log_partition(i, (problem.loss[lo:hi] + s) / mu) - problem.log_partition(i, 0 * s)
        total += mu * log_mean - float(problem.gold[lo:hi] @ s)
    return total


def _dual_from_marginals(problem, m, C):
    """Q_MM = -sum m . e + ||sum (gold - m) phi||^2 / (2C)."""
    pf = problem.features
    W = np.zeros(pf.n_features)
    pf.scatter(0, pf.n_parts, problem.gold - m, W)
    return -float(m @ problem.loss) + float(W @ W) / (2 * C)


@pytest.fixture(scope="module")
def optimum_runs(problem):
    """Every run to a relative gap below 1e-5: then any two primals (and any two duals) agree to 1e-5,
    since each lies between the optimum and its own dual bound."""
    return {
        "egr/paper": _fit_egr(problem, C=C, max_passes=8000, tol=9e-6, step="paper"),
        "egr/adaptive": _fit_egr(problem, C=C, max_passes=2000, tol=1e-7, step="adaptive"),
        "eg-mm": fit_eg_mm(problem, config=EGConfig(C=C, max_passes=1000, tol=9e-6, anneal=False)),
        "bcfw": fit_bcfw(problem, config=BCFWConfig(C=C, max_passes=2000, tol=9e-6)),
    }


def test_egr_primal_and_dual_converge_to_those_of_eg_mm_and_bcfw(optimum_runs):
    for name, run in optimum_runs.items():
        assert run.converged and run.final.rel_gap < 1e-5, name
    for name in ("egr/paper", "egr/adaptive"):
        mine = optimum_runs[name].final
        for other in ("eg-mm", "bcfw"):
            theirs = optimum_runs[other].final
            assert mine.primal == pytest.approx(theirs.primal, rel=1e-5), (name, other)
            assert mine.dual == pytest.approx(theirs.dual, rel=1e-5), (name, other)
    # the adaptive step needs far fewer iterations than the worst-case constant
    assert optimum_runs["egr/adaptive"].final.passes * 4 < optimum_runs["egr/paper"].final.passes


@pytest.mark.parametrize("step", ["paper", "adaptive"])
def test_the_gap_is_primal_minus_dual_and_the_excessive_gap_condition_holds_throughout(problem, step):
    captured = []
    result = _fit_egr(problem, captured, C=C, max_passes=60, tol=0.0, step=step)
    assert len(captured) == len(result.records) == 61
    mus = result.state["mu"]
    log_sizes = sum(problem.log_partition(i, np.zeros(np.subtract(*problem.features.parts(i)[::-1])))
                    for i in range(problem.features.n_examples))
    for r, w, mu, smoothed in zip(result.records, captured, mus, result.state["smoothed"]):
        primal = 0.5 * C * float(w @ w) + _hinges(problem, w)
        assert r.primal == pytest.approx(primal, rel=1e-12)
        assert r.gap == r.primal + r.dual and r.gap >= 0
        recomputed = _smoothed_primal(problem, w, mu, C)
        assert recomputed == pytest.approx(smoothed, rel=1e-9, abs=1e-9)
        assert recomputed <= -r.dual + 1e-9 * abs(r.dual)  # Eq. (7): P_mu_k(w_k) <= D(alpha_k)
        assert r.gap <= mu * log_sizes * (1 + 1e-9)  # Theorem 1: gap <= mu_k max d
    np.testing.assert_array_equal(result.weights, captured[-1])
    assert _dual_from_marginals(problem, result.state["alpha"], C) == pytest.approx(result.final.dual, rel=1e-9)
    if step == "paper":  # mu_k = 6 L / ((k + 1)(k + 2)), L / sigma from the data
        L = lipschitz_bound(problem, C)
        k = np.arange(1, len(mus) + 1)
        np.testing.assert_allclose(mus, 6 * L / ((k + 1) * (k + 2)), rtol=1e-12)
        assert result.records[1].eff_iters == pytest.approx(4.0)  # two oracle passes per iteration
    gaps = [r.rel_gap for r in result.records]
    assert gaps[-1] < gaps[0]


def test_the_marginals_of_alpha_k_are_a_distribution_over_trees(problem):
    result = _fit_egr(problem, C=C, max_passes=20, step="adaptive")
    m = result.state["alpha"]
    pf = problem.features
    for i in range(pf.n_examples):
        lo, hi = pf.parts(i)
        k = int(problem.sizes[i])
        heads = m[lo:hi].reshape(k, k)
        assert heads.min() >= -1e-12
        np.testing.assert_allclose(heads[:, 1:].sum(axis=0), 1.0, rtol=1e-9)  # one head per word
        assert heads[0].sum() == pytest.approx(1.0)  # one root child (single)


def test_the_norm_bound_holds_for_every_tree_the_oracle_returns(problem):
    bounds = structure_norm_bounds(problem)
    pf = problem.features
    rng = np.random.default_rng(0)
    zero = np.zeros(pf.n_features)
    for i in range(pf.n_examples):
        lo, hi = pf.parts(i)
        for _ in range(20):
            z = problem.argmax(i, rng.normal(size=hi - lo))
            assert pf.sparse_delta(lo, hi, problem.gold[lo:hi] - z, zero)[3] <= bounds[i]
    # the block norm's constant is never above the paper's n max_i G_i^2 / C
    assert lipschitz_bound(problem, C) <= pf.n_examples * bounds.max() / C


def test_egr_trains_the_crf_chunker_through_the_same_seam(chunk_problem):
    egr = fit_egr(chunk_problem, config=EGRConfig(C=100.0, max_passes=400, tol=1e-5, step="adaptive"))
    bcfw = fit_bcfw(chunk_problem, config=BCFWConfig(C=100.0, max_passes=2000, tol=1e-4))
    assert egr.converged and bcfw.converged
    assert egr.final.primal == pytest.approx(bcfw.final.primal, rel=1e-4)
    for r in egr.records:
        assert r.primal >= -r.dual - 1e-9 * abs(r.primal)


def test_warm_start_moves_the_prox_centre(problem):
    # from EG's theta: alpha_0 is EG's distribution, so w_1 = w(alpha_0) is EG's w
    eg = fit_eg_mm(problem, config=EGConfig(C=C, max_passes=30, anneal=False))
    from_eg = fit_egr(problem, config=EGRConfig(C=C, max_passes=0, step="paper"), state=eg.state)
    np.testing.assert_allclose(from_eg.weights, eg.weights, rtol=1e-9, atol=1e-12)
    assert from_eg.final.primal == pytest.approx(eg.final.primal, rel=1e-9)
    # from its own state: the prox-centre alpha_mu(w_k) of the last iterate
    cold = _fit_egr(problem, C=C, max_passes=30, step="adaptive")
    warm = fit_egr(problem, config=EGRConfig(C=C, max_passes=30, step="adaptive"), state=cold.state)
    assert warm.records[0].rel_gap < cold.records[0].rel_gap
    with pytest.raises(ValueError, match="warm-start theta"):
        fit_egr(problem, config=EGRConfig(C=C), state={"theta": np.zeros(3)})


def test_registry_and_settings():
    trainer = get_trainer("egr")
    assert trainer.objective == "mm" and trainer.has_dual
    assert make_config(trainer, C=5.0).step == "adaptive"  # the default
    assert make_config(trainer, C=5.0, step="paper").step == "paper"
    with pytest.raises(ValueError, match="step must be"):
        EGRConfig(step="fast")
    with pytest.raises(ValueError, match="has no setting order"):
        make_config(trainer, order="gap")


def test_gap_order_draws_in_proportion_to_the_gaps():
    rng = np.random.default_rng(0)
    gaps = np.array([0.0, 1.0, 3.0, 0.0])
    draws = np.concatenate([gap_order(rng, gaps) for _ in range(500)])
    assert draws.shape == (2000,) and set(draws) == {1, 2}
    assert np.mean(draws == 2) == pytest.approx(0.75, abs=0.03)
    assert set(gap_order(rng, np.zeros(4))) <= {0, 1, 2, 3}  # no gap anywhere: uniform
    with pytest.raises(ValueError, match="order must be one of"):
        EGConfig(order="greedy")
    with pytest.raises(ValueError, match="order must be one of"):
        BCFWConfig(order="greedy")


@pytest.mark.parametrize("name", ["eg-mm", "bcfw"])
def test_gap_order_reaches_the_same_optimum(problem, optimum_runs, name):
    trainer = get_trainer(name)
    settings = {"anneal": False} if name == "eg-mm" else {}
    result = trainer.fit(problem, config=make_config(trainer, C=C, max_passes=3000, tol=1e-5, order="gap", **settings))
    assert result.converged
    assert result.final.primal == pytest.approx(optimum_runs["egr/adaptive"].final.primal, rel=1e-5)
