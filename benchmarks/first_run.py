"""The first parse after an install: Numba compiles egnlp's kernels once; whole processes, printed as Markdown.

Needs ``EGNLP_UD_DIR``::

    python benchmarks/first_run.py --keep out/             # trains the parser once, then times the parses
    python benchmarks/first_run.py --keep out/ --runs 5 --write-docs

The parser is ``egnlp parser train --train pt_bosque-ud-test.conllu`` with
every default, kept in ``--keep`` under the name of the commit it was
trained with. Each run gives a new, empty folder to ``NUMBA_CACHE_DIR``,
where Numba then looks for cached kernels and writes them: nothing is
compiled yet, as after ``pip install``. In that folder ``egnlp parser parse
MODEL ONE -o OUT`` parses the first sentence of ``pt_bosque-ud-dev.conllu``
twice: the first process compiles every kernel the parse calls (and says so
on stderr), the second loads them from the cache. The table gives the median
CPU seconds (user + system of the finished child, ``os.wait4``) with the
runs' range, the median peak RSS, the share of runs whose stderr had the
compiling note, and the cached kernel files the first process left
(``.nbc``). ``--write-docs`` writes it into the ``first-run`` section of
``docs/results.md``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

import report
from parse_scale import ud_dir  # benchmarks/ is on the path of a script run from it
from procs import Finished, egnlp, kept_parser, log

NOTE = "note: compiling egnlp's kernels"  # egnlp.startup.COMPILING_NOTE starts so


def first_sentence(path: Path) -> str:
    """The first sentence of a CoNLL-U file, its comments included, ending in a blank line."""
    with open(path, encoding="utf-8") as handle:
        lines = []
        for line in handle:
            if not line.strip():
                if lines:
                    break
                continue
            lines.append(line)
    return "".join(lines) + "\n"


def cached_kernels(folder: Path) -> int:
    """The compiled kernels (``.nbc`` files) under ``folder``."""
    return sum(1 for _ in folder.rglob("*.nbc"))


def summary(name: str, runs: list[Finished], kernels: list[int] | None) -> list[str]:
    """A table row: CPU s median (min-max), peak MB, runs with the compiling note, kernel files."""
    cpu = [r.cpu for r in runs]
    said = sum(NOTE in r.stderr for r in runs)
    return [name, f"{statistics.median(cpu):.2f} ({min(cpu):.2f}-{max(cpu):.2f})",
            f"{statistics.median(r.peak_mb for r in runs):,.0f}", f"{said} of {len(runs)}",
            f"{statistics.median(kernels):.0f}" if kernels else "-"]


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=3, help="runs, each with a new empty cache (median; default 3)")
    ap.add_argument("--keep", help="folder for the model (one trained at the same commit is reused)")
    report.add_options(ap)
    opts = ap.parse_args(argv)
    run_info = report.provenance()
    command = report.command_line(__file__, sys.argv[1:] if argv is None else argv)
    ud = ud_dir()
    train_file, dev_file = Path(ud, "pt_bosque-ud-test.conllu"), Path(ud, "pt_bosque-ud-dev.conllu")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(opts.keep or tmp)
        folder.mkdir(parents=True, exist_ok=True)
        model = kept_parser(folder, Path(tmp), "egnlp-pt-default", run_info.commit, train_file)
        one = Path(tmp) / "one.conllu"
        one.write_text(first_sentence(dev_file), encoding="utf-8")
        first, second, kernels = [], [], []
        for i in range(opts.runs):
            cache = Path(tmp) / f"numba-cache-{i}"
            cache.mkdir()
            env = {"NUMBA_CACHE_DIR": str(cache)}
            first.append(egnlp("parser", "parse", model, one, "-o", Path(tmp) / "out.conllu", env=env))
            kernels.append(cached_kernels(cache))
            second.append(egnlp("parser", "parse", model, one, "-o", Path(tmp) / "out.conllu", env=env))
            log(f"run {i + 1}: first {first[-1].cpu:.2f} CPU s, second {second[-1].cpu:.2f} CPU s, "
                f"{kernels[-1]} kernels cached")
    rows = [summary("first parse after install (empty Numba cache)", first, kernels),
            summary("second parse (kernels from the cache)", second, None)]
    text = report.markdown_table(["process", "CPU s, median (range)", "peak MB", "said it compiles",
                                  "kernels cached"], rows)
    print(f"Whole processes parsing one sentence, median of {opts.runs} runs.\n")
    print(text)
    if opts.write_docs:
        body = ("`egnlp parser parse MODEL ONE -o OUT` of the first sentence of `pt_bosque-ud-dev.conllu` with a "
                "model of `egnlp parser train --train pt_bosque-ud-test.conllu` (every default). Each run gives a "
                "new, empty folder to `NUMBA_CACHE_DIR`, as after an install: the first process compiles every "
                "kernel the parse calls and writes it there, saying so once on stderr; the second loads them. "
                f"{opts.runs} runs; CPU seconds are user + system of each finished process (`os.wait4`), start-up "
                "included; kernels cached: the `.nbc` files the first process left.\n\n" + text)
        details = ("What a first parse compiles, and what it no longer does, is in `base/kernel_compile.py`: "
                   "calls of egnlp's functions are typed by their arguments' types, not once per literal "
                   "value; a function that only kernels call is linked into its callers as LLVM IR, and "
                   "never optimised on its own nor made into machine code of its own (nor cached: its code is "
                   "in its callers'); and egnlp's functions get no C-callable wrapper (nothing takes their "
                   "address).")
        for path in report.write_section("first-run", command, body, details=details, run=run_info):
            log(f"wrote section first-run of {path.relative_to(report.ROOT)}")


if __name__ == "__main__":
    main()
