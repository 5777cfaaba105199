"""The Tagger as an NLTK TaggerI and the Parser as an NLTK ParserI giving DependencyGraphs.

Small models are trained once per module: a CRF POS tagger on 200 ``ptb-pos``
sentences (Penn Treebank tags, as the ``wsj`` parser reads), a CRF chunker on
60 CoNLL-2000 sentences, an unlabeled ``wsj`` parser (it reads XPOS only) and
a labeled ``es`` parser (it reads UPOS and XPOS).  Set NLTK_DATA to the
project's NLTK data folder.
"""

from __future__ import annotations

import nltk
import pytest
from nltk.corpus import conll2000
from nltk.parse import DependencyGraph
from nltk.parse.api import ParserI
from nltk.tag.api import TaggerI

from egnlp.parser_training import train_parser
from egnlp.corpora import Sentence, load_dataset, load_sentences
from egnlp.parser.parser_model import Parser
from egnlp.tagger import Tagger
from egnlp.tagger_training import train_crf_tagger


@pytest.fixture(scope="module")
def tagger() -> Tagger:
    train = load_sentences("ptb-pos", "train")[:200]
    model, _ = train_crf_tagger([s.forms for s in train], [s.pos for s in train], max_passes=8)
    return model


@pytest.fixture(scope="module")
def gold() -> list[list[tuple[str, str]]]:
    """Gold (word, tag) sentences of the ptb-pos test split."""
    return [list(zip(s.forms, s.pos)) for s in load_sentences("ptb-pos", "test")[:40]]


@pytest.fixture(scope="module")
def chunker() -> Tagger:
    train = conll2000.iob_sents("train.txt")[:60]
    model, _ = train_crf_tagger([[w for w, _, _ in s] for s in train], [[c for _, _, c in s] for s in train],
                                [[p for _, p, _ in s] for s in train], max_passes=8)
    return model


@pytest.fixture(scope="module")
def wsj_parser() -> Parser:
    parser, _ = train_parser(load_dataset("wsj", "train")[:60], root="single", max_passes=3)
    return parser


@pytest.fixture(scope="module")
def es_parser() -> Parser:
    parser, _ = train_parser(load_dataset("es", "train")[:40], max_passes=2)
    return parser


@pytest.fixture(scope="module")
def wsj_test() -> list[Sentence]:
    return [s for s in load_dataset("wsj", "test") if 3 <= len(s) <= 40][:15]


def graph_heads(graph: DependencyGraph) -> list[int]:
    return [graph.nodes[i]["head"] for i in range(1, len(graph.nodes))]


# --- the tagger -------------------------------------------------------------------------------------


def test_tagger_is_an_nltk_tagger(tagger: Tagger) -> None:
    assert isinstance(tagger, TaggerI)


def test_tag_a_list_of_tokens_and_a_string(tagger: Tagger) -> None:
    tokens = ["The", "company", "said", "its", "profit", "rose", "."]
    pairs = tagger.tag(tokens)
    assert [w for w, _ in pairs] == tokens
    assert [t for _, t in pairs] == tagger.tag_tokens(tokens)
    assert pairs[0] == ("The", "DT") and pairs[-1] == (".", ".")
    text = "The company said its profit rose. Shares fell."
    assert tagger.tag(text) == [pair for sent in tagger.tag_sentences(text) for pair in sent]
    assert tagger.tag([]) == [] and tagger.tag("") == []


def test_tag_sents_batches_lists_strings_and_generators(tagger: Tagger, gold) -> None:
    sents = [[w for w, _ in s] for s in gold[:5]]
    tagged = tagger.tag_sents(sents)
    assert tagged == [tagger.tag(s) for s in sents]
    assert tagger.tag_sents(iter(sents)) == tagged
    mixed = tagger.tag_sents([sents[0], "Prices fell."])
    assert mixed[0] == tagged[0] and mixed[1] == tagger.tag("Prices fell.")


def test_accuracy_is_nltks_token_accuracy(tagger: Tagger, gold) -> None:
    predicted = tagger.predict([[w for w, _ in s] for s in gold])
    pairs = [(g, p) for s, pred in zip(gold, predicted) for (_, g), p in zip(s, pred)]
    expected = sum(g == p for g, p in pairs) / len(pairs)
    assert tagger.accuracy(gold) == pytest.approx(expected)
    # Better than tagging every token with the commonest tag of the test set.
    counts = nltk.FreqDist(g for g, _ in pairs)
    assert tagger.accuracy(gold) > counts[counts.max()] / len(pairs) + 0.3
    assert tagger.accuracy(gold) > 0.8


def test_chunker_takes_word_pos_pairs_as_nltk_chunk_taggers_do(chunker: Tagger, tagger: Tagger) -> None:
    test = conll2000.iob_sents("test.txt")[:20]
    gold = [[((w, p), c) for w, p, c in s] for s in test]
    tagged = chunker.tag([(w, p) for w, p, _ in test[0]])
    assert [token for token, _ in tagged] == [(w, p) for w, p, _ in test[0]]
    assert [c for _, c in tagged] == chunker.tag_tokens([w for w, _, _ in test[0]], [p for _, p, _ in test[0]])
    predicted = chunker.predict([[w for w, _, _ in s] for s in test], [[p for _, p, _ in s] for s in test])
    right = sum(c == p for s, pred in zip(test, predicted) for (_, _, c), p in zip(s, pred))
    assert chunker.accuracy(gold) == pytest.approx(right / sum(len(s) for s in test))
    words = chunker.tag(["The", "cat", "sat", "."], pos_tagger=tagger)
    assert [w for w, _ in words] == ["The", "cat", "sat", "."] and all(c in chunker.labels for _, c in words)


@pytest.mark.parametrize("tokens, message", [
    ([["The"]], "token 1 is \\['The'\\].*use tag_sents"),
    (["The", 3], "token 2 is 3 \\(int\\)"),
    ([("The", "DT")], "token 1 is \\('The', 'DT'\\).*list of words"),
    (5, "sentence 1 is 5"),
])
def test_tag_rejects_what_is_not_tokens(tagger: Tagger, tokens, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        tagger.tag(tokens)


def test_chunker_without_pos_tags_says_so(chunker: Tagger) -> None:
    with pytest.raises(ValueError, match="reads POS tags"):
        chunker.tag(["The", "cat"])
    with pytest.raises(ValueError, match="token 2 .*\\(word, POS\\) pairs"):
        chunker.tag([("The", "DT"), "cat"])


# --- the parser -------------------------------------------------------------------------------------


def test_parser_is_an_nltk_parser(wsj_parser: Parser) -> None:
    assert isinstance(wsj_parser, ParserI)
    assert wsj_parser.tag_columns == ("xpos",)


def test_parse_tagged_tokens_gives_the_parsers_own_trees(wsj_parser: Parser, wsj_test) -> None:
    own = wsj_parser.parse_corpus(wsj_test)
    for sentence, parsed in zip(wsj_test, own):
        graphs = list(wsj_parser.parse(list(zip(sentence.forms, sentence.pos))))
        assert len(graphs) == 1 and isinstance(graphs[0], DependencyGraph)
        graph = graphs[0]
        assert graph_heads(graph) == parsed.heads
        assert [graph.nodes[i]["word"] for i in range(1, len(sentence) + 1)] == sentence.forms
        assert [graph.nodes[i]["tag"] for i in range(1, len(sentence) + 1)] == sentence.pos
        assert [graph.nodes[i]["rel"] for i in range(1, len(sentence) + 1)] == \
            ["ROOT" if h == 0 else "_" for h in parsed.heads]
        assert graph.root["head"] == 0 and graph.tree().label() == graph.root["word"]


def test_parse_sents_gives_one_graph_per_sentence(wsj_parser: Parser, wsj_test) -> None:
    own = wsj_parser.parse_corpus(wsj_test)
    results = wsj_parser.parse_sents([list(zip(s.forms, s.pos)) for s in wsj_test])
    graphs = [list(trees) for trees in results]
    assert [len(g) for g in graphs] == [1] * len(wsj_test)
    assert [graph_heads(g[0]) for g in graphs] == [s.heads for s in own]
    # NLTK's derived methods work on top of parse.
    assert graph_heads(wsj_parser.parse_one(list(zip(wsj_test[0].forms, wsj_test[0].pos)))) == own[0].heads
    assert len(wsj_parser.parse_all(list(zip(wsj_test[0].forms, wsj_test[0].pos)))) == 1


def test_parse_untagged_tokens_with_a_tagger(wsj_parser: Parser, tagger: Tagger, wsj_test, tmp_path) -> None:
    words = [s.forms for s in wsj_test[:5]]
    tagged = tagger.tag_sents(words)
    expected = [graph_heads(next(wsj_parser.parse(pairs))) for pairs in tagged]
    assert [graph_heads(next(wsj_parser.parse(w, tagger=tagger))) for w in words] == expected
    path = tmp_path / "wsj.npz"
    wsj_parser.save(path)
    loaded = Parser.load(path, tagger=tagger)
    assert loaded.tagger is tagger
    graphs = [next(trees) for trees in loaded.parse_sents(words)]
    assert [graph_heads(g) for g in graphs] == expected
    assert [[g.nodes[i]["tag"] for i in range(1, len(w) + 1)] for g, w in zip(graphs, words)] == \
        [[t for _, t in pairs] for pairs in tagged]


def test_parse_with_any_nltk_tagger(wsj_parser: Parser) -> None:
    class EveryWordNoun(TaggerI):
        def tag(self, tokens):
            return [(w, "NN") for w in tokens]

    graph = next(wsj_parser.parse(["Prices", "fell", "sharply"], tagger=EveryWordNoun()))
    assert graph_heads(graph) == graph_heads(next(wsj_parser.parse([("Prices", "NN"), ("fell", "NN"),
                                                                   ("sharply", "NN")])))


def test_parse_a_corpus_keeps_returning_sentences(wsj_parser: Parser, wsj_test) -> None:
    parsed = wsj_parser.parse(wsj_test)
    assert isinstance(parsed, list) and all(isinstance(s, Sentence) for s in parsed)
    assert [s.heads for s in parsed] == wsj_parser.predict_heads(wsj_test)
    assert wsj_parser.parse([]) == []


def test_empty_sentence_gives_an_empty_graph(wsj_parser: Parser) -> None:
    graphs = [next(trees) for trees in wsj_parser.parse_sents([[("Hi", "UH")], [], [("Go", "VB")]])]
    assert [len(g.nodes) for g in graphs] == [2, 1, 2]


def test_labeled_parser_on_two_tag_columns(es_parser: Parser) -> None:
    assert es_parser.tag_columns == ("upos", "xpos") and es_parser.labeler is not None
    test = [s for s in load_dataset("es", "test") if len(s) <= 30][:5]
    # Triples carry no LEMMA and FEATS: the parser's own output on the same columns.
    bare = [Sentence(tuple((r[0], r[1], "_", r[3], r[4], "_", "_", "_", "_", "_") for r in s.rows)) for s in test]
    for sentence, parsed in zip(test, es_parser.parse_corpus(bare)):
        graph = next(es_parser.parse(list(zip(sentence.forms, sentence.cpos, sentence.pos))))
        assert graph_heads(graph) == parsed.heads
        assert [graph.nodes[i]["rel"] for i in range(1, len(sentence) + 1)] == parsed.deprels
        assert [graph.nodes[i]["ctag"] for i in range(1, len(sentence) + 1)] == sentence.cpos
    # A Sentence is parsed with all its columns.
    for sentence, parsed in zip(test, es_parser.parse_corpus(test)):
        graph = next(es_parser.parse(sentence))
        assert graph_heads(graph) == parsed.heads
        assert [graph.nodes[i]["rel"] for i in range(1, len(sentence) + 1)] == parsed.deprels
        assert [graph.nodes[i]["lemma"] for i in range(1, len(sentence) + 1)] == sentence.lemmas
    with pytest.raises(ValueError, match="two tag columns, UPOS and XPOS, and \\(word, tag\\) pairs give one"):
        es_parser.parse([("el", "da"), ("gato", "nc")])


def test_two_columns_need_two_taggers(es_parser: Parser, tagger: Tagger) -> None:
    words = ["el", "gato"]
    with pytest.raises(ValueError, match="one tagger fills one \\(XPOS \\(POSTAG\\)\\).*'upos'"):
        es_parser.parse(words, tagger=tagger)
    with pytest.raises(ValueError, match="no tagger for UPOS"):
        es_parser.parse(words, tagger={"xpos": tagger})
    with pytest.raises(ValueError, match="keys of a mapping of taggers are 'upos' and 'xpos', not 'pos'"):
        es_parser.parse(words, tagger={"pos": tagger, "xpos": tagger})
    graph = next(es_parser.parse(words, tagger={"upos": tagger, "xpos": tagger}))
    tags = [t for _, t in tagger.tag(words)]
    assert [graph.nodes[i]["ctag"] for i in (1, 2)] == tags == [graph.nodes[i]["tag"] for i in (1, 2)]


def test_upos_parser_refuses_an_xpos_tagger(tagger: Tagger) -> None:
    parser, _ = train_parser(load_dataset("es", "train")[:20], max_passes=1, tags="upos", labels=False)
    assert parser.tag_columns == ("upos",)
    with pytest.raises(ValueError, match="reads UPOS \\(CPOSTAG\\) tags; the tagger predicts XPOS"):
        parser.parse(["el", "gato"], tagger=tagger)
    graph = next(parser.parse([("el", "d"), ("gato", "n")]))
    assert [graph.nodes[i]["ctag"] for i in (1, 2)] == ["d", "n"]
    assert [graph.nodes[i]["tag"] for i in (1, 2)] == ["_", "_"]

    class UposTagger(TaggerI):
        column = "upos"

        def tag(self, tokens):
            return [(w, "d" if w == "el" else "n") for w in tokens]

    tagged = next(parser.parse(["el", "gato"], tagger=UposTagger()))
    assert [tagged.nodes[i]["ctag"] for i in (1, 2)] == ["d", "n"]
    assert graph_heads(tagged) == graph_heads(graph)


@pytest.mark.parametrize("sentence, message", [
    ([["The"]], "token 1 is \\['The'\\].*use parse_sents"),
    (["The", "cat"], "untagged tokens and no tagger: this parser reads XPOS \\(POSTAG\\) tags"),
    (["The", ("cat", "NN")], "token 2 .* among words"),
    ([("The", "DT"), ("big cat", "NN")], "word 'big cat' .* of token 2"),
    ([("The", "")], "tag '' .* of token 1"),
    ("The cat sat.", "is not a sentence"),
    ([("a", "b", "c", "d")], "token 1 is \\('a', 'b', 'c', 'd'\\)"),
])
def test_parse_errors_say_what_is_wrong(wsj_parser: Parser, sentence, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        wsj_parser.parse(sentence)


def test_a_chunker_is_no_tagger_for_the_parser(wsj_parser: Parser, chunker: Tagger) -> None:
    with pytest.raises(ValueError, match="predicts 'chunk' tags, not part-of-speech tags"):
        wsj_parser.parse(["The", "cat"], tagger=chunker)
    with pytest.raises(ValueError, match="not a tagger"):
        wsj_parser.parse(["The", "cat"], tagger=object())


# --- the NLTK bases come with NLTK --------------------------------------------------------------------

LAZY_SCRIPT = r"""
import sys
from egnlp.parser.parser_model import Parser
from egnlp.tagger import Tagger
import egnlp.cli  # the whole command line
assert "nltk" not in sys.modules, "importing egnlp imported NLTK"
tagger = Tagger.load(sys.argv[1])
parser = Parser.load(sys.argv[2])
print(tagger.tag(["The", "cat", "sat", "."]))          # a method of Tagger itself: still no NLTK
assert "nltk" not in sys.modules
print(tagger.accuracy([[("The", "DT"), ("cat", "NN")]]))  # TaggerI's: imports NLTK and attaches it
from nltk.parse.api import ParserI
from nltk.tag.api import TaggerI
assert isinstance(tagger, TaggerI) and isinstance(parser, ParserI)
assert Parser.__mro__[1] is ParserI and Tagger.__mro__[1] is TaggerI
graph = parser.parse_one(["The", "cat", "sat", "."], tagger=tagger)  # ParserI's method
print(len(graph.nodes))
"""


def test_nltk_bases_attach_when_nltk_comes(tmp_path, tagger, wsj_parser) -> None:
    """egnlp imports without NLTK (0.7 s and 75 MB saved per command); the TaggerI / ParserI bases
    are attached when NLTK is imported, and a TaggerI method used first imports it."""
    import subprocess
    import sys

    tagger.save(tmp_path / "t.npz")
    wsj_parser.save(tmp_path / "p.npz")
    done = subprocess.run([sys.executable, "-c", LAZY_SCRIPT, str(tmp_path / "t.npz"), str(tmp_path / "p.npz")],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.split("\n")
    assert lines[0].startswith("[('The', ")
    assert 0.0 <= float(lines[1]) <= 1.0
    assert lines[2] == "5"  # the root node and four words


def test_parse_one_of_parser_i(wsj_parser, tagger) -> None:
    """ParserI's parse_one (not defined by Parser) gives the same tree as parse."""
    words = ["The", "company", "said", "it", "expects", "growth", "."]
    one = wsj_parser.parse_one(words, tagger=tagger)
    assert graph_heads(one) == graph_heads(next(wsj_parser.parse(words, tagger=tagger)))
