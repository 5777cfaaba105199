"""Tests of the POS-tagging and chunking data sets and of the 11th (chunk) CoNLL column.

The real corpora are read through NLTK's data path (set NLTK_DATA); the
expected counts are those of the project's data README.
"""

from __future__ import annotations

import random
import re
from pathlib import Path

import nltk
import pytest

from egnlp.corpora import (
    CorpusError,
    Sentence,
    dataset_root,
    dataset_task,
    format_conll,
    is_dataset,
    list_datasets,
    load_dataset,
    load_sentences,
    parse_conll,
    read_conll,
    write_conll,
)
from egnlp.corpora.datasets import TASKS
from egnlp.corpora.tagging import parse_brown, parse_conll2000, parse_treebank_tags, strip_brown_tag

SAMPLE_CONLLU = Path(__file__).parent / "data" / "sample.conllu"
SPLITS = ("train", "dev", "test")
TAGGING_SETS = ("brown", "conll2000-pos", "conll2000-chunk", "ptb-pos")
IOB = re.compile(r"^(O|[BI]-[A-Z]+)$")


@pytest.fixture(scope="module")
def installed() -> None:
    """Fail early, instead of letting the data sets try a download, when NLTK_DATA is not set."""
    for package in ("brown", "conll2000", "treebank", "dependency_treebank"):
        try:
            nltk.data.find(f"corpora/{package}/")
        except LookupError:
            pytest.fail(f"NLTK package 'corpora/{package}' not found; set NLTK_DATA to the project's NLTK data folder")


@pytest.fixture(scope="module")
def brown(installed: None) -> dict[str, object]:
    """The three Brown splits, loaded once."""
    return {split: load_dataset("brown", split) for split in SPLITS}


def counts(sentences: list[Sentence]) -> tuple[int, int]:
    """(sentences, tokens)."""
    return len(sentences), sum(len(sentence) for sentence in sentences)


def assert_tagging_shape(sentences: list[Sentence], width: int) -> None:
    """Every row is CoNLL-X with the tag in CPOSTAG and POSTAG and no tree."""
    for sentence in sentences:
        assert sentence.heads is None
        for index, row in enumerate(sentence.rows, start=1):
            assert len(row) == width
            assert row[0] == str(index) and row[1]
            assert row[2] == row[5] == row[6] == row[7] == row[8] == row[9] == "_"
            assert row[3] == row[4] != "_"


# --- brown ----------------------------------------------------------------------------------------


def test_brown_split_sizes(brown: dict[str, object]) -> None:
    train, dev, test = (brown[split] for split in SPLITS)
    assert counts(train) == (40956, 836224)
    assert counts(dev) == (4441, 93156)
    assert counts(train + dev) == (45397, 929380)
    assert counts(test) == (11943, 231812)


def test_brown_tags(brown: dict[str, object]) -> None:
    tags = {split: {tag for sentence in brown[split] for tag in sentence.pos} for split in SPLITS}
    assert len(tags["train"] | tags["dev"] | tags["test"]) == 190
    assert len(tags["train"] | tags["dev"]) == 188
    assert [len(tags[split]) for split in SPLITS] == [183, 121, 145]
    everything = tags["train"] | tags["dev"] | tags["test"]
    assert not [tag for tag in everything if tag.startswith("FW-") or re.search("-(TL|HL|NC|FW)", tag)]
    assert {"NN", "NP$", "PPSS+BER", "``", "IN+AT"} <= everything
    assert_tagging_shape(brown["dev"], 10)


def test_brown_documents_follow_the_seeded_shuffle(brown: dict[str, object]) -> None:
    ids = sorted(nltk.corpus.brown.fileids())
    random.Random(0).shuffle(ids)
    documents = {split: list(dict.fromkeys(s.source.removeprefix("brown/") for s in brown[split])) for split in SPLITS}
    assert documents == {"train": ids[:360], "dev": ids[360:400], "test": ids[400:]}


def test_brown_forms_are_nltks(brown: dict[str, object]) -> None:
    first = brown["test"][0]
    document = first.source.removeprefix("brown/")
    expected = nltk.corpus.brown.tagged_sents(document)[0]
    assert first.forms == [word for word, _ in expected]
    assert first.pos == [strip_brown_tag(tag) for _, tag in expected]
    assert first.line > 0


def test_strip_brown_tag() -> None:
    assert [strip_brown_tag(tag) for tag in ("NN-TL", "FW-IN+AT", "NN-TL-HL", "NP$", "VB-NC", "FW-NN-TL")] == [
        "NN",
        "IN+AT",
        "NN",
        "NP$",
        "VB",
        "NN",
    ]


# --- conll2000 ------------------------------------------------------------------------------------


def test_conll2000_split_sizes_and_tags(installed: None) -> None:
    train, dev, test = (load_dataset("conll2000-chunk", split) for split in SPLITS)
    assert counts(train + dev) == (8936, 211727)
    assert len(dev) == 894 and counts(train) == (8042, 190717)
    assert counts(test) == (2012, 47377)
    assert dev[0].line > train[-1].line and dev[0].source == train[-1].source == "conll2000/train.txt"
    assert len({tag for sentence in train + dev + test for tag in sentence.pos}) == 44
    chunks = {chunk for sentence in train + dev + test for chunk in sentence.chunks}
    assert len(chunks) == 23 and all(IOB.match(chunk) for chunk in chunks)
    assert_tagging_shape(test, 11)


def test_conll2000_pos_and_chunk_share_sentences(installed: None) -> None:
    for split in SPLITS:
        pos, chunk = load_dataset("conll2000-pos", split), load_dataset("conll2000-chunk", split)
        assert [s.rows for s in pos] == [s.rows for s in chunk]
    first = load_dataset("conll2000-pos", "train")[0]
    expected = nltk.corpus.conll2000.iob_sents("train.txt")[0]
    assert list(zip(first.forms, first.pos, first.chunks)) == [tuple(triple) for triple in expected]


# --- ptb-pos --------------------------------------------------------------------------------------


def test_ptb_pos_matches_wsj_token_by_token(installed: None) -> None:
    for split, expected in {"train": (3396, 81793), "dev": (273, 6327), "test": (245, 5964)}.items():
        tagged, parsed = load_dataset("ptb-pos", split), load_dataset("wsj", split)
        assert counts(tagged) == expected
        assert not [tag for sentence in tagged for tag in sentence.pos if tag == "-NONE-"]
        assert [s.forms for s in tagged] == [s.forms for s in parsed], split
        assert [s.pos for s in tagged] == [s.pos for s in parsed], split
        assert_tagging_shape(tagged, 10)
    assert load_dataset("ptb-pos", "train")[0].source == "treebank/combined/wsj_0001.mrg"


# --- registry -------------------------------------------------------------------------------------


def test_registry(installed: None) -> None:
    infos = {info.name: info for info in list_datasets()}
    assert list(infos) == ["es", "eu", "wsj", "pt-bosque", "nl-alpino", *TAGGING_SETS]
    assert {name: info.task for name, info in infos.items()} == {
        "es": "parse",
        "eu": "parse",
        "wsj": "parse",
        "pt-bosque": "parse",
        "nl-alpino": "parse",
        "brown": "pos",
        "conll2000-pos": "pos",
        "conll2000-chunk": "chunk",
        "ptb-pos": "pos",
    }
    assert {info.task for info in infos.values()} == set(TASKS)
    assert all(infos[name].root == "-" and infos[name].found for name in TAGGING_SETS)
    assert infos["ptb-pos"].source == "corpora/treebank"
    assert all(is_dataset(name) and dataset_task(name) == infos[name].task for name in infos)
    with pytest.raises(CorpusError, match=r"^data set 'brown' has no dependency trees \(its task is 'pos'\)$"):
        dataset_root("brown")
    assert dataset_root("wsj") == "single"


@pytest.mark.parametrize("call", [lambda: load_dataset("brwn", "train"), lambda: load_sentences("brwn", "dev")])
def test_unknown_name_is_one_line(call) -> None:
    with pytest.raises(CorpusError) as caught:
        call()
    message = str(caught.value)
    assert "\n" not in message
    assert re.match(r"^unknown data set (or file )?'brwn'; data sets: es, eu, wsj, pt-bosque, nl-alpino, brown, conll2000-pos, "
                    r"conll2000-chunk, ptb-pos$", message)


# --- export and the chunk column --------------------------------------------------------------------


@pytest.mark.parametrize("name", TAGGING_SETS)
def test_export_reads_back_without_heads(installed: None, tmp_path: Path, name: str) -> None:
    """What `egnlp data export NAME dev -o FILE` does: load_sentences, then write_conll."""
    sentences = load_sentences(name, "dev")
    path = tmp_path / f"{name}.conll"
    write_conll(path, sentences)
    back = read_conll(path, require_heads=False)
    assert [s.rows for s in back] == [s.rows for s in sentences]
    with pytest.raises(CorpusError, match=r":1: HEAD is '_' on every token, but gold heads are needed$"):
        read_conll(path)


def test_chunk_file_round_trip(installed: None, tmp_path: Path) -> None:
    sentences = load_sentences("conll2000-chunk", "test")
    path = tmp_path / "chunk.conll"
    write_conll(path, sentences)
    text = path.read_text(encoding="utf-8")
    assert {len(line.split("\t")) for line in text.split("\n") if line} == {11}
    assert text.split("\n")[0] == "1\tRockwell\t_\tNNP\tNNP\t_\t_\t_\t_\t_\tB-NP"
    back = read_conll(path, require_heads=False)
    assert [s.rows for s in back] == [s.rows for s in sentences]
    assert [s.chunks for s in back] == [s.chunks for s in sentences]
    assert format_conll(back) == text
    copy = tmp_path / "copy.conll"
    write_conll(copy, back)
    assert copy.read_bytes() == path.read_bytes()


def chunk_line(token_id: int, form: str, chunk: str | None) -> str:
    """A tagging line without heads, with an 11th column when ``chunk`` is given."""
    columns = [str(token_id), form, "_", "NN", "NN", "_", "_", "_", "_", "_"]
    return "\t".join(columns + ([chunk] if chunk is not None else []))


MIXED = {
    # sentence 1 has 11 columns, sentence 2 (line 4) only 10
    "across sentences": ([chunk_line(1, "A", "B-NP"), chunk_line(2, "B", "I-NP"), "", chunk_line(1, "C", None)], 4),
    # inside one sentence: line 3 has 11 columns after two 10-column lines
    "inside a sentence": ([chunk_line(1, "A", None), chunk_line(2, "B", None), chunk_line(3, "C", "O")], 3),
}


@pytest.mark.parametrize("case", MIXED)
def test_mixed_10_and_11_columns_name_the_line(tmp_path: Path, case: str) -> None:
    lines, bad = MIXED[case]
    path = tmp_path / "mixed.conll"
    path.write_text("\n".join(lines) + "\n\n", encoding="utf-8")
    with pytest.raises(CorpusError) as caught:
        read_conll(path, require_heads=False)
    message = str(caught.value)
    assert message.startswith(f"{path}:{bad}: found ")
    assert "but line 1 has" in message and "\n" not in message


def test_eleven_columns_fix_the_expected_width(tmp_path: Path) -> None:
    path = tmp_path / "short.conll"
    path.write_text(chunk_line(1, "A", "O") + "\n1\tB\t_\n\n", encoding="utf-8")
    with pytest.raises(CorpusError, match=rf"^{re.escape(str(path))}:2: expected 11 tab-separated columns, found 3$"):
        read_conll(path, require_heads=False)


def test_chunks_property_and_ten_column_files() -> None:
    sentence = parse_conll("\n".join(chunk_line(i, f, c) for i, f, c in [(1, "A", "B-NP"), (2, "B", "I-NP")]) + "\n",
                           require_heads=False)[0]
    assert sentence.chunks == ["B-NP", "I-NP"] and sentence.pos == ["NN", "NN"]
    conllu = read_conll(SAMPLE_CONLLU)
    assert all(s.chunks is None for s in conllu)


# --- with_tags ----------------------------------------------------------------------------------------


def test_with_tags_sets_cpos_only_when_it_copied_pos() -> None:
    tagged = parse_conll(chunk_line(1, "A", None) + "\n" + chunk_line(2, "B", None) + "\n", require_heads=False)[0]
    new = tagged.with_tags(pos=["DT", "NN"])
    assert new.pos == new.cpos == ["DT", "NN"]
    assert tagged.pos == ["NN", "NN"]  # the original is untouched

    conllu = read_conll(SAMPLE_CONLLU)[0]  # UPOS differs from XPOS
    retagged = conllu.with_tags(pos=["X"] * len(conllu))
    assert retagged.pos == ["X"] * len(conllu) and retagged.cpos == conllu.cpos
    assert retagged.heads == conllu.heads and retagged.aside == conllu.aside


def test_with_tags_adds_and_replaces_the_chunk_column(tmp_path: Path) -> None:
    sentences = read_conll(SAMPLE_CONLLU)
    chunked = [s.with_tags(chunks=["O"] * len(s)) for s in sentences]
    assert all(s.chunks == ["O"] * len(s) for s in chunked)
    path = tmp_path / "chunked.conllu"
    write_conll(path, chunked)
    back = read_conll(path)
    assert [s.lines() for s in back] == [s.lines() for s in chunked]
    assert back[0].aside[3] == (0, "1-2\tVámonos\t_\t_\t_\t_\t_\t_\t_\t_\t_")
    assert back[0].aside[0] == chunked[0].aside[0] == sentences[0].aside[0]  # comments unchanged
    replaced = back[0].with_tags(chunks=["B-VP"] + ["O"] * (len(back[0]) - 1))
    assert replaced.chunks[0] == "B-VP" and all(len(row) == 11 for row in replaced.rows)
    assert [row[:10] for row in replaced.rows] == list(sentences[0].rows)


def test_with_tags_rejects_bad_input() -> None:
    sentence = parse_conll(chunk_line(1, "A", None) + "\n", require_heads=False)[0]
    with pytest.raises(ValueError, match="expected 1 POS tags, got 2"):
        sentence.with_tags(pos=["NN", "NN"])
    with pytest.raises(ValueError, match="chunk tag 'B NP' of token 1"):
        sentence.with_tags(chunks=["B NP"])


# --- readers ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("parse", "text", "message"),
    [
        (parse_brown, "\tThe/at dog/nn\n\n\tbarks\n", "x:3: token 'barks' is not word/tag"),
        (parse_conll2000, "A DT B-NP\nb NN\n", "x:2: expected 3 space-separated columns (word, POS, chunk), found 2"),
        (parse_treebank_tags, "( (S (-NONE- *) ))\n", "x:1: tree has no words besides traces"),
        (parse_treebank_tags, "( (S (NN a) )\n", "x:1: tree is not closed"),
        (parse_brown, "\n\n", "x: no sentences found"),
    ],
)
def test_malformed_tagging_files(parse, text: str, message: str) -> None:
    with pytest.raises(CorpusError) as caught:
        parse(text, "x")
    assert str(caught.value) == message


def test_treebank_reader_drops_traces() -> None:
    text = "( (S (NP-SBJ (-NONE- *-1) ) (VP (VBZ is) (ADJP (JJ ok) )) (. .) ))\n( (NP (NN b) ))\n(UH c)\n"
    first, second, third = parse_treebank_tags(text, "x.mrg")
    assert first.forms == ["is", "ok", "."] and first.pos == ["VBZ", "JJ", "."]
    assert (second.forms, second.line) == (["b"], 2)
    assert (third.forms, third.pos, third.line) == (["c"], ["UH"], 3)
