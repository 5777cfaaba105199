"""Parsing speed against UDPipe 1, whole processes side by side, printed as a Markdown table.

Needs ``EGNLP_UD_DIR`` and UDPipe 1's Python binding in this interpreter
(``pip install ufal.udpipe``; not a dependency of egnlp)::

    python benchmarks/udpipe_compare.py --keep out/            # trains both parsers once, then times them
    python benchmarks/udpipe_compare.py --keep out/ --runs 5   # the models in out/ are reused

Both parsers are trained on ``pt_bosque-ud-test.conllu`` with gold tags:
egnlp by ``egnlp parser train --train FILE`` (the default model: first order)
and with ``--parts grandparents`` (third order, pruned by a first-order
cascade), UDPipe 1 by ``Trainer.train("morphodita_parsito", ...)`` with
no tokenizer, no tagger and the parser's defaults (10 iterations, the
setting of the issue's reference run; ``udpipe1.py``).  Each parse is a new process reading
``pt_bosque-ud-dev.conllu`` (1,172 sentences) or that file copied 8 times
(9,376 sentences) and writing CoNLL-U: ``egnlp parser parse MODEL FILE -o OUT
--jobs 1`` against a Python process that loads the UDPipe model and runs its
``Pipeline`` (input CoNLL-U, tagger none, parser default, output CoNLL-U).
The three run in turn, ``--runs`` times; the table gives each egnlp model's
median CPU seconds (user + system of the finished child, ``os.wait4``) and
median peak RSS, UDPipe's, the ratio UDPipe / egnlp of the median CPU seconds,
and the median of the ratios of each round (egnlp's run and the UDPipe run of
the same round: they share the host's state of the moment).

The UDPipe model is kept in ``--keep`` (``udpipe1/parser-pt_bosque.model``,
shared with ``parser_accuracy.py --udpipe``); egnlp's model is kept there
under the name of the commit it was trained with, and trained again for
another commit or uncommitted changes.  ``--write-docs`` writes the table
into the ``speed`` section of ``docs/results.md``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

import report
import udpipe1
from parse_scale import ud_dir  # benchmarks/ is on the path of a script run from it
from procs import egnlp, kept_parser, log


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=3, help="runs of each parse (median printed; default 3)")
    ap.add_argument("--keep", help="folder for the models and files (models found there are reused)")
    report.add_options(ap)
    opts = ap.parse_args(argv)
    run_info = report.provenance()
    command = report.command_line(__file__, sys.argv[1:] if argv is None else argv)
    ud = ud_dir()
    if udpipe1.version() is None:
        sys.exit("UDPipe 1's Python binding is missing: pip install ufal.udpipe")
    train_file, dev_file = Path(ud, "pt_bosque-ud-test.conllu"), Path(ud, "pt_bosque-ud-dev.conllu")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(opts.keep or tmp)
        folder.mkdir(parents=True, exist_ok=True)
        ours = {"defaults": kept_parser(folder, Path(tmp), "egnlp-pt-default", run_info.commit, train_file),
                "--parts grandparents": kept_parser(folder, Path(tmp), "egnlp-pt-grandparents", run_info.commit,
                                                    train_file, "--parts", "grandparents")}
        theirs = udpipe1.train("parser-pt_bosque", train_file, udpipe1.PARSER_ONLY, folder)
        dev = dev_file.read_text(encoding="utf-8").rstrip("\n") + "\n\n"
        x8 = Path(tmp) / "dev-x8.conllu"
        x8.write_text(dev * 8, encoding="utf-8")
        rows = []
        for name, source in (("pt_bosque dev (1,172 sentences)", dev_file), ("dev x 8 (9,376 sentences)", x8)):
            ours_runs: dict[str, list] = {model: [] for model in ours}
            theirs_runs = []
            for i in range(opts.runs):
                for model, path in ours.items():
                    ours_runs[model].append(egnlp("parser", "parse", path, source, "--out", Path(tmp) / "egnlp.out",
                                                  "--jobs", "1", "-q"))
                theirs_runs.append(udpipe1.process(theirs.path, source, Path(tmp) / "udpipe.out"))
                log(f"{name}, run {i + 1}: egnlp " + ", ".join(f"{model} {runs[-1].cpu:.2f}" for model, runs
                                                               in ours_runs.items())
                    + f" CPU s, UDPipe {theirs_runs[-1].cpu:.2f}")
            t_cpu = statistics.median(r.cpu for r in theirs_runs)
            t_mb = statistics.median(r.peak_mb for r in theirs_runs)
            for model, runs in ours_runs.items():
                o_cpu = statistics.median(r.cpu for r in runs)
                o_mb = statistics.median(r.peak_mb for r in runs)
                pairs = statistics.median(t.cpu / o.cpu for o, t in zip(runs, theirs_runs))
                rows.append([name, f"`{model}`", f"{o_cpu:.2f}", f"{o_mb:,.0f}", f"{t_cpu:.2f}", f"{t_mb:,.0f}",
                             f"{t_cpu / o_cpu:.2f}x", f"{pairs:.2f}x"])
    text = report.markdown_table(["input", "egnlp model", "egnlp CPU s", "egnlp peak MB", "UDPipe 1 CPU s",
                                  "UDPipe 1 peak MB", "UDPipe / egnlp CPU", "round median"], rows)
    print(f"Whole processes, run in turn, median of {opts.runs}; egnlp with --jobs 1.\n")
    print(text)
    if opts.write_docs:
        body = (f"Whole processes parsing CoNLL-U with gold tags into CoNLL-U, egnlp's and UDPipe "
                f"{udpipe1.version()}'s in turn, {opts.runs} times; medians. egnlp: "
                "`egnlp parser parse MODEL FILE -o OUT --jobs 1` with "
                "the models of `egnlp parser train --train pt_bosque-ud-test.conllu` (`defaults`: first order) "
                "and of the same with `--parts grandparents` (third order, pruned by a first-order cascade). "
                "UDPipe 1: a Python process that loads its model and runs `Pipeline(model, \"conllu\", NONE, "
                "DEFAULT, \"conllu\")`; the model is its parser alone, trained by `Trainer.train(\"morphodita_parsito"
                "\", ...)` with its defaults (10 iterations) on the same file with gold tags"
                + (", kept from an earlier run (`--keep`)" if theirs.reused else "")
                + f" ({theirs.cpu:,.0f} CPU s to train). CPU seconds: user + system of each finished process "
                "(`os.wait4`), start-up and model loading included. The machine is shared with other jobs, so "
                "read the ratios: the round median is the median of the ratios of each egnlp run and the UDPipe run "
                "of the same round.\n\n" + text)
        details = ("egnlp's peak is the whole process's resident set, and most of it does not grow with the "
                   "input: the interpreter with NumPy, Numba and llvmlite, the model's arrays as read (weights, "
                   "keys and codes; the weights not copied again), the direct scorer's tables (the key table of "
                   "twice as many slots as keys, the summed pair weights) and the pages of LLVM's library that "
                   "loading the cached kernels maps. The pages of LLVM's library that only its start used are let "
                   "go after the imports and after the model load (`egnlp.startup.release_llvm_pages`); "
                   "`/proc/self/smaps` of a parse shows the split between file-backed and anonymous memory.")
        for path in report.write_section("speed", command, body, details=details, run=run_info):
            log(f"wrote section speed of {path.relative_to(report.ROOT)}")


if __name__ == "__main__":
    main()
