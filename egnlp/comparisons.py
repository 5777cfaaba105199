"""Optimizer comparisons and regularization paths, written as CSV, PNG, JSON and Markdown.

These reproduce the comparisons of Collins et al. (2008): online EG against
L-BFGS, SGD and batch EG on the log-linear objective (Sec. 7.1.3-7.1.4,
7.2, Fig. 12), against the cutting-plane method on the max-margin objective
(Sec. 8, Fig. 13), random against cyclic order (Fig. 7), and the
warm-started path of C values (Sec. 7.1.2, Table 3).  The rate comparison
measures the claim of Zhang, Saha and Vishwanathan (2011, Table 1): the
duality gap of excessive gap reduction (``egr``) falls as O(1/k^2), EG's as
O(1/k).  Thin CLI commands (``egnlp bench optimizers`` / ``path`` /
``rates``) call these functions.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from egnlp.base.errors import CorpusError, SettingsError
from egnlp.base.files import write_bytes_atomic, write_text_atomic
from egnlp.training.path import PathPoint, regularization_path
from egnlp.training.records import PassRecord
from egnlp.training.registry import get_trainer, make_config, path_configs

THRESHOLDS = ("1e-2", "1e-3", "1e-4")
GAP_THRESHOLDS = ("1e-1", "1e-2", "1e-3", "1e-4")


def _save_png(fig, path: Path) -> None:
    """A matplotlib figure as a PNG file, written atomically like every output (not by matplotlib)."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=100)
    write_bytes_atomic(path, buffer.getvalue())


def _csv_text(header: Sequence[str], rows: Sequence[Sequence]) -> str:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)
    return buf.getvalue()


def run_spec(spec: str) -> tuple[str, dict]:
    """``"eg-ll"``, ``"eg-ll/cyclic"``, ``"eg-ll/anneal"``... -> (trainer, settings).

    Suffixes: ``/cyclic``, ``/random`` or ``/gap`` (example order), ``/fixed`` (EG
    without annealing of C), ``/average`` (SGD iterate averaging), ``/paper``
    (``egr`` with the paper's step from the data bound on L instead of the checked estimate),
    ``/<N>s`` (this run's own time budget, N seconds, instead of the bench's).
    """
    name, *flags = spec.split("/")
    trainer = get_trainer(name)
    fields = set(trainer.config.__dataclass_fields__)
    settings: dict = {}
    for flag in flags:
        if flag in ("random", "cyclic", "gap") and "order" in fields:
            settings["order"] = flag
        elif flag == "fixed" and "anneal" in fields:
            settings["anneal"] = False
        elif flag == "average" and "average" in fields:
            settings["average"] = True
        elif flag in ("paper", "adaptive") and "step" in fields:
            settings["step"] = flag
        elif flag.endswith("s") and _is_positive_number(flag[:-1]) and "max_seconds" in fields:
            settings["max_seconds"] = float(flag[:-1])
        else:
            raise SettingsError(f"run '{spec}': '{flag}' is not a setting of trainer '{name}' "
                             "(suffixes: /random, /cyclic, /gap, /fixed, /average, /paper, /adaptive, "
                             "/<seconds>s)")
    return name, settings


def _is_positive_number(text: str) -> bool:
    try:
        value = float(text)
    except ValueError:
        return False
    return np.isfinite(value) and value > 0


def first_reaching(records: Sequence[PassRecord], optimum: float, threshold: float) -> PassRecord | None:
    """The first record whose relative primal suboptimality is at most ``threshold``.

    Every trainer records the primal at the C being compared, annealed EG included.
    """
    for r in records:
        if (r.primal - optimum) / max(abs(optimum), 1e-300) <= threshold:
            return r
    return None


def compare_optimizers(problem, specs: Sequence[str], C: float, *, dev=None, max_seconds: float | None = None,
                       max_passes: int | None = None, seed: int = 0,
                       progress: Callable[[str, PassRecord], None] | None = None) -> dict[str, list[PassRecord]]:
    """Run every trainer spec on ``problem`` at ``C`` from scratch; their records by spec.

    Runs go on until their pass limit or time limit (a tight tolerance), so
    the curves show convergence well past 1e-4 where the budget allows.
    """
    runs: dict[str, list[PassRecord]] = {}
    for spec in specs:
        name, settings = run_spec(spec)
        trainer = get_trainer(name)
        fields = set(trainer.config.__dataclass_fields__)
        settings = dict(settings, C=C)
        if "tol" in fields:
            settings["tol"] = 1e-12 if name == "lbfgs" else 1e-7
        if max_seconds is not None:
            settings.setdefault("max_seconds", max_seconds)  # a run's own budget (/<N>s) wins
        if max_passes is not None:
            settings["max_passes"] = max_passes
        elif "max_seconds" in settings:
            settings["max_passes"] = 1_000_000  # the time budget decides
        if "seed" in fields:
            settings["seed"] = seed
        callbacks = (lambda r, s=spec: progress(s, r),) if progress else ()
        result = trainer.fit(problem, config=make_config(trainer, **settings), dev=dev, callbacks=callbacks)
        runs[spec] = result.records
    return runs


def summarize(runs: dict[str, list[PassRecord]]) -> dict:
    """The ``summary.json`` content: the optimum (best primal of all runs) and, per run,
    effective iterations and seconds to each relative suboptimality, final primal and dev score."""
    optimum = min(r.primal for recs in runs.values() for r in recs)
    # The best dual bound (at the compared C) brackets the optimum: optimum - bound >= P* - bound >= 0.
    bounds = [-r.dual for recs in runs.values() for r in recs if r.dual is not None and r.C == recs[-1].C]
    summary = {"optimum": optimum, "dual_bound": max(bounds) if bounds else None, "runs": {}}
    for spec, recs in runs.items():
        reached = {t: first_reaching(recs, optimum, float(t)) for t in THRESHOLDS}
        summary["runs"][spec] = {
            "eff_iters_to": {t: (r.eff_iters if r else None) for t, r in reached.items()},
            "seconds_to": {t: (r.seconds if r else None) for t, r in reached.items()},
            "final_primal": recs[-1].primal,
            "final_dev_uas": recs[-1].dev,
            "final_rel_gap": recs[-1].rel_gap,
        }
    return summary


def ratio_table(summary: dict, reference: str, threshold: str = "1e-3") -> list[tuple[str, float | None, float | None]]:
    """(run, eff-iteration ratio, seconds ratio) of every run against ``reference`` at ``threshold``."""
    ref = summary["runs"].get(reference)
    rows = []
    for spec, run in summary["runs"].items():
        if spec == reference or ref is None:
            continue
        ratios = []
        for key in ("eff_iters_to", "seconds_to"):
            a, b = run[key][threshold], ref[key][threshold]
            ratios.append(a / b if a is not None and b else None)
        rows.append((spec, *ratios))
    return rows


def _fmt(v, spec=".3g") -> str:
    return "never" if v is None else format(v, spec)


def markdown_summary(title: str, summary: dict, reference: str | None) -> str:
    bound = summary.get("dual_bound")
    bracket = (f"; the best dual bound is {bound:.6f}, so the optimum is within "
               f"{(summary['optimum'] - bound) / abs(summary['optimum']):.1e} (relative) of it" if bound is not None else "")
    lines = [f"# {title}", "", f"Optimum (best primal of all runs): {summary['optimum']:.6f}{bracket}", "",
             "| run | eff. it. to 1e-2 | 1e-3 | 1e-4 | seconds to 1e-2 | 1e-3 | 1e-4 | final primal | final dev |",
             "|---|---|---|---|---|---|---|---|---|"]
    for spec, run in summary["runs"].items():
        it = [_fmt(run["eff_iters_to"][t], ".1f") for t in THRESHOLDS]
        sec = [_fmt(run["seconds_to"][t], ".1f") for t in THRESHOLDS]
        dev = _fmt(run["final_dev_uas"], ".2f")
        lines.append(f"| {spec} | {' | '.join(it)} | {' | '.join(sec)} | {run['final_primal']:.4f} | {dev} |")
    if reference:
        lines += ["", f"Ratios to {reference} at relative suboptimality 1e-3 (> 1: {reference} is faster):", "",
                  "| run | eff. iterations | seconds |", "|---|---|---|"]
        for spec, r_it, r_sec in ratio_table(summary, reference):
            lines.append(f"| {spec} | {_fmt(r_it, '.2f')} | {_fmt(r_sec, '.2f')} |")
    return "\n".join(lines) + "\n"


def _plot_curves(runs: dict[str, list[PassRecord]], optimum: float, out: Path, title: str) -> list[Path]:
    """Suboptimality vs effective iterations and seconds, dev score, and duality gaps (if any)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    scale = max(abs(optimum), 1e-300)
    written = []
    panels = [("eff_iters", "effective iterations"), ("seconds", "seconds")]
    fig, axes = plt.subplots(2, 2, figsize=(11, 8))
    for col, (attr, label) in enumerate(panels):
        ax = axes[0, col]
        for spec, recs in runs.items():
            xs = [getattr(r, attr) for r in recs]
            ys = [max((r.primal - optimum) / scale, 1e-12) for r in recs]
            ax.semilogy(xs, ys, marker=".", label=spec)
        ax.set_xlabel(label)
        ax.set_ylabel("relative primal suboptimality")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend()
        ax = axes[1, col]
        for spec, recs in runs.items():
            pts = [(getattr(r, attr), r.dev) for r in recs if r.dev is not None]
            if pts:
                ax.plot(*zip(*pts), marker=".", label=spec)
        ax.set_xlabel(label)
        ax.set_ylabel("dev UAS")
        ax.grid(True, alpha=0.3)
    fig.suptitle(title)
    fig.tight_layout()
    path = out / "curves.png"
    _save_png(fig, path)
    plt.close(fig)
    written.append(path)
    with_gap = {s: recs for s, recs in runs.items() if any(r.rel_gap is not None for r in recs)}
    if with_gap:
        fig, axes = plt.subplots(1, 2, figsize=(11, 4))
        for spec, recs in with_gap.items():
            pts = [(r.eff_iters, r.primal, -r.dual, max(r.rel_gap, 1e-12)) for r in recs if r.dual is not None]
            if not pts:
                continue
            x, p, d, g = zip(*pts)
            line, = axes[0].plot(x, p, label=f"{spec} primal")
            axes[0].plot(x, d, linestyle="--", color=line.get_color(), label=f"{spec} -dual")
            axes[1].semilogy(x, g, label=spec)
        axes[0].set_xlabel("effective iterations")
        axes[0].set_ylabel("objective")
        lo = optimum - 0.5 * abs(optimum)
        axes[0].set_ylim(lo, optimum + 1.0 * abs(optimum))
        axes[0].legend(fontsize=7)
        axes[1].set_xlabel("effective iterations")
        axes[1].set_ylabel("relative duality gap")
        axes[1].legend()
        for ax in axes:
            ax.grid(True, which="both", alpha=0.3)
        fig.tight_layout()
        path = out / "duality.png"
        _save_png(fig, path)
        plt.close(fig)
        written.append(path)
    return written


def write_optimizer_report(runs: dict[str, list[PassRecord]], out: Path, title: str) -> dict:
    """curves.csv, summary.json, summary.md and the plots into ``out``; returns the summary."""
    out.mkdir(parents=True, exist_ok=True)
    summary = summarize(runs)
    header = ["run", "passes", "eff_iters", "seconds", "C", "primal", "dual", "gap", "rel_gap", "rel_subopt", "dev"]
    rows = [[spec, r.passes, r.eff_iters, r.seconds, r.C, r.primal, r.dual, r.gap, r.rel_gap,
             (r.primal - summary["optimum"]) / max(abs(summary["optimum"]), 1e-300), r.dev]
            for spec, recs in runs.items() for r in recs]
    write_text_atomic(out / "curves.csv", _csv_text(header, rows))
    write_text_atomic(out / "summary.json", json.dumps(summary, indent=2) + "\n")
    reference = next((s for s in runs if s.split("/")[0] in ("eg-ll", "eg-mm")), None)
    write_text_atomic(out / "summary.md", markdown_summary(title, summary, reference))
    try:
        summary["plots"] = [p.name for p in _plot_curves(runs, summary["optimum"], out, title)]
    except ImportError:
        summary["plots"] = []
    return summary


def write_path_report(points: Sequence[PathPoint], out: Path, title: str) -> list[dict]:
    """path.csv, summary.json (a list of rows), summary.md and path.png into ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    rows = [p.row() for p in points]
    write_text_atomic(out / "path.csv", _csv_text(["C", "eff_iters", "total_eff_iters", "dev_uas", "converged"],
                                            [[p.C, p.eff_iters, p.total_eff_iters, p.dev_uas, p.converged]
                                             for p in points]))
    write_text_atomic(out / "summary.json", json.dumps(rows, indent=2) + "\n")
    lines = [f"# {title}", "", "| C | effective iterations | total | dev UAS |", "|---|---|---|---|"]
    lines += [f"| {p.C:.4g} | {p.eff_iters:.2f} | {p.total_eff_iters:.2f} | {_fmt(p.dev_uas, '.2f')} |"
              + ("" if p.converged else " (not converged)") for p in points]
    write_text_atomic(out / "summary.md", "\n".join(lines) + "\n")
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(6, 4))
        pts = [(p.C, p.dev_uas) for p in points if p.dev_uas is not None]
        if pts:
            ax.semilogx(*zip(*pts), marker="o")
        ax.set_xlabel("C")
        ax.set_ylabel("dev UAS")
        ax.set_title(title)
        ax.grid(True, which="both", alpha=0.3)
        fig.tight_layout()
        _save_png(fig, out / "path.png")
        plt.close(fig)
    except ImportError:
        pass
    return rows


def run_path(problem, trainer_name: str, Cs: Sequence[float], *, dev=None, tol: float = 1e-3,
             max_passes: int | None = None, on_point=None) -> list[PathPoint]:
    settings = {} if max_passes is None else {"max_passes": max_passes}
    trainer = get_trainer(trainer_name)
    return regularization_path(problem, trainer, path_configs(trainer, Cs, tol=tol, **settings), dev=dev,
                               on_point=on_point)



def first_gap_below(records: Sequence[PassRecord], threshold: float) -> PassRecord | None:
    """The first record whose relative duality gap is at most ``threshold`` (records without a gap,
    such as annealed EG's passes above the target C, never count)."""
    return next((r for r in records if r.rel_gap is not None and r.rel_gap <= threshold), None)


def gap_slope(records: Sequence[PassRecord]) -> tuple[float, float, float] | None:
    """(slope, x0, x1): the least-squares slope of log(relative gap) against log(effective
    iterations) over the last decade of the run, x0 = x1 / 10 <= x <= x1 (x1 the last record's
    effective iterations); None with fewer than 3 records there or a run shorter than a decade."""
    pts = [(r.eff_iters, r.rel_gap) for r in records if r.rel_gap is not None and r.rel_gap > 0 and r.eff_iters > 0]
    if not pts:
        return None
    x1 = pts[-1][0]
    x0 = x1 / 10.0
    last = [(x, g) for x, g in pts if x >= x0]
    if len(last) < 3 or pts[0][0] > x0:
        return None
    lx, lg = np.log([x for x, _ in last]), np.log([g for _, g in last])
    return float(np.polyfit(lx, lg, 1)[0]), x0, x1


def summarize_rates(runs: dict[str, list[PassRecord]]) -> dict:
    """The ``summary.json`` of a rate comparison: per run, effective iterations and seconds to each
    relative duality gap of :data:`GAP_THRESHOLDS`, the last-decade slope (:func:`gap_slope`) and the
    final state; with the best primal and the best dual bound of all runs (at the compared C)."""
    at_C = [r for recs in runs.values() for r in recs if r.dual is not None]
    summary = {"best_primal": min(r.primal for recs in runs.values() for r in recs),
               "best_dual_bound": max((-r.dual for r in at_C), default=None), "runs": {}}
    for spec, recs in runs.items():
        reached = {t: first_gap_below(recs, float(t)) for t in GAP_THRESHOLDS}
        slope = gap_slope(recs)
        summary["runs"][spec] = {
            "eff_iters_to": {t: (r.eff_iters if r else None) for t, r in reached.items()},
            "seconds_to": {t: (r.seconds if r else None) for t, r in reached.items()},
            "slope": slope[0] if slope else None,
            "slope_range": [slope[1], slope[2]] if slope else None,
            "final_rel_gap": recs[-1].rel_gap, "final_eff_iters": recs[-1].eff_iters,
            "final_seconds": recs[-1].seconds, "final_primal": recs[-1].primal,
        }
    return summary


def markdown_rates(title: str, summary: dict) -> str:
    bound = summary["best_dual_bound"]
    bracket = "" if bound is None else (f"; best dual bound {bound:.6f}, bracket "
                                        f"{(summary['best_primal'] - bound) / abs(summary['best_primal']):.1e}")
    lines = [f"# {title}", "", f"Best primal {summary['best_primal']:.6f}{bracket}.", "",
             "| run | eff. it. to gap 1e-1 | 1e-2 | 1e-3 | 1e-4 | seconds to 1e-1 | 1e-2 | 1e-3 | 1e-4 "
             "| final gap (eff. it., s) | slope, last decade |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for spec, run in summary["runs"].items():
        it = [_fmt(run["eff_iters_to"][t], ".1f") for t in GAP_THRESHOLDS]
        sec = [_fmt(run["seconds_to"][t], ".0f") for t in GAP_THRESHOLDS]
        gap = "none" if run["final_rel_gap"] is None else f"{run['final_rel_gap']:.1e}"
        final = f"{gap} ({run['final_eff_iters']:.0f}, {run['final_seconds']:.0f})"
        slope = "n/a" if run["slope"] is None else (f"{run['slope']:.2f} ({run['slope_range'][0]:.0f}-"
                                                    f"{run['slope_range'][1]:.0f})")
        lines.append(f"| {spec} | {' | '.join(it)} | {' | '.join(sec)} | {final} | {slope} |")
    lines += ["", "Relative duality gap (primal - dual) / primal; slope: least-squares slope of log(gap) "
              "against log(effective iterations) over the last tenfold range of effective iterations "
              "(O(1/k^2) is -2, O(1/k) is -1)."]
    return "\n".join(lines) + "\n"


def _plot_gaps(runs: dict[str, list[PassRecord]], out: Path, title: str) -> Path:
    """Relative duality gap against effective iterations (log-log) and against seconds."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(12, 5))
    for spec, recs in runs.items():
        pts = [(r.eff_iters, r.seconds, r.rel_gap) for r in recs
               if r.rel_gap is not None and r.rel_gap > 0 and r.eff_iters > 0]
        if not pts:
            continue
        x, sec, g = zip(*pts)
        line, = axes[0].loglog(x, g, label=spec)
        axes[1].semilogy(sec, g, color=line.get_color(), label=spec)
    axes[0].set_xlabel("effective iterations")
    axes[1].set_xlabel("seconds")
    for ax in axes:
        ax.set_ylabel("relative duality gap")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle(title)
    fig.tight_layout()
    path = out / "gap.png"
    _save_png(fig, path)
    plt.close(fig)
    return path


def write_rate_report(runs: dict[str, list[PassRecord]], out: Path, title: str) -> dict:
    """curves.csv, summary.json, summary.md and gap.png into ``out``; returns the summary."""
    out.mkdir(parents=True, exist_ok=True)
    summary = summarize_rates(runs)
    header = ["run", "passes", "eff_iters", "seconds", "C", "primal", "dual", "gap", "rel_gap"]
    rows = [[spec, r.passes, r.eff_iters, r.seconds, r.C, r.primal, r.dual, r.gap, r.rel_gap]
            for spec, recs in runs.items() for r in recs]
    write_text_atomic(out / "curves.csv", _csv_text(header, rows))
    write_text_atomic(out / "summary.json", json.dumps(summary, indent=2) + "\n")
    write_text_atomic(out / "summary.md", markdown_rates(title, summary))
    try:
        summary["plots"] = [_plot_gaps(runs, out, title).name]
    except ImportError:
        summary["plots"] = []
    return summary


def tagging_problem(data: str, limit: int | None = None):
    """The CRF problem (chain parts, :class:`egnlp.tagger.tagging_problem.TaggingProblem`) of a tagging data
    set's train split, its first ``limit`` non-empty sentences if given: a chunker (POS input) for a
    chunking set, a POS tagger otherwise."""
    from egnlp.features.chain_features import ChainFeaturizer
    from egnlp.tagger.tagging_problem import TaggingProblem
    from egnlp.tagger_training import dataset_columns

    tokens, labels, pos = dataset_columns(data, "train", limit)
    featurizer = ChainFeaturizer.fit(tokens, labels, pos)
    return TaggingProblem.from_sentences(featurizer, tokens, labels, pos)


def bench_specs(trainers: str | None, defaults: Sequence[str], objective: str) -> list[str]:
    """The runs of ``--trainers`` (comma-separated specs, or ``defaults``), each checked: a known trainer with
    known suffixes that optimises ``objective`` (``ll`` or ``mm``)."""
    specs = [t.strip() for t in trainers.split(",") if t.strip()] if trainers else list(defaults)
    for spec in specs:
        name, _ = run_spec(spec)
        if get_trainer(name).objective != objective:
            raise SettingsError(f"trainer '{name}' does not optimise the {objective} objective")
    return specs


def bench_problem(data: str, limit: int | None, root: str | None, *, tagging: bool = False, note=print):
    """(problem, dev UAS scorer or None) of a data set's train split, or of its first ``limit`` sentences: the
    parsing problem of a treebank (compiled sentences kept: the benches visit them many times; the dev set
    decoded at every record, as in ``parser train``), or with ``tagging`` the CRF problem of a tagging set.
    ``note`` is told the sizes."""
    from egnlp.corpora import dataset_root, dataset_task, is_dataset, load_dataset

    if not is_dataset(data):
        raise CorpusError(f"unknown data set '{data}'; see 'egnlp data list'")
    if limit is not None and limit < 1:
        raise SettingsError(f"--limit must be at least 1, not {limit}")
    if dataset_task(data) != "parse":
        if not tagging:
            raise CorpusError(f"data set '{data}' has no dependency trees (its task is '{dataset_task(data)}')")
        problem = tagging_problem(data, limit)
        note(f"{data}: {problem.features.n_examples} training sentences, {problem.features.n_features} features")
        return problem, None
    from egnlp.features.arc_parts import CacheBudget
    from egnlp.parser_training import DEV_CACHE_BYTES, FEATURE_CACHE_BYTES, build_parsing_problem, uas_scorer

    train, dev = load_dataset(data, "train")[:limit], load_dataset(data, "dev")
    chosen = root or dataset_root(data)
    featurizer, problem, seconds = build_parsing_problem(train, chosen, cache_bytes=FEATURE_CACHE_BYTES)
    note(f"{data}: {len(train)} training sentences, {problem.features.n_features} features ({seconds:.1f} s); "
         f"dev {len(dev)} sentences")
    return problem, uas_scorer(featurizer, dev, chosen, budget=CacheBudget(DEV_CACHE_BYTES))
