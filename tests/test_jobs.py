"""``--jobs``: parsing and tagging in blocks on several processes give the output of one process, byte for
byte; parser training with its dev decoding and evaluation passes on several processes gives the same records
and model.

Small models trained on real data (``es`` for the parser, ``conll2000-pos``
and ``ptb-pos`` for the taggers) decode real test splits with one and with
two processes; the inputs are longer than :data:`MIN_ITEMS`, so two jobs do
run a pool.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from cli_helpers import assert_ok, run, usage_line
from egnlp import parser_training as api
from egnlp.parser_training import train_parser
from egnlp.corpora import load_dataset, load_sentences, read_conll, write_conll
from egnlp.base.workers import MIN_ITEMS, map_blocks, resolve_jobs
from egnlp.parser.parser_model import Parser
from egnlp.tagger.tagger_model import Tagger

TEXT = ("The company said its profit rose 5 % in the third quarter. Mr. Smith, the chairman, "
        "expects sales to grow next year!\n\nShares fell 2.5 cents. ")


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("jobs")


@pytest.fixture(scope="module")
def es_files(folder: Path) -> dict[str, Path]:
    """A labeled parser trained on 120 ``es`` training sentences (2 passes) and the ``es`` test split."""
    parser, _ = train_parser(load_dataset("es", "train")[:120], max_passes=2)
    paths = {"model": folder / "es.npz", "test": folder / "es-test.conll"}
    parser.save(paths["model"])
    test = load_dataset("es", "test")
    assert len(test) >= 4 * MIN_ITEMS
    write_conll(paths["test"], test)
    return paths


@pytest.fixture(scope="module")
def pos_files(folder: Path) -> dict[str, Path]:
    """A CRF POS tagger (``conll2000-pos``) and a maxent one (``ptb-pos``), and test files of both."""
    paths = {}
    for name, data, model in (("crf", "conll2000-pos", "crf"), ("maxent", "ptb-pos", "maxent")):
        paths[f"{name}-train"] = folder / f"{name}-train.conll"
        paths[f"{name}-test"] = folder / f"{name}-test.conll"
        write_conll(paths[f"{name}-train"], load_sentences(data, "train")[:150])
        test = load_sentences(data, "test")[:400]
        assert len(test) >= 2 * MIN_ITEMS
        write_conll(paths[f"{name}-test"], test)
        paths[name] = folder / f"{name}.npz"
        assert_ok(run("tagger", "train", "--train", paths[f"{name}-train"], "--model", model, "--passes", 3,
                      "--out", paths[name], "--quiet"))
    return paths


def _run_jobs(*args: object, jobs: int, out: Path) -> bytes:
    assert_ok(run(*args, "--jobs", jobs, "--out", out, "--quiet"))
    return out.read_bytes()


def test_parse_jobs_2_equals_jobs_1(es_files: dict[str, Path], folder: Path) -> None:
    one = _run_jobs("parser", "parse", es_files["model"], es_files["test"], jobs=1, out=folder / "p1.conll")
    two = _run_jobs("parser", "parse", es_files["model"], es_files["test"], jobs=2, out=folder / "p2.conll")
    assert one == two
    assert one.count(b"\n\n") == len(load_dataset("es", "test"))


def test_parse_corpus_jobs_argument(es_files: dict[str, Path]) -> None:
    parser = Parser.load(es_files["model"])
    test = read_conll(es_files["test"], require_heads=False)
    one = parser.parse_corpus(test, jobs=1)
    assert parser.parse_corpus(test, jobs=2) == one
    assert parser.parse_corpus(test, jobs=3) == one
    heads, labels = parser.predict(test, jobs=2)
    assert heads == [list(s.heads) for s in one] and labels is not None


@pytest.mark.parametrize("name", ["crf", "maxent"])
def test_tag_jobs_2_equals_jobs_1(pos_files: dict[str, Path], folder: Path, name: str) -> None:
    args = ("tagger", "tag", pos_files[name], pos_files[f"{name}-test"], "--format", "conll")
    one = _run_jobs(*args, jobs=1, out=folder / f"{name}-1.conll")
    two = _run_jobs(*args, jobs=2, out=folder / f"{name}-2.conll")
    assert one == two
    tagger = Tagger.load(pos_files[name])
    test = read_conll(pos_files[f"{name}-test"], require_heads=False)
    assert tagger.tag_corpus(test, jobs=2) == tagger.tag_corpus(test, jobs=1)


def test_parse_text_jobs_2_equals_jobs_1(pos_files: dict[str, Path], folder: Path) -> None:
    parser, _ = train_parser(load_dataset("wsj", "train")[:30], root="single", max_passes=2)
    parser.save(folder / "wsj.npz")
    text = folder / "text.txt"
    text.write_text(TEXT * 40, encoding="utf-8")
    args = ("parse-text", pos_files["crf"], folder / "wsj.npz", text)
    one = _run_jobs(*args, jobs=1, out=folder / "t1.conllu")
    two = _run_jobs(*args, jobs=2, out=folder / "t2.conllu")
    assert one == two and one.count(b"# sent_id") == 120


def _pids(_model: object, block: list[int]) -> list[int]:
    return [os.getpid()] * len(block)


def _squares(offset: int, block: list[int]) -> list[int]:
    return [offset + k * k for k in block]


@pytest.mark.parametrize("trainer", ["bcfw", "eg-mm", "eg-ll"])
def test_training_jobs_2_records_and_trains_what_jobs_1_does(trainer: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The dev scores and the objectives of every pass, and the weights, are the same bits with two jobs."""
    monkeypatch.setattr(api, "DEV_JOBS_MIN_SENTENCES", MIN_ITEMS)  # the dev set goes to the workers too
    train, dev = load_dataset("es", "train")[:MIN_ITEMS + 16], load_dataset("es", "dev")[:2 * MIN_ITEMS]
    runs = [train_parser(train, dev, root="single", trainer=trainer, labels=False, max_passes=2, jobs=jobs)
            for jobs in (1, 2)]
    (one, result_one), (two, result_two) = runs
    assert [r.as_dict() | {"seconds": 0} for r in result_two.records] == \
        [r.as_dict() | {"seconds": 0} for r in result_one.records]
    assert result_one.records[-1].dev is not None
    assert (one.weights == two.weights).all()


@pytest.mark.parametrize("siblings", [False, True])
def test_dev_sentences_are_kept_before_the_workers_fork(siblings: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """The dev scorer compiles the sentences its budget holds in this process, once (the workers of
    --jobs inherit them), up to the budget, and scores as it does without keeping any."""
    from egnlp.parser_training import build_parsing_problem, uas_scorer
    from egnlp.features.arc_parts import CacheBudget

    monkeypatch.setattr(api, "DEV_JOBS_MIN_SENTENCES", MIN_ITEMS)

    train, dev = load_dataset("es", "train")[:60], load_dataset("es", "dev")[:2 * MIN_ITEMS]
    featurizer, problem, _ = build_parsing_problem(train, "single", siblings=siblings)
    sib = problem.features.siblings if siblings else None
    w = np.random.default_rng(5).normal(size=problem.features.n_features)
    plain = uas_scorer(featurizer, dev, "single", siblings=sib, jobs=1)(w)
    for room in (1 << 30, 200_000):  # all kept, then a few
        budget = CacheBudget(room)
        score = uas_scorer(featurizer, dev, "single", siblings=sib, budget=budget, jobs=2)
        assert budget.room == room  # nothing compiled before the first score
        assert score(w) == plain
        spent = room - budget.room
        assert spent > 0 and (room < 1 << 30 or spent > 100_000)
        assert score(w) == plain and budget.room == room - spent  # nothing compiled and kept again


def test_small_first_order_dev_sets_and_zero_weights_stay_in_this_process(monkeypatch: pytest.MonkeyPatch) -> None:
    """Below DEV_JOBS_MIN_SENTENCES a first-order dev set is decoded here whatever jobs says (a second-order
    one takes the workers), and an evaluation pass at w = 0 (nothing to score) runs here: the workers'
    start would cost more than they save."""
    from egnlp.parser_training import build_parsing_problem, uas_scorer
    from egnlp.training import structured_problem as problem_module

    asked: list[int] = []

    def spy(fn, model, items, jobs=1):
        asked.append(jobs)
        return map_blocks(fn, model, items, jobs)

    monkeypatch.setattr(api, "map_blocks", spy)
    train, dev = load_dataset("es", "train")[:150], load_dataset("es", "dev")[:2 * MIN_ITEMS]
    assert len(dev) < api.DEV_JOBS_MIN_SENTENCES
    featurizer, problem, _ = build_parsing_problem(train, "single")
    uas_scorer(featurizer, dev, "single", jobs=2)(np.zeros(featurizer.n_features))
    sib_featurizer, sib_problem, _ = build_parsing_problem(train, "single", siblings=True)
    uas_scorer(sib_featurizer, dev, "single", siblings=sib_problem.features.siblings, jobs=2)(
        np.zeros(sib_problem.features.n_features))
    assert asked == [1, 2]

    problem.jobs = 2
    assert len(train) >= 2 * problem_module.EVAL_BLOCK
    pids = list(problem_module._each_example(_example_pid, problem, np.zeros(problem.features.n_features)))
    assert set(pids) == {os.getpid()} and len(pids) == len(train)
    pids = list(problem_module._each_example(_example_pid, problem, np.ones(problem.features.n_features)))
    assert os.getpid() not in pids and len(pids) == len(train)


def _example_pid(problem: object, w: np.ndarray, zero: bool, i: int) -> int:
    return os.getpid()


def test_map_blocks_order_and_processes() -> None:
    items = list(range(1000))
    assert map_blocks(_squares, 7, items, jobs=2) == [7 + k * k for k in items]
    assert map_blocks(_squares, 7, items[:5], jobs=2) == [7 + k * k for k in items[:5]]
    assert set(map_blocks(_pids, None, items, jobs=1)) == {os.getpid()}
    pids = map_blocks(_pids, None, items, jobs=2)
    assert pids[0] == os.getpid()  # the first item is decoded before the workers start
    workers = set(pids[1:])
    assert os.getpid() not in workers and 1 <= len(workers) <= 2


def test_jobs_values() -> None:
    assert resolve_jobs(None) == (os.cpu_count() or 1)
    assert resolve_jobs(3) == 3
    for bad in (0, -1, 1.5, True):
        with pytest.raises(ValueError, match="jobs must be"):
            resolve_jobs(bad)  # type: ignore[arg-type]


def test_jobs_zero_is_a_usage_error(es_files: dict[str, Path]) -> None:
    assert "--jobs" in usage_line(run("parser", "parse", es_files["model"], es_files["test"], "--jobs", "0"))
    assert "--jobs" in usage_line(run("parser", "train", "--train", es_files["test"], "--jobs", "0", "-o",
                                      es_files["model"].with_name("x.npz")))
