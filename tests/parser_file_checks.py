"""Checks shared by the tests of the higher-order parsers (sibling, grandparent parts): a saved model
parses as the trained one, files it cannot be read from fail with one readable error each, and the
command line trains, parses and describes such a model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from egnlp.corpora import load_dataset, read_conll, write_conll
from egnlp.corpora.files import ModelError, read_npz, write_npz_atomic
from egnlp.parser.model import FORMAT_VERSION, MODEL_KIND, Parser

from cli_helpers import assert_ok, error_line, run


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
    """``parser train FLAG`` on ``train_sentences``, ``parser parse`` of 30 es test sentences (the heads
    of :meth:`Parser.predict_heads`) and ``parser evaluate``; the model's ``model info`` (JSON, text);
    training with ``--tree non-projective`` fails in one line that names the flag, writing nothing."""
    model = tmp_path / "m.npz"
    train = tmp_path / "train.conll"
    test = tmp_path / "test.conll"
    write_conll(train, train_sentences)
    write_conll(test, load_dataset("es", "test")[:30])
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
    line = error_line(run("parser", "train", "--train", train, flag, "--tree", "non-projective",
                          "-o", tmp_path / "x.npz"))
    assert f"{flag} predicts projective trees only" in line
    assert not (tmp_path / "x.npz").exists()
    return info, text.stdout
