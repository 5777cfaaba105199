"""The second-stage arc labeler: its templates read the tree, it learns labels, decodes within the
root constraint, and survives a model file."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from egnlp.parser_training import train_labeler, train_parser
from egnlp.corpora import load_dataset, parse_conll
from egnlp.features.arc_featurizer import ArcFeaturizer
from egnlp.features.arc_labels import (KEYS_PER_CHILD, KEYS_PER_HEAD_FEATURE, KEYS_PER_MOD_FEATURE,
                                       KEYS_PER_SIBLING, KEYS_PER_SIBLING_V2, LABEL_TEMPLATES_VERSION,
                                       N_FIXED_KEYS, N_FIXED_KEYS_V2)
from egnlp.features.arc_templates import CPOS, FEATS, LEMMA, PAD_LEFT, PAD_RIGHT
from egnlp.features.hashing import combine
from egnlp.parser.labeler import arc_label_keys, predicate_ids
from egnlp.parser.parser_model import Parser

DATA = Path(__file__).parent / "data"


def _sentence(rows):
    """CoNLL-U text of (form, lemma, upos, head, deprel) rows."""
    lines = [f"{i}\t{form}\t{lemma}\t{upos}\t_\t{'Case=Nom|Number=Sing' if upos == 'PROPN' else '_'}"
             f"\t{head}\t{rel}\t_\t_" for i, (form, lemma, upos, head, rel) in enumerate(rows, start=1)]
    return "\n".join(lines) + "\n\n"


SENTENCE = [("Vi", "ver", "VERB", 0, "root"), ("la", "el", "DET", 3, "det"), ("casa", "casa", "NOUN", 1, "obj"),
            ("de", "de", "ADP", 5, "case"), ("Ana", "Ana", "PROPN", 3, "nmod")]


def test_keys_per_arc_follow_the_tree():
    sentences = parse_conll(_sentence(SENTENCE))
    featurizer = ArcFeaturizer.for_corpus(sentences)
    encoded = featurizer.encode(sentences)
    heads = [s.heads for s in sentences]
    ev_ptr, keys = arc_label_keys(sentences, encoded, heads)
    children = Counter(heads[0])
    n_feats = [0] + [0 if f == "_" else len(f.split("|")) for f in sentences[0].feats]  # root row first
    expected = [N_FIXED_KEYS + KEYS_PER_CHILD * children[m] + KEYS_PER_SIBLING * (children[h] - 1)
                + KEYS_PER_MOD_FEATURE * n_feats[m] + KEYS_PER_HEAD_FEATURE * n_feats[h]
                for m, h in enumerate(heads[0], start=1)]
    assert LABEL_TEMPLATES_VERSION == 2
    ptr1, keys1 = arc_label_keys(sentences, encoded, heads, templates=1)
    assert np.diff(ptr1).tolist() == expected
    assert np.diff(ev_ptr).tolist() == [k + N_FIXED_KEYS_V2 + KEYS_PER_SIBLING_V2 * (children[h] - 1)
                                        for k, h in zip(expected, heads[0])]
    assert np.all(keys != 0)
    for m in range(len(heads[0])):  # version 2 reads every template of version 1
        assert set(keys1[ptr1[m]:ptr1[m + 1]]) < set(keys[ev_ptr[m]:ev_ptr[m + 1]])
    # a child of the modifier is read: another case marker under "Ana" changes the keys of its arc
    other = parse_conll(_sentence([*SENTENCE[:3], ("sin", "sin", "ADP", 5, "case"), SENTENCE[4]]))
    enc2 = featurizer.encode(other)
    ptr2, keys2 = arc_label_keys(other, enc2, [s.heads for s in other])
    arc = slice(ev_ptr[4], ev_ptr[5])  # "Ana"'s arc
    assert set(keys[arc]) != set(keys2[ptr2[4]:ptr2[5]])
    assert set(keys[ev_ptr[0]:ev_ptr[1]]) == set(keys2[ptr2[0]:ptr2[1]])  # "Vi" sees neither


def _lkey(template, *atoms):
    """A label template's key as ``features/arc_labels.py`` makes it (template numbers from 1000)."""
    key = np.uint64(1000 + template)
    for atom in (*atoms, 0, 0, 0, 0)[:4]:
        key = np.uint64(combine(key, np.int64(atom)))
    return int(key) or 1


def test_version_2_templates_read_the_outer_children_and_the_siblings_lemmas():
    """On "Vi la casa de Ana" (casa -> la, Ana; Ana -> de): the FEATS of m's leftmost and rightmost
    child (pads without children) and the lemma of every other child of h, each with m's coarse tag."""
    sentences = parse_conll(_sentence(SENTENCE))
    encoded = ArcFeaturizer.for_corpus(sentences).encode(sentences)
    ev_ptr, keys = arc_label_keys(sentences, encoded, [sentences[0].heads])
    atoms = encoded.atoms  # row 0 is the root, row m the word m

    def new_keys(m):
        """The keys of m's arc that version 2 adds."""
        return {int(k) for k in keys[ev_ptr[m - 1]:ev_ptr[m]]} & {
            _lkey(t, a, atoms[m, CPOS]) for t in (37, 38, 39) for a in [PAD_LEFT, PAD_RIGHT, *atoms[:, FEATS],
                                                                      *atoms[:, LEMMA]]}

    def outer(m, left, right):
        return {_lkey(37, left, atoms[m, CPOS]), _lkey(38, right, atoms[m, CPOS])}

    no_children = (PAD_LEFT, PAD_RIGHT)
    assert new_keys(1) == outer(1, atoms[3, FEATS], atoms[3, FEATS])  # "Vi": one child, casa; no sibling
    assert new_keys(2) == outer(2, *no_children) | {_lkey(39, atoms[5, LEMMA], atoms[2, CPOS])}  # la: sibling Ana
    assert new_keys(3) == outer(3, atoms[2, FEATS], atoms[5, FEATS])  # casa: la ... Ana (Case=Nom|...)
    assert new_keys(4) == outer(4, *no_children)  # "de": alone under Ana
    assert new_keys(5) == outer(5, atoms[4, FEATS], atoms[4, FEATS]) | {_lkey(39, atoms[2, LEMMA], atoms[5, CPOS])}
    assert atoms[2, FEATS] != atoms[5, FEATS] and atoms[2, LEMMA] != atoms[5, LEMMA]


def test_a_labeler_saved_before_templates_version_2_loads_and_labels_as_before(tmp_path):
    """A labeled first-order parser trained on sample.conllu as egnlp at templates version 1 trained and saved
    it (no ``label_templates`` in its metadata) reads version 1 templates and labels other trees as that
    egnlp did: the labels and scores below are those of its own file, loaded by that egnlp."""
    from egnlp.base.files import read_npz, write_npz_atomic
    from egnlp.corpora import read_conll
    from egnlp.parser.parser_model import FORMAT_VERSION, MODEL_KIND

    sentences = read_conll(DATA / "sample.conllu")
    parser, _ = train_parser(sentences, max_passes=1, jobs=1)
    parser.labeler, _ = train_labeler(parser.featurizer, sentences, templates=1)  # as labeler_for trains it
    parser.save(tmp_path / "new.npz")
    arrays, meta = read_npz(tmp_path / "new.npz", MODEL_KIND, FORMAT_VERSION)
    assert meta.pop("label_templates") == 1
    write_npz_atomic(tmp_path / "old.npz", arrays, meta)
    loaded = Parser.load(tmp_path / "old.npz")
    assert loaded.labeler.templates == 1
    encoded = loaded.featurizer.encode(sentences)
    chains = [list(range(len(s.heads))) for s in sentences]  # word i + 1 under word i, the first under the root
    assert loaded.labeler.label(sentences, encoded, chains) == [
        ["root", "expl:pv", "case", "det", "obl", "punct"],
        ["root", "punct", "obj", "case", "det", "obl", "cc", "conj", "orphan", "punct"],
        ["root", "expl", "punct"]]
    events = loaded.labeler.events(sentences, encoded, chains)
    assert loaded.labeler.scores(events).sum() == pytest.approx(97.7780828887, abs=1e-9)
    version_1 = predicate_ids(loaded.labeler.table, *arc_label_keys(sentences, encoded, chains, templates=1))
    assert all(np.array_equal(a, b) for a, b in zip(events, version_1))


def test_feature_atoms_with_a_memo_are_those_without(monkeypatch):
    from egnlp.features import arc_labels
    from egnlp.features.hashing import hash_string

    sentences = load_dataset("nl-alpino", "dev")[:300]  # UD FEATS, several attributes a word
    memo: dict = {}
    for start in (0, 100, 0):  # a memo kept across calls, and one that gives what it holds again
        block = sentences[start:start + 200]
        ptr, atoms = arc_labels.feature_atoms(block)
        ptr2, atoms2 = arc_labels.feature_atoms(block, memo=memo)
        assert np.array_equal(ptr, ptr2) and np.array_equal(atoms, atoms2)
    first = next(f for s in sentences for f in s.feats if "|" in f)
    assert memo[first] == tuple(hash_string(part) for part in first.split("|")) and memo["_"] == ()
    monkeypatch.setattr(arc_labels, "FEATS_MEMO", 3)  # a full memo is emptied before it is read again
    arc_labels.feature_atoms(sentences[:10], memo=memo)
    assert 0 < len(memo) <= len({f for s in sentences[:10] for f in s.feats})


@pytest.fixture(scope="module")
def es_small():
    train = load_dataset("es", "train")[:400]
    dev = load_dataset("es", "dev")[:100]
    return train, dev


def test_labeler_learns_the_labels_of_gold_trees(es_small):
    train, dev = es_small
    featurizer = ArcFeaturizer.for_corpus(train)
    labeler, result = train_labeler(featurizer, train, max_passes=15, dev=dev)
    predicted = labeler.label(dev, featurizer.encode(dev), [s.heads for s in dev])
    gold = [label for s in dev for label in s.deprels]
    flat = [label for labels in predicted for label in labels]
    accuracy = np.mean([p == g for p, g in zip(flat, gold)])
    majority = Counter(label for s in train for label in s.deprels).most_common(1)[0][0]
    assert accuracy > 0.85 and accuracy > np.mean([g == majority for g in gold]) + 0.25
    assert result.final.dev == pytest.approx(100 * accuracy)
    # the model's own weights go through dense rows for its frequent predicates: the same scores, bit for bit
    events = labeler.events(dev, featurizer.encode(dev), [s.heads for s in dev])
    dense = labeler.scores(events)
    assert labeler._dense is not None and labeler._dense[1].shape[0] > 0  # some predicates have a dense row
    assert np.array_equal(dense.view(np.int64), labeler.scores(events, labeler.weights).view(np.int64))
    labeler.weights = labeler.weights * 2  # new weights drop the rows built from the old ones
    assert labeler._dense is None and np.array_equal(labeler.scores(events), 2 * dense)
    assert result.records[-1].primal < result.records[0].primal
    # the root constraint: root-only labels (es: ROOT) exactly on the words attached to the root
    root_only = {label for label, ok_root, ok_other in zip(labeler.labels, labeler.root_ok, labeler.other_ok)
                 if ok_root and not ok_other}
    assert root_only == {"ROOT"}
    for s, labels in zip(dev, predicted):
        assert [h == 0 for h in s.heads] == [label == "ROOT" for label in labels]


def test_no_trainer_state_is_alive_while_the_labeler_trains(es_small, monkeypatch):
    """The arcs trainer's result with its state (BCFW's per-part arrays: on es 150 MiB) is freed before the
    labeler's arrays are made, not only left out of the result that train_parser returns."""
    import gc
    import weakref

    import egnlp.parser_training as parser_training

    trained, alive = [], []
    train_arcs, labeler_for = parser_training._train_arcs, parser_training.labeler_for

    def arcs(*args, **kwargs):
        run = train_arcs(*args, **kwargs)
        assert run.result.state  # what the trainer gave: its state included
        trained.append(weakref.ref(run.result))
        return run

    def watched(*args, **kwargs):
        gc.collect()
        alive.append(trained[-1]() is not None)
        return labeler_for(*args, **kwargs)

    monkeypatch.setattr(parser_training, "_train_arcs", arcs)
    monkeypatch.setattr(parser_training, "labeler_for", watched)
    train, _ = es_small
    parser, result = train_parser(train[:60], max_passes=2)
    assert alive == [False] and parser.labeler is not None and result.state == {}


def test_a_labeled_parser_round_trips_through_its_model_file(es_small, tmp_path):
    train, dev = es_small
    parser, result = train_parser(train[:150], max_passes=2)
    assert parser.labeler is not None and parser.info["labeler"]["labels"] == len(parser.labeler.labels)
    assert result.state == {}  # the trainer's state went before the labeler trained
    path = tmp_path / "labeled.npz"
    parser.save(path)
    loaded = Parser.load(path)
    assert loaded.labeler.labels == parser.labeler.labels
    assert parser.labeler.templates == loaded.labeler.templates == LABEL_TEMPLATES_VERSION
    assert np.array_equal(loaded.labeler.keys, parser.labeler.keys)
    from egnlp.base.files import ModelError, read_npz, write_npz_atomic
    from egnlp.parser.parser_model import FORMAT_VERSION, MODEL_KIND

    arrays, meta = read_npz(path, MODEL_KIND, FORMAT_VERSION)
    assert meta["label_templates"] == LABEL_TEMPLATES_VERSION
    for bad in (LABEL_TEMPLATES_VERSION + 1, 0, "2", None):  # a version this egnlp does not have
        write_npz_atomic(tmp_path / "bad.npz", arrays, {**meta, "label_templates": bad})
        with pytest.raises(ModelError, match="inconsistent model file \\(label templates"):
            Parser.load(tmp_path / "bad.npz")
    assert [s.lines() for s in loaded.parse(dev)] == [s.lines() for s in parser.parse(dev)]
    unlabeled, unlabeled_result = train_parser(train[:150], max_passes=2, labels=False)
    assert unlabeled_result.state  # kept for a warm start when no labeler is trained
    assert unlabeled.labeler is None and all(set(s.deprels) == {"_"} for s in unlabeled.parse(dev[:5]))


def _corpus(trees_and_labels) -> list:
    """Sentences of (heads, deprels) pairs: words w1, w2, ... tagged N, V, N, ..."""
    text = "".join("".join(f"{i}\tw{i}\tw{i}\t{'NV'[i % 2]}\t{'NV'[i % 2]}\t_\t{h}\t{rel}\t_\t_\n"
                           for i, (h, rel) in enumerate(zip(heads, rels), start=1)) + "\n"
                   for heads, rels in trees_and_labels)
    return parse_conll(text)


def test_a_corpus_whose_words_all_hang_from_the_root_trains_and_parses(tmp_path):
    """Every training word attached to the root (so no label was ever seen under a word): the labeler
    allows every label under a word, and the parser trains, parses and survives its file."""
    from cli_helpers import assert_ok, run
    from egnlp.corpora import write_conll

    train = _corpus([([0, 0, 0], ["root", "root", "root"]), ([0, 0], ["root", "x"])])
    parser, _ = train_parser(train, max_passes=1, jobs=1)
    assert parser.labeler.root_ok.all() and parser.labeler.other_ok.all()
    other = _corpus([([0, 1, 1], ["_", "_", "_"])])  # a word under a word, as a parse may give
    assert set(parser.labeler.label(other, parser.featurizer.encode(other), [[0, 1, 1]])[0]) <= {"root", "x"}
    path = tmp_path / "train.conll"
    write_conll(path, train)
    assert_ok(run("parser", "train", "--train", path, "--passes", 1, "-o", tmp_path / "m.npz", "-q"))
    result = run("parser", "parse", tmp_path / "m.npz", path, "-q")
    assert_ok(result)
    assert {line.split("\t")[7] for line in result.stdout.splitlines() if line} <= {"root", "x"}


@st.composite
def labeled_trees(draw: st.DrawFn) -> list:
    """1-3 random trees of 1-5 words labeled from a label set for root arcs and one for other arcs: one
    label in all, labels only at the root, only under words, shared or not."""
    names = ["root", "dep", "obj", "punct"]
    at_root = draw(st.lists(st.sampled_from(names), min_size=1, max_size=3, unique=True))
    under_word = draw(st.lists(st.sampled_from(names), min_size=1, max_size=3, unique=True))
    out = []
    for _ in range(draw(st.integers(1, 3))):
        n = draw(st.integers(1, 5))
        order = draw(st.permutations(range(1, n + 1)))
        heads = [0] * n
        for rank, token in enumerate(order):
            heads[token - 1] = draw(st.sampled_from([0, *order[:rank]]))
        out.append((heads, [draw(st.sampled_from(at_root if h == 0 else under_word)) for h in heads]))
    return out


@settings(deadline=None, max_examples=60, suppress_health_check=[HealthCheck.too_slow])
@given(labeled_trees())
def test_any_valid_labeling_trains_a_parser_that_labels_every_arc(trees_and_labels):
    """Degenerate label sets (one label, a label only at the root, no arc under a word) train; each parsed
    arc gets a label seen under its kind of head (root or word) when training saw that kind, else any
    training label."""
    train = _corpus(trees_and_labels)
    parser, _ = train_parser(train, max_passes=1, jobs=1)
    seen_root = {rel for heads, rels in trees_and_labels for h, rel in zip(heads, rels) if h == 0}
    seen_word = {rel for heads, rels in trees_and_labels for h, rel in zip(heads, rels) if h != 0}
    for sentence in parser.parse(train):
        for head, rel in zip(sentence.heads, sentence.deprels):
            assert rel in (seen_root if head == 0 else seen_word or seen_root | seen_word)
