"""Decoding a corpus in blocks of sentences on several cores, in input order.

:func:`map_blocks` splits a list of items (sentences) into consecutive
blocks and runs ``fn(model, block)`` on each in a pool of worker
processes. The model and the items reach a worker once, when it starts
(forked: nothing is pickled; elsewhere through the pool's initializer), and
a task is only the bounds of its block, so what crosses between processes
is the results. Every item is decoded by the same code as in one process,
so the output equals ``fn(model, items)``.

Workers end with the process that started them, also when it is killed
(``kill -9``): a worker left behind would hold what the parent had open (an
output file being written, its lock) and block on a pipe no one reads. On
Linux a worker asks the kernel for SIGKILL when its parent ends
(``prctl(PR_SET_PDEATHSIG)``); elsewhere a thread of the worker polls its
parent's pid every :data:`PARENT_POLL_SECONDS` seconds.  (Linux sends the
signal when the *thread* that forked the worker ends: the pools here live
inside one call, on the calling thread, so that thread outlives them.)
"""

from __future__ import annotations

import gc
import itertools
import math
import multiprocessing
import os
import sys
import threading
import time
from concurrent.futures import ProcessPoolExecutor
from collections import deque
from typing import Any, Callable, Iterable, Iterator, Sequence

BLOCKS_PER_JOB = 8  # blocks of unequal cost even out across the workers
MAX_BLOCK = 512  # items per block at most
MIN_ITEMS = 64  # fewer items than this are decoded in the calling process
PARENT_POLL_SECONDS = 0.5  # without prctl, how often a worker checks that its parent lives
PR_SET_PDEATHSIG = 1  # <linux/prctl.h>

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


def _start(parent: int, fn: Callable[[Any, Sequence[Any]], list], model: Any, items: Sequence[Any]) -> None:
    """A worker's initializer: end with the process ``parent``; keep the function, model and items."""
    global _worker
    _die_with_parent(parent)
    _worker = (fn, model, items)


def _die_with_parent(parent: int) -> None:
    """End this process when the process ``parent`` (its parent's pid, taken before the fork) ends."""
    if sys.platform.startswith("linux") and _set_parent_death_signal():
        # The parent may have died between the fork and the prctl: the signal would never come, and the
        # worker has been adopted by another process (init or a subreaper) already.
        if os.getppid() != parent:
            os._exit(1)
        return
    threading.Thread(target=_watch_parent, args=(parent,), name="egnlp-parent-watch", daemon=True).start()


def _set_parent_death_signal() -> bool:
    """Ask Linux for SIGKILL when the parent ends; False when the call is not available."""
    import ctypes
    import signal

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _watch_parent(parent: int) -> None:
    """A worker's daemon thread where prctl is missing: end the worker once its parent is gone."""
    while os.getppid() == parent:
        time.sleep(PARENT_POLL_SECONDS)
    os._exit(1)


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
                                 initargs=(os.getpid(), fn, model, items)) as pool:
            for results in pool.map(_run, bounds):
                out.extend(results)
    finally:
        gc.unfreeze()
    if len(out) != len(items):
        raise RuntimeError(f"{len(out)} results for {len(items)} items")
    return out


def _run_piece(piece: Any) -> Any:
    assert _worker is not None
    fn, model, _ = _worker
    return fn(model, piece)


def map_pieces(fn: Callable[[Any, Any], Any], model: Any, pieces: Iterable[Any], jobs: int | None = 1) -> Iterator[Any]:
    """``fn(model, piece)`` of every piece, in order, on ``jobs`` processes (None: every core).

    A stream's counterpart of :func:`map_blocks`: the model reaches each worker once (forked), the
    pieces one by one as tasks, and at most two per worker are read ahead, so memory holds a few
    pieces whatever the stream's length.  An exception of ``fn`` is raised here, at its piece's
    turn.  ``fn`` must be a module-level function.  Kernels the workers need are best loaded in
    this process first (they are inherited).
    """
    jobs = resolve_jobs(jobs)
    stream = iter(pieces)
    if jobs == 1:
        for piece in stream:
            yield fn(model, piece)
        return
    methods = multiprocessing.get_all_start_methods()
    context = multiprocessing.get_context("fork" if "fork" in methods else None)
    gc.freeze()
    try:
        with ProcessPoolExecutor(max_workers=jobs, mp_context=context, initializer=_start,
                                 initargs=(os.getpid(), fn, model, ())) as pool:
            pending = deque(pool.submit(_run_piece, piece) for piece in itertools.islice(stream, 2 * jobs))
            while pending:
                result = pending.popleft().result()
                for piece in itertools.islice(stream, 1):
                    pending.append(pool.submit(_run_piece, piece))
                yield result
    finally:
        gc.unfreeze()
