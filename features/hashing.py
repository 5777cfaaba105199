"""Stable 64-bit hashing of strings and feature keys, and a key -> id table.

Feature templates turn a part (an arc, a tag at a position) into 64-bit keys:
a key is the hash of the template number and the integer atoms it reads
(word, POS, ...).  A key becomes a feature id either through an *alphabet*
(a fixed set of keys seen in training, looked up in an open-addressing hash
table) or by *hashing* (the key's low bits).  Strings are hashed with
BLAKE2b, so ids are the same in every process and on every machine, which
``hash()`` does not guarantee.
"""

from __future__ import annotations

import hashlib

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.core.extending import intrinsic

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)
_EMPTY = np.uint64(0)


def hash_string(text: str) -> int:
    """Return a stable signed 64-bit hash of ``text``."""
    digest = hashlib.blake2b(text.encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "little", signed=True)


class StringHasher:
    """Hash strings to int64 atoms, remembering the ones already seen."""

    def __init__(self) -> None:
        self._cache: dict[str, int] = {}

    def __call__(self, text: str) -> int:
        value = self._cache.get(text)
        if value is None:
            value = hash_string(text)
            self._cache[text] = value
        return value

    def array(self, texts) -> np.ndarray:
        """Hash a sequence of strings into an int64 array."""
        cache = self._cache
        try:  # the strings seen before, read from the dictionary without a Python call per string
            return np.fromiter(map(cache.__getitem__, texts), dtype=np.int64, count=len(texts))
        except KeyError:
            for text in texts:
                if text not in cache:
                    cache[text] = hash_string(text)
            return np.fromiter(map(cache.__getitem__, texts), dtype=np.int64, count=len(texts))


@intrinsic
def popcount(typingctx, x):
    """The number of bits set in the int64 ``x``: LLVM's ctpop, one instruction where the processor has
    one.  In the direct scorer's weight reads (:func:`egnlp.features.arc_featurizer.slot_id`) it took
    0.96 of the time of a 16-bit popcount written out in shifts and masks (pt_bosque dev x8, in process,
    median ratio of 5 alternating rounds), the same sums."""
    if not isinstance(x, types.Integer):
        return None

    def codegen(context, builder, signature, args):
        value = context.cast(builder, args[0], signature.args[0], types.int64)
        return builder.call(builder.module.declare_intrinsic("llvm.ctpop", [ir.IntType(64)]), [value])

    return types.int64(x), codegen


@intrinsic
def prefetch(typingctx, array, index):
    """Ask the processor to bring ``array[index]`` (a 1-D contiguous array) toward its caches: LLVM's
    prefetch, a read with high locality.  It changes no value, and an address past the array does not
    fault; a lookup that comes later finds the line there instead of waiting for it."""
    if not (isinstance(array, types.Array) and array.ndim == 1 and array.layout == "C"
            and isinstance(index, types.Integer)):
        return None

    def codegen(context, builder, signature, args):
        data = context.make_array(signature.args[0])(context, builder, args[0]).data
        at = builder.gep(data, [context.cast(builder, args[1], signature.args[1], types.intp)])
        byte = ir.IntType(8).as_pointer()
        i32 = ir.IntType(32)
        fn = builder.module.declare_intrinsic("llvm.prefetch",
                                              fnty=ir.FunctionType(ir.VoidType(), [byte, i32, i32, i32]))
        builder.call(fn, [builder.bitcast(at, byte), ir.Constant(i32, 0), ir.Constant(i32, 3), ir.Constant(i32, 1)])
        return context.get_dummy_value()

    return types.void(array, index), codegen


@njit(cache=True)
def combine(seed, value):
    """Mix the int64 ``value`` into the uint64 ``seed`` (boost-style combine + splitmix finaliser)."""
    v = np.uint64(value)
    x = seed ^ (v + _GOLDEN + (seed << np.uint64(6)) + (seed >> np.uint64(2)))
    x = (x ^ (x >> np.uint64(30))) * _MIX1
    x = (x ^ (x >> np.uint64(27))) * _MIX2
    return x ^ (x >> np.uint64(31))


@njit(cache=True, no_cpython_wrapper=True)
def _table_slot(table_keys, key):
    """The slot of ``key``, or of the empty slot where it would go.  Keys are hashes already (chains of
    :func:`combine`), so their low bits are their home slot: hashing them once more took about a tenth
    of the direct arc scorer's time."""
    mask = np.uint64(table_keys.shape[0] - 1)
    slot = key & mask
    while table_keys[slot] != _EMPTY and table_keys[slot] != key:
        slot = (slot + np.uint64(1)) & mask
    return slot


@njit(cache=True)
def _table_fill(table_keys, table_vals, keys, values):
    for i in range(keys.shape[0]):
        slot = _table_slot(table_keys, keys[i])
        table_keys[slot] = keys[i]
        table_vals[slot] = values[i]


@njit(cache=True)
def table_lookup(table_keys, table_vals, key):
    """Id of ``key`` in the table, or -1 when it is not there."""
    slot = _table_slot(table_keys, key)
    if table_keys[slot] == key:
        return table_vals[slot]
    return -1


CACHE_SIZE = 1 << 14


def new_cache(size: int = CACHE_SIZE) -> np.ndarray:
    """The work array of :func:`cached_lookup` for ``size`` entries, a power of two (empty: all keys 0):
    (2 size,) int64, entry j a key's bits at 2 j and its value at 2 j + 1, side by side."""
    return np.zeros(2 * size, dtype=np.int64)


@njit(cache=True)
def cached_lookup(table_keys, table_vals, cache, key):
    """:func:`table_lookup` behind a small direct-mapped cache (:func:`new_cache`).

    Parsing looks the same keys up over and over (POS n-grams recur on most
    arcs of a sentence); the cache keeps them in fast memory instead of
    probing the large table each time.  ``key`` must be non-zero.  A key and
    its value share a cache line: the direct scorer's arc scores of
    pt_bosque dev x8 in 0.961, 0.994 and 0.993 of the time of two arrays
    (medians of 5, 7 and 10 alternating rounds, a process each), the same values.
    """
    j = 2 * np.int64(key & np.uint64(cache.shape[0] // 2 - 1))
    if cache[j] == np.int64(key):
        return cache[j + 1]
    value = table_lookup(table_keys, table_vals, key)
    cache[j] = np.int64(key)
    cache[j + 1] = value
    return value


class KeyTable:
    """An open-addressing hash table from uint64 keys to their rank in ``keys`` (feature id ``i`` is
    ``keys[i]``), or to ``values[i]`` when values are given.

    ``keys`` must be unique, non-zero and hashes (made by :func:`combine`, as every template key is):
    their low bits pick their slots.
    """

    def __init__(self, keys: np.ndarray, values: np.ndarray | None = None) -> None:
        keys = np.ascontiguousarray(keys, dtype=np.uint64)
        if keys.size and (keys == 0).any():
            raise ValueError("feature keys must be non-zero")
        values = (np.arange(keys.size, dtype=np.int64) if values is None
                  else np.ascontiguousarray(values, dtype=np.int64))
        if values.shape != keys.shape:
            raise ValueError(f"{values.size} values for {keys.size} keys")
        self.keys = keys
        capacity = 1 << max(4, int(2 * max(keys.size, 1) - 1).bit_length())
        self.table_keys = np.zeros(capacity, dtype=np.uint64)
        # A value is read only where its key matched (table_lookup), so empty slots need none.
        self.table_vals = np.empty(capacity, dtype=np.int64)
        _table_fill(self.table_keys, self.table_vals, keys, values)

    def __len__(self) -> int:
        return int(self.keys.size)
