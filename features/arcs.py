"""First-order arc features for dependency parsing.

The templates follow McDonald, Crammer and Pereira (2005), "Online
large-margin training of dependency parsers", Table 1, as used for the
CoNLL-X Spanish experiment of Collins et al. (2008, Sec. 7.2).  For an arc
from head h to modifier m (position 0 is the root):

- unigram and bigram templates over (word, POS) of h and m: hw.hp, hw, hp,
  mw.mp, mw, mp, hw.hp.mw.mp, hp.mw.mp, hw.mw.mp, hw.hp.mp, hw.hp.mw, hw.mw,
  hp.mp; the same 13 again over (5-character prefix of the lower-cased word,
  coarse POS), so long words back off to their prefix;
- in-between: hp.bp.mp for the POS bp of every word strictly between h and m;
- surrounding POS 4-grams (h-1, h, m-1, m), (h, h+1, m-1, m),
  (h-1, h, m, m+1), (h, h+1, m, m+1), over fine and over coarse POS;
- a bias.

Every template fires twice: alone and conjoined with the attachment
direction and the binned distance |h - m| in {1, 2, 3, 4, 5, 6-10, 11+}.

Keys become ids through an alphabet (the keys of the gold arcs of the
training data, as MSTParser does) or by hashing into 2^bits buckets.

Encoded corpora: ``tok_ptr`` (n_sentences + 1,) int64 and ``atoms``
(n_rows, 4) int64, one row per token plus a leading root row per sentence,
columns ``WORD, PREFIX, POS, CPOS`` (hashes of the strings).  Sentence ``s``
has rows ``tok_ptr[s]:tok_ptr[s + 1]``, its root first.  Parts are the
(n+1) x (n+1) cells [head, modifier] in row-major order; cells with m = 0
or h = m have no features.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit

from features.csr import PartFeatures
from features.hashing import KeyTable, StringHasher, cached_lookup, combine, hash_string, new_cache

WORD, PREFIX, POS, CPOS, LEMMA, FEATS = 0, 1, 2, 3, 4, 5
N_ATOMS = 6
PREFIX_LEN = 5
ROOT_TOKEN = "<root>"
#: Version of the template set: part of every model file, checked on load.
TEMPLATES_VERSION = "mcdonald2005-first-order-v2"

_N_FIXED = 39 + 4 + 8 + 1  # pair templates, FEATS, surrounding POS 4-grams, bias
_N_BETWEEN = 2  # in-between trigrams per word between head and modifier
N_SLOTS = 16  # slot 0: a template alone; 1..15: with direction and distance
USE_LEMMA = 1
USE_FEATS = 2
_PAD_LEFT = np.int64(hash_string("<pad-left>"))
_PAD_RIGHT = np.int64(hash_string("<pad-right>"))


@dataclass
class EncodedCorpus:
    """Sentences as integer atoms (see the module docstring)."""

    tok_ptr: np.ndarray
    atoms: np.ndarray

    def __len__(self) -> int:
        return self.tok_ptr.shape[0] - 1

    def length(self, s: int) -> int:
        """Number of words of sentence ``s`` (without the root)."""
        return int(self.tok_ptr[s + 1] - self.tok_ptr[s] - 1)

    def heads_rows(self, heads_list) -> np.ndarray:
        """Gold heads laid out like ``atoms`` rows (-1 on root rows)."""
        out = np.full(self.atoms.shape[0], -1, dtype=np.int64)
        for s, heads in enumerate(heads_list):
            base = int(self.tok_ptr[s])
            out[base + 1 : base + 1 + len(heads)] = heads
        return out


def encode(sentences, hasher: StringHasher | None = None, coarse_from_pos: bool = False) -> EncodedCorpus:
    """Turn sentences (``forms``, ``lemmas``, ``cpos``, ``pos``, ``feats``) into atoms.

    With ``coarse_from_pos`` the coarse tag is the first character of the
    POS tag (for treebanks without a coarse tag column, e.g. the WSJ).
    """
    hasher = hasher or StringHasher()
    lengths = np.array([len(s) + 1 for s in sentences], dtype=np.int64)
    tok_ptr = np.zeros(len(sentences) + 1, dtype=np.int64)
    np.cumsum(lengths, out=tok_ptr[1:])
    atoms = np.empty((int(tok_ptr[-1]), N_ATOMS), dtype=np.int64)
    root = hasher(ROOT_TOKEN)
    for s, sent in enumerate(sentences):
        base = int(tok_ptr[s])
        atoms[base] = root
        rows = slice(base + 1, int(tok_ptr[s + 1]))
        atoms[rows, WORD] = hasher.array(sent.forms)
        atoms[rows, PREFIX] = hasher.array([f.lower()[:PREFIX_LEN] for f in sent.forms])
        atoms[rows, POS] = hasher.array(sent.pos)
        atoms[rows, CPOS] = hasher.array([p[:1] for p in sent.pos] if coarse_from_pos else sent.cpos)
        atoms[rows, LEMMA] = hasher.array([lemma.lower() if lemma != "_" else form.lower()[:PREFIX_LEN]
                                           for form, lemma in zip(sent.forms, sent.lemmas)])
        atoms[rows, FEATS] = hasher.array(sent.feats)
    return EncodedCorpus(tok_ptr, atoms)


@njit(cache=True)
def _key(template, a, b, c, d):
    """Key of a template over up to four atoms (unused atoms are 0)."""
    k = combine(np.uint64(template + 1), a)
    k = combine(k, b)
    k = combine(k, c)
    return combine(k, d)


@njit(cache=True)
def _emit(out, count, key):
    # One template instance (0 is reserved for empty hash-table slots).
    out[count] = key if key != 0 else np.uint64(1)
    return count + 1


@njit(cache=True)
def dirdist_slot(h, m):
    """Slot 1..15 of the direction (bit 8: head left of modifier) and distance bin."""
    dist = abs(h - m)
    dbin = dist if dist <= 5 else (6 if dist <= 10 else 7)
    return dbin + (8 if h < m else 0)


@njit(cache=True)
def _atom(atoms, base, n, pos, col):
    if pos < 0:
        return _PAD_LEFT
    if pos > n:
        return _PAD_RIGHT
    return atoms[base + pos, col]


@njit(cache=True)
def arc_keys(atoms, base, n, h, m, flags, out):
    """Write the template keys of arc h -> m into ``out``; return their number.

    ``flags``: ``USE_LEMMA`` adds the (lemma, POS) pair set, ``USE_FEATS``
    the FEATS templates (templates over empty columns would only repeat others).

    ``out`` needs room for ``_N_FIXED + _N_BETWEEN * n`` keys.  Each key is a feature alone
    (slot 0) and conjoined with :func:`dirdist_slot` (slots 1..15).
    """
    c = 0
    t = 0
    # Head/modifier unigrams and bigrams: (word, POS), then (prefix, coarse POS).
    for wcol, pcol in ((WORD, POS), (PREFIX, CPOS), (LEMMA, POS)):
        if wcol == LEMMA and not flags & USE_LEMMA:
            break
        hw = atoms[base + h, wcol]
        hp = atoms[base + h, pcol]
        mw = atoms[base + m, wcol]
        mp = atoms[base + m, pcol]
        c = _emit(out, c, _key(t + 0, hw, hp, 0, 0))
        c = _emit(out, c, _key(t + 1, hw, 0, 0, 0))
        c = _emit(out, c, _key(t + 2, hp, 0, 0, 0))
        c = _emit(out, c, _key(t + 3, mw, mp, 0, 0))
        c = _emit(out, c, _key(t + 4, mw, 0, 0, 0))
        c = _emit(out, c, _key(t + 5, mp, 0, 0, 0))
        c = _emit(out, c, _key(t + 6, hw, hp, mw, mp))
        c = _emit(out, c, _key(t + 7, hp, mw, mp, 0))
        c = _emit(out, c, _key(t + 8, hw, mw, mp, 0))
        c = _emit(out, c, _key(t + 9, hw, hp, mp, 0))
        c = _emit(out, c, _key(t + 10, hw, hp, mw, 0))
        c = _emit(out, c, _key(t + 11, hw, mw, 0, 0))
        c = _emit(out, c, _key(t + 12, hp, mp, 0, 0))
        t += 13
    t = 39
    # Morphology: the whole FEATS strings with coarse POS.
    if flags & USE_FEATS:
        hp = atoms[base + h, CPOS]
        mp = atoms[base + m, CPOS]
        hf = atoms[base + h, FEATS]
        mf = atoms[base + m, FEATS]
        c = _emit(out, c, _key(t + 0, hp, hf, 0, 0))
        c = _emit(out, c, _key(t + 1, mp, mf, 0, 0))
        c = _emit(out, c, _key(t + 2, hp, hf, mp, mf))
        c = _emit(out, c, _key(t + 3, hf, mf, 0, 0))
    t += 4
    # Surrounding POS 4-grams, fine then coarse.
    for pcol in (POS, CPOS):
        hp = atoms[base + h, pcol]
        mp = atoms[base + m, pcol]
        hl = _atom(atoms, base, n, h - 1, pcol)
        hr = _atom(atoms, base, n, h + 1, pcol)
        ml = _atom(atoms, base, n, m - 1, pcol)
        mr = _atom(atoms, base, n, m + 1, pcol)
        c = _emit(out, c, _key(t + 0, hl, hp, ml, mp))
        c = _emit(out, c, _key(t + 1, hp, hr, ml, mp))
        c = _emit(out, c, _key(t + 2, hl, hp, mp, mr))
        c = _emit(out, c, _key(t + 3, hp, hr, mp, mr))
        t += 4
    c = _emit(out, c, _key(t, 0, 0, 0, 0))
    t += 1
    # In-between POS trigrams, fine then coarse.
    for pcol in (POS, CPOS):
        hp = atoms[base + h, pcol]
        mp = atoms[base + m, pcol]
        for b in range(min(h, m) + 1, max(h, m)):
            c = _emit(out, c, _key(t, hp, atoms[base + b, pcol], mp, 0))
        t += 1
    return c


@njit(cache=True)
def _arc_ids(atoms, base, n, h, m, flags, table_keys, table_vals, idmap, hash_bits, cache_keys, cache_vals,
             keys, ids):
    """Feature ids of arc h -> m written to ``ids``; returns their number.

    ``keys`` is work space for :func:`arc_keys`; ``ids`` needs twice its room;
    ``cache_keys`` / ``cache_vals`` come from :func:`features.hashing.new_cache`.
    """
    k = arc_keys(atoms, base, n, h, m, flags, keys)
    slot = dirdist_slot(h, m)
    c = 0
    for j in range(k):
        key = keys[j]
        if hash_bits > 0:
            shift = np.uint64(64 - hash_bits)
            ids[c] = np.int64(combine(key, 0) >> shift)
            ids[c + 1] = np.int64(combine(key, slot) >> shift)
            c += 2
            continue
        row = cached_lookup(table_keys, table_vals, cache_keys, cache_vals, key)
        if row < 0:
            continue
        for fid in (idmap[row, 0], idmap[row, slot]):
            if fid >= 0:
                ids[c] = fid
                c += 1
    return c


@njit(cache=True)
def _max_length(tok_ptr):
    return np.max(tok_ptr[1:] - tok_ptr[:-1]) - 1


@njit(cache=True)
def _entry_bound(tok_ptr):
    # An upper bound on the number of feature entries of all arcs.
    total = 0
    for s in range(tok_ptr.shape[0] - 1):
        n = tok_ptr[s + 1] - tok_ptr[s] - 1
        for h in range(n + 1):
            for m in range(1, n + 1):
                if h != m:
                    total += 2 * (_N_FIXED + _N_BETWEEN * (abs(h - m) - 1))
    return total


@njit(cache=True)
def _extract(tok_ptr, atoms, flags, table_keys, table_vals, idmap, hash_bits, cache_keys, cache_vals, feat_ptr, feat_ids):
    max_n = _max_length(tok_ptr)
    keys = np.empty(_N_FIXED + _N_BETWEEN * max_n, dtype=np.uint64)
    ids = np.empty(2 * keys.shape[0], dtype=np.int64)
    p = 0
    c = 0
    for s in range(tok_ptr.shape[0] - 1):
        base = tok_ptr[s]
        n = tok_ptr[s + 1] - base - 1
        for h in range(n + 1):
            for m in range(n + 1):
                feat_ptr[p] = c
                p += 1
                if m == 0 or h == m:
                    continue
                k = _arc_ids(atoms, base, n, h, m, flags, table_keys, table_vals, idmap, hash_bits,
                             cache_keys, cache_vals, keys, ids)
                for j in range(k):
                    feat_ids[c + j] = ids[j]
                c += k
    feat_ptr[p] = c
    return c


@njit(cache=True)
def _arc_scores(atoms, base, n, flags, table_keys, table_vals, idmap, hash_bits, cache_keys, cache_vals, w, out):
    keys = np.empty(_N_FIXED + _N_BETWEEN * n, dtype=np.uint64)
    ids = np.empty(2 * keys.shape[0], dtype=np.int64)
    for h in range(n + 1):
        for m in range(n + 1):
            acc = 0.0
            if m != 0 and h != m:
                k = _arc_ids(atoms, base, n, h, m, flags, table_keys, table_vals, idmap, hash_bits,
                             cache_keys, cache_vals, keys, ids)
                for j in range(k):
                    acc += w[ids[j]]
            out[h, m] = acc


@njit(cache=True)
def _gold_keys(tok_ptr, atoms, flags, head_rows):
    """Template keys of every gold arc and the direction/distance slot of each."""
    max_n = _max_length(tok_ptr)
    total = 0
    for s in range(tok_ptr.shape[0] - 1):
        n = tok_ptr[s + 1] - tok_ptr[s] - 1
        total += (_N_FIXED + _N_BETWEEN * n) * n
    out = np.empty(total, dtype=np.uint64)
    slots = np.empty(total, dtype=np.int64)
    buf = np.empty(_N_FIXED + _N_BETWEEN * max_n, dtype=np.uint64)
    c = 0
    for s in range(tok_ptr.shape[0] - 1):
        base = tok_ptr[s]
        n = tok_ptr[s + 1] - base - 1
        for m in range(1, n + 1):
            h = head_rows[base + m]
            k = arc_keys(atoms, base, n, h, m, flags, buf)
            out[c : c + k] = buf[:k]
            slots[c : c + k] = dirdist_slot(h, m)
            c += k
    return out[:c], slots[:c]


class ArcFeaturizer:
    """Maps arcs of encoded sentences to feature ids.

    ``mode="alphabet"`` (MSTParser's choice): the features are those of the
    gold arcs seen by :meth:`fit`, each template instance alone and with its
    direction/distance; other keys are dropped.  A template key is looked up
    once in a hash table whose row (``idmap``, ``N_SLOTS`` ids, -1 where
    absent) gives both ids.  ``mode="hash"``: every feature is hashed into
    ``2**hash_bits`` ids; nothing is dropped and collisions share a weight.

    Which columns the templates read is decided once from the training data
    (:meth:`for_corpus`) and saved with the model: LEMMA and FEATS templates
    only when most training tokens fill those columns, and a coarse tag made
    of the POS tag's first character when the CPOS column says nothing more
    than POS (as in the WSJ data).
    """

    def __init__(self, mode: str = "alphabet", hash_bits: int = 22, *, use_lemma: bool = True,
                 use_feats: bool = True, coarse_from_pos: bool = False,
                 keys: np.ndarray | None = None, codes: np.ndarray | None = None):
        if mode not in ("alphabet", "hash"):
            raise ValueError(f"feature mode must be 'alphabet' or 'hash', not {mode!r}")
        if mode == "hash" and not 8 <= hash_bits <= 30:
            raise ValueError(f"hash_bits must be between 8 and 30, not {hash_bits}")
        self.mode = mode
        self.hash_bits = hash_bits if mode == "hash" else 0
        self.use_lemma = bool(use_lemma)
        self.use_feats = bool(use_feats)
        self.coarse_from_pos = bool(coarse_from_pos)
        self.flags = (USE_LEMMA if self.use_lemma else 0) | (USE_FEATS if self.use_feats else 0)
        self.hasher = StringHasher()
        self._set_alphabet(np.zeros(0, np.uint64) if keys is None else keys,
                           np.zeros(0, np.int64) if codes is None else codes)

    def _set_alphabet(self, keys: np.ndarray, codes: np.ndarray) -> None:
        """``keys``: sorted template keys; ``codes``: sorted ``row * N_SLOTS + slot`` of each feature."""
        self.keys = np.ascontiguousarray(keys, dtype=np.uint64)
        self.codes = np.ascontiguousarray(codes, dtype=np.int64)
        if self.codes.size and (self.codes.min() < 0 or self.codes.max() >= self.keys.size * N_SLOTS):
            raise ValueError("feature codes do not match the template keys")
        self.table = KeyTable(self.keys)
        self._cache = new_cache()
        self.idmap = np.full((self.keys.size, N_SLOTS), -1, dtype=np.int32)
        self.idmap.reshape(-1)[self.codes] = np.arange(self.codes.size, dtype=np.int32)

    @classmethod
    def for_corpus(cls, sentences, mode: str = "alphabet", hash_bits: int = 22) -> "ArcFeaturizer":
        """A featurizer whose column choices suit the training ``sentences``."""
        tokens = max(sum(len(s) for s in sentences), 1)

        def filled(column: str) -> bool:
            return sum(v != "_" for s in sentences for v in getattr(s, column)) >= tokens / 2

        coarse_from_pos = all(c in ("_", p) for s in sentences for c, p in zip(s.cpos, s.pos))
        return cls(mode, hash_bits, use_lemma=filled("lemmas"), use_feats=filled("feats"),
                   coarse_from_pos=coarse_from_pos)

    @property
    def n_features(self) -> int:
        return (1 << self.hash_bits) if self.mode == "hash" else int(self.codes.size)

    def fit(self, encoded: EncodedCorpus, heads_list) -> "ArcFeaturizer":
        """Build the alphabet from the gold arcs (nothing to do in hash mode)."""
        if self.mode == "alphabet":
            keys, slots = _gold_keys(encoded.tok_ptr, encoded.atoms, self.flags, encoded.heads_rows(heads_list))
            plain, rows = np.unique(keys, return_inverse=True)
            codes = np.unique(np.concatenate([rows * N_SLOTS, rows * N_SLOTS + slots]))
            self._set_alphabet(plain, codes)
        return self

    def encode(self, sentences) -> EncodedCorpus:
        return encode(sentences, self.hasher, self.coarse_from_pos)

    def _tables(self):
        return (self.flags, self.table.table_keys, self.table.table_vals, self.idmap, self.hash_bits) + self._cache

    def part_features(self, encoded: EncodedCorpus) -> PartFeatures:
        """Compile every arc of every sentence into CSR arrays."""
        lengths = np.diff(encoded.tok_ptr)  # n + 1 per sentence
        part_ptr = np.zeros(len(encoded) + 1, dtype=np.int64)
        np.cumsum(lengths * lengths, out=part_ptr[1:])
        feat_ptr = np.empty(int(part_ptr[-1]) + 1, dtype=np.int64)
        feat_ids = np.empty(_entry_bound(encoded.tok_ptr), dtype=np.int32)
        used = _extract(encoded.tok_ptr, encoded.atoms, *self._tables(), feat_ptr, feat_ids)
        return PartFeatures(part_ptr, feat_ptr, feat_ids[:used].copy(), self.n_features)

    def arc_scores(self, encoded: EncodedCorpus, s: int, w: np.ndarray) -> np.ndarray:
        """Arc scores ``w . phi(h, m)`` of sentence ``s``, shape (n+1, n+1), without storing ids."""
        n = encoded.length(s)
        out = np.empty((n + 1, n + 1))
        _arc_scores(encoded.atoms, encoded.tok_ptr[s], n, *self._tables(), w, out)
        return out

    def config(self) -> dict:
        return {"templates": TEMPLATES_VERSION, "mode": self.mode, "hash_bits": self.hash_bits,
                "use_lemma": self.use_lemma, "use_feats": self.use_feats, "coarse_from_pos": self.coarse_from_pos}
