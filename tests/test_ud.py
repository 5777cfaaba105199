"""Universal Dependencies in and out: a labeled parser trained on a UD file writes CoNLL-U that the
official validator accepts, keeping comments and multiword tokens and dropping the enhanced graph."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ud_checks import udvalidate
from egnlp.corpora import read_conll

from cli_helpers import assert_ok, run
from text_blocks import blocks

UD = Path(os.environ["EGNLP_UD_DIR"])


@pytest.mark.parametrize("prefix, lang", [("pt_bosque-ud", "pt"), ("nl_alpino-ud", "nl")])
def test_parsed_ud_files_pass_the_validator(tmp_path: Path, prefix: str, lang: str) -> None:
    train = tmp_path / "train.conllu"
    train.write_text(blocks((UD / f"{prefix}-test.conllu").read_text(encoding="utf-8"), 0, 200), encoding="utf-8")
    model = tmp_path / "ud.npz"
    assert_ok(run("parser", "train", "--train", train, "--out", model, "--passes", 2, "--tree", "auto"))
    gold_path = tmp_path / "dev.conllu"  # the first 500 dev sentences
    gold_path.write_text(blocks((UD / f"{prefix}-dev.conllu").read_text(encoding="utf-8"), 0, 500), encoding="utf-8")
    pred_path = tmp_path / "pred.conllu"
    assert_ok(run("parser", "parse", model, gold_path, "-o", pred_path))
    checked = udvalidate(pred_path, lang)
    assert checked.returncode == 0, checked.stdout[-2000:] + checked.stderr[-2000:]
    gold, pred = read_conll(gold_path), read_conll(pred_path)
    assert [s.forms for s in gold] == [s.forms for s in pred]
    text = pred_path.read_text(encoding="utf-8")
    kept = [line for s in gold for _, line in s.aside if line.startswith("#") or "-" in line.split("\t")[0]]
    assert all(line in text for line in kept)  # comments and multiword tokens
    assert not any("." in line.split("\t")[0] for line in text.splitlines() if line and not line.startswith("#"))
    labels = {label for s in pred for label in s.deprels}
    assert "root" in labels and len(labels) > 10
    assert all((label == "root") == (head == 0) for s in pred for head, label in zip(s.heads, s.deprels))
