"""Choose C on dev: a warm-started sweep of C values, printed as a Markdown table.

Collins et al. (2008), Sec. 7.1.2 and Table 3: optimise the largest C to a
relative duality gap ``--tol``, then multiply C by ``--beta`` and continue
from the previous dual solution, down to ``--C-min``.  For every C the table
gives the effective iterations it took, the running total, and the dev and
test UAS (punctuation counted) of the model at that C.

    python benchmarks/parser_c_sweep.py --data es                   # 1000 down to 4, beta 0.7
    python benchmarks/parser_c_sweep.py --data wsj --C-max 100 --C-min 10
"""

from __future__ import annotations

import argparse
import sys
import time

from corpora import dataset_root, load_dataset
from egnlp.api import uas_scorer
from features.arcs import ArcFeaturizer
from parser.problem import ParsingProblem
from training.eg import EGConfig, fit_eg_ll


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default="es")
    ap.add_argument("--C-max", type=float, default=1000.0)
    ap.add_argument("--C-min", type=float, default=4.0)
    ap.add_argument("--beta", type=float, default=0.7)
    ap.add_argument("--tol", type=float, default=1e-3)
    ap.add_argument("--max-passes", type=int, default=200, help="pass limit for each C")
    args = ap.parse_args(argv)

    train, dev, test = (load_dataset(args.data, split) for split in ("train", "dev", "test"))
    root = dataset_root(args.data)
    featurizer = ArcFeaturizer()
    encoded = featurizer.encode(train)
    heads = [s.heads for s in train]
    featurizer.fit(encoded, heads)
    problem = ParsingProblem(featurizer.part_features(encoded), heads, root)
    dev_uas, test_uas = uas_scorer(featurizer, dev, root), uas_scorer(featurizer, test, root)

    print(f"data set {args.data}: train {len(train)}, dev {len(dev)}, test {len(test)} sentences; "
          f"C from {args.C_max:g} times {args.beta:g} down to {args.C_min:g}, tolerance {args.tol:g}\n")
    print("| C | eff. iters | total eff. iters | rel. gap | dev UAS | test UAS | seconds |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    state, total, C = None, 0.0, args.C_max
    best = (-1.0, None)
    while C >= args.C_min * (1 - 1e-9):
        start = time.perf_counter()
        result = fit_eg_ll(problem, config=EGConfig(C=C, max_passes=args.max_passes, tol=args.tol, anneal=False),
                           state=state)
        state = result.state
        total += result.final.eff_iters
        d, t = dev_uas(result.weights), test_uas(result.weights)
        best = max(best, (d, C))
        print(f"| {C:.3f} | {result.final.eff_iters:.2f} | {total:.2f} | {result.final.rel_gap:.1e} | "
              f"{d:.2f} | {t:.2f} | {time.perf_counter() - start:.0f} |", flush=True)
        C *= args.beta
    print(f"\nbest dev UAS {best[0]:.2f} at C = {best[1]:.3f}", file=sys.stdout)


if __name__ == "__main__":
    main()
