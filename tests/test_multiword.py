"""Multiword tokens: the expansion table with case restored, the classifier of ambiguous forms, the
rules for unseen forms, CoNLL-U with ranges written and read back, valid output, model files, and
the classifier's coordinate descent against an independent optimiser of the same objective."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import numpy as np
import pytest
from scipy.optimize import minimize

from ud_checks import udvalidate
from egnlp.base.errors import InputError, ModelError, SettingsError
from egnlp.base.files import write_npz_atomic
from egnlp.corpora import format_conll, parse_conll, read_conll, write_conll
from egnlp.multiword_training import MultiwordSettings, classifier_problem, train_multiword
from egnlp.tagger.multiword import (FORMAT_VERSION, MODEL_KIND, MultiwordExpander, expansion_scores, restore_case,
                                    surface_tokens)
from egnlp.training.configs import CDConfig
from egnlp.training.coordinate_descent import fit_cd
from maxent_checks import dense_objective
from model_file_checks import check_missing_and_junk

UD = Path(os.environ["EGNLP_UD_DIR"])


def conllu(*sentences: list) -> str:
    """CoNLL-U text of sentences given as lists of tokens: a string (one word) or (form, words...)."""
    out = []
    for tokens in sentences:
        n = 0
        for token in tokens:
            if isinstance(token, str):
                n += 1
                out.append(f"{n}\t{token}" + "\t_" * 8)
            else:
                form, *words = token
                out.append(f"{n + 1}-{n + len(words)}\t{form}" + "\t_" * 8)
                for word in words:
                    n += 1
                    out.append(f"{n}\t{word}" + "\t_" * 8)
        out.append("")
    return "\n".join(out) + "\n"


def train_text(text: str, **options) -> MultiwordExpander:
    return train_multiword(parse_conll(text, require_heads=False), tune=False, **options)


def with_tree(sentence):
    """The sentence with placeholder UPOS and a flat tree, so that the validator's level 2 can read it."""
    rows = tuple((*row[:3], "X", row[4], row[5], "0" if i == 0 else "1", "root" if i == 0 else "dep", *row[8:])
                 for i, row in enumerate(sentence.rows))
    return dataclasses.replace(sentence, rows=rows)


@pytest.fixture(scope="module")
def pt() -> MultiwordExpander:
    return train_multiword(read_conll(UD / "pt_bosque-ud-test.conllu", require_heads=False), tune=False)


@pytest.fixture(scope="module")
def pt_dev():
    return read_conll(UD / "pt_bosque-ud-dev.conllu", require_heads=False)


# --------------------------------------------------------------------------- the table and its casing


def test_restore_case() -> None:
    assert restore_case("Do", ("de", "o")) == ("De", "o")
    assert restore_case("DO", ("de", "o")) == ("DE", "O")
    assert restore_case("do", ("de", "o")) == ("de", "o")
    assert restore_case("DAQUELA", ("de", "aquela")) == ("DE", "AQUELA")
    assert restore_case("Àquela", ("a", "aquela")) == ("A", "aquela")
    assert restore_case("além-Pirinéus", ("além", "pirinéus")) == ("além", "Pirinéus")


def test_table_expands_seen_forms_with_their_case() -> None:
    expander = train_text(conllu(["Ele", "veio", ("do", "de", "o"), "Porto", "."],
                                 [("Da", "De", "a"), "casa", "saiu", "."]))
    assert expander.expand(["Do", "DO", "do", "da", "DA", "Porto"]) == [
        ("De", "o"), ("DE", "O"), ("de", "o"), ("de", "a"), ("DE", "A"), ("Porto",)]
    words, ranges = expander.words_and_ranges(["Veio", "do", "Porto"])
    assert words == ["Veio", "de", "o", "Porto"] and ranges == [(1, 2, 3)]


# --------------------------------------------------------------------------- the classifier


AMBIGUOUS = [[("nos", "em", "os"), noun, "chegou", "."] for noun in ("anos", "dias", "meses", "jogos")] * 5 \
    + [["Ele", "nos", verb, "."] for verb in ("disse", "deu", "viu", "chamou")] * 5 \
    + [["Ela", "nos", "deu", "tudo", "."]]


def test_classifier_decides_each_occurrence_of_an_ambiguous_form() -> None:
    expander = train_text(conllu(*AMBIGUOUS))
    assert "nos" in expander.classifier and "nos" not in expander.table
    assert expander.expand(["Nos", "anos", "seguintes", "ela", "nos", "viu", "."]) == [
        ("Em", "os"), ("anos",), ("seguintes",), ("ela",), ("nos",), ("viu",), (".",)]


def test_classifier_beats_the_majority_outcome_on_real_data(pt: MultiwordExpander, pt_dev) -> None:
    right = majority = total = 0
    for sentence in pt_dev:
        tokens = surface_tokens(sentence)
        forms = [t.form for t in tokens]
        predicted = pt.expand(forms)
        for token, words in zip(tokens, predicted):
            if token.form.lower() == "nos":
                total += 1
                right += words == token.words
                majority += len(token.words) == 2
    assert total > 20 and right > majority and right >= 0.9 * total


# --------------------------------------------------------------------------- rules for unseen forms


CLITICS = [[(f"{verb}-{clitic}", verb, clitic), "tudo", "."]
           for verb, clitic in (("disse", "lhe"), ("deu", "lhe"), ("contou", "lhe"), ("fez", "se"), ("viu", "se"),
                                ("deu", "se"), ("levou", "o"), ("pegou", "o"))] \
    + [["A", "Guiné-Bissau", "e", "a", "ex-colónia", "."], ["O", "vice-presidente", "falou", "."],
       ["A", "sexta-feira", "chegou", "."]]


def test_suffix_rules_split_unseen_clitic_forms() -> None:
    expander = train_text(conllu(*CLITICS))
    assert expander.expand(["Pediu-lhe", "e", "ESCREVEU-LHE", "que", "partiu-se", "e", "a", "Costa-Rica",
                            "quarta-feira"]) == [
        ("Pediu", "lhe"), ("e",), ("ESCREVEU", "LHE"), ("que",), ("partiu", "se"), ("e",), ("a",),
        ("Costa-Rica",), ("quarta-feira",)]


def test_hyphen_rules_split_clitics_never_seen_after_a_hyphen() -> None:
    clitics = [[(f"{verb}-{clitic}", verb, clitic), "tudo", "."]
               for verb, clitic in (("fez", "nos"), ("viu", "los"), ("deu", "las"), ("tem", "nos"))]
    compounds = [["Um", "bem-estar", "e", "um", "porta-voz", "."], ["A", "Guiné-Bissau", "."]]
    expander = train_text(conllu(*clitics, *compounds, ["Ele", "lhe", "disse", "um", "dia", "."]))
    assert "xxx" in expander.hyphen_rules.keys
    assert expander.expand(["pediu-lhe", "know-how", "dia-a-dia", "Costa-Rica", "ex-ministro"]) == [
        ("pediu", "lhe"), ("know-how",), ("dia-a-dia",), ("Costa-Rica",), ("ex-ministro",)]


def test_rules_of_the_treebank(pt: MultiwordExpander) -> None:
    unseen = ["Passaram-se", "mobilizar-se", "convencê-los", "Nestas", "daqueles", "dela", "nouveau",
              "custaram-lhe"]
    assert not any(form.lower() in pt.table or form.lower() in pt.classifier for form in unseen)
    assert pt.expand(unseen) == [("Passaram", "se"), ("mobilizar", "se"), ("convencê", "los"), ("Em", "estas"),
                                 ("de", "aqueles"), ("de", "ela"), ("nouveau",), ("custaram", "lhe")]


def test_expansion_scores_on_the_dev_file(pt: MultiwordExpander, pt_dev) -> None:
    gold = [surface_tokens(s) for s in pt_dev]
    scores = expansion_scores(gold, [pt.expand([t.form for t in tokens]) for tokens in gold])
    assert scores["gold_words"] == 28447 and scores["tokens"] == 26384
    assert scores["f1"] > 99.7 and scores["precision"] > 99.7 and scores["recall"] > 99.7


# --------------------------------------------------------------------------- CoNLL-U


def test_sentences_with_ranges_are_written_and_read_back(pt: MultiwordExpander, pt_dev) -> None:
    tokens = ["Disse-lhe", "que", "vinha", "do", "Porto", "."]
    miscs = ["_", "_", "_", "SpaceAfter=No", "SpaceAfter=No", "_"]
    sentence = pt.sentence(tokens, miscs, ["# text = Disse-lhe que vinha doPorto."])
    text = format_conll([sentence])
    assert text.splitlines() == [
        "# text = Disse-lhe que vinha doPorto.",
        "1-2\tDisse-lhe" + "\t_" * 8,
        "1\tDisse" + "\t_" * 8, "2\tlhe" + "\t_" * 8, "3\tque" + "\t_" * 8, "4\tvinha" + "\t_" * 8,
        "5-6\tdo" + "\t_" * 7 + "\tSpaceAfter=No",
        "5\tde" + "\t_" * 8, "6\to" + "\t_" * 8,
        "7\tPorto" + "\t_" * 7 + "\tSpaceAfter=No", "8\t." + "\t_" * 8, ""]
    (again,) = parse_conll(text, require_heads=False)
    assert again.lines() == sentence.lines()
    assert [(t.form, t.misc) for t in surface_tokens(again)] == list(zip(tokens, miscs))
    # the gold file's tokens, read through corpora's reader: each range's words are its words
    for gold in pt_dev[:200]:
        found = surface_tokens(gold)
        assert [w for t in found for w in t.words] == gold.forms
        assert pt.expand_sentence(gold).aside[:1] == gold.aside[:1]  # comments kept


def test_output_is_valid_at_level_2(pt: MultiwordExpander, pt_dev, tmp_path: Path) -> None:
    out = tmp_path / "words.conllu"
    expanded = [pt.expand_sentence(s) for s in pt_dev[:300]]
    assert sum(len(s) for s in expanded) > sum(len(surface_tokens(s)) for s in pt_dev[:300])
    write_conll(out, [with_tree(s) for s in expanded])
    checked = udvalidate(out, "pt")
    assert checked.returncode == 0, checked.stdout[-3000:] + checked.stderr[-3000:]


# --------------------------------------------------------------------------- model files


def test_save_and_load_give_the_same_output(pt: MultiwordExpander, pt_dev, tmp_path: Path) -> None:
    path = tmp_path / "mwt.npz"
    pt.save(path)
    loaded = MultiwordExpander.load(path)
    assert loaded.table == pt.table and loaded.outcomes == pt.outcomes and loaded.info == pt.info
    assert (loaded.min_support, loaded.min_precision) == (pt.min_support, pt.min_precision)
    for sentence in pt_dev[:400]:
        assert format_conll([loaded.expand_sentence(sentence)]) == format_conll([pt.expand_sentence(sentence)])
    unseen = ["Passaram-se", "Nestas", "dela", "Nos", "nos", "nouveau"]
    assert loaded.expand(unseen) == pt.expand(unseen)


def test_trained_without_ranges_it_splits_nothing() -> None:
    train = read_conll(UD / "nl_alpino-ud-test.conllu", require_heads=False)
    expander = train_multiword(train)
    assert not expander.splits_anything and expander.classifier.forms == []
    dev = read_conll(UD / "nl_alpino-ud-dev.conllu", require_heads=False)
    for sentence in dev:
        assert expander.expand_sentence(sentence).forms == sentence.forms
    assert expander.expand(["zei-ie", "Do", "nos", "dela"]) == [("zei-ie",), ("Do",), ("nos",), ("dela",)]


def test_bad_inputs_and_files_give_egnlp_errors(pt: MultiwordExpander, tmp_path: Path) -> None:
    with pytest.raises(InputError, match="not one string"):
        pt.expand("do Porto")
    with pytest.raises(InputError, match="token 2"):
        pt.expand(["do", ""])
    with pytest.raises(InputError, match="token 1"):
        pt.expand(["a\tb"])
    with pytest.raises(InputError, match="2 MISC fields for 1 tokens"):
        pt.sentence(["do"], ["_", "_"])
    with pytest.raises(InputError, match="no training sentences"):
        train_multiword([])
    with pytest.raises(SettingsError, match="unknown multiword setting"):
        MultiwordSettings.build(sigma=3)
    with pytest.raises(SettingsError):
        MultiwordSettings(min_precision=0)
    check_missing_and_junk(MultiwordExpander.load, tmp_path)
    other = tmp_path / "other.npz"
    write_npz_atomic(other, {"weights": np.zeros(2)}, {"kind": "egnlp-tagger", "format_version": 2})
    with pytest.raises(ModelError, match="expected a model of kind 'egnlp-multiword'"):
        MultiwordExpander.load(other)
    old = tmp_path / "old.npz"
    write_npz_atomic(old, {"weights": np.zeros(2)}, {"kind": MODEL_KIND, "format_version": FORMAT_VERSION + 1})
    with pytest.raises(ModelError, match="format version"):
        MultiwordExpander.load(old)
    good = tmp_path / "good.npz"
    pt.save(good)
    data = bytearray(good.read_bytes())
    data[len(data) // 2] ^= 0xFF
    damaged = tmp_path / "damaged.npz"
    damaged.write_bytes(bytes(data))
    with pytest.raises(ModelError):
        MultiwordExpander.load(damaged)
    broken = tmp_path / "broken.npz"
    meta = {"kind": MODEL_KIND, "format_version": FORMAT_VERSION, "templates": 1, "min_support": 2.0,
            "min_precision": 0.5, "prefix_known": False, "info": {}}
    write_npz_atomic(broken, {"weights": np.zeros(2)}, meta)
    with pytest.raises(ModelError, match="inconsistent model file"):
        MultiwordExpander.load(broken)


# --------------------------------------------------------------------------- the classifier's objective



def test_coordinate_descent_reaches_the_optimum_of_lbfgs() -> None:
    token_lists = [surface_tokens(s) for s in parse_conll(conllu(*AMBIGUOUS), require_heads=False)]
    problem, predicates = classifier_problem(token_lists, {"nos": ["em\tos", ""]})
    assert problem.n_events == 41 and problem.n_labels == 2 and len(predicates) == problem.n_predicates
    C = 0.5
    result = fit_cd(problem, config=CDConfig(C=C, max_passes=500, tol=0.0, gtol=1e-9))
    reference = minimize(lambda w: dense_objective(problem, w, C), np.zeros(problem.n_features), method="L-BFGS-B",
                         options={"gtol": 1e-10, "ftol": 1e-14, "maxiter": 5000})
    assert reference.success
    assert problem.objective(result.weights, C) == pytest.approx(dense_objective(problem, result.weights, C),
                                                                 rel=1e-12)
    assert dense_objective(problem, result.weights, C) == pytest.approx(reference.fun, rel=1e-8)
    np.testing.assert_allclose(result.weights, reference.x, atol=1e-4)
