"""Tagger accuracy table: train with the CLI defaults, tag the test split, evaluate.

For every (data set, model, trainer) asked for, runs in a subprocess

    egnlp tagger train --data NAME --model M --trainer T --out MODEL
    egnlp data export NAME test -o GOLD
    egnlp tagger tag MODEL GOLD --format conll -o PRED
    egnlp tagger evaluate GOLD PRED --json --model MODEL

and prints one Markdown row per run: accuracy, unknown-word accuracy, chunk
F1 (chunk data), training seconds and peak RSS (from the training
subprocess), and tagging speed (tokens/s, as ``tagger tag`` reports it).

    python benchmarks/tagger_accuracy.py                                      # the issue's table
    python benchmarks/tagger_accuracy.py --runs conll2000-chunk:crf:eg-ll     # one row
    python benchmarks/tagger_accuracy.py --runs brown:crf:eg-ll:--max-seconds=2400   # with more train options

A fourth field adds ``tagger train`` options (``--name=value``, several
joined by ``+``); the row then shows them after the trainer.
"""

from __future__ import annotations

import argparse
import json
import re
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

DEFAULT_RUNS = ("conll2000-pos:crf:eg-ll,conll2000-chunk:crf:eg-ll,brown:maxent:cd,ptb-pos:crf:eg-ll,"
                "conll2000-pos:maxent:cd,ptb-pos:maxent:cd,conll2000-pos:crf:lbfgs,ptb-pos:crf:lbfgs,"
                "brown:crf:eg-ll,brown:crf:lbfgs")


def egnlp(*args: str) -> tuple[str, str, float]:
    """Run the CLI of this interpreter's environment: (stdout, stderr, peak RSS in MB of that process).

    Stops the benchmark on failure.
    """
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        proc = subprocess.Popen([sys.executable, "-m", "egnlp.cli", *args], stdout=out, stderr=err, text=True)
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read(), err.read()
    if proc.returncode != 0:
        raise SystemExit(f"failed: {' '.join(args)}\n{stderr.strip()[-2000:]}")
    return stdout, stderr, usage.ru_maxrss / 1024  # ru_maxrss is in KiB on Linux


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", default=DEFAULT_RUNS, help="comma-separated DATA:MODEL:TRAINER[:--opt=value+...]")
    ap.add_argument("--out", default="runs/tagger_accuracy")
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    print("| data | model | trainer | accuracy | unknown-word acc. | chunk F1 | train s | peak RSS MB | tokens/s |")
    print("|---|---|---|---:|---:|---:|---:|---:|---:|", flush=True)
    for spec in args.runs.split(","):
        data, model, trainer, *extra = spec.split(":")
        items = [item for opt in extra for item in opt.split("+")]  # "--name=value"
        options = [part for item in items for part in item.split("=", 1)]
        stem = out / f"{data}-{model}-{trainer}"
        label = " ".join([trainer] + [item.replace("=", " ") for item in items])
        gold = out / f"{data}-test.conll"
        if not gold.exists():
            egnlp("data", "export", data, "test", "-o", str(gold))
        start = time.perf_counter()
        _, train_log, rss = egnlp("tagger", "train", "--data", data, "--model", model, "--trainer", trainer,
                                  *options, "--out", f"{stem}.npz")
        seconds = time.perf_counter() - start
        (stem.with_suffix(".train.log")).write_text(train_log)
        _, tag_log, _ = egnlp("tagger", "tag", f"{stem}.npz", str(gold), "--format", "conll", "-o", f"{stem}.pred.conll")
        speed = re.search(r"([\d.]+) tokens/s", tag_log)
        scores = json.loads(egnlp("tagger", "evaluate", str(gold), f"{stem}.pred.conll", "--json",
                                  "--model", f"{stem}.npz")[0])
        (stem.with_suffix(".json")).write_text(json.dumps(scores, indent=2))
        f1 = scores.get("f1")
        print(f"| {data} | {model} | {label} | {scores['accuracy']:.2f} | {scores['unknown_accuracy']:.2f} | "
              f"{'' if f1 is None else f'{f1:.2f}'} | {seconds:.0f} | {rss:.0f} | "
              f"{speed.group(1) if speed else '?'} |", flush=True)


if __name__ == "__main__":
    main()
