"""What surprised a newcomer (issue 45), each now as the tool should behave.

- ``tagger tag`` and ``Tagger.tag(str)`` take a language, as ``parse-text`` does;
- ``tagger evaluate`` without ``--model`` scores the column the prediction fills, or refuses;
- Ctrl-C in the labeler stage of training is one line (exit status 130), never a ``SystemError``;
- ``Parser.parse([[...], [...]])`` does not read lists of three words as (word, UPOS, XPOS) tokens;
- raw text in Unicode NFD gives CoNLL-U in NFC that passes the validator's Unicode checks;
- a missing Punkt model is said, not silently replaced;
- the first run's kernel compilation is said on stderr;
- mistakes in the options are command-line mistakes (exit status 2);
- empty input is no sentences, for every command that decodes;
- counts agree with their nouns ("parsed 1 sentence").
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import unicodedata
from pathlib import Path

import pytest

from cli_helpers import assert_ok, error_line, run, usage_line
from ud_checks import udvalidate
from egnlp import startup
from egnlp.base.errors import EgnlpWarning, InputError
from egnlp.corpora import load_dataset, read_conll, write_conll
from egnlp.parser_training import train_parser
from egnlp.tagger import Tagger
from egnlp.tagger_training import label_columns, train_tagger

UD = Path(os.environ["EGNLP_UD_DIR"])
PT_TEXT = "A Dra. Silva chegou hoje. Saiu cedo."


@pytest.fixture(scope="module")
def pt_models(tmp_path_factory) -> dict[str, Path]:
    """A UPOS tagger and a parser reading UPOS, trained small on pt_bosque, and their files."""
    folder = tmp_path_factory.mktemp("newcomer")
    train = read_conll(UD / "pt_bosque-ud-test.conllu")[:150]
    tagger, _ = train_tagger(*label_columns(train, "upos")[:2], column="upos", max_passes=2)
    parser, _ = train_parser(train, tags="upos", max_passes=2, jobs=1)
    paths = {"tagger": folder / "upos.npz", "parser": folder / "parser.npz", "folder": folder}
    tagger.save(paths["tagger"])
    parser.save(paths["parser"])
    return paths


def test_tagger_tag_and_tagger_tag_text_take_a_language(pt_models, tmp_path) -> None:
    tagger = Tagger.load(pt_models["tagger"])
    assert [w for w, _ in tagger.tag(PT_TEXT, language="pt")][:3] == ["A", "Dra.", "Silva"]
    assert [w for w, _ in tagger.tag(PT_TEXT, language="english")][:3] == ["A", "Dra", "."]
    assert len(tagger.tag_sentences(PT_TEXT, language="portuguese")) == 2
    text = tmp_path / "pt.txt"
    text.write_text(PT_TEXT, encoding="utf-8")
    result = run("tagger", "tag", pt_models["tagger"], text, "--language", "pt")
    assert_ok(result)
    lines = result.stdout.splitlines()
    assert len(lines) == 2 and lines[0].split()[1].startswith("Dra./")
    assert len(run("tagger", "tag", pt_models["tagger"], text).stdout.splitlines()) == 3  # English: "Dra." ends one
    assert "unknown language 'klingon'" in usage_line(run("tagger", "tag", pt_models["tagger"], text, "-l", "klingon"))


def test_tagger_evaluate_scores_the_column_the_prediction_fills(pt_models, tmp_path) -> None:
    """pt_bosque has no XPOS ('_'): a UPOS tagger's output is scored on UPOS, not 100% of an empty column."""
    gold = tmp_path / "gold.conllu"
    write_conll(gold, read_conll(UD / "pt_bosque-ud-dev.conllu")[:40])
    pred = tmp_path / "pred.conllu"
    assert_ok(run("tagger", "tag", pt_models["tagger"], gold, "-o", pred, "-q"))
    result = run("tagger", "evaluate", gold, pred)
    assert_ok(result)
    assert result.stdout.startswith("column upos:") and "accuracy 100.00%" not in result.stdout
    blank = tmp_path / "blank.conllu"
    write_conll(blank, [s.with_tags(upos=["_"] * len(s)) for s in read_conll(gold)])
    assert "fill no tag column in common" in error_line(run("tagger", "evaluate", gold, blank))


def test_ctrl_c_in_the_labeler_stage_is_one_line(tmp_path, monkeypatch) -> None:
    """Ctrl-C while the labeler trains stops it between its passes (never inside a kernel call, where Python
    turns it into a SystemError), and the command ends in one line with exit status 130."""
    from egnlp import parser_training
    from egnlp.training import records

    train = load_dataset("es", "train")[:30]
    where = []
    real = records.Recorder.record

    def record_and_interrupt(self, passes, *args, **kwargs):
        if passes == 1 and not where:  # Ctrl-C arrives during the labeler's first pass
            os.kill(os.getpid(), signal.SIGINT)
            where.append(passes)
        return real(self, passes, *args, **kwargs)

    labeler_for = parser_training.labeler_for

    def labeler_interrupted(*args, **kwargs):
        monkeypatch.setattr(records.Recorder, "record", record_and_interrupt)
        return labeler_for(*args, **kwargs)

    monkeypatch.setattr(parser_training, "labeler_for", labeler_interrupted)
    with pytest.raises(KeyboardInterrupt) as stop:
        train_parser(train, max_passes=1, jobs=1)
    assert [entry.name for entry in stop.traceback[-2:]] == ["record", "interrupt"]  # raised between passes
    write_conll(tmp_path / "train.conll", train)

    def system_error(*args, **kwargs):  # what a Ctrl-C inside a Numba kernel's call becomes
        raise SystemError("CPUDispatcher(<function f>) returned a result with an exception set") \
            from KeyboardInterrupt()

    monkeypatch.setattr(parser_training, "labeler_for", system_error)
    result = run("parser", "train", "--train", tmp_path / "train.conll", "--passes", 1, "-o", tmp_path / "m.npz",
                 "-q")
    assert result.exit_code == 130 and result.stderr.splitlines()[-1] == "interrupted", result.stderr


def test_a_list_of_three_words_is_a_sentence_not_a_token(pt_models) -> None:
    from egnlp import Parser

    parser = Parser.load(pt_models["parser"])
    with pytest.raises(InputError, match="token 1 is \\['The', 'old', 'man'\\].*use parse_sents"):
        parser.parse([["The", "old", "man"], ["It", "sank", "fast"]])
    graph = next(parser.parse([("O", "DET"), ("gato", "NOUN")]))  # tuples are tagged tokens
    assert [graph.nodes[i]["word"] for i in (1, 2)] == ["O", "gato"]


def test_nfd_text_gives_nfc_conllu_that_the_validator_accepts(pt_models, tmp_path) -> None:
    text = unicodedata.normalize("NFD", "A situação é às três. O avô chegou.")
    assert not unicodedata.is_normalized("NFC", text)
    source = tmp_path / "nfd.txt"
    source.write_text(text, encoding="utf-8")
    out = tmp_path / "out.conllu"
    result = run("parse-text", pt_models["tagger"], pt_models["parser"], source, "-l", "pt", "-o", out)
    assert_ok(result)
    assert "normalised to Unicode NFC" in result.stderr
    written = out.read_text(encoding="utf-8")
    assert unicodedata.is_normalized("NFC", written) and "# text = A situação é às três." in written
    checked = udvalidate(out, "pt")
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_a_missing_punkt_model_is_said(monkeypatch, tmp_path) -> None:
    import nltk

    from egnlp.tagger import text

    monkeypatch.setattr(nltk.data, "path", [str(tmp_path)])
    text._splitter.cache_clear()
    with pytest.warns(EgnlpWarning, match="Punkt model for portuguese is not on NLTK's data path"):
        text.segment(PT_TEXT, "pt")
    text._splitter.cache_clear()


def test_the_program_says_the_missing_punkt_model_in_one_note(pt_models, tmp_path) -> None:
    env = {**os.environ, "NLTK_DATA": str(tmp_path)}
    result = subprocess.run([sys.executable, "-m", "egnlp", "tagger", "tag", str(pt_models["tagger"]), "-l", "pt"],
                            input=PT_TEXT, capture_output=True, text=True, env=env)
    assert result.returncode == 0, result.stderr
    notes = [line for line in result.stderr.splitlines() if "Punkt" in line]
    assert notes and notes[0].startswith("note: NLTK's Punkt model for portuguese") and "Traceback" not in result.stderr


def test_the_first_compilation_is_said(monkeypatch, capsys) -> None:
    """The note comes when a kernel starts compiling, once a process, and only in the program's process.
    (tests/test_cli_conventions.py runs the program itself on a fresh and then on a filled cache.)"""
    from numba import njit
    from numba.core import event

    monkeypatch.setitem(startup._PROGRAM, "owns_process", True)
    monkeypatch.setitem(startup._NOTE, "listener", None)
    monkeypatch.setitem(startup._NOTE, "said", False)
    listener = startup.kernels_note()
    try:
        assert listener is not None and startup.kernels_note() is None  # one listener a process
        assert capsys.readouterr().err == ""  # nothing compiled yet: nothing said
        assert njit(lambda x: x + 1)(1) == 2
        assert capsys.readouterr().err == startup.COMPILING_NOTE + "\n"
        assert njit(lambda x: x * 3)(2) == 6  # said once
        assert capsys.readouterr().err == ""
    finally:
        event.unregister("numba:compile", listener)
    monkeypatch.setitem(startup._PROGRAM, "owns_process", False)  # a Python caller's process hears nothing
    monkeypatch.setitem(startup._NOTE, "listener", None)
    monkeypatch.setitem(startup._NOTE, "said", False)
    assert startup.kernels_note() is None
    assert njit(lambda x: x - 1)(1) == 0
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("args, message", [
    (("parser", "train", "--data", "es", "-o", "m.npz", "--passes", "-3"), "--passes must be at least 0, not -3"),
    (("parser", "train", "--data", "es", "-o", "m.npz", "--C", "-1"), "C must be positive, not -1"),
    (("tagger", "train", "--data", "es", "-o", "m.npz", "--sigma2", "2"), "--sigma2 applies to --model maxent"),
    (("parse-text", "t.npz", "p.npz", "--language", "klingon"), "unknown language 'klingon'"),
    (("parser", "parse", "m.npz", "--jobs", "0"), "must be at least 1, not 0"),
])
def test_mistakes_in_the_options_are_command_line_mistakes(args, message, tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert message in usage_line(run(*args))
    assert not (tmp_path / "m.npz").exists()


def test_empty_input_is_no_sentences_for_every_decoding_command(pt_models) -> None:
    for args in (("parser", "parse", pt_models["parser"]), ("tagger", "tag", pt_models["tagger"]),
                 ("parse-text", pt_models["tagger"], pt_models["parser"])):
        for empty in ("", "\n\n  \n"):
            result = run(*args, input=empty)
            assert_ok(result)
            assert result.stdout == ""
            assert " 0 sentences" in result.stderr


def test_counts_agree_with_their_nouns(pt_models, tmp_path) -> None:
    one = tmp_path / "one.conllu"
    write_conll(one, read_conll(UD / "pt_bosque-ud-dev.conllu")[:1])
    assert "parsed 1 sentence in" in run("parser", "parse", pt_models["parser"], one).stderr
    assert "tagged 1 sentence (" in run("tagger", "tag", pt_models["tagger"], one).stderr
    two = run("parse-text", pt_models["tagger"], pt_models["parser"], "-l", "pt", input=PT_TEXT).stderr
    assert "parsed 2 sentences" in two
