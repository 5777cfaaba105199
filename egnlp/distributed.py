"""Parsing, tagging and parser training on a Dask cluster (the optional extra ``egnlp[dask]``).

Parsing and tagging split the input into consecutive blocks of sentences,
send the model to every worker once (``client.scatter(..., broadcast=True)``),
decode the blocks on the workers with the same code as a local run and
gather the results in input order: the output equals a local run's.

Training (:func:`train_parser_dask`) is CoCoA+ (Ma et al. 2015; Jaggi et al.
2014 for CoCoA) on EG's dual.  The training sentences are split into K
shards of about equal cost; the arc features are fitted on the whole set on
the driver and the fitted featurizer is shipped, so every shard numbers the
features alike.  Each shard lives on a worker (a Dask actor) with the EG
state of its examples (:class:`egnlp.training.eg.EGRun`: theta_i, mu_i,
the rates).  A round sends the global W = sum_i (phi(y_i) - E_mu_i[phi]) to
every shard; each runs one online EG pass over its examples on its local
subproblem and returns the change dW_k of its share of W; the driver adds
them, W += sum_k dW_k (CoCoA+'s adding, gamma = 1).

Adding is safe with the local subproblem scaled by sigma' = K: shard k
minimises sum_{i in k} term_i + (1/2C) [||W||^2 / K + 2 W . dW_k + K ||dW_k||^2],
which is exactly the EG dual of the shard alone with C / K in place of C and
its own W started at W / K (its W is then W / K + dW_k, and its scores
w . phi = (W + K dW_k) / C).  So each shard runs EG's own visit, adaptive
rate and acceptance test unchanged; the sum of the shards' local decreases
bounds the decrease of the global dual (Ma et al. 2015, Lemma 3), so the
dual never rises.  Every mu_i belongs to one shard and W is changed by
exactly the changes of the mu_i, so W = sum_i (phi(y_i) - E_mu_i[phi])
holds after every round (no averaging of thetas is needed), and the dual
is separable: Q = sum_i term_i + ||W||^2 / (2C), the terms summed on the
shards and the norm on the driver.  The primal's loss terms are summed on
the shards too, so every round reports primal, dual and duality gap as a
single-process run does.  With K = 1 the run is
:func:`egnlp.training.eg.fit_eg`'s (the same records up to rounding).
"""

from __future__ import annotations

import logging
import math
import os
import time
from contextlib import contextmanager
from typing import Any, Iterator, Sequence

import numpy as np

from egnlp.base.errors import EgnlpError, SettingsError
from egnlp.corpora import Sentence
from egnlp.parser.parser_model import Parser
from egnlp.parser_training import build_parsing_problem, train_parser
from egnlp.settings import ParserSettings
from egnlp.training.configs import EGConfig
from egnlp.training.eg import EGRun
from egnlp.training.records import Callback, Recorder, TrainResult

DASK_MISSING = "--dask needs the optional extra dask: install egnlp[dask] (pip install 'egnlp[dask]')"
CONNECT_SECONDS = 10.0  # how long to try reaching a scheduler
BLOCKS_PER_WORKER = 4  # blocks of unequal cost even out across the workers
MAX_BLOCK = 512  # sentences per block at most


def _distributed():
    try:
        import distributed
    except ImportError:
        raise EgnlpError(DASK_MISSING) from None
    return distributed


@contextmanager
def dask_client(address: str, n_workers: int | None = None, timeout: float = CONNECT_SECONDS) -> Iterator[Any]:
    """A ``distributed.Client``: of a new LocalCluster for ``"local"`` (``n_workers`` worker processes of one
    thread each, default one per core), else of the scheduler at ``address`` (e.g. ``tcp://host:8786``).

    Raises:
        EgnlpError: dask is not installed, or the scheduler cannot be reached within ``timeout`` seconds.
    """
    distributed = _distributed()
    if address == "local":
        cluster = distributed.LocalCluster(n_workers=n_workers or os.cpu_count() or 1, processes=True,
                                           threads_per_worker=1, dashboard_address=None,
                                           silence_logs=logging.ERROR)
        try:
            with distributed.Client(cluster) as client:
                yield client
        finally:
            cluster.close()
        return
    try:
        client = distributed.Client(address, timeout=f"{timeout}s")
    except Exception as exc:  # refused, timed out, a malformed address: all one line for the user
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise EgnlpError(f"cannot reach the Dask scheduler at {address}: {reason}") from None
    try:
        yield client
    finally:
        client.close()


def n_workers(client: Any) -> int:
    """The number of workers the client's scheduler has (at least 1 to plan for)."""
    return max(1, len(client.scheduler_info()["workers"]))


def blocks(items: Sequence[Any], workers: int) -> list[Sequence[Any]]:
    """Consecutive blocks of ``items``, about ``BLOCKS_PER_WORKER`` per worker, at most ``MAX_BLOCK`` long."""
    size = max(1, min(MAX_BLOCK, math.ceil(len(items) / (workers * BLOCKS_PER_WORKER))))
    return [items[start:start + size] for start in range(0, len(items), size)]


def _map_in_order(client: Any, fn, model: Any, items: Sequence[Any]) -> list:
    """``fn(model, block)`` over blocks of ``items`` on the cluster, the model sent once per worker;
    the results concatenated in input order."""
    items = list(items)
    if not items:
        return []
    shipped = client.scatter(model, broadcast=True, hash=False)
    futures = client.map(fn, blocks(items, n_workers(client)), model=shipped, pure=False)
    out = [r for block in client.gather(futures) for r in block]
    if len(out) != len(items):
        raise RuntimeError(f"{len(out)} results for {len(items)} items")
    return out


def _parse_block(block: Sequence[Sentence], model: Parser) -> list[Sentence]:
    return model.parse_corpus(block)


def _tag_block(block: Sequence[Sentence], model: tuple[Any, Any]) -> list[Sentence]:
    tagger, pos_tagger = model
    if pos_tagger is not None:
        block = pos_tagger.tag_corpus(block)
    return tagger.tag_corpus(block)


def parse_on_cluster(client: Any, parser: Parser, sentences: Sequence[Sentence]) -> list[Sentence]:
    """``parser.parse_corpus(sentences)`` computed on the cluster's workers, in input order."""
    return _map_in_order(client, _parse_block, parser, sentences)


def tag_on_cluster(client: Any, tagger: Any, sentences: Sequence[Sentence], pos_tagger: Any = None) -> list[Sentence]:
    """``tagger.tag_corpus(sentences)`` (after ``pos_tagger.tag_corpus`` when given) on the cluster's workers,
    in input order."""
    return _map_in_order(client, _tag_block, (tagger, pos_tagger), sentences)


# --- training ---------------------------------------------------------------------------------------


def shard_sentences(sizes: Sequence[int], k: int) -> list[np.ndarray]:
    """Split sentences of ``sizes`` words into ``k`` shards of about equal cost, (n + 1)^2 parts per sentence:
    the longest first, each to the shard with the least so far; each shard's indices in increasing order."""
    if k < 1:
        raise ValueError(f"the number of workers must be at least 1, not {k}")
    if k > len(sizes):
        raise SettingsError(f"--workers {k} for {len(sizes)} training sentences: give at most one worker a sentence")
    load = np.zeros(k)
    members: list[list[int]] = [[] for _ in range(k)]
    for i in sorted(range(len(sizes)), key=lambda i: (-sizes[i], i)):
        j = int(np.argmin(load))
        members[j].append(i)
        load[j] += (sizes[i] + 1) ** 2
    return [np.array(sorted(m), dtype=np.int64) for m in members]


class ShardState:
    """The EG state of one shard of the training sentences, kept on a worker (a Dask actor).

    The shard's problem is built on the worker from its sentences and the featurizer fitted on the
    whole training set. Its run keeps C / K and W / K + dW (see the module docstring).
    """

    def __init__(self, featurizer, sentences: Sequence[Sentence], root: str, tree: str, objective: str,
                 config: EGConfig, shard: int, n_shards: int, theta: np.ndarray | None = None,
                 eta: np.ndarray | None = None):
        _, problem, _ = build_parsing_problem(sentences, root, tree=tree, featurizer=featurizer)
        self.K = n_shards
        self.run = EGRun(problem, config, objective, theta, eta)
        self.rng = np.random.default_rng(config.seed if shard == 0 else [config.seed, shard])
        self.base = np.zeros(problem.features.n_features)

    def share(self) -> np.ndarray:
        """The shard's share of W, sum_{i in shard} (phi(y_i) - E_mu_i[phi])."""
        return self.run.W.copy()

    def evaluate(self, W: np.ndarray, C: float) -> tuple[float, float]:
        """Take the global ``W`` at regularisation ``C``: (the shard's primal loss terms at w = W / C,
        the sum of its dual terms); the examples' shares of the gap steer the next pass."""
        self.base = np.asarray(W, dtype=np.float64) / self.K
        run = self.run
        run.W = self.base.copy()
        run.C = C / self.K
        losses = run.primal() - float(run.W @ run.W) / (2.0 * run.C)  # the primal without the shard's regulariser
        return losses, float(run.term.sum())

    def step(self, C: float) -> tuple[np.ndarray, int]:
        """One EG pass over the shard on its local subproblem at ``C`` from the W last evaluated: (dW_k, visits)."""
        run = self.run
        run.W = self.base.copy()
        run.C = C / self.K
        before = run.visits
        for i in run.pass_order(self.rng):
            run.visit(int(i))
        return run.W - self.base, run.visits - before

    def state(self) -> tuple[np.ndarray, np.ndarray]:
        """The shard's theta (its parts in shard order) and per-example rates."""
        return self.run.theta.copy(), self.run.eta.copy()


def _wait(calls: list) -> list:
    return [call.result() for call in calls]


def fit_cocoa(client: Any, featurizer, train: Sequence[Sentence], root: str, tree: str, objective: str,
              n_shards: int, *, config: EGConfig = EGConfig(), dev=None, callbacks: tuple[Callback, ...] = (),
              state: dict | None = None) -> TrainResult:
    """CoCoA+ on the EG dual of ``train`` over ``n_shards`` shards on the cluster's workers (module docstring).

    One round is one EG pass on every shard; a record per round (``passes`` = rounds) with the primal, dual
    and gap of the whole problem, C annealed as in :func:`egnlp.training.eg.fit_eg`. Stops at the relative
    gap ``config.tol``, after ``config.max_passes`` rounds or ``config.max_seconds``. ``state`` (``theta``
    over all parts in sentence order, ``eta`` per sentence) warm-starts; the result's state has that layout.
    """
    # The actors' handles talk through the current client: make it this one (a process may hold several).
    with client.as_current():
        return _fit_cocoa(client, featurizer, train, root, tree, objective, n_shards, config=config, dev=dev,
                          callbacks=callbacks, state=state)


def _fit_cocoa(client: Any, featurizer, train: Sequence[Sentence], root: str, tree: str, objective: str,
               n_shards: int, *, config: EGConfig, dev, callbacks: tuple[Callback, ...],
               state: dict | None) -> TrainResult:
    sizes = [len(s) for s in train]
    shards = shard_sentences(sizes, n_shards)
    parts = np.array([(n + 1) ** 2 for n in sizes], dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(parts)])
    theta, eta = (state or {}).get("theta"), (state or {}).get("eta")
    if theta is not None and np.shape(theta) != (int(offsets[-1]),):
        raise ValueError(f"warm-start theta has shape {np.shape(theta)}, expected ({int(offsets[-1])},)")
    workers = sorted(client.scheduler_info()["workers"])
    if not workers:
        raise EgnlpError("the Dask cluster has no workers")
    shipped = client.scatter(featurizer, broadcast=True, hash=False)  # once per worker, not once per shard
    actors = []
    for k, members in enumerate(shards):
        theta_k = np.concatenate([theta[offsets[i]:offsets[i + 1]] for i in members]) if theta is not None else None
        eta_k = np.asarray(eta)[members] if eta is not None else None
        future = client.submit(ShardState, shipped, [train[i] for i in members], root, tree, objective, config,
                               k, n_shards, theta_k, eta_k, actor=True, workers=[workers[k % len(workers)]],
                               allow_other_workers=False, pure=False)
        actors.append(future.result())
    W = np.sum(_wait([a.share() for a in actors]), axis=0)
    rec = Recorder(len(train), dev, callbacks)

    def record(passes: int, C_t: float) -> bool:
        results = _wait([a.evaluate(W, C_t) for a in actors])
        losses = sum(r[0] for r in results)
        sq = float(W @ W)
        if C_t == config.C:
            r = rec.record(passes, W / C_t, losses + sq / (2.0 * C_t), sum(r[1] for r in results) + sq / (2.0 * C_t),
                           C_t)
            return r.rel_gap <= config.tol
        # While C is annealed: the primal at the target C of w = W / C_t, and no dual (see fit_eg).
        rec.record(passes, W / C_t, losses + config.C * sq / (2.0 * C_t * C_t), None, C_t)
        return False

    converged = record(0, config.C_at(1))
    for p in range(1, config.max_passes + 1):
        if converged or rec.out_of_time(config.max_seconds):
            break
        C_t = config.C_at(p)
        start = time.perf_counter()
        steps = _wait([a.step(C_t) for a in actors])
        W = W + np.sum([dW for dW, _ in steps], axis=0)
        rec.visits += sum(v for _, v in steps)
        rec.seconds += time.perf_counter() - start
        converged = record(p, C_t)
    full_theta = np.empty(int(offsets[-1]))
    full_eta = np.empty(len(train))
    for members, (theta_k, eta_k) in zip(shards, _wait([a.state() for a in actors])):
        at = 0
        for i in members:
            full_theta[offsets[i]:offsets[i + 1]] = theta_k[at:at + parts[i]]
            at += parts[i]
        full_eta[members] = eta_k
    return TrainResult(weights=W / rec.records[-1].C, records=rec.records,
                       converged=converged, state={"theta": full_theta, "eta": full_eta})


def train_parser_dask(client: Any, train: Sequence[Sentence], dev: Sequence[Sentence] | None = None,
                      settings: ParserSettings | None = None, **options: Any) -> tuple[Parser, TrainResult]:
    """:func:`egnlp.parser_training.train_parser` with the arcs trained by :func:`fit_cocoa` on the cluster of
    ``client``: ``settings`` (or their fields as keyword ``options``) with ``dask`` set; ``workers`` shards
    (default: one per worker of the cluster); online EG (``eg-mm`` by default, or ``eg-ll``), ``max_passes``
    counting rounds. The features are fitted and the labeler trained on the driver."""
    return train_parser(train, dev, ParserSettings.build(settings, **options, dask=True), client=client)
