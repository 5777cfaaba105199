"""The structured-problem seam: what every trainer may know about the data.

Trainers never see trees or tag sequences.  A problem offers, for example i,
its parts ``problem.features.parts(i)`` (a range in a corpus-wide part
numbering), the features of every part (:class:`PartFeatureSet`: scores,
scatter and sparse changes of a weight vector),
the gold parts and a per-part loss, and two oracles over the example's
structures, both working on a flat per-part score vector ``theta``:

- ``marginals(i, theta) -> (log Z, mu)``: log partition function and part
  marginals of the distribution ``p(y) ~ exp(sum_{r in y} theta_r)``;
- ``log_partition(i, theta) -> log Z`` (the same without the marginals);
- ``argmax(i, theta) -> z``: the part counts of the best structure (0/1 for arcs)
  (loss-augmented when ``theta`` has the loss added).

Parts that cannot occur (a parser's arc into the root) carry no features, a
zero loss, zero gold, and get zero marginals.

A problem may also say how many processes its evaluation passes may use
(``jobs``, 1 when it has none): :func:`scored_examples`,
:func:`loss_augmented_examples` and :func:`max_margin_terms`, which the
trainers' primal, dual and gap records read, then compute blocks of examples on
that many forked processes and give them in order, so every sum is taken in the
same order and the records and the model are the same bits for any number of
jobs.
"""

from __future__ import annotations

import functools
from typing import Iterator, Protocol

import numpy as np


class PartFeatureSet(Protocol):
    """What a trainer may ask of ``problem.features``.

    :class:`egnlp.features.csr.PartFeatures` (explicit CSR arrays, the parser) is
    one implementation; a problem may bring another (the tagger's parts are
    label-conjoined observation predicates, computed rather than stored).
    """

    n_features: int

    @property
    def n_examples(self) -> int: ...

    @property
    def n_parts(self) -> int: ...

    def parts(self, i: int) -> tuple[int, int]: ...

    def scores(self, lo: int, hi: int, w: np.ndarray) -> np.ndarray: ...

    def scatter(self, lo: int, hi: int, coef: np.ndarray, target: np.ndarray) -> None: ...

    def sparse_delta(self, lo: int, hi: int, coef: np.ndarray,
                     w: np.ndarray) -> tuple[np.ndarray, np.ndarray, float, float]: ...

    # Optional: ``scores_many(lo, hi, ws)``, ``scores(lo, hi, w)`` for each of a few vectors in one walk
    # over the parts' features (see :func:`scores_many`).


def scores_many(pf: PartFeatureSet, lo: int, hi: int, ws) -> list[np.ndarray]:
    """``pf.scores(lo, hi, w)`` for each ``w`` of ``ws``: in one walk over the features where the set
    offers ``scores_many`` (the parser's: two vectors in about 0.75 of the time of two walks), else one
    call each.  The same bits either way."""
    many = getattr(pf, "scores_many", None)
    return many(lo, hi, ws) if many is not None else [pf.scores(lo, hi, w) for w in ws]


class StructuredProblem(Protocol):
    features: PartFeatureSet
    # Both (n_parts,), read-only, of any real dtype that holds their values exactly (the tagger
    # keeps them as small unsigned integers to save memory); trainers compute with them in float64.
    gold: np.ndarray  # the gold structure's part counts (1 for each part it uses)
    loss: np.ndarray  # e_{i,r}: Hamming loss of choosing part r

    def marginals(self, i: int, theta: np.ndarray) -> tuple[float, np.ndarray]: ...

    def log_partition(self, i: int, theta: np.ndarray) -> float: ...

    def argmax(self, i: int, theta: np.ndarray) -> np.ndarray: ...


def example_blocks(pf, parts: int = 1 << 22) -> Iterator[tuple[int, int]]:
    """Part ranges ``(lo, hi)`` of whole examples, in order, covering every part, each about ``parts``
    long (or one example): whole-corpus vector work done a block at a time needs no temporary as long
    as the corpus (363 M parts, 2.9 GB a float64 vector, for a CRF on Brown)."""
    n = pf.n_examples
    i = 0
    while i < n:
        lo = pf.parts(i)[0]
        j = i + 1
        while j < n and pf.parts(j)[1] - lo <= parts:
            j += 1
        yield lo, pf.parts(j - 1)[1]
        i = j


def blocked_dot(a: np.ndarray, b: np.ndarray, block: int = 1 << 22) -> float:
    """a . b summed a block at a time, so that a small-integer ``b`` (the problems' uint8 ``loss``) is
    converted to float64 a block at a time, not as a corpus-long temporary."""
    return sum((float(a[i:i + block] @ b[i:i + block]) for i in range(0, a.shape[0], block)), 0.0)


def gold_minus(problem: StructuredProblem, mu: np.ndarray) -> np.ndarray:
    """W = sum_r (gold_r - mu_r) phi(r) over every part (the unnormalised primal vector of the dual
    trainers, w = W / C), scattered a block of whole examples at a time (:func:`example_blocks`)."""
    pf = problem.features
    W = np.zeros(pf.n_features)
    for lo, hi in example_blocks(pf):
        pf.scatter(lo, hi, problem.gold[lo:hi] - mu[lo:hi], W)
    return W


EVAL_BLOCK = 32  # examples per task when an evaluation pass runs on several processes


def _scores_of(problem: StructuredProblem, w: np.ndarray, zero: bool, i: int) -> tuple[int, int, np.ndarray]:
    """(lo, hi, w . phi) of example i; zeros without computing any features when ``zero`` (w is 0, where
    the max-margin trainers start: their first record would otherwise compile every example)."""
    lo, hi = problem.features.parts(i)
    return lo, hi, np.zeros(hi - lo) if zero else problem.features.scores(lo, hi, w)


def _scored(problem: StructuredProblem, w: np.ndarray, zero: bool, i: int):
    lo, hi, s = _scores_of(problem, w, zero, i)
    return i, lo, hi, s, problem.log_partition(i, s)


def _loss_augmented(problem: StructuredProblem, w: np.ndarray, zero: bool, i: int):
    lo, hi, s = _scores_of(problem, w, zero, i)
    return i, lo, hi, s, problem.argmax(i, s + problem.loss[lo:hi])


def _block(job: tuple, block: range) -> list:
    one, problem, w, zero = job
    return [one(problem, w, zero, i) for i in block]


def _each_example(one, problem: StructuredProblem, w: np.ndarray) -> Iterator:
    """``one(problem, w, zero, i)`` for every example i, in order: in this process, or with ``problem.jobs``
    above 1 and ``w`` not 0 in blocks of :data:`EVAL_BLOCK` examples on that many forked processes (a
    few blocks read ahead, so memory holds a few blocks' results, not the pass's)."""
    from egnlp.base.workers import map_pieces

    pf = problem.features
    n = pf.n_examples
    # a misshapen w is not taken for 0: it goes where it is refused
    zero = np.shape(w) == (pf.n_features,) and not np.any(w)
    # at w = 0 nothing is scored, and the argmaxes alone cost less than starting the workers (es: 0.19 CPU s
    # in this process, 0.38 on two)
    jobs = 1 if zero else getattr(problem, "jobs", 1)
    if jobs == 1 or n < 2 * EVAL_BLOCK:
        for i in range(n):
            yield one(problem, w, zero, i)
        return
    blocks = (range(a, min(a + EVAL_BLOCK, n)) for a in range(0, n, EVAL_BLOCK))
    for results in map_pieces(_block, (one, problem, w, zero), blocks, jobs):
        yield from results


def scored_examples(problem: StructuredProblem, w: np.ndarray) -> Iterator[tuple[int, int, int, np.ndarray, float]]:
    """For every example i: ``(i, lo, hi, s, log Z(s))`` with part scores s = w . phi."""
    return _each_example(_scored, problem, w)


def loss_augmented_examples(problem: StructuredProblem, w: np.ndarray) -> Iterator[tuple[int, int, int, np.ndarray, np.ndarray]]:
    """For every example i: ``(i, lo, hi, s, z)`` with s = w . phi and z the parts of
    the loss-augmented argmax, argmax_y [e(y) + s(y)] (never the plain argmax)."""
    return _each_example(_loss_augmented, problem, w)


def max_margin_terms(problem: StructuredProblem, w: np.ndarray, mu) -> Iterator[tuple[int, float, float]]:
    """For every example i: ``(i, hinge, gap)``, its term of the max-margin primal at ``w`` (:func:`hinge`) and its
    share of the duality gap, (z_i - mu_i) . (e_i + s_i) with z_i the loss-augmented argmax (the Frank-Wolfe
    gap of its block); ``mu``: every part's marginals, or a function of i giving example i's.  Each example's
    terms are computed where it is scored, so a worker process sends back three numbers, not its vectors
    (es with ``--parts grandparents``: the vectors of its sibling and grandparent parts)."""
    return _each_example(functools.partial(_max_margin_terms, mu), problem, w)


def _max_margin_terms(mu, problem: StructuredProblem, w: np.ndarray, zero: bool, i: int) -> tuple[int, float, float]:
    _, lo, hi, s, z = _loss_augmented(problem, w, zero, i)
    mu_i = mu(i) if callable(mu) else mu[lo:hi]
    return i, hinge(problem, lo, hi, s, z), float((z - mu_i) @ (s + problem.loss[lo:hi]))


def hinge(problem: StructuredProblem, lo: int, hi: int, s: np.ndarray, z: np.ndarray) -> float:
    """e(z) - w . (phi(y_i) - phi(z)) for the parts ``lo:hi`` of one example, scores s = w . phi and
    structure z: with z the loss-augmented argmax, the example's term of the max-margin primal."""
    return float(z @ (s + problem.loss[lo:hi])) - float(s @ problem.gold[lo:hi])


def max_margin_primal(problem: StructuredProblem, w: np.ndarray, C: float) -> float:
    """The max-margin primal sum_i max_y [e(y) - w . (phi(y_i) - phi(y))] + C/2 ||w||^2 (Eq. 5)."""
    total = 0.5 * C * float(w @ w)
    for _, lo, hi, s, z in loss_augmented_examples(problem, w):
        total += hinge(problem, lo, hi, s, z)
    return total


def log_linear_primal(problem: StructuredProblem, W: np.ndarray, C: float) -> float:
    """The log-linear primal at w = W / C (Collins et al. 2008, Eq. 4 and 7).

    sum_i [log Z_i(w) - w . phi(x_i, y_i)] + C/2 ||w||^2.
    """
    losses = (log_z - float(s @ problem.gold[lo:hi]) for _, lo, hi, s, log_z in scored_examples(problem, W / C))
    return sum(losses) + float(W @ W) / (2.0 * C)


def log_linear_gradient(problem: StructuredProblem, w: np.ndarray, C: float) -> tuple[float, np.ndarray]:
    """The log-linear primal at ``w`` and its gradient sum_i (E_mu[phi] - phi(y_i)) + C w."""
    pf = problem.features
    value = 0.5 * C * float(w @ w)
    grad = C * w
    for i in range(pf.n_examples):
        lo, hi = pf.parts(i)
        s = pf.scores(lo, hi, w)
        log_z, mu = problem.marginals(i, s)
        value += log_z - float(s @ problem.gold[lo:hi])
        pf.scatter(lo, hi, mu - problem.gold[lo:hi], grad)
    return value, grad
