"""Decoding a corpus in blocks of sentences on several cores, in input order.

:func:`map_blocks` splits a list of items (sentences) into consecutive
blocks and runs ``fn(model, block)`` on each in a pool of worker
processes. The model and the items reach a worker once, when it starts
(forked: nothing is pickled; elsewhere through the pool's initializer), and
a task is only the bounds of its block, so what crosses between processes
is the results. Every item is decoded by the same code as in one process,
so the output equals ``fn(model, items)``.
"""

from __future__ import annotations

import gc
import math
import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor
from typing import Any, Callable, Sequence

BLOCKS_PER_JOB = 8  # blocks of unequal cost even out across the workers
MAX_BLOCK = 512  # items per block at most
MIN_ITEMS = 64  # fewer items than this are decoded in the calling process

_worker: tuple[Callable[[Any, Sequence[Any]], list], Any, Sequence[Any]] | None = None


def resolve_jobs(jobs: int | None) -> int:
    """The number of processes for ``jobs`` (None: every core, ``os.cpu_count()``).

    Raises:
        ValueError: jobs below 1.
    """
    if jobs is None:
        return os.cpu_count() or 1
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        raise ValueError(f"jobs must be a whole number >= 1, not {jobs!r}")
    return jobs


def _start(fn: Callable[[Any, Sequence[Any]], list], model: Any, items: Sequence[Any]) -> None:
    global _worker
    _worker = (fn, model, items)


def _run(bounds: tuple[int, int]) -> list:
    assert _worker is not None
    fn, model, items = _worker
    return fn(model, items[bounds[0]:bounds[1]])


def map_blocks(fn: Callable[[Any, Sequence[Any]], list], model: Any, items: Sequence[Any],
               jobs: int | None = 1) -> list:
    """``fn(model, items)`` computed in blocks on ``jobs`` processes (None: every core), results in input order.

    ``fn`` is a module-level function giving one result per item of its
    block. With one job, or few items, it runs in the calling process.
    """
    jobs = resolve_jobs(jobs)
    items = list(items)
    if jobs == 1 or len(items) < MIN_ITEMS:
        return fn(model, items)
    # The first item is decoded here: the kernels it loads (compiled, or read from Numba's cache) are then
    # inherited by forked workers instead of being loaded again in each.
    out: list = fn(model, items[:1])
    size = max(1, min(MAX_BLOCK, math.ceil((len(items) - 1) / (jobs * BLOCKS_PER_JOB))))
    bounds = [(start, min(start + size, len(items))) for start in range(1, len(items), size)]
    methods = multiprocessing.get_all_start_methods()
    context = multiprocessing.get_context("fork" if "fork" in methods else None)
    gc.freeze()  # the objects the workers inherit stay out of their collections, and their pages shared
    try:
        with ProcessPoolExecutor(max_workers=min(jobs, len(bounds)), mp_context=context, initializer=_start,
                                 initargs=(fn, model, items)) as pool:
            for results in pool.map(_run, bounds):
                out.extend(results)
    finally:
        gc.unfreeze()
    if len(out) != len(items):
        raise RuntimeError(f"{len(out)} results for {len(items)} items")
    return out
