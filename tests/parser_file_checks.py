"""Checks shared by the tests of the higher-order parsers (sibling, grandparent parts): a part's ids are
those of its templates' keys, the trainers reach one optimum on such a problem, a saved model parses as
the trained one, files it cannot be read from fail with one readable error each, and the command line
trains, parses and describes such a model."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from scipy.optimize import minimize

from egnlp.corpora import load_dataset, read_conll, write_conll
from egnlp.base.files import ModelError, read_npz, write_npz_atomic
from egnlp.features.arc_templates import CPOS, POS, WORD, template_key
from egnlp.parser.parser_model import FORMAT_VERSION, MODEL_KIND, Parser
from egnlp.training.structured_problem import log_linear_gradient, log_linear_primal
from egnlp.training.registry import get_trainer, make_config

from cli_helpers import assert_ok, run


def token_atoms(atoms: np.ndarray, row: int) -> tuple:
    """The (word, tag, coarse tag) atoms of a row of an encoded corpus."""
    return atoms[row, WORD], atoms[row, POS], atoms[row, CPOS]


def reference_part_keys(t0: int, x, m, slot: int, tags, coarse, conjoined: int) -> list:
    """The keys of a higher-order part, written out from the feature modules' docstrings: over a token x
    (the sibling or the grandparent) and the modifier m, each a (word, tag, coarse tag) triple of atoms,
    xp.mp, xw.mw, xw.mp, xp.mw and xc.mc (templates t0..t0 + 4) alone and in ``slot``; over three tokens,
    the tags ``tags`` (t0 + 5) and the coarse tags ``coarse`` (t0 + 6), alone and conjoined with
    ``conjoined``."""
    (xw, xp, xc), (mw, mp, mc) = x, m
    keys = []
    for t, (a, b) in enumerate([(xp, mp), (xw, mw), (xw, mp), (xp, mw), (xc, mc)]):
        keys += [template_key(t0 + t, a, b, 0, 0), template_key(t0 + t, a, b, slot, 1)]
    for t, (a, b, c) in ((t0 + 5, tags), (t0 + 6, coarse)):
        keys += [template_key(t, a, b, c, 0), template_key(t, a, b, c, conjoined)]
    return keys


def compiled_sentences(featurizer, encoded, picks):
    """(i, the ids that ``featurizer`` (a sibling or grandparent alphabet) compiles for sentence i of
    ``encoded``, the row of its root) for each i of ``picks``."""
    for i in picks:
        yield i, featurizer.compile(encoded, i), int(encoded.tok_ptr[i])


def check_part_ids(ids, alphabet: np.ndarray, keys: list, gold: bool, where) -> np.ndarray:
    """A part's ``ids`` (its row's and its class's, -1 for none) are the ranks of its template ``keys`` in
    the sorted ``alphabet`` that it holds, and a ``gold`` part's keys are all there; returns those ids."""
    want = np.array(keys, dtype=np.uint64)
    at = np.searchsorted(alphabet, want)
    found = (at < alphabet.size) & (alphabet[np.minimum(at, alphabet.size - 1)] == want)
    assert sorted(int(x) for x in ids if x >= 0) == sorted(at[found].tolist()), where
    if gold:
        assert found.all(), where
    return at[found]


def check_feature_set(problem, rng: np.random.Generator, sentence_check=None) -> None:
    """The problem's part feature set: scatter is the transpose of scores, sparse_delta the scatter of
    one sentence as a sparse vector, the gold tree's score w . phi(gold), two weight vectors scored in
    one walk each to the bit, a block of sentences the sum of theirs, and a range that is not whole
    sentences refused; ``sentence_check(i, lo, hi, scores, w)`` checks more of each sentence."""
    pf = problem.features
    w = rng.normal(size=pf.n_features)
    for i in range(pf.n_examples):
        lo, hi = pf.parts(i)
        s = pf.scores(lo, hi, w)
        if sentence_check is not None:
            sentence_check(i, lo, hi, s, w)
        coef = rng.normal(size=hi - lo)
        dense = np.zeros(pf.n_features)
        pf.scatter(lo, hi, coef, dense)
        assert dense @ w == pytest.approx(coef @ s, rel=1e-10, abs=1e-8)
        ids, vals, dot, sq = pf.sparse_delta(lo, hi, coef, w)
        assert np.unique(ids).size == ids.size
        rebuilt = np.zeros(pf.n_features)
        rebuilt[ids] = vals
        np.testing.assert_allclose(rebuilt, dense, rtol=1e-12, atol=1e-12)
        assert dot == pytest.approx(dense @ w, rel=1e-9, abs=1e-8)
        assert sq == pytest.approx(dense @ dense, rel=1e-9)
        gold = problem.gold[lo:hi].astype(np.float64)
        gold_phi = np.zeros(pf.n_features)
        pf.scatter(lo, hi, gold, gold_phi)
        assert gold_phi @ w == pytest.approx(s @ gold, rel=1e-10, abs=1e-8)
        w2 = rng.normal(size=pf.n_features)
        both = pf.scores_many(lo, hi, (w, w2))
        assert np.array_equal(both[0], s) and np.array_equal(both[1], pf.scores(lo, hi, w2))
    with pytest.raises(ValueError, match="whole sentences"):
        pf.scores(1, pf.parts(0)[1], w)
    lo, hi = pf.parts(0)[0], pf.parts(2)[1]
    dense = np.zeros(pf.n_features)
    coef = rng.normal(size=hi - lo)
    pf.scatter(lo, hi, coef, dense)
    assert dense @ w == pytest.approx(coef @ pf.scores(lo, hi, w), rel=1e-10)


def check_eg_reaches_lbfgs(problem, C: float) -> None:
    """EG over the problem's marginals and scipy's L-BFGS on its log-linear primal reach one optimum;
    EG's duality gap closes."""
    d = problem.features.n_features
    res = minimize(lambda w: log_linear_gradient(problem, w, C), np.zeros(d), jac=True, method="L-BFGS-B",
                   options={"maxiter": 5000, "gtol": 1e-9, "ftol": 1e-14})
    spec = get_trainer("eg-ll")
    result = spec.fit(problem, config=make_config(spec, C=C, max_passes=300, tol=1e-6, anneal=False))
    assert result.final.rel_gap <= 1e-6
    assert log_linear_primal(problem, C * result.weights, C) == pytest.approx(res.fun, rel=1e-5)


def check_max_margin_trainers_agree(problem) -> None:
    """BCFW and max-margin EG close the duality gap (weak duality in every record) at one primal."""
    primals = {}
    for name in ("bcfw", "eg-mm"):
        spec = get_trainer(name)
        result = spec.fit(problem, config=make_config(spec, C=1000.0, max_passes=400, tol=1e-3))
        assert result.final.rel_gap <= 1e-3, name
        for r in result.records:
            if r.dual is not None:
                assert r.primal >= -r.dual - 1e-9 * abs(r.primal)  # weak duality
        primals[name] = result.final.primal
    assert primals["bcfw"] == pytest.approx(primals["eg-mm"], rel=2e-3)


def check_saved_parser(parser: Parser, dev, tmp_path: Path, keys: str, templates: str, message: str) -> None:
    """``parser`` saved and loaded parses ``dev`` the same (on one and two processes); files with other
    ``templates`` (a metadata name), unsorted or missing ``keys`` (an array name) or an unknown order are
    refused with a :class:`ModelError` (``message``: the first)."""
    path = tmp_path / "model.npz"
    parser.save(path)
    loaded = Parser.load(path)
    assert loaded.order == parser.order
    assert loaded.predict(dev) == parser.predict(dev)
    assert loaded.predict(dev, jobs=2) == parser.predict(dev)
    arrays, meta = read_npz(path, MODEL_KIND, FORMAT_VERSION)
    for name, bad_arrays, bad_meta, match in [
        ("old", arrays, {**meta, templates: "older"}, message),
        ("unsorted", {**arrays, keys: arrays[keys][::-1].copy()}, meta, "sorted"),
        ("missing", {k: v for k, v in arrays.items() if k != keys}, meta, f"missing array '{keys}'"),
        ("bad", arrays, {**meta, "order": 5}, "inconsistent model file \\(order '5'\\)"),
    ]:
        write_npz_atomic(tmp_path / f"{name}.npz", bad_arrays, bad_meta)
        with pytest.raises(ModelError, match=match):
            Parser.load(tmp_path / f"{name}.npz")


def check_cli_model(tmp_path: Path, train_sentences, flag: str, passes: int) -> tuple[dict, str]:
    """``parser train FLAG`` on ``train_sentences``, ``parser parse`` of 15 es test sentences (the heads
    of :meth:`Parser.predict_heads`) and ``parser evaluate``; the model's ``model info`` (JSON, text);
    training with ``--tree non-projective`` fails in one line that names the flag, writing nothing."""
    model = tmp_path / "m.npz"
    train = tmp_path / "train.conll"
    test = tmp_path / "test.conll"
    write_conll(train, train_sentences)
    write_conll(test, load_dataset("es", "test")[:15])
    assert_ok(run("parser", "train", "--train", train, flag, "--passes", str(passes), "-o", model, "-q"))
    out = tmp_path / "pred.conll"
    assert_ok(run("parser", "parse", model, test, "-o", out, "-q"))
    predicted = read_conll(out)
    assert [[int(h) for h in s.heads] for s in predicted] == Parser.load(model).predict_heads(read_conll(test))
    result = run("parser", "evaluate", test, out)
    assert_ok(result)
    assert "UAS" in result.stdout
    result = run("model", "info", model, "--json")
    assert_ok(result)
    info = json.loads(result.stdout)
    text = run("model", "info", model)
    assert_ok(text)
    return info, text.stdout
