"""benchmarks/parser_accuracy.py without running a benchmark: the cascade table it writes into docs/results.md
and ``--reuse``, which takes a run's training figures from the previous run's record instead of training it
again (``egnlp`` replaced by a stand-in that records its calls)."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


def _load_benchmark():
    """The script as a module; its sibling modules (``report``, ``procs``, ``udpipe1``) are found beside it."""
    before = set(sys.modules)
    sys.path.insert(0, str(BENCHMARKS))
    try:
        spec = importlib.util.spec_from_file_location("benchmarks_parser_accuracy", BENCHMARKS / "parser_accuracy.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(BENCHMARKS))
        for name in ("report", "procs", "udpipe1"):  # the script keeps its own references to them
            if name not in before:
                sys.modules.pop(name, None)
    return module


bench = _load_benchmark()

CASCADE = {"threshold": 0.003, "top_k": 6, "target": 0.995, "tuning_sentences": 59, "tuning_recall": 0.98224,
           "tuning_kept": 0.22386, "eval_recall": 0.97886, "eval_kept": 0.25306, "eval_gold_arcs": 11541}


def row(run: str, cascade: dict | None = None) -> dict:
    name, tree, *extra = run.split(":")
    out = {"run": run, "data": name, "tree": tree, "flags": bench.PARTS[tuple(extra)][0], "arcs": not extra}
    return out if cascade is None else {**out, "cascade": cascade}


def test_the_cascade_table_has_a_row_per_cascade_run_in_percent() -> None:
    rows = [row("nl-alpino:default"), row("nl-alpino:projective:grandparents:cascade", CASCADE),
            row("eu:non-projective:siblings:cascade", {**CASCADE, "target": None, "threshold": 0.0001, "top_k": 3})]
    lines = bench.cascade_table(rows).splitlines()
    assert len(lines) == 4  # header, rule, the two cascade runs
    header = [cell.strip() for cell in lines[0].strip("|").split("|")]
    assert header == ["data", "egnlp run", "recall sought", "threshold", "top-k", "tuning: gold arcs kept",
                      "tuning: arcs kept", "evaluation file: gold arcs kept", "evaluation file: arcs kept"]
    assert lines[1] == "|---|---|" + "---:|" * 7
    assert lines[2] == ("| nl-alpino | `--tree projective --parts grandparents` | 99.5 | 0.003 | 6 | 98.22 | 22.4 "
                        "| 97.89 | 25.3 |")
    assert lines[3] == ("| eu | `--tree non-projective --parts siblings` | n/a | 0.0001 | 3 | 98.22 | 22.4 | 97.89 "
                        "| 25.3 |")
    assert bench.cascade_table([row("es:default")]) == ""
    assert bench.run_label(row("es:default")) == "defaults"
    assert bench.run_label(row("es:projective:grandparents")) == "--tree projective --parts grandparents --no-cascade"


def finished(stderr: str) -> SimpleNamespace:
    """What ``egnlp(...)`` returns (``procs.Finished``): its output, wall and CPU seconds, peak MB."""
    return SimpleNamespace(stdout="", stderr=stderr, wall=12.5, cpu=11.25, peak_mb=300.0, returncode=0)


def test_reuse_takes_the_recorded_training_figures_and_trains_nothing(tmp_path: Path, monkeypatch) -> None:
    calls = []
    monkeypatch.setattr(bench, "egnlp", lambda *args: calls.append(args) or finished(
        "stopped at the pass limit after 12.0 effective iterations; non-projective trees, labeled; 1.0 s in all"))
    model = tmp_path / "eu-non-projective" / "model.npz"
    model.parent.mkdir()
    recorded = {"eu:non-projective": {"run": "eu:non-projective", "train_seconds": 80.0, "train_cpu": 81.5,
                                      "train_peak_mb": 529.0, "space": "non-projective", "uas": 83.5}}
    (tmp_path / bench.RECORD).write_text(json.dumps({"egnlp": list(recorded.values()), "udpipe1": {}}),
                                         encoding="utf-8")
    assert bench.recorded_rows(tmp_path) == recorded
    assert bench.recorded_rows(tmp_path / "elsewhere") == {}

    # no model yet: trained, with --reuse or without
    for given in (None, recorded):
        figures = bench.trained_model("eu:non-projective", model, ["--data", "eu", "--tree", "non-projective"], given)
        assert figures == {"train_seconds": 12.5, "train_cpu": 11.25, "train_peak_mb": 300.0,
                           "space": "non-projective", "reused": False}
        assert calls.pop() == ("parser", "train", "--data", "eu", "--tree", "non-projective", "--out", model)
    model.write_bytes(b"a model")
    figures = bench.trained_model("eu:non-projective", model, ["--data", "eu"], recorded)
    assert figures == {"train_seconds": 80.0, "train_cpu": 81.5, "train_peak_mb": 529.0, "space": "non-projective",
                       "reused": True}
    assert calls == []
    bench.trained_model("eu:non-projective", model, ["--data", "eu"], None)  # without --reuse: trained again
    assert len(calls) == 1
    with pytest.raises(SystemExit, match="records no train_seconds, train_cpu, train_peak_mb, space of run eu:auto"):
        bench.trained_model("eu:auto", model, ["--data", "eu"], recorded)
    partial = {"eu:non-projective": {k: v for k, v in recorded["eu:non-projective"].items() if k != "space"}}
    with pytest.raises(SystemExit, match="records no space of run"):
        bench.trained_model("eu:non-projective", model, ["--data", "eu"], partial)
