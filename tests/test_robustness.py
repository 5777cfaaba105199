"""No input breaks egnlp: malformed CoNLL files, model files and raw text end in one readable line.

Property-based tests (hypothesis) mutate real files, CoNLL-X (``es``, from
NLTK's conll2007), CoNLL-U (the UD files of ``$EGNLP_UD_DIR`` and
``tests/data/sample.conllu``) and Malt-TAB (``wsj``, NLTK's
dependency_treebank): swapped, dropped and duplicated columns and lines, bad
ids and heads, multiword ranges, empty nodes, characters a field may not
hold, encodings, byte-order marks and line ends. A mutated file is either
refused with one line ``file:line: reason`` (the API) or ``error: ...`` and
exit status 1 (the command line), or accepted; then every sentence obeys the
rules of :mod:`egnlp.corpora.conll` (checked here independently) and writing
and reading it gives it back unchanged.

Model files of a small parser and two small taggers (trained once per
module) are tampered with: flipped bytes, truncations, zip member edits,
arrays retyped or reshaped, metadata edits. Files changed after they were
written fail on their checksum; files rebuilt with a valid checksum
(:func:`~egnlp.base.files.model_bytes`, :func:`~egnlp.base.files.add_checksum`)
must still fail with a ModelError when their contents do not agree.
"""

from __future__ import annotations

import fcntl
import io
import itertools
import json
import os
import re
import subprocess
import sys
import zipfile
from collections.abc import Callable
from pathlib import Path

import nltk
import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from egnlp.parser_training import train_parser
from egnlp.corpora import CorpusError, Sentence, load_dataset, parse_conll, parse_malt_tab, read_conll, write_conll
from egnlp.base.files import (
    CHECKSUM_LENGTH,
    MAX_META_DEPTH,
    ModelError,
    add_checksum,
    model_bytes,
    read_npz,
    write_npz_atomic,
    write_text_atomic,
)
from egnlp.corpora.sentence import MAX_WORDS, find_cycle
from egnlp.parser.parser_model import Parser
from egnlp.pipeline import parse_text
from egnlp.tagger import Tagger
from egnlp.tagger.text import sentences_and_tokens, split_sentences
from egnlp.tagger_training import train_crf_tagger, train_maxent_tagger

from cli_helpers import assert_ok, error_line, run

UD = Path(os.environ["EGNLP_UD_DIR"])
SAMPLE_CONLLU = Path(__file__).parent / "data" / "sample.conllu"
FUZZ = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
FEW = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# What no field may hold, written out again here: the reader's rules are the thing under test.
CONTROL = re.compile("[\x00-\x08\x0a-\x1f\x7f\x85\u2028\u2029\ud800-\udfff]")
WORD_ID = re.compile(r"[1-9][0-9]*")
RANGE_ID = re.compile(r"([1-9][0-9]*)-([1-9][0-9]*)")
EMPTY_ID = re.compile(r"(0|[1-9][0-9]*)\.([1-9][0-9]*)")


def nltk_text(resource: str, encoding: str = "utf-8") -> str:
    try:
        pointer = nltk.data.find(resource)
    except LookupError:
        pytest.fail(f"NLTK resource '{resource}' not found; set NLTK_DATA to the project's NLTK data folder")
    with pointer.open() as handle:
        return handle.read().decode(encoding)


def blocks(text: str, count: int) -> list[str]:
    """The first ``count`` blank-line-separated blocks of ``text``, each with its lines."""
    return [block for block in text.split("\n\n") if block.strip()][:count]


def block_lines(text: str, count: int) -> list[str]:
    """The lines of the first ``count`` sentences of ``text``, a blank line after each."""
    return [line for block in blocks(text, count) for line in [*block.split("\n"), ""]]


@pytest.fixture(scope="module")
def sources() -> dict[str, list[str]]:
    """Lines of small pieces of real files: CoNLL-X (es), CoNLL-U (UD, the fixture) and Malt-TAB (wsj)."""
    return {
        "conllx": block_lines(nltk_text("corpora/conll2007/esp.train"), 6),
        "conllu-bosque": block_lines((UD / "pt_bosque-ud-dev.conllu").read_text(encoding="utf-8"), 4),
        "conllu-alpino": block_lines((UD / "nl_alpino-ud-test.conllu").read_text(encoding="utf-8"), 4),
        "conllu-sample": SAMPLE_CONLLU.read_text(encoding="utf-8").split("\n"),
        "malt": block_lines(nltk_text("corpora/dependency_treebank/wsj_0001.dp"), 2),
    }


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("robustness")


# --- mutations -----------------------------------------------------------------------------------

ODD_VALUES = ["", "_", "0", "-1", "01", "1.0", "1.1", "0.1", "2.1", "1-2", "2-1", "1-1", "3-4", "99999999999999999999",
              "x", " 1", "1 ", "a b", "a  b", " a", "a ", "\r", "a\rb", "\x00", "\x0b", "\x0c", "\x1f", "\x85", "\x92",
              "\u2028", "\ufeff", "\ud800", "\u00a0", "Ä", "\t", "\n", "root", "#"]


@st.composite
def mutated_lines(draw: st.DrawFn, lines: list[str], malt: bool = False) -> list[str]:
    """``lines`` (of a CoNLL file, or of a Malt-TAB file) after one to three random edits."""
    lines = list(lines)
    for _ in range(draw(st.integers(1, 3))):
        k = draw(st.integers(0, len(lines) - 1))
        fields = lines[k].split("\t")
        kind = draw(st.sampled_from(["swap-columns", "drop-column", "duplicate-column", "drop-line", "duplicate-line",
                                     "swap-lines", "set-field", "insert-chars", "range", "empty-node", "blank-line",
                                     "renumber", "huge-sentence"]))
        i, j = draw(st.integers(0, len(fields) - 1)), draw(st.integers(0, len(fields) - 1))
        if kind == "swap-columns":
            fields[i], fields[j] = fields[j], fields[i]
        elif kind == "drop-column":
            del fields[i]
        elif kind == "duplicate-column":
            fields.insert(i, fields[i])
        elif kind == "drop-line":
            del lines[k]
            continue
        elif kind == "duplicate-line":
            lines.insert(k, lines[k])
            continue
        elif kind == "swap-lines":
            other = draw(st.integers(0, len(lines) - 1))
            lines[k], lines[other] = lines[other], lines[k]
            continue
        elif kind == "set-field":
            fields[i] = draw(st.sampled_from(ODD_VALUES) | st.text(max_size=4))
        elif kind == "insert-chars":
            at = draw(st.integers(0, len(fields[i])))
            fields[i] = fields[i][:at] + draw(st.sampled_from(ODD_VALUES[1:]) | st.text(min_size=1, max_size=2)) \
                + fields[i][at:]
        elif kind in ("range", "empty-node"):
            a, b = draw(st.integers(0, 12)), draw(st.integers(0, 12))
            head, deprel = draw(st.sampled_from(["_", "0", "1"])), draw(st.sampled_from(["_", "dep"]))
            ident = f"{a}-{b}" if kind == "range" else f"{a}.{b}"
            lines.insert(k, "\t".join([ident, "w", "_", "_", "_", "_", head, deprel, "_", "_"]))
            continue
        elif kind == "blank-line":
            lines.insert(k, draw(st.sampled_from(["", " ", "\x0c", "\t"])))
            continue
        elif kind == "renumber":
            fields[0] = str(draw(st.integers(-1, 40)))
        elif kind == "huge-sentence":
            words = draw(st.sampled_from([MAX_WORDS, MAX_WORDS + 1]))
            if malt:
                lines[k:k] = ["", *(f"w\tNN\t{i - 1}" for i in range(1, words + 1)), ""]
            else:
                lines[k:k] = ["", *long_sentence(words).split("\n")]
            continue
        lines[k] = "\t".join(fields)
    return lines


@st.composite
def encoded(draw: st.DrawFn, lines: list[str]) -> tuple[bytes, str]:
    """(file bytes, the encoding to read them with): a random line end, byte-order mark and encoding."""
    text = draw(st.sampled_from(["\n"] * 4 + ["\r\n", "\r"])).join(lines)
    if draw(st.booleans()):
        text += "\n"
    if draw(st.integers(0, 4)) == 0:
        text = "\ufeff" + text
    encoding = draw(st.sampled_from(["utf-8"] * 4 + ["latin-1", "utf-16"]))
    data = text.encode(encoding, errors="replace" if encoding == "latin-1" else "surrogatepass")
    return data, "latin-1" if encoding == "latin-1" else draw(st.sampled_from(["utf-8"] * 3 + ["latin-1"]))


def assert_one_line_error(message: str, path: Path) -> None:
    assert "\n" not in message and "\r" not in message, message
    assert re.match(rf"{re.escape(str(path))}(:\d+)?: \S", message), message
    event("refused: " + " ".join(re.sub(r"'.*|\d+", "", message.split(": ", 2)[-1]).split()[:3]))


def assert_valid(sentence: Sentence, *, lemma_spaces: bool) -> None:
    """The sentence obeys the rules of the reader (module docstring of :mod:`egnlp.corpora.conll`)."""
    words = covered = 0
    ranges: list[int] = []
    after_range = False
    next_empty = 1
    for line in sentence.lines():
        assert not CONTROL.search(line), repr(line)
        if line.startswith("#"):
            continue
        fields = line.split("\t")
        assert len(fields) in (10, 11), repr(line)
        for index, value in enumerate(fields):
            assert value, repr(line)
            if index in (1, 2, 9):
                assert not re.search(r"\s\s", value), repr(line)
                assert value == value.strip() or (index == 2 and lemma_spaces), repr(line)
            else:
                assert not any(char.isspace() for char in value), repr(line)
        ident = fields[0]
        if WORD_ID.fullmatch(ident):
            words += 1
            assert int(ident) == words, repr(line)
            after_range, next_empty = False, 1
        elif match := RANGE_ID.fullmatch(ident):
            first, last = int(match[1]), int(match[2])
            assert first == words + 1 and first <= last and first > covered, repr(line)
            assert fields[6:9] == ["_", "_", "_"] and not re.search(r"\s", fields[1] + fields[2]), repr(line)
            covered, after_range = last, True
            ranges.append(last)
        else:
            match = EMPTY_ID.fullmatch(ident)
            assert match and int(match[1]) == words and int(match[2]) == next_empty and not after_range, repr(line)
            assert fields[6] == fields[7] == "_", repr(line)
            next_empty += 1
    assert 1 <= words == len(sentence) <= MAX_WORDS
    assert all(last <= words for last in ranges)
    heads = [row[6] for row in sentence.rows]
    if any(head != "_" for head in heads):
        values = [int(head) for head in heads]
        assert all(0 <= h <= words and h != i for i, h in enumerate(values, start=1)) and 0 in values
        assert find_cycle(values) is None


def assert_round_trip(sentences: list[Sentence], path: Path) -> None:
    """Writing the sentences and reading them back gives them unchanged."""
    write_conll(path, sentences)
    again = read_conll(path, require_heads=False)
    assert [(s.rows, s.aside) for s in again] == [(s.rows, s.aside) for s in sentences]


# --- CoNLL-X, CoNLL-U and Malt-TAB through the reader --------------------------------------------


@pytest.mark.parametrize("name", ["conllx", "conllu-bosque", "conllu-alpino", "conllu-sample"])
@FUZZ
@given(data=st.data())
def test_mutated_conll_is_refused_in_one_line_or_valid(sources: dict[str, list[str]], folder: Path, name: str,
                                                       data: st.DataObject) -> None:
    lines = data.draw(mutated_lines(sources[name]))
    raw, encoding = data.draw(encoded(lines))
    path = folder / ("in.conllu" if name.startswith("conllu") else "in.conll")
    path.write_bytes(raw)
    try:
        sentences = read_conll(path, encoding=encoding, require_heads=data.draw(st.booleans()))
    except CorpusError as error:
        assert_one_line_error(str(error), path)
        return
    event("accepted")
    for sentence in sentences:
        assert_valid(sentence, lemma_spaces=path.suffix != ".conllu")
    assert_round_trip(sentences, folder / ("copy" + path.suffix))


@FUZZ
@given(data=st.data())
def test_mutated_malt_tab_is_refused_in_one_line_or_valid(sources: dict[str, list[str]], folder: Path,
                                                          data: st.DataObject) -> None:
    lines = data.draw(mutated_lines(sources["malt"], malt=True))
    text = data.draw(st.sampled_from(["\n", "\r\n"])).join(lines)
    try:
        sentences = parse_malt_tab(text, "wsj.dp")
    except CorpusError as error:
        assert_one_line_error(str(error), Path("wsj.dp"))
        return
    event("accepted")
    for sentence in sentences:
        assert_valid(sentence, lemma_spaces=False)
    assert_round_trip(sentences, folder / "malt.conll")


@FUZZ
@given(text=st.text(alphabet=st.sampled_from(["1", "2", "-", ".", "_", "\t", "\n", "\r", " ", "#", "a", "0", "\x85",
                                               "\ufeff"]), max_size=300))
def test_random_text_is_refused_in_one_line_or_valid(text: str) -> None:
    try:
        sentences = parse_conll(text, "t.conllu", require_heads=False)
    except CorpusError as error:
        assert_one_line_error(str(error), Path("t.conllu"))
        return
    for sentence in sentences:
        assert_valid(sentence, lemma_spaces=False)
        assert parse_conll("\n".join(sentence.lines()) + "\n", "t.conllu", require_heads=False)[0].rows == sentence.rows


CASES = {  # (a line of a CoNLL-U sentence, what the message says)
    "empty field": ("1\tA\t\tN\tNN\t_\t0\troot\t_\t_", "empty LEMMA"),
    "leading space": ("1\t A\ta\tN\tNN\t_\t0\troot\t_\t_", "begins or ends with whitespace"),
    "trailing space in MISC": ("1\tA\ta\tN\tNN\t_\t0\troot\t_\tX=1 ", "begins or ends with whitespace"),
    "space in a tag": ("1\tA\ta\tN\tN N\t_\t0\troot\t_\t_", "whitespace in POSTAG/XPOS"),
    "two spaces": ("1\tA  B\ta\tN\tNN\t_\t0\troot\t_\t_", "two whitespace characters in a row"),
    "CR in a field": ("1\tA\ra\ta\tN\tNN\t_\t0\troot\t_\t_", "control character U+000D"),
    "CR before a CRLF": ("1\tA\ta\tN\tNN\t_\t0\troot\t_\t_\r\r", "control character U+000D"),
    "NUL": ("1\tA\x00\ta\tN\tNN\t_\t0\troot\t_\t_", "control character U+0000"),
    "line separator": ("1\tA\u2028\ta\tN\tNN\t_\t0\troot\t_\t_", "control character U+2028"),
    "lone surrogate": ("1\tA\ud800\ta\tN\tNN\t_\t0\troot\t_\t_", "control character U+D800"),
}


@pytest.mark.parametrize("case", CASES)
def test_fields_the_format_forbids(case: str) -> None:
    line, words = CASES[case]
    with pytest.raises(CorpusError) as caught:
        parse_conll("# sent_id = 1\n" + line + "\n", "x.conllu")
    assert str(caught.value).startswith("x.conllu:2: ") and words in str(caught.value)


TOKENS = ["1\tA\ta\tN\tNN\t_\t0\troot\t_\t_", "2\tB\tb\tN\tNN\t_\t1\tdep\t_\t_", "3\tC\tc\tN\tNN\t_\t1\tdep\t_\t_"]
RANGES = {  # (lines, line of the message, what it says)
    "range with a head": (["1-2\tAB\t_\t_\t_\t_\t0\t_\t_\t_", *TOKENS], 1, "has HEAD '0'"),
    "range with a deprel": (["1-2\tAB\t_\t_\t_\t_\t_\troot\t_\t_", *TOKENS], 1, "has DEPREL 'root'"),
    "repeated range": (["1-2\tAB\t_\t_\t_\t_\t_\t_\t_\t_"] * 2 + TOKENS, 2, "overlaps 1-2 on line 1"),
    "overlapping ranges": (["1-2\tAB\t_\t_\t_\t_\t_\t_\t_\t_", TOKENS[0], "2-3\tBC\t_\t_\t_\t_\t_\t_\t_\t_",
                            *TOKENS[1:]], 3, "overlaps 1-2"),
    "range past the end": ([TOKENS[0], "2-4\tBCD\t_\t_\t_\t_\t_\t_\t_\t_", TOKENS[1]], 2, "runs past the last word"),
    "empty node with a head": ([*TOKENS, "3.1\tD\td\tN\tNN\t_\t1\t_\t_\t_"], 4, "empty node 3.1 has HEAD"),
    "empty nodes out of order": ([*TOKENS, "3.2\tD\td\tN\tNN\t_\t_\t_\t_\t_"], 4, "expected 3.1"),
    "empty node after a range": ([TOKENS[0], "2-3\tBC\t_\t_\t_\t_\t_\t_\t_\t_", "1.1\tD\td\tN\tNN\t_\t_\t_\t_\t_",
                                  *TOKENS[1:]], 3, "must come before the multiword token"),
}


@pytest.mark.parametrize("case", RANGES)
def test_multiword_tokens_and_empty_nodes(case: str) -> None:
    lines, number, words = RANGES[case]
    with pytest.raises(CorpusError) as caught:
        parse_conll("\n".join(lines) + "\n", "x.conllu")
    assert str(caught.value).startswith(f"x.conllu:{number}: ") and words in str(caught.value), str(caught.value)


def test_real_treebanks_and_fixtures_still_load(folder: Path) -> None:
    """Everything real the reader met before its checks were added: the UD files, es and eu, the fixture."""
    for path in sorted(UD.glob("*.conllu")):
        sentences = read_conll(path)
        assert len(sentences) > 300
        assert_round_trip(sentences, folder / "ud.conllu")
    for name in ("es", "eu"):
        for split in ("train", "dev", "test"):
            assert load_dataset(name, split)
    assert len(read_conll(SAMPLE_CONLLU)) == 3
    spanish = [s for s in load_dataset("es", "test") if any(lemma != lemma.strip() for lemma in s.lemmas)]
    assert spanish  # a lemma ' 892700000_dólar', kept as it is outside .conllu files
    with pytest.raises(CorpusError, match="LEMMA ' 892700000_d"):
        parse_conll("\n".join(spanish[0].lines()) + "\n", "es.conllu")


# --- the command line ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A small labeled parser, a CRF and a maxent POS tagger, trained once and saved."""
    folder = tmp_path_factory.mktemp("models")
    paths = {name: folder / f"{name}.npz" for name in ("parser", "crf", "maxent")}
    # tags="xpos": as the taggers
    parser, _ = train_parser(load_dataset("es", "train")[:30], max_passes=1, tags="xpos", parts="arcs")
    parser.save(paths["parser"])
    wsj = load_dataset("ptb-pos", "train")[:30]
    tokens, tags = [s.forms for s in wsj], [s.pos for s in wsj]
    train_crf_tagger(tokens, tags, max_passes=1)[0].save(paths["crf"])
    train_maxent_tagger(tokens, tags, max_passes=1)[0].save(paths["maxent"])
    return paths


@pytest.mark.parametrize("name", ["conllx", "conllu-sample"])
@FEW
@given(data=st.data())
def test_mutated_input_through_the_cli(models: dict[str, Path], sources: dict[str, list[str]], folder: Path,
                                       name: str, data: st.DataObject) -> None:
    raw, encoding = data.draw(encoded(data.draw(mutated_lines(sources[name]))))
    path = folder / ("cli.conllu" if name.startswith("conllu") else "cli.conll")
    path.write_bytes(raw)
    out = folder / "cli-out.conll"
    out.unlink(missing_ok=True)
    result = run("parser", "parse", models["parser"], path, "-o", out, "--encoding", encoding)
    if result.exit_code == 0:
        assert len(read_conll(out)) == len(read_conll(path, encoding=encoding, require_heads=False))
    else:
        assert error_line(result).startswith(f"error: {path}:")
        assert not out.exists()


def test_out_onto_a_folder_is_one_line(models: dict[str, Path], folder: Path) -> None:
    target = folder / "a-folder"
    target.mkdir(exist_ok=True)
    line = error_line(run("parser", "parse", models["parser"], SAMPLE_CONLLU, "-o", target))
    assert line == f"error: {target}: cannot write (is a folder, not a file)"
    with pytest.raises(ModelError, match="is a folder"):
        write_npz_atomic(target, {"x": np.zeros(2)}, {"kind": "k"})
    with pytest.raises(ModelError, match="is a folder, not a model file"):
        Parser.load(target)


# --- over-long sentences and text that is not Unicode ---------------------------------------------


def long_sentence(n: int) -> str:
    return "".join(f"{i}\tw{i}\t_\tN\tNN\t_\t{i - 1}\tdep\t_\t_\n" for i in range(1, n + 1)) + "\n"


def test_over_long_sentences_are_refused_before_any_work(folder: Path) -> None:
    path = folder / "long.conll"
    path.write_text("1\tA\t_\tN\tNN\t_\t0\t_\t_\t_\n\n" + long_sentence(MAX_WORDS + 1), encoding="utf-8")
    with pytest.raises(CorpusError, match=rf"^{re.escape(str(path))}:{MAX_WORDS + 3}: sentence longer than "
                                          rf"{MAX_WORDS} words \(it starts on line 3\)"):
        read_conll(path)
    longest = folder / "longest.conll"
    longest.write_text(long_sentence(MAX_WORDS), encoding="utf-8")
    assert len(read_conll(longest)[0]) == MAX_WORDS
    malt = "".join(f"w\tNN\t{i - 1}\n" for i in range(1, MAX_WORDS + 2))
    with pytest.raises(CorpusError, match=rf"^x.dp:{MAX_WORDS + 1}: sentence longer than"):
        parse_malt_tab(malt, "x.dp")
    rows = tuple((str(i), "w", "_", "N", "NN", "_", "_", "_", "_", "_") for i in range(1, MAX_WORDS + 2))
    with pytest.raises(ValueError, match=f"sentence of {MAX_WORDS + 1} words"):
        Sentence(rows)
    line = error_line(run("parser", "train", "--train", path, "--out", folder / "never.npz"))
    assert line.startswith(f"error: {path}:{MAX_WORDS + 3}: sentence longer than")


def test_long_raw_text_is_cut_into_pieces(models: dict[str, Path], folder: Path) -> None:
    words = " ".join(f"word{i % 50}" for i in range(3 * MAX_WORDS)) + " " + "," * (2 * MAX_WORDS)
    pieces = sentences_and_tokens(words)
    assert max(len(tokens) for tokens in pieces) <= MAX_WORDS
    assert [t for tokens in pieces for t in tokens if t.strip(",")] == [f"word{i % 50}" for i in range(3 * MAX_WORDS)]
    text = folder / "long.txt"
    text.write_text(words, encoding="utf-8")
    out = folder / "long.conllu"
    assert_ok(run("parse-text", models["crf"], models["parser"], text, "-o", out))
    assert max(len(s) for s in read_conll(out)) <= MAX_WORDS


def test_lone_surrogate_in_text_is_one_line(models: dict[str, Path]) -> None:
    tagger, parser = Tagger.load(models["crf"]), Parser.load(models["parser"])
    for call in (lambda: parse_text("The cat \udc80 sat.", tagger, parser), lambda: tagger.tag("a \ud800 b"),
                 lambda: split_sentences("\udfff")):
        with pytest.raises(ValueError, match=r"^text holds a lone surrogate U\+D[8-F][0-9A-F]{2} \(character \d+\)"):
            call()


# --- model files ---------------------------------------------------------------------------------

LOADERS: dict[str, Callable[[Path], object]] = {"parser": Parser.load, "crf": Tagger.load, "maxent": Tagger.load}


def archive(path: Path) -> tuple[dict[str, np.ndarray], dict]:
    """The arrays and the metadata (its records of the arrays removed) of a good model file."""
    with np.load(path, allow_pickle=False) as data:
        arrays = {name: data[name] for name in data.files}
    meta = json.loads(arrays.pop("meta").tobytes().decode("utf-8"))
    meta.pop("arrays")
    return arrays, meta


def inner(meta: dict) -> dict:
    """The part of the metadata that holds the labels: a tagger's inner model, or the parser's top level."""
    return meta["inner"] if "inner" in meta else meta


def zip_bytes(members: dict[str, bytes], method: int = zipfile.ZIP_STORED) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", method) as out:
        for name, data in members.items():
            out.writestr(name, data)
    return buffer.getvalue()


def members(path: Path) -> dict[str, bytes]:
    with zipfile.ZipFile(path) as source:
        return {name: source.read(name) for name in source.namelist()}


def load_fails(loader: Callable[[Path], object], path: Path, data: bytes, *words: str) -> str:
    path.write_bytes(data)
    with pytest.raises(ModelError) as caught:
        loader(path)
    message = str(caught.value)
    assert message.startswith(f"{path}: ") and "\n" not in message, message
    for word in words:
        assert word in message, message
    return message


@pytest.mark.parametrize("name", LOADERS)
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_any_changed_byte_is_refused(models: dict[str, Path], folder: Path, name: str, data: st.DataObject) -> None:
    good = bytearray(models[name].read_bytes())
    kind = data.draw(st.sampled_from(["flip", "truncate", "append", "insert"]))
    if kind == "flip":
        end = len(good) - 1
        at = data.draw(st.integers(0, end) | st.integers(0, 100) | st.integers(end - 150, end))  # the zip headers too
        good[at] ^= 1 << data.draw(st.integers(0, 7))
    elif kind == "truncate":
        del good[data.draw(st.integers(0, len(good) - 1)):]
    elif kind == "append":
        good += data.draw(st.binary(min_size=1, max_size=8))
    else:
        at = data.draw(st.integers(0, len(good)))
        good[at:at] = data.draw(st.binary(min_size=1, max_size=4))
    load_fails(LOADERS[name], folder / f"changed-{name}.npz", bytes(good))


@pytest.mark.parametrize("name", LOADERS)
def test_changes_that_keep_the_archive_valid_fail_on_the_checksum(models: dict[str, Path], folder: Path,
                                                                   name: str) -> None:
    arrays, meta = archive(models[name])
    good = models[name].read_bytes()
    rng = np.random.default_rng(0)
    changed = {"negated": {k: -v if v.dtype.kind == "f" else v for k, v in arrays.items()},
               "shuffled": {k: rng.permutation(v) if v.dtype.kind == "f" else v for k, v in arrays.items()},
               "nan": {k: np.where(np.arange(v.size) == 0, np.nan, v) if v.dtype.kind == "f" else v
                       for k, v in arrays.items()}}
    loader = LOADERS[name]
    for how, edited in changed.items():
        rebuilt = model_bytes(edited, meta)
        load_fails(loader, folder / f"{how}.npz", rebuilt[:-CHECKSUM_LENGTH] + good[-CHECKSUM_LENGTH:], "checksum")
        if how != "nan":
            path = folder / f"{how}-resealed.npz"
            path.write_bytes(rebuilt)
            loader(path)  # a valid checksum: the checksum finds damage, it is no signature
        else:
            load_fails(loader, folder / "nan-resealed.npz", rebuilt, "finite")
    plain = io.BytesIO()
    np.savez(plain, **arrays, meta=np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8))
    load_fails(loader, folder / "no-checksum.npz", plain.getvalue(), "without its checksum")


RETYPES = ["<f2", "<f4", "|b1", "<i4", "|u1", "<i8", "<f8", "<u8"]


@pytest.mark.parametrize("name", LOADERS)
@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_arrays_that_disagree_with_the_model_are_refused(models: dict[str, Path], folder: Path, name: str,
                                                         data: st.DataObject) -> None:
    arrays, meta = archive(models[name])
    target = data.draw(st.sampled_from(sorted(arrays)))
    array = arrays[target]
    how = data.draw(st.sampled_from(["retype", "0-d", "2-d", "shorter", "longer", "drop", "extra"]))
    if how == "retype":
        dtype = data.draw(st.sampled_from([t for t in RETYPES if t != array.dtype.str]))
        with np.errstate(over="ignore", invalid="ignore"):
            arrays[target] = array.astype(dtype)
    elif how == "0-d":
        arrays[target] = np.asarray(array.reshape(-1)[0] if array.size else 0, dtype=array.dtype)
    elif how == "2-d":
        arrays[target] = array.reshape(1, -1) if array.ndim == 1 else array.reshape(-1)
    elif how == "shorter":
        if array.size == 0:
            return
        arrays[target] = array[:-1]
    elif how == "longer":
        arrays[target] = np.concatenate([array, array[:1]]) if array.size else np.zeros(1, array.dtype)
    elif how == "drop":
        del arrays[target]
    else:
        arrays["extra"] = array
    load_fails(LOADERS[name], folder / f"arrays-{name}.npz", model_bytes(arrays, meta))


BAD_META = {  # (how to change the metadata, words of the message)
    "labels of integers": (lambda m: inner(m).__setitem__("labels", list(range(len(inner(m)["labels"])))), "labels"),
    "a label with a newline": (lambda m: inner(m)["labels"].__setitem__(0, "a\nb"), "labels"),
    "an empty label": (lambda m: inner(m)["labels"].__setitem__(0, ""), "labels"),
    "a repeated label": (lambda m: inner(m)["labels"].__setitem__(0, inner(m)["labels"][1]), "label twice"),
    "info 1.5": (lambda m: m.__setitem__("info", 1.5), "info"),
    "no kind": (lambda m: m.pop("kind"), "expected a model of kind"),
    "old format": (lambda m: m.__setitem__("format_version", m["format_version"] - 1), "retrain the model"),
}


@pytest.mark.parametrize("name", LOADERS)
@pytest.mark.parametrize("case", BAD_META)
def test_metadata_that_does_not_fit_is_refused(models: dict[str, Path], folder: Path, name: str, case: str) -> None:
    arrays, meta = archive(models[name])
    change, word = BAD_META[case]
    change(meta)
    load_fails(LOADERS[name], folder / f"meta-{name}.npz", model_bytes(arrays, meta), word)


@pytest.mark.parametrize("beam", [float("inf"), 1e9, 10**9, 0, -1, True, 2.5, "3", None])
def test_maxent_beam_out_of_range_is_refused(models: dict[str, Path], folder: Path, beam: object) -> None:
    arrays, meta = archive(models["maxent"])
    meta["inner"]["beam"] = beam
    load_fails(Tagger.load, folder / "beam.npz", model_bytes(arrays, meta), "beam")


def resealed_with_meta(path: Path, text: bytes) -> bytes:
    """The archive of ``path`` with the metadata member's JSON replaced by ``text``, with a valid checksum."""
    parts = members(path)
    buffer = io.BytesIO()
    np.save(buffer, np.frombuffer(text, dtype=np.uint8))
    parts["meta.npy"] = buffer.getvalue()
    return add_checksum(zip_bytes(parts))


def test_deep_or_huge_metadata_is_refused(models: dict[str, Path], folder: Path) -> None:
    path = models["parser"]
    text = np.load(io.BytesIO(members(path)["meta.npy"]), allow_pickle=False).tobytes()
    deep = b'{"deep": ' + b"[" * 100_000 + b"]" * 100_000 + b", " + text[1:]
    load_fails(Parser.load, folder / "deep.npz", resealed_with_meta(path, deep), "nested more than")
    nested = b'{"deep": ' + b"[" * (MAX_META_DEPTH + 1) + b"]" * (MAX_META_DEPTH + 1) + b", " + text[1:]
    load_fails(Parser.load, folder / "nested.npz", resealed_with_meta(path, nested), "nested more than")
    load_fails(Parser.load, folder / "not-json.npz", resealed_with_meta(path, text[:-1]), "not UTF-8 JSON")
    load_fails(Parser.load, folder / "list.npz", resealed_with_meta(path, b"[1]"), "not a JSON object")
    huge = b'{"pad": "' + b"x" * (16 << 20) + b'", ' + text[1:]
    load_fails(Parser.load, folder / "huge.npz", resealed_with_meta(path, huge), "bytes of metadata")


def npy_with_header(header: str, payload: bytes = b"") -> bytes:
    text = header.encode("latin-1")
    text += b" " * (-(len(text) + 11) % 64) + b"\n"
    return b"\x93NUMPY\x01\x00" + len(text).to_bytes(2, "little") + text + payload


@pytest.mark.parametrize("header", [
    "{'descr': '<f8', 'fortran_order': False, 'shape': (1000000000000,), }",
    "{'descr': '<f8', 'fortran_order': False, 'shape': (3,, }",
    "{'descr': '|O', 'fortran_order': False, 'shape': (3,), }",
    "{'descr': '<f8', 'fortran_order': True, 'shape': (3,), }",
    "{'descr': '>f8', 'fortran_order': False, 'shape': (3,), }",
    "{'descr': '<f8', 'fortran_order': False, 'shape': (-3,), }",
    "{'descr': '<f8', 'fortran_order': False, 'shape': (3,), 'x': 1}",
    "[" * 5000 + "]" * 5000,
    "__import__('os')",
])
def test_npy_headers_are_checked_before_anything_is_allocated(models: dict[str, Path], folder: Path,
                                                              header: str) -> None:
    parts = members(models["parser"])
    parts["weights.npy"] = npy_with_header(header, bytes(24))
    load_fails(Parser.load, folder / "header.npz", add_checksum(zip_bytes(parts)), "corrupt model file")


def test_zip_members_must_be_stored_arrays(models: dict[str, Path], folder: Path) -> None:
    parts = members(models["parser"])
    for how, data in {
        "deflated": zip_bytes(parts, zipfile.ZIP_DEFLATED),
        "renamed": zip_bytes({("w.bin" if k == "weights.npy" else k): v for k, v in parts.items()}),
        "no meta": zip_bytes({k: v for k, v in parts.items() if k != "meta.npy"}),
        "one array": parts["weights.npy"],
    }.items():
        load_fails(Parser.load, folder / f"zip-{how}.npz", add_checksum(data) if data[:2] == b"PK" else data)
    # A flag or compression method changed in the directory, checksum made valid again.
    good = zip_bytes(parts)
    directory = good.index(b"PK\x01\x02")
    for offset, value in ((8, b"\x01\x00"), (10, b"\x08\x00"), (10, b"\x63\x00")):
        edited = good[:directory + offset] + value + good[directory + offset + 2:]
        load_fails(Parser.load, folder / "zip-flags.npz", add_checksum(edited))
    # A member's local header naming another file than the directory does (members are read through
    # their local headers, as views of the file's bytes), checksum made valid again.
    for at in (good.index(b"PK\x03\x04"), good.rindex(b"PK\x03\x04")):  # the first member and the metadata
        edited = good[:at + 30] + b"X" + good[at + 31:]
        load_fails(Parser.load, folder / "zip-local.npz", add_checksum(edited), "local header")
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as out, pytest.warns(UserWarning, match="Duplicate name"):
        for name, data in itertools.chain(parts.items(), [("weights.npy", parts["weights.npy"])]):
            out.writestr(name, data)
    load_fails(Parser.load, folder / "zip-twice.npz", add_checksum(buffer.getvalue()), "twice")


def test_parse_with_a_tampered_model_is_one_line(models: dict[str, Path], folder: Path) -> None:
    bad = folder / "flipped.npz"
    data = bytearray(models["parser"].read_bytes())
    data[len(data) // 2] ^= 0x10
    bad.write_bytes(bytes(data))
    out = folder / "never.conllu"
    line = error_line(run("parser", "parse", bad, SAMPLE_CONLLU, "-o", out))
    assert line.startswith(f"error: {bad}: ") and "checksum mismatch" in line
    assert not out.exists()


# --- atomic writes -------------------------------------------------------------------------------


def test_stale_temporary_files_are_removed_by_the_next_write(folder: Path) -> None:
    target = folder / "out.conll"
    stale = folder / ".out.conll.0badf00d.tmp"
    stale.write_text("half a file", encoding="utf-8")
    other = folder / ".other.conll.0badf00d.tmp"
    other.write_text("another target's", encoding="utf-8")
    busy = folder / ".out.conll.1234abcd.tmp"
    with open(busy, "w") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)  # a writer still at work
        write_text_atomic(target, "done\n")
        assert busy.exists()
    assert target.read_text(encoding="utf-8") == "done\n"
    assert not stale.exists() and other.exists()
    write_text_atomic(target, "again\n")
    assert not busy.exists()


KILLED_WRITER = """
import sys, time
from pathlib import Path
from egnlp.base import files
files._O_TMPFILE = None  # a named temporary file, as where Linux's unnamed ones are missing
def slow(handle):
    handle.write(b"partial")
    handle.flush()
    print("writing", flush=True)
    time.sleep(60)
files._write_atomic(Path(sys.argv[1]), slow)
"""


def test_kill_9_leaves_no_partial_output_and_the_next_write_cleans_up(folder: Path) -> None:
    """A named temporary file (the fallback; Linux's unnamed ones leave nothing: see
    tests/test_outputs_and_workers.py) is left by a killed writer and removed by the next write."""
    target = folder / "killed.conll"
    target.write_text("old\n", encoding="utf-8")
    writer = subprocess.Popen([sys.executable, "-c", KILLED_WRITER, str(target)], stdout=subprocess.PIPE, text=True)
    try:
        assert writer.stdout.readline() == "writing\n"
    finally:
        writer.kill()
        writer.wait()
    assert list(folder.glob(".killed.conll.*.tmp"))
    assert target.read_text(encoding="utf-8") == "old\n"
    write_text_atomic(target, "new\n")
    assert target.read_text(encoding="utf-8") == "new\n"
    assert not list(folder.glob(".killed.conll.*.tmp"))


def test_model_file_written_in_place_equals_model_bytes(tmp_path) -> None:
    """write_npz_atomic writes the archive and its checksum straight to the file: the same bytes as
    model_bytes builds in memory (which add_checksum's layout also gives), and they load back."""
    rng = np.random.default_rng(0)
    arrays = {"weights": rng.normal(size=50_000), "keys": rng.integers(1, 2**63, size=50_000, dtype=np.uint64)}
    meta = {"kind": "test", "format_version": 1, "note": "ü"}
    write_npz_atomic(tmp_path / "m.npz", arrays, meta)
    data = (tmp_path / "m.npz").read_bytes()
    assert data == model_bytes(arrays, meta)
    buffer = io.BytesIO()
    np.savez(buffer, **arrays, meta=np.frombuffer(json.dumps(
        {**meta, "arrays": {k: {"dtype": v.dtype.str, "shape": list(v.shape)} for k, v in arrays.items()}},
        sort_keys=True).encode("utf-8"), dtype=np.uint8))
    assert data == add_checksum(buffer.getvalue())
    loaded, got_meta = read_npz(tmp_path / "m.npz", "test", 1)
    np.testing.assert_array_equal(loaded["weights"], arrays["weights"])
    assert got_meta["note"] == "ü"
