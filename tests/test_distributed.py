"""Parsing, tagging and CoCoA+ training on a Dask LocalCluster (two worker processes) started by the tests."""

from __future__ import annotations

import sys

import numpy as np
import pytest

distributed = pytest.importorskip("distributed", reason="the optional extra dask is not installed")

from cli_helpers import assert_ok, error_line, run, usage_line  # noqa: E402
from egnlp.base.errors import EgnlpError  # noqa: E402

from egnlp.parser_training import build_parsing_problem, train_parser  # noqa: E402
from egnlp.corpora import format_conll, load_dataset  # noqa: E402
import egnlp.inputs as inputs  # noqa: E402
from egnlp.distributed import (dask_client, fit_cocoa, parse_on_cluster, shard_sentences,  # noqa: E402
                               tag_on_cluster)
from egnlp.tagger_training import label_columns, train_crf_tagger  # noqa: E402
from egnlp.training.eg import EGConfig, fit_eg  # noqa: E402
from egnlp.training.structured_problem import log_linear_primal, max_margin_primal  # noqa: E402


@pytest.fixture(scope="module")
def client():
    with distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1, dashboard_address=None,
                                  silence_logs=40) as cluster, distributed.Client(cluster) as c:
        yield c


@pytest.fixture(scope="module")
def es():
    return load_dataset("es", "train"), load_dataset("es", "test")[:200]


@pytest.fixture(scope="module")
def small_parser(es):
    parser, _ = train_parser(es[0][:60], None, root="single", max_passes=2)
    return parser


@pytest.fixture(scope="module")
def short_train(es):
    """60 short es training sentences: a problem EG solves to a small gap in a few seconds."""
    return [s for s in es[0] if len(s) <= 12][:60]


def test_parse_on_cluster_equals_local(client, es, small_parser):
    test = es[1]
    assert small_parser.labeler is not None
    assert format_conll(parse_on_cluster(client, small_parser, test)) == format_conll(small_parser.parse_corpus(test))


def test_tag_on_cluster_equals_local(client, es, tmp_path, monkeypatch):
    tokens, tags, _ = label_columns(es[0][:80], "pos")
    tagger, _ = train_crf_tagger(tokens, tags, C=1.0, max_passes=3)
    test = es[1]
    local = tagger.tag_corpus(test)
    assert [s.pos for s in tag_on_cluster(client, tagger, test)] == [s.pos for s in local]
    model, data = tmp_path / "t.npz", tmp_path / "test.conll"
    tagger.save(model)
    data.write_text(format_conll(test[:50]), encoding="utf-8")
    monkeypatch.setattr(inputs, "PIECE_BYTES", 8_000)  # the file is read in pieces: --dask tags them all
    here, there = run("tagger", "tag", model, data, "-q"), run("tagger", "tag", model, data, "-q", "--dask",
                                                                 client.scheduler.address)
    assert_ok(here)
    assert_ok(there)
    assert there.stdout == here.stdout


def test_cli_parse_at_address_equals_local(client, es, small_parser, tmp_path):
    model, data = tmp_path / "p.npz", tmp_path / "test.conllu"
    small_parser.save(model)
    data.write_text(format_conll(es[1][:50]), encoding="utf-8")
    local, remote = tmp_path / "local.conllu", tmp_path / "remote.conllu"
    assert_ok(run("parser", "parse", model, data, "-o", local, "-q"))
    assert_ok(run("parser", "parse", model, data, "-o", remote, "-q", "--dask", client.scheduler.address))
    assert remote.read_text(encoding="utf-8") == local.read_text(encoding="utf-8")


def test_unreachable_scheduler_and_missing_extra_are_one_line_errors(small_parser, tmp_path, monkeypatch):
    with pytest.raises(EgnlpError, match="cannot reach the Dask scheduler at tcp://127.0.0.1:9"):
        with dask_client("tcp://127.0.0.1:9", timeout=1.0):
            pass
    model, data = tmp_path / "p.npz", tmp_path / "in.conllu"
    small_parser.save(model)
    data.write_text("1\tla\tel\tDET\tDET\t_\t_\t_\t_\t_\n\n", encoding="utf-8")
    monkeypatch.setitem(sys.modules, "distributed", None)  # as if the extra were not installed
    assert "install egnlp[dask]" in error_line(run("parser", "parse", model, data, "--dask", "local"))


def test_shards_are_balanced_and_cover_every_sentence():
    sizes = [30, 5, 5, 20, 10, 10, 1]
    shards = shard_sentences(sizes, 2)
    assert sorted(np.concatenate(shards).tolist()) == list(range(len(sizes)))
    loads = [sum((sizes[i] + 1) ** 2 for i in s) for s in shards]
    assert max(loads) - min(loads) <= 31 ** 2
    with pytest.raises(ValueError, match="at most one worker a sentence"):
        shard_sentences(sizes, 8)


def dual_of(problem, theta, W, C, objective):
    """The dual recomputed from theta alone, and the W its marginals define."""
    pf = problem.features
    total, V = 0.0, np.zeros(pf.n_features)
    mu = np.empty(pf.n_parts)
    for i in range(pf.n_examples):
        lo, hi = pf.parts(i)
        log_z, mu[lo:hi] = problem.marginals(i, theta[lo:hi])
        if objective == "ll":
            total += float(mu[lo:hi] @ theta[lo:hi]) - log_z
        else:
            total -= float(mu[lo:hi] @ problem.loss[lo:hi])
    pf.scatter(0, pf.n_parts, problem.gold - mu, V)
    return total + float(W @ W) / (2.0 * C), V


def test_cocoa_reaches_the_single_process_optimum_with_a_true_certificate(client, short_train):
    featurizer, problem, _ = build_parsing_problem(short_train, "single")
    config = EGConfig(C=20.0, tol=2e-4, max_passes=150)
    local = fit_eg(problem, "ll", config=config)
    dist = fit_cocoa(client, featurizer, short_train, "single", "projective", "ll", 2, config=config)
    assert local.converged and dist.converged
    assert abs(dist.final.primal - local.final.primal) <= 1e-3 * abs(local.final.primal)
    duals = [r.dual for r in dist.records if r.dual is not None]
    assert all(b <= a + 1e-9 * abs(a) for a, b in zip(duals, duals[1:]))  # CoCoA+ never raises the dual
    W = dist.weights * config.C
    primal = log_linear_primal(problem, W, config.C)
    dual, V = dual_of(problem, dist.state["theta"], W, config.C, "ll")
    assert np.allclose(V, W, rtol=0, atol=1e-8)  # W = sum_i (phi(y_i) - E_mu_i[phi]) after the combined rounds
    assert dist.final.primal == pytest.approx(primal, rel=1e-10)
    assert dist.final.dual == pytest.approx(dual, rel=1e-10)
    assert dist.final.gap == pytest.approx(primal + dual, rel=1e-6, abs=1e-8)


def test_cocoa_max_margin_reports_the_gap_of_its_state(client, short_train):
    featurizer, problem, _ = build_parsing_problem(short_train[:30], "single")
    config = EGConfig(C=100.0, max_passes=4, anneal=False)
    dist = fit_cocoa(client, featurizer, short_train[:30], "single", "projective", "mm", 2, config=config)
    assert [r.passes for r in dist.records] == [0, 1, 2, 3, 4]
    W = dist.weights * config.C
    dual, V = dual_of(problem, dist.state["theta"], W, config.C, "mm")
    assert np.allclose(V, W, rtol=0, atol=1e-8)
    primal = max_margin_primal(problem, dist.weights, config.C)
    assert dist.final.gap == pytest.approx(primal + dual, rel=1e-8)
    assert dist.final.gap >= 0


def test_cli_train_on_the_cluster(client, short_train, tmp_path):
    data, model = tmp_path / "train.conllu", tmp_path / "m.npz"
    data.write_text(format_conll(short_train[:30]), encoding="utf-8")
    result = run("parser", "train", "--train", data, "-o", model, "--dask", client.scheduler.address,
                 "--workers", "2", "--passes", "3", "--no-labels", "--json")
    assert_ok(result)
    from egnlp.parser.parser_model import Parser

    parser = Parser.load(model)
    assert parser.info["distributed"] == {"engine": "dask", "method": "cocoa+", "shards": 2, "sigma": 2}
    assert '"converged"' in result.stdout
    assert parser.final_on_root is True  # es sentences hang their final punctuation on the root's child
    assert "--workers goes with --dask" in usage_line(run("parser", "train", "--train", data, "-o", model,
                                                          "--workers", "2"))


def test_one_shard_is_online_eg(client, short_train):
    featurizer, problem, _ = build_parsing_problem(short_train[:30], "single")
    config = EGConfig(C=20.0, max_passes=3)
    local = fit_eg(problem, "ll", config=config)
    dist = fit_cocoa(client, featurizer, short_train[:30], "single", "projective", "ll", 1, config=config)
    assert [r.eff_iters for r in dist.records] == [r.eff_iters for r in local.records]
    assert [r.primal for r in dist.records] == pytest.approx([r.primal for r in local.records], rel=1e-10)
    assert np.allclose(dist.state["theta"], local.state["theta"], rtol=1e-9, atol=1e-9)
