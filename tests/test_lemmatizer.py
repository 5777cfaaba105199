"""The lemmatizer: edit scripts on every (form, lemma) pair of the pt and nl treebanks, the dictionary and
the classifier of edit scripts, model files, and ``egnlp lemmatizer`` end to end."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
from scipy.optimize import minimize

from cli_helpers import error_line, run
from egnlp.base.errors import InputError, ModelError, SettingsError
from egnlp.base.files import read_npz, write_npz_atomic
from egnlp.corpora import format_conll, parse_conll, read_conll, write_conll
from egnlp.corpora.sentence import LEMMA
from egnlp.features.lemma_predicates import lemma_predicates
from egnlp.lemmatizer_training import classifier_problem, train_lemmatizer, training_words
from egnlp.settings import LemmatizerSettings
from egnlp.tagger.lemmatizer import (MODEL_KIND, EditScript, Lemmatizer, apply_script, applies, edit_script,
                                     lemma_accuracy, script_from_string)
from egnlp.training.configs import CDConfig
from egnlp.training.coordinate_descent import fit_cd
from maxent_checks import dense_objective
from model_file_checks import check_missing_and_junk

UD = Path(os.environ["EGNLP_UD_DIR"])


@pytest.fixture(scope="module")
def pt_test():
    return read_conll(UD / "pt_bosque-ud-test.conllu", require_heads=False)


@pytest.fixture(scope="module")
def pt_dev():
    return read_conll(UD / "pt_bosque-ud-dev.conllu", require_heads=False)[:300]


@pytest.fixture(scope="module")
def pt(pt_test) -> Lemmatizer:
    return train_lemmatizer(pt_test, C=0.1, form_backoff=False, known_ratio=0.0)


# --------------------------------------------------------------------------- edit scripts


@pytest.mark.parametrize("treebank", ["pt_bosque", "nl_alpino"])
def test_every_pair_of_the_treebanks_round_trips(treebank: str) -> None:
    pairs = {(row[1], row[LEMMA]) for split in ("test", "dev")
             for s in read_conll(UD / f"{treebank}-ud-{split}.conllu", require_heads=False) for row in s.rows}
    scripts = set()
    for form, lemma in pairs:
        script = edit_script(form, lemma)
        assert applies(script, form) and apply_script(script, form) == lemma, (form, lemma, script)
        assert script_from_string(str(script)) == script
        scripts.add(script)
    # few scripts serve many pairs: the point of editing instead of spelling lemmas out
    assert len(scripts) < len(pairs) / 4


def test_scripts_of_known_pairs() -> None:
    assert edit_script("casas", "casa") == EditScript("lower", strip_suffix="s")
    assert edit_script("Casas", "casa") == edit_script("casas", "casa")  # one script whatever the casing
    assert edit_script("Lisboa", "Lisboa") == EditScript("keep")
    assert edit_script("BRASIL", "Brasil") == EditScript("title")
    assert edit_script("foi", "ser") == EditScript("lower", whole="ser")
    assert edit_script("gemaakt", "maken") == EditScript("lower", "ge", "", "akt", "ken")
    assert edit_script("]", "_").whole == "_"
    # a script applies only where the form carries what it strips
    acao = edit_script("ações", "ação")
    assert applies(acao, "canções") and apply_script(acao, "canções") == "canção"
    assert not applies(acao, "casa")
    with pytest.raises(ValueError, match="does not apply"):
        apply_script(acao, "casa")


# --------------------------------------------------------------------------- dictionary and classifier


def test_dictionary_answers_seen_words_and_the_classifier_unseen_ones(pt: Lemmatizer, pt_dev) -> None:
    words = [(row[1], (row[3], row[4], row[5])) for s in pt_dev for row in s.rows]
    gold = [row[LEMMA] for s in pt_dev for row in s.rows]
    known: list[bool] = []
    predicted = pt.lemmas(words, known)
    assert 0 < sum(known) < len(known)
    # an irregular seen word: the dictionary's lemma, which no script of the classifier could make
    assert pt.lemmas([("foi", ("AUX", "_", "Mood=Ind|Number=Sing|Person=3|Tense=Past|VerbForm=Fin"))]) == ["ser"]
    seen = [p == g for p, g, k in zip(predicted, gold, known) if k]
    unseen = [(w, p, g) for w, p, g, k in zip(words, predicted, gold, known) if not k]
    assert sum(seen) / len(seen) > 0.99
    guessed = sum(p == g for _, p, g in unseen) / len(unseen)
    # the classifier beats the most frequent applicable script (no features: every score 0, ties to id order)
    bare = Lemmatizer(pt.scripts, {}, [], np.zeros(1, np.int64), np.zeros(0, np.int64), np.zeros(0))
    baseline = sum(p == g for p, (_, _, g) in zip(bare.guess([w for w, _, _ in unseen]), unseen)) / len(unseen)
    identity = sum(w[0] == g for w, _, g in unseen) / len(unseen)
    assert guessed > 0.9 and guessed > baseline + 0.1 and guessed > identity + 0.1


def test_guess_scores_by_the_weights_of_its_predicates(pt: Lemmatizer) -> None:
    """The classifier's choice against a brute-force sum over every feature and every applicable script."""
    index = {p: k for k, p in enumerate(pt.predicates)}
    for form, tags in [("desconfiaram", ("VERB", "_", "Mood=Ind|Number=Plur|Person=3|Tense=Past|VerbForm=Fin")),
                       ("caravelas", ("NOUN", "_", "Gender=Fem|Number=Plur")), ("Xpto", ("PROPN", "_", "_")),
                       ("2026", ("NUM", "_", "NumType=Card"))]:
        scores = np.zeros(len(pt.scripts))
        for p in lemma_predicates(form, *tags):
            if p in index:
                k = index[p]
                for t in range(pt.feat_ptr[k], pt.feat_ptr[k + 1]):
                    scores[pt.feat_label[t]] += pt.weights[t]
        cand = [k for k, s in enumerate(pt.scripts) if applies(s, form)]
        assert pt.candidates(form) == cand
        best = max(cand, key=lambda k: (scores[k], -k))
        assert pt.guess([(form, tags)]) == [apply_script(pt.scripts[best], form) or form]


def test_known_lemmas_win_within_the_ratio(pt: Lemmatizer, pt_dev) -> None:
    words = list(dict.fromkeys((row[1], (row[3], row[4], row[5])) for s in pt_dev for row in s.rows))
    known: list[bool] = []
    pt.lemmas(words, known)
    unseen = [w for w, k in zip(words, known) if not k]
    plain = pt.guess(unseen)
    try:
        pt.known_ratio = 1e-300  # any applicable script with a training lemma beats one without
        anything = pt.guess(unseen)
        pt.known_ratio = 1.0  # only a tie with the best
        tie = pt.guess(unseen)
    finally:
        pt.known_ratio = 0.0
    assert tie == plain
    changed = 0
    for (form, _), a, b in zip(unseen, plain, anything):
        makes_known = any(apply_script(pt.scripts[k], form).lower() in pt.known_lemmas for k in pt.candidates(form))
        assert (b.lower() in pt.known_lemmas) == makes_known or (b == form and not makes_known)
        changed += a != b
    assert changed > 0
    gold = dict(((row[1], (row[3], row[4], row[5])), row[LEMMA]) for s in pt_dev for row in s.rows)
    pt.known_ratio = 0.01
    try:
        preferred = pt.guess(unseen)
    finally:
        pt.known_ratio = 0.0
    right = [sum(lemma == gold[w] for w, lemma in zip(unseen, guesses)) for guesses in (plain, preferred)]
    assert right[1] > right[0]


def test_coordinate_descent_reaches_the_optimum_of_lbfgs(pt_test) -> None:
    settings = LemmatizerSettings(C=0.5, min_count=3)
    words = training_words(pt_test[:40], settings.column_list)
    problem, predicates, scripts, record = classifier_problem(words, settings)
    assert problem.n_labels == len(scripts) and problem.n_predicates == len(predicates)
    assert 100 < problem.n_events == record["events"] <= len(words)
    result = fit_cd(problem, config=CDConfig(C=0.5, max_passes=500, tol=0.0, gtol=1e-8))
    # L-BFGS on the problem's own objective and gradient (the gradient is checked against finite differences
    # in test_maxent.py); the optimum's value also by the dense objective of maxent_checks
    reference = minimize(lambda w: problem.objective_and_gradient(w, 0.5), np.zeros(problem.n_features), jac=True,
                         method="L-BFGS-B", options={"gtol": 1e-10, "ftol": 1e-14, "maxiter": 5000})
    assert reference.success
    assert dense_objective(problem, reference.x, 0.5) == pytest.approx(reference.fun, rel=1e-10)
    assert dense_objective(problem, result.weights, 0.5) == pytest.approx(reference.fun, rel=1e-7)
    np.testing.assert_allclose(result.weights, reference.x, atol=1e-3)


def test_accuracy_and_conventions_on_the_dev_file(pt: Lemmatizer, pt_dev) -> None:
    blank = [s.with_tags() for s in pt_dev]
    out = pt.lemmatize(blank)
    assert lemma_accuracy(pt_dev, out) > 97.0
    for s, o in zip(pt_dev, out):
        assert o.aside == s.aside  # ranges and comments as they were: ranges get no lemma
        for row, new in zip(s.rows, o.rows):
            assert new[:LEMMA] == row[:LEMMA] and new[LEMMA + 1:] == row[LEMMA + 1:] and new[LEMMA]
            if row[3] == "PUNCT" and row[1] != "]":
                assert new[LEMMA] == row[1]
    assert pt.lemmas([("]", ("PUNCT", "_", "_"))]) == ["_"]  # as pt_bosque writes it


# --------------------------------------------------------------------------- model files


def test_save_and_load_give_the_same_output(pt: Lemmatizer, pt_dev, tmp_path: Path) -> None:
    path = tmp_path / "lemma.npz"
    pt.save(path)
    loaded = Lemmatizer.load(path)
    assert loaded.scripts == pt.scripts and loaded.dictionary == pt.dictionary and loaded.info == pt.info
    assert format_conll(loaded.lemmatize(pt_dev)) == format_conll(pt.lemmatize(pt_dev))
    arrays, meta = pt.file_parts()
    again = Lemmatizer.from_file_parts(arrays, meta, "stage")
    assert again.columns == pt.columns and again.form_backoff == pt.form_backoff


def test_bad_files_and_settings_give_egnlp_errors(pt: Lemmatizer, tmp_path: Path) -> None:
    check_missing_and_junk(Lemmatizer.load, tmp_path)
    other = tmp_path / "other.npz"
    write_npz_atomic(other, {"weights": np.zeros(2)}, {"kind": "egnlp-tagger", "format_version": 2})
    with pytest.raises(ModelError, match=f"expected a model of kind '{MODEL_KIND}'"):
        Lemmatizer.load(other)
    good = tmp_path / "good.npz"
    pt.save(good)
    data = bytearray(good.read_bytes())
    data[len(data) // 2] ^= 0xFF
    damaged = tmp_path / "damaged.npz"
    damaged.write_bytes(bytes(data))
    with pytest.raises(ModelError):
        Lemmatizer.load(damaged)
    arrays, meta = read_npz(good, MODEL_KIND, 1)
    for name, bad in (("weights", np.full_like(arrays["weights"], np.nan)),
                      ("feat_label", arrays["feat_label"] + len(pt.scripts))):
        tampered = tmp_path / f"tampered-{name}.npz"
        write_npz_atomic(tampered, {**arrays, name: bad}, meta)
        with pytest.raises(ModelError, match="inconsistent model file"):
            Lemmatizer.load(tampered)
    with pytest.raises(SettingsError, match="--columns"):
        LemmatizerSettings(columns="upos,lemma")
    with pytest.raises(SettingsError, match="unknown lemmatizer setting"):
        LemmatizerSettings.build(sigma=3)
    with pytest.raises(InputError, match="no training sentences"):
        train_lemmatizer([])


# --------------------------------------------------------------------------- the command line


def test_cli_trains_lemmatizes_and_describes(pt_test, tmp_path: Path) -> None:
    train, dev = tmp_path / "train.conllu", tmp_path / "dev.conllu"
    write_conll(train, pt_test[:200])
    gold = read_conll(UD / "pt_bosque-ud-dev.conllu", require_heads=False)[:60]
    blank = [s.__class__(tuple((*r[:LEMMA], "_", *r[LEMMA + 1:]) for r in s.rows), s.aside) for s in gold]
    write_conll(dev, blank)
    model, out = tmp_path / "lemma.npz", tmp_path / "out.conllu"
    result = run("lemmatizer", "train", train, "--out", model, "--passes", "5", "-q")
    assert result.exit_code == 0, result.output
    result = run("lemmatizer", "lemmatize", model, dev, "-o", out, "-q")
    assert result.exit_code == 0, result.output
    done = read_conll(out, require_heads=True)
    assert all(row[LEMMA] != "_" or row[1] == "]" for s in done for row in s.rows)
    assert [s.forms for s in done] == [s.forms for s in gold] and lemma_accuracy(gold, done) > 90
    assert [s.aside for s in done] == [s.aside for s in gold]
    piped = run("lemmatizer", "lemmatize", model, "-", "-q", input=dev.read_text())
    assert piped.exit_code == 0 and piped.stdout == out.read_text()
    info = run("model", "info", model)
    assert info.exit_code == 0 and "lemmatizer, format version 1" in info.stdout
    line = error_line(run("lemmatizer", "lemmatize", tmp_path / "missing.npz", dev))
    assert "missing.npz" in line
    bad = tmp_path / "bad.conllu"
    bad.write_text("1\tcasa\n\n")
    assert "bad.conllu" in error_line(run("lemmatizer", "lemmatize", model, bad))


def test_conllu_without_lemmas_is_refused_for_training() -> None:
    text = "1\tcasa\t\tNOUN\t_\t_\t_\t_\t_\t_\n\n"
    with pytest.raises(Exception):
        train_lemmatizer(parse_conll(text, require_heads=False))
