"""``egnlp model info FILE [--json]`` end to end on models that the CLI trains here.

A labeled parser (40 ``es`` sentences, 2 passes), a CRF POS tagger and a
maxent POS tagger (100 ``conll2000-pos`` sentences, 3 passes) are trained by
``egnlp parser train`` / ``egnlp tagger train`` once per module; ``model
info`` must report what the loaded models and their training runs hold.  Set
NLTK_DATA to the project's NLTK data folder.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from cli_helpers import assert_ok, error_line, run
from egnlp.corpora import load_dataset, load_sentences, write_conll
from egnlp.base.files import write_npz_atomic
from egnlp.parser import parser_model
from egnlp.parser.parser_model import Parser
from egnlp.tagger import tagger_model
from egnlp.tagger import Tagger


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("model-info")
    paths = {"folder": folder}
    for name, data, split, count in (("parse-train", "es", "train", 40), ("parse-dev", "es", "dev", 10),
                                     ("pos-train", "conll2000-pos", "train", 100)):
        paths[name] = folder / f"{name}.conll"
        sentences = load_dataset(data, split) if data == "es" else load_sentences(data, split)
        write_conll(paths[name], sentences[:count])
    return paths


@pytest.fixture(scope="module")
def parser_file(files: dict[str, Path]) -> Path:
    out = files["folder"] / "parser.npz"
    assert_ok(run("parser", "train", "--train", files["parse-train"], "--dev", files["parse-dev"], "--out", out,
                  "--trainer", "eg-mm", "--passes", 2, "--C", 50, "--no-anneal", "--root", "single", "--parts", "arcs"))
    return out


@pytest.fixture(scope="module")
def crf_file(files: dict[str, Path]) -> Path:
    out = files["folder"] / "crf.npz"
    assert_ok(run("tagger", "train", "--train", files["pos-train"], "--out", out, "--passes", 3, "--C", 2))
    return out


@pytest.fixture(scope="module")
def maxent_file(files: dict[str, Path]) -> Path:
    out = files["folder"] / "maxent.npz"
    assert_ok(run("tagger", "train", "--train", files["pos-train"], "--out", out, "--model", "maxent",
                  "--passes", 3, "--sigma2", 5))
    return out


def info_json(path: Path) -> dict:
    result = run("model", "info", path, "--json")
    assert_ok(result)
    return json.loads(result.stdout)


def info_text(path: Path) -> dict[str, str]:
    """The text report as {name: value}, one per line."""
    result = run("model", "info", path)
    assert_ok(result)
    rows = {}
    for line in result.stdout.splitlines():
        name, _, value = line.partition("  ")
        rows[name.strip()] = value.strip()
    return rows


# --- parser ---------------------------------------------------------------------------------------


def test_parser_info_json_matches_the_model(parser_file: Path, files: dict[str, Path]) -> None:
    info = info_json(parser_file)
    parser = Parser.load(parser_file)
    assert info["kind"] == "parser" and info["format_version"] == parser_model.FORMAT_VERSION
    assert info["file"] == str(parser_file) and info["bytes"] == parser_file.stat().st_size
    assert (info["tree"], info["root"]) == ("projective", "single")
    assert info["tag_columns"] == parser.featurizer.tags == "both"
    assert info["features"]["count"] == parser.weights.size > 1000
    assert info["features"]["mode"] == "alphabet"
    assert info["labels"] == parser.labeler.labels and "SUJ" in info["labels"]
    assert info["labeler_features"] == parser.labeler.weights.size and info["labeler_templates"] == 2
    training = info["training"]
    assert training["trainer"] == "eg-mm"
    assert training["config"]["C"] == 50 and training["config"]["max_passes"] == 2
    assert training["config"]["anneal"] is False
    assert training["data"]["sources"] == [str(files["parse-train"])]
    assert (training["data"]["train_sentences"], training["data"]["dev_sentences"]) == (40, 10)
    assert training["data"]["train_tokens"] == sum(len(s) for s in load_dataset("es", "train")[:40])
    assert training["settings"]["root"] == "single" and training["settings"]["tags"] is None
    final = training["final"]
    assert final == {k: parser.info["final"][k] for k in final}
    assert final["passes"] == 2 and final["dual"] is not None
    assert final["gap"] == pytest.approx(final["primal"] + final["dual"])
    assert final["rel_gap"] == pytest.approx(final["gap"] / abs(final["primal"]))
    assert training["labeler"]["labels"] == len(info["labels"])


def test_parser_info_text(parser_file: Path) -> None:
    rows = info_text(parser_file)
    info = info_json(parser_file)
    assert rows["kind"] == f"parser, format version {parser_model.FORMAT_VERSION}"
    assert rows["tree space"] == "projective, single root; final punctuation a leaf of the root's child"
    assert info["final_on_root"] is True
    assert rows["tag columns"].startswith("both: UPOS (CPOSTAG) and XPOS (POSTAG)")
    assert rows["features"].startswith(f"{info['features']['count']:,} (alphabet")
    assert rows["labels"].startswith(f"{len(info['labels'])}: ") and " SUJ " in rows["labels"]
    assert rows["training data"].endswith("parse-train.conll (40 sentences, "
                                          f"{info['training']['data']['train_tokens']:,} tokens, dev 10 sentences)")
    assert rows["trainer"].startswith("eg-mm: C=50, anneal=no,") and "max_passes=2" in rows["trainer"]
    assert "root=single" in rows["settings"] and "tags=from the data" in rows["settings"]
    final = info["training"]["final"]
    assert rows["final"].startswith(f"primal {final['primal']:.6g}, dual {final['dual']:.6g}, "
                                    f"gap {final['gap']:.6g} (relative {final['rel_gap']:.2e})")
    assert rows["result"].startswith(("converged", "stopped before converging"))
    assert rows["labeler"].startswith(f"{len(info['labels'])} labels")


def test_a_model_without_recorded_data_and_settings_still_reports(parser_file: Path, tmp_path: Path) -> None:
    parser = Parser.load(parser_file)
    parser.info = {k: v for k, v in parser.info.items() if k not in ("data", "settings", "final", "labeler")}
    old = tmp_path / "old.npz"
    parser.save(old)
    info = info_json(old)
    assert info["training"]["data"]["name"] is None and info["training"]["data"]["sources"] is None
    assert info["training"]["data"]["train_sentences"] == 40
    assert info["training"]["settings"] is None and info["training"]["final"] is None
    rows = info_text(old)
    assert rows["training data"] == "not recorded (40 sentences)"
    assert rows["final"] == "not recorded"


# --- taggers --------------------------------------------------------------------------------------


def test_crf_tagger_info(crf_file: Path) -> None:
    info = info_json(crf_file)
    tagger = Tagger.load(crf_file)
    assert info["kind"] == "tagger" and info["format_version"] == tagger_model.FORMAT_VERSION
    assert (info["model"], info["column"], info["reads_pos"]) == ("crf", "pos", False)
    assert info["tags"] == tagger.labels and "NN" in info["tags"]
    assert info["features"]["count"] == tagger.model.weights.size
    assert info["features"]["predicates"] == len(tagger.model.featurizer.predicates)
    assert info["vocabulary"] == len(tagger.vocabulary)
    assert info["all_transitions"] is False and info["beam"] is None
    training = info["training"]
    assert training["trainer"] == "eg-ll" and training["config"]["C"] == 2 and training["config"]["max_passes"] == 3
    assert training["data"]["train_sentences"] == 100
    assert training["final"]["passes"] == 3 and training["final"]["primal"] == tagger.info["final"]["primal"]
    rows = info_text(crf_file)
    assert rows["kind"] == f"tagger, format version {tagger_model.FORMAT_VERSION}"
    assert rows["model"] == "crf, predicts the pos column from words"
    assert rows["tag set"].startswith(f"{len(tagger.labels)}: ")
    assert rows["features"].startswith(f"{tagger.model.weights.size:,} (")
    assert rows["final"].startswith(f"primal {training['final']['primal']:.6g}")


def test_maxent_tagger_info(maxent_file: Path) -> None:
    info = info_json(maxent_file)
    tagger = Tagger.load(maxent_file)
    assert info["model"] == "maxent" and info["beam"] == tagger.model.beam == 3
    assert info["features"]["count"] == tagger.model.weights.size
    training = info["training"]
    assert training["trainer"] == "cd" and training["sigma2"] == 5
    assert training["config"]["C"] == pytest.approx(0.2) and training["config"]["max_passes"] == 3
    assert training["final"]["dual"] is None and training["final"]["grad_norm"] is not None
    rows = info_text(maxent_file)
    assert rows["sigma2"] == "5" and rows["beam"] == "3"
    assert "gradient norm" in rows["final"]


# --- errors ---------------------------------------------------------------------------------------


def test_errors_are_one_line(crf_file: Path, tmp_path: Path) -> None:
    text = tmp_path / "text.npz"
    text.write_text("not a model\n", encoding="utf-8")
    cut = tmp_path / "cut.npz"
    cut.write_bytes(crf_file.read_bytes()[:4000])
    flipped = tmp_path / "flipped.npz"
    data = bytearray(crf_file.read_bytes())
    data[len(data) // 2] ^= 0xFF
    flipped.write_bytes(bytes(data))
    plain = tmp_path / "plain.npz"
    np.savez(plain, weights=np.zeros(3))
    other = tmp_path / "other.npz"
    write_npz_atomic(other, {"weights": np.zeros(3)}, {"kind": "egnlp-something", "format_version": 1})
    cases = [(tmp_path / "missing.npz", "no such model file"), (tmp_path, "is a folder"),
             (text, "not an egnlp model file"), (cut, "not an egnlp model file"),
             (flipped, "checksum mismatch"), (plain, "corrupt model file (no metadata)"),
             (other, "not an egnlp parser, tagger, lemmatizer or pipeline model (its kind is 'egnlp-something')")]
    for path, message in cases:
        for extra in ((), ("--json",)):
            line = error_line(run("model", "info", path, *extra))
            assert line.startswith(f"error: {path}: ") and message in line, line
