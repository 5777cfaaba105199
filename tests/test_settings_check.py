"""Trainer settings given through the Python API: an unknown name or a value of the wrong type is a
ValueError that names the trainer and lists its valid settings, never a raw TypeError."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from egnlp.parser_training import train_parser
from egnlp.corpora import load_dataset
from egnlp.tagger_training import train_crf_tagger, train_maxent_tagger
from egnlp.training.registry import MAXENT, TRAINERS, check_settings, get_trainer, make_config

EG_FIELDS = ", ".join(sorted(f.name for f in dataclasses.fields(get_trainer("eg-mm").config)))


@pytest.fixture(scope="module")
def wsj() -> list:
    return load_dataset("wsj", "train")[:5]


@pytest.mark.parametrize("name, guess", [("passes", "max_passes"), ("max-passes", "max_passes"),
                                         ("--max-seconds", "max_seconds"), ("c", "C"), ("max_pases", "max_passes"),
                                         ("epochs", "max_passes")])
def test_unknown_setting_suggests_the_config_name(name: str, guess: str) -> None:
    with pytest.raises(ValueError) as error:
        make_config(get_trainer("eg-mm"), **{name: 3})
    assert str(error.value) == (f"trainer 'eg-mm' has no setting {name} (did you mean {guess}?); "
                                f"valid settings: {EG_FIELDS}")


def test_unknown_setting_without_a_near_name_lists_the_valid_ones() -> None:
    with pytest.raises(ValueError, match="^trainer 'lbfgs' has no setting order; valid settings: C, gtol, "
                                         "max_passes, max_seconds, memory, tol$"):
        make_config(get_trainer("lbfgs"), order="random")


@pytest.mark.parametrize("settings, message", [
    ({"C": "x"}, "setting C of trainer 'eg-mm' must be a number, not 'x' \\(str\\)"),
    ({"max_passes": 2.5}, "setting max_passes of trainer 'eg-mm' must be an integer, not 2.5"),
    ({"max_passes": True}, "setting max_passes of trainer 'eg-mm' must be an integer, not True"),
    ({"anneal": 1}, "setting anneal of trainer 'eg-mm' must be true or false, not 1"),
    ({"order": 0}, "setting order of trainer 'eg-mm' must be a string"),
    ({"max_seconds": "10"}, "setting max_seconds of trainer 'eg-mm' must be a number or None"),
])
def test_a_value_of_the_wrong_type_is_a_clear_error(settings: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        make_config(get_trainer("eg-mm"), **settings)


def test_numbers_of_any_kind_and_none_where_allowed_are_accepted() -> None:
    config = make_config(get_trainer("eg-mm"), C=np.float64(3), max_passes=np.int64(4), tol=0, max_seconds=None)
    assert (config.C, config.max_passes, config.tol) == (3.0, 4, 0)
    assert make_config(get_trainer("cd", MAXENT), seed=None).seed is None


@pytest.mark.parametrize("trainer", TRAINERS, ids=lambda t: f"{t.problem}-{t.name}")
def test_every_trainers_defaults_pass_the_check(trainer) -> None:
    defaults = {f.name: f.default for f in dataclasses.fields(trainer.config)
                if f.default is not dataclasses.MISSING}
    check_settings(trainer, defaults)
    assert make_config(trainer, **defaults) == trainer.config()


def test_the_training_functions_check_their_settings(wsj: list) -> None:
    calls = [
        (lambda: train_parser(wsj, passes=2), "trainer 'bcfw' has no setting passes \\(did you mean max_passes\\?\\)"),
        (lambda: train_parser(wsj, **{"C": "big"}), "--C must be a number or None, not 'big'"),
        (lambda: train_parser(wsj, trainer="lbfgs", order="cyclic"), "trainer 'lbfgs' has no setting --order"),
        (lambda: train_parser(wsj, wsj, C_path="10:0.1:2", passes=2), "trainer 'bcfw' has no setting passes"),
        (lambda: train_parser(wsj, wsj, C_path="10:0.1:2", C=3.0), "give --C or --C-path, not both"),
        (lambda: train_crf_tagger([["a"]], [["N"]], passes=2), "trainer 'eg-ll' has no setting passes"),
        (lambda: train_maxent_tagger([["a"]], [["N"]], max_pases=2), "trainer 'cd' has no setting max_pases "
                                                                      "\\(did you mean max_passes\\?\\)"),
        (lambda: train_maxent_tagger([["a"]], [["N"]], max_passes="2"), "--passes must be an integer"),
    ]
    for call, message in calls:
        with pytest.raises(ValueError, match=message):
            call()
