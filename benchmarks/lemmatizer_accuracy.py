"""Lemma accuracy on the UD files, with gold and with predicted tags, against UDPipe 1.

For each treebank in the UD folder (``--ud-dir``, default ``$EGNLP_UD_DIR``),
trained on ``*-ud-test.conllu`` (C, the form back-off and the known ratio
tuned on its last tenth, never on dev) and scored on ``*-ud-dev.conllu``
(the CoNLL 2018 Lemmas of ``corpora.ud_evaluation.conll18_scores``, gold
tokens):

- gold: ``egnlp lemmatizer train TEST --out M`` (reads UPOS, XPOS and
  FEATS), then ``egnlp lemmatizer lemmatize M DEV`` with LEMMA blanked;
- predicted: ``egnlp tagger train --train TEST --column upos`` and ``egnlp
  tagger tag`` the dev file, XPOS, FEATS and LEMMA blanked, and a
  lemmatizer trained with ``--columns upos``;
- predicted + gold FEATS: the predicted UPOS with the dev file's FEATS and
  XPOS, lemmatized by the first model (what a pipeline with a FEATS tagger
  comes near).

CPU seconds (user + system) are those of each command's process: the
lemmatizer's training with its tuning, and ``lemmatize`` whole (start-up,
reading, writing and the first call of the label-score kernel included).

UDPipe 1 (CoNLL 2018 Lemmas, gold tokens, its own predicted tags): pt_bosque
94.86, nl_alpino 86.36.

    python benchmarks/lemmatizer_accuracy.py
    python benchmarks/lemmatizer_accuracy.py --only nl_alpino --keep out/
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from egnlp.corpora import read_conll
from egnlp.corpora.ud_evaluation import conll18_scores

EGNLP = str(Path(sys.executable).parent / "egnlp")
UDPIPE1 = {"pt_bosque": 94.86, "nl_alpino": 86.36}


def egnlp(*args: object) -> float:
    """Run the CLI; the CPU seconds of its process. Stops the benchmark on failure."""
    proc = subprocess.Popen([EGNLP, *map(str, args), "-q"], stderr=subprocess.PIPE, text=True)
    _, status, usage = os.wait4(proc.pid, 0)
    if status:
        sys.exit(f"failed: egnlp {' '.join(map(str, args))}\n{proc.stderr.read() if proc.stderr else ''}")
    return usage.ru_utime + usage.ru_stime


def blanked(source: Path, target: Path, columns: tuple[int, ...]) -> None:
    """``source`` with the word lines' ``columns`` (0-based) written as ``_``."""
    with open(source, encoding="utf-8") as inp, open(target, "w", encoding="utf-8") as out:
        for line in inp:
            fields = line.rstrip("\n").split("\t")
            if len(fields) == 10 and fields[0].isdigit():
                for c in columns:
                    fields[c] = "_"
                line = "\t".join(fields) + "\n"
            out.write(line)


def lemmas(gold: Path, system: Path) -> float:
    scores = conll18_scores(read_conll(gold, require_heads=False), read_conll(system, require_heads=False))
    return scores["Lemmas"].f1


def treebank(name: str, ud: Path, work: Path) -> dict:
    test, dev = ud / f"{name}-ud-test.conllu", ud / f"{name}-ud-dev.conllu"
    row: dict = {"treebank": name}
    full, upos_model = work / f"{name}-lemma.npz", work / f"{name}-lemma-upos.npz"
    row["train_cpu"] = egnlp("lemmatizer", "train", test, "--out", full)
    row["train_cpu_upos"] = egnlp("lemmatizer", "train", test, "--columns", "upos", "--out", upos_model)
    gold_in, gold_out = work / f"{name}-gold-in.conllu", work / f"{name}-gold-out.conllu"
    blanked(dev, gold_in, (2,))
    row["lemmatize_cpu"] = egnlp("lemmatizer", "lemmatize", full, gold_in, "-o", gold_out)
    row["gold"] = lemmas(dev, gold_out)
    tagger, tagged = work / f"{name}-upos.npz", work / f"{name}-dev-upos.conllu"
    egnlp("tagger", "train", "--train", test, "--column", "upos", "--out", tagger)
    egnlp("tagger", "tag", tagger, dev, "-o", tagged)
    for key, model, columns in (("predicted", upos_model, (2, 4, 5)), ("predicted_gold_feats", full, (2,))):
        inp, out = work / f"{name}-{key}-in.conllu", work / f"{name}-{key}-out.conllu"
        blanked(tagged, inp, columns)
        egnlp("lemmatizer", "lemmatize", model, inp, "-o", out)
        row[key] = lemmas(dev, out)
    row["upos"] = conll18_scores(read_conll(dev, require_heads=False),
                                         read_conll(tagged, require_heads=False))["UPOS"].f1
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--ud-dir", default=os.environ.get("EGNLP_UD_DIR"), help="folder of the UD files")
    parser.add_argument("--only", help="one treebank, e.g. pt_bosque")
    parser.add_argument("--keep", type=Path, help="keep the models and outputs in this folder")
    args = parser.parse_args()
    if not args.ud_dir:
        sys.exit("give --ud-dir or set EGNLP_UD_DIR")
    names = [args.only] if args.only else list(UDPIPE1)
    print("| treebank | Lemmas, gold tags | Lemmas, predicted UPOS (UPOS) | predicted UPOS, gold FEATS | UDPipe 1 "
          "| train CPU s (upos only) | lemmatize CPU s |")
    print("|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as temporary:
        work = args.keep or Path(temporary)
        work.mkdir(parents=True, exist_ok=True)
        for name in names:
            r = treebank(name, Path(args.ud_dir), work)
            print(f"| {name} | {r['gold']:.2f} | {r['predicted']:.2f} ({r['upos']:.2f}) | "
                  f"{r['predicted_gold_feats']:.2f} | {UDPIPE1.get(name, float('nan')):.2f} | "
                  f"{r['train_cpu']:.1f} ({r['train_cpu_upos']:.1f}) | {r['lemmatize_cpu']:.2f} |", flush=True)


if __name__ == "__main__":
    main()
