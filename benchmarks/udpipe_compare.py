"""Parsing speed against UDPipe 1, whole processes side by side, printed as a Markdown table.

Needs ``EGNLP_UD_DIR`` and UDPipe 1's Python binding in this interpreter
(``pip install ufal.udpipe``; not a dependency of egnlp)::

    python benchmarks/udpipe_compare.py --keep out/            # trains both parsers once, then times them
    python benchmarks/udpipe_compare.py --keep out/ --runs 5   # the models in out/ are reused

Both parsers are trained on ``pt_bosque-ud-test.conllu`` with gold tags:
egnlp by ``egnlp parser train --train FILE --tree auto`` (default settings
otherwise), UDPipe 1 by ``Trainer.train("morphodita_parsito", ...)`` with
no tokenizer, no tagger and the parser's defaults but ``iterations=10`` (the
setting of the issue's reference run).  Each parse is a new process reading
``pt_bosque-ud-dev.conllu`` (1,172 sentences) or that file copied 8 times
(9,376 sentences) and writing CoNLL-U: ``egnlp parser parse MODEL FILE -o OUT
--jobs 1`` against a Python process that loads the UDPipe model and runs its
``Pipeline`` (input CoNLL-U, tagger none, parser default, output CoNLL-U).
The two run in turn, ``--runs`` times; the table gives the median CPU seconds
(user + system of the finished child, ``os.wait4``), the median peak RSS, the
ratio UDPipe / egnlp of the median CPU seconds, and the median of the ratios
of each run's pair (egnlp's run and the UDPipe run after it: the pair shares
the host's state of the moment, as ``farm-bench --vs`` pairs its runs).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

from parse_scale import CLI, run_argv as run, ud_dir  # benchmarks/ is on the path of a script run from it

UDPIPE_PARSE = """
import sys
from ufal.udpipe import Model, Pipeline, ProcessingError
model = Model.load(sys.argv[1])
if model is None:
    sys.exit("cannot load " + sys.argv[1])
pipeline = Pipeline(model, "conllu", Pipeline.NONE, Pipeline.DEFAULT, "conllu")
error = ProcessingError()
with open(sys.argv[2], encoding="utf-8") as handle:
    out = pipeline.process(handle.read(), error)
if error.occurred():
    sys.exit(error.message)
with open(sys.argv[3], "w", encoding="utf-8") as handle:
    handle.write(out)
"""


def train_udpipe(train_file: Path, model_path: Path) -> None:
    from ufal.udpipe import InputFormat, ProcessingError, Sentence, Sentences, Trainer

    reader = InputFormat.newConlluInputFormat()
    reader.setText(train_file.read_text(encoding="utf-8"))
    sentences, error = Sentences(), ProcessingError()
    sentence = Sentence()
    while reader.nextSentence(sentence, error):
        sentences.push_back(sentence)
        sentence = Sentence()
    if error.occurred():
        sys.exit(f"{train_file}: {error.message}")
    model = Trainer.train("morphodita_parsito", sentences, Sentences(), "none", "none", "iterations=10", error)
    if error.occurred():
        sys.exit(f"UDPipe training failed: {error.message}")
    model_path.write_bytes(model)  # the binding returns the model's bytes


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=3, help="runs of each parse (median printed; default 3)")
    ap.add_argument("--keep", help="folder for the models and files (models found there are reused)")
    opts = ap.parse_args()
    ud = ud_dir()
    try:
        import ufal.udpipe  # noqa: F401
    except ImportError:
        sys.exit("UDPipe 1's Python binding is missing: pip install ufal.udpipe")
    train_file, dev_file = Path(ud, "pt_bosque-ud-test.conllu"), Path(ud, "pt_bosque-ud-dev.conllu")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(opts.keep or tmp)
        folder.mkdir(parents=True, exist_ok=True)
        ours, theirs = folder / "egnlp-pt.npz", folder / "udpipe-pt.model"
        if not ours.exists():
            run([sys.executable, "-c", CLI, "parser", "train", "--train", str(train_file), "--tree", "auto",
                 "--out", str(ours), "-q"])
        if not theirs.exists():
            started = time.perf_counter()
            train_udpipe(train_file, theirs)
            print(f"UDPipe parser trained in {time.perf_counter() - started:.0f} s", file=sys.stderr)
        dev = dev_file.read_text(encoding="utf-8").rstrip("\n") + "\n\n"
        x8 = folder / "dev-x8.conllu"
        x8.write_text(dev * 8, encoding="utf-8")
        rows = []
        for name, source in (("pt_bosque dev (1,172 sentences)", dev_file), ("dev x 8 (9,376 sentences)", x8)):
            ours_runs, theirs_runs = [], []
            for _ in range(opts.runs):
                ours_runs.append(run([sys.executable, "-c", CLI, "parser", "parse", str(ours), str(source),
                                      "--out", str(folder / "egnlp.out"), "--jobs", "1", "-q"]))
                theirs_runs.append(run([sys.executable, "-c", UDPIPE_PARSE, str(theirs), str(source),
                                        str(folder / "udpipe.out")]))
            o_cpu, t_cpu = (statistics.median(r[1] for r in runs) for runs in (ours_runs, theirs_runs))
            o_mb, t_mb = (statistics.median(r[2] for r in runs) for runs in (ours_runs, theirs_runs))
            pairs = statistics.median(t[1] / o[1] for o, t in zip(ours_runs, theirs_runs))
            rows.append(f"| {name} | {o_cpu:.2f} | {o_mb:,.0f} | {t_cpu:.2f} | {t_mb:,.0f} | {t_cpu / o_cpu:.2f}x "
                        f"| {pairs:.2f}x |")
    print(f"Whole processes, run in turn, median of {opts.runs}; egnlp with --jobs 1.\n")
    print("| input | egnlp CPU s | egnlp peak MB | UDPipe 1 CPU s | UDPipe 1 peak MB | UDPipe / egnlp CPU "
          "| pair median |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
