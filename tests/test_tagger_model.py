"""The Tagger model (save / load / tag), the raw-text splitter and tokeniser, and CRF training end to end."""

import numpy as np
import pytest
from nltk.corpus import conll2000

from egnlp.corpora import Sentence
from egnlp.tagger_training import train_crf_tagger
from egnlp.tagger import ModelError, Tagger
from egnlp.tagger.crf import CRFModel
from egnlp.tagger.maxent import MaxentModel
from egnlp.tagger.tagger_model import FORMAT_VERSION, _inner_class
from egnlp.tagger.text import sentences_and_tokens, split_sentences, tokenize
from model_file_checks import check_missing_and_junk


def columns(sents, k):
    return [[tok[k] for tok in s] for s in sents]


@pytest.fixture(scope="module")
def pos_tagger():
    train = conll2000.tagged_sents("train.txt")[:200]
    tagger, result = train_crf_tagger(columns(train, 0), columns(train, 1), C=1.0, max_passes=25, tol=1e-3)
    return tagger, result


@pytest.fixture(scope="module")
def chunker():
    train = conll2000.iob_sents("train.txt")[:60]
    tagger, _ = train_crf_tagger(columns(train, 0), columns(train, 2), columns(train, 1), C=1.0, max_passes=8)
    return tagger


# -- text ---------------------------------------------------------------------


def test_split_sentences_rules():
    text = ("Mr. Smith went to Washington. He met Dr. J. Jones at 5 p.m. on Monday! "
            '"Is it true?" she asked. The U.S. economy grew 3.5% in 1989, e.g. in Ohio.\n\nNo final stop')
    assert split_sentences(text) == [
        "Mr. Smith went to Washington.",
        "He met Dr. J. Jones at 5 p.m. on Monday!",
        '"Is it true?" she asked.',
        "The U.S. economy grew 3.5% in 1989, e.g. in Ohio.",
        "No final stop",
    ]
    assert split_sentences("It fell 2.5%. Then it rose.") == ["It fell 2.5%.", "Then it rose."]
    assert split_sentences("  ") == []


def test_treebank_tokens():
    assert tokenize("\"Don't stop,\" he said.") == ["``", "Do", "n't", "stop", ",", "''", "he", "said", "."]
    assert sentences_and_tokens("I'm here. You're there.") == [["I", "'m", "here", "."], ["You", "'re", "there", "."]]


# -- training and the model -------------------------------------------------------


def test_trained_tagger_beats_the_majority_baseline(pos_tagger):
    tagger, result = pos_tagger
    assert tagger.kind == "crf" and tagger.column == "pos" and not tagger.use_pos
    assert result.records[-1].primal < result.records[0].primal
    test = conll2000.tagged_sents("test.txt")[:200]
    gold = columns(test, 1)
    pred = tagger.predict(columns(test, 0))
    correct = sum(p == g for ps, gs in zip(pred, gold) for p, g in zip(ps, gs))
    total = sum(len(g) for g in gold)
    train = conll2000.tagged_sents("train.txt")[:200]
    train_tags = [t for _, t in (tok for s in train for tok in s)]
    majority = max(set(train_tags), key=train_tags.count)
    baseline = sum(g == majority for gs in gold for g in gs) / total
    assert correct / total > 0.85 > baseline + 0.5


def test_save_load_roundtrip(pos_tagger, tmp_path):
    tagger, _ = pos_tagger
    path = tmp_path / "pos.npz"
    tagger.save(path)
    loaded = Tagger.load(path)
    assert loaded.labels == tagger.labels and loaded.column == "pos" and loaded.kind == "crf"
    np.testing.assert_array_equal(loaded.model.weights, tagger.model.weights)
    test = columns(conll2000.tagged_sents("test.txt")[:50], 0)
    assert loaded.predict(test) == tagger.predict(test)
    assert loaded.info["train_sentences"] == 200
    assert [p.name for p in tmp_path.iterdir()] == ["pos.npz"]  # no temporary file left


def test_tag_text_tokens_and_marginals(pos_tagger):
    tagger, _ = pos_tagger
    text = "The company said its profit rose 5%. Mr. Smith sold the shares."
    per_sentence = tagger.tag_sentences(text)
    assert [len(s) for s in per_sentence] == [9, 6]
    flat = tagger.tag(text)
    assert flat == [pair for s in per_sentence for pair in s]
    assert [w for w, _ in per_sentence[1]] == ["Mr.", "Smith", "sold", "the", "shares", "."]
    assert dict(per_sentence[0])["The"] == "DT" and per_sentence[0][-1] == (".", ".")
    tokens = [w for w, _ in per_sentence[0]]
    assert tagger.tag_tokens(tokens) == [t for _, t in per_sentence[0]]
    assert tagger.tag_tokens([]) == []
    margs = tagger.marginals(tokens)
    assert len(margs) == len(tokens)
    for m, t in zip(margs, tagger.tag_tokens(tokens)):
        assert sum(m.values()) == pytest.approx(1.0)
        assert set(m) == set(tagger.labels)
    arr = tagger.marginals(tokens, as_array=True)
    assert arr.shape == (len(tokens), len(tagger.labels))
    assert arr[0, tagger.labels.index("DT")] > 0.5


def test_chunker_reads_pos(chunker, pos_tagger, tmp_path):
    pos, _ = pos_tagger
    assert chunker.use_pos and chunker.column == "chunk"
    with pytest.raises(ValueError, match="POS"):
        chunker.tag("The cat sat.")
    pairs = chunker.tag("The cat sat on the mat.", pos_tagger=pos)
    assert [w for w, _ in pairs] == ["The", "cat", "sat", "on", "the", "mat", "."]
    assert all(t in chunker.labels for _, t in pairs)
    chunker.save(tmp_path / "chunk.npz")
    again = Tagger.load(tmp_path / "chunk.npz")
    assert again.column == "chunk" and again.use_pos
    test = conll2000.iob_sents("test.txt")[:20]
    assert again.predict(columns(test, 0), columns(test, 1)) == chunker.predict(columns(test, 0), columns(test, 1))


def test_tag_corpus_fills_the_column(pos_tagger, chunker):
    pos, _ = pos_tagger
    rows = tuple((str(i + 1), w, "_", "_", "_", "_", "_", "_", "_", "_") for i, w in enumerate(["The", "cat", "sat", "."]))
    sent = Sentence(rows=rows)
    tagged = pos.tag_corpus([sent])[0]
    assert tagged.pos == pos.tag_tokens(sent.forms)
    assert tagged.forms == sent.forms
    chunked = chunker.tag_corpus([tagged])[0]
    assert chunked.chunks == chunker.tag_tokens(sent.forms, tagged.pos)
    assert chunked.pos == tagged.pos


def test_bad_model_files(pos_tagger, tmp_path):
    tagger, _ = pos_tagger
    good = tmp_path / "good.npz"
    tagger.save(good)
    check_missing_and_junk(Tagger.load, tmp_path)
    truncated = tmp_path / "truncated.npz"
    truncated.write_bytes(good.read_bytes()[: good.stat().st_size // 2])
    with pytest.raises(ModelError):
        Tagger.load(truncated)

    arrays, inner = tagger.model.to_arrays()
    from egnlp.base.files import write_npz_atomic

    def write(name, arrays, **meta):
        full = {"kind": "egnlp-tagger", "format_version": FORMAT_VERSION, "model": "crf", "column": "pos",
                "inner": inner, "info": {}}
        full.update(meta)
        write_npz_atomic(tmp_path / name, arrays, full)
        return tmp_path / name

    with pytest.raises(ModelError, match="format version 99"):
        Tagger.load(write("v99.npz", arrays, format_version=99))
    with pytest.raises(ModelError, match="kind 'egnlp-tagger'"):
        Tagger.load(write("parser.npz", arrays, kind="egnlp-parser"))
    with pytest.raises(ModelError, match="unknown tagger model kind"):
        Tagger.load(write("hmm.npz", arrays, model="hmm"))
    with pytest.raises(ModelError, match="label column"):
        Tagger.load(write("col.npz", arrays, column="ner"))
    short = dict(arrays, weights=arrays["weights"][:-1])
    with pytest.raises(ModelError, match="inconsistent model file"):
        Tagger.load(write("short.npz", short))
    missing = {k: v for k, v in arrays.items() if k != "lab_ptr"}
    with pytest.raises(ModelError, match="lab_ptr"):
        Tagger.load(write("missing.npz", missing))
    with pytest.raises(ModelError, match="predicates"):
        Tagger.load(write("preds.npz", arrays, inner=dict(inner, predicates="0000")))
    # Every message is one line.
    for name in ("v99.npz", "short.npz", "missing.npz"):
        with pytest.raises(ModelError) as info:
            Tagger.load(tmp_path / name)
        assert "\n" not in str(info.value)


def test_inner_kinds():
    assert _inner_class("crf") is CRFModel
    assert _inner_class("maxent") is MaxentModel
    with pytest.raises(ModelError, match="unknown tagger model kind 'svm'"):
        _inner_class("svm")


class _Majority:
    """A stand-in inner model of another kind, without sequence marginals."""

    kind = "maxent"
    labels = ["NN", "DT"]
    use_pos = False

    def predict(self, tokens_list, pos_list=None):
        return [["NN"] * len(t) for t in tokens_list]


def test_marginals_need_a_model_that_gives_them():
    """The CRF and maxent models give label marginals (tests/test_confidence.py); an inner model without
    them tags, and asking for its marginals is a ValueError."""
    tagger = Tagger(_Majority())
    assert tagger.tag_tokens(["a", "b"]) == ["NN", "NN"]
    assert tagger.predict([["a"], [], ["b", "c"]]) == [["NN"], [], ["NN", "NN"]]
    with pytest.raises(ValueError, match="gives no label marginals"):
        tagger.marginals(["a"])
    with pytest.raises(ValueError, match="gives no label marginals"):
        tagger.predict([["a"]], confidence=True)


def test_packed_strings_round_trip_and_reject_broken_arrays():
    from egnlp.base.files import pack_strings, unpack_strings

    words = ["", "año", "w[-1]|w[0]=the|man", "日本"]
    data, offsets = pack_strings(words)
    assert data.dtype == np.uint8 and offsets.dtype == np.int64
    assert unpack_strings(data, offsets) == words
    for bad in (offsets[::-1], offsets[:-1], offsets.astype(float)):
        with pytest.raises(ValueError):
            unpack_strings(data, bad)
    with pytest.raises(ValueError):
        unpack_strings(np.array([0xFF], dtype=np.uint8), np.array([0, 1]))
