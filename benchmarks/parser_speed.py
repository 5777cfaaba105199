"""Speed, memory and accuracy of parser training and parsing, printed as Markdown tables.

Run from the project root (NLTK_DATA must point at the corpora)::

    python benchmarks/parser_speed.py                       # es, alphabet and hash22, EGConfig() defaults
    python benchmarks/parser_speed.py --passes 3 --no-cold  # a quick check
    python benchmarks/parser_speed.py --modes alphabet,hash22,hash20 --passes 100 --out-json speed.json

Each feature mode runs in its own subprocess (one after the other), so that
its peak memory is its own.  A subprocess first trains and parses a few
sentences, so that JIT compilation (or loading the on-disk cache) is not
timed; then it trains with ``egnlp.parser_training.train_parser`` exactly as ``egnlp
parser train --data NAME`` does (``EGConfig()`` defaults unless ``--C`` /
``--passes`` are given), parses the test split and re-extracts the features
once more to time and size them.  Every kernel is serial: one core per job.

Table 1, feature ids per mode: number of features; feature entries (ids over
all arcs of the training set); CSR megabytes (``PartFeatures.nbytes``);
extraction seconds (encode + fit + part_features); theta + mu megabytes (two
float64 per arc cell); dev UAS of the last pass and test UAS (punctuation
counted); training seconds (all of ``train_parser``).

Table 2, EG speed: optimisation seconds (the records' ``seconds``, without
objectives and dev scoring) per effective iteration; effective iterations
until the relative duality gap first falls to ``--gap`` ("not reached" if it
never does: raise ``--passes``); the last gap; wall seconds of
``train_parser`` (extraction, objectives and dev UAS included); peak RSS of
the subprocess after training (``ru_maxrss``).

Table 3, parsing: seconds for ``Parser.parse`` on the test split, sentences
and tokens per second, test UAS with and without punctuation
(``egnlp.parser.attachment.attachment_scores``).

Table 4, compilation cache: fresh interpreters import the package and time the
first call of every kernel (train 1 pass on two tiny sentences, parse them)
and a second, compiled call: twice with numba's default on-disk cache
(``cache=True``), once with ``NUMBA_CACHE_DIR`` set to an empty folder, i.e. a
cold compile.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def feature_mode(name: str) -> tuple[str, int]:
    """``alphabet`` -> ("alphabet", 22); ``hashNN`` -> ("hash", NN)."""
    if name == "alphabet":
        return "alphabet", 22
    if name.startswith("hash") and name[4:].isdigit():
        return "hash", int(name[4:])
    raise SystemExit(f"unknown mode {name!r}: use alphabet or hashNN (e.g. hash22)")


def run_mode(data: str, mode: str, settings: dict, gap: float) -> dict:
    """Train, parse and extract features for one mode in this process; return the measurements."""
    from egnlp.corpora import dataset_root, load_dataset
    from egnlp.parser_training import train_parser
    from egnlp.features.arc_featurizer import ArcFeaturizer
    from egnlp.parser.attachment import attachment_scores

    fmode, bits = feature_mode(mode)
    train, dev, test = (load_dataset(data, split) for split in ("train", "dev", "test"))
    root = dataset_root(data)
    kwargs = dict(root=root, feature_mode=fmode, hash_bits=bits)

    log(f"{mode}: warm-up (compiles or loads the JIT cache)")
    small, _ = train_parser(train[:20], dev[:5], max_passes=1, **kwargs)
    small.parse(test[:5])
    del small

    def progress(r):
        dev_uas = f"{r.dev:.2f}" if r.dev is not None else "-"
        gap = f"{r.rel_gap:.2e}" if r.rel_gap is not None else f"- (C annealed to {r.C:g})"
        log(f"{mode}: pass {r.passes:3d}  eff.it {r.eff_iters:6.2f}  opt {r.seconds:7.1f} s  "
            f"rel.gap {gap}  dev {dev_uas}")

    log(f"{mode}: training on {len(train)} sentences, settings {settings or 'EGConfig() defaults'}")
    start = time.perf_counter()
    parser, result = train_parser(train, dev, callbacks=[progress], **kwargs, **settings)
    train_seconds = time.perf_counter() - start
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    final = result.final
    reached = next((r for r in result.records if r.rel_gap is not None and r.rel_gap <= gap
                    and r.C == parser.info["config"]["C"]), None)
    del result

    log(f"{mode}: parsing {len(test)} test sentences")
    parser.parse(test[:10])
    start = time.perf_counter()
    parsed = parser.parse(test)
    parse_seconds = time.perf_counter() - start
    scores = attachment_scores(test, parsed)

    log(f"{mode}: re-extracting the training features")
    start = time.perf_counter()
    featurizer = ArcFeaturizer(fmode, bits)
    encoded = featurizer.encode(train)
    featurizer.fit(encoded, [s.heads for s in train])
    pf = featurizer.part_features(encoded)
    extract_seconds = time.perf_counter() - start
    return {
        "mode": mode,
        "trainer": parser.info.get("trainer"),
        "config": parser.info["config"],
        "root": root,
        "n_features": featurizer.n_features,
        "feature_entries": int(pf.feat_ids.size),
        "csr_mb": pf.nbytes / 2**20,
        "extract_seconds": extract_seconds,
        "n_parts": pf.n_parts,
        "theta_mu_mb": pf.n_parts * 8 * 2 / 2**20,
        "dev_uas": final.dev,
        "train_seconds": train_seconds,
        "opt_seconds": final.seconds,
        "eff_iters": final.eff_iters,
        "passes": final.passes,
        "converged": parser.info["converged"],
        "final_rel_gap": final.rel_gap,
        "gap_target": gap,
        "eff_iters_to_gap": reached.eff_iters if reached else None,
        "opt_seconds_to_gap": reached.seconds if reached else None,
        "peak_rss_mb": peak_mb,
        "test_sentences": len(test),
        "test_tokens": scores["tokens"],
        "parse_seconds": parse_seconds,
        "test_uas": scores["uas"],
        "test_uas_nopunct": scores["uas_nopunct"],
    }


COMPILE_PROBE = """
import json, time
t0 = time.perf_counter()
from egnlp.corpora import Sentence
from egnlp.parser_training import train_parser
t1 = time.perf_counter()
rows = [("1", "El", "el", "d", "da", "_", "2", "spec", "_", "_"),
        ("2", "perro", "perro", "n", "nc", "_", "3", "suj", "_", "_"),
        ("3", "come", "comer", "v", "vm", "_", "0", "sentence", "_", "_"),
        ("4", ".", ".", "F", "Fp", "_", "3", "f", "_", "_")]
sents = [Sentence(tuple(rows)), Sentence(tuple(rows[:3]))]
def call():
    start = time.perf_counter()
    parser, _ = train_parser(sents, sents, root="multi", max_passes=1)
    parser.parse(sents)
    return time.perf_counter() - start
first = call()
print(json.dumps({"import": t1 - t0, "first": first, "second": call()}))
"""


def time_compile(label: str, cache_dir: str | None = None) -> dict:
    """Run the probe in a fresh interpreter (optionally with its own NUMBA_CACHE_DIR)."""
    env = dict(os.environ)
    if cache_dir is not None:
        env["NUMBA_CACHE_DIR"] = cache_dir
    log(f"compile probe: {label}")
    out = subprocess.run([sys.executable, "-c", COMPILE_PROBE], cwd=ROOT, env=env, check=True,
                         capture_output=True, text=True).stdout
    return {"run": label, **json.loads(out)}


def md_table(headers: list[str], rows: list[list]) -> str:
    lines = ["| " + " | ".join(headers) + " |", "|:---|" + "---:|" * (len(headers) - 1)]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def report(results: list[dict], compiles: list[dict], data: str, load: float) -> str:
    def f(value, fmt):
        return "-" if value is None else format(value, fmt)

    first = results[0]
    passes = first["config"]["max_passes"]
    out = [f"Data set `{data}` (root: {first['root']}); trainer {first.get('trainer')} with C={first['config']['C']}, "
           f"max_passes={passes}, tol={first['config']['tol']}, anneal={first['config']['anneal']}; "
           f"{first['n_parts']:,} arc cells in the training set; {os.cpu_count()} CPUs, "
           f"load average {load:.2f} at the start.", "",
           "Table 1. Feature ids: alphabet vs hashing", "",
           md_table(["mode", "features", "entries", "CSR MB", "extract s", "theta+mu MB", "dev UAS",
                     "test UAS", "train s"],
                    [[r["mode"], f"{r['n_features']:,}", f"{r['feature_entries']:,}", f(r["csr_mb"], ".0f"),
                      f(r["extract_seconds"], ".1f"), f(r["theta_mu_mb"], ".1f"), f(r["dev_uas"], ".2f"),
                      f(r["test_uas"], ".2f"), f(r["train_seconds"], ".0f")] for r in results]),
           "", "Table 2. Online EG speed", "",
           md_table(["mode", "passes", "eff. iters", "opt s", "s / eff. iter",
                     f"eff. iters to gap {first['gap_target']:g}", "last rel. gap", "wall s", "peak RSS MB"],
                    [[r["mode"], r["passes"], f(r["eff_iters"], ".2f"), f(r["opt_seconds"], ".0f"),
                      f(r["opt_seconds"] / r["eff_iters"] if r["eff_iters"] else None, ".2f"),
                      f(r["eff_iters_to_gap"], ".2f") if r["eff_iters_to_gap"] is not None
                      else f"not reached in {r['passes']} passes",
                      f(r["final_rel_gap"], ".2e"), f(r["train_seconds"], ".0f"), f(r["peak_rss_mb"], ".0f")]
                     for r in results]),
           "", "Table 3. Parsing the test split (Parser.parse)", "",
           md_table(["mode", "sentences", "tokens", "seconds", "sent/s", "tokens/s", "UAS", "UAS no punct"],
                    [[r["mode"], r["test_sentences"], r["test_tokens"], f(r["parse_seconds"], ".2f"),
                      f(r["test_sentences"] / r["parse_seconds"], ".0f"),
                      f(r["test_tokens"] / r["parse_seconds"], ".0f"), f(r["test_uas"], ".2f"),
                      f(r["test_uas_nopunct"], ".2f")] for r in results])]
    if compiles:
        out += ["", "Table 4. JIT compilation in a fresh interpreter (tiny input)", "",
                md_table(["run", "import s", "first call s", "second call s"],
                         [[c["run"], f(c["import"], ".2f"), f(c["first"], ".2f"), f(c["second"], ".3f")]
                          for c in compiles])]
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", default="es", help="named data set (default: es)")
    ap.add_argument("--modes", default="alphabet,hash22", help="comma-separated: alphabet, hashNN")
    ap.add_argument("--C", type=float, help="regularisation constant (default: EGConfig().C)")
    ap.add_argument("--passes", type=int, help="pass limit (default: EGConfig().max_passes)")
    ap.add_argument("--gap", type=float, default=1e-3, help="relative duality gap for Table 2 (default: 1e-3)")
    ap.add_argument("--no-cold", action="store_true", help="skip the cold-compile run of Table 4")
    ap.add_argument("--out-json", type=Path, help="also write the numbers to this JSON file")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    args = ap.parse_args()
    settings = {k: v for k, v in (("C", args.C), ("max_passes", args.passes)) if v is not None}
    if args.worker:
        print(json.dumps(run_mode(args.data, args.worker, settings, args.gap)))
        return

    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    for mode in modes:
        feature_mode(mode)
    load = os.getloadavg()[0]
    log(f"{os.cpu_count()} CPUs, load average {load:.2f} at the start")
    results = []
    for mode in modes:
        cmd = [sys.executable, "-m", "benchmarks.parser_speed", "--worker", mode, "--data", args.data,
               "--gap", str(args.gap)]
        cmd += ["--C", str(args.C)] if args.C is not None else []
        cmd += ["--passes", str(args.passes)] if args.passes is not None else []
        results.append(json.loads(subprocess.run(cmd, cwd=ROOT, check=True, stdout=subprocess.PIPE,
                                                 text=True).stdout))
    compiles = [time_compile("default cache, 1st process"), time_compile("default cache, 2nd process")]
    if not args.no_cold:
        with tempfile.TemporaryDirectory() as empty:
            compiles.append(time_compile("empty NUMBA_CACHE_DIR (cold)", empty))
    text = report(results, compiles, args.data, load)
    print(text)
    if args.out_json:
        args.out_json.write_text(json.dumps({"data": args.data, "settings": settings, "modes": results,
                                             "compile": compiles, "load_average_start": load},
                                            indent=2) + "\n")
    log(f"done; load average {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
