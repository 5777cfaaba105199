"""The Brown, CoNLL-2000 and Penn Treebank readers, which find sentences and trees with NLTK's block readers.

They must give what NLTK's own corpus readers give on the real files, and
keep egnlp's line numbers and messages where NLTK's readers have none: after
whitespace-only lines, CRLF line ends, repeated sentences, separators that
are whitespace to Python but not to NLTK's regular expressions.
"""

from __future__ import annotations

import nltk
import pytest

from egnlp.corpora import CorpusError
from egnlp.corpora.tagging import TRACE_TAG, parse_brown, parse_conll2000, parse_treebank_tags, strip_brown_tag


def nltk_text(package: str, name: str) -> str:
    with nltk.data.find(f"corpora/{package}/{name}").open() as handle:
        return handle.read().decode("ascii")


def lines_and_forms(sentences) -> list[tuple[int, list[str]]]:
    return [(s.line, s.forms) for s in sentences]


# --- the real files: what NLTK's corpus readers give -------------------------------------------------------


def test_conll2000_as_nltk_reads_it() -> None:
    sentences = parse_conll2000(nltk_text("conll2000", "test.txt"), "test.txt")
    expected = nltk.corpus.conll2000.iob_sents("test.txt")
    assert len(sentences) == len(expected) == 2012
    assert [list(zip(s.forms, s.pos, s.chunks)) for s in sentences] == [list(s) for s in expected]


@pytest.mark.parametrize("document", ["ca01", "cg22", "cr09"])
def test_brown_as_nltk_reads_it(document: str) -> None:
    sentences = parse_brown(nltk_text("brown", document), document)
    expected = nltk.corpus.brown.tagged_sents(document)
    assert [list(zip(s.forms, s.pos)) for s in sentences] == [[(w, strip_brown_tag(t)) for w, t in s]
                                                              for s in expected]
    text_lines = nltk_text("brown", document).split("\n")
    assert all(text_lines[s.line - 1].split()[0].rpartition("/")[0] == s.forms[0] for s in sentences)


@pytest.mark.parametrize("number", [1, 3, 199])
def test_treebank_as_nltk_reads_it(number: int) -> None:
    name = f"wsj_{number:04d}.mrg"
    text = nltk_text("treebank", f"combined/{name}")
    sentences = parse_treebank_tags(text, name)
    expected = [[(w, t) for w, t in s if t != TRACE_TAG] for s in nltk.corpus.treebank.tagged_sents(name)]
    assert [list(zip(s.forms, s.pos)) for s in sentences] == expected
    lines = text.split("\n")
    assert all(lines[s.line - 1].lstrip().startswith("(") for s in sentences)


# --- line numbers and messages --------------------------------------------------------------------------


def test_conll2000_lines_after_blank_and_repeated_sentences() -> None:
    sentence = "The DT B-NP\ndog NN I-NP\n"
    text = "\n \t\n" + sentence + "\n\x0b\n" + sentence + "\n" + sentence.replace("\n", "\r\n") + "\n" + "a DT B-NP"
    assert lines_and_forms(parse_conll2000(text, "x")) == [
        (3, ["The", "dog"]), (7, ["The", "dog"]), (10, ["The", "dog"]), (13, ["a"])]
    with pytest.raises(CorpusError, match=r"^x:16: expected 3 space-separated columns \(word, POS, chunk\), found 2$"):
        parse_conll2000(text + "\n\nb\x1cDT B-NP\nc DT\n", "x")


def test_brown_lines_and_tokens() -> None:
    text = "\n\tThe/at dog/nn\n\tThe/at dog/nn\n  \n\tit/pps ran/vbd\x1cfast/rb\r\n\n"
    assert lines_and_forms(parse_brown(text, "x")) == [(2, ["The", "dog"]), (3, ["The", "dog"]),
                                                      (5, ["it", "ran", "fast"])]
    assert parse_brown("1/2/cd-tl\n", "x")[0].pos == ["CD"] and parse_brown("1/2/cd\n", "x")[0].forms == ["1/2"]
    for token in ("dog", "dog/", "/nn"):
        with pytest.raises(CorpusError, match=f"^x:5: token '{token}' is not word/tag$"):
            parse_brown(text.replace("it/pps", token), "x")


def test_treebank_lines_leaves_and_errors() -> None:
    tree = "( (S (NP-SBJ (-NONE- *-1) )\n  (VP (VBZ is) ( JJ\tok ) )\n  (. .) ))\n"
    text = "\n" + tree + tree + "\n(UH c)(UH d)\n\x1c( (NP (NN b) ))\n"
    assert lines_and_forms(parse_treebank_tags(text, "x")) == [
        (2, ["is", "ok", "."]), (5, ["is", "ok", "."]), (9, ["c"]), (9, ["d"]), (10, ["b"])]
    for bad, message in [
        ("x (NN a)\n", "x:1: expected '(' to start a tree, found 'x'"),
        ("(NN a)\n) (NN b)\n", "x:2: expected '(' to start a tree, found ')'"),
        ("(NN a)\n\n( (S (-NONE- *) ))\n", "x:3: tree has no words besides traces"),
        ("(NN a)\n( (S (NN a) )\n(NN b)\n", "x:2: tree is not closed"),
        ("  \n", "x: no sentences found"),
    ]:
        with pytest.raises(CorpusError) as caught:
            parse_treebank_tags(bad, "x")
        assert str(caught.value) == message
