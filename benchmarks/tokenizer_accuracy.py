"""The trained tokenizer on raw UD text: Tokens and Sentences F1 of the CoNLL 2018 evaluation, and its CPU time.

For each UD treebank (``pt_bosque``, ``nl_alpino`` in ``$EGNLP_UD_DIR``):

- tuning: a tokenizer (:func:`egnlp.tokenizer_training.train_tokenizer`) is trained on the first
  nine tenths of the sentences of ``*-ud-test.conllu`` for each C of ``--Cs``, and scored on the
  text of the last tenth (token and sentence F1 of exact spans,
  :func:`egnlp.tagger.tokenizer_model.segmentation_f1`); the C with the best mean of the two
  is kept (``--C`` skips the tuning). The dev file is never used for tuning;
- the tokenizer of that C trained on the whole ``*-ud-test.conllu`` (training CPU seconds of the
  process, extraction and EG, kernels compiled before: a warm Numba cache);
- run on the raw text of ``*-ud-dev.conllu`` (``raw_text.raw_text``: its ``# text`` lines, the
  sentences of a paragraph joined by a space, a blank line at each ``# newpar``/``# newdoc``;
  CPU seconds of :meth:`~egnlp.tagger.tokenizer_model.Tokenizer.tokenize`), written as CoNLL-U with
  one word per token (no multiword tokens: Words F1 is low where the treebank has them) and a
  flat tree, and scored by ``udeval -v GOLD SYSTEM``: Tokens and Sentences F1 (and Words);
- for comparison, NLTK Punkt and the Treebank rules (:func:`egnlp.tagger.text.segment`, the
  fallback) on the same text, and UDPipe 1's figures as the shared data's README quotes them.

    python benchmarks/tokenizer_accuracy.py
    python benchmarks/tokenizer_accuracy.py --only nl_alpino --C 1
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import report
from procs import log
from raw_text import QUOTED_UDPIPE, METRICS, TREEBANKS, raw_text, udeval

from egnlp.corpora import read_conll
from egnlp.tagger.text import segment
from egnlp.tagger.tokenizer_model import Segmentation, segmentation_f1
from egnlp.tokenizer_training import corpus_paragraphs, train_tokenizer

SCORES = ("Tokens", "Sentences", "Words")
UDPIPE = {name: dict(zip(METRICS, values)) for name, values in QUOTED_UDPIPE.items()}
UDPIPE_TRAIN_CPU = {"pt_bosque": 1390.0, "nl_alpino": 736.0}  # the whole UDPipe 1 pipeline, the README's figures


def conllu(sentences) -> str:
    """CoNLL-U of tokenized sentences: one word per token, ``SpaceAfter=No`` where no whitespace follows,
    a flat tree (the first token the root), the sentence's text as ``# text``."""
    out = []
    for number, sentence in enumerate(sentences, start=1):
        out.append(f"# sent_id = {number}\n# text = {sentence.text}")
        for k, token in enumerate(sentence.tokens, start=1):
            misc = "SpaceAfter=No" if not token.space_after else "_"
            head, rel = ("0", "root") if k == 1 else ("1", "dep")
            out.append(f"{k}\t{token.form}\t_\t_\t_\t_\t{head}\t{rel}\t_\t{misc}")
        out.append("")
    return "\n".join(out) + "\n"


def tune(train_file: Path, Cs: list[float], settings: dict) -> tuple[float, list[dict]]:
    """The C of ``Cs`` with the best mean token and sentence F1 on the last tenth of ``train_file`` when
    trained on the rest, and every C's figures."""
    sentences = read_conll(train_file, require_heads=False)
    cut = len(sentences) - len(sentences) // 10
    held = corpus_paragraphs(sentences[cut:])
    text = "\n\n".join(p.text for p in held)
    gold = Segmentation.of_paragraphs(held)
    rows = []
    for C in Cs:
        tokenizer, result = train_tokenizer(sentences[:cut], C=C, **settings)
        found = segmentation_f1(gold, tokenizer.segmentation(text))
        rows.append({"C": C, **found, "passes": result.final.passes, "rel_gap": result.final.rel_gap})
        log(f"{train_file.name}: C={C:g} held-out tokens {found['tokens']:.2f} sentences {found['sentences']:.2f}")
    best = max(rows, key=lambda row: (row["tokens"] + row["sentences"]) / 2)
    return best["C"], rows


def measure(treebank: str, ud: Path, folder: Path, Cs: list[float], C: float | None, settings: dict) -> dict:
    train_file, gold = ud / f"{treebank}-ud-test.conllu", ud / f"{treebank}-ud-dev.conllu"
    tuning: list[dict] = []
    if C is None:
        C, tuning = tune(train_file, Cs, settings)
    start = time.process_time()
    tokenizer, result = train_tokenizer(train_file, C=C, data=train_file.name, **settings)
    train_cpu = time.process_time() - start
    model = folder / "tokenizer.npz"
    tokenizer.save(model)
    text = raw_text(gold.read_text(encoding="utf-8"))
    (folder / "dev.txt").write_text(text, encoding="utf-8")
    start = time.process_time()
    sentences = tokenizer.tokenize(text)
    run_cpu = time.process_time() - start
    pred = folder / "tokenizer.conllu"
    pred.write_text(conllu(sentences), encoding="utf-8")
    punkt = folder / "punkt.conllu"
    start = time.process_time()
    punkt_sentences = segment(text, TREEBANKS[treebank])
    punkt_cpu = time.process_time() - start
    punkt.write_text(conllu(punkt_sentences), encoding="utf-8")
    log(f"{treebank}: trained in {train_cpu:.1f} CPU s, tokenized the dev text in {run_cpu:.2f} CPU s")
    return {"C": C, "tuning": tuning, "train_cpu": train_cpu, "run_cpu": run_cpu, "punkt_cpu": punkt_cpu,
            "passes": result.final.passes, "rel_gap": result.final.rel_gap, "features": tokenizer.info["n_features"],
            "characters": len(text), "scores": udeval(gold, pred), "punkt": udeval(gold, punkt)}


def tables(results: dict[str, dict]) -> str:
    rows = []
    for treebank, found in results.items():
        rows.append([treebank, f"egnlp tokenizer (C={found['C']:g})",
                     *(f"{found['scores'][m]:.2f}" for m in SCORES), f"{found['train_cpu']:.1f}",
                     f"{found['run_cpu']:.2f}"])
        rows.append([treebank, "NLTK Punkt + Treebank rules", *(f"{found['punkt'][m]:.2f}" for m in SCORES), "",
                     f"{found['punkt_cpu']:.2f}"])
        rows.append([treebank, "UDPipe 1.4 (quoted; training: the whole pipeline)",
                     *(f"{UDPIPE[treebank][m]:.2f}" for m in SCORES), f"{UDPIPE_TRAIN_CPU[treebank]:,.0f}", ""])
    main = report.markdown_table(["treebank", "system", *SCORES, "train CPU s", "run CPU s"], rows)
    tuning = [[treebank, f"{row['C']:g}", f"{row['tokens']:.2f}", f"{row['sentences']:.2f}", str(row["passes"])]
              for treebank, found in results.items() for row in found["tuning"]]
    if not tuning:
        return main
    return main + "\n\nHeld-out tuning (last tenth of *-ud-test.conllu):\n\n" + report.markdown_table(
        ["treebank", "C", "tokens F1", "sentences F1", "passes"], tuning)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ud-dir", default=os.environ.get("EGNLP_UD_DIR"), help="folder of the UD files "
                                                                            "(default: $EGNLP_UD_DIR)")
    ap.add_argument("--only", default="", help=f"treebanks to run, comma-separated (default: {','.join(TREEBANKS)})")
    ap.add_argument("--Cs", default="0.3,1,3", help="the C values tuned on the held-out tenth (default: 0.3,1,3)")
    ap.add_argument("--C", type=float, help="train with this C, without tuning")
    ap.add_argument("--passes", type=int, help="pass limit (default: the tokenizer's)")
    ap.add_argument("--no-anneal", action="store_true", help="EG without C annealing")
    ap.add_argument("--out", type=Path, default=report.ROOT / "runs" / "tokenizer", help="output folder")
    args = ap.parse_args(argv)
    names = report.chosen_treebanks(args.only, TREEBANKS, args.ud_dir)
    settings = {**({"max_passes": args.passes} if args.passes else {}), **({"anneal": False} if args.no_anneal else {})}
    Cs = [float(c) for c in args.Cs.split(",") if c]
    # Compile the kernels (or load them from the cache) before anything is timed.
    warm = Path(args.ud_dir) / f"{names[0]}-ud-test.conllu"
    train_tokenizer(read_conll(warm, require_heads=False)[:30], max_passes=1)[0].tokenize("Olá. Tudo bem?")
    results = {}
    for treebank in names:
        folder = args.out / treebank
        folder.mkdir(parents=True, exist_ok=True)
        results[treebank] = measure(treebank, Path(args.ud_dir), folder, Cs, args.C, settings)
    (args.out / "tokenizer_accuracy.json").write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    print(tables(results))


if __name__ == "__main__":
    main()
