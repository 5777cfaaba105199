"""Two designs for dependency labels, measured on the same data: joint labeled arc parts vs a second stage.

Run from the project root (NLTK_DATA must point at the corpora)::

    python benchmarks/label_designs.py                                   # es; 500 and 1,000 sentences; C = 100, 10
    python benchmarks/label_designs.py --limits 100 --Cs 100 --passes 3  # a quick check
    python benchmarks/label_designs.py --state-only                      # per-part state on the full training set

Runs (the same first-order arc features, trainer, C, EG budget, tree space and root constraint):

- ``unlabeled``: ``egnlp.parser_training.train_parser(..., labels=False)``, the yardstick of
  the limits (labeled training within 1.5x its peak memory and 2x its time);
- ``b`` (what egnlp does): ``train_parser(..., labels=True)``, the same
  unlabeled parser followed by the second-stage labeler (``train_labeler``:
  maxent coordinate descent on the gold trees, with its own features), both as
  they are;
- ``a``: joint labeled arc parts (h, m, l), trained by the same registry trainer
  on :class:`LabeledArcProblem` below, a problem of the structured seam
  (:mod:`egnlp.training.structured_problem`) whose parts are ``[head, modifier, label]`` in
  row-major order, (n+1)^2 L per sentence.

Design (a) in detail.  The score of part (h, m, l) is w . phi(h, m) (the
unlabeled arc features) plus w . (phi(h, m) conjoined with l): arc feature f
conjoined with label l is a feature when some gold training arc with label l
fires f (the unlabeled alphabet is built the same way).  Labels never seen on a
root arc (or never seen on another arc) are parts that cannot occur, as the
labeler of (b) forbids them too: score 0, zero gold, loss and marginals.  The
oracles reduce the labels of each arc first, log-sum-exp for
``marginals``/``log_partition`` (every EG trainer, max-margin included, moves a
distribution over labeled trees) and max for ``argmax`` (the loss-augmented
argmax of the max-margin objective), run the tree space's algorithm on the
(n+1) x (n+1) arc matrix, and expand: mu(h, m, l) = mu(h, m) softmax_l theta(h,
m, .); the argmax takes the best label of each chosen arc.  The loss of part
(h, m, l) is [h != gold head of m] + [l != gold label of m], MSTParser's labeled
loss (head errors plus label errors).  ``gold`` and ``loss`` are uint8 (2 bytes
per part; the unlabeled problem keeps them as float64, 16 bytes per cell); EG's
theta and mu are float64 (16 bytes per part).  The feature arrays are the CSR of
the unlabeled arc cells plus a table of the labels of each feature:
label-conjoined ids are computed on the fly, as the CRF tagger's are, so that
only EG's state and gold/loss grow with L.

Each run is its own subprocess, one after the other, so that its peak memory
(``ru_maxrss`` after training) is its own; the parent also watches the child's
resident memory and kills it above ``--max-gb`` or after ``--kill-minutes`` of
wall time, and reports the last pass reached.  A worker first trains on 20
sentences for one pass so that JIT compilation is not timed.  Every run has the
same EG budget: ``--passes`` passes and ``--max-minutes`` of optimisation time
(EG's ``max_seconds``; a run that reaches it is marked "time limit" and is
scored as it stands).  Columns: training seconds (wall and CPU, the whole
training call: feature extraction, alphabets, EG, for (b) the labeler); passes
and the last relative duality gap of EG; EG parts of the training set and theta
+ mu megabytes (2 float64 per part); peak RSS (``ru_maxrss`` after training) and
its growth over the resident memory before training (after imports, data
loading and the warm-up); the ratios of training CPU seconds (user + system of
the process, steadier than wall time on a shared machine) and of peak RSS to the
unlabeled run of the same subset and C; test UAS and LAS (``attachment_scores``,
punctuation counted); parsing speed on the test split (tokens/s; not like for
like: (a) extracts the CSR of the test arcs and scores labels from it, the
others use ``Parser.parse``, the direct arc scorer plus the labeler).
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

import numpy as np
from numba import njit

from egnlp.features.csr import PartFeatures
from egnlp.parser.trees import PROJECTIVE, choose_tree, tree_space

ROOT = Path(__file__).resolve().parents[1]

DESIGNS = ("unlabeled", "b", "a")


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------
# Design (a): label-conjoined arc features and the labeled parsing problem
# ---------------------------------------------------------------------------


@njit(cache=True)
def _labeled_scores(feat_ptr, feat_ids, lab_ptr, lab_label, F0, kind, allowed, L, c_lo, c_hi, w, out):
    """out[(c - c_lo) L + l] = w . phi(c, l) for the cells c_lo:c_hi: the unlabeled features of cell c
    plus their conjunctions with l; 0 where the cell is never an arc or l is not allowed there."""
    out[:] = 0.0
    for c in range(c_lo, c_hi):
        k = kind[c]
        if k == 0:
            continue
        off = (c - c_lo) * L
        u = 0.0
        for j in range(feat_ptr[c], feat_ptr[c + 1]):
            f = feat_ids[j]
            u += w[f]
            for e in range(lab_ptr[f], lab_ptr[f + 1]):
                out[off + lab_label[e]] += w[F0 + e]
        for lab in range(L):
            out[off + lab] = out[off + lab] + u if allowed[k, lab] else 0.0


@njit(cache=True)
def _add(target, g, v, mark, touched, count):
    """target[g] += v; with a non-empty ``mark``, ids met for the first time go to ``touched``."""
    target[g] += v
    if mark.shape[0] > 0 and mark[g] == 0:
        mark[g] = 1
        touched[count] = g
        count += 1
    return count


@njit(cache=True)
def _labeled_scatter(feat_ptr, feat_ids, lab_ptr, lab_label, F0, kind, allowed, L, c_lo, c_hi, coef, target, mark,
                     touched):
    """target += sum_{c, l allowed} coef[(c - c_lo) L + l] phi(c, l) over the cells c_lo:c_hi; returns the
    number of ids written to ``touched`` (0 unless ``mark`` is given)."""
    count = 0
    for c in range(c_lo, c_hi):
        k = kind[c]
        if k == 0:
            continue
        off = (c - c_lo) * L
        total = 0.0  # the unlabeled features fire with every label
        nonzero = False
        for lab in range(L):
            if allowed[k, lab] and coef[off + lab] != 0.0:
                total += coef[off + lab]
                nonzero = True
        if not nonzero:
            continue
        for j in range(feat_ptr[c], feat_ptr[c + 1]):
            f = feat_ids[j]
            if total != 0.0:
                count = _add(target, f, total, mark, touched, count)
            for e in range(lab_ptr[f], lab_ptr[f + 1]):
                lab = lab_label[e]
                v = coef[off + lab]
                if v != 0.0 and allowed[k, lab]:
                    count = _add(target, F0 + e, v, mark, touched, count)
    return count


@njit(cache=True)
def _take_nonzero(buf, mark, touched, count, w, ids, vals):
    """Move the non-zeros of ``buf`` at ``touched[:count]`` to ``ids``/``vals``, zeroing buf and mark;
    returns (number taken, w . taken, ||taken||^2)."""
    c = 0
    dot = 0.0
    sq = 0.0
    for t in range(count):
        j = touched[t]
        mark[j] = 0
        v = buf[j]
        buf[j] = 0.0
        if v != 0.0:
            ids[c] = j
            vals[c] = v
            dot += w[j] * v
            sq += v * v
            c += 1
    return c, dot, sq


@njit(cache=True)
def _entries_per_example(part_ptr, feat_ptr, feat_ids, lab_ptr, kind):
    """Feature entries (unlabeled and label-conjoined) of each example: a bound on the ids one
    example's sparse change can touch."""
    out = np.zeros(part_ptr.shape[0] - 1, dtype=np.int64)
    for i in range(out.shape[0]):
        for c in range(part_ptr[i], part_ptr[i + 1]):
            if kind[c] != 0:
                for j in range(feat_ptr[c], feat_ptr[c + 1]):
                    out[i] += 1 + lab_ptr[feat_ids[j] + 1] - lab_ptr[feat_ids[j]]
    return out


class LabeledArcFeatures:
    """A ``PartFeatureSet`` of labeled arc parts over the CSR of the unlabeled arc cells.

    Part r is cell r // L with label r % L.  ``base``: the unlabeled
    :class:`PartFeatures` (cells [h, m]; its F0 ids are the unlabeled features);
    unlabeled feature f conjoined with label ``lab_label[e]`` is feature F0 + e for e in
    ``lab_ptr[f]:lab_ptr[f+1]``; ``kind`` (cells,) int8: 0 never an arc, 1 an arc from the root,
    2 another arc; ``allowed`` (3, L) bool: the labels each kind of cell may take.
    """

    def __init__(self, base: PartFeatures, L: int, lab_ptr, lab_label, kind, allowed):
        self.base, self.L = base, int(L)
        self.lab_ptr, self.lab_label = lab_ptr, lab_label
        self.n_features = base.n_features + int(lab_label.size)
        self.kind, self.allowed = kind, allowed
        self._work = None
        self._no_mark = np.zeros(0, dtype=np.uint8)
        self._no_touched = np.zeros(0, dtype=np.int64)

    @property
    def n_examples(self) -> int:
        return self.base.n_examples

    @property
    def n_parts(self) -> int:
        return self.base.n_parts * self.L

    def parts(self, i: int) -> tuple[int, int]:
        lo, hi = self.base.parts(i)
        return lo * self.L, hi * self.L

    def _args(self, lo: int, hi: int):
        b = self.base
        return (b.feat_ptr, b.feat_ids, self.lab_ptr, self.lab_label, b.n_features, self.kind, self.allowed, self.L,
                lo // self.L, hi // self.L)

    def scores(self, lo: int, hi: int, w: np.ndarray) -> np.ndarray:
        out = np.empty(hi - lo)
        _labeled_scores(*self._args(lo, hi), w, out)
        return out

    def scatter(self, lo: int, hi: int, coef: np.ndarray, target: np.ndarray) -> None:
        _labeled_scatter(*self._args(lo, hi), np.ascontiguousarray(coef, dtype=np.float64), target,
                         self._no_mark, self._no_touched)

    def sparse_delta(self, lo: int, hi: int, coef: np.ndarray, w: np.ndarray):
        if self._work is None:
            b = self.base
            size = int(min(self.n_features,
                           _entries_per_example(b.part_ptr, b.feat_ptr, b.feat_ids, self.lab_ptr, self.kind).max()))
            self._work = (np.zeros(self.n_features), np.zeros(self.n_features, dtype=np.uint8),
                          np.empty(size, dtype=np.int64), np.empty(size, dtype=np.int64), np.empty(size))
        buf, mark, touched, ids, vals = self._work
        count = _labeled_scatter(*self._args(lo, hi), np.ascontiguousarray(coef, dtype=np.float64), buf, mark,
                                 touched)
        count, dot, sq = _take_nonzero(buf, mark, touched, count, w, ids, vals)
        return ids[:count], vals[:count], dot, sq


@njit(cache=True)
def _reduce_labels(theta, kind, allowed, L, use_max, s2, best):
    """Per cell c: s2[c] = log-sum-exp (or max) of theta[c, l] over its allowed labels l, best[c] the
    best label (-1 for a cell that is never an arc, whose s2 is 0)."""
    for c in range(kind.shape[0]):
        k = kind[c]
        best[c] = -1
        s2[c] = 0.0
        if k == 0:
            continue
        m = -np.inf
        for lab in range(L):
            if allowed[k, lab] and (best[c] < 0 or theta[c * L + lab] > m):
                m = theta[c * L + lab]
                best[c] = lab
        if use_max:
            s2[c] = m
            continue
        acc = 0.0
        for lab in range(L):
            if allowed[k, lab]:
                acc += np.exp(theta[c * L + lab] - m)
        s2[c] = m + np.log(acc)


@njit(cache=True)
def _expand_labels(theta, kind, allowed, L, s2, mu_arc, mu):
    """mu[c, l] = mu_arc[c] exp(theta[c, l] - s2[c]) over the allowed labels, 0 elsewhere."""
    for c in range(kind.shape[0]):
        k = kind[c]
        for lab in range(L):
            r = c * L + lab
            if k == 0 or mu_arc[c] == 0.0 or not allowed[k, lab]:
                mu[r] = 0.0
            else:
                mu[r] = mu_arc[c] * np.exp(theta[r] - s2[c])


def reduce_labels(theta: np.ndarray, kind: np.ndarray, allowed: np.ndarray, L: int, use_max: bool):
    """The (n+1) x (n+1) arc scores of one sentence (log-sum-exp or max over labels) and the best
    label of each cell."""
    k = int(round(kind.shape[0] ** 0.5))
    s2 = np.empty(kind.shape[0])
    best = np.empty(kind.shape[0], dtype=np.int64)
    _reduce_labels(np.ascontiguousarray(theta, dtype=np.float64), kind, allowed, L, use_max, s2, best)
    return s2.reshape(k, k), best


def best_labeled_tree(space, root: str, theta: np.ndarray, kind: np.ndarray, allowed: np.ndarray, L: int):
    """Heads (n + 1,) and labels (n + 1,) of the best labeled tree of one sentence (entry 0 unused):
    the best label of every arc, then the tree space's argmax over those arc scores."""
    s2, best = reduce_labels(theta, kind, allowed, L, True)
    k = s2.shape[0]
    heads = space.argmax(s2, root=root)
    labels = np.full(k, -1, dtype=np.int64)
    labels[1:] = best[heads[1:] * k + np.arange(1, k)]
    return heads, labels


def cell_kinds(sizes: np.ndarray) -> np.ndarray:
    """The kind of every cell of sentences of sizes n + 1: 0 never an arc, 1 from the root, 2 another arc."""
    out = []
    for k in sizes:
        kind = np.full((k, k), 2, dtype=np.int8)
        kind[0, :] = 1
        kind[:, 0] = 0
        np.fill_diagonal(kind, 0)
        out.append(kind.reshape(-1))
    return np.concatenate(out) if out else np.zeros(0, dtype=np.int8)


class LabeledArcProblem:
    """First-order labeled parsing as a structured problem: parts (h, m, l), see the module docstring."""

    def __init__(self, features: LabeledArcFeatures, heads_list, label_ids_list, root: str, tree: str):
        self.features = features
        self.root = root
        self.space = tree_space(tree)
        L = self.L = features.L
        self.sizes = np.array([len(h) + 1 for h in heads_list], dtype=np.int64)
        if np.any(self.sizes ** 2 != np.diff(features.base.part_ptr)):
            raise ValueError("the arc cells do not match the trees")
        self.gold = np.zeros(features.n_parts, dtype=np.uint8)
        self.loss = np.zeros(features.n_parts, dtype=np.uint8)
        for i, (heads, labels) in enumerate(zip(heads_list, label_ids_list)):
            k = int(self.sizes[i])
            lo, hi = features.parts(i)
            m = np.arange(1, k)
            gold = np.zeros((k, k, L), dtype=np.uint8)
            gold[heads, m, labels] = 1
            head_wrong = np.ones((k, k), dtype=np.uint8)
            head_wrong[heads, m] = 0
            label_wrong = np.ones((k, L), dtype=np.uint8)  # per modifier, whatever its head
            label_wrong[m, labels] = 0
            loss = head_wrong[:, :, None] + label_wrong[None, :, :]
            possible = features.allowed[features.kind[lo // L:hi // L].reshape(k, k)]
            self.gold[lo:hi] = gold.reshape(-1)
            self.loss[lo:hi] = np.where(possible, loss, 0).reshape(-1)

    def _kind(self, i: int) -> np.ndarray:
        lo, hi = self.features.base.parts(i)
        return self.features.kind[lo:hi]

    def marginals(self, i: int, theta: np.ndarray) -> tuple[float, np.ndarray]:
        kind = self._kind(i)
        theta = np.ascontiguousarray(theta, dtype=np.float64)
        s2, _ = reduce_labels(theta, kind, self.features.allowed, self.L, False)
        log_z, mu_arc = self.space.marginals(s2, root=self.root)
        mu = np.empty(theta.shape[0])
        _expand_labels(theta, kind, self.features.allowed, self.L, s2.reshape(-1),
                       np.ascontiguousarray(mu_arc, dtype=np.float64).reshape(-1), mu)
        return log_z, mu

    def log_partition(self, i: int, theta: np.ndarray) -> float:
        s2, _ = reduce_labels(theta, self._kind(i), self.features.allowed, self.L, False)
        return self.space.log_partition(s2, root=self.root)

    def argmax(self, i: int, theta: np.ndarray) -> np.ndarray:
        heads, labels = best_labeled_tree(self.space, self.root, theta, self._kind(i), self.features.allowed, self.L)
        k = int(self.sizes[i])
        z = np.zeros(k * k * self.L)
        z[(heads[1:] * k + np.arange(1, k)) * self.L + labels[1:]] = 1.0
        return z


def label_alphabet(base: PartFeatures, heads_list, label_ids_list, L: int):
    """The (f, l) pairs fired by the gold labeled arcs, sorted: ``(lab_ptr, lab_label)`` (see
    :class:`LabeledArcFeatures`)."""
    cells, labs = [], []
    for i, (heads, labels) in enumerate(zip(heads_list, label_ids_list)):
        lo, _ = base.parts(i)
        k = len(heads) + 1
        cells.append(lo + np.asarray(heads, dtype=np.int64) * k + np.arange(1, k))
        labs.append(np.asarray(labels, dtype=np.int64))
    cells = np.concatenate(cells)
    labs = np.concatenate(labs)
    starts = base.feat_ptr[cells]
    lens = base.feat_ptr[cells + 1] - starts
    pos = np.arange(int(lens.sum())) - np.repeat(np.cumsum(lens) - lens, lens) + np.repeat(starts, lens)
    pairs = np.unique(base.feat_ids[pos].astype(np.int64) * L + np.repeat(labs, lens))
    lab_ptr = np.searchsorted(pairs // L, np.arange(base.n_features + 1)).astype(np.int64)
    return lab_ptr, (pairs % L).astype(np.int32)


def build_joint_problem(train, root: str, tree: str):
    """The arc features as ``build_parsing_problem`` fits them, their label conjunctions and the
    labeled problem: ``(featurizer, problem, labels, label tables)``."""
    from egnlp.features.arc_featurizer import ArcFeaturizer

    featurizer = ArcFeaturizer.for_corpus(train)
    encoded = featurizer.encode(train)
    heads = [s.heads for s in train]
    featurizer.fit(encoded, heads)
    base = featurizer.part_features(encoded)
    labels = sorted({label for s in train for label in s.deprels})
    index = {label: k for k, label in enumerate(labels)}
    label_ids = [[index[x] for x in s.deprels] for s in train]
    L = len(labels)
    lab = label_alphabet(base, heads, label_ids, L)
    allowed = np.zeros((3, L), dtype=np.bool_)  # labels seen on root arcs (kind 1) and on the others (2)
    for h_list, l_list in zip(heads, label_ids):
        for h, lab_k in zip(h_list, l_list):
            allowed[1 if h == 0 else 2, lab_k] = True
    kind = cell_kinds(np.array([len(h) + 1 for h in heads], dtype=np.int64))
    problem = LabeledArcProblem(LabeledArcFeatures(base, L, *lab, kind, allowed), heads, label_ids, root, tree)
    return featurizer, problem, labels, lab


class JointModel:
    """What design (a) needs to parse: the featurizer, the labels and their tables, the weights."""

    def __init__(self, featurizer, labels, lab, allowed, weights, root, tree):
        self.featurizer, self.labels, self.lab, self.allowed = featurizer, labels, lab, allowed
        self.weights, self.root, self.space = weights, root, tree_space(tree)

    def parse(self, sentences):
        base = self.featurizer.part_features(self.featurizer.encode(sentences))
        kind = cell_kinds(np.array([len(s) + 1 for s in sentences], dtype=np.int64))
        L = len(self.labels)
        feats = LabeledArcFeatures(base, L, *self.lab, kind, self.allowed)
        out = []
        for i, s in enumerate(sentences):
            lo, hi = feats.parts(i)
            heads, labels = best_labeled_tree(self.space, self.root, feats.scores(lo, hi, self.weights),
                                              kind[lo // L:hi // L], self.allowed, L)
            out.append(s.with_heads(heads[1:].tolist(), [self.labels[x] for x in labels[1:]]))
        return out


# ---------------------------------------------------------------------------
# Workers (one design, one subset, one C per process)
# ---------------------------------------------------------------------------


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def run_worker(args) -> dict:
    from egnlp.parser_training import train_parser
    from egnlp.corpora import guess_root, load_dataset
    from egnlp.parser.attachment import attachment_scores
    from egnlp.training.registry import get_trainer, make_config

    full = load_dataset(args.data, "train")
    train = full[:args.limit] if args.limit else full
    test = load_dataset(args.data, "test")
    root = guess_root(train)
    tree = choose_tree([s.heads for s in train], args.tree)
    settings = dict(C=args.C, max_passes=args.passes, max_seconds=args.max_minutes * 60.0)
    progress_path = Path(args.progress) if args.progress else None
    design = args.worker

    def progress(r):
        gap = f"{r.rel_gap:.2e}" if r.rel_gap is not None else f"- (C annealed to {r.C:g})"
        log(f"{design} n={len(train)} C={args.C:g}: pass {r.passes:3d}  eff.it {r.eff_iters:6.2f}  "
            f"opt {r.seconds:7.1f} s  rel.gap {gap}  rss {current_rss_mb():.0f} MiB")
        if progress_path:
            progress_path.write_text(json.dumps({"passes": r.passes, "seconds": r.seconds, "rel_gap": r.rel_gap}))

    def fit_joint(sentences, config, callbacks=()):
        spec = get_trainer(args.trainer)
        featurizer, problem, labels, lab = build_joint_problem(sentences, root, tree)
        result = spec.fit(problem, config=make_config(spec, **config), callbacks=tuple(callbacks))
        model = JointModel(featurizer, labels, lab, problem.features.allowed, result.weights, root, tree)
        return model, result, problem

    log(f"{design}: warm-up (compiles or loads the JIT cache)")
    warm = dict(settings, max_passes=1)
    if design == "a":
        small, *_ = fit_joint(train[:20], warm)
    else:
        small, _ = train_parser(train[:20], root=root, tree=tree, trainer=args.trainer, labels=design == "b", **warm)
    small.parse(test[:5])
    del small
    rss_before = current_rss_mb()

    log(f"{design}: training on {len(train)} sentences (root {root}, tree {tree}), {args.trainer} {settings}")
    out = {"design": design, "limit": len(train), "C": args.C, "trainer": args.trainer, "passes_max": args.passes,
           "root": root, "tree": tree, "rss_before_mb": rss_before}
    start, start_cpu = time.perf_counter(), cpu_seconds()
    if design == "a":
        model, result, problem = fit_joint(train, settings, [progress])
        out["train_seconds"] = time.perf_counter() - start
        out["n_parts"] = problem.features.n_parts
        out["n_features"] = problem.features.n_features
        out["labels"] = problem.L
        del problem
    else:
        model, result = train_parser(train, root=root, tree=tree, trainer=args.trainer, labels=design == "b",
                                     callbacks=[progress], **settings)
        out["train_seconds"] = time.perf_counter() - start
        out["n_parts"] = int(sum((len(s) + 1) ** 2 for s in train))
        out["n_features"] = model.featurizer.n_features
        out["extract_seconds"] = model.info["extract_seconds"]
        if "labeler" in model.info:
            out["labeler_seconds"] = model.info["labeler"]["seconds"]
            out["labeler_features"] = model.info["labeler"]["n_features"]
            out["labels"] = model.info["labeler"]["labels"]
    out["train_cpu_seconds"] = cpu_seconds() - start_cpu
    out["peak_rss_mb"] = peak_mb()
    final = result.final
    out.update(passes=final.passes, eff_iters=final.eff_iters, opt_seconds=final.seconds, rel_gap=final.rel_gap,
               converged=result.converged, out_of_time=final.seconds >= settings["max_seconds"])
    del result

    model.parse(test[:10])
    start = time.perf_counter()
    parsed = model.parse(test)
    out["parse_seconds"] = time.perf_counter() - start
    scores = attachment_scores(test, parsed)
    out.update(test_tokens=scores["tokens"], uas=scores["uas"], las=scores["las"], uas_nopunct=scores["uas_nopunct"],
               las_nopunct=scores["las_nopunct"])
    out["peak_rss_after_parse_mb"] = peak_mb()
    return out


def current_rss_mb(pid: int | str = "self") -> float:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def run_child(args, design: str, limit: int, C: float) -> dict:
    """Run one worker in a subprocess under the memory and time guards."""
    with tempfile.TemporaryDirectory() as tmp:
        result_path, progress_path = Path(tmp) / "result.json", Path(tmp) / "progress.json"
        cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", design, "--data", args.data,
               "--limit", str(limit), "--C", repr(C), "--passes", str(args.passes), "--trainer", args.trainer,
               "--tree", args.tree, "--max-minutes", repr(args.max_minutes), "--out-json", str(result_path),
               "--progress", str(progress_path)]
        proc = subprocess.Popen(cmd, cwd=ROOT)
        start = time.monotonic()
        top = 0.0
        stopped = None
        while proc.poll() is None:
            time.sleep(0.5)
            top = max(top, current_rss_mb(proc.pid))
            if top > args.max_gb * 1024:
                stopped = f"killed above {args.max_gb:g} GB"
            elif time.monotonic() - start > args.kill_minutes * 60:
                stopped = f"killed after {args.kill_minutes:g} min"
            if stopped:
                proc.kill()
                proc.wait()
                break
        if stopped is None and proc.returncode != 0:
            stopped = f"exit status {proc.returncode}"
        if stopped is None:
            return json.loads(result_path.read_text())
        progress = json.loads(progress_path.read_text()) if progress_path.exists() else None
        log(f"{design} n={limit} C={C:g}: {stopped}; last record {progress}")
        return {"design": design, "limit": limit, "C": C, "stopped": stopped, "progress": progress,
                "peak_rss_mb": top, "wall_seconds": time.monotonic() - start}


# ---------------------------------------------------------------------------
# Per-part state on a full training set, without training
# ---------------------------------------------------------------------------


def state_size(data: str) -> dict:
    from egnlp.corpora import load_dataset

    train = load_dataset(data, "train")
    cells = int(sum((len(s) + 1) ** 2 for s in train))
    words = int(sum(len(s) for s in train))
    L = len({label for s in train for label in s.deprels})
    return {"data": data, "sentences": len(train), "words": words, "labels": L, "cells": cells,
            "labeled_parts": cells * L, "longest": max(len(s) for s in train)}


def state_table(st: dict) -> str:
    cells, parts, L, words = st["cells"], st["labeled_parts"], st["labels"], st["words"]
    rows = [  # design, array, count, bytes each
        ["unlabeled, and the parser of (b)", "EG theta, mu (float64)", f"{cells:,} arc cells", 16, cells],
        ["", "gold, loss (float64)", f"{cells:,} arc cells", 16, cells],
        ["(b) labeler only", "CD sums S (float64, no EG state)", f"{words:,} words x {L} labels", 8, words * L],
        ["(a) joint labeled arcs", "EG theta, mu (float64)", f"{parts:,} parts ({L} x cells)", 16, parts],
        ["", "gold, loss (uint8)", f"{parts:,} parts", 2, parts],
    ]
    rows = [[d, what, count, size, f"{size * n / 2 ** 20:,.0f}"] for d, what, count, size, n in rows]
    head = (f"Per-part state on the full `{st['data']}` training set ({st['sentences']:,} sentences, "
            f"{words:,} words, longest {st['longest']}, {L} labels), counted, not trained:")
    return head + "\n\n" + md_table(["design", "array", "count", "bytes each", "MiB"], rows)


# ---------------------------------------------------------------------------
# Report
# ---------------------------------------------------------------------------


def md_table(headers: list[str], rows: list[list]) -> str:
    lines = ["| " + " | ".join(headers) + " |", "|:---|" + "---:|" * (len(headers) - 1)]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def results_table(results: list[dict]) -> str:
    def f(value, fmt):
        return "-" if value is None else format(value, fmt)

    base = {(r["limit"], r["C"]): r for r in results if r["design"] == "unlabeled" and "stopped" not in r}
    rows = []
    for r in results:
        name = {"unlabeled": "unlabeled", "b": "(b) parser + labeler", "a": "(a) joint"}[r["design"]]
        if "stopped" in r:
            p = r.get("progress") or {}
            rows.append([name, f"{r['limit']:,}", f"{r['C']:g}", f"{r['wall_seconds']:,.0f} ({r['stopped']})", "-",
                         f"{p.get('passes', 0)} done", f(p.get("rel_gap"), ".1e"), "-", "-",
                         f"{r['peak_rss_mb']:,.0f} (watched)", "-", "-", "-", "-", "-"])
            continue
        b = base.get((r["limit"], r["C"]))
        time_ratio = r["train_cpu_seconds"] / b["train_cpu_seconds"] if b else None
        mem_ratio = r["peak_rss_mb"] / b["peak_rss_mb"] if b else None
        seconds = f"{r['train_seconds']:,.0f}"
        if r.get("labeler_seconds") is not None:
            seconds += f" ({r['labeler_seconds']:.0f} labeler)"
        passes = f"{r['passes']}" + (" (time limit)" if r.get("out_of_time") else "")
        rows.append([name, f"{r['limit']:,}", f"{r['C']:g}", seconds, f"{r['train_cpu_seconds']:,.0f}", passes,
                     f(r["rel_gap"], ".1e"), f"{r['n_parts']:,}", f"{r['n_parts'] * 16 / 2 ** 20:,.0f}",
                     f"{r['peak_rss_mb']:,.0f}", f"{r['peak_rss_mb'] - r['rss_before_mb']:,.0f}",
                     f"{f(time_ratio, '.2f')} / {f(mem_ratio, '.2f')}",
                     f(r["uas"], ".2f"), f(r["las"], ".2f"),
                     f"{r['test_tokens'] / r['parse_seconds']:,.0f}"])
    return md_table(["design", "train sents", "C", "train s (wall)", "train CPU s", "EG passes", "last rel. gap",
                     "EG parts", "theta+mu MiB", "peak RSS MiB", "RSS growth MiB", "x unlabeled (CPU s / peak RSS)",
                     "test UAS", "test LAS", "parse tokens/s"], rows)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", default="es", help="named data set (default: es)")
    ap.add_argument("--limits", default="500,1000", help="comma-separated numbers of training sentences (0: all)")
    ap.add_argument("--Cs", default="100,10", help="comma-separated C values (default: 100,10)")
    ap.add_argument("--passes", type=int, default=60,
                    help="EG pass limit, the same for every design (default: 60, EGConfig's)")
    ap.add_argument("--trainer", default="eg-mm", help="structured trainer of the registry (default: eg-mm)")
    ap.add_argument("--tree", default=PROJECTIVE,
                    help="tree space: projective (train_parser's default), non-projective, auto")
    ap.add_argument("--designs", default=",".join(DESIGNS), help="comma-separated: unlabeled, b, a")
    ap.add_argument("--max-gb", type=float, default=8.0, help="kill a run whose resident memory exceeds this")
    ap.add_argument("--max-minutes", type=float, default=20.0,
                    help="EG optimisation time limit of every run (EGConfig.max_seconds), in minutes (default: 20)")
    ap.add_argument("--kill-minutes", type=float, default=45.0, help="kill a run whose wall time exceeds this")
    ap.add_argument("--state-only", action="store_true", help="only the per-part state table of the full training set")
    ap.add_argument("--out-json", type=Path, help="also write the numbers to this JSON file")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--limit", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--C", type=float, help=argparse.SUPPRESS)
    ap.add_argument("--progress", help=argparse.SUPPRESS)
    args = ap.parse_args()
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

    if args.worker:
        result = run_worker(args)
        if args.out_json:
            args.out_json.write_text(json.dumps(result))
        else:
            print(json.dumps(result))
        return

    st = state_size(args.data)
    if args.state_only:
        print(state_table(st))
        return
    designs = [d.strip() for d in args.designs.split(",") if d.strip()]
    for d in designs:
        if d not in DESIGNS:
            raise SystemExit(f"unknown design {d!r}: use {', '.join(DESIGNS)}")
    limits = [int(x) for x in args.limits.split(",")]
    Cs = [float(x) for x in args.Cs.split(",")]
    load = os.getloadavg()[0]
    log(f"{os.cpu_count()} CPUs, load average {load:.2f} at the start")
    results = []
    for limit in limits:
        for C in Cs:
            for design in designs:
                results.append(run_child(args, design, limit, C))
                if args.out_json:
                    args.out_json.write_text(json.dumps({"state": st, "runs": results}, indent=2) + "\n")
    first = next((r for r in results if "stopped" not in r), {})
    text = [f"Data set `{args.data}`, test split; trainer {args.trainer}, at most {args.passes} passes and "
            f"{args.max_minutes:g} min of optimisation (tol 1e-3, C annealed as EGConfig does); "
            f"root {first.get('root')}, tree space {first.get('tree')}; {os.cpu_count()} CPUs, load average {load:.2f} "
            f"at the start, {os.getloadavg()[0]:.2f} at the end.", "", results_table(results), "", state_table(st)]
    print("\n".join(text))


if __name__ == "__main__":
    main()
