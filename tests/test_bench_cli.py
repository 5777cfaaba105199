"""The trainer options of ``egnlp parser train``, ``--C-path`` and the ``egnlp bench`` commands, end to end
on small slices of the real ``es`` data (the numbers they print are checked against the files they write)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from cli_helpers import assert_ok, error_line, run, usage_line
from egnlp.corpora import load_dataset, write_conll
from egnlp.parser.parser_model import Parser


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("bench")
    paths = {"train": folder / "train.conll", "dev": folder / "dev.conll", "folder": folder}
    write_conll(paths["train"], load_dataset("es", "train")[:40])
    write_conll(paths["dev"], load_dataset("es", "dev")[:30])
    return paths


@pytest.mark.parametrize("trainer", ["lbfgs", "sgd", "eg-mm", "bcfw", "cutting-plane", "eg-ll-batch", "egr"])
def test_every_trainer_trains_a_parser_from_the_cli(small: dict[str, Path], trainer: str) -> None:
    out = small["folder"] / f"{trainer}.npz"
    result = run("parser", "train", "--train", small["train"], "--dev", small["dev"], "--out", out,
                 "--trainer", trainer, "--C", 10, "--passes", 3)
    assert_ok(result)
    model = Parser.load(out)
    assert model.info["trainer"] == trainer
    assert model.info["config"]["C"] == 10.0


def test_a_setting_the_trainer_lacks_is_a_one_line_error(small: dict[str, Path]) -> None:
    out = small["folder"] / "bad.npz"
    line = usage_line(run("parser", "train", "--train", small["train"], "--out", out, "--trainer", "lbfgs",
                          "--order", "cyclic"))
    assert "has no setting --order" in line
    assert not out.exists()
    line = usage_line(run("parser", "train", "--train", small["train"], "--out", out, "--trainer", "svm"))
    assert "--trainer: invalid choice 'svm' (choose from eg-ll," in line


def test_a_tagging_data_set_cannot_train_a_parser(tmp_path: Path) -> None:
    line = error_line(run("parser", "train", "--data", "conll2000-pos", "--out", tmp_path / "m.npz"))
    assert "no dependency trees" in line


def test_C_path_prints_the_table_and_keeps_the_best_C_on_dev(small: dict[str, Path]) -> None:
    out = small["folder"] / "path.npz"
    result = run("parser", "train", "--train", small["train"], "--dev", small["dev"], "--out", out,
                 "--C-path", "100:0.5:3", "--passes", 8)
    assert_ok(result)
    model = Parser.load(out)
    rows = model.info["C_path"]
    assert [round(r["C"]) for r in rows] == [100, 50, 25]
    best = max(rows, key=lambda r: r["dev_uas"])
    assert model.info["config"]["C"] == best["C"]
    assert f"best C on dev: {best['C']:.4g}" in result.stderr
    assert rows[-1]["total_eff_iters"] == pytest.approx(sum(r["eff_iters"] for r in rows))
    usage_line(run("parser", "train", "--train", small["train"], "--dev", small["dev"], "--out", out,
                   "--C-path", "100:0.5:3", "--C", 3))
    usage_line(run("parser", "train", "--train", small["train"], "--dev", small["dev"], "--out", out,
                   "--C-path", "100:1.5:3"))


def _bench(out: Path, command: str, trainers: str, *options: object) -> tuple:
    """``egnlp bench COMMAND`` on es with the runs ``trainers``: (its result, summary.json, curves.csv rows), once
    it has succeeded with a summary of every run."""
    result = run("bench", command, "--data", "es", *options, "--trainers", trainers, "--out", out)
    assert_ok(result)
    with open(out / "curves.csv", newline="") as fh:
        summary, rows = json.loads((out / "summary.json").read_text()), list(csv.DictReader(fh))
    assert set(summary["runs"]) == set(trainers.split(","))
    return result, summary, rows


def test_bench_optimizers_writes_csv_plots_and_the_summary(tmp_path: Path) -> None:
    out = tmp_path / "opt"
    result, summary, rows = _bench(out, "optimizers", "eg-ll,eg-ll/cyclic/fixed,lbfgs", "--limit", 12, "--C", 10,
                                   "--passes", 15)
    assert min(float(r["primal"]) for r in rows) == pytest.approx(summary["optimum"])
    for spec, run_summary in summary["runs"].items():
        assert set(run_summary["eff_iters_to"]) == {"1e-2", "1e-3", "1e-4"}
        mine = [r for r in rows if r["run"] == spec]
        assert float(mine[-1]["primal"]) == pytest.approx(run_summary["final_primal"])
        first = run_summary["eff_iters_to"]["1e-2"]
        if first is not None:  # the first record within 1e-2 of the optimum
            within = [float(r["eff_iters"]) for r in mine if float(r["rel_subopt"]) <= 1e-2]
            assert first == pytest.approx(within[0])
    assert summary["runs"]["lbfgs"]["eff_iters_to"]["1e-2"] is not None
    assert (out / "curves.png").stat().st_size > 0 and (out / "duality.png").stat().st_size > 0
    assert "| eg-ll |" in result.stdout and "Ratios to eg-ll" in result.stdout


def test_bench_rejects_a_trainer_of_the_other_objective(tmp_path: Path) -> None:
    line = usage_line(run("bench", "optimizers", "--objective", "mm", "--trainers", "eg-ll", "--out", tmp_path))
    assert "does not optimise the mm objective" in line
    line = usage_line(run("bench", "optimizers", "--trainers", "lbfgs/cyclic", "--out", tmp_path))
    assert "not a setting" in line


def test_bench_rates_writes_gaps_thresholds_and_slopes(tmp_path: Path) -> None:
    out = tmp_path / "rates"
    result, summary, rows = _bench(out, "rates", "egr,eg-mm-batch,bcfw/gap", "--limit", 10, "--C", 100, "--passes", 20)
    for spec, run_summary in summary["runs"].items():
        assert set(run_summary["eff_iters_to"]) == {"1e-1", "1e-2", "1e-3", "1e-4"}
        gaps = [(float(r["eff_iters"]), float(r["rel_gap"])) for r in rows if r["run"] == spec and r["rel_gap"]]
        first = run_summary["eff_iters_to"]["1e-1"]
        assert first == (next((x for x, g in gaps if g <= 0.1), None))
    slope = summary["runs"]["egr"]["slope"]
    assert slope is not None and slope < 0
    assert summary["runs"]["eg-mm-batch"]["slope"] is None  # annealed: no gap at the target C yet
    assert (out / "gap.png").stat().st_size > 0
    assert "| egr |" in result.stdout and "slope, last decade" in result.stdout
    chunk = run("bench", "rates", "--data", "conll2000-chunk", "--limit", 5, "--passes", 3, "--trainers", "egr",
                "--out", tmp_path / "chunk")
    assert_ok(chunk)
    assert "conll2000-chunk (first 5)" in chunk.stdout
    assert "does not optimise the mm objective" in usage_line(
        run("bench", "rates", "--trainers", "eg-ll", "--out", tmp_path))


def test_bench_path_writes_the_table(tmp_path: Path) -> None:
    out = tmp_path / "path"
    result = run("bench", "path", "--data", "es", "--limit", 20, "--C-path", "100:0.5:2", "--passes", 40, "--out", out)
    assert_ok(result)
    rows = json.loads((out / "summary.json").read_text())
    assert [set(r) for r in rows] == [{"C", "eff_iters", "total_eff_iters", "dev_uas"}] * 2
    assert rows[1]["total_eff_iters"] == pytest.approx(rows[0]["eff_iters"] + rows[1]["eff_iters"])
    assert (out / "path.csv").exists() and (out / "path.png").exists()
    assert "| 50 |" in result.stdout


def test_demo_trains_a_parser_and_a_tagger_and_parses_with_predicted_tags(tmp_path: Path) -> None:
    result = run("demo", "--limit", 40, "--passes", 2, "--out", tmp_path)
    assert_ok(result)
    lines = result.stdout.splitlines()
    assert any(line.startswith("parser ") and "UAS" in line for line in lines), result.stdout
    assert any(line.startswith("tagger ") and "accuracy" in line for line in lines), result.stdout
    assert any(line.startswith("tagger + parser") and "predicted POS" in line for line in lines), result.stdout
    assert (tmp_path / "demo-parser.npz").exists() and (tmp_path / "demo-tagger.npz").exists()
    assert "data set 'conll2000-chunk' is for the task 'chunk'" in error_line(
        run("demo", "--tagger-data", "conll2000-chunk", "--out", tmp_path))


def test_a_run_of_its_own_budget() -> None:
    """``/<N>s`` gives one run its own time budget, which wins over the bench's."""
    from egnlp.parser_training import build_parsing_problem
    from egnlp.comparisons import compare_optimizers, run_spec

    assert run_spec("egr/2400s") == ("egr", {"max_seconds": 2400.0})
    assert run_spec("bcfw/gap/1.5s") == ("bcfw", {"order": "gap", "max_seconds": 1.5})
    for bad in ("egr/0s", "egr/-3s", "egr/xs", "egr/infs", "egr/s"):
        with pytest.raises(ValueError, match="not a setting"):
            run_spec(bad)
    problem = build_parsing_problem(load_dataset("es", "train")[:10], "single")[1]
    # budgets no run can miss on any machine: 1e-9 s is spent by egr's start, 1e6 s never
    runs = compare_optimizers(problem, ["egr/1e-9s", "egr/1e6s", "egr"], 100.0, max_seconds=1e-9, max_passes=4)
    assert len(runs["egr/1e-9s"]) == 1 and len(runs["egr"]) == 1  # the start took longer than the budget
    assert len(runs["egr/1e6s"]) == 5  # its own budget wins over the bench's: every pass of the limit
