"""Early stopping: ``parser train --patience P`` and ``--max-seconds`` keep the best dev pass's weights.

A small real problem (100 ``es`` training sentences, 80 dev sentences): the
dev UAS rises for a dozen passes and then falls, so a patience of 2 stops
the run early; the kept weights are those the trainer had after the best
dev pass, and the passes that ran are those of a run without patience.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from cli_helpers import assert_ok, run, usage_line
from egnlp.parser_training import train_parser
from egnlp.corpora import load_dataset, write_conll
from egnlp.training.records import BestPass, PassRecord

N_TRAIN, N_DEV, PATIENCE, MAX_PASSES = 100, 80, 2, 30


class EveryPass:
    """A callback keeping a copy of the weights after every pass."""

    def __init__(self) -> None:
        self.weights: dict[int, np.ndarray] = {}

    def keep(self, record: PassRecord, w: np.ndarray) -> None:
        self.weights[record.passes] = np.array(w, copy=True)

    def __call__(self, record: PassRecord) -> None:
        pass


@pytest.fixture(scope="module")
def data():
    return load_dataset("es", "train")[:N_TRAIN], load_dataset("es", "dev")[:N_DEV]


@pytest.fixture(scope="module")
def patient(data):
    seen = EveryPass()
    parser, result = train_parser(*data, max_passes=MAX_PASSES, patience=PATIENCE, labels=False, callbacks=[seen])
    return parser, result, seen


def _best(records: list[PassRecord]) -> PassRecord:
    return max(records, key=lambda r: (r.dev, -r.passes))  # the first of the highest dev scores


def test_patience_stops_early_and_keeps_the_best_pass(patient) -> None:
    parser, result, seen = patient
    last, best = result.records[-1], _best(result.records)
    assert last.passes < MAX_PASSES  # stopped early
    assert last.passes - best.passes == PATIENCE
    assert all(r.dev <= best.dev for r in result.records[best.passes:])
    assert parser.info["best_pass"]["passes"] == best.passes and parser.info["early_stop"] is True
    assert np.array_equal(parser.weights, seen.weights[best.passes])
    assert not np.array_equal(parser.weights, seen.weights[last.passes])
    assert result.converged is False and np.array_equal(result.weights, parser.weights)


def test_patience_does_not_change_the_passes(data, patient) -> None:
    _, result, seen = patient
    passes = result.records[-1].passes
    again = EveryPass()
    _, plain = train_parser(*data, max_passes=passes, patience=0, labels=False, callbacks=[again])
    def scores(records):  # as_dict: a primal not computed (BCFW's passes between gaps) is None, which compares
        return [(d["primal"], d["dual"], d["dev"]) for d in (r.as_dict() for r in records)]

    assert scores(plain.records) == scores(result.records)
    assert result.records[-1].primal == plain.records[-1].primal > 0  # the last pass has its objectives
    assert np.array_equal(plain.weights, seen.weights[passes])


def test_max_seconds_keeps_the_best_pass(data, monkeypatch) -> None:
    """With a time budget and a dev set, the model is the best dev pass's. The budget runs out after the fifth
    pass here, by the recorder's own test, whatever the machine's speed."""
    from egnlp.training.records import Recorder

    monkeypatch.setattr(Recorder, "out_of_time", lambda self, max_seconds: max_seconds is not None and
                        bool(self.records) and self.records[-1].passes >= 5)
    seen = EveryPass()
    parser, result = train_parser(*data, max_passes=MAX_PASSES, max_seconds=1e6, patience=0, labels=False,
                                  callbacks=[seen])
    assert 5 <= result.records[-1].passes <= 6 < MAX_PASSES  # BCFW may see the stop one pass late
    best = _best(result.records)
    assert np.array_equal(parser.weights, seen.weights[best.passes])
    assert parser.info["best_pass"]["passes"] == best.passes and parser.info["early_stop"] is False


def test_best_pass_patience_values() -> None:
    for bad in (0, -2, 1.5, True):
        with pytest.raises(ValueError, match="patience"):
            BestPass(bad)  # type: ignore[arg-type]
    keeper = BestPass(2)
    for passes, dev in enumerate([50.0, 52.0, 51.0, 52.0, 51.5]):
        record = PassRecord(passes, passes, 0.0, 1.0, None, None, None, dev)
        keeper.keep(record, np.full(3, float(passes)))
        keeper(record)
        assert keeper.stop is (passes >= 3)
    assert keeper.best.passes == 1 and keeper.result().weights.tolist() == [1.0, 1.0, 1.0]


def test_patience_counts_only_the_passes_at_the_target_C() -> None:
    # annealed EG: C falls from 10 to 1; the dev score peaks while C is still 5 and falls after
    keeper = BestPass(2, target_C=1.0)
    Cs = [10.0, 10.0, 5.0, 2.0, 1.0, 1.0, 1.0]
    devs = [50.0, 60.0, 70.0, 65.0, 64.0, 66.0, 65.0]
    stops = []
    for passes, (C, dev) in enumerate(zip(Cs, devs)):
        record = PassRecord(passes, passes, 0.0, 1.0, None, None, None, dev=dev, C=C)
        keeper.keep(record, np.full(3, float(passes)))
        keeper(record)
        stops.append(keeper.stop)
    # without target_C the run would stop at pass 4 (two passes after the best, pass 2); the count
    # starts at pass 4, the first at C = 1, and ends two passes at C = 1 without improvement later
    assert stops == [False] * 5 + [True, True]
    assert keeper.best.passes == 2


def test_patience_needs_a_dev_set(data) -> None:
    with pytest.raises(ValueError, match="dev set"):
        train_parser(data[0][:5], None, patience=2)


def test_cli_patience(data, tmp_path: Path) -> None:
    train, dev = tmp_path / "train.conll", tmp_path / "dev.conll"
    write_conll(train, data[0][:40])
    write_conll(dev, data[1][:40])
    model = tmp_path / "m.npz"
    result = run("parser", "train", "--train", train, "--dev", dev, "--patience", 1, "--passes", 6, "--no-labels",
                 "--json", "--out", model)
    assert_ok(result)
    out = json.loads(result.stdout)
    kept, final = out["best_pass"], out["final"]
    assert 0 <= final["passes"] - kept["passes"] <= 1 and final["passes"] <= 6
    assert f"kept pass {kept['passes']} (best dev score)" in result.stderr
    assert "dev set" in usage_line(run("parser", "train", "--train", train, "--patience", 2, "--out", model))
    assert "--C-path" in usage_line(run("parser", "train", "--train", train, "--dev", dev, "--patience", 2,
                                        "--C-path", "100:0.5:2", "--out", model))
    assert "--patience" in usage_line(run("parser", "train", "--train", train, "--patience", -1, "--out", model))
    # 0 turns the default early stop (with a dev set) off
    plain = run("parser", "train", "--train", train, "--dev", dev, "--patience", 0, "--passes", 6, "--no-labels",
                "--json", "--out", model)
    assert_ok(plain)
    assert json.loads(plain.stdout)["final"]["passes"] == 6 and "best_pass" not in json.loads(plain.stdout)


def test_the_default_patience_is_for_the_online_trainers() -> None:
    """parser train stops the online trainers early by default; the batch ones (egr stalls for its first
    iterations while mu_k is large) run to their tolerance or pass limit."""
    from egnlp.settings import ONLINE_TRAINERS, PATIENCE, ParserSettings
    from egnlp.training.registry import trainer_names

    assert set(ONLINE_TRAINERS) < set(trainer_names())
    for name in ONLINE_TRAINERS:
        assert ParserSettings(trainer=name).patience_with(has_dev=True) == PATIENCE
        assert ParserSettings(trainer=name).patience_with(has_dev=False) is None
    for name in ("egr", "cutting-plane", "lbfgs", "eg-mm-batch", "eg-ll-batch"):
        assert ParserSettings(trainer=name).patience_with(has_dev=True) is None
    assert ParserSettings(patience=0).patience_with(has_dev=True) is None
