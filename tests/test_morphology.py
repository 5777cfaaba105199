"""FEATS and the joint UPOS#XPOS#FEATS tag: the strings, the CoNLL-U column, taggers of them, the CLI.

Trains maxent taggers on slices of nl_alpino (XPOS and FEATS) and pt_bosque (FEATS, no XPOS) test
(``EGNLP_UD_DIR``) and checks what they write against the files and the UD validator.
"""

from __future__ import annotations

import os
import random
from pathlib import Path

import numpy as np
import pytest

from cli_helpers import assert_ok, error_line, run
from egnlp.base.errors import CorpusError
from egnlp.corpora import format_conll, parse_conll, read_conll, write_conll
from egnlp.corpora.morphology import canonical_feats, feats_problem, morph_label, split_morph
from egnlp.corpora.tagging import check_tags
from egnlp.tagger import Tagger
from egnlp.tagger_training import tagged_columns, train_tagger
from ud_checks import udvalidate

UD = Path(os.environ["EGNLP_UD_DIR"])


def head_of(source: Path, target: Path, count: int) -> Path:
    blocks = [b for b in source.read_text(encoding="utf-8").split("\n\n") if b.strip()]
    target.write_text("".join(block + "\n\n" for block in blocks[:count]), encoding="utf-8")
    return target


@pytest.fixture(scope="module")
def treebanks() -> dict[str, list]:
    return {name: read_conll(UD / f"{name}-ud-test.conllu") for name in ("nl_alpino", "pt_bosque")}


# --- FEATS strings and joint tags ----------------------------------------------------------------


def shuffled(feats: str, rng: random.Random) -> str:
    """A FEATS value with its items and each item's values in random order."""
    items = []
    for item in feats.split("|"):
        name, _, values = item.partition("=")
        split = values.split(",")
        rng.shuffle(split)
        items.append(name + "=" + ",".join(split))
    rng.shuffle(items)
    return "|".join(items)


def test_every_feats_of_the_treebanks_is_valid_and_sorting_a_shuffle_restores_it(treebanks):
    rng = random.Random(0)
    values = {f for sentences in treebanks.values() for s in sentences for f in s.feats}
    assert len(values) > 200 and "_" in values
    for feats in values:
        assert feats_problem(feats) is None, feats
        assert canonical_feats(feats) == feats
        if feats != "_":
            assert canonical_feats(shuffled(feats, rng)) == feats


@pytest.mark.parametrize("feats", ["Number", "number=Sing", "Number=sing", "Number=Sing|Number=Plur",
                                   "PronType=Prs,Prs", "Number=Sing|", "Number=Sing Gender=Masc", ""])
def test_invalid_feats_are_named(feats):
    assert feats_problem(feats) is not None
    with pytest.raises(ValueError):
        canonical_feats(feats)


def test_unsorted_feats_are_a_problem_until_sorted():
    assert feats_problem("Number=Sing|Gender=Masc") is not None
    assert feats_problem("PronType=Rel,Int") is not None
    assert canonical_feats("Number=Sing|Gender=Masc") == "Gender=Masc|Number=Sing"
    assert canonical_feats("PronType=Rel,Int") == "PronType=Int,Rel"
    assert canonical_feats("Number[psor]=Sing|Number=Plur") == "Number=Plur|Number[psor]=Sing"


@pytest.mark.parametrize("tags", [("NOUN", "N|soort|ev", "Number=Sing"), ("PUNCT", "#", "_"),
                                  ("X", "a#b#c", "Foreign=Yes"), ("DET", "_", "_")])
def test_joint_tags_split_back(tags):
    assert split_morph(morph_label(*tags)) == tags


def test_joint_tags_refuse_the_separator_where_it_cannot_split():
    with pytest.raises(ValueError):
        morph_label("NO#UN", "_", "_")
    with pytest.raises(ValueError):
        split_morph("NOUN_Number=Sing")


# --- the column in CoNLL-U -----------------------------------------------------------------------


def test_feats_round_trip_through_conllu(treebanks):
    sentences = treebanks["nl_alpino"][:50]
    moved = [s.feats[1:] + s.feats[:1] for s in sentences]  # every token gets another token's FEATS
    changed = [s.with_tags(feats=f) for s, f in zip(sentences, moved)]
    again = parse_conll(format_conll(changed), "x.conllu")
    assert [s.feats for s in again] == moved
    assert [s.cpos for s in again] == [s.cpos for s in sentences]
    assert [s.labels("morph") for s in sentences] == [[morph_label(*t) for t in zip(s.cpos, s.pos, s.feats)]
                                                      for s in sentences]
    assert [s.labels("feats") for s in sentences] == [s.feats for s in sentences]


def test_training_refuses_bad_feats_naming_file_and_token(treebanks):
    sentence = treebanks["pt_bosque"][3]
    bad = sentence.with_tags(feats=["Gender"] + sentence.feats[1:])
    for column in ("feats", "morph"):
        with pytest.raises(CorpusError, match=rf"pt_bosque-ud-test.conllu:{sentence.line}: token 1: .*Gender"):
            check_tags([bad], column, "a test")
    blank = sentence.with_tags(upos=["_"] + sentence.cpos[1:])
    with pytest.raises(CorpusError, match="token 1 has UPOS '_'"):
        tagged_columns([blank], "morph")
    tagged_columns([blank], "feats")  # a FEATS tagger needs no UPOS


def test_training_sorts_feats_as_ud_does(treebanks):
    sentence = treebanks["nl_alpino"][0]
    unsorted = sentence.with_tags(feats=[shuffled(f, random.Random(1)) if f != "_" else f for f in sentence.feats])
    assert tagged_columns([unsorted], "feats")[1] == [sentence.feats]
    assert tagged_columns([unsorted], "morph")[1] == [sentence.labels("morph")]


# --- taggers ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def joint(treebanks, tmp_path_factory: pytest.TempPathFactory) -> dict:
    """A joint maxent tagger trained on 150 nl_alpino sentences, saved and loaded again."""
    train = treebanks["nl_alpino"][:150]
    tokens, labels, _ = tagged_columns(train, "morph")
    tagger, _ = train_tagger(tokens, labels, model="maxent", column="morph", max_passes=5)
    path = tmp_path_factory.mktemp("morphology") / "morph.npz"
    tagger.save(path)
    return {"tagger": tagger, "path": path, "labels": {y for seq in labels for y in seq}}


def test_a_joint_tagger_writes_three_consistent_columns(joint, treebanks):
    dev = read_conll(UD / "nl_alpino-ud-dev.conllu")[:60]
    blank = [s.with_tags(pos=["_"] * len(s), upos=["_"] * len(s), feats=["_"] * len(s)) for s in dev]
    tagged = joint["tagger"].tag_corpus(blank)
    right = total = 0
    for gold, s in zip(dev, tagged):
        assert s.forms == gold.forms and s.heads == gold.heads and s.lemmas == gold.lemmas
        for label, upos, xpos, feats in zip(s.labels("morph"), s.cpos, s.pos, s.feats):
            assert label in joint["labels"]  # the three columns were seen together in training
            assert feats_problem(feats) is None
        right += sum(a == b for a, b in zip(gold.cpos, s.cpos))
        total += len(s)
    assert right / total > 0.6  # 150 sentences, 5 passes: well above the majority tag (NOUN, about 20%)


def test_a_joint_tagger_file_round_trips(joint):
    loaded = Tagger.load(joint["path"])
    assert loaded.column == "morph" and loaded.labels == joint["tagger"].labels
    assert loaded.confidence_key == "TagsProb"
    dev = read_conll(UD / "nl_alpino-ud-dev.conllu")[:40]
    forms = [s.forms for s in dev]
    assert loaded.predict(forms) == joint["tagger"].predict(forms)


def test_a_feats_tagger_on_pt_bosque(treebanks):
    tokens, labels, _ = tagged_columns(treebanks["pt_bosque"][:120], "feats")
    tagger, _ = train_tagger(tokens, labels, model="maxent", column="feats", max_passes=5)
    dev = read_conll(UD / "pt_bosque-ud-dev.conllu")[:40]
    tagged = tagger.tag_corpus(dev)
    assert [s.cpos for s in tagged] == [s.cpos for s in dev]  # FEATS only
    predicted = [f for s in tagged for f in s.feats]
    assert all(feats_problem(f) is None for f in predicted)
    assert sum(f == g for f, g in zip(predicted, (f for s in dev for f in s.feats))) / len(predicted) > 0.6


# --- the command line ---------------------------------------------------------------------------


def test_cli_trains_tags_and_scores_a_joint_tagger_and_the_output_validates(tmp_path):
    train = head_of(UD / "nl_alpino-ud-test.conllu", tmp_path / "train.conllu", 120)
    dev = head_of(UD / "nl_alpino-ud-dev.conllu", tmp_path / "dev.conllu", 50)
    model, pred = tmp_path / "morph.npz", tmp_path / "pred.conllu"
    assert_ok(run("tagger", "train", "--train", train, "--column", "morph", "--model", "maxent", "--passes", 4,
                  "--out", model, "--quiet"))
    assert_ok(run("tagger", "tag", model, dev, "-o", pred))
    gold, tagged = read_conll(dev), read_conll(pred)
    assert [s.forms for s in tagged] == [s.forms for s in gold]
    assert any(s.feats != ["_"] * len(s) for s in tagged) and any(s.pos != g.pos for s, g in zip(tagged, gold))
    done = udvalidate(pred, "nl", level=2)
    assert done.returncode == 0, done.stdout + done.stderr
    for column in ("morph", "feats", "upos"):
        result = run("tagger", "evaluate", dev, pred, "--column", column, "--json")
        assert_ok(result)
        assert '"accuracy"' in result.stdout


def test_cli_names_the_line_of_bad_feats(tmp_path):
    text = head_of(UD / "nl_alpino-ud-test.conllu", tmp_path / "ok.conllu", 3).read_text(encoding="utf-8")
    lines = text.split("\n")
    k = next(i for i, line in enumerate(lines) if line[:1].isdigit() and line.split("\t")[5] != "_")
    columns = lines[k].split("\t")
    columns[5] = "number=sing"
    lines[k] = "\t".join(columns)
    bad = tmp_path / "bad.conllu"
    bad.write_text("\n".join(lines), encoding="utf-8")
    line = error_line(run("tagger", "train", "--train", bad, "--column", "feats", "--model", "maxent",
                          "--out", tmp_path / "x.npz"))
    assert "bad.conllu:" in line and "number=sing" in line


def test_a_joint_tagger_reading_upos_follows_the_upos_it_is_given(treebanks, tmp_path):
    tokens, labels, upos = tagged_columns(treebanks["nl_alpino"][:150], "morph", reads_upos=True)
    assert upos == [s.cpos for s in treebanks["nl_alpino"][:150]]
    tagger, _ = train_tagger(tokens, labels, upos, model="maxent", column="morph", max_passes=5,
                             dictionary=0)  # no dictionary: a seen word could not follow a wrong UPOS
    assert tagger.input_column == "upos" and tagger.use_pos
    tagger.save(tmp_path / "m.npz")
    loaded = Tagger.load(tmp_path / "m.npz")
    assert loaded.input_column == "upos" and loaded.column == "morph"
    dev = read_conll(UD / "nl_alpino-ud-dev.conllu")[:60]
    given = loaded.tag_corpus(dev)  # reads the gold UPOS of dev
    assert [s.cpos for s in given] == [s.cpos for s in tagger.tag_corpus(dev)]
    nouns = loaded.tag_corpus([s.with_tags(upos=["NOUN"] * len(s)) for s in dev])
    agree = [sum(a == b for a, b in zip(s.cpos, g.cpos)) / len(s) for s, g in zip(given, dev)]
    agree_nouns = [sum(a == "NOUN" for a in s.cpos) / len(s) for s in nouns]
    assert sum(agree) / len(agree) > 0.9 and sum(agree_nouns) / len(agree_nouns) > 0.7


def test_cli_tags_upos_then_the_joint_tag_reading_it(tmp_path):
    train = head_of(UD / "pt_bosque-ud-test.conllu", tmp_path / "train.conllu", 120)
    dev = head_of(UD / "pt_bosque-ud-dev.conllu", tmp_path / "dev.conllu", 40)
    upos, morph = tmp_path / "upos.npz", tmp_path / "morph.npz"
    assert_ok(run("tagger", "train", "--train", train, "--column", "upos", "--passes", 3, "--out", upos, "--quiet"))
    assert_ok(run("tagger", "train", "--train", train, "--column", "morph", "--model", "maxent", "--reads-upos",
                  "--passes", 4, "--out", morph, "--quiet"))
    first, second = tmp_path / "upos.conllu", tmp_path / "morph.conllu"
    assert_ok(run("tagger", "tag", upos, dev, "-o", first))
    assert_ok(run("tagger", "tag", morph, first, "-o", second))
    tagged = read_conll(second)
    assert any(s.feats != ["_"] * len(s) for s in tagged)
    done = udvalidate(second, "pt", level=2)
    assert done.returncode == 0, done.stdout + done.stderr
    blank = tmp_path / "blank.conllu"
    write_conll(blank, [s.with_tags(upos=["_"] * len(s)) for s in read_conll(dev)])
    line = error_line(run("tagger", "tag", morph, blank, "-o", tmp_path / "x.conllu"))
    assert "blank.conllu:" in line and "UPOS" in line


def test_cli_refuses_reads_upos_for_other_columns_and_files_without_upos(tmp_path):
    train = head_of(UD / "nl_alpino-ud-test.conllu", tmp_path / "train.conllu", 5)
    line = error_line(run("tagger", "train", "--train", train, "--column", "upos", "--reads-upos",
                          "--out", tmp_path / "x.npz"), status=2)
    assert "--reads-upos" in line


# --- the dictionary of seen forms ----------------------------------------------------------------


def brute_restriction(model, static, tokens_list):
    """Model.restrict by a loop over words and labels."""
    forms, ptr, ids = model.dictionary
    entry = {form: set(ids[ptr[k]:ptr[k + 1]].tolist()) for k, form in enumerate(forms)}
    out = static.copy()
    row = 0
    for toks in tokens_list:
        for w in toks:
            if w in entry:
                for y in range(static.shape[1]):
                    if y not in entry[w]:
                        out[row, y] = -1e30
            row += 1
    return out


def test_the_dictionary_restricts_as_a_loop_does_and_decoding_keeps_to_it(treebanks, tmp_path):
    train = treebanks["pt_bosque"][:150]
    tokens, labels, _ = tagged_columns(train, "morph")
    tagger, _ = train_tagger(tokens, labels, model="maxent", column="morph", max_passes=4, dictionary=2)
    model = tagger.model
    assert tagger.info["dictionary"] == 2
    counts = {}
    for w in (w for toks in tokens for w in toks):
        counts[w] = counts.get(w, 0) + 1
    assert model.dictionary[0] == sorted(w for w, n in counts.items() if n >= 2)
    dev = [s.forms for s in read_conll(UD / "pt_bosque-ud-dev.conllu")[:50]]
    rng = np.random.default_rng(0)
    static = rng.normal(size=(sum(map(len, dev)), len(model.labels)))
    assert np.array_equal(model.restrict(static, dev), brute_restriction(model, static, dev))
    seen = {}
    for toks, labs in zip(tokens, labels):
        for w, y in zip(toks, labs):
            seen.setdefault(w, set()).add(y)
    for toks, labs in zip(dev, tagger.predict(dev)):
        for w, y in zip(toks, labs):
            if counts.get(w, 0) >= 2:
                assert y in seen[w]
    tagger.save(tmp_path / "d.npz")
    loaded = Tagger.load(tmp_path / "d.npz")
    assert loaded.model.dictionary[0] == model.dictionary[0]
    assert loaded.predict(dev) == tagger.predict(dev)
    assert np.allclose(loaded.marginals(dev[0], as_array=True).sum(axis=1), 1.0)
    plain, _ = train_tagger(tokens, labels, model="maxent", column="morph", max_passes=4, dictionary=0)
    assert plain.model.dictionary is None
