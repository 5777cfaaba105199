"""Whole-process parsing and tagging at scale, printed as a Markdown table.

Run from the project root (``EGNLP_UD_DIR`` must point at the UD files)::

    python benchmarks/parse_scale.py                       # pt_bosque: train, then every measurement
    python benchmarks/parse_scale.py --runs 5 --big-mb 200 --keep out/
    python benchmarks/parse_scale.py --copies 32 --big-mb 0 --keep out/   # 37,504 sentences, no big file

One parser (``egnlp parser train --data pt-bosque --tree auto --passes P``)
and one UPOS tagger (``egnlp tagger train --train pt_bosque-ud-test.conllu
--column upos``) are trained first; then, each a separate ``egnlp`` process
whose CPU seconds (user + system) and peak RSS are the operating system's
account of the finished child (``os.wait4``), ``--runs`` times in turn (the
median is printed):

- ``parser parse`` and ``tagger tag`` of ``pt_bosque-ud-dev.conllu`` copied
  ``--copies`` times (default 8: 9,376 sentences, gold tags) with ``--jobs 1`` and ``--jobs 2``:
  wall seconds, sentences per wall second, the ratio, and whether the two
  outputs are byte for byte the same;
- one sentence parsed (``parser parse`` of a one-sentence file);
- a file of about ``--big-mb`` MB (the dev file repeated; 0: none) parsed with
  ``--jobs 1``: peak RSS against the one-sentence run's (the model and the
  runtime), i.e. what reading, parsing and writing the stream adds.

Models already in the ``--keep`` folder are used again.

The machine's load moves the seconds, not the memory; run it on a quiet
machine and read the ratios.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CLI = "import sys; from egnlp.cli import main; sys.argv[0] = 'egnlp'; main()"


# Children keep Python's bytecode cache, as an installed package does (pip compiles it at install time):
# without it every run would compile egnlp's modules from source again (about 0.07 s).
CHILD_ENV = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}


def run_argv(argv: list[str]) -> tuple[float, float, float]:
    """A child process: (wall s, cpu s (user + system), peak RSS MB); a failure stops the benchmark."""
    start = time.perf_counter()
    with tempfile.TemporaryFile() as errors:
        child = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=errors, env=CHILD_ENV)
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - start
        if os.waitstatus_to_exitcode(status) != 0:
            errors.seek(0)
            sys.exit(f"{' '.join(argv[3:] if argv[1:2] == ['-c'] else argv)[:300]} failed: "
                     f"{errors.read().decode(errors='replace').strip()[-500:]}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024.0


def run(args: list[str]) -> tuple[float, float, float]:
    """``egnlp ARGS`` in a child process (:func:`run_argv`)."""
    return run_argv([sys.executable, "-c", CLI, *args])


def ud_dir() -> str:
    """The folder of the UD files (``EGNLP_UD_DIR``), or the benchmark stops saying so."""
    ud = os.environ.get("EGNLP_UD_DIR")
    if not ud:
        sys.exit("set EGNLP_UD_DIR to the folder of pt_bosque-ud-test.conllu and pt_bosque-ud-dev.conllu")
    return ud


def median_run(args: list[str], runs: int) -> tuple[float, float, float]:
    results = [run(args) for _ in range(runs)]
    return tuple(statistics.median(r[k] for r in results) for k in range(3))  # type: ignore[return-value]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=3, help="runs of each measurement (median printed; default 3)")
    ap.add_argument("--passes", type=int, default=10, help="parser training passes (default 10)")
    ap.add_argument("--copies", type=int, default=8,
                    help="copies of the dev file in the --jobs measurements (default 8: 9,376 sentences)")
    ap.add_argument("--big-mb", type=float, default=200.0, help="size of the streamed file in MB (default 200; 0: no such file)")
    ap.add_argument("--keep", help="folder for the models and files (default: a temporary one)")
    opts = ap.parse_args()
    ud = ud_dir()
    dev = Path(ud, "pt_bosque-ud-dev.conllu").read_text(encoding="utf-8").rstrip("\n") + "\n\n"
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(opts.keep or tmp)
        folder.mkdir(parents=True, exist_ok=True)
        parser, tagger = str(folder / "parser.npz"), str(folder / "tagger.npz")
        if not Path(parser).exists():  # models kept in --keep are used again
            run(["parser", "train", "--data", "pt-bosque", "--tree", "auto", "--passes", str(opts.passes),
                 "--out", parser, "-q"])
        if not Path(tagger).exists():
            run(["tagger", "train", "--train", str(Path(ud, "pt_bosque-ud-test.conllu")), "--column", "upos",
                 "--out", tagger, "-q"])
        copied = folder / f"dev-x{opts.copies}.conllu"
        copied.write_text(dev * opts.copies, encoding="utf-8")
        n_sents = opts.copies * dev.count("\n\n")
        rows = []
        for kind, model, command in (("parse", parser, "parser"), ("tag", tagger, "tagger")):
            verb = "parse" if kind == "parse" else "tag"
            outs = {}
            timing = {}
            for jobs in (1, 2):
                out = folder / f"{kind}-j{jobs}.conllu"
                timing[jobs] = median_run([command, verb, model, str(copied), "--out", str(out), "--jobs", str(jobs),
                                           "-q"], opts.runs)
                outs[jobs] = out.read_bytes()
            same = "yes" if outs[1] == outs[2] else "NO"
            for jobs in (1, 2):
                wall, cpu, peak = timing[jobs]
                rows.append(f"| {command} {verb} --jobs {jobs} | {n_sents:,} sentences | {wall:.2f} | {cpu:.2f} | "
                            f"{peak:,.0f} | {n_sents / wall:,.0f} | "
                            f"{timing[1][0] / wall:.2f}x | {same} |")
        one = folder / "one.conllu"
        one.write_text(dev.split("\n\n")[0] + "\n\n", encoding="utf-8")
        wall1, cpu1, peak1 = median_run(["parser", "parse", parser, str(one), "--out", str(folder / "one.out"),
                                         "--jobs", "1", "-q"], opts.runs)
        rows.append(f"| parser parse, one sentence | 1 sentence | {wall1:.2f} | {cpu1:.2f} | {peak1:,.0f} | | | |")
        model_mb = Path(parser).stat().st_size / 1e6
        streamed = ""
        if opts.big_mb > 0:
            big = folder / "big.conllu"
            repeats = max(1, round(opts.big_mb * 1e6 / len(dev.encode("utf-8"))))
            with big.open("w", encoding="utf-8") as handle:
                for _ in range(repeats):
                    handle.write(dev)
            size = big.stat().st_size / 1e6
            wallb, cpub, peakb = run(["parser", "parse", parser, str(big), "--out", str(folder / "big.out"),
                                      "--jobs", "1", "-q"])
            big_sents = repeats * dev.count("\n\n")
            rows.append(f"| parser parse, {size:,.0f} MB file | {big_sents:,} sentences | {wallb:.1f} | "
                        f"{cpub:.1f} | {peakb:,.0f} | {big_sents / wallb:,.0f} | | |")
            streamed = (f"\nStreaming: the {size:,.0f} MB file (one run) peaks {peakb - peak1:,.0f} MB above the "
                        f"one-sentence run ({peak1:,.0f} MB: the model and the runtime).")
    print(f"Whole processes, median of {opts.runs} runs; parser model file {model_mb:.1f} MB.\n")
    print("| command | input | wall s | CPU s | peak RSS MB | sentences / s | speed-up over --jobs 1 | "
          "same output |")
    print("|---|---|---:|---:|---:|---:|---:|---|")
    print("\n".join(rows))
    print(streamed)


if __name__ == "__main__":
    main()
