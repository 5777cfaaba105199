"""Tests of ``egnlp parser show``: one sentence of a CoNLL file drawn as an SVG tree.

Real sentences come from the UD files of ``$EGNLP_UD_DIR`` (CoNLL-U, labelled)
and the ``es`` data set (CoNLL-X, through NLTK's data path). A prediction is
made from a gold sentence by giving one word another head (a word without
dependents, so the tree stays a tree) and another word another label.
"""

from __future__ import annotations

import os
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from egnlp.corpora import Sentence, load_dataset, read_conll, write_conll
from egnlp.show import Arc, arc_levels, render_svg, wrong_arcs

from cli_helpers import assert_ok, error_line, run

SVG = "{http://www.w3.org/2000/svg}"
UD_FILE = Path(os.environ["EGNLP_UD_DIR"]) / "pt_bosque-ud-dev.conllu"


@pytest.fixture(scope="module")
def ud() -> list[Sentence]:
    return read_conll(UD_FILE)


def arcs_of(tree: ET.Element) -> list[ET.Element]:
    """The arc elements of one drawn tree."""
    return [g for g in tree.iter(f"{SVG}g") if "arc" in g.get("class", "").split()]


def trees_of(svg: str) -> list[ET.Element]:
    """The drawn trees of an SVG (gold first), after checking that it is one well-formed SVG document."""
    root = ET.fromstring(svg)
    assert root.tag == f"{SVG}svg"
    assert float(root.get("width")) > 0 and float(root.get("height")) > 0
    return [g for g in root.iter(f"{SVG}g") if g.get("class") == "tree"]


def marks(tree: ET.Element) -> dict[int, str]:
    """{dependent: mark} of the arcs of a tree that carry a mark besides 'arc'."""
    out = {}
    for g in arcs_of(tree):
        classes = [c for c in g.get("class").split() if c != "arc"]
        if classes:
            out[int(g.get("data-dependent"))] = " ".join(classes)
    return out


def leaf_and_new_head(sentence: Sentence) -> tuple[int, int]:
    """A word without dependents (1-based) and a head for it that is neither its own nor itself."""
    heads = sentence.heads
    for word in range(1, len(sentence) + 1):
        if word not in heads and heads[word - 1] != 0:
            new = next(h for h in range(1, len(sentence) + 1) if h not in (word, heads[word - 1]))
            return word, new
    raise AssertionError("no leaf")


def predicted(sentence: Sentence) -> tuple[Sentence, int, int]:
    """A copy of the sentence with one head and one other label changed: (copy, reattached word, relabelled word)."""
    word, new_head = leaf_and_new_head(sentence)
    heads, labels = list(sentence.heads), list(sentence.deprels)
    heads[word - 1] = new_head
    relabelled = next(i for i in range(1, len(sentence) + 1) if i != word)
    labels[relabelled - 1] = "xcomp" if labels[relabelled - 1] != "xcomp" else "obj"
    return sentence.with_heads(heads, labels), word, relabelled


def long_sentence(sentences: list[Sentence], minimum: int = 15) -> int:
    """The 1-based number of the first sentence with at least ``minimum`` words."""
    return next(i for i, s in enumerate(sentences, start=1) if len(s) >= minimum)


# --- the drawing ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("source", ["ud", "es"])
def test_one_arc_per_word_with_its_label(source: str, ud: list[Sentence]) -> None:
    sentences = ud if source == "ud" else load_dataset("es", "dev")
    sentence = sentences[long_sentence(sentences, 25) - 1]
    (tree,) = trees_of(render_svg(sentence))
    arcs = arcs_of(tree)
    assert len(arcs) == len(sentence)
    assert sorted(int(g.get("data-dependent")) for g in arcs) == list(range(1, len(sentence) + 1))
    assert [int(g.get("data-head")) for g in sorted(arcs, key=lambda g: int(g.get("data-dependent")))] == sentence.heads
    labels = [t.text for g in arcs for t in g.iter(f"{SVG}text") if t.get("class") == "label"]
    assert sorted(labels) == sorted(label for label in sentence.deprels if label != "_")  # '_' is not drawn
    assert labels
    words = [t.text for t in tree.iter(f"{SVG}text") if t.get("class") == "word"]
    assert words == sentence.forms
    assert marks(tree) == {}
    assert all(len(g.findall(f"{SVG}path")) == 1 for g in arcs)


def test_wrong_arcs_are_marked_exactly_where_gold_and_prediction_differ(ud: list[Sentence]) -> None:
    gold = ud[long_sentence(ud) - 1]
    pred, reattached, relabelled = predicted(gold)
    expected = {reattached: "wrong-head", relabelled: "wrong-label"}
    assert wrong_arcs(gold, pred) == expected
    gold_tree, pred_tree = trees_of(render_svg(gold, pred))
    assert len(arcs_of(gold_tree)) == len(arcs_of(pred_tree)) == len(gold)
    assert marks(pred_tree) == expected
    assert marks(gold_tree) == {reattached: "missed", relabelled: "missed"}
    (wrong_head,) = [g for g in arcs_of(pred_tree) if int(g.get("data-dependent")) == reattached]
    assert int(wrong_head.get("data-head")) == pred.heads[reattached - 1] != gold.heads[reattached - 1]
    assert "url(#arrow-wrong)" in wrong_head.find(f"{SVG}path").get("marker-end")


def test_unlabelled_prediction_is_judged_on_heads_only(ud: list[Sentence]) -> None:
    gold = ud[long_sentence(ud) - 1]
    pred, reattached, _ = predicted(gold)
    unlabelled = pred.with_heads(pred.heads)  # DEPREL '_' on every word
    assert wrong_arcs(gold, unlabelled) == {reattached: "wrong-head"}
    _, pred_tree = trees_of(render_svg(gold, unlabelled))
    assert marks(pred_tree) == {reattached: "wrong-head"}
    assert not [t for t in pred_tree.iter(f"{SVG}text") if t.get("class") == "label"]


def test_nested_arcs_are_drawn_higher() -> None:
    # 1 <- 3 -> 2, 3 -> 5 -> 4, root 3: the arc 3->1 spans 3->2, and 3->5 spans 5->4
    arcs = [Arc(1, 3, "a"), Arc(2, 3, "b"), Arc(3, 0, "root"), Arc(4, 5, "c"), Arc(5, 3, "d")]
    assert arc_levels(arcs) == {2: 1, 4: 1, 1: 2, 5: 2}


def test_text_is_escaped_and_kept_to_xml_characters(ud: list[Sentence]) -> None:
    sentence = ud[0]
    rows = [list(row) for row in sentence.rows]
    rows[0][1] = 'a<b>&"c\'\ufffe'
    rows[0][7] = "x&y"
    odd = Sentence(rows=tuple(tuple(row) for row in rows), source="<odd & file>")
    (tree,) = trees_of(render_svg(odd))
    words = [t.text for t in tree.iter(f"{SVG}text") if t.get("class") == "word"]
    assert words[0] == 'a<b>&"c\'\ufffd'
    assert "x&y" in [t.text for t in tree.iter(f"{SVG}text") if t.get("class") == "label"]


# --- the command ----------------------------------------------------------------------------------------


def test_cli_draws_a_sentence_of_a_real_file(tmp_path: Path, ud: list[Sentence]) -> None:
    number = long_sentence(ud, 20)
    out = tmp_path / "tree.svg"
    result = run("parser", "show", UD_FILE, "--sentence", number, "-o", out)
    assert_ok(result)
    assert f"sentence {number} (" in result.stderr and str(out) in result.stderr
    (tree,) = trees_of(out.read_text(encoding="utf-8"))
    assert len(arcs_of(tree)) == len(ud[number - 1])
    assert [p.name for p in tmp_path.iterdir()] == ["tree.svg"]  # no temporary file left
    to_stdout = run("parser", "show", UD_FILE, "-n", number)
    assert_ok(to_stdout)
    assert to_stdout.stdout == out.read_text(encoding="utf-8")
    from_stdin = run("parser", "show", "-", "-n", number, "-o", "-", input=UD_FILE.read_text(encoding="utf-8"))
    assert_ok(from_stdin)
    assert len(arcs_of(trees_of(from_stdin.stdout)[0])) == len(ud[number - 1])
    assert "<stdin>:" in from_stdin.stderr


def test_cli_draws_gold_and_prediction(tmp_path: Path) -> None:
    gold_sentences = load_dataset("es", "test")[:30]
    number = long_sentence(gold_sentences)
    pred, reattached, relabelled = predicted(gold_sentences[number - 1])
    gold_file, pred_file = tmp_path / "gold.conll", tmp_path / "pred.conll"
    write_conll(gold_file, gold_sentences)
    write_conll(pred_file, [pred if i == number - 1 else s for i, s in enumerate(gold_sentences)])
    expected = {reattached: "wrong-head", relabelled: "wrong-label"}
    for args in ([gold_file, pred_file], [pred_file, "--gold", gold_file]):
        out = tmp_path / "both.svg"
        result = run("parser", "show", *args, "--sentence", number, "-o", out)
        assert_ok(result)
        assert "2 wrong arcs" in result.stderr
        gold_tree, pred_tree = trees_of(out.read_text(encoding="utf-8"))
        assert marks(pred_tree) == expected
        assert set(marks(gold_tree)) == set(expected)
    other = tmp_path / "other.svg"
    assert_ok(run("parser", "show", gold_file, pred_file, "--sentence", number + 1, "-o", other))
    assert all(marks(tree) == {} for tree in trees_of(other.read_text(encoding="utf-8")))


def test_cli_errors(tmp_path: Path, ud: list[Sentence]) -> None:
    sentences = ud[:3]
    gold = tmp_path / "gold.conllu"
    write_conll(gold, sentences)
    out = tmp_path / "tree.svg"
    out.write_text("kept", encoding="utf-8")

    def error(*args: object) -> str:
        line = error_line(run("parser", "show", *args, "-o", out))
        assert out.read_text(encoding="utf-8") == "kept"  # a failed run leaves the output alone
        return line

    assert error(gold, "--sentence", 4) == f"error: {gold}: no sentence 4; the file has 3 sentences (1..3)"
    assert error(gold, "--sentence", 0) == f"error: {gold}: no sentence 0; the file has 3 sentences (1..3)"
    empty = tmp_path / "empty.conllu"
    empty.write_text("\n\n", encoding="utf-8")
    assert error(empty) == f"error: {empty}: no sentences found"
    assert error(tmp_path / "missing.conllu") == f"error: {tmp_path / 'missing.conllu'}: no such file"

    shorter = tmp_path / "shorter.conllu"
    write_conll(shorter, sentences[:2])
    assert error(gold, shorter) == (f"error: {gold} has 3 sentences but {shorter} has 2; gold and prediction "
                                    "must hold the same sentences")
    shifted = tmp_path / "shifted.conllu"
    write_conll(shifted, [sentences[1], sentences[0], sentences[2]])
    message = error(gold, shifted, "--sentence", 1)
    assert message.startswith(f"error: {gold}:{sentences[0].line}") and f"vs {shifted}:" in message
    assert "in gold but" in message or "tokens but the prediction has" in message
    assert error("-", "-") == "error: gold and prediction cannot both be read from stdin ('-')"
    assert error(gold, gold, "--gold", gold) == ("error: give the gold file either first (GOLD PRED) or with "
                                                 "--gold, not both")

    unparsed = tmp_path / "unparsed.conllu"
    write_conll(unparsed, [s.with_heads([0] * len(s)) for s in sentences])
    text = unparsed.read_text(encoding="utf-8")
    rows = [line.split("\t") for line in text.split("\n")]
    unparsed.write_text("\n".join("\t".join(r[:6] + ["_"] + r[7:]) if len(r) == 10 else "\t".join(r) for r in rows),
                        encoding="utf-8")
    assert "there is no tree to draw" in error(unparsed, "--sentence", 2)
