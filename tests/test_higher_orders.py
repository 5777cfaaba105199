"""The second-order (sibling parts) and third-order (sibling and grandparent parts) parsers alike, each test
run for both: trainers reaching one optimum, the model's save / load, and its command line.  Their
features, gold and loss are tested in tests/test_siblings.py and tests/test_grandparents.py."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from egnlp.corpora import load_dataset
from egnlp.corpora.sentence import find_cycle
from egnlp.parser.parser_model import Parser
from egnlp.parser_training import build_parsing_problem, train_parser

from parser_file_checks import (check_cli_model, check_eg_reaches_lbfgs, check_max_margin_trainers_agree,
                                check_saved_parser)


@dataclass(frozen=True)
class Order:
    """What a test needs to know of a higher-order parser."""

    order: int
    setting: str  # the keyword of build_parsing_problem / train_parser, and of the saved settings
    flag: str  # its command-line flag
    max_words: int | None  # the trainers' tests take sentences of at most this many words
    n_train: int  # sentences of training and dev for the saved model and the command line
    n_dev: int
    keys: str  # the model file's array of the order's template keys
    templates: str  # the metadata of its template set's version
    old_templates: str  # the error of a model file of another version
    described: str  # how ``model info`` names it


ORDERS = [
    Order(2, "siblings", "--parts=siblings", None, 50, 20, "sibling_keys", "sibling_templates",
          "sibling templates 'older'.*retrain the model",
          "arcs and siblings (second order)"),
    Order(3, "grandparents", "--parts=grandparents", 12, 40, 15, "grand_keys", "grand_templates",
          "grandparent templates 'older'.*retrain the model",
          "arcs, siblings and grandparents (third order)"),
]
BOTH = pytest.mark.parametrize("spec", ORDERS, ids=[spec.setting for spec in ORDERS])
LL_C = 10.0


def _problem(spec: Order, es_train, count: int):
    """The first ``count`` training sentences the order's trainers' tests take (of at most ``max_words``
    words: the third order's problems are solved to a tight gap on short sentences)."""
    sentences = [s for s in es_train if spec.max_words is None or len(s) <= spec.max_words]
    return build_parsing_problem(sentences[:count], "single", **{spec.setting: True})[1]


@BOTH
def test_log_linear_eg_reaches_the_lbfgs_optimum(spec, es_train):
    """EG over the order's marginals (inside-outside of its chart) and scipy's L-BFGS on the log-linear
    primal of the same problem reach one optimum; EG's duality gap closes."""
    check_eg_reaches_lbfgs(_problem(spec, es_train, 10), LL_C)


@BOTH
def test_max_margin_trainers_agree_and_close_the_gap(spec, es_train):
    check_max_margin_trainers_agree(_problem(spec, es_train, 8))


@BOTH
def test_parser_saves_loads_and_parses_the_same(spec, es_train, tmp_path):
    dev = load_dataset("es", "dev")[:spec.n_dev]
    parser, _ = train_parser(es_train[:spec.n_train], dev, root="single", max_passes=2, parts=spec.setting,
                             cascade=False)
    assert parser.order == spec.order and parser.labeler is not None and parser.pruner is None
    assert parser.info["settings"]["parts"] == spec.setting and parser.info["settings"]["cascade"] is False
    higher = [parser.siblings] + ([parser.grand] if spec.order == 3 else [])
    assert parser.weights.size == parser.featurizer.n_features + sum(f.n_features for f in higher)
    check_saved_parser(parser, dev, tmp_path, spec.keys, spec.templates, spec.old_templates)
    # the same weights decoded non-projectively (McDonald and Pereira 2006, Sec. 3.2): trees with one root child
    crossing = Parser(parser.featurizer, parser.weights, "single", tree="non-projective", siblings=parser.siblings,
                      grand=parser.grand)
    for heads in crossing.predict_heads(dev):
        assert find_cycle(heads) is None and heads.count(0) == 1


@BOTH
def test_cli_trains_and_parses(spec, tmp_path, es_train):
    info, text = check_cli_model(tmp_path, es_train[:spec.n_train], spec.flag, 2)
    # the command line's model of these parts: pruned by a first-order cascade by default
    assert info["order"] == spec.order and info["training"]["settings"]["parts"] == spec.setting
    assert info["training"]["settings"]["cascade"] is True and "cascade" in info["training"]
    features = info["features"]
    assert 0 < features["sibling_count"] < features["count"]
    if spec.order == 2:
        assert features["grand_count"] is None
    else:
        assert 0 < features["grand_count"] < features["count"] - features["sibling_count"]
    assert spec.described in text
