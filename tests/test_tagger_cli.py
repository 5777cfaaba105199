"""End-to-end tests of ``egnlp tagger train / tag / evaluate`` and ``egnlp parse-text`` (CliRunner, in-process).

Small slices of ``conll2000-pos``, ``conll2000-chunk`` and ``ptb-pos`` are
written as CoNLL files; a CRF POS tagger (150 sentences, 6 passes), a CRF
chunker, a maxent tagger and a tiny ``wsj`` parser are trained once per
module.  Set NLTK_DATA to the project's NLTK data folder.

The commands are run through the main app (``egnlp.cli.app``) once it mounts
the tagger commands; until then through an app built here from
``egnlp.cli.tagger`` the same way.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from typer.testing import Result

from egnlp.corpora import load_dataset, load_sentences, parse_conll, read_conll, write_conll
from egnlp.corpora.sentence import CPOS, POS
from egnlp.parser_training import train_parser
from egnlp.pipeline import parse_text, to_conllu
from cli_helpers import assert_ok, error_line, ok_output, run, usage_line
from egnlp.tagger import Tagger
from egnlp.tagger.accuracy import tag_scores
from egnlp.tagger.text import sentences_and_tokens, split_sentences

N_TRAIN, N_TEST, N_CHUNK_TRAIN = 150, 60, 100
TEXT = ("The company said its profit rose 5 % in the third quarter. Mr. Smith, the chairman, "
        "expects sales to grow next year!\n\nShares fell 2.5 cents.")




# --- shared files and models ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("tagger-cli")
    paths = {"folder": folder}
    for name, data, split, count in (
        ("pos-train", "conll2000-pos", "train", N_TRAIN),
        ("pos-test", "conll2000-pos", "test", N_TEST),
        ("chunk-train", "conll2000-chunk", "train", N_CHUNK_TRAIN),
        ("chunk-test", "conll2000-chunk", "test", N_TEST),
        ("ptb-train", "ptb-pos", "train", N_TRAIN),
    ):
        paths[name] = folder / f"{name}.conll"
        write_conll(paths[name], load_sentences(data, split)[:count])
    paths["text"] = folder / "text.txt"
    paths["text"].write_text(TEXT, encoding="utf-8")
    return paths


@pytest.fixture(scope="module")
def pos_training(files: dict[str, Path]) -> tuple[Result, Path]:
    model = files["folder"] / "pos.npz"
    return run("tagger", "train", "--train", files["pos-train"], "--dev", files["pos-test"], "--out", model,
               "--passes", 6), model


@pytest.fixture(scope="module")
def pos_model(pos_training: tuple[Result, Path]) -> Path:
    return ok_output(pos_training)


@pytest.fixture(scope="module")
def pos_prediction(pos_model: Path, files: dict[str, Path]) -> Path:
    pred = files["folder"] / "pos-pred.conll"
    assert_ok(run("tagger", "tag", pos_model, files["pos-test"], "--format", "conll", "-o", pred))
    return pred


@pytest.fixture(scope="module")
def chunk_model(files: dict[str, Path]) -> Path:
    model = files["folder"] / "chunk.npz"
    assert_ok(run("tagger", "train", "--train", files["chunk-train"], "--column", "chunk", "--out", model,
                  "--passes", 6))
    return model


@pytest.fixture(scope="module")
def parser_model(files: dict[str, Path]) -> Path:
    parser, _ = train_parser(load_dataset("wsj", "train")[:30], root="single", max_passes=3)
    path = files["folder"] / "parser.npz"
    parser.save(path)
    return path


@pytest.fixture(scope="module")
def ptb_model(files: dict[str, Path]) -> Path:
    model = files["folder"] / "ptb.npz"
    assert_ok(run("tagger", "train", "--data", files["ptb-train"], "--out", model, "--passes", 5))
    return model


def majority_baseline(train: Path, test: Path) -> float:
    """Token accuracy (%) of tagging every test token with the most frequent training POS tag."""
    tag, _ = Counter(t for s in read_conll(train, require_heads=False) for t in s.pos).most_common(1)[0]
    gold = [t for s in read_conll(test, require_heads=False) for t in s.pos]
    return 100.0 * sum(t == tag for t in gold) / len(gold)


# --- train ---------------------------------------------------------------------------------------


def test_train_reports_passes_and_records_the_vocabulary(pos_training: tuple[Result, Path],
                                                         files: dict[str, Path]) -> None:
    result, model = pos_training
    assert_ok(result)
    assert result.stdout == ""
    pass_lines = [line for line in result.stderr.splitlines() if line.split()[:1] and line.split()[0].isdigit()]
    assert [int(line.split()[0]) for line in pass_lines] == list(range(0, 7))
    assert "model written to" in result.stderr
    tagger = Tagger.load(model)
    assert tagger.kind == "crf" and tagger.column == "pos" and not tagger.use_pos
    train_forms = {w for s in read_conll(files["pos-train"], require_heads=False) for w in s.forms}
    assert tagger.vocabulary == sorted(train_forms)


def test_vocabulary_is_optional_in_model_files(pos_model: Path, tmp_path: Path) -> None:
    tagger = Tagger.load(pos_model)
    Tagger(tagger.model, tagger.column, tagger.info).save(tmp_path / "novocab.npz")
    assert Tagger.load(tmp_path / "novocab.npz").vocabulary is None
    Tagger(tagger.model, tagger.column, vocabulary={"b", "a", "é"}).save(tmp_path / "small.npz")
    assert Tagger.load(tmp_path / "small.npz").vocabulary == ["a", "b", "é"]


def test_train_chunker_on_a_file_with_chunk_column(chunk_model: Path) -> None:
    tagger = Tagger.load(chunk_model)
    assert tagger.column == "chunk" and tagger.use_pos
    assert all(label == "O" or label[:2] in ("B-", "I-") for label in tagger.labels)


def test_train_maxent_tag_and_evaluate(files: dict[str, Path], tmp_path: Path) -> None:
    model = tmp_path / "maxent.npz"
    result = run("tagger", "train", "--train", files["pos-train"], "--model", "maxent", "--trainer", "cd",
                 "--passes", 8, "--out", model)
    assert_ok(result)
    assert "|grad|" in result.stderr.splitlines()[2]  # the header of the per-pass lines: no dual
    tagger = Tagger.load(model)
    assert tagger.kind == "maxent" and tagger.vocabulary
    assert tagger.info["trainer"] == "cd" and tagger.info["config"]["C"] == pytest.approx(0.1)
    assert tagger.info["final"]["passes"] <= 8 and tagger.info["final"]["grad_norm"] > 0
    pred = tmp_path / "maxent-pred.conll"
    assert_ok(run("tagger", "tag", model, files["pos-test"], "--format", "conll", "-o", pred))
    scores = json.loads(run("tagger", "evaluate", files["pos-test"], pred, "--json", "--model", model).stdout)
    assert scores["accuracy"] > max(75.0, majority_baseline(files["pos-train"], files["pos-test"]))
    assert scores["unknown_accuracy"] is not None


@pytest.mark.parametrize("model", ["crf", "maxent"])
def test_train_max_seconds_stops_after_the_first_pass(files: dict[str, Path], tmp_path: Path, model: str) -> None:
    out = tmp_path / f"{model}-timed.npz"
    result = run("tagger", "train", "--train", files["pos-train"], "--model", model, "--max-seconds", 1e-9,
                 "--out", out)
    assert_ok(result)
    assert "stopped before converging" in result.stderr
    info = Tagger.load(out).info
    assert info["final"]["passes"] == 1


# --- tag and evaluate ----------------------------------------------------------------------------


def test_tag_conll_keeps_tokens_and_fills_pos(pos_prediction: Path, files: dict[str, Path]) -> None:
    gold = read_conll(files["pos-test"], require_heads=False)
    pred = read_conll(pos_prediction, require_heads=False)
    assert [s.forms for s in pred] == [s.forms for s in gold]
    assert [s.chunks for s in pred] == [s.chunks for s in gold]  # other columns kept
    assert all(row[CPOS] == row[POS] for s in pred for row in s.rows)
    assert [s.pos for s in pred] != [s.pos for s in gold]


def test_evaluate_json_beats_majority_baseline(pos_model: Path, pos_prediction: Path,
                                               files: dict[str, Path]) -> None:
    result = run("tagger", "evaluate", files["pos-test"], pos_prediction, "--json", "--model", pos_model)
    assert_ok(result)
    scores = json.loads(result.stdout)
    assert scores["column"] == "pos"  # 11 columns in both, but only the POS column differs
    baseline = majority_baseline(files["pos-train"], files["pos-test"])
    assert scores["accuracy"] > max(baseline + 40, 75.0)
    gold = read_conll(files["pos-test"], require_heads=False)
    vocab = set(Tagger.load(pos_model).vocabulary)
    expected = tag_scores(gold, read_conll(pos_prediction, require_heads=False), "pos", vocab)
    assert scores["accuracy"] == pytest.approx(expected["accuracy"])
    assert scores["unknown_tokens"] == sum(w not in vocab for s in gold for w in s.forms) > 0
    assert 0 <= scores["unknown_accuracy"] < scores["accuracy"]
    # Without the model there is no vocabulary, so no unknown-word accuracy.
    plain = json.loads(run("tagger", "evaluate", files["pos-test"], pos_prediction, "--json").stdout)
    assert plain["accuracy"] == pytest.approx(scores["accuracy"]) and plain["unknown_accuracy"] is None
    text = run("tagger", "evaluate", files["pos-test"], pos_prediction, "--model", pos_model)
    assert_ok(text)
    assert f"accuracy {scores['accuracy']:.2f}%" in text.stdout and "unknown-word accuracy" in text.stdout


def test_saved_model_gives_the_predictions_the_cli_wrote(pos_model: Path, pos_prediction: Path,
                                                         files: dict[str, Path], tmp_path: Path) -> None:
    gold = read_conll(files["pos-test"], require_heads=False)
    tagger = Tagger.load(pos_model)
    direct = [s.pos for s in tagger.tag_corpus(gold)]
    assert direct == [s.pos for s in read_conll(pos_prediction, require_heads=False)]
    tagger.save(tmp_path / "copy.npz")
    again = Tagger.load(tmp_path / "copy.npz")
    assert [s.pos for s in again.tag_corpus(gold)] == direct
    assert again.vocabulary == tagger.vocabulary and again.labels == tagger.labels


def test_tag_raw_text_from_stdin_and_file(pos_model: Path, files: dict[str, Path]) -> None:
    result = run("tagger", "tag", pos_model, input=TEXT)
    assert_ok(result)
    assert "tokens/s" in result.stderr
    lines = result.stdout.splitlines()
    expected = sentences_and_tokens(TEXT)
    assert len(lines) == len(expected) == 3
    labels = set(Tagger.load(pos_model).labels)
    for line, tokens in zip(lines, expected):
        pairs = [item.rsplit("/", 1) for item in line.split(" ")]
        assert [w for w, _ in pairs] == tokens
        assert all(tag in labels for _, tag in pairs)
    from_file = run("tagger", "tag", pos_model, files["text"])
    assert from_file.stdout == result.stdout
    out = files["folder"] / "tagged.txt"
    assert_ok(run("tagger", "tag", pos_model, files["text"], "-o", out))
    assert out.read_text(encoding="utf-8") == result.stdout
    conll = run("tagger", "tag", pos_model, "-", "--to", "conll", input=TEXT)
    assert_ok(conll)
    sents = parse_conll(conll.stdout, require_heads=False)
    assert [s.forms for s in sents] == expected
    assert [" ".join(f"{w}/{t}" for w, t in zip(s.forms, s.pos)) for s in sents] == lines


def test_chunker_conll_and_text(chunk_model: Path, pos_model: Path, files: dict[str, Path]) -> None:
    pred = files["folder"] / "chunk-pred.conll"
    assert_ok(run("tagger", "tag", chunk_model, files["chunk-test"], "--format", "conll", "-o", pred))
    gold = read_conll(files["chunk-test"], require_heads=False)
    predicted = read_conll(pred, require_heads=False)
    assert [s.pos for s in predicted] == [s.pos for s in gold]  # the chunker reads POS, does not change it
    result = run("tagger", "evaluate", files["chunk-test"], pred, "--json", "--model", chunk_model)
    assert_ok(result)
    scores = json.loads(result.stdout)
    assert scores["column"] == "chunk"
    assert scores["f1"] > 50.0 and scores["precision"] > 0 and scores["recall"] > 0
    assert scores["accuracy"] > 70.0 and scores["unknown_accuracy"] is not None
    # The auto-chosen column is also the chunk column (both files have chunk tags that differ).
    auto = json.loads(run("tagger", "evaluate", files["chunk-test"], pred, "--json").stdout)
    assert auto["column"] == "chunk" and auto["f1"] == pytest.approx(scores["f1"])
    text = run("tagger", "evaluate", files["chunk-test"], pred)
    assert "F1" in text.stdout and "NP" in text.stdout
    # Raw text needs a POS tagger first.
    tagged = run("tagger", "tag", chunk_model, "--pos-tagger", pos_model, input=TEXT)
    assert_ok(tagged)
    for line in tagged.stdout.splitlines():
        for item in line.split(" "):
            chunk = item.rsplit("/", 2)[2]
            assert chunk == "O" or chunk[:2] in ("B-", "I-")
    assert "--pos-tagger" in error_line(run("tagger", "tag", chunk_model, input=TEXT))


# --- errors --------------------------------------------------------------------------------------


def test_train_errors(files: dict[str, Path], tmp_path: Path, parser_model: Path) -> None:
    out = tmp_path / "m.npz"
    assert "unknown data set or file 'no-such-set'" in error_line(
        run("tagger", "train", "--data", "no-such-set", "--out", out))
    assert "either --data" in error_line(run("tagger", "train", "--out", out))
    assert "no such file" in error_line(run("tagger", "train", "--train", tmp_path / "missing.conll", "--out", out))
    assert "unknown trainer 'cd'" in usage_line(run("tagger", "train", "--train", files["pos-train"], "--out", out,
                                                    "--trainer", "cd"))
    assert "'eg-ll' trains crf taggers (--model crf); maxent trainers: cd, gis, scgis, lbfgs" in usage_line(
        run("tagger", "train", "--train", files["pos-train"], "--out", out, "--model", "maxent", "--trainer", "eg-ll"))
    assert "--model: invalid choice 'hmm' (choose from crf, maxent)" in usage_line(
        run("tagger", "train", "--train", files["pos-train"], "--out", out, "--model", "hmm"))
    assert "no chunk column" in error_line(
        run("tagger", "train", "--train", files["ptb-train"], "--out", out, "--column", "chunk"))
    assert "no setting --seed" in usage_line(
        run("tagger", "train", "--train", files["pos-train"], "--out", out, "--trainer", "lbfgs", "--seed", 1))
    bad = tmp_path / "bad.conll"
    bad.write_text("1\tThe\t_\tDT\tDT\t_\n\n", encoding="utf-8")
    assert "bad.conll:1" in error_line(run("tagger", "train", "--train", bad, "--out", out))
    untagged = tmp_path / "untagged.conll"
    untagged.write_text("1\tThe\t_\t_\t_\t_\t_\t_\t_\t_\n\n", encoding="utf-8")
    assert "no POS tag" in error_line(run("tagger", "train", "--train", untagged, "--out", out))
    assert not out.exists()


def test_tag_and_evaluate_errors(pos_model: Path, chunk_model: Path, pos_prediction: Path, parser_model: Path,
                                 files: dict[str, Path], tmp_path: Path) -> None:
    assert "no such model file" in error_line(run("tagger", "tag", tmp_path / "none.npz", files["text"]))
    junk = tmp_path / "junk.npz"
    junk.write_bytes(b"PK\x03\x04 this is not a model")
    assert "junk.npz" in error_line(run("tagger", "tag", junk, files["text"]))
    truncated = tmp_path / "truncated.npz"
    truncated.write_bytes(pos_model.read_bytes()[:1000])
    assert "truncated.npz" in error_line(run("tagger", "tag", truncated, files["text"]))
    assert "expected a model of kind 'egnlp-tagger'" in error_line(run("tagger", "tag", parser_model, files["text"]))
    assert "no such file" in error_line(run("tagger", "tag", pos_model, tmp_path / "missing.txt"))
    bad = tmp_path / "bad.conll"
    bad.write_text("1\tThe\tDT\n\n", encoding="utf-8")
    assert "bad.conll:1" in error_line(run("tagger", "tag", pos_model, bad, "--format", "conll"))
    assert "--format: invalid choice 'xml' (choose from auto, text, conll" in usage_line(
        run("tagger", "tag", pos_model, bad, "--format", "xml"))
    untagged = tmp_path / "untagged.conll"
    untagged.write_text("1\tThe\t_\t_\t_\t_\t_\t_\t_\t_\n\n", encoding="utf-8")
    assert "POS" in error_line(run("tagger", "tag", chunk_model, untagged, "--format", "conll"))
    # evaluate: different sentence counts, different tokens, bad files.
    short = tmp_path / "short.conll"
    write_conll(short, read_conll(pos_prediction, require_heads=False)[:-1])
    assert "sentences" in error_line(run("tagger", "evaluate", files["pos-test"], short))
    other = tmp_path / "other.conll"
    write_conll(other, read_conll(files["pos-train"], require_heads=False)[:N_TEST])
    assert "sentence 1" in error_line(run("tagger", "evaluate", files["pos-test"], other, "--column", "pos"))
    assert "no such file" in error_line(run("tagger", "evaluate", files["pos-test"], tmp_path / "nope.conll"))
    assert "bad.conll:1" in error_line(run("tagger", "evaluate", files["pos-test"], bad))
    assert "no chunk column" in error_line(run("tagger", "evaluate", files["ptb-train"], files["ptb-train"],
                                               "--column", "chunk"))
    assert "kind 'egnlp-tagger'" in error_line(run("tagger", "evaluate", files["pos-test"], pos_prediction,
                                                   "--model", parser_model))


# --- parse-text ----------------------------------------------------------------------------------


def test_parse_text_writes_conllu_with_a_head_for_every_token(ptb_model: Path, parser_model: Path,
                                                               files: dict[str, Path]) -> None:
    result = run("parse-text", ptb_model, parser_model, input=TEXT)
    assert_ok(result)
    assert "parsed 3 sentences" in result.stderr
    trees = parse_conll(result.stdout)  # heads required
    assert [s.forms for s in trees] == sentences_and_tokens(TEXT)
    for number, (tree, raw) in enumerate(zip(trees, split_sentences(TEXT)), start=1):
        assert tree.heads is not None and len(tree.heads) == len(tree)
        assert all(0 <= h <= len(tree) for h in tree.heads) and tree.heads.count(0) == 1  # a 'single' root parser
        assert all(row[CPOS] == "_" != row[POS] for row in tree.rows)  # the parser reads XPOS only
        assert (0, f"# sent_id = {number}") in tree.aside
        assert (0, f"# text = {' '.join(raw.split())}") in tree.aside
    # The same from a file, to a file, and from Python.
    out = files["folder"] / "trees.conllu"
    assert_ok(run("parse-text", ptb_model, parser_model, files["text"], "-o", out))
    assert out.read_text(encoding="utf-8") == result.stdout
    from egnlp.parser.parser_model import Parser

    assert to_conllu(parse_text(TEXT, Tagger.load(ptb_model), Parser.load(parser_model))) == result.stdout
    assert_ok(empty := run("parse-text", ptb_model, parser_model, input="  \n"))
    assert empty.stdout == ""


def test_parse_text_errors(ptb_model: Path, chunk_model: Path, parser_model: Path, tmp_path: Path) -> None:
    assert "POS tagger" in error_line(run("parse-text", chunk_model, parser_model, input=TEXT))
    assert "kind 'egnlp-tagger'" in error_line(run("parse-text", parser_model, parser_model, input=TEXT))
    assert "kind 'egnlp-parser'" in error_line(run("parse-text", ptb_model, ptb_model, input=TEXT))
    assert "no such file" in error_line(run("parse-text", ptb_model, parser_model, tmp_path / "none.txt"))
    latin = tmp_path / "latin.txt"
    latin.write_bytes("Caf\xe9 prices rose.".encode("latin-1"))
    assert "--encoding" in error_line(run("parse-text", ptb_model, parser_model, latin))
    assert_ok(run("parse-text", ptb_model, parser_model, latin, "--encoding", "latin-1"))
