"""A whole pipeline in one model file: trained from a treebank (the taggers its tag columns call for, a
lemmatizer, a parser trained on their jackknifed predictions), saved and loaded with the same output, run on
each input mode (raw text, a sentence a line, tokens, CoNLL-U), from Python and from the command line.

Small pipelines are trained once per module on the first sentences of the UD files.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from ud_checks import udvalidate
from egnlp.base.errors import InputError, ModelError, SettingsError
from egnlp.corpora import parse_conll, read_conll
from egnlp.corpora.sentence import BLANK, CPOS, FEATS, LEMMA, POS
from egnlp.pipeline import Pipeline
from egnlp.pipeline_training import PIPELINE_PARSER, jackknifed, pipeline_columns, train_pipeline
from egnlp.settings import ParserSettings, TaggerSettings, TokenizerSettings

from cli_helpers import assert_ok, error_line, run, usage_line

UD = Path(os.environ["EGNLP_UD_DIR"])
NL_TEXT = "Het kabinet vergadert vandaag. De minister zei niets.\n\nDaarna ging iedereen naar huis."
PT_TEXT = "O governo disse que não há crise. Os deputados votaram às 9h30 na Assembleia."
FAST = dict(parser_settings=ParserSettings(max_passes=1), tagger_settings=TaggerSettings(max_passes=3),
            tokenizer_settings=TokenizerSettings(max_passes=3))


def _first(name: str, count: int):
    return read_conll(UD / name)[:count]


@pytest.fixture(scope="module")
def nl() -> Pipeline:
    """A joint UPOS/XPOS/FEATS tagger, a lemmatizer and a parser reading both tags, on 60 nl_alpino sentences."""
    return train_pipeline(_first("nl_alpino-ud-test.conllu", 60), language="nl", data="nl60", **FAST)


@pytest.fixture(scope="module")
def pt() -> Pipeline:
    """A joint UPOS/FEATS tagger (XPOS is '_'), a lemmatizer and a parser reading UPOS, on 60 pt_bosque sentences."""
    return train_pipeline(_first("pt_bosque-ud-test.conllu", 60), language="pt", **FAST)


def test_the_filled_tag_columns_choose_the_stages(nl: Pipeline, pt: Pipeline) -> None:
    nl5 = _first("nl_alpino-ud-test.conllu", 5)
    assert pipeline_columns(nl5) == pipeline_columns(_first("pt_bosque-ud-test.conllu", 5)) == ("upos", "morph")
    assert pipeline_columns([s.with_tags(feats=[BLANK] * len(s)) for s in nl5]) == ("upos", "morph")  # and XPOS
    upos_only = [s.with_tags(pos=[BLANK] * len(s), feats=[BLANK] * len(s)) for s in nl5]
    assert pipeline_columns(upos_only) == ("upos",)
    assert list(nl.taggers) == ["upos", "morph"] and nl.parser.featurizer.tags == "both"
    assert list(pt.taggers) == ["upos", "morph"] and pt.parser.featurizer.tags == "upos"
    blank = [s.with_tags(pos=[BLANK] * len(s), upos=[BLANK] * len(s)) for s in _first("nl_alpino-ud-test.conllu", 3)]
    with pytest.raises(InputError, match="UPOS or an XPOS"):
        pipeline_columns(blank)


def test_the_parser_trains_on_jackknifed_predictions(nl: Pipeline) -> None:
    """The parser reads the LEMMA and FEATS the pipeline predicts, trained on predictions for sentences that the
    stages predicting them did not see."""
    assert nl.parser.featurizer.use_lemma and nl.parser.featurizer.use_feats
    assert nl.info["columns"] == ["UPOS", "joint UPOS/XPOS/FEATS"]
    assert nl.info["sentences"] == 60 and nl.info["data"] == "nl60"
    assert list(nl.info["train_cpu_seconds"]) == ["tokenizer", "upos", "morph", "lemmatizer", "jackknife", "parser"]
    assert nl.info["parser_columns"] == "predicted by the pipeline's stages, jackknifed on 5 folds"


def test_stages_leave_out_the_tokenizer_and_the_parser(tmp_path: Path) -> None:
    """--stages tagger,lemmatizer: Punkt splits the text, the words are tagged and lemmatized, no tree."""
    tagging = train_pipeline(_first("pt_bosque-ud-test.conllu", 40), language="pt", stages=("tagger", "lemmatizer"),
                             **FAST)
    assert tagging.tokenizer is None and tagging.parser is None and tagging.lemmatizer is not None
    assert list(tagging.info["train_cpu_seconds"]) == ["upos", "morph", "lemmatizer"]
    trees = tagging.parse(PT_TEXT)
    assert len(trees) == 2 and all(r[CPOS] != BLANK and r[LEMMA] != BLANK and r[6] == BLANK for s in trees
                                   for r in s.rows)
    tagging.save(tmp_path / "tags.model")
    assert Pipeline.load(tmp_path / "tags.model").conllu(PT_TEXT) == tagging.conllu(PT_TEXT)
    for stages, message in ((("tokenizer", "parser"), "add tagger"), (("tagger", "tree"), "tree: choose among")):
        with pytest.raises(SettingsError, match=message):
            train_pipeline(_first("pt_bosque-ud-test.conllu", 5), stages=stages, **FAST)


def test_jackknifing_annotates_each_fold_by_a_model_of_the_others() -> None:
    sentences = _first("nl_alpino-ud-test.conllu", 10)
    seen = []

    def fit(train):
        seen.append({" ".join(s.forms) for s in train})
        return lambda fold: [s.with_tags(upos=[str(len(train))] * len(s)) for s in fold]

    out = jackknifed(sentences, 3, fit)
    assert [s.forms for s in out] == [s.forms for s in sentences]  # the order kept
    parts = [sentences[:3], sentences[3:6], sentences[6:]]
    assert [{" ".join(s.forms) for s in part} for part in parts] == [{" ".join(s.forms) for s in sentences} - t
                                                                      for t in seen]
    assert [s.cpos[0] for s in out] == ["7"] * 3 + ["7"] * 3 + ["6"] * 4
    with pytest.raises(SettingsError, match="folds"):
        jackknifed(sentences, 11, fit)


def test_saved_and_loaded_it_gives_the_same_output(nl: Pipeline, tmp_path: Path) -> None:
    nl.save(tmp_path / "nl.model")
    loaded = Pipeline.load(tmp_path / "nl.model")
    assert loaded.language == "nl" and loaded.info == nl.info
    gold = (UD / "nl_alpino-ud-dev.conllu").read_text(encoding="utf-8")
    for text, mode in ((NL_TEXT, "text"), (NL_TEXT.replace(". ", ".\n"), "lines"), ("Hij zag het huis .", "tokens"),
                       (gold[:5000].rsplit("\n\n", 1)[0] + "\n\n", "conllu")):
        assert loaded.conllu(text, input=mode) == nl.conllu(text, input=mode), mode


def test_input_modes(nl: Pipeline) -> None:
    lines = nl.parse("Het kabinet vergadert. Vandaag\nDe minister zei niets.\n\n", input="lines")
    assert [s.forms for s in lines] == [["Het", "kabinet", "vergadert", ".", "Vandaag"],
                                        ["De", "minister", "zei", "niets", "."]]
    assert all(row[9] == BLANK for s in lines for row in s.rows[-1:])  # a line break is no space after
    tokens = nl.parse("Het kabinet ( vergadert ).\n", input="tokens")
    assert [s.forms for s in tokens] == [["Het", "kabinet", "(", "vergadert", ")."]]
    text = nl.parse(NL_TEXT)
    assert len(text) == 3 and all(s.heads for s in text)
    with pytest.raises(ValueError, match="input must be one of"):
        nl.parse(NL_TEXT, input="xml")


def test_conllu_input_keeps_words_comments_and_multiword_tokens(pt: Pipeline, tmp_path: Path) -> None:
    gold = (UD / "pt_bosque-ud-dev.conllu").read_text(encoding="utf-8")
    blocks = [b for b in gold.split("\n\n") if b.strip()][:40]
    text = "\n\n".join(blocks) + "\n\n"
    parsed = pt.parse(text, input="conllu")
    source = parse_conll(text)
    assert [s.forms for s in parsed] == [s.forms for s in source]
    assert [s.aside for s in parsed] == [s.aside for s in source]  # comments and 1-2 lines as they were
    assert any("-" in line.split("\t", 1)[0] for s in parsed for _, line in s.aside)
    tagged = pt.tag_sentences(source)  # LEMMA and FEATS are the lemmatizer's and the tagger's, not the input's
    assert [[r[LEMMA], r[FEATS]] for s in parsed for r in s.rows] == [[r[LEMMA], r[FEATS]] for s in tagged
                                                                      for r in s.rows]
    assert sum(r[LEMMA] == BLANK for s in parsed for r in s.rows) < 0.1 * sum(map(len, parsed))
    out = tmp_path / "pt.conllu"
    out.write_text(pt.conllu(text, input="conllu"), encoding="utf-8")
    checked = udvalidate(out, "pt")
    assert checked.returncode == 0, checked.stderr[-2000:]


def test_raw_text_output_is_valid_conllu(pt: Pipeline, tmp_path: Path) -> None:
    out = tmp_path / "pt.conllu"
    out.write_text(pt.conllu(PT_TEXT), encoding="utf-8")
    checked = udvalidate(out, "pt")
    assert checked.returncode == 0, checked.stderr[-2000:]
    assert [s.rows[0][CPOS] != BLANK and s.rows[0][POS] == BLANK for s in read_conll(out)] == [True, True]
    assert pt.multiword is not None and "multiword" in pt.info["train_cpu_seconds"]
    ranges = [line.split("\t")[:2] for s in read_conll(out) for _, line in s.aside if not line.startswith("#")]
    assert ranges == [["4-5", "às"], ["7-8", "na"]]  # às = a + as, na = em + a: ranges of two words
    words = [s.forms for s in read_conll(out)][1]
    assert "a" in words and "as" in words and "às" not in words


def test_a_pipeline_with_multiword_tokens_round_trips(pt: Pipeline, tmp_path: Path) -> None:
    pt.save(tmp_path / "pt.model")
    loaded = Pipeline.load(tmp_path / "pt.model")
    assert loaded.multiword is not None and set(loaded.taggers) == {"upos", "morph"}
    assert loaded.conllu(PT_TEXT) == pt.conllu(PT_TEXT)
    assert loaded.conllu("Disse-lhe que vinha do Porto .", input="tokens") == \
        pt.conllu("Disse-lhe que vinha do Porto .", input="tokens")


def test_files_that_are_no_pipeline_are_refused(nl: Pipeline, tmp_path: Path) -> None:
    nl.parser.save(tmp_path / "parser.npz")
    with pytest.raises(ModelError, match="parser.npz: expected a model of kind 'egnlp-pipeline'"):
        Pipeline.load(tmp_path / "parser.npz")
    with pytest.raises(ModelError, match="missing.model: no such model file"):
        Pipeline.load(tmp_path / "missing.model")


def test_cli_trains_runs_and_refuses(nl: Pipeline, tmp_path: Path) -> None:
    train = tmp_path / "train.conllu"
    train.write_text("".join(s + "\n\n" for s in (UD / "nl_alpino-ud-test.conllu").read_text(encoding="utf-8")
                             .split("\n\n")[:15] if s.strip()), encoding="utf-8")
    model = tmp_path / "sub" / "nl.model"
    trained = run("pipeline", "train", train, "--out", model, "--language", "nl")
    assert_ok(trained)
    assert "[1/6] tokenizer" in trained.stderr and "[2/6] UPOS tagger" in trained.stderr
    assert "[3/6] joint UPOS/XPOS/FEATS tagger" in trained.stderr and "[4/6] lemmatizer" in trained.stderr
    assert "[5/6] jackknifing: taggers and lemmatizer on 5 folds" in trained.stderr and "[6/6] parser" in trained.stderr
    # the parser stage's cascade before its passes and its labeler after them, as lines of the stage
    lines, at = trained.stderr.splitlines(), [0]
    for key in ("[6/6] parser", "  cascade: a first-order pruner trained on the first 14 sentences",
                "  cascade: first-order pruner by max-marginals", "pass ", "  arc labeler: maxent"):
        at.append(next(i for i in range(at[-1], len(lines)) if lines[i].startswith(key)))
    assert not [line for line in lines[at[1]:at[3]] if line.startswith("pass ")]
    assert f"wrote {model}" in trained.stderr.splitlines()[-1]
    info = run("model", "info", model)
    assert_ok(info)
    assert "pipeline, format version 1" in info.stdout and "\nparser:\n  kind" in info.stdout
    assert "tokenizer, UPOS tagger, joint UPOS/XPOS/FEATS tagger, lemmatizer, parser\n" in info.stdout
    assert "parser input   predicted by the pipeline's stages, jackknifed on 5 folds\n" in info.stdout
    described = json.loads(run("model", "info", model, "--json").stdout)
    assert described["kind"] == "pipeline" and list(described["stages"]) == [
        "UPOS tagger", "joint UPOS/XPOS/FEATS tagger", "lemmatizer", "parser"]
    assert described["stages"]["parser"]["order"] == PIPELINE_PARSER.order_of_model
    assert described["training"]["tokenizer"] == "egnlp character CRF"
    text = tmp_path / "in.txt"
    text.write_text(NL_TEXT, encoding="utf-8")
    ran = run("pipeline", "run", model, text, "-o", tmp_path / "out.conllu")
    assert_ok(ran)
    assert len(read_conll(tmp_path / "out.conllu")) == 3
    again = run("pipeline", "run", model, tmp_path / "out.conllu", "--input", "conllu")
    assert_ok(again)
    assert [s.forms for s in parse_conll(again.stdout)] == [s.forms for s in read_conll(tmp_path / "out.conllu")]
    assert "pipeline.npz: " in error_line(run("pipeline", "run", tmp_path / "pipeline.npz", text))
    assert "--input" in usage_line(run("pipeline", "run", model, text, "--input", "xml"))
    assert "the content is CoNLL-U" in error_line(run("pipeline", "run", model, tmp_path / "out.conllu"))


def test_cli_evaluates_with_the_conll_2018_metrics(pt: Pipeline, tmp_path: Path) -> None:
    """`pipeline evaluate` prints udeval's table; the scores themselves are checked against udeval in
    tests/test_ud_evaluation.py."""
    gold = tmp_path / "gold.conllu"
    gold.write_text("".join(b + "\n\n" for b in (UD / "pt_bosque-ud-dev.conllu").read_text(encoding="utf-8")
                            .split("\n\n")[:30] if b.strip()), encoding="utf-8")
    text = "".join(line[len("# text = "):] + "\n" for line in gold.read_text(encoding="utf-8").splitlines()
                   if line.startswith("# text = "))
    pred = tmp_path / "pred.conllu"
    pred.write_text(pt.conllu(text, input="lines"), encoding="utf-8")
    table = run("pipeline", "evaluate", gold, pred)
    assert_ok(table)
    lines = table.stdout.splitlines()
    assert lines[0].startswith("Metric") and [line.split()[0] for line in lines[2:]] == [
        "Tokens", "Sentences", "Words", "UPOS", "XPOS", "UFeats", "AllTags", "Lemmas", "UAS", "LAS", "CLAS", "MLAS",
        "BLEX"]
    same = run("pipeline", "evaluate", gold, gold, "--json")
    assert_ok(same)
    scores = json.loads(same.stdout)
    assert scores["LAS"]["f1"] == scores["Words"]["f1"] == 100.0 and scores["Words"]["gold"] > 500
    other = tmp_path / "other.conllu"
    other.write_text(pt.conllu("Outro texto.", input="text"), encoding="utf-8")
    assert "its text differs from" in error_line(run("pipeline", "evaluate", gold, other))
