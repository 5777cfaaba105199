"""Chain kernels against brute-force enumeration of every labelling.

For n <= 5 tokens and L <= 4 labels all L^n labellings are enumerated:
log Z, node and edge marginals, Viterbi and loss-augmented Viterbi must
agree with the kernels; marginals must be the derivatives of log Z; long
sentences with large scores must stay finite.
"""

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from egnlp.tagger.chain_inference import (forward_backward, forward_backward_pairs, hamming_cost, log_partition,
                                          part_log_partition, part_marginals, path_score, viterbi, viterbi_augmented)


def random_chain(rng, n, L, scale=2.0):
    return (rng.normal(scale=scale, size=(n, L)), rng.normal(scale=scale, size=(L, L)),
            rng.normal(scale=scale, size=L), rng.normal(scale=scale, size=L))


def brute_force(e, tr, st, sp, cost=None):
    """log Z, node marginals, summed edge marginals, per-position edge marginals, best path, best augmented path."""
    n, L = e.shape
    paths = np.array(list(itertools.product(range(L), repeat=n)))
    scores = np.array([path_score(e, tr, st, sp, y) for y in paths])
    log_z = np.logaddexp.reduce(scores)
    p = np.exp(scores - log_z)
    node = np.zeros((n, L))
    edge_t = np.zeros((max(n - 1, 0), L, L))
    for y, py in zip(paths, p):
        node[np.arange(n), y] += py
        for t in range(1, n):
            edge_t[t - 1, y[t - 1], y[t]] += py
    best = paths[int(np.argmax(scores))]
    best_aug = None
    if cost is not None:
        aug = scores + np.array([cost[np.arange(n), y].sum() for y in paths])
        best_aug = (paths[int(np.argmax(aug))], float(aug.max()))
    return log_z, node, edge_t.sum(axis=0), edge_t, (best, float(scores.max())), best_aug


CASES = [(n, L, seed) for n in (1, 2, 3, 5) for L in (1, 2, 4) for seed in (0, 1) if L ** n <= 1024]


@pytest.mark.parametrize("n,L,seed", CASES)
def test_against_brute_force(n, L, seed):
    rng = np.random.default_rng(seed * 100 + n * 10 + L)
    e, tr, st, sp = random_chain(rng, n, L)
    gold = rng.integers(0, L, size=n)
    cost = hamming_cost(gold, L)
    log_z, node, edge, edge_t, (best, best_score), (aug_path, aug_score) = brute_force(e, tr, st, sp, cost)

    assert log_partition(e, tr, st, sp) == pytest.approx(log_z, rel=1e-12, abs=1e-12)
    z, mu, mu_e, mu_t = forward_backward(e, tr, st, sp, per_position=True)
    assert z == pytest.approx(log_z, rel=1e-12, abs=1e-12)
    np.testing.assert_allclose(mu, node, atol=1e-12)
    np.testing.assert_allclose(mu_e, edge, atol=1e-12)
    np.testing.assert_allclose(mu_t, edge_t, atol=1e-12)
    np.testing.assert_allclose(mu.sum(axis=1), 1.0)
    assert mu_e.sum() == pytest.approx(n - 1)

    path, score = viterbi(e, tr, st, sp)
    np.testing.assert_array_equal(path, best)
    assert score == pytest.approx(best_score)
    assert score <= z + 1e-12

    path, score = viterbi_augmented(e, tr, st, sp, gold=gold)
    assert score == pytest.approx(aug_score)
    np.testing.assert_array_equal(path, aug_path)
    assert score == pytest.approx(path_score(e, tr, st, sp, path) + float((path != gold).sum()))
    cost2 = rng.uniform(0, 3, size=(n, L))
    path2, score2 = viterbi_augmented(e, tr, st, sp, cost=cost2)
    _, _, _, _, _, (ref2, ref_score2) = brute_force(e, tr, st, sp, cost2)
    assert score2 == pytest.approx(ref_score2)
    np.testing.assert_array_equal(path2, ref2)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("scale", [1.0, 40.0])
def test_sparse_transitions_against_brute_force(seed, scale):
    """Most transition scores exactly 0 (a tagger's pairs without a part): the charts take the sparse
    path (5 of 16 pairs non-zero), some scores large and negative (cancellation) or -inf; the
    marginals of chosen pairs and of a flat part vector agree with enumeration."""
    rng = np.random.default_rng(seed)
    n, L = 5, 4
    e, _, st, sp = random_chain(rng, n, L)
    tr = np.zeros((L, L))
    cells = rng.choice(L * L, size=5, replace=False)
    tr.flat[cells] = rng.normal(scale=scale, size=5)
    tr.flat[cells[0]] = -scale * 20.0  # exp(D) - c cancels against c
    if seed % 2:
        tr.flat[cells[1]] = -np.inf
    log_z, node, edge, _, _, _ = brute_force(e, tr, st, sp)
    assert log_partition(e, tr, st, sp) == pytest.approx(log_z, rel=1e-12, abs=1e-12)
    pairs = np.array([(a, b) for a in range(L) for b in range(L) if (a * L + b) % 3 != 1 or tr[a, b] != 0.0])
    z, mu, mu_e = forward_backward_pairs(e, tr, st, sp, pairs)
    assert z == pytest.approx(log_z, rel=1e-12, abs=1e-12)
    np.testing.assert_allclose(mu, node, atol=1e-12)
    np.testing.assert_allclose(mu_e, edge[pairs[:, 0], pairs[:, 1]], atol=1e-12)
    if seed % 2 == 0:  # a flat part vector: finite scores, the pairs' own, every other transition 0
        seen = pairs[tr[pairs[:, 0], pairs[:, 1]] != 0.0]
        theta = np.concatenate([e.reshape(-1), tr[seen[:, 0], seen[:, 1]], st, sp])
        z2, parts = part_marginals(theta, n, L, seen)
        assert z2 == pytest.approx(log_z, rel=1e-12, abs=1e-12)
        assert part_log_partition(theta, n, L, seen) == pytest.approx(log_z, rel=1e-12, abs=1e-12)
        np.testing.assert_allclose(parts, np.concatenate([node.reshape(-1), edge[seen[:, 0], seen[:, 1]],
                                                          node[0], node[-1]]), atol=1e-12)
        with pytest.raises(ValueError, match="finite"):
            part_marginals(np.where(np.arange(theta.size) == 0, np.inf, theta), n, L, seen)
        with pytest.raises(ValueError, match="shape"):
            part_log_partition(theta[:-1], n, L, seen)


def test_forbidden_transitions_get_zero_marginals():
    rng = np.random.default_rng(3)
    e, tr, st, sp = random_chain(rng, 4, 3)
    tr[0, 1] = -np.inf
    st[2] = -np.inf
    log_z, node, edge, edge_t, (best, _), _ = brute_force(e, tr, st, sp)
    z, mu, mu_e = forward_backward(e, tr, st, sp)
    assert z == pytest.approx(log_z)
    np.testing.assert_allclose(mu, node, atol=1e-12)
    np.testing.assert_allclose(mu_e, edge, atol=1e-12)
    assert mu_e[0, 1] == 0.0 and mu[0, 2] == 0.0
    np.testing.assert_array_equal(viterbi(e, tr, st, sp)[0], best)


def test_marginals_are_derivatives_of_log_z():
    rng = np.random.default_rng(7)
    e, tr, st, sp = random_chain(rng, 6, 3)
    _, node, edge = forward_backward(e, tr, st, sp)
    h = 1e-6
    for arr, mu in ((e, node), (tr, edge), (st, node[0]), (sp, node[-1])):
        for idx in np.ndindex(arr.shape):
            old = arr[idx]
            arr[idx] = old + h
            up = log_partition(e, tr, st, sp)
            arr[idx] = old - h
            down = log_partition(e, tr, st, sp)
            arr[idx] = old
            assert (up - down) / (2 * h) == pytest.approx(mu[idx], abs=1e-7)


def test_long_sentence_with_large_scores_stays_finite():
    rng = np.random.default_rng(11)
    n, L = 150, 5
    e, tr, st, sp = random_chain(rng, n, L, scale=1e3)
    log_z, node, edge = forward_backward(e, tr, st, sp)
    path, score = viterbi(e, tr, st, sp)
    assert np.isfinite(log_z) and np.all(np.isfinite(node)) and np.all(np.isfinite(edge))
    np.testing.assert_allclose(node.sum(axis=1), 1.0)
    assert edge.sum() == pytest.approx(n - 1)
    # With scores this large the distribution sits on the Viterbi path.
    assert score <= log_z <= score + n * np.log(L)
    assert node[np.arange(n), path].min() > 0.5
    assert score == pytest.approx(path_score(e, tr, st, sp, path))


def test_wrappers_reject_bad_input():
    e, tr, st, sp = random_chain(np.random.default_rng(0), 3, 2)
    with pytest.raises(ValueError, match="transitions"):
        forward_backward(e, tr[:1], st, sp)
    with pytest.raises(ValueError, match="emissions"):
        viterbi(np.zeros((0, 2)), tr, st, sp)
    bad = e.copy()
    bad[0, 0] = np.nan
    with pytest.raises(ValueError, match="finite"):
        log_partition(bad, tr, st, sp)
    with pytest.raises(ValueError, match="exactly one"):
        viterbi_augmented(e, tr, st, sp)
    with pytest.raises(ValueError, match="forbidden"):
        log_partition(e, tr, np.full(2, -np.inf), sp)


@settings(deadline=None, max_examples=40)
@given(n=st.integers(1, 8), L=st.integers(1, 5), seed=st.integers(0, 2 ** 31 - 1), shift=st.floats(-50, 50))
def test_properties(n, L, seed, shift):
    rng = np.random.default_rng(seed)
    e, tr, st_, sp = random_chain(rng, n, L)
    log_z, node, edge = forward_backward(e, tr, st_, sp)
    path, score = viterbi(e, tr, st_, sp)
    # score(argmax) <= log Z <= score(argmax) + n log L
    assert score <= log_z + 1e-9 and log_z <= score + n * np.log(L) + 1e-9
    np.testing.assert_allclose(node.sum(axis=1), 1.0)
    np.testing.assert_allclose(edge.sum(axis=0), node[1:].sum(axis=0), atol=1e-9)
    np.testing.assert_allclose(edge.sum(axis=1), node[:-1].sum(axis=0), atol=1e-9)
    # A constant added to every label of one token shifts log Z only.
    t = int(rng.integers(0, n))
    e2 = e.copy()
    e2[t] += shift
    z2, node2, edge2 = forward_backward(e2, tr, st_, sp)
    assert z2 == pytest.approx(log_z + shift, abs=1e-8)
    np.testing.assert_allclose(node2, node, atol=1e-9)
    np.testing.assert_array_equal(viterbi(e2, tr, st_, sp)[0], path)


@pytest.mark.parametrize("seed", range(6))
def test_huge_scores_against_brute_force(seed):
    """Scores of magnitude 1e3 drive the scaled sums below underflow: the exact fallbacks must agree."""
    rng = np.random.default_rng(seed)
    n, L = 4, 3
    e, tr, st, sp = random_chain(rng, n, L, scale=400.0)
    if seed % 2:
        tr[rng.integers(0, L), rng.integers(0, L)] = -np.inf
    log_z, node, edge, edge_t, (best, best_score), _ = brute_force(e, tr, st, sp)
    z, mu, mu_e, mu_t = forward_backward(e, tr, st, sp, per_position=True)
    assert z == pytest.approx(log_z, rel=1e-13)
    assert log_partition(e, tr, st, sp) == pytest.approx(log_z, rel=1e-13)
    np.testing.assert_allclose(mu, node, atol=1e-10)
    np.testing.assert_allclose(mu_e, edge, atol=1e-10)
    np.testing.assert_allclose(mu_t, edge_t, atol=1e-10)
    np.testing.assert_array_equal(viterbi(e, tr, st, sp)[0], best)


def reference_viterbi(e, tr, st, sp):
    """Viterbi written the plain way: at each step and label the first (smallest) best previous label."""
    n, L = e.shape
    delta = st + e[0]
    back = np.zeros((n, L), dtype=np.int64)
    for t in range(1, n):
        cand = delta[:, None] + tr  # cand[a, b]
        back[t] = np.argmax(cand, axis=0)
        delta = e[t] + cand[back[t], np.arange(L)]
    path = np.empty(n, dtype=np.int64)
    path[-1] = int(np.argmax(delta + sp))
    for t in range(n - 1, 0, -1):
        path[t - 1] = back[t, path[t]]
    return path, float((delta + sp)[path[-1]])


@pytest.mark.parametrize("seed", range(6))
def test_ties_unseen_and_forbidden_transitions(seed):
    # A tagger's transitions are 0 where no part exists and may be -inf where forbidden; small integer
    # scores make ties everywhere.  Viterbi keeps the smallest label of a tie at every step, as the plain
    # loop does; the summed edge marginals are the per-position ones summed, to the bit, and brute force.
    rng = np.random.default_rng(seed)
    n, L = (4, 4) if seed % 2 else (30, 9)
    e = rng.integers(-2, 3, size=(n, L)).astype(float)
    tr = rng.integers(-2, 3, size=(L, L)).astype(float)
    tr[rng.random((L, L)) < 0.5] = 0.0
    if seed % 3 == 0:
        tr[rng.random((L, L)) < 0.3] = -np.inf
    st, sp = rng.integers(-1, 2, size=L).astype(float), np.zeros(L)
    path, score = viterbi(e, tr, st, sp)
    ref_path, ref_score = reference_viterbi(e, tr, st, sp)
    np.testing.assert_array_equal(path, ref_path)
    assert score == ref_score
    z, mu, mu_e = forward_backward(e, tr, st, sp)
    z_t, mu_t, mu_e_t, per_t = forward_backward(e, tr, st, sp, per_position=True)
    assert z == z_t
    np.testing.assert_array_equal(mu, mu_t)
    np.testing.assert_array_equal(mu_e, mu_e_t)
    np.testing.assert_allclose(mu_e, per_t.sum(axis=0), atol=1e-12)
    if L ** n <= 1024:
        log_z, node, edge, _, (_, best_score), _ = brute_force(e, tr, st, sp)
        assert z == pytest.approx(log_z, rel=1e-12)
        np.testing.assert_allclose(mu_e, edge, atol=1e-12)
        assert score == pytest.approx(best_score)


# -- lattices (a label set per token) -------------------------------------------------------------

def random_lattice(rng, n, L, scale=2.0, n_pairs=None):
    """(theta, aptr, alab, pairs) of a random lattice: each token 1..L distinct labels, some listed pairs."""
    sizes = rng.integers(1, L + 1, size=n)
    alab = np.concatenate([np.sort(rng.choice(L, size=k, replace=False)) for k in sizes])
    aptr = np.concatenate([[0], np.cumsum(sizes)])
    every = np.array([(a, b) for a in range(L) for b in range(L)]).reshape(-1, 2)
    k = rng.integers(0, L * L + 1) if n_pairs is None else n_pairs
    pairs = every[np.sort(rng.choice(L * L, size=k, replace=False))]
    theta = rng.normal(scale=scale, size=alab.shape[0] + k + sizes[0] + sizes[-1])
    return theta, aptr, alab, pairs


def lattice_brute_force(theta, aptr, alab, pairs, L):
    """log Z, mu (the flat layout) and the best path's labels and score by enumerating the lattice."""
    n = aptr.shape[0] - 1
    Q, P = alab.shape[0], pairs.shape[0]
    start0, stop0 = Q + P, Q + P + aptr[1] - aptr[0]
    index = {(int(a), int(b)): k for k, (a, b) in enumerate(pairs)}
    scores, used = [], []
    for entries in itertools.product(*[range(aptr[t], aptr[t + 1]) for t in range(n)]):
        parts = list(entries) + [start0 + entries[0] - aptr[0], stop0 + entries[-1] - aptr[n - 1]]
        parts += [Q + index[int(alab[r]), int(alab[q])] for r, q in zip(entries, entries[1:])
                  if (int(alab[r]), int(alab[q])) in index]
        used.append((entries, parts))
        scores.append(theta[parts].sum())
    scores = np.array(scores)
    log_z = np.logaddexp.reduce(scores)
    mu = np.zeros(theta.shape[0])
    for (_, parts), s in zip(used, scores):
        np.add.at(mu, parts, np.exp(s - log_z))
    best = int(np.argmax(scores))
    return log_z, mu, alab[list(used[best][0])], float(scores[best])


@pytest.mark.parametrize("seed", range(16))
def test_lattice_against_brute_force(seed):
    from egnlp.tagger.chain_inference import lattice_log_partition, lattice_marginals, lattice_viterbi
    rng = np.random.default_rng(seed)
    n, L = int(rng.integers(1, 5)), int(rng.integers(1, 5))
    theta, aptr, alab, pairs = random_lattice(rng, n, L, scale=2.0 if seed < 12 else 400.0)  # scaled / exact sums
    log_z, mu, best, best_score = lattice_brute_force(theta, aptr, alab, pairs, L)
    z, m = lattice_marginals(theta, aptr, alab, pairs, L)
    assert z == pytest.approx(log_z, rel=1e-12, abs=1e-12)
    np.testing.assert_allclose(m, mu, atol=1e-12)
    assert lattice_log_partition(theta, aptr, alab, pairs, L) == pytest.approx(log_z, rel=1e-12, abs=1e-12)
    path, score = lattice_viterbi(theta, aptr, alab, pairs, L)
    np.testing.assert_array_equal(path, best)
    assert score == pytest.approx(best_score, rel=1e-12, abs=1e-12)


@pytest.mark.parametrize("seed,scale,pair_scale", [(0, 1.0, 1.0), (1, 2000.0, 20.0), (2, 300.0, 300.0),
                                                    (3, 3000.0, 3000.0)])
def test_full_lattice_is_the_dense_chain_of_a_long_sentence(seed, scale, pair_scale):
    """Every label at every token: the lattice's layout is the dense parts' (part_marginals), n = 150, with
    scores up to thousands: scaled sums while the transition scores span less than 600, exact
    log-space sums beyond (no overflow, no underflow either way)."""
    from egnlp.tagger.chain_inference import lattice_log_partition, lattice_marginals, lattice_viterbi
    rng = np.random.default_rng(seed)
    n, L = 150, 7
    every = np.array([(a, b) for a in range(L) for b in range(L)])
    pairs = every[np.sort(rng.choice(L * L, size=20, replace=False))]
    theta = rng.normal(scale=scale, size=n * L + 20 + 2 * L)
    theta[n * L:n * L + 20] = rng.normal(scale=pair_scale, size=20)
    aptr, alab = np.arange(n + 1) * L, np.tile(np.arange(L), n)
    z, mu = lattice_marginals(theta, aptr, alab, pairs, L)
    z0, mu0 = part_marginals(theta, n, L, pairs)
    assert np.isfinite(z) and z == pytest.approx(z0, rel=1e-11)
    np.testing.assert_allclose(mu, mu0, atol=1e-9)
    assert lattice_log_partition(theta, aptr, alab, pairs, L) == pytest.approx(z0, rel=1e-11)
    em = theta[:n * L].reshape(n, L)
    tr = np.zeros((L, L))
    tr[pairs[:, 0], pairs[:, 1]] = theta[n * L:n * L + 20]
    best, score = viterbi(em, tr, theta[n * L + 20:n * L + 20 + L], theta[n * L + 20 + L:])
    path, lscore = lattice_viterbi(theta, aptr, alab, pairs, L)
    np.testing.assert_array_equal(path, best)
    assert lscore == pytest.approx(score, rel=1e-12)


def test_lattice_wrappers_reject_bad_input():
    from egnlp.tagger.chain_inference import lattice_marginals
    theta, aptr, alab, pairs = random_lattice(np.random.default_rng(0), 3, 3)
    with pytest.raises(ValueError, match="theta has shape"):
        lattice_marginals(theta[:-1], aptr, alab, pairs, 3)
    with pytest.raises(ValueError, match="at least one label"):
        lattice_marginals(theta, np.array([0, 0, len(alab)]), alab, pairs, 3)
    with pytest.raises(ValueError, match="must lie in"):
        lattice_marginals(theta, aptr, alab, pairs, 2)
    bad = theta.copy()
    bad[0] = np.inf
    with pytest.raises(ValueError, match="finite"):
        lattice_marginals(bad, aptr, alab, pairs, 3)
