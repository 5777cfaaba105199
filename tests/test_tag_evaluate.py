"""Tag and chunk scores (tagger/accuracy.py): hand-computed examples and a port of conlleval's counting."""

from __future__ import annotations

import random

import pytest

from egnlp.corpora import CorpusError, Sentence
from egnlp.tagger.accuracy import chunks, is_iob, tag_scores


def sentence(forms, pos, chunk_tags=None, source="<string>", line=1) -> Sentence:
    rows = []
    for i, (w, p) in enumerate(zip(forms, pos)):
        row = (str(i + 1), w, "_", p, p, "_", "_", "_", "_", "_")
        rows.append(row + ((chunk_tags[i],) if chunk_tags is not None else ()))
    return Sentence(tuple(rows), source=source, line=line)


def chunk_corpus(tag_lists):
    return [sentence([f"w{i}" for i in range(len(t))], ["NN"] * len(t), t) for t in tag_lists]


# Gold and predicted chunk tags of three sentences, with the chunks they make:
GOLD = [
    "B-NP I-NP O B-VP I-VP B-NP".split(),  # NP(0,1) VP(3,4) NP(5,5): NP at the end
    "B-NP I-NP B-PP B-NP I-NP I-NP".split(),  # NP(0,1) PP(2,2) NP(3,5)
    "I-NP I-NP".split(),  # IOB1: I- at the sentence start opens NP(0,1)
]
PRED = [
    "B-NP I-NP O I-VP I-VP I-NP".split(),  # I-VP after O opens VP(3,4); I-NP after VP opens NP(5,5)
    "B-NP B-NP B-PP B-NP I-NP I-VP".split(),  # NP(0,0) NP(1,1) PP(2,2) NP(3,4) VP(5,5)
    "B-NP I-NP".split(),  # NP(0,1)
]


def test_chunk_spans():
    assert chunks(GOLD[0]) == [(0, 1, "NP"), (3, 4, "VP"), (5, 5, "NP")]
    assert chunks(PRED[0]) == [(0, 1, "NP"), (3, 4, "VP"), (5, 5, "NP")]
    assert chunks(PRED[1]) == [(0, 0, "NP"), (1, 1, "NP"), (2, 2, "PP"), (3, 4, "NP"), (5, 5, "VP")]
    assert chunks(GOLD[2]) == [(0, 1, "NP")]
    assert chunks(["O", "O"]) == [] and chunks([]) == []
    with pytest.raises(ValueError, match="'NP' of token 2"):
        chunks(["B-NP", "NP"])
    assert is_iob("O") and is_iob("B-NP") and is_iob("I-X") and not is_iob("B-") and not is_iob("NN")


def test_chunk_precision_recall_f1_by_hand():
    scores = tag_scores(chunk_corpus(GOLD), chunk_corpus(PRED), "chunk")
    # sentence 1: 3 gold, 3 predicted, 3 correct; 2: 3, 5, 1 (PP); 3: 1, 1, 1.
    assert (scores["chunks_gold"], scores["chunks_pred"], scores["chunks_correct"]) == (7, 9, 5)
    assert scores["precision"] == pytest.approx(100 * 5 / 9)
    assert scores["recall"] == pytest.approx(100 * 5 / 7)
    assert scores["f1"] == pytest.approx(62.5)  # 2 * 5 / (7 + 9)
    np_, vp, pp = (scores["by_type"][t] for t in ("NP", "VP", "PP"))
    assert (np_["gold"], np_["pred"], np_["correct"]) == (5, 6, 3)
    assert np_["f1"] == pytest.approx(100 * 2 * 3 / 11)
    assert (vp["gold"], vp["pred"], vp["correct"]) == (1, 2, 1)
    assert (vp["precision"], vp["recall"]) == (pytest.approx(50.0), pytest.approx(100.0))
    assert pp["f1"] == pytest.approx(100.0)
    # Tokens: 2 + 2 + 1 wrong of 14.
    assert scores["tokens"] == 14 and scores["correct"] == 9
    assert scores["accuracy"] == pytest.approx(100 * 9 / 14)


def test_no_chunk_across_sentences():
    # One sentence ending in I-NP, the next starting with I-NP: two chunks, not one.
    gold = chunk_corpus([["B-NP", "I-NP"], ["I-NP", "O"]])
    scores = tag_scores(gold, gold, "chunk")
    assert scores["chunks_gold"] == 2 and scores["f1"] == pytest.approx(100.0)


def test_empty_chunk_sets_give_zero_not_an_error():
    gold = chunk_corpus([["O", "O"]])
    pred = chunk_corpus([["B-NP", "O"]])
    scores = tag_scores(gold, pred, "chunk")
    assert (scores["precision"], scores["recall"], scores["f1"]) == (0.0, 0.0, 0.0)


# -- a port of conlleval.pl's counting (B/I/O tags), to compare on random sequences ------------------


def _split(tag):
    return ("O", "") if tag == "O" else (tag[0], tag[2:])


def _end(prev_tag, tag, prev_type, typ):
    end = (prev_tag, tag) in {("B", "B"), ("B", "O"), ("I", "B"), ("I", "O")}
    return end or (prev_tag != "O" and prev_type != typ)


def _start(prev_tag, tag, prev_type, typ):
    start = (prev_tag, tag) in {("B", "B"), ("I", "B"), ("O", "B"), ("O", "I")}
    return start or (tag != "O" and prev_type != typ)


def conlleval_counts(gold_sents, pred_sents):
    correct = found_gold = found_pred = 0
    for g_tags, p_tags in zip(gold_sents, pred_sents):
        in_correct = False
        lg, lgt, lp, lpt = "O", "", "O", ""
        for gt, pt in list(zip(g_tags, p_tags)) + [("O", "O")]:  # the boundary closes open chunks
            g, gty = _split(gt)
            p, pty = _split(pt)
            if in_correct:
                ge, pe = _end(lg, g, lgt, gty), _end(lp, p, lpt, pty)
                if ge and pe and lpt == lgt:
                    in_correct = False
                    correct += 1
                elif ge != pe or pty != gty:
                    in_correct = False
            gs, ps = _start(lg, g, lgt, gty), _start(lp, p, lpt, pty)
            if gs and ps and pty == gty:
                in_correct = True
            found_gold += gs
            found_pred += ps
            lg, lgt, lp, lpt = g, gty, p, pty
    return correct, found_gold, found_pred


def test_matches_conlleval_on_random_sequences():
    rng = random.Random(7)
    tags = ["O", "B-NP", "I-NP", "B-VP", "I-VP", "I-PP"]
    for _ in range(300):
        lengths = [rng.randint(0, 7) for _ in range(rng.randint(1, 3))]
        gold = [[rng.choice(tags) for _ in range(n)] for n in lengths]
        pred = [[rng.choice(tags) for _ in range(n)] for n in lengths]
        scores = tag_scores(chunk_corpus(gold), chunk_corpus(pred), "chunk")
        if not scores["tokens"]:
            continue
        assert (scores["chunks_correct"], scores["chunks_gold"], scores["chunks_pred"]) == \
            conlleval_counts(gold, pred), (gold, pred)


# -- token accuracy, unknown words, columns, errors ----------------------------------------------


def test_accuracy_and_unknown_accuracy():
    gold = [sentence("The cat sat".split(), "DT NN VBD".split()), sentence("A dog ran .".split(), "DT NN VBD .".split())]
    pred = [sentence("The cat sat".split(), "DT NN NN".split()), sentence("A dog ran .".split(), "DT VB VBD .".split())]
    vocab = {"The", "cat", "A", "ran", "."}  # unknown: sat (wrong), dog (wrong)
    scores = tag_scores(gold, pred, "pos", train_vocab=vocab)
    assert scores["tokens"] == 7 and scores["correct"] == 5
    assert scores["accuracy"] == pytest.approx(100 * 5 / 7)
    assert scores["unknown_tokens"] == 2 and scores["unknown_accuracy"] == pytest.approx(0.0)
    scores = tag_scores(gold, pred, "pos", train_vocab=["The", "cat", "sat", "A", "ran", "."])  # a list works too
    assert scores["unknown_tokens"] == 1 and scores["unknown_accuracy"] == pytest.approx(0.0)
    scores = tag_scores(gold, gold, "pos", train_vocab={"The"})
    assert scores["unknown_tokens"] == 6 and scores["unknown_accuracy"] == pytest.approx(100.0)
    no_vocab = tag_scores(gold, pred)
    assert no_vocab["unknown_accuracy"] is None and no_vocab["unknown_tokens"] is None
    assert "f1" not in no_vocab  # POS tags are not IOB
    all_known = tag_scores(gold, pred, train_vocab={w for s in gold for w in s.forms})
    assert all_known["unknown_tokens"] == 0 and all_known["unknown_accuracy"] is None


def test_iob_labels_in_the_pos_column_get_chunk_scores():
    gold = [sentence(["a", "b"], ["B-NP", "I-NP"])]
    pred = [sentence(["a", "b"], ["B-NP", "B-NP"])]
    scores = tag_scores(gold, pred, "pos")
    assert scores["chunks_correct"] == 0 and scores["chunks_gold"] == 1 and scores["chunks_pred"] == 2


def test_mismatches_name_the_sentence():
    gold = [sentence(["a", "b"], ["X", "Y"], source="g.conll", line=1),
            sentence(["c", "d"], ["X", "Y"], source="g.conll", line=4)]
    with pytest.raises(CorpusError, match="2 sentences, prediction 1"):
        tag_scores(gold, gold[:1])
    short = [gold[0], sentence(["c"], ["X"], source="p.conll", line=4)]
    with pytest.raises(CorpusError, match=r"p.conll:4: predicted sentence 2: 1 tokens, gold has 2"):
        tag_scores(gold, short)
    other = [gold[0], sentence(["c", "e"], ["X", "Y"])]
    with pytest.raises(CorpusError, match=r"sentence 2: token 2 is 'e', gold has 'd'") as info:
        tag_scores(gold, other)
    assert "\n" not in str(info.value)
    with pytest.raises(CorpusError, match="no chunk column"):
        tag_scores(gold, gold, "chunk")
    with pytest.raises(ValueError, match="column must be"):
        tag_scores(gold, gold, "ner")
    bad = chunk_corpus([["B-NP", "NN"]])
    with pytest.raises(ValueError, match="sentence 1: tag 'NN' of token 2 is not an IOB tag"):
        tag_scores(bad, bad, "chunk")
