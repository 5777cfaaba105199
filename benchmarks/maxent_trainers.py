"""Huang et al. (2010), Fig. 2 on our data: CD, SCGIS, GIS and L-BFGS on the maxent tagger's objective.

Run from the project root (NLTK_DATA must point at the corpora)::

    python benchmarks/maxent_trainers.py                                   # 3 data sets, 300 s per trainer
    python benchmarks/maxent_trainers.py --data conll2000-pos --limit 200 --max-seconds 5   # a quick check
    python benchmarks/maxent_trainers.py --data brown --max-seconds 1200 --out runs/maxent_brown

For each data set (``conll2000-pos``, ``conll2000-chunk``, ``brown``, or any
tagging set) the training events are built once
(``egnlp.tagger.maxent.training_events``: one event per token, the observation
predicates of ``egnlp.features.predicates`` plus the gold tag history, features =
(predicate, label) pairs seen in training; for chunking the labels are the
chunk column and the POS tags are inputs).  Then every trainer of
the maxent trainers of ``egnlp.training.registry`` (``--trainers``, default cd, scgis, gis,
lbfgs) minimises the same objective sum_i -log P(y_i|x_i) + ||w||^2 /
(2 sigma^2), sigma^2 = ``--sigma2`` (10), from w = 0, with ``tol = 0`` (no
stopping on the relative decrease except when a pass does not decrease f)
until ``--max-seconds`` of optimisation time or ``--max-passes`` passes.
Each trainer first runs 2 passes on 20 sentences untimed, so that JIT
compilation (or loading numba's cache) is not timed.

Per pass the trainers record f, ||grad f|| and the optimisation seconds
(``PassRecord.seconds``: without the evaluation of the record and the
test scoring).  A pass is one sweep over the features (cd, scgis), one
parallel update (gis) or one L-BFGS iteration (lbfgs; "evals" counts its
function and gradient evaluations).  The reference optimum f* is the lowest
f of all runs on the data set; the relative difference is (f - f*) / f*.
Test accuracy (beam decoding of the test split, beam 3, as the tagger
decodes) is computed by the dev-scorer hook of the trainers from the
weights of the pass, untimed.  Decoding every pass would take longer than
many cheap passes, so by default it decodes at a subset of passes: passes
0-5, then when the pass number grows by 25% or when ``--max-seconds`` /
``--decode-points`` optimisation seconds have passed since the last
decoding, and always the last pass (``--decode-points 0``: every pass).

BLAS runs on one thread (``OPENBLAS_NUM_THREADS`` etc. = 1 unless set):
timings are of one core.  With threaded OpenBLAS on a loaded 2-core machine
the dot products of the records and scipy's L-BFGS-B step took up to 10x
longer (200 conll2000-pos sentences: lbfgs 4.1 s wall against 0.33 s).

Files in ``--out`` (default ``runs/maxent_trainers``): per data set
``NAME.csv`` (trainer, pass, evals, seconds, objective, relative difference,
gradient norm, test accuracy where decoded) and ``NAME.png`` (relative
difference vs seconds, log scale; test accuracy vs seconds), and
``maxent_trainers.md`` with one table: time and passes to relative
difference 1e-2 and 1e-4 ("never" if not reached), the last relative
difference, final and best test accuracy.
"""

from __future__ import annotations

import argparse
import csv
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# Serial measurements: one BLAS thread (unless set by the caller), inherited by the subprocesses.  On a
# loaded machine OpenBLAS threads on small vectors (numpy dot / norm, scipy's L-BFGS-B) cost up to 10x.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")
DATA = ("conll2000-pos", "conll2000-chunk", "brown")
TRAINERS = ("cd", "scgis", "gis", "lbfgs")
THRESHOLDS = (1e-2, 1e-4)


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def load(data: str, limit: int | None, test_limit: int | None):
    """(task, train, test): dicts of tokens, labels and pos (None unless the labels are chunks)."""
    from egnlp.corpora import dataset_task
    from egnlp.tagger_training import dataset_columns

    splits = (("train", limit), ("test", test_limit))
    return (dataset_task(data), *(dict(zip(("tokens", "labels", "pos"), dataset_columns(data, split, n)))
                                  for split, n in splits))


class TestScorer:
    """The dev-scorer hook of the maxent trainers: test accuracy (%) of the pass's weights, at some passes.

    ``should_decode`` is asked with the pass number (the trainers call the
    scorer once per record, pass 0 first); the seconds of the previous record
    come from a callback.  Returns None at passes it skips.
    """

    def __init__(self, model, encoded, gold, every_seconds: float | None):
        self.model, self.encoded, self.gold = model, encoded, gold
        self.every_seconds = every_seconds
        self.calls = 0
        self.last_pass = -1
        self.last_seconds = 0.0  # optimisation seconds of the latest record (from the callback)
        self.decoded_at = 0.0
        self.decode_seconds = 0.0

    def reset(self) -> None:
        self.calls, self.last_pass, self.last_seconds, self.decoded_at, self.decode_seconds = 0, -1, 0.0, 0.0, 0.0

    def should_decode(self, passes: int) -> bool:
        if self.every_seconds is None or passes <= 5 or passes >= 1.25 * self.last_pass:
            return True
        return self.last_seconds - self.decoded_at >= self.every_seconds

    def accuracy(self, w):
        import numpy as np

        start = time.perf_counter()
        pred = self.model.decode_encoded(self.encoded, w)[0]
        self.decode_seconds += time.perf_counter() - start
        return 100.0 * float(np.mean(pred == self.gold)) if self.gold.size else 0.0

    def __call__(self, w):
        passes = self.calls
        self.calls += 1
        if not self.should_decode(passes):
            return None
        self.last_pass = passes
        self.decoded_at = self.last_seconds
        return self.accuracy(w)

    def callback(self, record) -> None:
        self.last_seconds = record.seconds


def first_reaching(rows: list[dict], threshold: float) -> dict | None:
    return next((r for r in rows if r["rel_diff"] <= threshold), None)


def run_data(data: str, args) -> dict:
    import numpy as np

    from egnlp.tagger.maxent import MaxentModel, training_events
    from egnlp.training.maxent_problem import MaxentProblem
    from egnlp.training.registry import MAXENT, get_trainer, make_config

    def problem_of(tokens, labels, pos):
        events = training_events(tokens, labels, pos, use_pos=use_pos)
        return events, MaxentProblem.from_events(events.ev_ptr, events.ev_pred, events.gold, len(events.labels),
                                                 len(events.predicates))

    task, train, test = load(data, args.limit, args.test_limit)
    use_pos = task == "chunk"
    log(f"{data}: building events for {len(train['tokens'])} training sentences")
    start = time.perf_counter()
    events, problem = problem_of(train["tokens"], train["labels"], train["pos"])
    build_seconds = time.perf_counter() - start
    model = MaxentModel(events.labels, events.predicates, problem.feat_ptr, problem.feat_label,
                        np.zeros(problem.n_features), use_pos=use_pos, beam=args.beam)
    encoded = model.encode(test["tokens"], test["pos"])
    label_id = {y: k for k, y in enumerate(events.labels)}
    gold = np.array([label_id.get(y, -1) for seq in test["labels"] for y in seq], dtype=np.int64)
    every = None if args.decode_points == 0 else args.max_seconds / args.decode_points
    scorer = TestScorer(model, encoded, gold, every)
    log(f"{data}: {problem.n_events:,} events, {problem.n_predicates:,} predicates, {problem.n_features:,} features, "
        f"{len(events.labels)} labels, {problem.nnz:,} nonzeros (#nz); built in {build_seconds:.1f} s")

    # warm-up: compile (or load) every kernel on a tiny problem, untimed
    _, tiny = problem_of(train["tokens"][:20], train["labels"][:20], train["pos"][:20] if use_pos else None)
    scorer.accuracy(np.zeros(problem.n_features))
    C = 1.0 / args.sigma2
    runs: dict[str, list[dict]] = {}
    info: dict[str, dict] = {}
    for name in args.trainers:
        trainer = get_trainer(name, MAXENT)
        trainer.fit(tiny, config=make_config(trainer, C=C, max_passes=2, tol=0.0))
        scorer.reset()
        # tol = 0 and no gradient test: run to the time or pass limit (L-BFGS-B also stops at its own
        # ftol = 0 test when a step does not decrease f)
        config = make_config(trainer, C=C, max_passes=args.max_passes, tol=0.0, gtol=0.0,
                             max_seconds=args.max_seconds)

        def progress(r, name=name):
            if r.passes <= 3 or r.passes % 10 == 0:
                log(f"{data} {name}: pass {r.passes:5d}  {r.seconds:8.1f} s  f {r.primal:.6f}  "
                    f"|g| {r.grad_norm:.3e}" + (f"  test {r.dev:.2f}" if r.dev is not None else ""))

        log(f"{data} {name}: training (sigma2 {args.sigma2:g}, at most {args.max_seconds:g} s, "
            f"{args.max_passes} passes)")
        wall = time.perf_counter()
        result = trainer.fit(problem, config=config, dev=scorer, callbacks=(scorer.callback, progress))
        wall = time.perf_counter() - wall
        rows = [{"pass": r.passes, "evals": r.eff_iters, "seconds": r.seconds, "objective": r.primal,
                 "grad_norm": r.grad_norm, "test": r.dev} for r in result.records]
        if rows[-1]["test"] is None:  # always score the last weights
            rows[-1]["test"] = scorer.accuracy(result.weights)
        last = result.records[-1]
        log(f"{data} {name}: {last.passes} passes, {last.seconds:.1f} s, f {last.primal:.6f}, "
            f"test {rows[-1]['test']:.2f}, converged {result.converged}; wall {wall:.0f} s "
            f"({scorer.decode_seconds:.0f} s decoding)")
        runs[name] = rows
        f = [r.primal for r in result.records]
        info[name] = {"converged": bool(result.converged), "wall_seconds": wall,
                      "decode_seconds": scorer.decode_seconds,
                      "last_rel_change": (f[-2] - f[-1]) / max(abs(f[-1]), 1.0) if len(f) > 1 else None}
    optimum = min(r["objective"] for rows in runs.values() for r in rows)
    best = min(runs, key=lambda n: min(r["objective"] for r in runs[n]))
    for rows in runs.values():
        for r in rows:
            r["rel_diff"] = (r["objective"] - optimum) / abs(optimum)
    return {"data": data, "task": task, "train_sentences": len(train["tokens"]),
            "test_sentences": len(test["tokens"]), "test_tokens": int(gold.size), "n_events": problem.n_events,
            "n_predicates": problem.n_predicates, "n_features": problem.n_features, "n_labels": len(events.labels),
            "nnz": problem.nnz, "optimum": optimum, "optimum_from": best, "runs": runs, "info": info}


def fmt_reach(row: dict | None) -> str:
    return "never" if row is None else f"{row['seconds']:.1f} s ({row['pass']})"


def table_rows(res: dict) -> list[list[str]]:
    out = []
    for name, rows in res["runs"].items():
        scored = [r["test"] for r in rows if r["test"] is not None]
        wall = res["info"][name]["wall_seconds"] - res["info"][name]["decode_seconds"]
        out.append([res["data"], name, str(rows[-1]["pass"]), f"{rows[-1]['seconds']:.1f}", f"{wall:.0f}"]
                   + [fmt_reach(first_reaching(rows, t)) for t in THRESHOLDS]
                   + [f"{rows[-1]['rel_diff']:.1e}", f"{rows[-1]['test']:.2f}", f"{max(scored):.2f}"])
    return out


def write_data_files(res: dict, out: Path, max_seconds: float) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    csv_path, png_path = out / f"{res['data']}.csv", out / f"{res['data']}.png"
    with open(csv_path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["trainer", "pass", "evals", "seconds", "objective", "rel_diff", "grad_norm", "test_acc"])
        for name, rows in res["runs"].items():
            for r in rows:
                w.writerow([name, r["pass"], f"{r['evals']:g}", f"{r['seconds']:.4f}", f"{r['objective']:.8f}",
                            f"{r['rel_diff']:.6e}", f"{r['grad_norm']:.6e}",
                            "" if r["test"] is None else f"{r['test']:.4f}"])
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.5))
    for name, rows in res["runs"].items():
        pts = [(r["seconds"], r["rel_diff"]) for r in rows if r["rel_diff"] > 0]
        if pts:
            axes[0].semilogy(*zip(*pts), label=name)
        pts = [(r["seconds"], r["test"]) for r in rows if r["test"] is not None]
        axes[1].plot(*zip(*pts), marker=".", label=name)
    for t in THRESHOLDS:
        axes[0].axhline(t, color="grey", lw=0.7, ls="--")
    axes[0].set_ylabel("relative objective difference (f - f*) / f*")
    finals = [rows[-1]["test"] for rows in res["runs"].values()]
    axes[1].set_ylim(max(0.0, min(finals) - 4.0), min(100.0, max(finals) + 1.0))
    axes[1].set_ylabel("test token accuracy (%)")
    for ax in axes:
        ax.set_xlabel("training seconds")
        ax.set_xlim(0, max(max_seconds, max(rows[-1]["seconds"] for rows in res["runs"].values())) * 1.02)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend()
    fig.suptitle(f"maxent {res['task']} tagger on {res['data']} ({res['n_events']:,} events, "
                 f"{res['n_features']:,} features)")
    fig.tight_layout()
    fig.savefig(png_path, dpi=120)
    plt.close(fig)
    return [csv_path, png_path]


def report(results: list[dict], args, load_avg: float) -> str:
    headers = ["data", "trainer", "passes", "seconds", "wall s", "time (passes) to 1e-2", "time (passes) to 1e-4",
               "last rel. diff", "final test acc", "best test acc"]
    lines = [f"Maxent trainers, sigma^2 = {args.sigma2:g}, at most {args.max_seconds:g} s of optimisation and "
             f"{args.max_passes} passes per run, test decoded with beam {args.beam}; {os.cpu_count()} CPUs, "
             f"load average {load_avg:.2f} at the start.", ""]
    for res in results:
        decode = "every pass" if args.decode_points == 0 else "at a subset of passes"
        lines.append(f"- `{res['data']}` ({res['task']}): {res['train_sentences']:,} training sentences, "
                     f"{res['n_events']:,} events, {res['n_features']:,} features, {res['n_labels']} labels, "
                     f"#nz {res['nnz']:,}; test {res['test_tokens']:,} tokens (decoded {decode}); "
                     f"f* = {res['optimum']:.6f} (best of {res['optimum_from']}, whose last relative decrease "
                     f"per pass was {res['info'][res['optimum_from']]['last_rel_change'] or 0:.1e}).")
    lines += ["", "| " + " | ".join(headers) + " |", "|:---|:---|" + "---:|" * (len(headers) - 2)]
    for res in results:
        lines += ["| " + " | ".join(row) + " |" for row in table_rows(res)]
    lines += ["", "seconds and the times to a relative difference are optimisation seconds (PassRecord.seconds; "
              "for lbfgs the time between its iterations: its function and gradient evaluations and "
              "scipy's L-BFGS-B step); "
              "wall s = the whole run without the test decoding, i.e. with the per-pass evaluation of f and "
              "||grad f|| for the records; passes of lbfgs are L-BFGS iterations."]
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", default=",".join(DATA), help=f"comma-separated tagging sets (default: {','.join(DATA)})")
    ap.add_argument("--trainers", default=",".join(TRAINERS), help=f"comma-separated (default: {','.join(TRAINERS)})")
    ap.add_argument("--limit", type=int, help="train on the first N training sentences (default: all)")
    ap.add_argument("--test-limit", type=int, help="score the first M test sentences (default: all)")
    ap.add_argument("--max-seconds", type=float, default=300.0,
                    help="optimisation seconds per trainer and data set (default: 300)")
    ap.add_argument("--max-passes", type=int, default=100000, help="pass limit per run (default: 100000)")
    ap.add_argument("--sigma2", type=float, default=10.0, help="Gaussian prior variance (default: 10)")
    ap.add_argument("--beam", type=int, default=3, help="beam of the test decoding (default: 3)")
    ap.add_argument("--decode-points", type=int, default=50,
                    help="decode the test split at least every max-seconds / N seconds and at a geometric "
                         "grid of passes; 0 decodes every pass (default: 50)")
    ap.add_argument("--out", type=Path, default=ROOT / "runs" / "maxent_trainers", help="output folder")
    args = ap.parse_args()
    from egnlp.training.registry import MAXENT, trainer_names

    args.trainers = [t.strip() for t in args.trainers.split(",") if t.strip()]
    unknown = [t for t in args.trainers if t not in trainer_names(MAXENT)]
    if unknown or not args.trainers:
        raise SystemExit(f"unknown trainers {unknown}; trainers: {', '.join(trainer_names(MAXENT))}")
    if args.decode_points < 0 or not args.max_seconds > 0:
        raise SystemExit("--decode-points must be >= 0 and --max-seconds positive")
    datasets = [d.strip() for d in args.data.split(",") if d.strip()]
    args.out.mkdir(parents=True, exist_ok=True)
    load_avg = os.getloadavg()[0]
    log(f"{os.cpu_count()} CPUs, load average {load_avg:.2f} at the start")
    results = []
    for data in datasets:
        res = run_data(data, args)
        results.append(res)
        for path in write_data_files(res, args.out, args.max_seconds):
            log(f"wrote {path}")
    text = report(results, args, load_avg)
    print(text)
    md = args.out / "maxent_trainers.md"
    md.write_text(text + "\n")
    log(f"wrote {md}; done, load average {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
