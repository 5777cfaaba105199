"""The optimizer comparison of the EG paper on a slice of ``es``: the CLI's ``egnlp bench`` summaries, one table.

Runs, each writing ``summary.json`` and ``summary.md`` into a folder of ``--out``::

    egnlp bench optimizers --data DATA --limit N --objective ll --C 10 --max-seconds S --seed 0
        (eg-ll, lbfgs, sgd, eg-ll-batch)
    egnlp bench optimizers --data DATA --limit N --objective mm --C 100 --max-seconds S --seed 0
        --trainers eg-mm,cutting-plane,bcfw,egr
    egnlp bench rates --data DATA --limit N --C 100 --max-seconds R --seed 0
        (egr, egr/paper, eg-mm-batch/fixed, eg-mm, eg-mm/gap, bcfw, bcfw/gap, cutting-plane)

and prints one table of effective iterations and seconds to a relative
primal suboptimality of 1e-2 and 1e-3 (against the best primal of the runs
of that objective), then each run's own ``summary.md``. The runs of a
command go one after the other in one process; their seconds are the
optimisation's wall seconds as the trainers record them, so on a shared
machine compare the effective iterations first.

    python benchmarks/trainers.py                                # es, first 500 sentences, 100 s a run
    python benchmarks/trainers.py --limit 100 --seconds 10 --rates-seconds 0   # a quick check, no rates
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

import report
from procs import egnlp, log

LL_TRAINERS = "eg-ll,lbfgs,sgd,eg-ll-batch"
MM_TRAINERS = "eg-mm,cutting-plane,bcfw,egr"


def nested(summary_md: str) -> str:
    """A CLI summary inside a section: its headings as bold lines."""
    return re.sub(r"^#+ (.*)$", r"**\1**", summary_md.strip(), flags=re.MULTILINE)


def fmt(value: float | None, digits: int) -> str:
    return "never" if value is None else f"{value:.{digits}f}"


def headline(runs: list[tuple[str, float, dict]]) -> str:
    """One row per trainer: effective iterations and seconds to relative suboptimality 1e-2 and 1e-3."""
    rows = []
    for objective, C, summary in runs:
        for name, run in summary["runs"].items():
            its, secs = run["eff_iters_to"], run["seconds_to"]
            rows.append([f"{objective}, C = {C:g}", f"`{name}`", fmt(its["1e-2"], 1), fmt(its["1e-3"], 1),
                         fmt(secs["1e-2"], 1), fmt(secs["1e-3"], 1), f"{run['final_dev_uas']:.2f}"])
    return report.markdown_table(["objective", "trainer", "eff. it. to 1e-2", "eff. it. to 1e-3", "s to 1e-2",
                                  "s to 1e-3", "final dev UAS"], rows, "llrrrrr")


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", default="es", help="named parsing data set (default es)")
    ap.add_argument("--limit", type=int, default=500, help="first N training sentences (default 500)")
    ap.add_argument("--seconds", type=float, default=100.0,
                    help="optimisation seconds of each 'bench optimizers' run (default 100)")
    ap.add_argument("--rates-seconds", type=float, default=60.0,
                    help="optimisation seconds of each 'bench rates' run (default 60; 0: no rates runs)")
    ap.add_argument("--seed", type=int, default=0, help="seed of the runs' random choices (default 0)")
    ap.add_argument("--out", type=Path, default=report.ROOT / "runs" / "trainers", help="output folder")
    report.add_options(ap)
    args = ap.parse_args(argv)
    run_info = report.provenance()
    command = report.command_line(__file__, sys.argv[1:] if argv is None else argv)
    common = ["--data", args.data, "--limit", args.limit, "--seed", args.seed]
    runs = []
    for objective, C, trainers in (("ll", 10.0, LL_TRAINERS), ("mm", 100.0, MM_TRAINERS)):
        folder = args.out / f"optimizers-{objective}"
        log(f"egnlp bench optimizers --objective {objective} --C {C:g} --trainers {trainers}")
        egnlp("bench", "optimizers", *common, "--objective", objective, "--C", C, "--trainers", trainers,
              "--max-seconds", args.seconds, "--out", folder)
        runs.append((objective, C, json.loads((folder / "summary.json").read_text(encoding="utf-8")),
                     (folder / "summary.md").read_text(encoding="utf-8")))
    rates = ""
    if args.rates_seconds > 0:
        folder = args.out / "rates"
        log("egnlp bench rates")
        egnlp("bench", "rates", *common, "--C", 100, "--max-seconds", args.rates_seconds, "--out", folder)
        rates = (folder / "summary.md").read_text(encoding="utf-8")
    names = {"ll": "log-linear", "mm": "max-margin"}
    body = (f"The first {args.limit:,} `{args.data}` training sentences, its dev split scored; "
            f"{args.seconds:g} s of optimisation a run, one run after another in one process (`egnlp bench "
            f"optimizers`, seed {args.seed}). Relative primal suboptimality against the best primal of the "
            "runs of that objective. Seconds are optimisation wall seconds on a shared machine; effective "
            "iterations (example visits / n) do not depend on its load.\n\n"
            + headline([(names[o], C, s) for o, C, s, _ in runs]))
    details = "\n\n".join(f"Details, `egnlp bench optimizers --objective {o}` (the CLI's `summary.md`):\n\n"
                          f"{nested(md)}" for o, _, _, md in runs)
    if rates:
        details += (f"\n\nDuality gap against effective iterations, max-margin, C = 100, {args.rates_seconds:g} s "
                    f"a run (`egnlp bench rates`, the CLI's `summary.md`):\n\n{nested(rates)}")
    print(body + "\n\n" + details)
    if args.write_docs:
        for path in report.write_section("trainers", command, body, details=details, run=run_info):
            log(f"wrote section trainers of {path.relative_to(report.ROOT)}")


if __name__ == "__main__":
    main()
