"""Tests of attachment scores against hand-computed values."""

from __future__ import annotations

import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

from egnlp.corpora import CorpusError, Sentence, parse_conll, read_conll, write_conll
from egnlp.parser.attachment import attachment_scores, is_punct


def sentence(forms: list[str], heads: list[int], deprels: list[str], source: str = "gold.conll") -> Sentence:
    """A parsed one-sentence CoNLL-X text with the given forms, heads and labels."""
    lines = [
        "\t".join([str(i), form, "_", "X", "X", "_", str(head), label, "_", "_"])
        for i, (form, head, label) in enumerate(zip(forms, heads, deprels), start=1)
    ]
    return parse_conll("\n".join(lines) + "\n", source)[0]


@pytest.mark.parametrize(
    ("form", "punct"),
    [
        (".", True),
        (",", True),
        ("...", True),
        ("''", True),
        ("-", True),
        ("¿", True),
        ("«»", True),
        ("$", False),
        ("`", False),
        ("``", False),
        ("-LRB-", False),
        ("a.", False),
        ("3", False),
        ("", False),
    ],
)
def test_is_punct(form: str, punct: bool) -> None:
    assert is_punct(form) is punct


# Sentence 1: 4 tokens, token 4 is punctuation. Token 2 has a wrong label, token 4 a wrong head.
GOLD_1 = (["The", "cat", "sat", "."], [2, 3, 0, 3], ["det", "nsubj", "root", "punct"])
PRED_1 = ([2, 3, 0, 2], ["det", "obj", "root", "punct"])
# Sentence 2: 11 tokens, a chain ending in a comma. Token 1 and the comma have wrong heads,
# token 5 a wrong label.
WORDS_2 = [f"w{i}" for i in range(1, 11)] + [","]
GOLD_2 = (WORDS_2, [2, 3, 4, 5, 6, 7, 8, 9, 10, 0, 10], ["x"] * 10 + ["p"])
PRED_2 = ([3, 3, 4, 5, 6, 7, 8, 9, 10, 0, 1], ["x"] * 4 + ["y"] + ["x"] * 5 + ["p"])


def test_hand_computed_scores() -> None:
    gold = [sentence(*GOLD_1), sentence(*GOLD_2)]
    pred = [sentence(GOLD_1[0], *PRED_1, "pred.conll"), sentence(WORDS_2, *PRED_2, "pred.conll")]
    scores = attachment_scores(gold, pred)
    # Heads right: 3 of 4 and 9 of 11; heads and labels right: 2 of 4 and 8 of 11.
    assert scores["tokens"] == 15
    assert scores["uas"] == pytest.approx(100 * 12 / 15)
    assert scores["las"] == pytest.approx(100 * 10 / 15)
    # Without the period and the comma (both with wrong heads): heads right 3 of 3 and 9 of 10;
    # heads and labels right 2 of 3 and 8 of 10.
    assert scores["tokens_nopunct"] == 13
    assert scores["uas_nopunct"] == pytest.approx(100 * 12 / 13)
    assert scores["las_nopunct"] == pytest.approx(100 * 10 / 13)
    assert scores["by_length"] == [
        {"bucket": "1-10", "sentences": 1, "tokens": 4, "uas": pytest.approx(75.0)},
        {"bucket": "11-20", "sentences": 1, "tokens": 11, "uas": pytest.approx(100 * 9 / 11)},
        {"bucket": "21-30", "sentences": 0, "tokens": 0, "uas": None},
        {"bucket": "31-40", "sentences": 0, "tokens": 0, "uas": None},
        {"bucket": "41+", "sentences": 0, "tokens": 0, "uas": None},
    ]


def test_las_is_none_without_predicted_labels() -> None:
    gold = [sentence(*GOLD_1), sentence(*GOLD_2)]
    pred = [gold[0].with_heads(PRED_1[0]), gold[1].with_heads(PRED_2[0])]
    scores = attachment_scores(gold, pred)
    assert scores["las"] is None and scores["las_nopunct"] is None
    assert scores["uas"] == pytest.approx(100 * 12 / 15)


def test_perfect_prediction_scores_100() -> None:
    gold = [sentence(*GOLD_2)]
    scores = attachment_scores(gold, gold)
    assert scores["uas"] == scores["las"] == scores["uas_nopunct"] == scores["las_nopunct"] == 100.0


def test_mismatched_sentence_count() -> None:
    gold = [sentence(*GOLD_1), sentence(*GOLD_2)]
    with pytest.raises(CorpusError, match="gold has 2 sentences but the prediction has 1"):
        attachment_scores(gold, gold[:1])


def test_mismatched_length_names_sentence_and_lines() -> None:
    gold = [sentence(*GOLD_1), sentence(*GOLD_2)]
    pred = [gold[0], sentence(WORDS_2[:10], list(range(2, 11)) + [0], ["x"] * 10, "pred.conll")]
    with pytest.raises(CorpusError) as caught:
        attachment_scores(gold, pred)
    assert str(caught.value) == (
        "sentence 2 (gold.conll:1 vs pred.conll:1): gold has 11 tokens but the prediction has 10"
    )


def test_mismatched_forms() -> None:
    gold = [sentence(*GOLD_1)]
    pred = [sentence(["The", "dog", "sat", "."], *PRED_1, "pred.conll")]
    with pytest.raises(CorpusError, match=r"^sentence 1 .*token 2 is 'cat' in gold but 'dog' in the prediction$"):
        attachment_scores(gold, pred)


def test_prediction_without_heads() -> None:
    gold = [sentence(*GOLD_1)]
    text = "".join(f"{i}\t{form}\t_\tX\tX\t_\t_\t_\t_\t_\n" for i, form in enumerate(GOLD_1[0], start=1))
    unparsed = parse_conll(text, "raw.conll", require_heads=False)
    with pytest.raises(CorpusError, match="the predicted sentence has no heads"):
        attachment_scores(gold, unparsed)


def _udeval() -> str:
    """The CoNLL 2018 scorer of udtools, installed beside this interpreter (the test extra)."""
    path = Path(sys.executable).parent / "udeval"
    assert path.exists(), "udeval not found: install the test extra (udtools)"
    return str(path)


def test_las_on_universal_relations_equals_the_conll2018_scorer(tmp_path):
    """A perturbed copy of a real UD file: some words moved up to their grandparent (still a tree
    with one root), some labels changed, some only in their subtype; our UAS and universal LAS equal
    udeval's."""
    gold_path = Path(os.environ["EGNLP_UD_DIR"]) / "nl_alpino-ud-dev.conllu"
    gold = read_conll(gold_path)
    rng = random.Random(0)
    labels = sorted({label for s in gold for label in s.deprels})
    pred = []
    for sentence in gold:
        heads = list(sentence.heads)
        for m, h in enumerate(heads):
            if h and heads[h - 1] and rng.random() < 0.3:
                heads[m] = heads[h - 1]
        deprels = []
        for label in sentence.deprels:
            roll = rng.random()
            if roll < 0.1:
                label = rng.choice(labels)
            elif roll < 0.2 and ":" not in label:
                label = label + ":x"  # a subtype: wrong for LAS, right on universal relations
            deprels.append(label)
        pred.append(sentence.with_heads(heads, deprels))
    pred_path = tmp_path / "pred.conllu"
    write_conll(pred_path, pred)
    ours = attachment_scores(gold, read_conll(pred_path))
    out = subprocess.run([_udeval(), "-v", str(gold_path), str(pred_path)], capture_output=True, text=True,
                         check=True).stdout
    theirs = {line.split("|")[0].strip(): float(line.split("|")[3]) for line in out.splitlines()
              if line.split("|")[0].strip() in ("UAS", "LAS")}
    assert ours["uas"] == pytest.approx(theirs["UAS"], abs=0.005)
    assert ours["las_universal"] == pytest.approx(theirs["LAS"], abs=0.005)
    assert ours["las"] < ours["las_universal"] < ours["uas"] < 90.0
