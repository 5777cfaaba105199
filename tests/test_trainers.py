"""Every trainer of the registry on real parsing data: the same optimum, weak duality, closing gaps.

Log-linear trainers are checked against scipy's L-BFGS-B run to a tight
tolerance directly (not through our wrapper); max-margin trainers against
each other and against the cutting-plane lower bound, on a small subset of
``es`` where every method can be run close to the optimum.
"""

import numpy as np
import pytest
from scipy.optimize import minimize

from egnlp.corpora import load_dataset
from egnlp.parser_training import build_parsing_problem
from egnlp.parser.parsing_problem import ParsingProblem
from egnlp.training.eg import EGConfig, EGRun
from egnlp.training.max_margin import simplex_qp
from egnlp.settings import parse_c_path
from egnlp.training.path import regularization_path
from egnlp.training.structured_problem import log_linear_gradient, log_linear_primal, loss_augmented_examples, max_margin_primal
from egnlp.training.registry import TRAINERS, get_trainer, make_config, path_configs, trainer_names

from eg_checks import KEEP_ALL, accepted_steps_decrease_the_dual


def _problem(count: int) -> ParsingProblem:
    return build_parsing_problem(load_dataset("es", "train")[:count], "single", cache_bytes=KEEP_ALL)[1]


@pytest.fixture(scope="module")
def ll_problem():
    return _problem(20)


@pytest.fixture(scope="module")
def mm_problem():
    return _problem(12)


LL_C = 10.0
MM_C = 1000.0


@pytest.fixture(scope="module")
def ll_optimum(ll_problem):
    d = ll_problem.features.n_features
    res = minimize(lambda w: log_linear_gradient(ll_problem, w, LL_C), np.zeros(d), jac=True, method="L-BFGS-B",
                   options={"maxiter": 5000, "gtol": 1e-9, "ftol": 1e-14})
    return res.fun


def _fit(problem, name, **settings):
    trainer = get_trainer(name)
    return trainer.fit(problem, config=make_config(trainer, **settings))


@pytest.mark.parametrize("name,settings,rel", [
    ("eg-ll", {"max_passes": 300, "tol": 1e-6, "anneal": False}, 1e-5),
    ("eg-ll-batch", {"max_passes": 400, "tol": 1e-4, "anneal": False}, 1e-4),
    ("lbfgs", {"max_passes": 1000}, 1e-6),
    ("sgd", {"max_passes": 60, "eta0": 0.1}, 2e-3),
])
def test_log_linear_trainers_reach_the_lbfgs_optimum(ll_problem, ll_optimum, name, settings, rel):
    result = _fit(ll_problem, name, C=LL_C, **settings)
    primal = log_linear_primal(ll_problem, LL_C * result.weights, LL_C)
    assert primal == pytest.approx(ll_optimum, rel=rel)
    assert result.final.primal == pytest.approx(primal, rel=1e-9)  # the records report the same objective
    for r in result.records:
        assert r.primal >= ll_optimum * (1 - 1e-9)
        if r.dual is not None:
            assert -r.dual <= ll_optimum * (1 + 1e-9)  # weak duality at every record


def test_sgd_without_averaging_and_automatic_eta0_moves_toward_the_optimum(ll_problem, ll_optimum):
    result = _fit(ll_problem, "sgd", C=LL_C, max_passes=5)
    assert float(result.state["eta0"]) in (1.0, 0.1, 0.01, 0.001, 0.0001)
    primals = [r.primal for r in result.records]
    assert primals[-1] < 0.5 * primals[0]
    assert primals[-1] > ll_optimum


def test_lazy_iterate_averaging_equals_the_explicit_mean(ll_problem):
    from egnlp.training.primal import _SGDRun

    n = ll_problem.features.n_examples
    run = _SGDRun(ll_problem, np.zeros(ll_problem.features.n_features), 100.0, 1.0, average=True)
    iterates = []
    for step, i in enumerate(np.random.default_rng(0).integers(0, n, size=3 * n)):
        run.step(int(i))
        if step + 1 > n:
            iterates.append(run.a * run.v)
    assert run.count == len(iterates)
    np.testing.assert_allclose(run.weights(), np.mean(iterates, axis=0), rtol=1e-9, atol=1e-12)


@pytest.fixture(scope="module")
def mm_runs(mm_problem):
    return {
        "eg-mm": _fit(mm_problem, "eg-mm", C=MM_C, max_passes=400, tol=1e-3),
        "bcfw": _fit(mm_problem, "bcfw", C=MM_C, max_passes=400, tol=1e-3),
        "cutting-plane": _fit(mm_problem, "cutting-plane", C=MM_C, max_passes=400, tol=1e-4),
        "eg-mm-batch": _fit(mm_problem, "eg-mm-batch", C=MM_C, max_passes=60, tol=1e-4),
    }


def test_max_margin_gaps_close_and_trainers_agree(mm_problem, mm_runs):
    at_C = [r for run in mm_runs.values() for r in run.records if r.C == MM_C]  # annealed EG starts at 10 C
    lower = max(-r.dual for r in at_C if r.dual is not None)
    upper = min(r.primal for r in at_C)
    assert lower <= upper * (1 + 1e-9)
    assert (upper - lower) / upper < 1e-4  # the optimum is pinned down
    for name, tol in (("eg-mm", 1e-3), ("bcfw", 1e-3), ("cutting-plane", 1e-4)):
        run = mm_runs[name]
        assert run.converged and run.final.C == MM_C, name
        assert run.final.rel_gap <= tol
        primal = max_margin_primal(mm_problem, run.weights, MM_C)
        assert primal == pytest.approx(run.final.primal, rel=1e-9)
        assert (primal - lower) / lower <= tol, name
    batch = mm_runs["eg-mm-batch"]
    assert batch.final.rel_gap < 1e-2  # batch EG moves every example at once with one rate: slower


def test_weak_duality_at_every_record_and_eg_duals_never_increase(mm_runs):
    for name, run in mm_runs.items():
        duals = [(r.C, r.dual) for r in run.records if r.dual is not None]
        for r in run.records:
            if r.dual is not None:
                assert r.primal >= -r.dual - 1e-9 * abs(r.primal), name
        if name.startswith("eg") or name == "bcfw":
            # monotone while C stays the same (annealed EG changes C in its first passes)
            assert all(b <= a + 1e-9 * abs(a) for (ca, a), (cb, b) in zip(duals, duals[1:]) if ca == cb), name


def test_every_accepted_max_margin_step_decreases_the_dual_recomputed_from_scratch(mm_problem):
    run = EGRun(mm_problem, EGConfig(C=MM_C, anneal=False), "mm")
    examples = np.random.default_rng(3).integers(0, mm_problem.features.n_examples, size=30)
    assert accepted_steps_decrease_the_dual(mm_problem, run, examples) > 15


def test_the_max_margin_oracle_is_loss_augmented(mm_problem):
    calls = []

    class Spy:
        features = mm_problem.features
        gold = mm_problem.gold
        loss = mm_problem.loss

        def argmax(self, i, theta):
            calls.append((i, theta.copy()))
            return mm_problem.argmax(i, theta)

    w = np.random.default_rng(0).normal(scale=0.1, size=mm_problem.features.n_features)
    for i, lo, hi, s, z in loss_augmented_examples(Spy(), w):
        np.testing.assert_allclose(calls[-1][1], s + mm_problem.loss[lo:hi])
        # the loss-augmented structure scores at least as high as the gold one under s + e
        assert z @ (s + mm_problem.loss[lo:hi]) >= mm_problem.gold[lo:hi] @ s - 1e-9
    assert len(calls) == mm_problem.features.n_examples
    # at w = 0 the most violated tree gets every arc wrong (loss n) where one exists
    assert max_margin_primal(mm_problem, np.zeros_like(w), MM_C) == pytest.approx(
        sum(float(mm_problem.argmax(i, mm_problem.loss[slice(*mm_problem.features.parts(i))])
                  @ mm_problem.loss[slice(*mm_problem.features.parts(i))]) for i in range(mm_problem.features.n_examples)))


def test_simplex_qp_matches_a_brute_force_solution():
    rng = np.random.default_rng(5)
    A = rng.normal(size=(5, 3))
    G = A @ A.T
    b = rng.uniform(0, 2, size=5)
    alpha = np.zeros(5)
    alpha[0] = 1.0
    simplex_qp(G, b, 1.5, alpha, 1e-12, 100000)
    assert alpha.min() >= 0 and alpha.sum() == pytest.approx(1.0)

    def D(a):
        return b @ a - a @ G @ a / 3.0

    res = minimize(lambda a: -D(a), np.full(5, 0.2), method="SLSQP", bounds=[(0, 1)] * 5,
                   constraints=[{"type": "eq", "fun": lambda a: a.sum() - 1}], options={"ftol": 1e-14})
    assert D(alpha) >= -res.fun - 1e-8


def test_warm_started_path_needs_fewer_iterations_than_cold_starts(ll_problem):
    Cs = parse_c_path("100:0.5:3")
    assert Cs == pytest.approx([100, 50, 25])
    trainer = get_trainer("eg-ll")
    points = regularization_path(ll_problem, trainer, path_configs(trainer, Cs, tol=1e-3, max_passes=100))
    assert all(p.converged for p in points)
    assert points[-1].total_eff_iters == pytest.approx(sum(p.eff_iters for p in points))
    cold = _fit(ll_problem, "eg-ll", C=25.0, tol=1e-3, max_passes=100, anneal=False)
    assert points[-1].eff_iters < cold.final.eff_iters
    with pytest.raises(ValueError, match="START:FACTOR:COUNT"):
        parse_c_path("100:0.5")
    with pytest.raises(ValueError):
        parse_c_path("100:2:3")


def test_registry_configs_reject_settings_they_do_not_have():
    assert trainer_names() == ["eg-ll", "eg-ll-batch", "eg-mm", "eg-mm-batch", "lbfgs", "sgd", "cutting-plane", "bcfw", "egr"]
    assert len({(t.name, t.problem) for t in TRAINERS}) == len(TRAINERS)
    with pytest.raises(ValueError, match="has no setting order"):
        make_config(get_trainer("lbfgs"), C=1.0, order="cyclic")
    with pytest.raises(ValueError, match="unknown trainer"):
        get_trainer("svm")


@pytest.mark.parametrize("average", [False, True])
def test_bcfw_objectives_summed_during_the_next_pass_equal_a_pass_of_their_own(mm_problem, average):
    """BCFW records a pass's primal from the hinges the next pass's visits compute on the way; the record of
    the last pass of a run takes a pass of its own.  So pass j of a long run and the last pass of a run
    capped at j passes must agree bit for bit, and every recorded primal is the primal at the weights
    the callbacks see (the weighted average of the iterates with ``average``)."""
    seen = {}

    class Keep:
        def keep(self, record, w):
            seen[record.passes] = (record, np.array(w, copy=True))

        def __call__(self, record):
            pass

    trainer = get_trainer("bcfw")
    config = make_config(trainer, C=MM_C, max_passes=4, tol=0.0, average=average)
    long = trainer.fit(mm_problem, config=config, callbacks=(Keep(),))
    assert [r.passes for r in long.records] == [0, 1, 2, 3, 4]
    for j in range(1, 5):
        short = trainer.fit(mm_problem, config=make_config(trainer, C=MM_C, max_passes=j, tol=0.0, average=average))
        r, s = long.records[j], short.final
        assert (r.primal, r.dual, r.eff_iters) == (s.primal, s.dual, s.eff_iters)
        record, w = seen[j]
        assert record.primal == pytest.approx(max_margin_primal(mm_problem, w, MM_C), rel=1e-12)
    assert np.array_equal(long.weights, seen[4][1])
    seconds = [r.seconds for r in long.records]
    assert all(b > a for a, b in zip(seconds, seconds[1:]))  # each record's own optimisation time


@pytest.mark.parametrize("average", [False, True])
def test_bcfw_without_objectives_moves_the_same_weights(mm_problem, average):
    """``evaluate=False`` (a cascade's pruner) leaves out the primal and gap, not a step: the same weights
    and duals pass by pass, NaN primals, and no convergence by the gap."""
    trainer = get_trainer("bcfw")
    on = trainer.fit(mm_problem, config=make_config(trainer, C=MM_C, max_passes=3, tol=0.0, average=average))
    off = trainer.fit(mm_problem, config=make_config(trainer, C=MM_C, max_passes=3, tol=0.5, average=average,
                                                      evaluate=False))
    assert np.array_equal(on.weights, off.weights) and not off.converged
    assert [r.dual for r in on.records] == [r.dual for r in off.records]
    assert all(np.isnan(r.primal) for r in off.records) and not any(np.isnan(r.primal) for r in on.records)
    with pytest.raises(ValueError, match="needs evaluate"):
        make_config(trainer, C=MM_C, order="gap", evaluate=False)


@pytest.mark.parametrize("gap_every", [0, 2, 3])
@pytest.mark.parametrize("average", [False, True])
def test_bcfw_gap_every_computes_the_objectives_of_some_points_only(mm_problem, average, gap_every):
    """``gap_every`` k: the start, every k-th pass and the last point (k = 0: the last only) have the primal and
    gap, the very ones of a run computing them after every pass; the others NaN; the same weights and duals."""
    trainer = get_trainer("bcfw")
    every = trainer.fit(mm_problem, config=make_config(trainer, C=MM_C, max_passes=5, tol=0.0, average=average))
    some = trainer.fit(mm_problem, config=make_config(trainer, C=MM_C, max_passes=5, tol=0.0, average=average,
                                                       gap_every=gap_every))
    assert np.array_equal(every.weights, some.weights)
    assert np.array_equal(every.state["mu"], some.state["mu"])
    assert [r.passes for r in some.records] == [0, 1, 2, 3, 4, 5]
    assert [r.dual for r in every.records] == [r.dual for r in some.records]
    for a, b in zip(every.records, some.records):
        if (gap_every and b.passes % gap_every == 0) or b.passes == 5:
            assert (b.primal, b.gap) == (a.primal, a.gap)
        else:
            assert np.isnan(b.primal) and np.isnan(b.rel_gap)
    start = trainer.fit(mm_problem, config=make_config(trainer, C=MM_C, max_passes=0, gap_every=gap_every))
    assert [(r.passes, r.primal) for r in start.records] == [(0, every.records[0].primal)]  # the last point
    for bad in (-1, 1.5, True):
        with pytest.raises(ValueError, match="gap_every"):
            make_config(trainer, C=MM_C, gap_every=bad)
    with pytest.raises(ValueError, match="gap_every 1"):
        make_config(trainer, C=MM_C, order="gap", gap_every=0)


def test_bcfw_stopped_at_a_point_without_objectives_runs_no_extra_pass(mm_problem):
    """With ``gap_every`` 0 a pass is recorded as soon as the next one is due, so a callback that stops the run
    after pass 2 (patience) has its point as the result before pass 3 runs: the weights of a run capped at 2,
    and, as the last point, its primal and gap in its record (the callback saw it without them)."""

    class StopAt:
        stop = False

        def __call__(self, record):
            self.stop = record.passes == 2

    seen = []
    trainer = get_trainer("bcfw")
    result = trainer.fit(mm_problem, config=make_config(trainer, C=MM_C, max_passes=10, tol=0.0, average=True,
                                                        gap_every=0), callbacks=(StopAt(), seen.append))
    assert result.final.passes == 2 and len(result.records) == 3 and np.isnan(seen[-1].primal)
    capped = trainer.fit(mm_problem, config=make_config(trainer, C=MM_C, max_passes=2, tol=0.0, average=True))
    assert (result.final.primal, result.final.dual, result.final.gap, result.final.rel_gap) == \
        (capped.final.primal, capped.final.dual, capped.final.gap, capped.final.rel_gap)
    assert np.isfinite(result.final.primal)
    assert np.array_equal(result.weights, capped.weights)
    assert np.array_equal(result.state["mu"], capped.state["mu"])


def test_bcfw_stopped_by_a_callback_returns_the_recorded_pass(mm_problem):
    """A callback that stops the run after pass 2 sees pass 2's record only after pass 3 ran (its primal is
    summed during pass 3); the result is still pass 2's point, the extra pass dropped."""

    class StopAt:
        stop = False

        def keep(self, record, w):
            self.w = np.array(w, copy=True)

        def __call__(self, record):
            self.stop = record.passes == 2

    trainer = get_trainer("bcfw")
    stopper = StopAt()
    result = trainer.fit(mm_problem, config=make_config(trainer, C=MM_C, max_passes=10, tol=0.0, average=True),
                         callbacks=(stopper,))
    assert result.final.passes == 2 and len(result.records) == 3
    assert np.array_equal(result.weights, stopper.w)
    capped = trainer.fit(mm_problem, config=make_config(trainer, C=MM_C, max_passes=2, tol=0.0, average=True))
    assert np.array_equal(result.weights, capped.weights)
    assert np.array_equal(result.state["mu"], capped.state["mu"])
