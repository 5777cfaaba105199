"""Confidence out: each word's head and tag marginals, and ``--confidence`` writing them to MISC.

- MISC: a key set among the other entries, UD's sorted order kept (:func:`misc_with`);
- the parser's head marginals against brute force (every tree of the decoder's space: projective or
  not, one root child or any, final punctuation on the root's child, pruned arcs out) for first-,
  second- and third-order models on sentences of up to five words, and finite on 120 words;
- the taggers' label marginals against brute force (every label sequence; the maxent tagger's as the
  product of its local distributions), and finite on 200 tokens;
- ``parser parse``, ``tagger tag`` and ``parse-text`` with ``--confidence`` on UD files: valid CoNLL-U
  whose MISC carries the probabilities, the rest byte for byte the output without it, which is
  ``format_parsed`` of the predictions as before; the same with ``--jobs 2``; outputs without MISC refused.
"""

from __future__ import annotations

import itertools
import os
import re
from pathlib import Path

import numpy as np
import pytest
from scipy.special import logsumexp

from egnlp.corpora import Sentence, format_parsed, is_projective, load_dataset, parse_conll, write_conll
from egnlp.corpora.sentence import COL10, DEPREL, HEAD, ID, misc_with, probability_text
from egnlp.features.predicates import BOS, token_predicates
from egnlp.parser import Parser
from egnlp.parser.eisner import inside_outside
from egnlp.parser.eisner_grandparents import grand_marginals, grand_parts
from egnlp.parser.eisner_siblings import arc_marginals, n_sibling_parts, sibling_marginals, tree_parts
from egnlp.parser.nonprojective import mtt_marginals
from egnlp.parser.parser_model import final_punct
from egnlp.parser.trees import final_on_root_marginals
from egnlp.parser_training import train_parser
from egnlp.pipeline import parse_text, to_conllu
from egnlp.tagger import Tagger
from egnlp.tagger.maxent import history_predicates
from egnlp.tagger_training import tagged_columns, train_tagger

from cli_helpers import assert_ok, run, usage_line
from ud_checks import udvalidate

UD = Path(os.environ["EGNLP_UD_DIR"])
PT_TEXT = ('O Sr. Silva chegou às 9h30 ao escritório. Ele disse: "Hoje não há reunião!" Depois comprou pão, '
           'leite e café.')


# --- MISC ------------------------------------------------------------------------------------------


def test_misc_with_sets_a_key_among_the_others_in_sorted_order() -> None:
    assert misc_with("_", "HeadProb", "0.5") == "HeadProb=0.5"
    assert misc_with("SpaceAfter=No", "HeadProb", "0.5") == "HeadProb=0.5|SpaceAfter=No"
    assert misc_with("SpaceAfter=No", "UPosProb", "0.5") == "SpaceAfter=No|UPosProb=0.5"
    assert misc_with("HeadProb=0.1|SpaceAfter=No", "HeadProb", "0.5") == "HeadProb=0.5|SpaceAfter=No"
    assert misc_with("gloss=a|Translit=b", "HeadProb", "1") == "gloss=a|HeadProb=1|Translit=b"  # case-insensitive
    assert misc_with("Translit=a|Gloss=b", "HeadProb", "1") == "HeadProb=1|Translit=a|Gloss=b"  # order kept
    assert probability_text(1.0 + 1e-15) == "1.0000" and probability_text(-1e-17) == "0.0000"
    assert probability_text(0.93124) == "0.9312"
    rows = (("1", "a", "_", "X", "_", "_", "_", "_", "_", "SpaceAfter=No"), ("2", "b", *("_",) * 8))
    s = Sentence(rows).with_misc("HeadProb", ["0.5000", "1.0000"])
    assert [r[COL10] for r in s.rows] == ["HeadProb=0.5000|SpaceAfter=No", "HeadProb=1.0000"]
    for key, values in (("Head Prob", ["1", "1"]), ("HeadProb", ["1"]), ("HeadProb", ["1", "a|b"]),
                        ("HeadProb", ["1", ""])):
        with pytest.raises(ValueError):
            Sentence(rows).with_misc(key, values)


# --- the parser's head marginals against brute force ---------------------------------------------


def trees_of(n: int, projective: bool) -> list[tuple[int, ...]]:
    """Every tree over n words (heads of words 1..n; 0 is the root), projective ones only if asked."""
    out = []
    for heads in itertools.product(range(n + 1), repeat=n):
        if any(h == m for m, h in enumerate(heads, start=1)):
            continue
        acyclic = True
        for m in range(1, n + 1):
            seen, x = 0, m
            while x != 0 and seen <= n:
                x, seen = heads[x - 1], seen + 1
            acyclic &= x == 0
        if acyclic and (not projective or is_projective(heads)):
            out.append(heads)
    return out


def in_space(heads: tuple[int, ...], root: str, final: bool) -> bool:
    """Whether a tree is in a space: one root child for ``single``; with ``final``, the last word a leaf
    child of that child."""
    children = [m for m, h in enumerate(heads, start=1) if h == 0]
    if root == "single" and len(children) != 1:
        return False
    n = len(heads)
    return not final or n < 2 or (heads[-1] == children[0] and n not in heads)


def brute_marginals(score, trees) -> np.ndarray:
    """mu[h, m] of p(tree) ∝ exp(score(tree)) over ``trees`` (tuples of heads)."""
    n = len(trees[0])
    scores = np.array([score(t) for t in trees])
    assert np.isfinite(scores).any()
    p = np.exp(scores - logsumexp(scores))
    mu = np.zeros((n + 1, n + 1))
    for t, pt in zip(trees, p):
        mu[list(t), np.arange(1, n + 1)] += pt
    return mu


def padded(heads: tuple[int, ...]) -> np.ndarray:
    return np.array((-1, *heads), dtype=np.int64)


@pytest.mark.parametrize("projective", [True, False], ids=["projective", "non-projective"])
def test_final_on_root_marginals_are_those_of_its_trees(projective: bool) -> None:
    rng = np.random.default_rng(0)
    marginals = inside_outside if projective else mtt_marginals
    for n in range(1, 6):
        s = rng.normal(scale=2.0, size=(n + 1, n + 1))
        trees = [t for t in trees_of(n, projective) if in_space(t, "single", True)]
        expected = brute_marginals(lambda t: s[list(t), np.arange(1, n + 1)].sum(), trees)
        np.testing.assert_allclose(final_on_root_marginals(marginals, s), expected, atol=1e-12)


@pytest.mark.parametrize("root", ["single", "multi"])
def test_arc_marginals_of_sibling_and_grandparent_parts(root: str) -> None:
    rng = np.random.default_rng(1)
    for n in range(1, 6):
        size = n + 1
        theta = rng.normal(size=n_sibling_parts(size))
        G = rng.normal(size=(size, size, size))
        trees = [t for t in trees_of(n, True) if in_space(t, root, False)]
        sib = brute_marginals(lambda t: theta[tree_parts(padded(t))].sum(), trees)
        np.testing.assert_allclose(arc_marginals(sibling_marginals(theta, size, root)[1], size), sib, atol=1e-12)
        grand = brute_marginals(lambda t: theta[tree_parts(padded(t))].sum()
                                + G[tuple(grand_parts(padded(t)).T)].sum(), trees)
        np.testing.assert_allclose(arc_marginals(grand_marginals(theta, G, size, root)[1], size), grand, atol=1e-12)


@pytest.fixture(scope="module")
def third_order(es_train) -> Parser:
    """A third-order parser (its first-order, sibling and grandparent alphabets) on short es sentences."""
    short = [s for s in es_train if len(s) <= 12][:15]
    return train_parser(short, root="single", parts="grandparents", cascade=False, max_passes=1, labels=False,
                        patience=None)[0]


# (order, tree, root, final punctuation on the root's child, prune) of the parsers under test
SPACES = [(1, "projective", "single", True, True), (1, "projective", "multi", False, False),
          (1, "non-projective", "single", True, True), (1, "non-projective", "multi", False, True),
          (2, "projective", "single", False, False), (3, "projective", "multi", False, False)]


def parser_of(model: Parser, order: int, tree: str, root: str, final: bool, prune: bool, scale: float = 0.3,
              seed: int = 0) -> Parser:
    """A parser of ``model``'s alphabets of an order and a tree space, with random weights."""
    n_features = (model.featurizer.n_features + (model.siblings.n_features if order >= 2 else 0)
                  + (model.grand.n_features if order == 3 else 0))
    weights = np.random.default_rng(seed).normal(scale=scale, size=n_features)
    return Parser(model.featurizer, weights, root, tree=tree, siblings=model.siblings if order >= 2 else None,
                  grand=model.grand if order == 3 else None, final_on_root=final, prune=prune)


def short_sentences(count: int) -> list[Sentence]:
    """Sentences of 1 to 5 words cut from es dev sentences: the first words, and every other one also
    with the sentence's final punctuation."""
    out = []
    for k, s in enumerate(load_dataset("es", "dev")[:count]):
        n = 1 + k % 5
        rows = list(s.rows[:n - 1 if k % 2 else n]) + ([s.rows[-1]] if k % 2 else [])
        out.append(Sentence(tuple((str(i), *r[ID + 1:HEAD], "_", "_", *r[DEPREL + 1:])
                                  for i, r in enumerate(rows, start=1))))
    return out


def brute_head_marginals(parser: Parser, sentence: Sentence) -> np.ndarray:
    """The head marginals of ``parser`` by enumerating the trees of its space, scored by its parts."""
    n = len(sentence)
    encoded = parser.featurizer.encode([sentence])
    n_arc = parser.featurizer.n_features
    n_sib = n_arc + (parser.siblings.n_features if parser.order >= 2 else 0)
    words = np.arange(1, n + 1)
    final = parser.final_on_root and final_punct([sentence])[0]
    trees = [t for t in trees_of(n, parser.tree == "projective") if in_space(t, parser.root, final)]
    for prune in ((True, False) if parser.prune and parser.order == 1 else (False,)):
        arc = parser.featurizer.arc_scores(encoded, 0, parser.weights[:n_arc], prune)
        if parser.order == 1:
            def score(t):
                return arc[list(t), words].sum()
        else:
            theta = parser.siblings.scores(parser.siblings.compile(encoded, 0), arc, parser.weights[n_arc:n_sib])
            grand = (parser.grand.scores(parser.grand.compile(encoded, 0), parser.weights[n_sib:])
                     if parser.order == 3 else None)

            def score(t):
                total = theta[tree_parts(padded(t))].sum()
                return total + (grand[tuple(grand_parts(padded(t)).T)].sum() if grand is not None else 0.0)
        scores = [score(t) for t in trees]
        if np.isfinite(scores).any():  # else the pruned arcs leave no tree: the parser decodes every arc
            return brute_marginals(score, trees)
    raise AssertionError("no tree")


@pytest.mark.parametrize("space", SPACES, ids=["-".join(map(str, s)) for s in SPACES])
def test_head_marginals_match_brute_force(third_order: Parser, space) -> None:
    """Parser.head_marginals over the decoder's space, and predict's probabilities of the decoded heads."""
    parser = parser_of(third_order, *space)
    sentences = short_sentences(20)
    heads, _, probs = parser.predict(sentences, confidence=True)
    assert heads == parser.predict_heads(sentences)
    for sentence, h, p in zip(sentences, heads, probs):
        expected = brute_head_marginals(parser, sentence)
        mu = parser.head_marginals(sentence)
        np.testing.assert_allclose(mu, expected, atol=1e-10)
        np.testing.assert_allclose(mu[:, 1:].sum(axis=0), 1.0, atol=1e-12)
        np.testing.assert_allclose(p, expected[h, np.arange(1, len(h) + 1)], atol=1e-10)
        assert expected[h, np.arange(1, len(h) + 1)].min() > 0  # the decoded tree is in the space


def long_sentence(words: int) -> Sentence:
    """A sentence of ``words`` words (es dev sentences joined, renumbered), ending in punctuation."""
    rows = [r for s in load_dataset("es", "dev")[:20] for r in s.rows][:words - 1] + [("", ".", ".", "F", "Fp")
                                                                                       + ("_",) * 5]
    return Sentence(tuple((str(i), *r[ID + 1:HEAD], "_", "_", "_", "_") for i, r in enumerate(rows, start=1)))


@pytest.mark.parametrize("space", SPACES, ids=["-".join(map(str, s)) for s in SPACES])
def test_head_marginals_of_long_sentences_are_finite(third_order: Parser, space) -> None:
    """On 120 words (100 for the third order's O(n^4) chart) with weights ten times the other tests'
    (arc scores in the hundreds), the marginals are finite, in [0, 1], a distribution per word."""
    parser = parser_of(third_order, *space, scale=3.0)
    sentence = long_sentence(100 if space[0] == 3 else 120)
    mu = parser.head_marginals(sentence)
    assert np.isfinite(mu).all() and mu.min() >= 0.0 and mu.max() <= 1.0 + 1e-12
    np.testing.assert_allclose(mu[:, 1:].sum(axis=0), 1.0, atol=1e-8)
    heads, _, probs = parser.predict([sentence], confidence=True)
    assert np.isfinite(probs[0]).all()


def test_head_marginals_of_a_trained_parser_on_several_jobs(es_train) -> None:
    """A trained first-order parser: the same heads and probabilities on one process or two (70 sentences,
    parsed in blocks), and parse_corpus's MISC says them."""
    parser = train_parser(es_train[:40], root="single", max_passes=1, labels=False, patience=None)[0]
    dev = load_dataset("es", "dev")[:70]
    one = parser.predict(dev, confidence=True)
    assert parser.predict(dev, jobs=2, confidence=True) == one
    assert one[0] == parser.predict(dev)[0]
    parsed = parser.parse_corpus(dev[:3], confidence=True)
    assert [[r[COL10] for r in s.rows] for s in parsed] == [[f"HeadProb={probability_text(p)}" for p in ps]
                                                            for ps in one[2][:3]]
    assert parser.head_marginals(Sentence(())).shape == (1, 1)


# --- the taggers' label marginals against brute force --------------------------------------------


COARSE = {"n": "N", "v": "V"}  # es POS tags to three classes: a few labels for brute force


@pytest.fixture(scope="module")
def small_taggers(es_train) -> dict[str, Tagger]:
    tokens, labels, _ = tagged_columns(es_train[:60], "pos")
    coarse = [[COARSE.get(t[0], "O") for t in seq] for seq in labels]
    return {model: train_tagger(tokens, coarse, model=model, max_passes=4)[0] for model in ("crf", "maxent")}


def brute_label_marginals(log_p, n: int, L: int) -> np.ndarray:
    """node[t, y] of p(y) ∝ exp(log_p(y)) over every sequence of n labels in 0..L-1."""
    sequences = list(itertools.product(range(L), repeat=n))
    scores = np.array([log_p(y) for y in sequences])
    p = np.exp(scores - logsumexp(scores))
    node = np.zeros((n, L))
    for y, py in zip(sequences, p):
        node[np.arange(n), list(y)] += py
    return node


def crf_log_score(tagger: Tagger, tokens: list[str]):
    model = tagger.model
    feats = model.featurizer.features(model.featurizer.encode([tokens]))
    e, tr, st, sp = feats.chain_scores(0, model.weights)
    return lambda y: st[y[0]] + e[np.arange(len(y)), list(y)].sum() + tr[list(y[:-1]), list(y[1:])].sum() + sp[y[-1]]


def maxent_log_prob(tagger: Tagger, tokens: list[str]):
    """log p(y | x) = sum_i log p(y_i | x, y_{i-2}, y_{i-1}), the local scores summed from the model's
    (predicate, label) features by name."""
    model = tagger.model
    index = {p: k for k, p in enumerate(model.predicates)}
    observed = token_predicates(tokens)

    def local(i: int, prev2: str, prev1: str) -> np.ndarray:
        scores = np.zeros(len(model.labels))
        for name in observed[i] + list(history_predicates(prev2, prev1)):
            k = index.get(name)
            if k is not None:
                for f in range(model.feat_ptr[k], model.feat_ptr[k + 1]):
                    scores[model.feat_label[f]] += model.weights[f]
        return scores - logsumexp(scores)

    def log_p(y) -> float:
        names = [BOS, BOS] + [model.labels[k] for k in y]
        return sum(local(i, names[i], names[i + 1])[y[i]] for i in range(len(y)))

    return log_p


@pytest.mark.parametrize("kind", ["crf", "maxent"])
def test_tag_marginals_match_brute_force(small_taggers, kind: str) -> None:
    tagger = small_taggers[kind]
    L = len(tagger.labels)
    assert L == 3
    sentences = [s.forms[:1 + k % 6] for k, s in enumerate(load_dataset("es", "dev")[:12])]
    labels, probs = tagger.predict(sentences, confidence=True)
    assert labels == tagger.predict(sentences)
    for tokens, labs, ps in zip(sentences, labels, probs):
        log_score = crf_log_score(tagger, tokens) if kind == "crf" else maxent_log_prob(tagger, tokens)
        expected = brute_label_marginals(log_score, len(tokens), L)
        np.testing.assert_allclose(tagger.marginals(tokens, as_array=True), expected, atol=1e-12)
        np.testing.assert_allclose(ps, expected[np.arange(len(tokens)), [tagger.labels.index(y) for y in labs]],
                                   atol=1e-12)


@pytest.mark.parametrize("kind", ["crf", "maxent"])
def test_tag_marginals_of_long_sentences_are_finite(small_taggers, kind: str) -> None:
    tagger = small_taggers[kind]
    tokens = [w for s in load_dataset("es", "dev")[:20] for w in s.forms][:200]
    node = tagger.marginals(tokens, as_array=True)
    assert node.shape == (200, 3) and np.isfinite(node).all()
    np.testing.assert_allclose(node.sum(axis=1), 1.0, atol=1e-12)
    labels, probs = tagger.predict([tokens, []], confidence=True)
    assert probs[1] == [] and np.isfinite(probs[0]).all()


# --- the command line on UD files ----------------------------------------------------------------


def strip_keys(text: str, keys: tuple[str, ...]) -> str:
    """CoNLL text with the MISC entries of ``keys`` removed from the word lines (``_`` when none is left)."""
    out = []
    for line in text.split("\n"):
        fields = line.split("\t")
        if len(fields) == 10 and not line.startswith("#"):
            kept = [e for e in fields[COL10].split("|") if e.split("=", 1)[0] not in keys]
            fields[COL10] = "|".join(kept) or "_"
        out.append("\t".join(fields))
    return "\n".join(out)


def head_of(source: Path, target: Path, count: int) -> Path:
    blocks = [b for b in source.read_text(encoding="utf-8").split("\n\n") if b.strip()]
    target.write_text("".join(block + "\n\n" for block in blocks[:count]), encoding="utf-8")
    return target


@pytest.fixture(scope="module")
def pt(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A parser reading UPOS and UPOS taggers (CRF, maxent) trained with the Python API on 60 and 150 pt_bosque
    sentences, and 80 dev sentences to parse (multiword tokens, SpaceAfter=No)."""
    folder = tmp_path_factory.mktemp("confidence")
    paths = {"dev": head_of(UD / "pt_bosque-ud-dev.conllu", folder / "dev.conllu", 80)}
    train = parse_conll((UD / "pt_bosque-ud-test.conllu").read_text(encoding="utf-8"), "test.conllu")
    parser, _ = train_parser(train[:60], tags="upos", max_passes=1, patience=None)
    parser.save(paths.setdefault("parser", folder / "parser.npz"))
    tokens, labels, _ = tagged_columns(train[:150], "upos")
    for model in ("crf", "maxent"):
        tagger, _ = train_tagger(tokens, labels, model=model, column="upos", max_passes=3)
        tagger.save(paths.setdefault(model, folder / f"{model}.npz"))
    return paths


def misc_values(text: str, key: str) -> list[float]:
    return [float(v) for v in re.findall(rf"\b{key}=([0-9.]+)", text)]


def test_parser_parse_writes_head_probabilities_to_misc(pt, tmp_path) -> None:
    plain, confident, two = (tmp_path / name for name in ("plain.conllu", "conf.conllu", "two.conllu"))
    assert_ok(run("parser", "parse", pt["parser"], pt["dev"], "-o", plain, "--jobs", 1))
    assert_ok(run("parser", "parse", pt["parser"], pt["dev"], "-o", confident, "--confidence", "--jobs", 1))
    assert_ok(run("parser", "parse", pt["parser"], pt["dev"], "-o", two, "--confidence", "--jobs", 2))
    parser, sentences = Parser.load(pt["parser"]), parse_conll(pt["dev"].read_text(encoding="utf-8"), "dev.conllu")
    heads, labels, probs = parser.predict(sentences, confidence=True)
    # Without --confidence: the bytes of format_parsed of the predictions, as before.
    assert plain.read_bytes() == format_parsed(sentences, heads, labels).encode("utf-8")
    text = confident.read_text(encoding="utf-8")
    assert two.read_text(encoding="utf-8") == text
    assert strip_keys(text, ("HeadProb",)) == plain.read_text(encoding="utf-8")
    assert misc_values(text, "HeadProb") == [float(probability_text(p)) for ps in probs for p in ps]
    assert "HeadProb=" in text and "SpaceAfter=No" in text
    for sentence in parse_conll(text, "conf.conllu"):
        for row in sentence.rows:
            entries = row[COL10].split("|")
            assert entries == sorted(entries, key=str.lower)
    checked = udvalidate(confident, "pt", level=1)
    assert checked.returncode == 0, checked.stdout[-3000:] + checked.stderr[-3000:]


def test_confidence_is_refused_where_there_is_no_misc(pt, tmp_path) -> None:
    conllx = tmp_path / "es.conll"
    write_conll(conllx, load_dataset("es", "dev")[:3])
    assert "CoNLL-X input is written as CoNLL-X, whose column 10 is PDEPREL" in usage_line(
        run("parser", "parse", pt["parser"], conllx, "--confidence"))
    assert "--to text has no MISC column" in usage_line(
        run("tagger", "tag", pt["crf"], pt["dev"], "--to", "text", "--confidence"))
    assert "not available with --dask" in usage_line(
        run("parser", "parse", pt["parser"], pt["dev"], "--confidence", "--dask", "local"))


@pytest.mark.parametrize("kind", ["crf", "maxent"])
def test_tagger_tag_writes_tag_probabilities_to_misc(pt, tmp_path, kind: str) -> None:
    plain, confident = tmp_path / "plain.conllu", tmp_path / "conf.conllu"
    assert_ok(run("tagger", "tag", pt[kind], pt["dev"], "-o", plain))
    assert_ok(run("tagger", "tag", pt[kind], pt["dev"], "-o", confident, "--confidence"))
    text = confident.read_text(encoding="utf-8")
    assert strip_keys(text, ("UPosProb",)) == plain.read_text(encoding="utf-8")
    tagger = Tagger.load(pt[kind])
    sentences = parse_conll(pt["dev"].read_text(encoding="utf-8"), "dev.conllu", require_heads=False)
    labels, probs = tagger.predict([s.forms for s in sentences], confidence=True)
    assert misc_values(text, "UPosProb") == [float(probability_text(p)) for ps in probs for p in ps]
    assert [s.cpos for s in parse_conll(text, "conf.conllu")] == labels
    # Raw text to CoNLL: the tokens' MISC holds the probability alone.
    result = run("tagger", "tag", pt[kind], "-", "--format", "text", "--to", "conll", "--confidence", "-l", "pt",
                 input=PT_TEXT)
    assert_ok(result)
    assert all(line.split("\t")[COL10].startswith("UPosProb=") for line in result.stdout.splitlines() if line)


def test_parse_text_writes_tag_and_head_probabilities(pt, tmp_path) -> None:
    out = tmp_path / "text.conllu"
    assert_ok(run("parse-text", pt["crf"], pt["parser"], "-", "-l", "pt", "-o", out, "--confidence", input=PT_TEXT))
    text = out.read_text(encoding="utf-8")
    taggers, parser = [Tagger.load(pt["crf"])], Parser.load(pt["parser"])
    assert strip_keys(text, ("HeadProb", "UPosProb")) == to_conllu(parse_text(PT_TEXT, taggers, parser,
                                                                              language="pt"))
    assert text == to_conllu(parse_text(PT_TEXT, taggers, parser, language="pt", confidence=True))
    assert "HeadProb=" in text and re.search(r"\tHeadProb=[0-9.]+\|SpaceAfter=No\|UPosProb=[0-9.]+\n", text)
    checked = udvalidate(out, "pt")
    assert checked.returncode == 0, checked.stdout[-3000:] + checked.stderr[-3000:]
