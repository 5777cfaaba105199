"""Our CRF tagger (eg-ll) against CRFsuite's L-BFGS CRF on the same observation predicates.

Run from the project root (NLTK_DATA must point at the corpora)::

    python benchmarks/tagger_crf.py                               # conll2000-pos, C = DEFAULT_C, defaults
    python benchmarks/tagger_crf.py --limit 300 --passes 5 --crfsuite-iterations 20   # a quick check
    python benchmarks/tagger_crf.py --data conll2000-chunk --out runs/tagger_crf_chunk

CRFsuite is not a dependency of egnlp: install it into the environment for
this benchmark only (``pip install python-crfsuite``).

Both models see the same input: every token's item attributes for CRFsuite
are exactly the predicate strings of ``egnlp.features.predicates.token_predicates``
(value 1), which our CRF conjoins with the label.  Both keep only the
(predicate, label) pairs seen in training (CRFsuite:
``feature.possible_states`` and ``feature.possible_transitions`` off) and
have label-bigram transition features; ours also has start and stop
features per label, CRFsuite has none.  The objectives are the same:
ours is sum_i loss_i + C/2 ||w||^2, CRFsuite's sum_i loss_i + c2 ||w||^2, so
c2 = C/2 (c1 = 0).  ``--limit N`` trains on the first N training sentences
(both models), ``--test-limit M`` scores the first M test sentences.

Each model runs in its own subprocess, one after the other, so that its
peak memory is its own:

- ours: ``egnlp.tagger_training.train_crf_tagger`` with trainer ``eg-ll`` (the
  ``EGConfig()`` defaults, ``C = DEFAULT_C``, unless ``--C`` / ``--passes``
  are given) after an untimed warm-up on 20 sentences (JIT compilation or
  loading numba's cache).  After every pass it scores the dev split (as
  ``dev=`` does) and the test split with the same weights, through the
  ``dev_scorer`` hook of ``train_crf_tagger``; scoring time is measured and
  taken out of the wall time.
- CRFsuite: ``pycrfsuite.Trainer(algorithm="lbfgs")`` with CRFsuite's own
  stopping rule (``delta`` = 1e-5 over ``period`` = 10 iterations, or
  ``--crfsuite-iterations``), the test split appended as a holdout group,
  so that CRFsuite tags it with the current weights after every iteration
  (its "Item accuracy").  Every log line is timestamped as it arrives; the
  time between an iteration's report and the end of its holdout evaluation
  is taken out, as for ours.

Columns of the table (``tagger_crf.md``, ``summary.csv``):

- ``train s``: wall seconds of training (ours: ``train_crf_tagger``
  including predicate extraction, the primal and dual computed for the
  records and the stopping rule; CRFsuite: ``append`` of the training
  sequences + ``train``, including predicate extraction, feature generation
  and storing the model), without the benchmark's dev/test scoring;
- ``opt s``: optimisation seconds (ours: the records' ``seconds``, i.e.
  without objectives and scoring; CRFsuite: the wall time of its
  iterations, whose objective evaluations are the optimisation);
- ``passes``: passes (ours) or L-BFGS iterations (CRFsuite; each evaluates
  the objective and gradient once per line-search trial);
- ``s to final ±0.1``: the first pass / iteration whose test accuracy is
  within 0.1 point of the final one (at or above final - 0.1), in train
  seconds and in opt seconds;
- ``test acc`` / ``unknown acc``: token accuracy of the final model on the
  test split, all tokens and tokens whose form is not in the training
  sentences (both models train on the same sentences);
- ``tokens/s``: tagging speed on the test split, predicate extraction and
  Viterbi decoding included (ours: ``Tagger.predict``; CRFsuite:
  ``token_predicates`` + ``pycrfsuite.Tagger.tag`` per sentence);
- ``peak RSS MB``: ``ru_maxrss`` of the subprocess at the end (the corpus,
  the training data, for CRFsuite also the held-out test items).

BLAS runs on one thread (``OPENBLAS_NUM_THREADS`` etc. = 1 unless set), as
the numba kernels and CRFsuite do: timings are of one core.

Files in ``--out`` (default ``runs/tagger_crf``): ``curves.csv`` (model,
step, train seconds, opt seconds, objective, dev and test accuracy per
pass / iteration), ``summary.csv``, ``tagger_crf.png`` (test accuracy vs
train seconds) and ``tagger_crf.md``.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# Serial measurements: one BLAS thread (unless set by the caller), inherited by the subprocesses.  On a
# loaded machine OpenBLAS threads on small vectors (numpy dot / norm, scipy's L-BFGS-B) cost up to 10x.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")
MODELS = ("eg-ll", "crfsuite")
WITHIN = 0.1  # accuracy points


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def have_crfsuite() -> bool:
    try:
        import pycrfsuite  # noqa: F401
    except ImportError:
        return False
    return True


def load(data: str, limit: int | None, test_limit: int | None):
    """(task, train, dev, test): dicts of tokens, labels, pos (None unless the labels are chunks)."""
    from egnlp.corpora import dataset_task
    from egnlp.tagger_training import dataset_columns

    splits = (("train", limit), ("dev", None), ("test", test_limit))
    return (dataset_task(data), *(dict(zip(("tokens", "labels", "pos"), dataset_columns(data, split, n)))
                                  for split, n in splits))


def token_scores(gold: list[list[str]], pred: list[list[str]], tokens: list[list[str]], vocab: set) -> tuple:
    """(accuracy %, unknown-word accuracy % or None, number of unknown tokens)."""
    total = correct = unk = unk_correct = 0
    for g, p, toks in zip(gold, pred, tokens):
        for gl, pl, w in zip(g, p, toks):
            total += 1
            correct += gl == pl
            if w not in vocab:
                unk += 1
                unk_correct += gl == pl
    return 100.0 * correct / max(total, 1), (100.0 * unk_correct / unk if unk else None), unk


def first_within(curve: list[dict], final: float) -> dict | None:
    """The first point of the curve whose test accuracy is at least final - WITHIN."""
    return next((p for p in curve if p["test"] is not None and p["test"] >= final - WITHIN - 1e-9), None)


# ---------------------------------------------------------------------------
# workers (one subprocess each)


def run_ours(args) -> dict:
    from egnlp.settings import CRF_C as DEFAULT_C
    from egnlp.tagger_training import accuracy_scorer, train_crf_tagger

    task, train, dev, test = load(args.data, args.limit, args.test_limit)
    settings = {"C": args.C if args.C is not None else DEFAULT_C}
    if args.passes is not None:
        settings["max_passes"] = args.passes
    vocab = {w for toks in train["tokens"] for w in toks}
    n_test = sum(len(t) for t in test["tokens"])

    log("eg-ll: warm-up on 20 sentences (compiles or loads the JIT cache)")
    pos20 = train["pos"][:20] if train["pos"] is not None else None
    small, _ = train_crf_tagger(train["tokens"][:20], train["labels"][:20], pos20, max_passes=1)
    small.predict(test["tokens"][:5], test["pos"][:5] if test["pos"] is not None else None)
    del small

    # The per-pass score that train_crf_tagger records (its dev_scorer hook): the same weights score
    # the dev and the test split (labels unseen in training count as errors; they occur with --limit).
    scored: list[dict] = []
    clock = {"scoring": 0.0, "start": 0.0}

    def scorer_with_test(featurizer):
        start = time.perf_counter()  # encoding dev and test is scoring time, too
        dev_score = accuracy_scorer(featurizer, dev["tokens"], dev["labels"], dev["pos"])
        test_score = accuracy_scorer(featurizer, test["tokens"], test["labels"], test["pos"])
        clock["scoring"] += time.perf_counter() - start

        def score(w):
            start = time.perf_counter()
            d, t = dev_score(w), test_score(w)
            end = time.perf_counter()
            # train seconds so far: wall time since the start without the scoring done before this call
            scored.append({"wall": start - clock["start"] - clock["scoring"], "dev": d, "test": t})
            clock["scoring"] += end - start
            return d

        return score

    def progress(r):
        gap = f"{r.rel_gap:.2e}" if r.rel_gap is not None else "-"
        log(f"eg-ll: pass {r.passes:3d}  C_t {r.C:g}  opt {r.seconds:7.1f} s  rel.gap {gap}  "
            f"dev {r.dev:.2f}  test {scored[-1]['test']:.2f}")

    log(f"eg-ll: training on {len(train['tokens'])} sentences, settings {settings}")
    clock["start"] = time.perf_counter()
    tagger, result = train_crf_tagger(train["tokens"], train["labels"], train["pos"], trainer="eg-ll",
                                      dev_scorer=scorer_with_test, callbacks=[progress], **settings)
    wall = time.perf_counter() - clock["start"] - clock["scoring"]
    if len(scored) != len(result.records):
        raise RuntimeError(f"{len(scored)} scorings for {len(result.records)} records")
    curve = [{"step": r.passes, "wall": s["wall"], "opt": r.seconds, "objective": r.primal, "dev": s["dev"],
              "test": s["test"], "C_t": r.C, "rel_gap": r.rel_gap} for r, s in zip(result.records, scored)]
    peak_train = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

    log(f"eg-ll: tagging {len(test['tokens'])} test sentences")
    start = time.perf_counter()
    pred = tagger.predict(test["tokens"], test["pos"])
    tag_seconds = time.perf_counter() - start
    acc, unk_acc, n_unk = token_scores(test["labels"], pred, test["tokens"], vocab)
    info = tagger.info
    return {"model": "eg-ll", "task": task, "settings": {**info["config"]}, "train_sentences": len(train["tokens"]),
            "train_tokens": info["train_tokens"], "labels": info["n_labels"], "features": info["n_features"],
            "train_seconds": wall, "opt_seconds": result.final.seconds, "passes": result.final.passes,
            "converged": bool(result.converged), "final_objective": result.final.primal,
            "final_rel_gap": result.final.rel_gap, "scoring_seconds": clock["scoring"],
            "test_sentences": len(test["tokens"]), "test_tokens": n_test, "unknown_tokens": n_unk,
            "test_acc": acc, "unknown_acc": unk_acc, "tag_seconds": tag_seconds,
            "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            "peak_rss_train_mb": peak_train, "curve": curve}


class _TimedTrainer:
    """A pycrfsuite.Trainer whose log lines are timestamped (perf_counter) as they arrive."""

    ITER = re.compile(r"\*\*\*\*\* Iteration #(\d+) \*\*\*\*\*")

    @staticmethod
    def make(verbose: bool):
        import pycrfsuite

        class Trainer(pycrfsuite.Trainer):
            def message(self, message):
                self.stamped.append((time.perf_counter(), message))
                if verbose:
                    sys.stderr.write(message)

        t = Trainer(algorithm="lbfgs", verbose=False)
        t.stamped = []
        return t


def parse_crfsuite_log(stamped: list[tuple[float, str]], t0: float) -> tuple[list[dict], dict]:
    """Per-iteration points (train/opt seconds without holdout evaluation, loss, holdout accuracy) and totals.

    Iteration k's optimisation ends when its report starts (``***** Iteration
    #k *****``) and begins when the previous report ends (its blank line) or,
    for the first, at the ``L-BFGS optimization`` header.
    """
    curve: list[dict] = []
    holdout = 0.0  # seconds spent reporting / evaluating the holdout so far
    opt = 0.0
    opt_start = None
    report_start = None
    current = None
    totals = {"featgen_seconds": None, "features": None, "end_message": None}
    for stamp, msg in stamped:
        line = msg.strip()
        if line.startswith("L-BFGS optimization"):
            opt_start = stamp
        m = _TimedTrainer.ITER.match(line)
        if m:
            opt += stamp - (opt_start if opt_start is not None else stamp)
            report_start = stamp
            current = {"step": int(m.group(1)), "wall": stamp - t0 - holdout, "opt": opt, "objective": None,
                       "dev": None, "test": None}
            curve.append(current)
            continue
        if current is not None and report_start is not None:
            if line.startswith("Loss:"):
                current["objective"] = float(line.split()[1])
            elif line.startswith("Item accuracy:"):
                num, den = re.match(r"Item accuracy: (\d+) / (\d+)", line).groups()
                current["test"] = 100.0 * int(num) / int(den)
            elif msg == "\n":
                holdout += stamp - report_start
                report_start = None
                opt_start = stamp
        if line.startswith("Number of features:"):
            totals["features"] = int(line.split(":")[1])
        if line.startswith("L-BFGS terminated") or line.startswith("L-BFGS resulted"):
            totals["end_message"] = line
    totals["holdout_seconds"] = holdout
    return curve, totals


def run_crfsuite(args) -> dict:
    from importlib.metadata import version

    import pycrfsuite

    from egnlp.settings import CRF_C as DEFAULT_C
    from egnlp.features.predicates import token_predicates

    task, train, dev, test = load(args.data, args.limit, args.test_limit)
    del dev
    use_pos = train["pos"] is not None
    C = args.C if args.C is not None else DEFAULT_C
    params = {"c1": 0.0, "c2": C / 2.0, "feature.possible_states": False, "feature.possible_transitions": False}
    if args.crfsuite_iterations is not None:
        params["max_iterations"] = args.crfsuite_iterations
    vocab = {w for toks in train["tokens"] for w in toks}
    n_test = sum(len(t) for t in test["tokens"])

    def xseq(split: dict, s: int):
        return token_predicates(split["tokens"][s], split["pos"][s] if use_pos else None, use_pos)

    trainer = _TimedTrainer.make(args.verbose)
    trainer.set_params(params)
    log(f"crfsuite: appending {len(test['tokens'])} test sentences as the holdout group (untimed)")
    for s in range(len(test["tokens"])):
        trainer.append(xseq(test, s), test["labels"][s], group=1)
    log(f"crfsuite: training on {len(train['tokens'])} sentences, params {params}")
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "model.crfsuite")
        t0 = time.perf_counter()
        for s in range(len(train["tokens"])):
            trainer.append(xseq(train, s), train["labels"][s], group=0)
        append_seconds = time.perf_counter() - t0
        trainer.train(path, holdout=1)
        end = time.perf_counter()
        curve, totals = parse_crfsuite_log(trainer.stamped, t0)
        wall = end - t0 - totals["holdout_seconds"]
        peak_train = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        shown = curve[:: max(1, len(curve) // 20)]
        for p in shown + [q for q in curve[-1:] if q is not shown[-1]]:
            log(f"crfsuite: iteration {p['step']:4d}  opt {p['opt']:7.1f} s  loss {p['objective']:.2f}  "
                f"test {p['test']:.2f}")
        tagger = pycrfsuite.Tagger()
        tagger.open(path)
        info = tagger.info()
        n_state, n_trans = len(info.state_features), len(info.transitions)
        log(f"crfsuite: tagging {len(test['tokens'])} test sentences")
        tagger.tag(xseq(test, 0))
        start = time.perf_counter()
        pred = [tagger.tag(xseq(test, s)) for s in range(len(test["tokens"]))]
        tag_seconds = time.perf_counter() - start
        tagger.close()
    acc, unk_acc, n_unk = token_scores(test["labels"], pred, test["tokens"], vocab)
    last = curve[-1] if curve else {}
    return {"model": "crfsuite", "task": task, "settings": {**params, "version": version("python-crfsuite")},
            "train_sentences": len(train["tokens"]), "train_tokens": sum(len(t) for t in train["tokens"]),
            "labels": len(info.labels), "features": totals["features"], "active_features": n_state + n_trans,
            "train_seconds": wall, "append_seconds": append_seconds, "opt_seconds": last.get("opt"),
            "passes": last.get("step"), "converged": totals["end_message"], "final_objective": last.get("objective"),
            "final_rel_gap": None, "scoring_seconds": totals["holdout_seconds"],
            "test_sentences": len(test["tokens"]), "test_tokens": n_test, "unknown_tokens": n_unk,
            "test_acc": acc, "unknown_acc": unk_acc, "holdout_final_acc": last.get("test"), "tag_seconds": tag_seconds,
            "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            "peak_rss_train_mb": peak_train, "curve": curve}


# ---------------------------------------------------------------------------
# report


def md_table(headers: list[str], rows: list[list]) -> str:
    lines = ["| " + " | ".join(headers) + " |", "|:---|" + "---:|" * (len(headers) - 1)]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def f(value, fmt: str) -> str:
    return "-" if value is None else format(value, fmt)


def summary_row(r: dict) -> dict:
    reached = first_within(r["curve"], r["test_acc"])
    return {"model": r["model"], "train_sentences": r["train_sentences"], "passes": r["passes"],
            "train_seconds": r["train_seconds"], "opt_seconds": r["opt_seconds"],
            "train_seconds_to_final": reached["wall"] if reached else None,
            "opt_seconds_to_final": reached["opt"] if reached else None,
            "step_to_final": reached["step"] if reached else None,
            "test_acc": r["test_acc"], "unknown_acc": r["unknown_acc"],
            "tokens_per_second": r["test_tokens"] / r["tag_seconds"], "peak_rss_mb": r["peak_rss_mb"],
            "final_objective": r["final_objective"], "features": r["features"]}


def report(results: list[dict], args, load_avg: float) -> str:
    rows = [summary_row(r) for r in results]
    first = results[0]
    ours = next((r for r in results if r["model"] == "eg-ll"), None)
    crf = next((r for r in results if r["model"] == "crfsuite"), None)
    lines = [f"Data set `{args.data}` ({first['task']}): {first['train_sentences']:,} training sentences "
             f"({first['train_tokens']:,} tokens), {first['test_sentences']:,} test sentences "
             f"({first['test_tokens']:,} tokens, {first['unknown_tokens']:,} unknown); {first['labels']} labels; "
             f"{os.cpu_count()} CPUs, load average {load_avg:.2f} at the start."]
    if ours:
        s = ours["settings"]
        lines.append(f"eg-ll: C = {s['C']:g}, max_passes = {s['max_passes']}, tol = {s['tol']:g}, "
                     f"anneal = {s['anneal']}; {ours['features']:,} features; converged: {ours['converged']} "
                     f"(last relative duality gap {f(ours['final_rel_gap'], '.2e')}).")
    if crf:
        s = crf["settings"]
        lines.append(f"CRFsuite {s['version']} L-BFGS: c1 = 0, c2 = {s['c2']:g} (= C/2); "
                     f"{f(crf['features'], ',')} features generated, {crf['active_features']:,} active; "
                     f"stopped: {crf['converged']}; holdout accuracy of its last iteration "
                     f"{f(crf['holdout_final_acc'], '.2f')}.")
    lines += ["", md_table(
        ["model", "passes / iters", "train s", "opt s", f"train s to final ±{WITHIN:g}",
         f"opt s to final ±{WITHIN:g}", "test acc", "unknown acc", "tokens/s", "peak RSS MB", "final objective"],
        [[r["model"], r["passes"], f(r["train_seconds"], ".1f"), f(r["opt_seconds"], ".1f"),
          f(r["train_seconds_to_final"], ".1f") + (f" (step {r['step_to_final']})" if r["step_to_final"] is not None
                                                    else ""),
          f(r["opt_seconds_to_final"], ".1f"), f(r["test_acc"], ".2f"), f(r["unknown_acc"], ".2f"),
          f(r["tokens_per_second"], ",.0f"), f(r["peak_rss_mb"], ".0f"), f(r["final_objective"], ".2f")]
         for r in rows]),
        "", "Objectives: eg-ll's primal at the target C (with start/stop features), CRFsuite's reported loss "
        "(no start/stop features); steps are passes (eg-ll) or L-BFGS iterations (CRFsuite)."]
    return "\n".join(lines)


def write_files(results: list[dict], text: str, out: Path) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / "curves.csv", out / "summary.csv", out / "tagger_crf.md", out / "tagger_crf.png"]
    with open(paths[0], "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["model", "step", "train_seconds", "opt_seconds", "objective", "dev_acc", "test_acc"])
        for r in results:
            for p in r["curve"]:
                w.writerow([r["model"], p["step"], f"{p['wall']:.3f}", f"{p['opt']:.3f}",
                            "" if p["objective"] is None else f"{p['objective']:.6f}",
                            "" if p["dev"] is None else f"{p['dev']:.4f}",
                            "" if p["test"] is None else f"{p['test']:.4f}"])
    rows = [summary_row(r) for r in results]
    with open(paths[1], "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    paths[2].write_text(text + "\n")

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5))
    for r in results:
        pts = [(p["wall"], p["test"]) for p in r["curve"] if p["test"] is not None]
        if pts:
            ax.plot(*zip(*pts), marker=".", label=f"{r['model']} (final {r['test_acc']:.2f})")
    finals = [r["test_acc"] for r in results]
    ax.set_ylim(max(0.0, min(finals) - 5.0), min(100.0, max(finals) + 1.0))
    ax.set_xlabel("training seconds (without test scoring)")
    ax.set_ylabel("test token accuracy (%)")
    ax.set_title(f"{results[0]['task']} tagging: test accuracy vs time")
    ax.grid(True, alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(paths[3], dpi=120)
    plt.close(fig)
    return paths


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", default="conll2000-pos", help="a tagging data set (default: conll2000-pos)")
    ap.add_argument("--limit", type=int, help="train on the first N training sentences (default: all)")
    ap.add_argument("--test-limit", type=int, help="score the first M test sentences (default: all)")
    ap.add_argument("--passes", type=int, help="eg-ll pass limit (default: EGConfig().max_passes)")
    ap.add_argument("--C", type=float, help="regularisation constant (default: egnlp.settings.CRF_C); c2 = C/2")
    ap.add_argument("--crfsuite-iterations", type=int,
                    help="CRFsuite max_iterations (default: none, CRFsuite's own stopping rule)")
    ap.add_argument("--models", default=",".join(MODELS), help="comma-separated: eg-ll, crfsuite (default: both)")
    ap.add_argument("--out", type=Path, default=ROOT / "runs" / "tagger_crf", help="output folder")
    ap.add_argument("--verbose", action="store_true", help="echo CRFsuite's log to stderr")
    ap.add_argument("--worker", choices=MODELS, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        print(json.dumps(run_ours(args) if args.worker == "eg-ll" else run_crfsuite(args)))
        return

    models = [m.strip() for m in args.models.split(",") if m.strip()]
    unknown = [m for m in models if m not in MODELS]
    if unknown or not models:
        raise SystemExit(f"unknown models {unknown}: use {', '.join(MODELS)}")
    if "crfsuite" in models and not have_crfsuite():
        print("python-crfsuite is missing: install it for this benchmark with "
              f"`{sys.executable} -m pip install python-crfsuite`", file=sys.stderr)
        sys.exit(1)
    load_avg = os.getloadavg()[0]
    log(f"{os.cpu_count()} CPUs, load average {load_avg:.2f} at the start")
    results = []
    for model in models:
        cmd = [sys.executable, "-m", "benchmarks.tagger_crf", "--worker", model, "--data", args.data]
        for flag, value in (("--limit", args.limit), ("--test-limit", args.test_limit), ("--passes", args.passes),
                            ("--C", args.C), ("--crfsuite-iterations", args.crfsuite_iterations)):
            cmd += [flag, str(value)] if value is not None else []
        cmd += ["--verbose"] if args.verbose else []
        results.append(json.loads(subprocess.run(cmd, cwd=ROOT, check=True, stdout=subprocess.PIPE,
                                                 text=True).stdout))
    text = report(results, args, load_avg)
    print(text)
    for path in write_files(results, text, args.out):
        log(f"wrote {path}")
    log(f"done; load average {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
