"""The command line's conventions, end to end on real corpus files (issue 12, "A Unix command line").

- every ``--help`` shows its options' defaults and choices and every help text whole (no markup eaten);
- an invalid choice is one ``error:`` line from the command line itself (exit status 2);
- ``-`` is stdin for inputs and stdout for outputs; model files are not;
- input formats (CoNLL-U, CoNLL-X, Malt-TAB, CoNLL-2000, plain text) are told from the content, and a
  ``--format`` that the content does not fit is one line naming the file and line;
- a CoNLL-X file parsed to ``pred.conllu`` evaluates against its gold file;
- Ctrl-C during training, wherever it lands, is one line and exit status 130, and ``--save-on-interrupt``
  writes a model;
- ``--quiet`` and ``--json`` keep the outputs clean, and a terminal gets a progress bar;
- ``egnlp --help`` and ``egnlp data list`` load neither Numba nor SciPy nor NLTK.

Small models are trained through the CLI once per module: a labeled parser (60 ``es`` sentences, 1
pass) and a CRF POS tagger on a CoNLL-2000 three-column file (100 sentences, 2 passes). The
interrupt, terminal and import tests run ``python -m egnlp`` in a subprocess. Set NLTK_DATA to
the project's NLTK data folder.
"""

from __future__ import annotations

import gc
import json
import os
import pty
import re
import select
import signal
import subprocess
import sys
import time
from enum import Enum
from collections.abc import Iterator
from pathlib import Path

import nltk
import pytest
import typer

from cli_helpers import assert_ok, commands, error_line, run, usage_line
from text_blocks import blocks
from egnlp import startup
from egnlp.cli import app
from egnlp.corpora import detect_format, load_dataset, parse_conll, parse_corpus, read_conll, read_corpus, write_conll
from egnlp.corpora.sentence import LEMMA
from egnlp.parser.attachment import attachment_scores
from egnlp.parser.parser_model import Parser
from egnlp.tagger import Tagger

UD = Path(os.environ["EGNLP_UD_DIR"])
SAMPLE_CONLLU = Path(__file__).parent / "data" / "sample.conllu"
TEXT = ("The company said its profit rose 5 % in the third quarter. Mr. Smith, the chairman, expects sales "
        "to grow next year!\n\nShares fell 2.5 cents.\n")
PASS_LINE = re.compile(r"^\s*\d+\s+\d+\.\d+\s")  # a per-pass progress line: pass, effective iterations, ...


def nltk_bytes(resource: str) -> bytes:
    with nltk.data.find(resource).open() as handle:
        return handle.read()


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Real files in each format: es (CoNLL-X), UD (CoNLL-U), wsj (Malt-TAB), CoNLL-2000, plain text."""
    folder = tmp_path_factory.mktemp("conventions")
    paths = {"folder": folder}
    es_test = load_dataset("es", "test")
    spaced = [s for s in es_test if any(lemma != lemma.strip() for lemma in s.lemmas)]
    assert spaced  # a LEMMA ' 892700000_dólar': valid CoNLL-X, not CoNLL-U
    for name, sentences in (("es-train", load_dataset("es", "train")[:60]), ("es-dev", load_dataset("es", "dev")[:20]),
                            ("es-test", es_test[:25] + spaced)):
        paths[name] = folder / f"{name}.conll"
        write_conll(paths[name], sentences)
    ud = (UD / "pt_bosque-ud-dev.conllu").read_text(encoding="utf-8")
    paths["ud"] = folder / "bosque.conllu"
    paths["ud"].write_text(blocks(ud, 0, 30), encoding="utf-8")
    paths["malt"] = folder / "wsj_0001.dp"
    paths["malt"].write_bytes(nltk_bytes("corpora/dependency_treebank/wsj_0001.dp"))
    conll2000 = nltk_bytes("corpora/conll2000/train.txt").decode("ascii")
    paths["c2k-train"] = folder / "c2k-train.txt"
    paths["c2k-train"].write_text(blocks(conll2000, 0, 100), encoding="ascii")
    paths["c2k-test"] = folder / "c2k-test.txt"
    paths["c2k-test"].write_text(blocks(conll2000, 500, 40), encoding="ascii")
    paths["text"] = folder / "text.txt"
    paths["text"].write_text(TEXT, encoding="utf-8")
    return paths


@pytest.fixture(scope="module")
def parser_file(files: dict[str, Path]) -> Path:
    out = files["folder"] / "parser.npz"
    assert_ok(run("parser", "train", "--train", files["es-train"], "--dev", files["es-dev"], "--out", out,
                  "--passes", 1, "--quiet"))
    return out


@pytest.fixture(scope="module")
def tagger_file(files: dict[str, Path]) -> Path:
    """A CRF POS tagger trained on a CoNLL-2000 three-column file."""
    out = files["folder"] / "pos.npz"
    assert_ok(run("tagger", "train", "--train", files["c2k-train"], "--out", out, "--passes", 2, "--quiet"))
    return out


def egnlp(*args: object, **kwargs) -> subprocess.Popen:
    """``python -m egnlp ARGS`` in a subprocess."""
    return subprocess.Popen([sys.executable, "-m", "egnlp", *map(str, args)], **kwargs)


# --- help ----------------------------------------------------------------------------------------


ALL_COMMANDS = list(commands(typer.main.get_command(app)))


def choices_of(param) -> list[str]:
    """The values a parameter offers: a click Choice's (typer up to 0.28), or typer 0.29's descriptor's."""
    descriptor = getattr(param, "type_descriptor", None)
    choices = descriptor.choices if descriptor is not None else getattr(param.type, "choices", None)
    return [getattr(c, "value", c) for c in choices or ()]


def flat(text: str) -> str:
    """The text without whitespace: help is wrapped at spaces and after hyphens."""
    return "".join(text.split())


def test_every_command_is_walked() -> None:
    names = {" ".join(path) for path, _ in ALL_COMMANDS}
    assert {"data list", "data export", "parser train", "parser parse", "parser evaluate", "tagger train",
            "tagger tag", "tagger evaluate", "parse-text", "model info", "bench optimizers", "demo"} <= names


@pytest.mark.parametrize(("path", "command"), ALL_COMMANDS, ids=[" ".join(path) for path, _ in ALL_COMMANDS])
def test_help_shows_every_default_choice_and_whole_help_text(path: tuple[str, ...], command) -> None:
    result = run(*path, "--help")
    assert_ok(result)
    shown = flat(result.stdout)
    for param in command.params:
        if param.name == "help" or param.hidden:
            continue
        if param.help:
            assert flat(param.help) in shown, f"{path} {param.name}: help text not shown whole"
        choices = choices_of(param)
        if choices:
            assert "|".join(choices) in shown, f"{path} {param.name}: choices not shown"
        if isinstance(param, typer.core.TyperArgument) or param.required:
            continue
        plain_flag = param.is_flag and not param.secondary_opts and not param.default
        if plain_flag or (param.default is None and not isinstance(param.show_default, str)):
            continue  # off unless given
        if isinstance(param.show_default, str):
            expected = f"[default: ({param.show_default})]"
        elif param.is_flag and param.secondary_opts:
            expected = f"[default: {(param.opts if param.default else param.secondary_opts)[0].lstrip('-')}]"
        else:
            expected = f"[default: {param.default.value if isinstance(param.default, Enum) else param.default}]"
        assert flat(expected) in shown, f"{path} {param.name}: {expected} not in\n{result.stdout}"


def choices(settings: type, name: str) -> tuple[str, ...]:
    """The choices of a settings field, as its option offers them."""
    return settings.__dataclass_fields__[name].metadata["choices"]


def test_help_shows_the_settings_defaults() -> None:
    """The shown defaults are made from the settings' constants, and the settings resolve to them."""
    from egnlp.settings import (FIRST_ORDER_PASSES, HIGHER_ORDER_PASSES, PARSER_C, PARSER_TRAINER, ParserSettings,
                                TaggerSettings)
    from egnlp.training.configs import EGConfig

    shown = flat(run("parser", "train", "--help").stdout)
    assert flat(f"[default: ({PARSER_C['mm']:g} for max-margin trainers, {PARSER_C['ll']:g}") in shown
    assert flat(f"Pass limit. [default: ({FIRST_ORDER_PASSES} for {PARSER_TRAINER} ({HIGHER_ORDER_PASSES} with "
                f"--parts siblings or grandparents), {EGConfig.max_passes} for EG") in shown
    # a first-order model takes its own pass limit, a higher-order one the trainer's, the caller's over both
    assert ParserSettings(parts="arcs").trainer_configs()[0].max_passes == FIRST_ORDER_PASSES
    assert ParserSettings(parts="siblings").trainer_configs()[0].max_passes == HIGHER_ORDER_PASSES
    assert ParserSettings().trainer_configs()[0].max_passes == FIRST_ORDER_PASSES
    assert ParserSettings(max_passes=3).trainer_configs()[0].max_passes == 3
    assert ParserSettings(trainer="eg-mm").trainer_configs()[0].C == PARSER_C["mm"]
    assert ParserSettings(trainer="eg-ll").trainer_configs()[0].max_passes == EGConfig.max_passes
    assert TaggerSettings(model="maxent").trainer_config().C == pytest.approx(0.1)


def test_choices_are_the_registry_names() -> None:
    from egnlp.settings import ParserSettings, TaggerSettings
    from egnlp.training.configs import ORDERS
    from egnlp.training.registry import MAXENT, trainer_names

    assert list(choices(ParserSettings, "trainer")) == trainer_names()
    assert set(choices(TaggerSettings, "trainer")) == set(trainer_names()) | set(trainer_names(MAXENT))
    assert choices(ParserSettings, "order") == ORDERS


def _invalid_choices():
    from egnlp.cli.common import InputFormat, OutputFormat, Split, TaggedFormat, TreeFormat
    from egnlp.settings import ParserSettings, TaggerSettings

    def values(enum) -> tuple[str, ...]:
        return tuple(c.value for c in enum)

    return [
        (("parser", "train", "-o", "m.npz", "--trainer", "svm"), "--trainer", "svm", choices(ParserSettings, "trainer")),
        (("parser", "train", "-o", "m.npz", "--order", "zigzag"), "--order", "zigzag", choices(ParserSettings, "order")),
        (("parser", "train", "-o", "m.npz", "--root", "both"), "--root", "both", None),
        (("parser", "train", "-o", "m.npz", "--pos", "lemma"), "--pos", "lemma", None),
        (("parser", "train", "-o", "m.npz", "--features", "bloom"), "--features", "bloom", None),
        (("parser", "parse", "m.npz", "-", "--format", "xml"), "--format", "xml", values(TreeFormat)),
        (("tagger", "train", "-o", "m.npz", "--model", "hmm"), "--model", "hmm", choices(TaggerSettings, "model")),
        (("tagger", "train", "-o", "m.npz", "--column", "lemma"), "--column", "lemma",
         choices(TaggerSettings, "column")),
        (("tagger", "train", "-o", "m.npz", "--trainer", "perceptron"), "--trainer", "perceptron",
         choices(TaggerSettings, "trainer")),
        (("tagger", "tag", "m.npz", "--format", "xml"), "--format", "xml", values(InputFormat)),
        (("tagger", "tag", "m.npz", "--to", "html"), "--to", "html", values(OutputFormat)),
        (("tagger", "evaluate", "a", "b", "--format", "brown"), "--format", "brown", values(TaggedFormat)),
        (("data", "export", "es", "validation"), "SPLIT", "validation", values(Split)),
    ]


INVALID_CHOICES = _invalid_choices()


@pytest.mark.parametrize(("args", "option", "value", "choices"), INVALID_CHOICES,
                         ids=[" ".join(case[0][:2]) + f" {case[1]}" for case in INVALID_CHOICES])
def test_an_invalid_choice_is_one_line(args: tuple[str, ...], option: str, value: str, choices) -> None:
    line = usage_line(run(*args))
    assert f"{option}: invalid choice '{value}' (choose from " in line
    if choices is not None:
        assert f"(choose from {', '.join(choices)})" in line
    assert f" {' '.join(args[:2])} --help'" in line


def test_other_command_line_mistakes_are_one_line() -> None:
    assert "Missing option '--out'" in usage_line(run("parser", "train"))
    assert "No such option" in usage_line(run("parser", "parse", "m.npz", "--no-such-option"))
    assert "No such command 'nosuch'" in usage_line(run("parser", "nosuch"))


# --- stdin and stdout ----------------------------------------------------------------------------


def test_parse_and_evaluate_read_stdin_and_write_stdout(parser_file: Path, files: dict[str, Path]) -> None:
    gold = files["es-test"]
    pred = files["folder"] / "pred-file.conll"
    assert_ok(run("parser", "parse", parser_file, gold, "-o", pred))
    piped = run("parser", "parse", parser_file, "-", "-o", "-", input=gold.read_text(encoding="utf-8"))
    assert_ok(piped)
    assert piped.stdout == pred.read_text(encoding="utf-8")  # the trees and nothing else on stdout
    assert "wrote stdout" in piped.stderr
    default_out = run("parser", "parse", parser_file, input=gold.read_text(encoding="utf-8"))
    assert default_out.stdout == piped.stdout  # INPUT and -o default to - (stdin, stdout)
    from_file = run("parser", "evaluate", gold, pred, "--json")
    from_stdin = run("parser", "evaluate", gold, "-", "--json", input=piped.stdout)
    assert_ok(from_stdin)
    assert json.loads(from_stdin.stdout) == json.loads(from_file.stdout)
    assert json.loads(from_stdin.stdout)["uas"] == attachment_scores(read_conll(gold), read_conll(pred))["uas"]
    gold_from_stdin = run("parser", "evaluate", "-", pred, "--json", input=gold.read_text(encoding="utf-8"))
    assert json.loads(gold_from_stdin.stdout) == json.loads(from_file.stdout)
    assert "only one of GOLD and PRED" in usage_line(run("parser", "evaluate", "-", "-", input=""))


def test_tag_evaluate_export_and_parse_text_use_stdin_and_stdout(tagger_file: Path, parser_file: Path,
                                                                 files: dict[str, Path]) -> None:
    test = files["c2k-test"].read_text(encoding="ascii")
    tagged = run("tagger", "tag", tagger_file, "-", "-o", "-", input=test)
    assert_ok(tagged)
    out = files["folder"] / "tagged.txt"
    assert_ok(run("tagger", "tag", tagger_file, files["c2k-test"], "-o", out))
    assert tagged.stdout == out.read_text(encoding="utf-8")
    scores = run("tagger", "evaluate", files["c2k-test"], "-", "--json", "--model", tagger_file, input=tagged.stdout)
    assert_ok(scores)
    assert json.loads(scores.stdout)["accuracy"] > 60
    assert json.loads(scores.stdout) == json.loads(run("tagger", "evaluate", files["c2k-test"], out, "--json",
                                                       "--model", tagger_file).stdout)
    exported = run("data", "export", "es", "dev", "-o", "-")
    assert_ok(exported)
    copy = files["folder"] / "es-dev-export.conll"
    assert_ok(run("data", "export", "es", "dev", "-o", copy))
    assert exported.stdout == copy.read_text(encoding="utf-8") and "to stdout" in exported.stderr
    # parse-text: the es parser reads both tag columns; the tagger fills XPOS only, so give an UPOS one too.
    assert "no tagger predicts UPOS" in error_line(run("parse-text", tagger_file, parser_file, "-", input=TEXT))


def test_a_training_file_from_stdin(files: dict[str, Path]) -> None:
    out = files["folder"] / "stdin.npz"
    result = run("tagger", "train", "--train", "-", "--out", out, "--passes", 1, "--model", "maxent",
                 input=files["c2k-train"].read_text(encoding="ascii"))
    assert_ok(result)
    assert Tagger.load(out).info["train_sentences"] == 100
    assert "only one of the training and dev files" in error_line(
        run("tagger", "train", "--train", "-", "--dev", "-", "--out", out, input=""))


def test_a_model_file_is_named_not_piped(files: dict[str, Path], tagger_file: Path) -> None:
    assert "a model file is written and read by name" in usage_line(
        run("tagger", "train", "--train", files["c2k-train"], "--out", "-"))
    assert "a model file is written and read by name" in usage_line(run("parser", "parse", "-", files["es-test"]))
    assert "a model file is written and read by name" in usage_line(run("model", "info", "-"))


# --- formats -------------------------------------------------------------------------------------


def test_formats_are_told_from_real_content(files: dict[str, Path]) -> None:
    conll2007 = {name: nltk_bytes(f"corpora/conll2007/{name}") for name in ("esp.test", "eus.test")}
    cases = [
        (conll2007["esp.test"].decode("utf-8"), "esp.test", "conllx"),
        (conll2007["eus.test"].decode("latin-1"), "eus.test", "conllx"),
        (conll2007["esp.test"].decode("utf-8"), "pred.conllu", "conllx"),  # the content, not the name
        ((UD / "pt_bosque-ud-dev.conllu").read_text(encoding="utf-8"), "x.conll", "conllu"),
        ((UD / "nl_alpino-ud-test.conllu").read_text(encoding="utf-8"), "x.txt", "conllu"),
        (SAMPLE_CONLLU.read_text(encoding="utf-8"), "sample.conllu", "conllu"),
        (files["malt"].read_text(encoding="utf-8"), "wsj_0001.dp", "malt"),
        (nltk_bytes("corpora/conll2000/test.txt").decode("ascii"), "test.txt", "conll2000"),
        (TEXT, "text.txt", "text"),
        (nltk_bytes("corpora/brown/ca01").decode("ascii"), "ca01", "text"),  # word/tag is not a supported format
    ]
    for text, name, expected in cases:
        assert detect_format(text, name) == expected, name


@pytest.mark.parametrize(("name", "output"), [("ud", "conll"), ("es-test", "conll"), ("malt", "conll"),
                                              ("c2k-test", "conll2000"), ("text", "text")])
def test_tagger_tag_reads_each_format(tagger_file: Path, files: dict[str, Path], name: str, output: str) -> None:
    result = run("tagger", "tag", tagger_file, files[name])
    assert_ok(result)
    first = result.stdout.split("\n", 1)[0]
    if output == "text":
        assert "/" in first and "\t" not in first
    elif output == "conll2000":
        assert len(first.split(" ")) == 3 and "\t" not in first
    else:
        _, gold = read_corpus(files[name], require_heads=False)
        _, tagged = parse_corpus(result.stdout, "out", require_heads=False)
        assert [s.forms for s in tagged] == [s.forms for s in gold]


def test_a_conllu_file_is_not_tagged_as_prose(tagger_file: Path, files: dict[str, Path]) -> None:
    result = run("tagger", "tag", tagger_file, files["ud"])
    assert_ok(result)
    assert result.stdout.startswith("# ") and "\t" in result.stdout  # CoNLL-U in, CoNLL-U out
    prose = run("tagger", "tag", tagger_file, files["ud"], "--format", "text")
    assert_ok(prose)
    assert "\t" not in prose.stdout  # asked for: read as raw text


@pytest.mark.parametrize("name", ["ud", "es-test", "malt"])
def test_parser_parse_reads_each_tree_format(parser_file: Path, files: dict[str, Path], name: str) -> None:
    result = run("parser", "parse", parser_file, files[name])
    assert_ok(result)
    _, gold = read_corpus(files[name], require_heads=False)
    fmt, parsed = parse_corpus(result.stdout, "out")
    assert [s.forms for s in parsed] == [s.forms for s in gold]
    assert fmt == ("conllu" if name == "ud" else "conllx")  # Malt-TAB comes out as CoNLL-X


MISMATCHES = [  # (command, file, --format, words of the message)
    ("tag", "ud", "malt", ["not Malt-TAB", "10 tab-separated columns", "looks like CoNLL-U"]),
    ("parse", "es-test", "conllu", ["not CoNLL-U", "PHEAD", "looks like CoNLL-X"]),
    ("tag", "text", "conll2000", ["not CoNLL-2000", "looks like plain text"]),
    ("parse", "ud", "conllx", ["not CoNLL-X", "multiword token", "looks like CoNLL-U"]),
    ("parse", "malt", "conll", ["not CoNLL-X/CoNLL-U", "3 tab-separated columns", "looks like Malt-TAB"]),
    ("evaluate", "c2k-test", "malt", ["not Malt-TAB", "looks like CoNLL-2000"]),
    ("parse", "text", "auto", ["the content is plain text", "parser parse reads CoNLL-U, CoNLL-X or Malt-TAB"]),
    ("parse", "c2k-test", "auto", ["the content is CoNLL-2000", "parser parse reads"]),
]


@pytest.mark.parametrize(("command", "name", "fmt", "words"), MISMATCHES,
                         ids=[f"{c}-{n}-as-{f}" for c, n, f, _ in MISMATCHES])
def test_content_that_does_not_fit_the_format_is_one_line(parser_file: Path, tagger_file: Path,
                                                          files: dict[str, Path], command: str, name: str, fmt: str,
                                                          words: list[str]) -> None:
    path = files[name]
    args = {"tag": ("tagger", "tag", tagger_file, path), "parse": ("parser", "parse", parser_file, path),
            "evaluate": ("tagger", "evaluate", path, path)}[command]
    line = error_line(run(*args, "--format", fmt))
    assert line.startswith(f"error: {path}:"), line
    for word in words:
        assert word in line, line


def test_a_conll_file_parsed_to_a_conllu_name_evaluates(parser_file: Path, files: dict[str, Path]) -> None:
    """CoNLL-X in, ``pred.conllu`` out: the prediction is read as what it holds (CoNLL-X, a LEMMA with a
    leading space), not as its name says."""
    gold = files["es-test"]
    pred = files["folder"] / "pred.conllu"
    assert_ok(run("parser", "parse", parser_file, gold, "-o", pred))
    assert any(row[LEMMA] != row[LEMMA].strip() for s in read_conll(pred, conllu=False) for row in s.rows)
    result = run("parser", "evaluate", gold, pred, "--json")
    assert_ok(result)
    expected = attachment_scores(read_conll(gold), read_conll(pred, conllu=False))
    assert json.loads(result.stdout)["uas"] == expected["uas"] and expected["tokens"] > 500
    assert read_corpus(pred)[0] == "conllx"
    line = error_line(run("parser", "evaluate", gold, pred, "--format", "conllu"))
    assert re.match(rf"error: {re.escape(str(gold))}:1: not CoNLL-U: PHEAD", line), line  # the gold file first
    line = error_line(run("parser", "parse", parser_file, pred, "--format", "conllu"))
    assert re.match(rf"error: {re.escape(str(pred))}:\d+: LEMMA ' .*begins or ends with whitespace", line), line


def test_conll2000_files_train_tag_and_evaluate_a_chunker(tagger_file: Path, files: dict[str, Path]) -> None:
    assert Tagger.load(tagger_file).column == "pos"
    chunker = files["folder"] / "chunk.npz"
    assert_ok(run("tagger", "train", "--train", files["c2k-train"], "--dev", files["c2k-test"], "--column", "chunk",
                  "--out", chunker, "--passes", 2, "-q"))
    pred = files["folder"] / "chunks.txt"
    assert_ok(run("tagger", "tag", chunker, files["c2k-test"], "-o", pred))
    gold_lines = files["c2k-test"].read_text(encoding="ascii").split("\n")
    pred_lines = pred.read_text(encoding="utf-8").split("\n")
    assert [line.split(" ")[:2] for line in pred_lines] == [line.split(" ")[:2] for line in gold_lines]
    scores = json.loads(run("tagger", "evaluate", files["c2k-test"], pred, "--json", "--model", chunker).stdout)
    assert scores["column"] == "chunk" and scores["f1"] > 30
    as_conll = run("tagger", "tag", chunker, files["c2k-test"], "--to", "conll")
    assert_ok(as_conll)
    assert as_conll.stdout.split("\n", 1)[0].count("\t") == 10


def test_tagger_train_takes_order_and_anneal_where_the_trainer_has_them(files: dict[str, Path]) -> None:
    out = files["folder"] / "ordered.npz"
    assert_ok(run("tagger", "train", "--train", files["c2k-train"], "--out", out, "--passes", 1, "--order", "cyclic",
                  "--no-anneal", "-q"))
    config = Tagger.load(out).info["config"]
    assert config["order"] == "cyclic" and config["anneal"] is False
    assert_ok(run("tagger", "train", "--train", files["c2k-train"], "--out", out, "--passes", 1, "--trainer", "bcfw",
                  "--order", "gap", "-q"))
    assert Tagger.load(out).info["config"]["order"] == "gap"
    assert "trainer 'cd' has no setting --order" in usage_line(
        run("tagger", "train", "--train", files["c2k-train"], "--out", out, "--model", "maxent", "--order", "cyclic"))
    assert "trainer 'bcfw' has no setting --anneal" in usage_line(
        run("tagger", "train", "--train", files["c2k-train"], "--out", out, "--trainer", "bcfw", "--no-anneal"))


# --- Ctrl-C --------------------------------------------------------------------------------------


def stderr_lines(process: subprocess.Popen, deadline: float, seen: list[str]) -> Iterator[str]:
    """The lines of ``process``'s stderr as they come (each also appended to ``seen``) until it closes; the
    test fails if ``deadline`` (of ``time.monotonic``) passes first."""
    while time.monotonic() < deadline:
        ready, _, _ = select.select([process.stderr], [], [], 1.0)
        if not ready:
            continue
        line = process.stderr.readline()
        if not line:
            return
        seen.append(line.rstrip("\n"))
        yield seen[-1]
    pytest.fail("no end in time:\n" + "\n".join(seen))


def interrupt_after_first_pass(args: list[object], timeout: float = 300.0) -> tuple[int, list[str], list[str]]:
    """Run ``egnlp ARGS``, send SIGINT once its pass-1 line is printed; (exit status, stderr lines up to
    that line, stderr lines after it)."""
    process = egnlp(*args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    before: list[str] = []
    try:
        for line in stderr_lines(process, time.monotonic() + timeout, before):
            if line.split()[:1] == ["1"] and PASS_LINE.match(line):
                process.send_signal(signal.SIGINT)
                break
        assert before and before[-1].split()[:1] == ["1"], "\n".join(before)
        out, rest = process.communicate(timeout=timeout)
    finally:
        process.kill()
        process.wait()
    assert out == ""
    return process.returncode, before, rest.splitlines()


def one_line_after_passes(after: list[str]) -> str:
    """The one line that is not a pass line after the interrupt (more passes may end before it lands)."""
    lines = [line for line in after if not PASS_LINE.match(line)]
    assert len(lines) == 1, "\n".join(after)
    assert "Traceback" not in lines[0]
    return lines[0]


def test_ctrl_c_stops_parser_training_with_one_line(files: dict[str, Path]) -> None:
    out = files["folder"] / "interrupted.npz"
    status, _, after = interrupt_after_first_pass(["parser", "train", "--train", files["es-train"], "--out", out,
                                                   "--passes", 10000, "--tol", 0])
    assert status == 130
    assert one_line_after_passes(after) == "interrupted; no model written (--save-on-interrupt keeps the best pass " \
                                           "so far)"
    assert not out.exists()


def stage(line: str) -> str | None:
    """The stage of 'parser train --passes 1' that a stderr line begins: start (the data read, features and
    kernels next), pass0 (the arcs' pass next), pass1 (the labeler and the save next), end; else None."""
    if line.startswith("training on"):
        return "start"
    if PASS_LINE.match(line):
        return f"pass{line.split()[0]}"
    return "end" if line.startswith("stopped at") else None


def sigint_at(args: list[object], trigger: str | None, delay: float, timeout: float = 300.0
              ) -> tuple[int, list[str], int, dict[str, float]]:
    """Run ``egnlp ARGS``; ``delay`` seconds after its stderr line of stage ``trigger`` (None: never), send
    SIGINT. (Exit status, stderr lines, the number of lines before the signal (all of them when the run had
    ended), the time of each stage's line since the start.)"""
    process = egnlp(*args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines: list[str] = []
    times: dict[str, float] = {}
    start = time.monotonic()
    sent = -1
    try:
        for line in stderr_lines(process, start + timeout, lines):
            if stage(line) is not None:
                times.setdefault(stage(line), time.monotonic() - start)
            if trigger is not None and stage(line) == trigger:
                time.sleep(delay)
                sent = len(lines) if process.poll() is None else -1
                process.send_signal(signal.SIGINT)  # nothing when the run has ended
                break
        _, rest = process.communicate(timeout=timeout)
    finally:
        process.kill()
        process.wait()
    lines += rest.splitlines()
    return process.returncode, lines, len(lines) if sent < 0 else sent, times


def test_ctrl_c_anywhere_in_parser_training_is_one_line(files: dict[str, Path]) -> None:
    """SIGINT at points spread over a real 'parser train' run (features and kernels loading, the arcs'
    pass, the labeler stage, the save) ends it with exit status 130 and one line, 'interrupted...', or
    lets it finish (exit status 0, a model that loads); never a traceback, a lost interrupt ("Exception
    ignored"), a crash, or an interrupted run's model or temporary file. The delays only choose where the
    signal lands: they are fractions of each stage's time in a run to the end."""
    folder = files["folder"] / "ctrl-c"
    folder.mkdir()
    args: list[object] = ["parser", "train", "--train", files["es-train"], "--passes", 1]
    for k in range(2):  # the first run may compile the kernels; the second's line times place the signals
        status, lines, _, times = sigint_at([*args, "--out", folder / "whole.npz"], None, 0.0)
        assert status == 0 and list(times) == ["start", "pass0", "pass1", "end"], "\n".join(lines)
    stages = ["start", "pass0", "pass1", "end"]
    # more points early in the start stage, where the kernels load (a lost interrupt: 3 in 60 runs before)
    fractions = {"start": (0.0, 0.04, 0.08, 0.12, 0.16, 0.2, 0.5, 0.8), "pass0": (0.0, 0.5),
                 "pass1": (0.0, 0.3, 0.6, 0.9)}
    outcomes = []
    for trigger, after in zip(stages, stages[1:]):
        for fraction in fractions[trigger]:
            out = folder / f"m-{trigger}-{fraction}.npz"
            delay = fraction * (times[after] - times[trigger])
            status, lines, sent, _ = sigint_at([*args, "--out", out], trigger, delay)
            text = "\n".join(lines)
            assert "Traceback" not in text and "Exception ignored" not in text, text
            late = [line for line in lines[sent:]  # the lines after the signal, but progress lines
                    if not (PASS_LINE.match(line) or line.startswith(("trainer ", "pass ", "arc labeler: ")))]
            if status == 0:  # the run ended before the signal landed
                assert lines[-1].startswith("stopped at") and Parser.load(out).labeler is not None, text
            else:
                assert status == 130 and len(late) == 1 and late[0].startswith("interrupted"), text
                assert not out.exists(), text
            assert not [p.name for p in folder.iterdir() if p.name.endswith(".tmp")], text
            outcomes.append(status)
    assert outcomes.count(130) >= len(outcomes) // 2, outcomes  # most signals landed while the run ran


@pytest.mark.parametrize("kind", ["parser", "tagger"])
def test_ctrl_c_with_save_on_interrupt_writes_the_best_model(files: dict[str, Path], kind: str) -> None:
    out = files["folder"] / f"saved-{kind}.npz"
    if kind == "parser":
        args = ["parser", "train", "--train", files["es-train"], "--dev", files["es-dev"], "--passes", 10000,
                "--tol", 0]
    else:
        args = ["tagger", "train", "--train", files["c2k-train"], "--dev", files["c2k-test"], "--passes", 10000,
                "--tol", 0]
    status, before, after = interrupt_after_first_pass([*args, "--out", out, "--save-on-interrupt"])
    assert status == 130
    line = one_line_after_passes(after)
    match = re.fullmatch(rf"interrupted after pass (\d+); wrote the model of pass (\d+), dev ([\d.]+) to "
                         rf"{re.escape(str(out))}", line)
    assert match, line
    last, best, dev = int(match[1]), int(match[2]), float(match[3])
    assert 1 <= best <= last
    model = (Parser if kind == "parser" else Tagger).load(out)
    assert model.info["interrupted_after_pass"] == last and model.info["final"]["passes"] == best
    assert model.info["final"]["dev"] == pytest.approx(dev, abs=0.006)
    devs = {int(p.split()[0]): float(p.split()[-1]) for p in [*before, *after] if PASS_LINE.match(p)
            and p.split()[-1] != "-"}
    assert dev == pytest.approx(max(v for k, v in devs.items() if k <= last), abs=0.006)  # the best dev so far
    if kind == "parser":
        assert model.labeler is None  # the labeler is trained after the arcs
        assert len(model.parse(read_conll(files["es-dev"])[:3])) == 3
    else:
        assert model.tag_tokens(["The", "market", "rose", "."])


def test_save_on_interrupt_does_not_go_with_a_c_path(files: dict[str, Path]) -> None:
    assert "does not go with --C-path" in usage_line(
        run("parser", "train", "--train", files["es-train"], "--dev", files["es-dev"], "--out",
            files["folder"] / "p.npz", "--C-path", "10:0.5:2", "--save-on-interrupt"))


# --- quiet, json, progress bar -------------------------------------------------------------------


def test_quiet_and_json_keep_the_outputs_clean(files: dict[str, Path], parser_file: Path) -> None:
    out = files["folder"] / "quiet.npz"
    quiet = run("tagger", "train", "--train", files["c2k-train"], "--out", out, "--passes", 2, "--quiet")
    assert_ok(quiet)
    assert quiet.stdout == "" and quiet.stderr == ""
    as_json = run("tagger", "train", "--train", files["c2k-train"], "--dev", files["c2k-test"], "--out", out,
                  "--passes", 2, "--json")
    assert_ok(as_json)
    assert as_json.stdout.count("\n") == 1
    summary = json.loads(as_json.stdout)
    assert summary["model"] == str(out) and summary["final"]["passes"] == 2 and summary["final"]["dev"] > 0
    assert summary["trainer"] == "eg-ll" and summary["converged"] is False
    assert "eff.it" in as_json.stderr  # progress stays on stderr
    both = run("parser", "train", "--train", files["es-train"], "--out", files["folder"] / "json.npz", "--passes", 1,
               "--json", "-q", "--no-labels")
    assert_ok(both)
    assert both.stderr == ""
    assert json.loads(both.stdout)["final"]["passes"] == 1 and json.loads(both.stdout)["labeled"] is False
    parsed = run("parser", "parse", parser_file, files["es-test"], "-q")
    assert_ok(parsed)
    assert parsed.stderr == ""
    assert [s.forms for s in parse_conll(parsed.stdout)] == [s.forms for s in read_conll(files["es-test"])]


def test_a_terminal_gets_a_progress_bar(files: dict[str, Path]) -> None:
    out = files["folder"] / "bar.npz"
    master, slave = pty.openpty()
    env = {**os.environ, "TERM": "xterm", "COLUMNS": "120"}
    process = egnlp("tagger", "train", "--train", files["c2k-train"], "--dev", files["c2k-test"], "--out", out,
                    "--passes", 3, "--json", stdout=subprocess.PIPE, stderr=slave, env=env)
    os.close(slave)
    shown = b""
    try:
        while True:
            ready, _, _ = select.select([master], [], [], 300)
            if not ready:
                pytest.fail("no progress on the terminal")
            try:
                data = os.read(master, 4096)
            except OSError:  # the child closed the terminal
                break
            if not data:
                break
            shown += data
        stdout = process.stdout.read()
        assert process.wait(timeout=60) == 0
    finally:
        process.kill()
        os.close(master)
    text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", shown.decode("utf-8", "replace"))
    assert "pass 3/3" in text and "objective" in text and "dev" in text, text
    assert "━" in text  # the bar
    assert "eff.it" not in text  # no per-pass table on a terminal
    assert json.loads(stdout)["final"]["passes"] == 3


# --- start-up ------------------------------------------------------------------------------------


def test_python_dash_m_egnlp_is_the_program() -> None:
    from importlib.metadata import version

    process = egnlp("--version", stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    stdout, stderr = process.communicate(timeout=120)
    assert (process.returncode, stdout, stderr) == (0, f"egnlp {version('egnlp')}\n", "")
    process = egnlp("parser", "nosuch", stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    stdout, stderr = process.communicate(timeout=120)
    assert process.returncode == 2 and stdout == ""
    assert stderr.startswith("error: No such command 'nosuch'") and "python -m egnlp parser --help" in stderr


def test_start_up_pauses_and_freezes_only_in_the_program(monkeypatch) -> None:
    frozen = gc.get_freeze_count()
    with startup.start_up():  # a Python caller's process (here pytest's): its collector is left alone
        assert gc.isenabled()
    assert gc.get_freeze_count() == frozen
    monkeypatch.setitem(startup._PROGRAM, "owns_process", True)
    try:
        with startup.start_up():
            assert not gc.isenabled()
            loaded = [[i] for i in range(5000)]  # tracked objects, as imports and a model make
        assert gc.isenabled() and gc.get_freeze_count() >= frozen + len(loaded)
        with pytest.raises(RuntimeError), startup.start_up():
            raise RuntimeError("a failed load")
        assert gc.isenabled()
    finally:
        gc.unfreeze()


@pytest.mark.skipif(not os.path.exists("/proc/self/smaps"), reason="Linux's /proc/self/smaps")
def test_llvm_pages_let_go_leave_llvm_working() -> None:
    """egnlp.startup.release_llvm_pages unmaps resident pages of LLVM's library (the process's file-backed
    resident memory falls), and LLVM still compiles and runs a new kernel, and loads a cached one."""
    code = ("import sys\nimport llvmlite.binding\nfrom egnlp.startup import release_llvm_pages\n"
            "def file_kb():\n"
            "    lines = open('/proc/self/status').read().splitlines()\n"
            "    return int(next(line.split()[1] for line in lines if line.startswith('RssFile')))\n"
            "before = file_kb()\nreleased = release_llvm_pages()\nafter = file_kb()\n"
            "import numpy as np\nfrom numba import njit\n"
            "@njit\ndef fresh(x):\n    return np.sqrt(x).sum()\n"
            "from egnlp.features.hashing import KeyTable, table_lookup\n"
            "table = KeyTable(np.array([5, 9, 12], dtype=np.uint64))\n"
            "found = [table_lookup(table.table_keys, table.table_vals, np.uint64(k)) for k in (9, 12, 7)]\n"
            "print(released > 2 ** 20, before - after > 2 ** 10, fresh(np.array([4.0, 9.0])), found == [1, 2, -1], "
            "release_llvm_pages() > 0)\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.split() == ["True", "True", "5.0", "True", "True"], result.stdout


def test_parse_and_tag_load_with_the_collector_paused(monkeypatch, parser_file: Path, tagger_file: Path,
                                                    files: dict[str, Path]) -> None:
    """The commands' start-up in the program's process: the same output, the loaded objects frozen, and
    the collector on again for the work that follows."""
    gold = files["es-test"]
    before = run("parser", "parse", parser_file, gold, "-o", "-", "-q")
    tagged_before = run("tagger", "tag", tagger_file, files["c2k-test"], "-o", "-", "-q")
    monkeypatch.setitem(startup._PROGRAM, "owns_process", True)
    paused, disable = [], gc.disable
    monkeypatch.setattr(gc, "disable", lambda: (paused.append(True), disable())[-1])
    try:
        frozen = gc.get_freeze_count()
        after = run("parser", "parse", parser_file, gold, "-o", "-", "-q")
        assert len(paused) == 1 and gc.isenabled() and gc.get_freeze_count() > frozen
        tagged_after = run("tagger", "tag", tagger_file, files["c2k-test"], "-o", "-", "-q")
        assert len(paused) == 2 and gc.isenabled()
    finally:
        gc.unfreeze()
    assert_ok(after)
    assert after.stdout == before.stdout and tagged_after.stdout == tagged_before.stdout


@pytest.mark.parametrize("args", [["--help"], ["data", "list"], ["parser", "train", "--help"]])
def test_help_and_data_list_load_no_numba_scipy_or_nltk(args: list[str]) -> None:
    code = ("import sys\nfrom egnlp.cli import app\n"
            f"try:\n    app(args={args!r}, prog_name='egnlp')\nexcept SystemExit as stop:\n    code = stop.code\n"
            "heavy = sorted({m.split('.')[0] for m in sys.modules} & {'numba', 'scipy', 'nltk', 'llvmlite'})\n"
            "print('EXIT', code, 'HEAVY', ','.join(heavy) or '-')\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-1] == "EXIT 0 HEAVY -", result.stdout[-2000:]


def test_parse_in_the_program_loads_no_scipy_nor_numba_compiler_and_both_still_work(
        parser_file: Path, files: dict[str, Path]) -> None:
    """The egnlp program's parse skips Numba's BLAS probe (egnlp.startup._numba_without_blas_probe) and the
    refresh of its compiler before cached kernels load (egnlp.startup._cached_kernels_without_refresh): the
    same output as in a Python caller's process, neither SciPy's linalg nor the implementations Numba's
    compiler registers (typed dictionaries, polynomials) loaded by it, and both working afterwards: SciPy
    imports, and a kernel that is not in any cache compiles and runs."""
    gold = files["es-test"]
    expected = run("parser", "parse", parser_file, gold, "-o", "-", "-q")
    assert_ok(expected)
    run("parser", "parse", parser_file, gold, "-o", "-", "-q")  # every kernel is in the cache now
    code = ("import sys\nfrom egnlp.cli import main\n"
            f"sys.argv = ['egnlp', 'parser', 'parse', {str(parser_file)!r}, {str(gold)!r}, '-o', '-', '-q']\n"
            "try:\n    main()\nexcept SystemExit as stop:\n    assert not stop.code, stop.code\n"
            "loaded = [m for m in ('scipy.linalg', 'numba.typed.typeddict', 'numba.np.polynomial') "
            "if m in sys.modules]\n"
            "import numba.np.arraymath as arraymath\nimport scipy.linalg\nimport numpy as np\n"
            "from numba import njit, typed, types\n"
            "@njit\ndef fresh(x):\n    d = typed.Dict.empty(types.int64, types.float64)\n"
            "    for v in np.sort(x):\n        d[int(v)] = np.sqrt(v)\n    total = 0.0\n"
            "    for v in d.values():\n        total += v\n    return len(d), total\n"
            "print('LOADED', loaded, 'BLAS', arraymath._HAVE_BLAS, scipy.linalg.__name__, "
            "fresh(np.array([4.0, 1.0, 4.0])), file=sys.stderr)\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stderr.splitlines()[-1] == "LOADED [] BLAS False scipy.linalg (2, 3.0)", result.stderr[-2000:]
    assert result.stdout == expected.stdout


def test_the_program_says_when_it_compiles_and_not_when_the_cache_serves(parser_file: Path, files: dict[str, Path],
                                                                      tmp_path: Path) -> None:
    """A parse whose kernels are not in Numba's cache (here an empty NUMBA_CACHE_DIR) says so once on stderr
    (egnlp.startup.kernels_note) and fills the cache; the same parse again loads them and says nothing."""
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "numba")}
    command = [sys.executable, "-m", "egnlp", "parser", "parse", str(parser_file), str(files["es-test"]), "-o", "-",
               "-q"]
    first = subprocess.run(command, env=env, capture_output=True, text=True, timeout=1800)
    assert first.returncode == 0, first.stderr[-2000:]
    assert first.stderr.splitlines().count(startup.COMPILING_NOTE) == 1, first.stderr[-2000:]
    assert any(name.endswith(".nbc") for _, _, names in os.walk(tmp_path / "numba") for name in names)
    second = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
    assert second.returncode == 0, second.stderr[-2000:]
    assert startup.COMPILING_NOTE not in second.stderr and second.stdout == first.stdout


def test_shell_completion_offers_the_choices_and_data_sets() -> None:
    def complete(words: str) -> list[str]:
        env = {**os.environ, "_EGNLP_COMPLETE": "complete_bash", "COMP_WORDS": words,
               "COMP_CWORD": str(len(words.split()) - (0 if words.endswith(" ") else 1))}
        result = subprocess.run([sys.executable, "-c", "from egnlp.cli import app; app(prog_name='egnlp')"], env=env,
                                capture_output=True, text=True, timeout=120)
        assert result.returncode == 0, result.stderr
        return result.stdout.split()

    assert complete("egnlp parser train --tree ") == ["projective", "non-projective", "auto"]
    assert complete("egnlp tagger train --model ") == ["crf", "maxent"]
    assert complete("egnlp data export e") == ["es", "eu"]
