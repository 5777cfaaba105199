"""Tagger accuracy table: train with the CLI defaults, tag the test split, evaluate.

For every (data set, model, trainer) asked for, runs in a subprocess

    egnlp tagger train --data NAME --model M --trainer T --out MODEL
    egnlp data export NAME test -o GOLD
    egnlp tagger tag MODEL GOLD --format conll -o PRED
    egnlp tagger evaluate GOLD PRED --json --model MODEL

and prints one Markdown row per run: accuracy, unknown-word accuracy, chunk
F1 (chunk data), training CPU seconds (user + system) and peak RSS (from the
training subprocess), and tagging speed (tokens/s, as ``tagger tag`` reports it).
``--write-docs`` writes the table into the ``tagging`` section of
``docs/results.md`` (a headline table, then the full one).

    python benchmarks/tagger_accuracy.py                                      # the issue's table
    python benchmarks/tagger_accuracy.py --runs conll2000-chunk:crf:eg-ll     # one row
    python benchmarks/tagger_accuracy.py --runs brown:crf:eg-ll:--max-seconds=2400   # with more train options

A fourth field adds ``tagger train`` options (``--name=value``, several
joined by ``+``); the row then shows them after the trainer.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import report
from procs import EGNLP

DEFAULT_RUNS = ("conll2000-pos:crf:eg-ll,conll2000-chunk:crf:eg-ll,brown:maxent:cd,ptb-pos:crf:eg-ll,"
                "conll2000-pos:maxent:cd,ptb-pos:maxent:cd,conll2000-pos:crf:lbfgs,ptb-pos:crf:lbfgs,"
                "brown:crf:eg-ll,brown:crf:lbfgs")


def egnlp(*args: str) -> tuple[str, str, float, float]:
    """Run the CLI of this interpreter's environment: (stdout, stderr, peak RSS in MB, CPU seconds of that process).

    Stops the benchmark on failure.
    """
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        proc = subprocess.Popen([EGNLP, *args], stdout=out, stderr=err, text=True)
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read(), err.read()
    if proc.returncode != 0:
        raise SystemExit(f"failed: {' '.join(args)}\n{stderr.strip()[-2000:]}")
    return stdout, stderr, usage.ru_maxrss / 1024, usage.ru_utime + usage.ru_stime  # ru_maxrss is in KiB on Linux


HEADER = ["data", "model", "trainer", "accuracy", "unknown-word acc.", "chunk F1", "train CPU s", "peak RSS MB",
          "tokens/s"]


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", default=DEFAULT_RUNS, help="comma-separated DATA:MODEL:TRAINER[:--opt=value+...]")
    ap.add_argument("--out", default="runs/tagger_accuracy")
    report.add_options(ap)
    args = ap.parse_args(argv)
    run_info = report.provenance()
    command = report.command_line(__file__, sys.argv[1:] if argv is None else argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    print("| " + " | ".join(HEADER) + " |")
    print("|---|---|---|---:|---:|---:|---:|---:|---:|", flush=True)
    rows = []
    for spec in args.runs.split(","):
        data, model, trainer, *extra = spec.split(":")
        items = [item for opt in extra for item in opt.split("+")]  # "--name=value"
        options = [part for item in items for part in item.split("=", 1)]
        stem = out / f"{data}-{model}-{trainer}"
        label = " ".join([trainer] + [item.replace("=", " ") for item in items])
        gold = out / f"{data}-test.conll"
        if not gold.exists():
            egnlp("data", "export", data, "test", "-o", str(gold))
        _, train_log, rss, cpu = egnlp("tagger", "train", "--data", data, "--model", model, "--trainer", trainer,
                                       *options, "--out", f"{stem}.npz")
        (stem.with_suffix(".train.log")).write_text(train_log)
        _, tag_log, _, _ = egnlp("tagger", "tag", f"{stem}.npz", str(gold), "--format", "conll", "-o",
                                 f"{stem}.pred.conll")
        speed = re.search(r"([\d.]+) tokens/s", tag_log)
        scores = json.loads(egnlp("tagger", "evaluate", str(gold), f"{stem}.pred.conll", "--json",
                                  "--model", f"{stem}.npz")[0])
        (stem.with_suffix(".json")).write_text(json.dumps(scores, indent=2))
        f1 = scores.get("f1")
        row = [data, model, label, f"{scores['accuracy']:.2f}", f"{scores['unknown_accuracy']:.2f}",
               "" if f1 is None else f"{f1:.2f}", f"{cpu:,.0f}", f"{rss:,.0f}",
               f"{float(speed.group(1)):,.0f}" if speed else "?"]
        rows.append(row)
        print("| " + " | ".join(row) + " |", flush=True)
    if args.write_docs:
        write_docs(rows, command, run_info)


def write_docs(rows: list[list[str]], command: str, run_info: report.Provenance) -> None:
    """The ``tagging`` section: accuracy and training CPU seconds, then the full table."""
    families = {"crf": "CRF", "maxent": "maxent"}
    headline = report.markdown_table(
        ["data set (test split)", "model", "trainer", "accuracy", "unknown words", "train CPU s"],
        [[f"`{r[0]}`", families.get(r[1], r[1]) + (" (default)" if r[1] == "crf" else ""), f"`{r[2]}`", r[3], r[4],
          r[6]] for r in rows], "lllrrr")
    chunk = any(r[5] for r in rows)
    detail_rows = [[f"`{r[0]}`", r[1], f"`{r[2]}`", *r[3:]] for r in rows]
    header = HEADER if chunk else [h for h in HEADER if h != "chunk F1"]
    if not chunk:
        detail_rows = [r[:5] + r[6:] for r in detail_rows]
    body = ("Each row: `egnlp tagger train --data NAME --model M --trainer T` with the defaults otherwise "
            "(CRF: C = 1, EG with at most 60 passes to a relative duality gap of 1e-3; maxent: sigma^2 = 10, "
            "coordinate descent, at most 100 passes), `egnlp tagger tag` of the test split, `egnlp tagger evaluate "
            "--json --model`. Accuracy in %; unknown words: test words unseen in training. Train CPU s: user + "
            "system of the whole `tagger train` command (reading the data and building features included), on a "
            "machine shared with other jobs.\n\n" + headline)
    details = ("Details: peak RSS of `tagger train`, and the tagging speed that `egnlp tagger tag` reports "
               "(tokens per wall second).\n\n"
               + report.markdown_table(header, detail_rows, "lll" + "r" * (len(header) - 3)))
    for path in report.write_section("tagging", command, body, details=details, run=run_info):
        print(f"wrote section tagging of {path.relative_to(report.ROOT)}", file=sys.stderr)


if __name__ == "__main__":
    main()
