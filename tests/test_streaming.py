"""Files read, parsed and written a piece at a time (``egnlp.inputs.text_pieces``, ``parser parse``).

The pieces of a real UD file give the sentences, line numbers and errors of
the file read whole; ``parser parse`` writes the same bytes whatever the
piece size, and an error in a late piece leaves no output file.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import egnlp.inputs as inputs
from egnlp.parser_training import train_parser
from egnlp.corpora import CorpusError, load_dataset
from egnlp.cli.progress import DecodingProgress
from egnlp.corpora.formats import parse_as
from egnlp.inputs import read_sentences, text_pieces
from tests.cli_helpers import assert_ok, error_line, run
from tests.text_blocks import blocks

UD_DEV = Path(os.environ["EGNLP_UD_DIR"]) / "pt_bosque-ud-dev.conllu"


def stream_sentences(source, *, require_heads=True, piece_bytes):
    """(format, the sentences of each piece of ``source``), as ``parser parse`` reads them."""
    fmt, name, pieces = text_pieces(source, piece_bytes=piece_bytes)
    return fmt, (parse_as(piece.text, name, fmt, require_heads=require_heads, first_line=piece.first_line)
                 for piece in pieces)


def rows_and_lines(sentences):
    return [(s.rows, s.line, s.aside) for s in sentences]


@pytest.fixture(scope="module")
def dev_head(tmp_path_factory) -> Path:
    """The first 300 sentences of UD_DEV, byte for byte (about 450 KB)."""
    path = tmp_path_factory.mktemp("head") / "pt_bosque-dev-head.conllu"
    path.write_text(blocks(UD_DEV.read_text(encoding="utf-8"), 0, 300), encoding="utf-8")
    return path


def test_pieces_count_the_bytes_the_progress_shows(tmp_path) -> None:
    """The pieces' byte counts add up to the file's size, the progress bar's total; the bar counts the bytes
    and sentences it is given, and shows only on a terminal, with the output in a file, when not quiet."""
    _, _, pieces = text_pieces(str(UD_DEV), piece_bytes=20_000)
    counts = [piece.nbytes for piece in pieces]
    assert len(counts) > 10 and sum(counts) == UD_DEV.stat().st_size
    progress = DecodingProgress("parsing", str(UD_DEV), tmp_path / "out.conllu", terminal=True)
    assert progress.on and progress.total == UD_DEV.stat().st_size
    with progress:
        progress.advance(1_000, 3)
        progress.advance(500, 2)
    assert progress.sentences == 5
    assert not DecodingProgress("parsing", str(UD_DEV), "-", terminal=True).on  # output on the terminal
    assert not DecodingProgress("parsing", str(UD_DEV), tmp_path / "o", terminal=False).on
    assert not DecodingProgress("parsing", str(UD_DEV), tmp_path / "o", terminal=True, quiet=True).on
    assert DecodingProgress("parsing", "-", tmp_path / "o", terminal=True).total is None  # stdin: no size


def test_pieces_shrink_toward_the_end_of_a_file(tmp_path) -> None:
    """Pieces of a file are about ``piece_bytes`` until an eighth of what is left is less, then smaller, down
    to a sixteenth of it, so that the last pieces on several workers take about the same time; a pipe's
    size is unknown and its pieces stay whole.  The sentences are those of the file either way."""
    assert inputs.piece_size(80_000, None) == 80_000
    assert inputs.piece_size(80_000, 10_000_000) == 80_000
    assert inputs.piece_size(80_000, 320_000) == 40_000
    assert inputs.piece_size(80_000, 8_000) == 5_000
    _, _, pieces = text_pieces(str(UD_DEV), piece_bytes=80_000)
    sizes = [piece.nbytes for piece in pieces]
    assert sum(sizes) == UD_DEV.stat().st_size
    assert min(sizes[:5]) > 70_000 and max(sizes[-5:]) < 10_000  # pieces end at a sentence's end
    with open(UD_DEV, "rb") as handle:
        assert inputs._file_size(handle) == UD_DEV.stat().st_size
    read, write = os.pipe()
    with os.fdopen(read, "rb") as r, os.fdopen(write, "wb"):
        assert inputs._file_size(r) is None


@pytest.mark.parametrize("piece_bytes", [1, 5_000, 300_000, 1 << 30])
def test_pieces_give_the_sentences_of_the_whole_file(piece_bytes, dev_head) -> None:
    fmt, whole = read_sentences(str(dev_head), require_heads=False)
    streamed_fmt, pieces = stream_sentences(str(dev_head), require_heads=False, piece_bytes=piece_bytes)
    lists = list(pieces)
    assert streamed_fmt == fmt == "conllu"
    assert rows_and_lines([s for piece in lists for s in piece]) == rows_and_lines(whole)
    if piece_bytes == 5_000:
        assert len(lists) > 50  # many pieces, each ending at a sentence's end


def test_crlf_and_malt_files_in_pieces(tmp_path) -> None:
    """Pieces end at empty lines of CRLF files too, and Malt-TAB files stream the same way."""
    crlf = tmp_path / "crlf.conllu"
    crlf.write_bytes(UD_DEV.read_bytes().replace(b"\n", b"\r\n"))
    _, whole = read_sentences(str(crlf), require_heads=False)
    _, pieces = stream_sentences(str(crlf), require_heads=False, piece_bytes=20_000)
    lists = list(pieces)
    assert len(lists) > 10
    assert rows_and_lines([s for p in lists for s in p]) == rows_and_lines(whole)
    malt = tmp_path / "wsj.malt"
    malt.write_text("".join("".join(f"{w}\t{t}\t{h}\n" for w, t, h in zip(s.forms, s.pos, s.heads)) + "\n"
                            for s in load_dataset("wsj", "test")), encoding="utf-8")
    fmt, whole = read_sentences(str(malt))
    streamed_fmt, pieces = stream_sentences(str(malt), piece_bytes=3_000)
    assert streamed_fmt == fmt == "malt"
    assert rows_and_lines([s for p in pieces for s in p]) == rows_and_lines(whole)


def test_an_error_in_a_late_piece_names_its_line(tmp_path) -> None:
    lines = UD_DEV.read_text(encoding="utf-8").split("\n")
    bad_at = next(i for i in range(len(lines) * 3 // 4, len(lines)) if lines[i][:1].isdigit())
    lines[bad_at] = lines[bad_at].replace("\t", " ", 1)
    broken = tmp_path / "broken.conllu"
    broken.write_text("\n".join(lines), encoding="utf-8")
    with pytest.raises(CorpusError) as whole:
        read_sentences(str(broken), require_heads=False)
    _, pieces = stream_sentences(str(broken), require_heads=False, piece_bytes=10_000)
    with pytest.raises(CorpusError) as streamed:
        list(pieces)
    assert str(streamed.value) == str(whole.value)
    assert f"broken.conllu:{bad_at + 1}:" in str(streamed.value)
    data = UD_DEV.read_bytes()
    latin = tmp_path / "latin.conllu"
    cut = data.index(b"\n\n", len(data) * 3 // 4) + 2
    latin.write_bytes(data[:cut] + "# text = ação\n".encode("latin-1") + data[cut:])
    _, pieces = stream_sentences(str(latin), require_heads=False, piece_bytes=10_000)
    line = data[:cut].count(b"\n") + 1
    with pytest.raises(CorpusError, match=rf"latin.conllu:{line}: not valid utf-8"):
        list(pieces)


@pytest.fixture(scope="module")
def model(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("stream") / "pt.npz"
    parser, _ = train_parser(load_dataset("pt-bosque", "train")[:150], max_passes=2)
    parser.save(path)
    return path


def test_parse_writes_the_same_bytes_in_pieces(tmp_path, model, dev_head, monkeypatch) -> None:
    """``parser parse`` in pieces of 20 KB (and with two jobs, and to stdout) writes what it writes
    with the file in one piece; an error in a late piece leaves no output file."""
    monkeypatch.setattr(inputs, "PIECE_BYTES", 1 << 30)
    assert_ok(run("parser", "parse", model, dev_head, "-o", tmp_path / "whole.conllu", "--jobs", "1"))
    monkeypatch.setattr(inputs, "PIECE_BYTES", 20_000)
    assert_ok(run("parser", "parse", model, dev_head, "-o", tmp_path / "pieces.conllu", "--jobs", "2"))
    expected = (tmp_path / "whole.conllu").read_bytes()
    assert (tmp_path / "pieces.conllu").read_bytes() == expected
    result = run("parser", "parse", model, "-", "--jobs", "1", input=dev_head.read_text(encoding="utf-8"))
    assert_ok(result)
    assert result.stdout.encode("utf-8") == expected
    lines = dev_head.read_text(encoding="utf-8").split("\n")
    lines[len(lines) - 30] = "1\tonly\tthree"
    broken = tmp_path / "broken.conllu"
    broken.write_text("\n".join(lines), encoding="utf-8")
    message = error_line(run("parser", "parse", model, broken, "-o", tmp_path / "out.conllu"))
    assert f"broken.conllu:{len(lines) - 29}:" in message
    assert not (tmp_path / "out.conllu").exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".out")] == []


def test_tag_writes_the_same_bytes_in_pieces(tmp_path, monkeypatch) -> None:
    """``tagger tag`` of a CoNLL-U file in pieces of 20 KB on two jobs writes what it writes in one
    piece on one job (CoNLL and word/TAG text output)."""
    from egnlp.tagger_training import train_crf_tagger

    train = load_dataset("pt-bosque", "train")[:150]
    tagger, _ = train_crf_tagger([s.forms for s in train], [s.cpos for s in train], column="upos", max_passes=3)
    tagger.save(tmp_path / "upos.npz")
    for to in ("conll", "text"):
        monkeypatch.setattr(inputs, "PIECE_BYTES", 1 << 30)
        assert_ok(run("tagger", "tag", tmp_path / "upos.npz", UD_DEV, "--to", to, "-o", tmp_path / f"whole.{to}",
                      "--jobs", "1"))
        monkeypatch.setattr(inputs, "PIECE_BYTES", 20_000)
        assert_ok(run("tagger", "tag", tmp_path / "upos.npz", UD_DEV, "--to", to, "-o", tmp_path / f"pieces.{to}",
                      "--jobs", "2"))
        assert (tmp_path / f"pieces.{to}").read_bytes() == (tmp_path / f"whole.{to}").read_bytes()
