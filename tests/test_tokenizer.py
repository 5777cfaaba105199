"""The tokenizer learned from a CoNLL-U file: the text under the file, the character chain, training, files.

- every sentence of the UD files rebuilds its ``# text`` from its surface tokens, and the paragraphs
  hold the sentences at their offsets;
- labels and predicate keys of a tiny paragraph;
- a model saved and loaded tokenizes identically; offsets give back the text exactly;
- EG closes the duality gap of a small tokenizer problem;
- a language without spaces (pt_bosque with its spaces deleted) is segmented far better than the
  simple baselines;
- bad input raises egnlp's errors, naming the file and line.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import numpy as np
import pytest

from egnlp.base.errors import CorpusError, InputError, ModelError
from egnlp.base.files import write_npz_atomic
from egnlp.corpora import parse_conll, read_conll
from egnlp.corpora.ud_text import paragraphs, sentence_text, surface_tokens
from egnlp.features.char_features import LABELS, N_TEMPLATES, char_class, char_keys, nonspace_positions
from egnlp.tagger.tokenizer_model import (MODEL_KIND, FORMAT_VERSION, Segmentation, Tokenizer, paragraph_labels,
                                          segmentation_f1)
from egnlp.tokenizer_training import corpus_paragraphs, example_cuts, train_tokenizer

UD = Path(os.environ["EGNLP_UD_DIR"])
PT_TEST = UD / "pt_bosque-ud-test.conllu"
TEXT_COMMENT = re.compile(r"# text = (.*)")

TINY = """# newdoc id = d1
# text = Vou ao Rio.  Ok!
1\tVou\tir\tVERB\t_\t_\t0\troot\t_\t_
2-3\tao\t_\t_\t_\t_\t_\t_\t_\t_
2\ta\ta\tADP\t_\t_\t4\tcase\t_\t_
3\to\to\tDET\t_\t_\t4\tdet\t_\t_
4\tRio\tRio\tPROPN\t_\t_\t1\tobl\t_\tSpaceAfter=No
5\t.\t.\tPUNCT\t_\t_\t1\tpunct\t_\tSpacesAfter=\\s\\s
6\tOk\tok\tINTJ\t_\t_\t1\tdiscourse\t_\tSpaceAfter=No
7\t!\t!\tPUNCT\t_\t_\t1\tpunct\t_\t_

# text = Sim.
1\tSim\tsim\tINTJ\t_\t_\t0\troot\t_\tSpaceAfter=No
2\t.\t.\tPUNCT\t_\t_\t1\tpunct\t_\t_

# newpar
# text = Fim
1\tFim\tfim\tNOUN\t_\t_\t0\troot\t_\t_

"""


@pytest.fixture(scope="module")
def pt_sentences():
    return read_conll(PT_TEST)


@pytest.fixture(scope="module")
def tiny_model(pt_sentences):
    """A tokenizer trained on 300 pt_bosque sentences (a few passes): small and quick, not accurate."""
    return train_tokenizer(pt_sentences[:300], max_passes=4, data="pt_bosque-ud-test[:300]")


# -- the text under a CoNLL-U file ------------------------------------------------------------------------


@pytest.mark.parametrize("path", sorted(UD.glob("*.conllu")), ids=lambda p: p.name)
def test_every_sentence_rebuilds_its_text(path):
    sentences = read_conll(path)
    for sentence in sentences:
        given = next(TEXT_COMMENT.fullmatch(line).group(1) for _, line in sentence.aside
                     if TEXT_COMMENT.fullmatch(line))
        assert sentence_text(sentence) == given, f"{sentence.source}:{sentence.line}"
    # The paragraphs hold each sentence's text at its tokens' offsets, and each token's FORM.
    found = paragraphs(sentences)
    starts = sum(1 for s in sentences if any(line.startswith(("# newpar", "# newdoc")) for _, line in s.aside))
    assert len(found) == max(starts, 1)
    texts = iter(sentences)
    for paragraph in found:
        for first, stop in paragraph.sentences:
            sentence = next(texts)
            tokens = surface_tokens(sentence)
            spans = paragraph.tokens[first:stop]
            assert [paragraph.text[a:b] for a, b in spans] == [t.form for t in tokens]
            assert paragraph.text[spans[0][0]:spans[-1][1]] == sentence_text(sentence)
    assert next(texts, None) is None


def test_tiny_paragraphs_labels_and_keys():
    found = paragraphs(parse_conll(TINY))
    assert [p.text for p in found] == ["Vou ao Rio.  Ok! Sim.", "Fim"]
    first = found[0]
    assert [first.text[a:b] for a, b in first.tokens] == ["Vou", "ao", "Rio", ".", "Ok", "!", "Sim", "."]
    assert first.sentences == ((0, 6), (6, 8))
    labels = "".join(LABELS[y] for y in paragraph_labels(first))
    #                    V o u a o R i o . O k ! S i m .
    assert labels == "IITITIITTITSIITS"
    assert "".join(LABELS[y] for y in paragraph_labels(found[1])) == "IIS"
    positions = nonspace_positions(first.text)
    assert "".join(first.text[p] for p in positions) == "VouaoRio.Ok!Sim."
    keys = char_keys([p.text for p in found])
    assert keys.pos_ptr.tolist() == [0, 16, 19]
    assert [p.tolist() for p in keys.positions] == [positions.tolist(), [0, 1, 2]]
    counts = np.diff(keys.key_ptr)
    assert counts.max() <= N_TEMPLATES and (counts > 25).all()
    # The same character in the same context has the same keys: 'o' of "Vou" and of "ao" differ, the bias agrees.
    a, b = (keys.keys[keys.key_ptr[j]:keys.key_ptr[j + 1]] for j in (1, 4))
    assert a[0] == b[0] and set(a) != set(b)
    assert char_keys([first.text]).keys.tolist() == keys.keys[:keys.key_ptr[16]].tolist()
    assert [char_class(c) for c in "Aa1.«\u3002 "] == ["upper", "lower", "digit", ".", "quote", "punct", "space"]


def test_examples_are_cut_after_sentence_ends():
    y = [np.array([0, 1, 2, 0, 2, 0, 0, 2]), np.array([0, 2])]
    assert example_cuts(y, 3).tolist() == [0, 3, 8, 10]
    assert example_cuts(y, 100).tolist() == [0, 8, 10]


# -- the model -------------------------------------------------------------------------------------------


ODD_TEXT = ("  Disse-lhe o Sr. Silva:\t«Vou às 9h30.»  Depois\nvolto!\n\n\nNovo parágrafo sem ponto final \n"
            "\n  US$ 1.984,50 (cerca de R$ 2 mil).   ")


def test_save_and_load_give_the_same_tokenizer(tiny_model, tmp_path):
    tokenizer, result = tiny_model
    path = tmp_path / "tok.npz"
    tokenizer.save(path)
    loaded = Tokenizer.load(path)
    np.testing.assert_array_equal(loaded.weights, tokenizer.weights)
    assert loaded.info == tokenizer.info and loaded.info["train_sentences"] == 300
    assert loaded.spaces_in_tokens is False
    text = "\n\n".join(p.text for p in corpus_paragraphs(read_conll(PT_TEST)[300:400])) + "\n\n" + ODD_TEXT
    assert loaded.tokenize(text) == tokenizer.tokenize(text)


def test_offsets_give_back_the_text(tiny_model):
    tokenizer, _ = tiny_model
    sentences = tokenizer.tokenize(ODD_TEXT)
    tokens = [t for s in sentences for t in s.tokens]
    assert ODD_TEXT[:tokens[0].start] + "".join(t.form + (t.space_after or "") for t in tokens) == ODD_TEXT
    for k, token in enumerate(tokens):
        assert ODD_TEXT[token.start:token.end] == token.form == token.norm
        assert token.form.strip() == token.form and token.form
        if k + 1 < len(tokens):
            assert token.space_after == ODD_TEXT[token.end:tokens[k + 1].start]
        else:  # None when the text ends with the token
            assert token.space_after == (ODD_TEXT[token.end:] or None)
    for sentence in sentences:
        assert sentence.text == ODD_TEXT[sentence.start:sentence.end]
        assert sentence.start == sentence.tokens[0].start and sentence.end == sentence.tokens[-1].end
    # A paragraph ends a sentence; whitespace ends a token (no training token holds any).
    assert any(s.text.endswith("volto!") for s in sentences)
    assert any(s.text.endswith("final") for s in sentences)
    assert all(not any(ch.isspace() for ch in t.form) for t in tokens)
    assert tokenizer.tokenize("") == [] and tokenizer.tokenize(" \n\n\t") == []


def test_eg_closes_the_duality_gap(pt_sentences):
    _, result = train_tokenizer(pt_sentences[:12], C=1.0, anneal=False, tol=1e-4, max_passes=300, example_chars=200)
    assert result.converged and result.final.rel_gap <= 1e-4
    gaps = [r.gap for r in result.records if r.gap is not None]
    assert gaps and all(g >= -1e-8 for g in gaps)
    assert gaps[-1] < gaps[0] / 100


def test_training_is_repeatable(pt_sentences):
    first = train_tokenizer(pt_sentences[:40], max_passes=3, seed=5)[0]
    second = train_tokenizer(pt_sentences[:40], max_passes=3, seed=5)[0]
    np.testing.assert_array_equal(first.weights, second.weights)


def _without_spaces(sentences) -> str:
    """CoNLL-U of ``sentences`` with every token followed by nothing and ``# text`` to match."""
    out = []
    for sentence in sentences:
        lines = []
        forms = [t.form for t in surface_tokens(sentence)]
        for line in sentence.lines():
            if line.startswith("# text"):
                line = "# text = " + "".join(forms)
            elif not line.startswith("#"):
                columns = line.split("\t")
                columns[9] = "SpaceAfter=No"
                line = "\t".join(columns)
            lines.append(line)
        out.append("\n".join(lines) + "\n")
    return "\n".join(out) + "\n"


def _class_runs(text: str) -> Segmentation:
    """A baseline: a token per run of letters and digits, and per other character; one sentence."""
    tokens = [m.span() for m in re.finditer(r"\w+|\S", text)]
    return Segmentation(tuple(tokens), ((tokens[0][0], tokens[-1][1]),))


def test_a_language_without_spaces(pt_sentences, tmp_path):
    train = tmp_path / "nospace-train.conllu"
    train.write_text(_without_spaces(pt_sentences[:500]), encoding="utf-8")
    tokenizer, _ = train_tokenizer(train, max_passes=20, anneal=False)
    held = corpus_paragraphs(parse_conll(_without_spaces(pt_sentences[900:1000])))
    text = "\n\n".join(p.text for p in held)
    assert not any(ch == " " for ch in text)
    gold = Segmentation.of_paragraphs(held)
    found = segmentation_f1(gold, tokenizer.segmentation(text))
    baseline = segmentation_f1(gold, _class_runs(text))
    chars = Segmentation(tuple((k, k + 1) for k in range(len(text)) if not text[k].isspace()), ())
    assert segmentation_f1(gold, chars)["tokens"] < 50 and baseline["tokens"] < 50
    # Measured: tokens 58.4 against 24.1, sentences 78.7 against 0 (character n-grams alone; no lexicon).
    assert found["tokens"] > baseline["tokens"] + 25
    assert found["sentences"] > baseline["sentences"] + 60


# -- bad input -------------------------------------------------------------------------------------------


def _file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "bad.conllu"
    path.write_text(text, encoding="utf-8")
    return path


def test_a_text_comment_that_the_tokens_do_not_give(tmp_path):
    path = _file(tmp_path, TINY.replace("# text = Sim.", "# text = Sim !"))
    with pytest.raises(CorpusError, match=rf"^{re.escape(str(path))}:14: .*'# text' has 'Sim !'"):
        train_tokenizer(path)


def test_a_bad_spaces_after(tmp_path):
    path = _file(tmp_path, TINY.replace("SpacesAfter=\\s\\s", "SpacesAfter=\\q"))
    with pytest.raises(CorpusError, match=rf"^{re.escape(str(path))}:8: unknown escape"):
        train_tokenizer(path)
    with pytest.raises(CorpusError, match="no such file"):
        train_tokenizer(tmp_path / "missing.conllu")
    with pytest.raises(InputError, match="no sentences"):
        train_tokenizer([])


def test_bad_text_and_bad_files(tiny_model, tmp_path):
    tokenizer, _ = tiny_model
    with pytest.raises(InputError, match="not bytes"):
        tokenizer.tokenize(b"Ola.")
    with pytest.raises(InputError, match="control character U\\+0007"):
        tokenizer.tokenize("Ola.\x07")
    other = tmp_path / "other.npz"
    write_npz_atomic(other, {"weights": np.zeros(3)}, {"kind": "egnlp-tagger", "format_version": 2})
    with pytest.raises(ModelError, match="expected a model of kind 'egnlp-tokenizer'"):
        Tokenizer.load(other)
    broken = tmp_path / "broken.npz"
    tokenizer.save(broken)
    from egnlp.base.files import read_npz
    arrays, meta = read_npz(broken, MODEL_KIND, FORMAT_VERSION)
    write_npz_atomic(broken, {**arrays, "weights": arrays["weights"][:-1]}, meta)
    with pytest.raises(ModelError, match="inconsistent model file"):
        Tokenizer.load(broken)
    write_npz_atomic(broken, arrays, {**meta, "fingerprint": "0" * 16})
    with pytest.raises(ModelError, match="other character features"):
        Tokenizer.load(broken)
