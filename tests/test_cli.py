"""Tests of the ``egnlp`` command line, run in-process with typer's CliRunner.

The ``es`` data set is read through NLTK's data path (set NLTK_DATA). One
small parser is trained once per module (150 training sentences, 60 dev
sentences, 2 passes) and shared by the parse, evaluate and model-file tests.

With typer 0.29 the runner keeps ``result.stdout`` and ``result.stderr``
apart (``result.output`` interleaves both). An uncaught exception also ends
with exit code 1 but leaves no traceback in the output, so user errors are
recognised by ``result.exception`` being the ``SystemExit`` of ``fail()``.
"""

from __future__ import annotations

import dataclasses
import io
import json
import random
import re
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from typer.testing import Result

from egnlp.corpora import Sentence, format_conll, list_datasets, load_dataset, read_conll, write_conll
from egnlp.base.files import add_checksum
from egnlp.corpora.sentence import COL9, COL10, DEPREL, HEAD, find_cycle, is_projective
from egnlp.parser.attachment import attachment_scores
from egnlp.parser.parser_model import Parser

from cli_helpers import assert_ok, error_line, ok_output, run, usage_line

N_TRAIN, N_DEV, N_TEST = 150, 60, 40
PASSES = 2


def with_columns(sentence: Sentence, **columns: Callable[[tuple[str, ...]], str]) -> Sentence:
    """A copy of the sentence whose columns HEAD, DEPREL, COL9, COL10 (by name) are recomputed per row."""
    index = {"HEAD": HEAD, "DEPREL": DEPREL, "COL9": COL9, "COL10": COL10}
    rows = []
    for row in sentence.rows:
        new = list(row)
        for name, value in columns.items():
            new[index[name]] = value(row)
        rows.append(tuple(new))
    return dataclasses.replace(sentence, rows=tuple(rows))


def assert_same_tokens(gold: list[Sentence], pred: list[Sentence]) -> None:
    """Same sentences and tokens: every column but HEAD, DEPREL and columns 9-10 unchanged."""
    kept = [i for i in range(10) if i not in (HEAD, DEPREL, COL9, COL10)]
    assert len(pred) == len(gold)
    for g, p in zip(gold, pred):
        assert [[row[i] for i in kept] for row in p.rows] == [[row[i] for i in kept] for row in g.rows]
        assert p.aside == g.aside


# --- shared files and model ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Small real CoNLL files cut from the es splits exported through the CLI.

    ``test`` carries gold labels and, in columns 9-10, copies of HEAD and
    DEPREL, so a prediction that kept any gold syntax would show it.
    """
    es = next(info for info in list_datasets() if info.name == "es")
    if not es.found:
        pytest.fail(f"NLTK package '{es.source}' not found; set NLTK_DATA to the project's NLTK data folder")
    folder = tmp_path_factory.mktemp("cli")
    paths = {name: folder / f"{name}.conll" for name in ("train", "dev", "test", "unannotated")}
    for split, count in (("train", N_TRAIN), ("dev", N_DEV), ("test", N_TEST)):
        full = folder / f"es-{split}.conll"
        assert_ok(run("data", "export", "es", split, "-o", full))
        write_conll(paths[split], read_conll(full)[:count])
    test = [with_columns(s, COL9=lambda row: row[HEAD], COL10=lambda row: row[DEPREL])
            for s in read_conll(paths["test"])]
    write_conll(paths["test"], test)
    blank = [with_columns(s, HEAD=lambda row: "_", DEPREL=lambda row: "_") for s in test]
    write_conll(paths["unannotated"], blank)
    paths["folder"] = folder
    return paths


@pytest.fixture(scope="module")
def training(files: dict[str, Path]) -> tuple[Result, Path]:
    model = files["folder"] / "m.npz"
    result = run("parser", "train", "--train", files["train"], "--dev", files["dev"], "--out", model,
                 "--passes", PASSES)
    return result, model


@pytest.fixture(scope="module")
def model(training: tuple[Result, Path]) -> Path:
    return ok_output(training)


@pytest.fixture(scope="module")
def prediction(model: Path, files: dict[str, Path]) -> tuple[Result, Path]:
    pred = files["folder"] / "pred.conll"
    return run("parser", "parse", model, files["test"], "-o", pred), pred


# --- data ----------------------------------------------------------------------------------------


def test_data_list_shows_every_data_set_as_found() -> None:
    result = run("data", "list")
    assert_ok(result)
    rows = {line.split()[0]: line.split() for line in result.stdout.splitlines()[1:]}
    assert result.stdout.split()[:4] == ["name", "task", "root", "found"]
    for name in ("es", "eu", "wsj", "pt-bosque", "nl-alpino", "brown", "conll2000-pos", "conll2000-chunk", "ptb-pos"):
        assert name in rows, result.stdout
        assert rows[name][3] == "yes", result.stdout
    assert rows["conll2000-chunk"][1] == "chunk" and rows["es"][1] == "parse"


def test_data_export_test_split_reads_back_identical(tmp_path: Path) -> None:
    out = tmp_path / "f.conll"
    result = run("data", "export", "es", "test", "-o", out)
    assert_ok(result)
    assert "563 sentences" in result.stderr
    exported = read_conll(out)
    assert len(exported) == 563
    expected = format_conll(load_dataset("es", "test"))
    assert format_conll(exported) == expected
    assert out.read_text(encoding="utf-8") == expected


def test_data_export_unknown_name_is_one_line_error(tmp_path: Path) -> None:
    out = tmp_path / "f.conll"
    line = error_line(run("data", "export", "nosuchset", "test", "-o", out))
    assert "nosuchset" in line
    assert not out.exists()


# --- train, parse, evaluate end to end -----------------------------------------------------------


def test_train_prints_each_pass_to_stderr_and_writes_the_model(training: tuple[Result, Path]) -> None:
    result, path = training
    assert_ok(result)
    progress = [int(m.group(1)) for m in re.finditer(r"^\s*(\d+)\s+\d+\.\d+\s", result.stderr, re.MULTILINE)]
    assert set(range(1, PASSES + 1)) <= set(progress), result.stderr
    assert "eff.it" in result.stderr and "eff.it" not in result.stdout
    # --gap-every 0 (the default): the primal (fifth column) and the gap of the last pass only, '-' before it
    rows = [line.split() for line in result.stderr.splitlines() if re.match(r"^\s*\d+\s+\d+\.\d+\s", line)]
    assert all(row[4] == row[6] == "-" for row in rows[:-1]) and float(rows[-1][4]) > 0, result.stderr
    assert f"training on {N_TRAIN} sentences, dev {N_DEV}" in result.stderr
    parser = Parser.load(path)
    assert parser.info["train_sentences"] == N_TRAIN
    assert parser.root == "single"  # every es training tree has one root


def test_parse_writes_same_tokens_with_valid_trees_and_labels(
    prediction: tuple[Result, Path], files: dict[str, Path], model: Path
) -> None:
    result, pred = prediction
    assert_ok(result)
    gold = read_conll(files["test"])
    assert any(label != "_" for s in gold for label in s.deprels)  # the input had labels...
    assert any(row[COL9] != "_" for s in gold for row in s.rows)  # ...and PHEAD
    parsed = read_conll(pred)  # require_heads=True: every sentence has a HEAD column
    assert_same_tokens(gold, parsed)
    for sentence in parsed:
        heads = sentence.heads
        assert all(0 <= h <= len(sentence) for h in heads)
        assert heads.count(0) == 1  # the model's tree space is 'single'
        assert find_cycle(heads) is None
        assert all(row[COL9] == "_" and row[COL10] == "_" for row in sentence.rows)
    assert Parser.load(model).tree == "projective"  # the default tree space
    assert all(is_projective(s.heads) for s in parsed)
    train_labels = {label for s in read_conll(files["train"]) for label in s.deprels}
    predicted = [row[DEPREL] for s in parsed for row in s.rows]
    assert set(predicted) <= train_labels and len(set(predicted)) > 3  # the labeler names the arcs


def test_evaluate_json_matches_attachment_scores(prediction: tuple[Result, Path], files: dict[str, Path]) -> None:
    _, pred = prediction
    result = run("parser", "evaluate", files["test"], pred, "--json")
    assert_ok(result)
    scores = json.loads(result.stdout)  # one JSON object and nothing else
    assert isinstance(scores, dict)
    assert {"uas", "las", "uas_nopunct", "las_nopunct", "las_universal", "tokens"} <= scores.keys()
    direct = attachment_scores(read_conll(files["test"]), read_conll(pred))
    assert scores["las"] == direct["las"] and 0.0 < scores["las"] <= scores["uas"]
    assert scores["uas"] == direct["uas"]
    assert scores["uas_nopunct"] == direct["uas_nopunct"]
    assert scores["tokens"] == sum(len(s) for s in read_conll(files["test"]))
    assert 0.0 <= scores["uas"] <= 100.0


def test_evaluate_text_output_names_uas(prediction: tuple[Result, Path], files: dict[str, Path]) -> None:
    _, pred = prediction
    result = run("parser", "evaluate", files["test"], pred)
    assert_ok(result)
    assert "UAS" in result.stdout
    uas = attachment_scores(read_conll(files["test"]), read_conll(pred))["uas"]
    assert f"{uas:.2f}" in result.stdout


def test_evaluate_different_sentence_counts_fails(prediction: tuple[Result, Path], tmp_path: Path,
                                                  files: dict[str, Path]) -> None:
    _, pred = prediction
    short = tmp_path / "short.conll"
    write_conll(short, read_conll(pred)[:-1])
    line = error_line(run("parser", "evaluate", files["test"], short))
    assert str(N_TEST) in line and str(N_TEST - 1) in line


def test_parse_unannotated_input(model: Path, prediction: tuple[Result, Path], files: dict[str, Path],
                                 tmp_path: Path) -> None:
    out = tmp_path / "pred.conll"
    result = run("parser", "parse", model, files["unannotated"], "-o", out)
    assert_ok(result)
    parsed = read_conll(out)
    assert_same_tokens(read_conll(files["unannotated"], require_heads=False), parsed)
    # The features never look at gold syntax, so the trees equal those of the annotated input.
    assert [s.heads for s in parsed] == [s.heads for s in read_conll(prediction[1])]


def test_saved_model_predicts_the_heads_the_cli_wrote(model: Path, prediction: tuple[Result, Path],
                                                      files: dict[str, Path]) -> None:
    result, pred = prediction
    assert_ok(result)
    heads = Parser.load(model).predict_heads(read_conll(files["test"]))
    assert heads == [s.heads for s in read_conll(pred)]


def test_parse_no_prune_decodes_every_arc(model: Path, prediction: tuple[Result, Path], files: dict[str, Path],
                                          tmp_path: Path) -> None:
    """--no-prune gives the trees of a parser decoding every arc; the default those of a pruning one."""
    out = tmp_path / "exact.conll"
    assert_ok(run("parser", "parse", model, files["test"], "-o", out, "--no-prune"))
    sentences = read_conll(files["test"])
    assert [s.heads for s in read_conll(out)] == Parser.load(model, prune=False).predict_heads(sentences)
    assert [s.heads for s in read_conll(prediction[1])] == Parser.load(model, prune=True).predict_heads(sentences)


def test_parse_latin1_input_with_encoding_option(model: Path, tmp_path: Path) -> None:
    source = tmp_path / "latin1.conll"
    source.write_bytes(GOOD.encode("latin-1"))
    out = tmp_path / "pred.conll"
    assert_ok(run("parser", "parse", model, source, "-o", out, "--encoding", "latin-1"))
    assert [s.forms for s in read_conll(out)] == [s.forms for s in read_conll(source, encoding="latin-1")]


# --- training data options -----------------------------------------------------------------------


def test_train_data_accepts_a_conll_file_path(files: dict[str, Path], tmp_path: Path) -> None:
    small = tmp_path / "small.conll"
    write_conll(small, read_conll(files["train"])[:40])
    out = tmp_path / "m.npz"
    result = run("parser", "train", "--data", small, "--out", out, "--passes", 1)
    assert_ok(result)
    assert "training on 40 sentences" in result.stderr
    assert Parser.load(out).info["train_sentences"] == 40


def test_train_on_dev_trains_on_the_dev_sentences_and_scores_none(files: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "m.npz"
    result = run("parser", "train", "--train", files["train"], "--dev", files["dev"], "--train-on-dev", "--out", out,
                 "--passes", 1, "--no-labels")
    assert_ok(result)
    assert f"training on {N_TRAIN + N_DEV} sentences (with the dev sentences)\n" in result.stderr
    info = Parser.load(out).info
    assert info["train_sentences"] == N_TRAIN + N_DEV and not info.get("dev_sentences")
    assert "best_pass" not in info  # nothing scored, nothing chosen


def test_data_set_dev_split_is_trained_on_unless_held_out() -> None:
    from egnlp.inputs import training_sets

    held = training_sets("es", None, None, trees=True)
    joined = training_sets("es", None, None, trees=True, train_on_dev=True)
    assert joined.dev is None and held.dev is not None
    assert [s.forms for s in joined.train] == [s.forms for s in held.train + held.dev]


@pytest.mark.parametrize("option", [["--patience", "2"], ["--C-path", "100:0.5:2"]])
def test_train_on_dev_refuses_options_that_score_a_held_out_dev_set(files: dict[str, Path], tmp_path: Path,
                                                                    option: list[str]) -> None:
    out = tmp_path / "m.npz"
    line = usage_line(run("parser", "train", "--data", "es", "--train-on-dev", *option, "--out", out))
    assert option[0] in line and "--train-on-dev" in line
    assert not out.exists()


def test_train_data_unknown_name(tmp_path: Path) -> None:
    out = tmp_path / "m.npz"
    line = error_line(run("parser", "train", "--data", "nosuchset", "--out", out, "--passes", 1))
    assert "nosuchset" in line
    assert not out.exists()


def test_train_data_and_train_together(files: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "m.npz"
    error_line(run("parser", "train", "--data", "es", "--train", files["train"], "--out", out, "--passes", 1))
    assert not out.exists()


# --- malformed CoNLL input -----------------------------------------------------------------------

# Two sentences: lines 1-3, a blank line 4, then lines 5-8 (forms with an accent for the encoding cases).
GOOD_LINES = [
    "1\tEl\tel\td\tda\tgen=m|num=s\t2\tspec\t_\t_",
    "2\tgato\tgato\tn\tnc\tgen=m|num=s\t3\tsuj\t_\t_",
    "3\tduerme\tdormir\tv\tvm\tnum=s\t0\tsentence\t_\t_",
    "",
    "1\tLos\tel\td\tda\tgen=m|num=p\t2\tspec\t_\t_",
    "2\tniños\tniño\tn\tnc\tgen=m|num=p\t3\tsuj\t_\t_",
    "3\tcantan\tcantar\tv\tvm\tnum=p\t0\tsentence\t_\t_",
    "4\t.\t.\tF\tFp\t_\t3\tf\t_\t_",
]
GOOD = "\n".join(GOOD_LINES) + "\n\n"


def edited(*changes: tuple[int, int, str | None]) -> bytes:
    """GOOD as UTF-8 with ``(line, column, value)`` changes; a value None drops the line's last column."""
    lines = [row.split("\t") for row in GOOD_LINES]
    for line, column, value in changes:
        if value is None:
            del lines[line - 1][-1]
        else:
            lines[line - 1][column] = value
    return ("\n".join("\t".join(row) for row in lines) + "\n\n").encode("utf-8")


def with_heads(heads: list[int]) -> bytes:
    """GOOD with the heads of the second sentence (lines 5-8) replaced."""
    return edited(*((5 + i, HEAD, str(head)) for i, head in enumerate(heads)))


# (id, file bytes or None for a missing file, line number the message must give or None, words it must contain)
MALFORMED = [
    ("columns", edited((6, 0, None)), 6, ["columns"]),
    ("head-not-integer", edited((6, HEAD, "dos")), 6, ["dos", "integer"]),
    ("head-out-of-range", edited((6, HEAD, "9")), 6, ["9", "0..4"]),
    ("no-root", with_heads([2, 3, 4, 3]), 5, ["root"]),
    ("cycle", with_heads([3, 4, 0, 2]), 6, ["cycle"]),
    ("not-utf8", GOOD.encode("latin-1"), 6, ["utf-8", "--encoding"]),
    ("empty", b"", None, ["no sentences"]),
    ("missing", None, None, ["file"]),
]


def malformed_file(folder: Path, name: str, data: bytes | None) -> Path:
    path = folder / f"bad-{name}.conll"
    if data is not None:
        path.write_bytes(data)
    return path


def check_message(line: str, path: Path, number: int | None, words: list[str]) -> None:
    where = f"{path}:{number}:" if number is not None else f"{path}"
    assert where in line
    for word in words:
        assert word in line


def test_parse_input_file_named_like_a_data_set(model: Path, files: dict[str, Path], tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    Path("es").write_bytes(files["test"].read_bytes())
    assert_ok(run("parser", "parse", model, "es", "-o", "pred.conll"))
    assert len(read_conll("pred.conll")) == N_TEST


def test_good_file_is_valid(tmp_path: Path) -> None:
    """The malformed cases below differ from a file that reads."""
    path = malformed_file(tmp_path, "good", GOOD.encode("utf-8"))
    assert [s.heads for s in read_conll(path)] == [[2, 3, 0], [2, 3, 0, 3]]


@pytest.mark.parametrize(("name", "data", "number", "words"), MALFORMED, ids=[case[0] for case in MALFORMED])
def test_parse_malformed_input(model: Path, tmp_path: Path, name: str, data: bytes | None, number: int | None,
                               words: list[str]) -> None:
    source = malformed_file(tmp_path, name, data)
    out = tmp_path / "pred.conll"
    if name == "empty":  # no sentences to parse, as for tagger tag and parse-text: an empty output
        assert_ok(run("parser", "parse", model, source, "-o", out))
        assert out.read_text(encoding="utf-8") == ""
        return
    line = error_line(run("parser", "parse", model, source, "-o", out))
    check_message(line, source, number, words)
    assert not out.exists()


@pytest.mark.parametrize(("name", "data", "number", "words"), MALFORMED, ids=[case[0] for case in MALFORMED])
def test_train_malformed_input(tmp_path: Path, name: str, data: bytes | None, number: int | None,
                               words: list[str]) -> None:
    source = malformed_file(tmp_path, name, data)
    out = tmp_path / "m.npz"
    line = error_line(run("parser", "train", "--train", source, "--out", out, "--passes", 1))
    check_message(line, source, number, words)
    assert not out.exists()


@pytest.mark.parametrize(("name", "data", "number", "words"), [MALFORMED[1], MALFORMED[4]],
                         ids=[MALFORMED[1][0], MALFORMED[4][0]])
def test_train_malformed_dev_file(files: dict[str, Path], tmp_path: Path, name: str, data: bytes, number: int,
                                  words: list[str]) -> None:
    source = malformed_file(tmp_path, name, data)
    out = tmp_path / "m.npz"
    line = error_line(run("parser", "train", "--train", files["train"], "--dev", source, "--out", out,
                          "--passes", 1))
    check_message(line, source, number, words)
    assert not out.exists()


@pytest.mark.parametrize(("name", "data", "number", "words"), [MALFORMED[0], MALFORMED[5]],
                         ids=[MALFORMED[0][0], MALFORMED[5][0]])
def test_evaluate_malformed_input(prediction: tuple[Result, Path], tmp_path: Path, name: str, data: bytes,
                                  number: int, words: list[str]) -> None:
    source = malformed_file(tmp_path, name, data)
    line = error_line(run("parser", "evaluate", source, prediction[1]))
    check_message(line, source, number, words)


# --- model files ---------------------------------------------------------------------------------


def npz_bytes(**arrays: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    return buffer.getvalue()


def meta_array(meta: object) -> np.ndarray:
    return np.frombuffer(json.dumps(meta).encode("utf-8"), dtype=np.uint8)


def real_model(model: Path) -> tuple[dict[str, np.ndarray], dict]:
    with np.load(model, allow_pickle=False) as data:
        arrays = {name: data[name] for name in data.files}
    return arrays, json.loads(arrays["meta"].tobytes().decode("utf-8"))


def with_meta(model: Path, **changes: object) -> bytes:
    """The model file with its metadata changed and a valid checksum (so that the metadata is what fails)."""
    arrays, meta = real_model(model)
    return add_checksum(npz_bytes(**{**arrays, "meta": meta_array({**meta, **changes})}))


def npy_bytes(model: Path) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, real_model(model)[0]["weights"])
    return buffer.getvalue()


# (id, how to make the model file's bytes from the real model, or None for a missing file;
#  words the message must contain)
BAD_MODELS = [
    ("random-bytes", lambda m: random.Random(0).randbytes(4000), []),
    ("truncated", lambda m: m.read_bytes()[: m.stat().st_size // 2], []),
    ("wrong-kind", lambda m: with_meta(m, kind="egnlp-tagger"), ["egnlp-tagger"]),
    ("wrong-format-version", lambda m: with_meta(m, format_version=99), ["99"]),
    ("text-file", lambda m: b"this is not a model\n", []),
    ("npz-without-meta", lambda m: npz_bytes(weights=real_model(m)[0]["weights"]), []),
    ("missing", lambda m: None, ["no such"]),
    ("npy-array", npy_bytes, ["not an .npz"]),
    ("features-not-a-dict", lambda m: with_meta(m, features=["x"]), ["feature"]),
]
MODEL_CASES = [pytest.param(name, make, words, id=name) for name, make, words in BAD_MODELS]


@pytest.mark.parametrize(("name", "make", "words"), MODEL_CASES)
def test_parse_with_unusable_model(model: Path, files: dict[str, Path], tmp_path: Path, name: str,
                                   make: Callable[[Path], bytes | None], words: list[str]) -> None:
    bad = tmp_path / f"{name}.npz"
    data = make(model)
    if data is not None:
        bad.write_bytes(data)
    out = tmp_path / "pred.conll"
    line = error_line(run("parser", "parse", bad, files["test"], "-o", out))
    assert str(bad) in line
    for word in words:
        assert word in line
    assert not out.exists()


def test_tree_space_auto_measures_both_spaces_and_the_model_keeps_the_better(files: dict[str, Path]) -> None:
    """``--tree auto`` decodes the training file's last tenth both ways with a model of the first nine
    tenths and keeps the space that scores higher (projective on a tie); ``model info`` shows both scores;
    a non-projective model's parses are trees, and cross somewhere."""
    out = files["folder"] / "auto.npz"
    result = run("parser", "train", "--train", files["train"], "--out", out, "--passes", PASSES, "--tree", "auto")
    assert_ok(result)
    model = Parser.load(out)
    choice = model.info["tree_choice"]
    uas = choice["uas"]
    assert model.tree == choice["chosen"] == ("non-projective" if uas["non-projective"] > uas["projective"]
                                              else "projective")
    assert f"{model.tree} trees, labeled" in result.stderr and choice["tuning_sentences"] == 15
    shown = run("model", "info", out)
    assert_ok(shown)
    said = (f"{model.tree} by --tree auto: UAS on the training file's last tenth (15 sentences) projective "
            f"{uas['projective']:.2f}, non-projective {uas['non-projective']:.2f}")
    assert said in shown.stdout
    # the measurement's lines come before the pass table, the labeler's after its last pass
    lines = result.stderr.splitlines()
    at = {key: next(i for i, line in enumerate(lines) if line.startswith(key))
          for key in ("--tree auto: a model trained in each tree space", said, "pass ", f"{PASSES:>4} ",
                      "arc labeler: maxent")}
    assert list(at.values()) == sorted(at.values())
    crossing = run("parser", "train", "--train", files["train"], "--out", out, "--passes", PASSES, "--tree",
                   "non-projective")
    assert_ok(crossing)
    parsed = Parser.load(out).parse(read_conll(files["test"]))
    assert not all(is_projective(s.heads) for s in parsed)
    assert all(find_cycle(s.heads) is None and s.heads.count(0) == 1 for s in parsed)
    wrong = run("parser", "train", "--train", files["train"], "--out", out, "--tree", "planar")
    assert "--tree: invalid choice 'planar' (choose from projective, non-projective, auto)" in usage_line(wrong)


def test_skip_invalid_skips_sentences_that_are_not_trees(files: dict[str, Path], tmp_path: Path) -> None:
    sentences = read_conll(files["train"])[:40]
    broken = with_columns(sentences[3], HEAD=lambda row: "1" if row[0] == "1" else row[6])  # word 1 heads itself
    path = tmp_path / "broken.conll"
    write_conll(path, [*sentences[:3], broken, *sentences[4:]])
    out = tmp_path / "m.npz"
    line = error_line(run("parser", "train", "--train", path, "--out", out, "--passes", 1))
    start = sum(len(s.lines()) + 1 for s in sentences[:3]) + 1  # the broken sentence's first line
    assert line == f"error: {path}:{start}: token 1 is its own head"
    result = run("parser", "train", "--train", path, "--out", out, "--passes", 1, "--skip-invalid")
    assert_ok(result)
    assert "skipped 1 sentence whose heads do not form a tree" in result.stderr
    assert Parser.load(out).info["train_sentences"] == 39
