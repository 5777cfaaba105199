"""Multiword-token expansion on the UD files: words from the gold tokens, scored against the gold words.

Only the dev and test files of the UD treebanks are public here, so for each
treebank in the UD folder (``--ud-dir``, default ``$EGNLP_UD_DIR``) the
expander trains on ``*-ud-test.conllu`` (``train_multiword``: C and the rule
thresholds tuned on that file's last tenth, never on dev), is saved and
loaded back, and expands the gold surface tokens of ``*-ud-dev.conllu``
(range lines' forms and the words outside ranges, MISC kept). Scored:

- word precision, recall and F1 of the expansion per gold token
  (``egnlp.tagger.multiword.expansion_scores``), and token accuracy;
- udtools' ``udeval -v DEV SYSTEM`` Tokens and Words F1, the SYSTEM file
  being the predicted words under the gold tokens (UPOS ``X`` and a flat
  tree as placeholders: udeval reads HEAD as an integer);
- ``udvalidate --level 2`` on the same file;
- the errors, most frequent first (``--errors N``).

Reference: UDPipe 1 from raw text loses 0.18 points between Tokens and Words
on pt_bosque (99.76 -> 99.58); on gold tokens, Tokens F1 is 100.

    python benchmarks/multiword_accuracy.py
    python benchmarks/multiword_accuracy.py --only pt_bosque --errors 30 --keep out/
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BIN = Path(sys.executable).parent
LANGS = {"pt_bosque": "pt", "nl_alpino": "nl"}


def with_tree(sentence):
    """The sentence with UPOS ``X`` and a flat tree (word 1 the root, the others its ``dep``s)."""
    rows = tuple((*row[:3], "X", row[4], row[5], "0" if i == 0 else "1", "root" if i == 0 else "dep", *row[8:])
                 for i, row in enumerate(sentence.rows))
    return dataclasses.replace(sentence, rows=rows)


def udeval_f1(gold: Path, system: Path) -> dict[str, float]:
    """The F1 of each metric line of ``udeval -v``."""
    out = subprocess.run([str(BIN / "udeval"), "-v", str(gold), str(system)], capture_output=True, text=True,
                         check=True).stdout
    scores = {}
    for line in out.splitlines():
        match = re.match(r"(\w+)\s*\|\s*([\d.]+)\s*\|\s*([\d.]+)\s*\|\s*([\d.]+)", line)
        if match:
            scores[match.group(1)] = float(match.group(4))
    return scores


def measure(name: str, ud: Path, folder: Path, n_errors: int) -> dict:
    from egnlp.corpora import read_conll, write_conll
    from egnlp.multiword_training import train_multiword
    from egnlp.tagger.multiword import MultiwordExpander, expansion_scores, surface_tokens

    train = read_conll(ud / f"{name}-ud-test.conllu", require_heads=False)
    dev_path = ud / f"{name}-ud-dev.conllu"
    dev = read_conll(dev_path, require_heads=False)
    start = time.process_time()
    trained = train_multiword(train, data=f"{name}-ud-test.conllu")
    train_seconds = time.process_time() - start
    model = folder / f"{name}-mwt.npz"
    trained.save(model)
    expander = MultiwordExpander.load(model)
    gold = [surface_tokens(s) for s in dev]
    start = time.process_time()
    expanded = [expander.expand_sentence(s) for s in dev]
    run_seconds = time.process_time() - start
    predicted = [expander.expand([t.form for t in tokens]) for tokens in gold]
    scores = expansion_scores(gold, predicted)
    system = folder / f"{name}-dev-words.conllu"
    write_conll(system, [with_tree(s) for s in expanded])
    official = udeval_f1(dev_path, system)
    valid = subprocess.run([str(BIN / "udvalidate"), "--level", "2", "--lang", LANGS.get(name, "ud"), str(system)],
                           capture_output=True, text=True).returncode == 0
    errors = collections.Counter()
    for tokens, words_list in zip(gold, predicted):
        for token, words in zip(tokens, words_list):
            if tuple(words) != token.words:
                errors[(token.form, " ".join(token.words), " ".join(words))] += 1
    best = (trained.info.get("tuning") or {}).get("best", {})
    return {"name": name, "scores": scores, "udeval": official, "valid": valid, "train_seconds": train_seconds,
            "run_seconds": run_seconds, "model_kb": model.stat().st_size / 1024, "best": best,
            "splits": expander.splits_anything, "gold_mwt": sum(len(t.words) > 1 for ts in gold for t in ts),
            "pred_mwt": sum(len(w) > 1 for ws in predicted for w in ws), "errors": errors.most_common(n_errors),
            "identical": all(s.forms == e.forms for s, e in zip(dev, expanded))}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ud-dir", default=os.environ.get("EGNLP_UD_DIR"), help="folder of the UD .conllu files")
    ap.add_argument("--only", default=None, help="comma-separated treebanks (e.g. pt_bosque)")
    ap.add_argument("--errors", type=int, default=15, help="errors listed per treebank")
    ap.add_argument("--keep", default=None, help="folder for the models and outputs (default: a temporary one)")
    args = ap.parse_args(argv)
    if not args.ud_dir:
        sys.exit("set EGNLP_UD_DIR or give --ud-dir")
    ud = Path(args.ud_dir)
    names = sorted(p.name[:-len("-ud-test.conllu")] for p in ud.glob("*-ud-test.conllu"))
    if args.only:
        names = [n for n in names if n in args.only.split(",")]
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(args.keep) if args.keep else Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        results = [measure(name, ud, folder, args.errors) for name in names]
    print("| treebank | gold MWT | predicted MWT | word P | word R | word F1 | token acc. | udeval Tokens | "
          "udeval Words | valid L2 | tuned C / support / precision | train CPU s | expand CPU s | model KB |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in results:
        s, u, b = r["scores"], r["udeval"], r["best"]
        tuned = f"{b['C']:g} / {b['min_support']:g} / {b['min_precision']:g}" if b else "-"
        print(f"| {r['name']} | {r['gold_mwt']:,} | {r['pred_mwt']:,} | {s['precision']:.2f} | {s['recall']:.2f} | "
              f"{s['f1']:.2f} | {s['token_accuracy']:.2f} | {u.get('Tokens', float('nan')):.2f} | "
              f"{u.get('Words', float('nan')):.2f} | {'yes' if r['valid'] else 'NO'} | {tuned} | "
              f"{r['train_seconds']:.1f} | {r['run_seconds']:.2f} | {r['model_kb']:.0f} |")
    for r in results:
        if not r["splits"]:
            print(f"\n{r['name']}: no multiword tokens in training; the expander splits nothing "
                  f"(dev words unchanged: {'yes' if r['identical'] else 'NO'}).")
        if r["errors"]:
            print(f"\n{r['name']}, errors (count, token, gold words, predicted words):\n")
            for (form, gold_words, words), count in r["errors"]:
                print(f"- {count} `{form}`: gold `{gold_words}`, predicted `{words}`")


if __name__ == "__main__":
    main()
