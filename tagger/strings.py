"""String lists stored in model files as two numeric arrays (no pickled objects, no fixed-width str).

``pack_strings`` concatenates the UTF-8 bytes (uint8) and records the offsets
(int64, one more than the strings); a fixed-width numpy str array would pad
every string to the longest one (about 13 times larger for tagger predicates).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np


def pack_strings(strings: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """UTF-8 bytes of all strings concatenated (uint8) and their offsets (int64)."""
    encoded = [s.encode("utf-8") for s in strings]
    offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
    np.cumsum([len(b) for b in encoded], out=offsets[1:])
    return np.frombuffer(b"".join(encoded), dtype=np.uint8).copy(), offsets


def unpack_strings(data: np.ndarray, offsets: np.ndarray) -> list[str]:
    """The strings of :func:`pack_strings`; ValueError when the arrays do not fit together."""
    data = np.asarray(data)
    offsets = np.asarray(offsets)
    if data.dtype != np.uint8 or data.ndim != 1 or offsets.ndim != 1 or offsets.dtype.kind not in "iu" \
            or offsets.size < 1 or offsets[0] != 0 or offsets[-1] != data.size or np.any(np.diff(offsets) < 0):
        raise ValueError("malformed string arrays")
    raw = data.tobytes()
    try:
        return [raw[offsets[k]:offsets[k + 1]].decode("utf-8") for k in range(offsets.size - 1)]
    except UnicodeDecodeError:
        raise ValueError("string arrays that are not UTF-8") from None
