"""``egnlp bench``: the optimizer comparisons and regularization paths of the EG paper (:mod:`egnlp.comparisons`)."""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Annotated, Optional

import typer

from egnlp.cli.common import at_least_one, dataset_names, new_app, note
from egnlp.settings import BENCH_TRAINERS, RATE_TRAINERS, ROOTS
from egnlp.training.registry import trainer_names

bench_app = new_app("Reproduce the optimizer comparisons and regularization paths of the EG paper.")


class Objective(str, Enum):
    ll = "ll"
    mm = "mm"


Root = Enum("Root", {r: r for r in ROOTS}, type=str)  # type: ignore[misc]
Trainer = Enum("Trainer", {t.replace("-", "_"): t for t in trainer_names()}, type=str)  # type: ignore[misc]
OutOption = Annotated[Path, typer.Option("--out", "-o", help="Folder for the CSV, JSON, Markdown and PNG files.")]
DataOption = Annotated[str, typer.Option("--data", help="Named data set: train split to optimise, dev split to "
                                         "score.", autocompletion=dataset_names)]
RunSecondsOption = Annotated[Optional[float], typer.Option("--max-seconds", help="Time budget of each run.",
                                                           show_default="no limit")]
RunPassesOption = Annotated[Optional[int], typer.Option("--passes", callback=at_least_one,
                                                        help="Pass (iteration) limit of each run.",
                                                        show_default="the trainers'")]
RunSeedOption = Annotated[int, typer.Option("--seed", help="Seed of the runs' random choices.")]
LimitOption = Annotated[Optional[int], typer.Option("--limit", callback=at_least_one,
                                                    help="Use only the first N training sentences.",
                                                    show_default="all")]
RootOption = Annotated[Optional[Root], typer.Option("--root", help="Tree space (of a parsing set).",
                                                    show_default="the data set's")]


@bench_app.command("optimizers")
def bench_optimizers(out: OutOption, data: DataOption = "es",
                     objective: Annotated[Objective, typer.Option("--objective", help="ll (log-linear) or mm "
                                                                  "(max-margin).")] = Objective.ll,
                     C: Annotated[float, typer.Option("--C", help="Regularisation constant.")
                                  ] = 10.0,
                     trainers: Annotated[Optional[str], typer.Option(
                         "--trainers", help="Comma-separated runs; a suffix /cyclic, /random or /gap sets the order.",
                         show_default="; ".join(f"{','.join(runs)} for {objective}"
                                                for objective, runs in BENCH_TRAINERS.items()))] = None,
                     max_seconds: RunSecondsOption = None, passes: RunPassesOption = None, seed: RunSeedOption = 0,
                     limit: LimitOption = None, root: RootOption = None) -> None:
    """Run several trainers on one objective and C; write curves, plots and a summary."""
    from egnlp.comparisons import bench_problem, bench_specs, compare_optimizers, write_optimizer_report

    specs = bench_specs(trainers, BENCH_TRAINERS[objective.value], objective.value)
    problem, dev_score = bench_problem(data, limit, root.value if root else None, note=note)
    note(f"{'run':>16} {'pass':>4} {'eff.it':>8} {'sec':>8} {'primal':>14} {'rel.gap':>9} {'dev':>6}")
    runs = compare_optimizers(problem, specs, C, dev=dev_score, max_seconds=max_seconds, max_passes=passes,
                              seed=seed, progress=_show_record)
    write_optimizer_report(runs, out, f"{data}, {objective.value} objective, C={C:g}")
    typer.echo((out / "summary.md").read_text(encoding="utf-8"))


@bench_app.command("path")
def bench_path(out: OutOption, data: DataOption = "es",
               objective: Annotated[Objective, typer.Option("--objective", help="ll (eg-ll) or mm (eg-mm).")
                                    ] = Objective.ll,
               trainer: Annotated[Optional[Trainer], typer.Option("--trainer", help="Trainer.",
                                                                  show_default="eg-ll for ll, eg-mm for mm")] = None,
               C_path: Annotated[str, typer.Option("--C-path", help="START:FACTOR:COUNT.")] = "1000:0.7:21",
               tol: Annotated[float, typer.Option("--tol", help="Relative duality gap at which each C stops.")
                              ] = 1e-3,
               passes: Annotated[Optional[int], typer.Option("--passes", callback=at_least_one,
                                                             help="Pass limit for each C.",
                                                             show_default="the trainer's")] = None,
               limit: LimitOption = None, root: RootOption = None) -> None:
    """A warm-started path of C values (each from the last solution): the paper's Table 3."""
    from egnlp.comparisons import bench_problem, bench_specs, run_path, write_path_report
    from egnlp.settings import parse_c_path

    name = bench_specs(trainer.value if trainer else f"eg-{objective.value}", (), objective.value)[0]
    Cs = parse_c_path(C_path)
    problem, dev_score = bench_problem(data, limit, root.value if root else None, note=note)
    note(f"{'C':>10} {'eff.it':>8} {'total':>8} {'dev':>7}")

    def show(p) -> None:
        note(f"{p.C:10.4g} {p.eff_iters:8.2f} {p.total_eff_iters:8.2f} {p.dev_uas:7.2f}"
             + ("" if p.converged else "  (not converged)"))

    points = run_path(problem, name, Cs, dev=dev_score, tol=tol, max_passes=passes, on_point=show)
    write_path_report(points, out, f"{data}, {name}, C path {C_path}")
    typer.echo((out / "summary.md").read_text(encoding="utf-8"))


@bench_app.command("rates")
def bench_rates(out: OutOption,
                data: Annotated[str, typer.Option("--data", help="Named data set (dependency trees or tags): its "
                                                  "train split.", autocompletion=dataset_names)] = "es",
                C: Annotated[float, typer.Option("--C", help="Regularisation constant, the "
                                                 "same for every run.")] = 100.0,
                trainers: Annotated[Optional[str], typer.Option(
                    "--trainers", help="Comma-separated max-margin runs; suffixes /gap, /random, /cyclic (order), "
                    "/fixed (no annealing), /paper (egr's a-priori step).",
                    show_default=", ".join(RATE_TRAINERS))] = None,
                max_seconds: RunSecondsOption = None, passes: RunPassesOption = None, seed: RunSeedOption = 0,
                limit: LimitOption = None, root: RootOption = None) -> None:
    """Duality gap against iterations on the max-margin objective: iterations and seconds to relative
    gaps 1e-1 to 1e-4 and the slope of log(gap) against log(iterations) over the last decade
    (Zhang et al. 2011: about -2 for egr, -1 for batch EG)."""
    from egnlp.comparisons import bench_problem, bench_specs, compare_optimizers, write_rate_report

    specs = bench_specs(trainers, RATE_TRAINERS, "mm")
    problem, _ = bench_problem(data, limit, root.value if root else None, tagging=True, note=note)
    note(f"{'run':>16} {'pass':>5} {'eff.it':>8} {'sec':>8} {'primal':>14} {'rel.gap':>9}")
    runs = compare_optimizers(problem, specs, C, max_seconds=max_seconds, max_passes=passes, seed=seed,
                              progress=_show_record)
    write_rate_report(runs, out, f"{data}" + (f" (first {limit})" if limit else "") + f", max-margin, C={C:g}")
    typer.echo((out / "summary.md").read_text(encoding="utf-8"))


def _show_record(spec: str, r) -> None:
    """One line of a run's pass on stderr."""
    gap = f"{r.rel_gap:9.2e}" if r.rel_gap is not None else " " * 9
    dev = f" {r.dev:6.2f}" if r.dev is not None else ""
    note(f"{spec:>16} {r.passes:4d} {r.eff_iters:8.2f} {r.seconds:8.1f} {r.primal:14.4f} {gap}{dev}")
