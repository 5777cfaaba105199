"""Labeled attachment scores of egnlp's parser against the reference parsers, with the commands a user runs.

Run from the project root (NLTK_DATA and EGNLP_UD_DIR must point at the corpora)::

    python benchmarks/parser_accuracy.py                      # every run below
    python benchmarks/parser_accuracy.py --runs nl-alpino:auto --passes 5   # a quick check

Each run is ``egnlp parser train`` with the settings of the row, then
``egnlp parser parse`` on the evaluation file and ``egnlp parser evaluate
--json`` (UAS, LAS; punctuation counted); on the UD sets also ``udeval``
(the CoNLL 2018 scorer: UAS and LAS on universal relations) and
``udvalidate --level 2`` (the official validator) on the output.  A
first-order model's evaluation file is parsed a second time with
``--no-prune`` (every arc decoded; the default prunes), and scored the same;
its column "arcs pruned" is the share of the candidate arcs that pruning
rules out.

- ``es``, ``eu``: the data set's train and dev splits (``--data NAME``
  trains on both by default), evaluated on its test split
  (``egnlp data export NAME test``).
- ``pt-bosque``, ``nl-alpino``: trained on the whole ``*-ud-test.conllu``
  file and evaluated on ``*-ud-dev.conllu``, as the reference parsers were
  (only those two files are public here; settings were chosen on the last
  10% of the ``-test`` file, the data sets' dev split).

A run is ``NAME:TREE``, ``NAME:TREE:siblings`` or ``NAME:TREE:grandparents``
with TREE one of ``default`` (no ``--tree`` option: projective),
``projective``, ``non-projective`` or ``auto``, ``siblings`` for the
second-order model (``--siblings``) and ``grandparents`` for the third-order
one (``--grandparents``); for
``eu`` the root is ``multi`` (the data set's).  The reference figures are those of the
project's issue tracker: MSTParser (first order, projective and
non-projective) and UDPipe 1 (10 iterations), on the same files with gold
tags.  Files go to ``--out`` (default ``runs/parser_accuracy``); the table
goes to stdout and ``parser_accuracy.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")
BIN = Path(sys.executable).parent
RUNS = ("es:default", "es:projective:siblings", "es:projective:grandparents", "eu:non-projective", "eu:projective",
        "eu:projective:siblings", "eu:projective:grandparents", "pt-bosque:auto", "pt-bosque:projective",
        "pt-bosque:projective:siblings", "pt-bosque:projective:grandparents", "nl-alpino:auto",
        "nl-alpino:projective", "nl-alpino:projective:siblings", "nl-alpino:projective:grandparents")
UD_FILES = {"pt-bosque": ("pt_bosque-ud", "pt"), "nl-alpino": ("nl_alpino-ud", "nl")}
# (UAS, LAS) of the reference parsers on the same evaluation files (LAS on universal relations for UD)
REFERENCES = {
    "es": {"MSTParser": (81.48, 77.90)},
    "eu": {"MSTParser": (78.28, 69.25), "UDPipe 1": (76.95, 69.83)},
    "pt-bosque": {"MSTParser proj.": (82.72, 78.11), "MSTParser non-proj.": (82.05, 77.48),
                  "UDPipe 1": (85.50, 82.14)},
    "nl-alpino": {"MSTParser proj.": (81.06, 72.88), "MSTParser non-proj.": (79.96, 72.12),
                  "UDPipe 1": (81.77, 76.53)},
}


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def egnlp(*args: object) -> subprocess.CompletedProcess:
    done = subprocess.run([str(BIN / "egnlp"), *map(str, args)], capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"egnlp {' '.join(map(str, args))} failed:\n{done.stderr.strip()}")
    return done


def run_one(spec: str, out: Path, passes: int | None, trainer: str | None = None) -> dict:
    name, tree, *extra = spec.split(":")
    if extra not in ([], ["siblings"], ["grandparents"]):
        sys.exit(f"run {spec!r}: expected NAME:TREE, NAME:TREE:siblings or NAME:TREE:grandparents")
    folder = out / spec.replace(":", "-")
    folder.mkdir(parents=True, exist_ok=True)
    model = folder / "model.npz"
    pred = folder / ("pred.conllu" if name in UD_FILES else "pred.conll")  # the format of the gold file
    if name in UD_FILES:
        prefix, lang = UD_FILES[name]
        ud = Path(os.environ["EGNLP_UD_DIR"])
        source, gold = ["--train", ud / f"{prefix}-test.conllu"], ud / f"{prefix}-dev.conllu"
    else:
        source, gold, lang = ["--data", name], folder / "gold.conll", None
        egnlp("data", "export", name, "test", "-o", gold)
    options = ([] if tree == "default" else ["--tree", tree]) + (["--passes", passes] if passes else []) \
        + (["--trainer", trainer] if trainer else []) + [f"--{x}" for x in extra]
    log(f"{spec}: egnlp parser train {' '.join(map(str, source + options))}")
    start = time.perf_counter()
    trained = egnlp("parser", "train", *source, "--out", model, *options)
    train_seconds = time.perf_counter() - start
    egnlp("parser", "parse", model, gold, "-o", pred)
    row = {"run": spec, "data": name, "tree": tree, "siblings": bool(extra),
           "grandparents": extra == ["grandparents"], "train_seconds": train_seconds,
           **scored(gold, pred, lang), "space": re.search(r"; (\S+) trees", trained.stderr).group(1)}
    if lang is not None:
        checked = subprocess.run([str(BIN / "udvalidate"), "--level", "2", "--lang", lang, str(pred)],
                                 capture_output=True, text=True)
        row["valid"] = checked.returncode == 0
    if not extra:  # a first-order model: decoded over every arc too (the default prunes)
        exact = pred.with_name("every-arc" + pred.suffix)
        egnlp("parser", "parse", model, gold, "-o", exact, "--no-prune")
        row["every_arc"] = scored(gold, exact, lang)
        row["pruned_share"] = pruned_share(model, gold)
    log(f"{spec}: {row}")
    return row


def pruned_share(model: Path, gold: Path) -> float:
    """The share of the n^2 candidate arcs of ``gold``'s sentences that the model's pruning rules out."""
    import numpy as np

    from egnlp.corpora import read_conll
    from egnlp.parser.parser_model import Parser

    parser = Parser.load(model)
    sentences = read_conll(gold)
    featurizer = parser.featurizer
    encoded = featurizer.encode(sentences)
    arcs = featurizer.block_arc_scores(encoded, parser.weights[:featurizer.n_features], prune=True)
    pruned = sum(int(np.isneginf(arc).sum()) for arc in arcs)
    return pruned / sum(len(s) ** 2 for s in sentences)


def scored(gold: Path, pred: Path, lang: str | None) -> dict:
    """UAS and LAS of ``pred`` by ``parser evaluate``, and for the UD sets by ``udeval`` too."""
    scores = json.loads(egnlp("parser", "evaluate", gold, pred, "--json").stdout)
    row = {"uas": scores["uas"], "las": scores["las"], "las_universal": scores["las_universal"]}
    if lang is not None:
        report = subprocess.run([str(BIN / "udeval"), "-v", str(gold), str(pred)], capture_output=True, text=True,
                                check=True).stdout
        for line in report.splitlines():
            metric = line.split("|")[0].strip()
            if metric in ("UAS", "LAS"):
                row[f"udeval_{metric.lower()}"] = float(line.split("|")[3])
    return row


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}"


def table(rows: list[dict]) -> str:
    lines = ["| data | egnlp run | tree space | UAS | LAS | every arc (`--no-prune`) | arcs pruned "
             "| reference UAS / LAS |", "|---|---|---|---:|---:|---:|---:|---|"]
    for row in rows:
        uas = row.get("udeval_uas", row["uas"])
        las = row.get("udeval_las", row["las"])
        exact = row.get("every_arc")
        every = "" if exact is None else (f"{exact.get('udeval_uas', exact['uas']):.2f} / "
                                          f"{_pct(exact.get('udeval_las', exact['las']))}")
        refs = "; ".join(f"{who} {u:.2f} / {v:.2f}" for who, (u, v) in REFERENCES.get(row["data"], {}).items())
        valid = "" if "valid" not in row else (" (udvalidate: valid)" if row["valid"] else " (udvalidate: INVALID)")
        run = f"--tree {row['tree']}" + (" --grandparents" if row.get("grandparents")
                                         else " --siblings" if row.get("siblings") else "")
        share = f"{100 * row['pruned_share']:.0f}%" if "pruned_share" in row else ""
        lines.append(f"| {row['data']} | `{run}` | {row['space']} | {uas:.2f} | {_pct(las)}{valid} | {every} "
                     f"| {share} | {refs} |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", default=",".join(RUNS), help=f"comma-separated NAME:TREE (default: {','.join(RUNS)})")
    ap.add_argument("--passes", type=int, help="pass limit of every training run (default: the trainer's)")
    ap.add_argument("--trainer", help="trainer of every training run (default: the parser's, bcfw)")
    ap.add_argument("--out", type=Path, default=ROOT / "runs" / "parser_accuracy", help="output folder")
    args = ap.parse_args()
    rows = [run_one(spec.strip(), args.out, args.passes, args.trainer) for spec in args.runs.split(",")
            if spec.strip()]
    text = table(rows)
    print(text)
    (args.out / "parser_accuracy.md").write_text(text + "\n", encoding="utf-8")
    (args.out / "parser_accuracy.json").write_text(json.dumps(rows, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
