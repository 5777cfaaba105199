"""UPOS tagger accuracy on the UD files: egnlp's taggers against NLTK's PerceptronTagger.

Only the dev and test files of the UD treebanks are public here, so every
tagger trains on ``*-ud-test.conllu`` and is scored on the matching
``*-ud-dev.conllu`` (UPOS column, all words). For each treebank in the UD
folder (``--ud-dir``, default ``$EGNLP_UD_DIR``) and each egnlp model asked
for, runs in a subprocess

    egnlp tagger train --train TEST --column upos --model M --out MODEL
    egnlp tagger tag MODEL DEV --format conll -o PRED
    egnlp tagger evaluate DEV PRED --column upos --json --model MODEL

and trains NLTK's averaged perceptron (``PerceptronTagger(load=False)``,
``train(..., nr_iter=5)``, Python's random seeded with 0 for its shuffles) on
the same words and UPOS tags. Prints one Markdown table: accuracy, accuracy
on words unseen in training, the difference to the perceptron, and training
CPU seconds (user + system of the whole command for egnlp, of the training
call in this process for the perceptron). ``--write-docs`` writes the table
into the ``tagging-ud`` section of ``docs/results.md``.

    python benchmarks/ud_taggers.py                          # CRF (eg-ll) and maxent (cd) on every treebank
    python benchmarks/ud_taggers.py --models crf --only pt_bosque
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import time
from pathlib import Path

import report
from procs import egnlp as run_egnlp


def egnlp(*args: object) -> str:
    """Run this environment's CLI; its stdout. Stops the benchmark on failure."""
    return run_egnlp(*args).stdout


def words_and_upos(path: Path) -> list[list[tuple[str, str]]]:
    """(word, UPOS) pairs of every sentence of a CoNLL-U file (syntactic words: multiword tokens split)."""
    from egnlp.corpora import read_conll

    return [list(zip(s.forms, s.cpos)) for s in read_conll(path, require_heads=False) if len(s)]


def perceptron(train: list[list[tuple[str, str]]], dev: list[list[tuple[str, str]]]) -> dict:
    """NLTK's PerceptronTagger, 5 iterations: accuracy and unknown-word accuracy (%) on dev, seconds."""
    from nltk.tag.perceptron import PerceptronTagger

    random.seed(0)
    tagger = PerceptronTagger(load=False)
    start = time.process_time()
    tagger.train([list(s) for s in train], nr_iter=5)
    seconds = time.process_time() - start
    seen = {w for s in train for w, _ in s}
    right = total = unk_right = unk_total = 0
    for sentence in dev:
        predicted = tagger.tag([w for w, _ in sentence])
        for (word, gold), (_, tag) in zip(sentence, predicted):
            total += 1
            right += tag == gold
            if word not in seen:
                unk_total += 1
                unk_right += tag == gold
    return {"accuracy": 100.0 * right / total, "unknown_accuracy": 100.0 * unk_right / max(unk_total, 1),
            "seconds": seconds}


def egnlp_tagger(test: Path, dev: Path, model: str, folder: Path, extra: list[str]) -> dict:
    name = folder / f"{test.stem}-{model}.npz"
    pred = folder / f"{test.stem}-{model}-pred.conllu"
    seconds = run_egnlp("tagger", "train", "--train", test, "--column", "upos", "--model", model, "--out", name,
                        *extra).cpu
    egnlp("tagger", "tag", name, dev, "--format", "conll", "-o", pred)
    scores = json.loads(egnlp("tagger", "evaluate", dev, pred, "--column", "upos", "--json", "--model", name))
    return {"accuracy": scores["accuracy"], "unknown_accuracy": scores["unknown_accuracy"], "seconds": seconds}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ud-dir", default=os.environ.get("EGNLP_UD_DIR"), help="folder of the UD files")
    ap.add_argument("--models", default="crf,maxent", help="egnlp tagger models (--model), comma-separated")
    ap.add_argument("--only", default="", help="treebank names to run (e.g. pt_bosque), comma-separated")
    ap.add_argument("--train-options", default="", help="more 'tagger train' options, space-separated")
    report.add_options(ap)
    args = ap.parse_args(argv)
    run_info = report.provenance()
    command = report.command_line(__file__, sys.argv[1:] if argv is None else argv)
    if not args.ud_dir:
        raise SystemExit("give --ud-dir or set EGNLP_UD_DIR")
    tests = sorted(Path(args.ud_dir).glob("*-ud-test.conllu"))
    if args.only:
        tests = [t for t in tests if t.name.split("-ud-")[0] in args.only.split(",")]
    if not tests:
        raise SystemExit(f"no *-ud-test.conllu files in {args.ud_dir}")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for test in tests:
            dev = test.with_name(test.name.replace("-ud-test.", "-ud-dev."))
            treebank = test.name.split("-ud-")[0]
            base = perceptron(words_and_upos(test), words_and_upos(dev))
            rows.append((treebank, "NLTK PerceptronTagger, 5 iterations", base, None))
            print(f"{treebank}: perceptron {base['accuracy']:.2f}", file=sys.stderr)
            for model in filter(None, args.models.split(",")):
                result = egnlp_tagger(test, dev, model, Path(tmp), args.train_options.split())
                rows.append((treebank, f"egnlp {model}", result, result["accuracy"] - base["accuracy"]))
                print(f"{treebank}: egnlp {model} {result['accuracy']:.2f}", file=sys.stderr)
    names = {"egnlp crf": "egnlp CRF (default)", "egnlp maxent": "egnlp maxent"}
    text = report.markdown_table(
        ["treebank (train test, score dev)", "tagger", "UPOS accuracy", "unknown words", "vs perceptron",
         "train CPU s"],
        [[treebank, names.get(tagger, tagger), f"{result['accuracy']:.2f}", f"{result['unknown_accuracy']:.2f}",
          "" if delta is None else f"{delta:+.2f}", f"{result['seconds']:.1f}"]
         for treebank, tagger, result, delta in rows], "llrrrr")
    print(text)
    if args.write_docs:
        extra = f" and `{args.train_options}`" if args.train_options else ""
        body = ("UPOS taggers trained on `*-ud-test.conllu` and scored on `*-ud-dev.conllu` (all words): egnlp's "
                f"`egnlp tagger train --train FILE --column upos --model M`{extra} with the defaults otherwise, "
                "`egnlp tagger tag`, `egnlp tagger evaluate --column upos --json --model`; beside them, measured in "
                "the same run, NLTK's `PerceptronTagger(load=False)` trained for 5 iterations on the same words and "
                "tags (its shuffles seeded: `random.seed(0)`). Accuracy in %; unknown words: dev words unseen in "
                "training. Train CPU s: user + system of the whole `tagger train` command for egnlp, of the "
                "`train` call for the perceptron, on a machine shared with other jobs.\n\n" + text)
        for path in report.write_section("tagging-ud", command, body, run=run_info):
            print(f"wrote section tagging-ud of {path.relative_to(report.ROOT)}", file=sys.stderr)


if __name__ == "__main__":
    main()
