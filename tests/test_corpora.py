"""Tests of the corpora package: CoNLL and Malt-TAB readers, writers and data sets.

The real treebanks are read through NLTK's data path (set NLTK_DATA).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import nltk
import pytest
from hypothesis import given
from hypothesis import strategies as st

from egnlp.corpora import (
    CorpusError,
    DataNotFoundError,
    Sentence,
    dataset_root,
    format_conll,
    format_parsed,
    guess_root,
    is_projective,
    list_datasets,
    load_dataset,
    load_sentences,
    parse_conll,
    parse_malt_tab,
    read_conll,
    write_conll,
)

from text_blocks import blocks

SAMPLE_CONLLU = Path(__file__).parent / "data" / "sample.conllu"


def nltk_bytes(resource: str) -> bytes:
    """Raw bytes of a file in NLTK's data path; fail (never download) when it is missing."""
    try:
        pointer = nltk.data.find(resource)
    except LookupError:
        pytest.fail(f"NLTK resource '{resource}' not found; set NLTK_DATA to the project's NLTK data folder")
    with pointer.open() as handle:
        return handle.read()


@pytest.fixture
def installed_corpora() -> None:
    """Fail early, instead of letting the data sets try a download, when NLTK_DATA is not set."""
    for package in ("corpora/conll2007/", "corpora/dependency_treebank/"):
        try:
            nltk.data.find(package)
        except LookupError:
            pytest.fail(f"NLTK package '{package}' not found; set NLTK_DATA to the project's NLTK data folder")


def conll_line(
    token_id: object, form: str, head: object, deprel: str = "dep", col9: str = "_", col10: str = "_"
) -> str:
    """One CoNLL-X line with the given ID, FORM, HEAD, DEPREL and columns 9-10."""
    return "\t".join([str(token_id), form, form.lower(), "N", "NN", "_", str(head), deprel, col9, col10])


def conll_text(*sentences: list[str]) -> str:
    """CoNLL text from sentences given as lists of lines."""
    return "".join("\n".join(lines) + "\n\n" for lines in sentences)


# --- round trips -------------------------------------------------------------------------------


def test_spanish_conllx_round_trip(tmp_path: Path) -> None:
    text = nltk_bytes("corpora/conll2007/esp.train").decode("utf-8")
    head = blocks(text, 0, 200)
    source = tmp_path / "esp200.conll"
    source.write_bytes(head.encode("utf-8"))

    sentences = read_conll(source)
    assert len(sentences) == 200
    assert format_conll(sentences) == head
    copy = tmp_path / "copy.conll"
    write_conll(copy, sentences)
    assert copy.read_bytes() == source.read_bytes()
    again = read_conll(copy)
    assert [s.rows for s in again] == [s.rows for s in sentences]
    assert [s.heads for s in again] == [s.heads for s in sentences]
    assert sentences[0].forms[:3] == ["El", "aumento", "del"]
    assert sentences[0].heads[:8] == [2, 8, 2, 3, 4, 5, 6, 0]
    assert sentences[0].deprels[:2] == ["_", "SUJ"]
    assert sentences[1].line == head.split("\n").index("") + 2
    assert not list(tmp_path.glob(".*.tmp"))


def test_basque_latin1_round_trip(tmp_path: Path) -> None:
    raw = nltk_bytes("corpora/conll2007/eus.train")
    source = tmp_path / "eus.train"
    source.write_bytes(raw)

    sentences = read_conll(source, encoding="latin-1")
    assert len(sentences) == 2595
    assert format_conll(sentences) == raw.decode("latin-1")
    copy = tmp_path / "copy.conll"
    write_conll(copy, sentences, encoding="latin-1")
    assert copy.read_bytes() == raw
    assert [s.rows for s in read_conll(copy, encoding="latin-1")] == [s.rows for s in sentences]


def test_basque_as_utf8_names_the_line_and_the_option(tmp_path: Path) -> None:
    raw = nltk_bytes("corpora/conll2007/eus.train")
    bad = next(i for i, line in enumerate(raw.split(b"\n"), start=1) if any(byte >= 0x80 for byte in line))
    source = tmp_path / "eus.train"
    source.write_bytes(raw)
    with pytest.raises(CorpusError, match=rf"^{re.escape(str(source))}:{bad}: not valid utf-8 .*--encoding"):
        read_conll(source)


def test_conllu_fixture_round_trip(tmp_path: Path) -> None:
    text = SAMPLE_CONLLU.read_text(encoding="utf-8")
    sentences = read_conll(SAMPLE_CONLLU)

    assert [len(s) for s in sentences] == [6, 10, 3]
    assert sentences[0].forms == ["Vamos", "nos", "a", "el", "mar", "."]
    assert sentences[0].heads == [0, 1, 5, 5, 1, 1]
    assert sentences[0].cpos[:2] == ["VERB", "PRON"]
    assert sentences[0].pos[:2] == ["vmip1p0", "pp1cp000"]
    assert sentences[0].lemmas[:2] == ["ir", "nosotros"]
    assert sentences[0].feats[2] == "_"
    assert [position for position, _ in sentences[0].aside] == [0, 0, 0, 0, 2]
    assert sentences[1].aside[-1] == (8, "8.1\tbought\tbuy\tVERB\tVBD\t_\t_\t_\t2:conj:and\tCopyOf=2")
    assert sentences[1].forms[7:9] == ["Mary", "pears"]
    assert [s.line for s in sentences] == [1, 13, 27]
    assert sentences[2].source == str(SAMPLE_CONLLU)

    assert format_conll(sentences) == text
    copy = tmp_path / "copy.conllu"
    write_conll(copy, sentences)
    assert copy.read_bytes() == SAMPLE_CONLLU.read_bytes()
    assert [s.lines() for s in read_conll(copy)] == [s.lines() for s in sentences]


def test_missing_final_blank_line_is_added(installed_corpora: None) -> None:
    raw = nltk_bytes("corpora/conll2007/esp.test").decode("utf-8")
    assert not raw.endswith("\n\n")
    test = load_dataset("es", "test")
    assert format_conll(test) == raw + "\n"


# --- with_heads ---------------------------------------------------------------------------------


def test_with_heads_clears_conllx_gold_columns() -> None:
    text = conll_text(
        [
            conll_line(1, "Dogs", 2, "SUJ", "2", "SUJ"),
            conll_line(2, "bark", 0, "ROOT", "0", "ROOT"),
        ]
    )
    gold = parse_conll(text)[0]
    pred = gold.with_heads([0, 1])
    assert pred.heads == [0, 1]
    assert pred.deprels == ["_", "_"]
    assert [row[6:] for row in pred.rows] == [("0", "_", "_", "_"), ("1", "_", "_", "_")]
    assert pred.rows[0][:6] == gold.rows[0][:6]
    assert gold.heads == [2, 0] and gold.rows[0][8:] == ("2", "SUJ")

    labelled = gold.with_heads([2, 0], ["nsubj", "root"])
    assert labelled.deprels == ["nsubj", "root"]
    assert format_conll([labelled]).split("\n")[0].split("\t")[6:] == ["2", "nsubj", "_", "_"]


def test_with_heads_clears_conllu_deps_keeps_misc_and_drops_empty_nodes() -> None:
    gold = read_conll(SAMPLE_CONLLU)[1]
    pred = gold.with_heads([2, 0, 2, 6, 6, 2, 8, 2, 8, 2], ["nsubj"] * 10)
    assert all(row[8] == "_" for row in pred.rows)
    assert [row[9] for row in pred.rows] == [row[9] for row in gold.rows]
    assert pred.rows[8][9] == "SpaceAfter=No"
    assert pred.aside[:2] == gold.aside[:2]
    assert [text for _, text in gold.aside if text.startswith("8.1\t")]  # the gold sentence has an empty node
    assert pred.aside == tuple(item for item in gold.aside if not item[1].startswith("8.1\t"))  # dropped
    assert "2:conj:and" not in format_conll([pred]) and "\n8.1\t" not in format_conll([pred])
    first = read_conll(SAMPLE_CONLLU)[0].with_heads([0, 1, 5, 5, 1, 1])
    assert first.aside[3] == (0, "1-2\tVámonos\t_\t_\t_\t_\t_\t_\t_\t_")


def test_with_heads_rejects_wrong_length() -> None:
    sentence = parse_conll(conll_text([conll_line(1, "Hi", 0)]))[0]
    with pytest.raises(ValueError, match="expected 1 heads"):
        sentence.with_heads([0, 1])


def _random_trees(sentences: list[Sentence], seed: int) -> tuple[list[list[int]], list[list[str]]]:
    """Heads in 0..n (not trees: with_heads does not ask for one) and labels, a seeded draw for each word."""
    import random

    draw = random.Random(seed)
    heads = [[draw.randint(0, len(s)) for _ in range(len(s))] for s in sentences]
    labels = [[draw.choice(["nsubj", "obj", "root", "nmod:poss"]) for _ in range(len(s))] for s in sentences]
    return heads, labels


def _parsed_by_hand(text: str, heads: list[list[int]], labels: list[list[str]] | None) -> str:
    """What a parser writes of CoNLL ``text``, line by line from the text itself: word lines get their
    HEAD and DEPREL (``_`` without labels), column 9 cleared, column 10 too where column 9 is a number;
    empty nodes (``8.1``) dropped; comments and multiword tokens kept."""
    out = []
    for k, block in enumerate(b for b in text.replace("\r\n", "\n").split("\n\n") if b.strip()):
        word = 0
        for line in block.strip("\n").split("\n"):
            columns = line.split("\t")
            if line.startswith("#") or "-" in columns[0]:
                out.append(line)
            elif "." not in columns[0]:
                columns[6] = str(heads[k][word])
                columns[7] = labels[k][word] if labels else "_"
                if columns[8].isdigit():
                    columns[9] = "_"
                columns[8] = "_"
                out.append("\t".join(columns))
                word += 1
        out.append("")
    return "\n".join(out) + "\n"


def test_format_parsed_writes_the_input_lines_with_the_parse() -> None:
    """On real files (UD Dutch with empty nodes, CoNLL-X Spanish and Basque), the fixture (multiword
    tokens), CoNLL-X PHEAD/PDEPREL and a chunk column, with labels and without: the input's lines with
    the new syntax, as :func:`_parsed_by_hand` writes them, and what ``with_heads``'s copies write."""
    texts = [(Path(os.environ["EGNLP_UD_DIR"]) / "nl_alpino-ud-dev.conllu").read_text(encoding="utf-8"),
             SAMPLE_CONLLU.read_text(encoding="utf-8"),
             blocks(nltk_bytes("corpora/conll2007/esp.test").decode("utf-8"), 0, 300),
             blocks(nltk_bytes("corpora/conll2007/eus.test").decode("latin-1"), 0, 300),
             conll_text([conll_line(1, "Dogs", 2, "SUJ", "2", "SUJ"), conll_line(2, "bark", 0)]),
             "1\tHe\the\tP\tPRP\t_\t2\tnsubj\t_\t_\tB-NP\n2\truns\trun\tV\tVBZ\t_\t0\troot\t_\t_\tB-VP\n\n"]
    assert re.search(r"^\d+\.\d+\t", texts[0], re.M) and re.search(r"^\d+-\d+\t", texts[1], re.M)
    for seed, text in enumerate(texts):
        sentences = parse_conll(text)
        heads, labels = _random_trees(sentences, seed)
        for deprels in (labels, None):
            written = format_parsed(sentences, heads, deprels)
            assert written == _parsed_by_hand(text, heads, deprels)
            assert written == format_conll([s.with_heads(h, deprels[k] if deprels else None)
                                            for k, (s, h) in enumerate(zip(sentences, heads))])


def test_parsed_lines_check_heads_as_with_heads() -> None:
    sentence = parse_conll(conll_text([conll_line(1, "A", 2), conll_line(2, "B", 0)]))[0]
    for bad, message in (([0], "expected 2 heads"), ([0, 3], "head 3 of token 2 is outside 0..2"),
                         ([-1, 0], "head -1 of token 1 is outside 0..2")):
        for method in (sentence.with_heads, sentence.parsed_lines):
            with pytest.raises(ValueError, match=message):
                method(bad)
    with pytest.raises(ValueError, match="expected 2 deprels"):
        sentence.parsed_lines([2, 0], ["dep"])
    assert sentence.parsed_lines([2, 0]) == sentence.with_heads([2, 0]).lines()


# --- validation ---------------------------------------------------------------------------------

GOOD = [conll_line(1, "A", 2), conll_line(2, "B", 0), conll_line(3, "C", 2)]

MALFORMED = {
    "columns": (
        [GOOD, [conll_line(1, "A", 0), "2\tB\tb\tN\tNN\t_\t1"]],
        6,
        "expected 10 tab-separated columns, found 7",
    ),
    "non-integer id": ([[conll_line(1, "A", 0), conll_line("x", "B", 1)]], 2, "ID 'x' is not an integer"),
    "id order": ([[conll_line(1, "A", 0), conll_line(3, "B", 1)]], 2, "expected ID 2, found 3"),
    "id from zero": ([[conll_line(0, "A", 0)]], 1, "expected ID 1, found 0"),
    "id with a leading zero": ([[conll_line(1, "A", 0), conll_line("02", "B", 1)]], 2, "ID '02' is not an integer"),
    "head with a leading zero": ([[conll_line(1, "A", 0), conll_line(2, "B", "01")]], 2, "HEAD '01' is not an integer"),
    "id past the longest sentence": ([[conll_line(1, "A", 0), conll_line(501, "B", 1)]], 2, "expected ID 2, found 501"),
    "non-integer head": ([GOOD, [conll_line(1, "A", 0), conll_line(2, "B", "one")]], 6, "HEAD 'one' is not an integer"),
    "head too large": ([[conll_line(1, "A", 0), conll_line(2, "B", 3)]], 2, "HEAD 3 is outside 0..2"),
    "negative head": ([[conll_line(1, "A", 0), conll_line(2, "B", -1)]], 2, "HEAD -1 is outside 0..2"),
    "self head": ([[conll_line(1, "A", 0), conll_line(2, "B", 2)]], 2, "token 2 is its own head"),
    "no root": ([GOOD, ["# c", conll_line(1, "A", 2), conll_line(2, "B", 1)]], 6, "no token is attached to the root"),
    "cycle": (
        [[conll_line(1, "A", 0), conll_line(2, "B", 3), conll_line(3, "C", 2)]],
        2,
        "cycle among tokens 2 'B' -> 3 'C' -> 2 'B'",
    ),
    "mixed heads": ([[conll_line(1, "A", 0), conll_line(2, "B", "_")]], 2, "HEAD is '_' while other tokens"),
    "no heads": ([GOOD, [conll_line(1, "A", "_"), conll_line(2, "B", "_")]], 5, "HEAD is '_' on every token"),
    "late comment": ([[conll_line(1, "A", 0), "# late"]], 2, "comment inside a sentence"),
    "range position": ([[conll_line(1, "A", 0), "3-4" + "\t_" * 9]], 2, "multiword token 3-4 must come just before"),
    "empty node position": ([["2.1" + "\t_" * 9, conll_line(1, "A", 0)]], 1, "empty node 2.1 must come just after"),
    "only comments": ([GOOD, ["# a", "# b"]], 5, "sentence has no word tokens"),
}


@pytest.mark.parametrize("case", MALFORMED.keys())
def test_malformed_input_names_file_and_line(tmp_path: Path, case: str) -> None:
    sentences, line, message = MALFORMED[case]
    path = tmp_path / "bad.conll"
    path.write_text(conll_text(*sentences), encoding="utf-8")
    with pytest.raises(CorpusError) as caught:
        read_conll(path)
    assert str(caught.value).startswith(f"{path}:{line}: {message}")
    assert "\n" not in str(caught.value)


def test_heads_optional_for_parser_input(tmp_path: Path) -> None:
    path = tmp_path / "raw.conll"
    path.write_text(conll_text([conll_line(1, "A", "_", "_"), conll_line(2, "B", "_", "_")]), encoding="utf-8")
    sentence = read_conll(path, require_heads=False)[0]
    assert sentence.heads is None and sentence.deprels is None
    assert sentence.with_heads([2, 0]).heads == [2, 0]


def test_undecodable_bytes_name_line_encoding_and_option(tmp_path: Path) -> None:
    path = tmp_path / "x.conll"
    lines = [conll_line(1, "A", 0), conll_line(2, "B", 1), conll_line(3, "caf\u00e9", 1)]
    path.write_bytes(conll_text(lines).encode("latin-1"))
    with pytest.raises(CorpusError) as caught:
        read_conll(path)
    assert str(caught.value) == (
        f"{path}:3: not valid utf-8 (byte 0xe9); pass --encoding latin-1 if the file uses another encoding"
    )
    assert read_conll(path, encoding="latin-1")[0].forms[2] == "caf\u00e9"


def test_a_model_file_or_a_gzip_file_given_for_a_corpus_says_what_it_is(tmp_path: Path) -> None:
    import gzip

    import numpy as np

    model = tmp_path / "model.npz"
    np.savez(model, w=np.arange(300.0))
    with pytest.raises(CorpusError) as caught:
        read_conll(model)
    assert str(caught.value) == f"{model}: a zip archive (such as an egnlp model file), not a corpus file"
    packed = tmp_path / "x.conll.gz"
    packed.write_bytes(gzip.compress(conll_text([conll_line(1, "A", 0)]).encode("utf-8")))
    with pytest.raises(CorpusError) as caught:
        read_conll(packed)
    assert str(caught.value) == f"{packed}: gzip-compressed; decompress it first (gunzip)"


def test_utf16_and_binary_files_say_what_they_are(tmp_path: Path) -> None:
    """A UTF-16 file (as Windows editors save "Unicode") names the --encoding that reads it; bytes with NULs
    that are not UTF-16 text (an executable) are called binary, not text in another 8-bit encoding."""
    text = conll_text([conll_line(1, "caf\u00e9", 0), conll_line(2, "X", 1)])
    wide = tmp_path / "wide.conll"
    wide.write_text(text, encoding="utf-16")
    with pytest.raises(CorpusError) as caught:
        read_conll(wide)
    assert str(caught.value) == \
        f"{wide}: UTF-16 text (it starts with a UTF-16 byte order mark); pass --encoding utf-16"
    assert read_conll(wide, encoding="utf-16")[0].forms == ["caf\u00e9", "X"]
    no_bom = tmp_path / "no_bom.conll"
    no_bom.write_bytes(text.encode("utf-16-le"))
    with pytest.raises(CorpusError, match=r"no_bom.conll:1: a NUL byte: a binary file, not a corpus file, or UTF-16 "
                                          r"text without a byte order mark \(pass --encoding utf-16-le or utf-16-be\)$"):
        read_conll(no_bom)
    assert read_conll(no_bom, encoding="utf-16-le")[0].forms == ["caf\u00e9", "X"]
    binary = tmp_path / "binary.conll"
    binary.write_bytes(b"\x7fELF\x02\x01\x01" + bytes(9) + b"\n\xd0\xff")
    with pytest.raises(CorpusError, match=r"binary.conll:1: a NUL byte: a binary file, not a corpus file"):
        read_conll(binary)


@pytest.mark.parametrize("content", ["", "\n\n  \n"])
def test_file_without_sentences(tmp_path: Path, content: str) -> None:
    path = tmp_path / "x.conll"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(CorpusError, match=rf"^{re.escape(str(path))}: no sentences found$"):
        read_conll(path)


def test_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "x.conll"
    with pytest.raises(CorpusError, match=rf"^{re.escape(str(path))}: no such file$"):
        read_conll(path)


def test_string_source_in_messages() -> None:
    with pytest.raises(CorpusError, match=r"^<string>:1: expected 10"):
        parse_conll("1\tA\n")


def test_write_failure_is_a_corpus_error(tmp_path: Path) -> None:
    sentences = parse_conll(conll_text(GOOD))
    write_conll(tmp_path / "missing" / "x.conll", sentences)  # missing folders are created
    assert read_conll(tmp_path / "missing" / "x.conll")[0].forms == sentences[0].forms
    (tmp_path / "a-file").write_text("", encoding="utf-8")
    with pytest.raises(CorpusError, match=rf"^{re.escape(str(tmp_path / 'a-file'))}/x.conll: cannot write "
                                          rf"\({re.escape(str(tmp_path / 'a-file'))} is not a folder\)$"):
        write_conll(tmp_path / "a-file" / "x.conll", sentences)


# --- Malt-TAB -----------------------------------------------------------------------------------


def test_malt_tab_becomes_conllx() -> None:
    text = "Dogs\tNNS\t2\nbark\tVBP\t0\n.\t.\t2\n\nHi\tUH\t0\n"
    first, second = parse_malt_tab(text, "x.dp")
    assert first.forms == ["Dogs", "bark", "."]
    assert first.pos == first.cpos == ["NNS", "VBP", "."]
    assert first.lemmas == first.feats == ["_", "_", "_"]
    assert first.heads == [2, 0, 2] and first.deprels == ["_", "_", "_"]
    assert (first.source, first.line, second.line) == ("x.dp", 1, 5)
    assert format_conll([first]).split("\n")[0] == "1\tDogs\t_\tNNS\tNNS\t_\t2\t_\t_\t_"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("Dogs\tNNS\t2\nbark\tVBP\n", "x.dp:2: expected 3 tab-separated columns (word, tag, head), found 2"),
        ("Dogs\tNNS\t2\nbark\tVBP\t1\n", "x.dp:1: no token is attached to the root (HEAD 0)"),
        ("Hi\tUH\t0\n\nDogs\tNNS\t5\nbark\tVBP\t0\n", "x.dp:3: HEAD 5 is outside 0..2"),
        ("\n", "x.dp: no sentences found"),
    ],
)
def test_malformed_malt_tab(text: str, message: str) -> None:
    with pytest.raises(CorpusError) as caught:
        parse_malt_tab(text, "x.dp")
    assert str(caught.value) == message


# --- data sets ----------------------------------------------------------------------------------

COUNTS = {
    "es": {"train": (2654, 68899), "dev": (295, 6923), "test": (563, 19206)},
    "eu": {"train": (2335, 36775), "dev": (260, 3257), "test": (580, 10096)},
    "wsj": {"train": (3396, 81793), "dev": (273, 6327), "test": (245, 5964)},
}


@pytest.mark.parametrize("name", COUNTS)
def test_dataset_counts(installed_corpora: None, name: str) -> None:
    for split, (sentences, tokens) in COUNTS[name].items():
        loaded = load_dataset(name, split)
        assert (len(loaded), sum(len(s) for s in loaded)) == (sentences, tokens), split
        assert guess_root(loaded) == dataset_root(name)


def test_wsj_files_0001_to_0179_hold_3669_sentences(installed_corpora: None) -> None:
    assert len(load_dataset("wsj", "train")) + len(load_dataset("wsj", "dev")) == 3669
    train = load_dataset("wsj", "train")
    assert train[0].forms[:2] == ["Pierre", "Vinken"]
    assert (train[0].source, train[0].line) == ("dependency_treebank/wsj_0001.dp", 1)


def test_dev_is_the_end_of_the_training_file(installed_corpora: None) -> None:
    train, dev = load_dataset("es", "train"), load_dataset("es", "dev")
    assert dev[0].line > train[-1].line
    assert dev[-1].forms[-1] == "."


def test_list_datasets(installed_corpora: None) -> None:
    infos = {info.name: info for info in list_datasets() if info.task == "parse"}
    assert list(infos) == ["es", "eu", "wsj", "pt-bosque", "nl-alpino"]
    assert infos["eu"].source == "corpora/conll2007"
    assert infos["wsj"].source == "corpora/dependency_treebank"
    assert infos["pt-bosque"].source == "$EGNLP_UD_DIR/pt_bosque-ud-*.conllu"
    assert all(info.found and info.splits == ("train", "dev", "test") for info in infos.values())
    assert [infos[name].root for name in infos] == ["single", "multi", "single", "single", "single"]


def test_ud_sets_train_on_the_test_file_and_score_on_the_dev_file() -> None:
    folder = Path(os.environ["EGNLP_UD_DIR"])
    whole = read_conll(folder / "pt_bosque-ud-test.conllu")
    train, dev, test = (load_dataset("pt-bosque", split) for split in ("train", "dev", "test"))
    assert (len(train), len(dev)) == (1050, 117) and train + dev == whole
    assert test == read_conll(folder / "pt_bosque-ud-dev.conllu") and len(test) == 1172
    assert [len(load_dataset("nl-alpino", split)) for split in ("train", "dev", "test")] == [536, 60, 718]


def test_load_sentences_names_and_files(installed_corpora: None) -> None:
    assert len(load_sentences("es", "dev")) == 295
    assert len(load_sentences(str(SAMPLE_CONLLU))) == 3
    with pytest.raises(CorpusError, match=r"^unknown data set or file 'xx'; data sets: es, eu, wsj, pt-bosque, .*-pos$"):
        load_sentences("xx")
    with pytest.raises(CorpusError, match="needs a split"):
        load_sentences("es")
    with pytest.raises(CorpusError, match="applies only to data set names"):
        load_sentences(str(SAMPLE_CONLLU), "test")
    with pytest.raises(CorpusError, match="has no split 'valid'"):
        load_dataset("es", "valid")
    with pytest.raises(CorpusError, match=r"^unknown data set 'xx'; data sets: es, eu, wsj, pt-bosque, nl-alpino, brown, .*-pos$"):
        dataset_root("xx")


def test_missing_package_raises_data_not_found(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    attempts = []

    def failing_download(package: str, **kwargs: object) -> bool:
        attempts.append(package)
        raise OSError("no network")

    monkeypatch.setattr(nltk.data, "path", [str(tmp_path)])
    monkeypatch.setattr(nltk, "download", failing_download)
    monkeypatch.setenv("EGNLP_UD_DIR", str(tmp_path))
    with pytest.raises(DataNotFoundError) as caught:
        load_dataset("es", "train")
    message = str(caught.value)
    assert "'corpora/conll2007'" in message and "nltk.download('conll2007')" in message and "NLTK_DATA" in message
    assert attempts == ["conll2007"]
    assert not any(info.found for info in list_datasets())
    assert attempts == ["conll2007"]
    with pytest.raises(DataNotFoundError, match=r"EGNLP_UD_DIR=.* has no pt_bosque-ud-test.conllu"):
        load_dataset("pt-bosque", "train")
    monkeypatch.delenv("EGNLP_UD_DIR")
    with pytest.raises(DataNotFoundError, match="set EGNLP_UD_DIR to the folder that holds nl_alpino-ud-test.conllu"):
        load_dataset("nl-alpino", "test")


# --- tree helpers -------------------------------------------------------------------------------

WSJ_0001_FIRST = [2, 8, 2, 5, 6, 2, 2, 0, 8, 11, 9, 9, 15, 15, 12, 9, 16, 8]


@pytest.mark.parametrize(
    ("heads", "projective"),
    [
        ([], True),
        ([0], True),
        ([2, 0, 2], True),
        ([0, 3, 0], True),
        (WSJ_0001_FIRST, True),
        ([0, 4, 1, 1], False),  # arcs 1->3 and 4->2 cross
        ([3, 0, 2], False),  # 3->1 spans the root token 2
    ],
)
def test_is_projective_known_trees(heads: list[int], projective: bool) -> None:
    assert is_projective(heads) is projective


@st.composite
def trees(draw: st.DrawFn) -> list[int]:
    """Random trees: each token in a random order takes an earlier token (or the root) as head."""
    n = draw(st.integers(1, 9))
    order = draw(st.permutations(range(1, n + 1)))
    heads = [0] * n
    for rank, token in enumerate(order):
        heads[token - 1] = draw(st.sampled_from([0, *order[:rank]]))
    return heads


@given(trees())
def test_is_projective_matches_definition(heads: list[int]) -> None:
    """An arc is projective when its head dominates every token between head and dependent."""

    def dominates(head: int, token: int) -> bool:
        while token != 0 and token != head:
            token = heads[token - 1]
        return token == head

    expected = all(
        dominates(head, between)
        for dep, head in enumerate(heads, start=1)
        for between in range(min(head, dep) + 1, max(head, dep))
    )
    assert is_projective(heads) is expected


def test_guess_root() -> None:
    single = parse_conll(conll_text(GOOD, [conll_line(1, "A", 0)]))
    multi = parse_conll(conll_text(GOOD, [conll_line(1, "A", 0), conll_line(2, "B", 0)]))
    unparsed = parse_conll(conll_text([conll_line(1, "A", "_")]), require_heads=False)
    assert guess_root(single) == "single"
    assert guess_root(multi) == "multi"
    assert guess_root(unparsed) == "multi"
    assert guess_root(single + unparsed) == "single"


def test_sentence_from_rows() -> None:
    sentence = Sentence(rows=(tuple(conll_line(1, "A", 0).split("\t")),))
    assert len(sentence) == 1 and sentence.heads == [0] and sentence.lines() == [conll_line(1, "A", 0)]


def test_packages_read_from_a_folder_as_from_the_zip(tmp_path, monkeypatch) -> None:
    """A corpus package unzipped in a folder of the data path reads as the zip does (NLTK's own
    lookup order: a folder anywhere on the path before a zip), without importing NLTK's finder."""
    import zipfile

    from egnlp.corpora import datasets

    zipped = load_dataset("es", "train")
    source = next(Path(d) / "corpora" / "conll2007.zip" for d in nltk.data.path
                  if (Path(d) / "corpora" / "conll2007.zip").is_file())  # the zip of the shared data path
    with zipfile.ZipFile(source) as archive:
        archive.extractall(tmp_path / "corpora")
    monkeypatch.setattr(datasets, "_data_path", lambda: [str(tmp_path), str(source.parent.parent)])
    datasets._load_file.cache_clear()
    try:
        assert datasets._package_root("conll2007") == (str(tmp_path / "corpora" / "conll2007"), None)
        assert sorted(datasets._package_files("conll2007")) == ["README", "esp.test", "esp.train", "eus.test",
                                                                "eus.train"]
        unzipped = load_dataset("es", "train")
        assert [s.rows for s in unzipped] == [s.rows for s in zipped]
        monkeypatch.setattr(datasets, "_data_path", lambda: [str(tmp_path / "none")])
        with pytest.raises(DataNotFoundError, match="conll2007"):
            datasets._package_root("conll2007")
    finally:
        datasets._load_file.cache_clear()
