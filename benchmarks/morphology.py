"""UPOS, XPOS and FEATS on gold tokens: separate taggers, one joint tagger, a joint tagger reading UPOS.

Every tagger trains on ``*-ud-test.conllu`` (its defaults: CRF taggers of UPOS and XPOS, maxent taggers
of FEATS and of the joint tag ``UPOS#XPOS#FEATS``, ``--column feats`` / ``morph``) and tags the words
of the matching ``*-ud-dev.conllu``; the tags are scored with the CoNLL 2018 metrics
(:func:`egnlp.corpora.ud_evaluation.conll18_scores`, gold heads kept so that only the tags differ):

- ``separate``: a CRF UPOS tagger, a CRF XPOS tagger (a treebank with XPOS), a maxent FEATS tagger;
- ``joint``: one maxent tagger of the joint tag, words only;
- ``upos + joint``: a CRF UPOS tagger, then a maxent joint tagger reading its UPOS (``--reads-upos``,
  trained on gold UPOS); the joint tag fills the three columns.

Train and tag CPU seconds are this process's (``time.process_time``) around training and tagging
(tagging: :meth:`egnlp.tagger.Tagger.predict` of the dev words), after a warm-up run that loads the
kernels. Prints one Markdown table.

    python benchmarks/morphology.py                 # every treebank of $EGNLP_UD_DIR
    python benchmarks/morphology.py --only nl_alpino
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import time
from pathlib import Path

TREEBANKS = ("pt_bosque", "nl_alpino")
METRICS = ("UPOS", "XPOS", "UFeats", "AllTags")


def timed(cpu: dict, key: str, fn, *args, **kwargs):
    start = time.process_time()
    out = fn(*args, **kwargs)
    cpu[key] = cpu.get(key, 0.0) + time.process_time() - start
    return out


def options(train, dev) -> dict:
    """Each option's (UPOS, XPOS, FEATS) of the dev words, and its train and tag CPU seconds."""
    from egnlp.corpora.morphology import split_morph
    from egnlp.tagger_training import tagged_columns, train_tagger

    words = [s.forms for s in dev]
    has_xpos = any(x != "_" for s in train for x in s.pos)
    out = {}
    cpu: dict = {}
    tokens, upos, _ = tagged_columns(train, "upos")
    upos_tagger, _ = timed(cpu, "train", train_tagger, tokens, upos, column="upos")
    predicted_upos = timed(cpu, "tag", upos_tagger.predict, words)
    crf_upos = dict(cpu)
    if has_xpos:
        xpos_tagger, _ = timed(cpu, "train", train_tagger, *tagged_columns(train, "pos")[:2], column="pos")
        xpos = timed(cpu, "tag", xpos_tagger.predict, words)
    else:
        xpos = [["_"] * len(s) for s in words]
    feats_tagger, _ = timed(cpu, "train", train_tagger, *tagged_columns(train, "feats")[:2], model="maxent",
                            column="feats")
    feats = timed(cpu, "tag", feats_tagger.predict, words)
    out["separate"] = (predicted_upos, xpos, feats, cpu)

    cpu = {}
    joint, _ = timed(cpu, "train", train_tagger, *tagged_columns(train, "morph")[:2], model="maxent",
                     column="morph")
    out["joint"] = (*_split(timed(cpu, "tag", joint.predict, words), split_morph), cpu)

    cpu = dict(crf_upos)
    reading, _ = timed(cpu, "train", train_tagger, *tagged_columns(train, "morph", reads_upos=True),
                       model="maxent", column="morph")
    out["upos + joint"] = (*_split(timed(cpu, "tag", reading.predict, words, predicted_upos), split_morph), cpu)
    return out


def _split(labels, split_morph):
    triples = [[split_morph(y) for y in s] for s in labels]
    return tuple([[t[k] for t in s] for s in triples] for k in range(3))


def scores(dev, upos, xpos, feats) -> dict:
    from egnlp.corpora.sentence import CPOS, FEATS
    from egnlp.corpora.ud_evaluation import conll18_scores

    system = [dataclasses.replace(s, rows=tuple((*r[:CPOS], u, x, f, *r[FEATS + 1:])
                                                for r, u, x, f in zip(s.rows, us, xs, fs)))
              for s, us, xs, fs in zip(dev, upos, xpos, feats)]
    found = conll18_scores(dev, system)
    return {name: found[name].f1 for name in METRICS}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--ud-dir", type=Path, default=Path(os.environ.get("EGNLP_UD_DIR", ".")))
    parser.add_argument("--only", choices=TREEBANKS)
    args = parser.parse_args()
    from egnlp.corpora import read_conll
    from egnlp.tagger_training import tagged_columns, train_tagger

    warm = [s for s in read_conll(args.ud_dir / "nl_alpino-ud-test.conllu") if len(s)][:30]
    for column, model in (("upos", "crf"), ("morph", "maxent")):  # load every kernel before timing
        tagger, _ = train_tagger(*tagged_columns(warm, column)[:2], model=model, column=column, max_passes=1)
        tagger.predict([s.forms for s in warm])
    tagger, _ = train_tagger(*tagged_columns(warm, "morph", reads_upos=True), model="maxent", column="morph",
                             max_passes=1)
    tagger.predict([s.forms for s in warm], [s.cpos for s in warm])
    print("| treebank | option | UPOS | XPOS | UFeats | AllTags | train CPU s | tag CPU s |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for name in [args.only] if args.only else TREEBANKS:
        train = [s for s in read_conll(args.ud_dir / f"{name}-ud-test.conllu") if len(s)]
        dev = read_conll(args.ud_dir / f"{name}-ud-dev.conllu")
        for option, (upos, xpos, feats, cpu) in options(train, dev).items():
            found = scores(dev, upos, xpos, feats)
            print(f"| {name} | {option} | " + " | ".join(f"{found[m]:.2f}" for m in METRICS)
                  + f" | {cpu['train']:.1f} | {cpu['tag']:.2f} |", flush=True)


if __name__ == "__main__":
    main()
