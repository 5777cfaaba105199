"""Distributed EG training (CoCoA+ on a Dask cluster) against one process: time to a relative duality gap.

Run from the project root, with the ``dask`` extra installed
(``EGNLP_EXTRAS=dask ./run ...`` or ``pip install -e .[dask]``)::

    python benchmarks/dask_training.py                         # es, eg-ll, C = 20, gaps 1e-1 .. 1e-3
    python benchmarks/dask_training.py --limit 500 --max-seconds 300 --objective mm --C 100

The arc problem of the training split of ``--data`` is trained twice on the
same objective, C and tolerance (``--tol``, default 1e-3): by online EG in
this process (:func:`egnlp.training.eg.fit_eg`, one core) and by CoCoA+ with
``--workers`` shards (default 2) on a new ``distributed.LocalCluster`` of that
many single-threaded worker processes
(:func:`egnlp.distributed.fit_cocoa`; one round is one EG pass on every
shard).  For each relative gap of ``--gaps`` the table gives the passes
(rounds) and the seconds to reach it: optimisation seconds as the records
count them (the evaluation of the objectives excluded) and wall seconds of
the whole run up to that record (objectives included, cluster start-up
not).  Below it: the final primals of the two runs and their relative
difference.  Both runs report primal, dual and gap of the whole problem
after every pass or round.
"""

from __future__ import annotations

import argparse
import time


def reached(records, walls, gap: float) -> tuple[str, str, str]:
    """(passes, optimisation s, wall s) at the first record at or below ``gap``, or 'not reached'."""
    for record, wall in zip(records, walls):
        if record.rel_gap is not None and record.rel_gap <= gap:
            return str(record.passes), f"{record.seconds:,.0f}", f"{wall:,.0f}"
    return "not reached", "", ""


def show_gap(gap: float | None) -> str:
    """A relative gap, or why there is none (C still annealing towards its target)."""
    return "none yet (C annealing)" if gap is None else f"{gap:.2e}"


class WallClock:
    """A training callback that keeps the wall time since its start at every record."""

    def __init__(self) -> None:
        self.start = time.perf_counter()
        self.walls: list[float] = []

    def __call__(self, record) -> None:
        self.walls.append(time.perf_counter() - self.start)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", default="es", help="named parsing data set (default es)")
    ap.add_argument("--limit", type=int, help="train on the first N sentences only")
    ap.add_argument("--objective", choices=("ll", "mm"), default="ll", help="ll (eg-ll, default) or mm (eg-mm)")
    ap.add_argument("--C", type=float, help="regularisation constant (default 20 for ll, 100 for mm)")
    ap.add_argument("--tol", type=float, default=1e-3, help="relative gap at which both runs stop (default 1e-3)")
    ap.add_argument("--gaps", default="1e-1,1e-2,1e-3", help="gaps to report (default 1e-1,1e-2,1e-3)")
    ap.add_argument("--passes", type=int, default=200, help="pass (round) limit of each run (default 200)")
    ap.add_argument("--max-seconds", type=float, help="optimisation budget of each run (default none)")
    ap.add_argument("--workers", type=int, default=2, help="shards and worker processes (default 2)")
    opts = ap.parse_args()

    import distributed

    from egnlp.parser_training import build_parsing_problem
    from egnlp.corpora import guess_root, load_dataset
    from egnlp.distributed import fit_cocoa
    from egnlp.training.configs import EGConfig
    from egnlp.training.eg import fit_eg

    train = load_dataset(opts.data, "train")[: opts.limit]
    root = guess_root(train)
    C = opts.C if opts.C is not None else (20.0 if opts.objective == "ll" else 100.0)
    config = EGConfig(C=C, tol=opts.tol, max_passes=opts.passes, max_seconds=opts.max_seconds)
    featurizer, problem, _ = build_parsing_problem(train, root)
    print(f"{opts.data}: {len(train)} sentences, {problem.features.n_parts:,} arc parts, objective "
          f"{opts.objective}, C = {C:g}, tol {opts.tol:g}", flush=True)

    clock = WallClock()
    local = fit_eg(problem, opts.objective, config=config, callbacks=(clock,))
    local_walls = clock.walls
    print(f"one process: {local.final.passes} passes, rel. gap {show_gap(local.final.rel_gap)}", flush=True)
    del problem
    with distributed.LocalCluster(n_workers=opts.workers, processes=True, threads_per_worker=1,
                                  dashboard_address=None) as cluster, distributed.Client(cluster) as client:
        clock = WallClock()
        dist = fit_cocoa(client, featurizer, train, root, "projective", opts.objective, opts.workers, config=config,
                         callbacks=(clock,))
        dist_walls = clock.walls
    print(f"CoCoA+, {opts.workers} workers: {dist.final.passes} rounds, rel. gap {show_gap(dist.final.rel_gap)}\n")

    gaps = [float(g) for g in opts.gaps.split(",")]
    print("| run | " + " | ".join(f"to {g:g}: passes, opt. s, wall s" for g in gaps) + " | final rel. gap |")
    print("|---|" + "---|" * (len(gaps) + 1))
    for name, result, walls in (("one process (online EG)", local, local_walls),
                                (f"CoCoA+, {opts.workers} workers", dist, dist_walls)):
        cells = [" / ".join(x for x in reached(result.records, walls, g) if x) for g in gaps]
        print(f"| {name} | " + " | ".join(cells) + f" | {show_gap(result.final.rel_gap)} |")
    diff = abs(dist.final.primal - local.final.primal) / abs(local.final.primal)
    print(f"\nFinal primal: one process {local.final.primal:,.4f}, CoCoA+ {dist.final.primal:,.4f} "
          f"(relative difference {diff:.1e}).")


if __name__ == "__main__":
    main()
