"""Files on disk, shared by every layer: reading text, atomic writes, and egnlp's ``.npz`` model archives.

- :func:`read_bytes` / :func:`decode`: a file's bytes and text, with one-line
  errors that name the file (and, for bytes that do not decode, the line and
  the ``--encoding`` option).
- :func:`write_text_atomic` / :func:`write_npz_atomic`: write to a temporary
  file in the target's folder, then rename it over the target, so a reader or
  a crash never sees half a file.
- :func:`read_npz`: a model archive read with ``allow_pickle=False`` (loading
  never runs code), its ``meta`` entry (UTF-8 JSON bytes) decoded and its
  model kind and format version checked; :class:`ModelError` for any file
  that cannot be used.
- :func:`pack_strings` / :func:`unpack_strings`: string lists as two numeric
  arrays (no pickled objects, no fixed-width str arrays).

The parser, the tagger and the application layer all store their models
through this module; it imports nothing else of egnlp but its errors.
"""

from __future__ import annotations

import json
import os
import secrets
import zipfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import IO, Any

import numpy as np

from .errors import CorpusError


class ModelError(Exception):
    """A model file that cannot be used; ``str()`` is one readable line."""


def read_bytes(source: str) -> bytes:
    """Return a file's bytes, turning OS errors into one-line CorpusErrors."""
    try:
        return Path(source).read_bytes()
    except FileNotFoundError:
        raise CorpusError(f"{source}: no such file") from None
    except IsADirectoryError:
        raise CorpusError(f"{source}: is a folder, not a file") from None
    except OSError as error:
        raise CorpusError(f"{source}: cannot read ({error.strerror})") from None


def decode(data: bytes, source: str, encoding: str) -> str:
    """Decode a file's bytes; a failure names the line and the ``--encoding`` option."""
    try:
        return data.decode(encoding)
    except LookupError:
        raise CorpusError(f"{source}: unknown encoding '{encoding}'") from None
    except UnicodeDecodeError as error:
        line = data.count(b"\n", 0, error.start) + 1
        raise CorpusError(
            f"{source}:{line}: not valid {encoding} (byte 0x{data[error.start]:02x}); "
            "pass --encoding latin-1 if the file uses another encoding"
        ) from None


def _write_atomic(target: Path, write: Callable[[IO[bytes]], None]) -> None:
    """Call ``write`` on a new temporary file beside ``target``, then rename it to ``target``.

    The temporary file is removed when anything fails, so only a complete
    file ever carries the target's name.
    """
    temporary = target.with_name(f".{target.name}.{secrets.token_hex(4)}.tmp")
    try:
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        with os.fdopen(descriptor, "wb") as handle:
            write(handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, target)
    finally:
        temporary.unlink(missing_ok=True)  # left only when writing failed


def write_text_atomic(path: str | os.PathLike[str], text: str, *, encoding: str = "utf-8") -> None:
    """Write ``text`` to ``path`` atomically.

    Raises:
        CorpusError: the text cannot be encoded or the file cannot be written.
    """
    target = Path(path)
    try:
        data = text.encode(encoding)
    except UnicodeEncodeError as error:
        raise CorpusError(f"{target}: cannot encode {error.object[error.start]!r} as {encoding}") from None
    try:
        _write_atomic(target, lambda handle: handle.write(data))
    except OSError as error:
        raise CorpusError(f"{target}: cannot write ({error.strerror})") from None


def write_npz_atomic(path: str | os.PathLike[str], arrays: dict[str, np.ndarray], meta: dict[str, Any]) -> None:
    """Save ``arrays`` plus ``meta`` (as the JSON bytes entry ``meta``) to ``path`` atomically.

    The folder is created when it does not exist.

    Raises:
        ModelError: the file cannot be written.
    """
    if "meta" in arrays:
        raise ValueError("an array may not be named 'meta'")
    target = Path(path)
    payload = dict(arrays)
    payload["meta"] = np.frombuffer(json.dumps(meta, sort_keys=True).encode("utf-8"), dtype=np.uint8)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        _write_atomic(target, lambda handle: np.savez(handle, **payload))
    except OSError as error:
        raise ModelError(f"{target}: cannot write ({error.strerror})") from None


def read_npz(path: str | os.PathLike[str], kind: str, version: int) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """Load the arrays and metadata of a model file, checking its kind and format version.

    Raises:
        ModelError: no such file, not an ``.npz`` archive, a corrupt archive,
            another kind of model, or another format version.
    """
    path = str(path)
    if not os.path.isfile(path):
        raise ModelError(f"{path}: no such model file")
    try:
        data = np.load(path, allow_pickle=False)
    except (OSError, ValueError, EOFError, zipfile.BadZipFile):
        raise ModelError(f"{path}: not an egnlp model file (not a readable .npz archive)") from None
    if not isinstance(data, np.lib.npyio.NpzFile):
        raise ModelError(f"{path}: not an egnlp model file (a single array, not an .npz archive)")
    try:
        with data:
            arrays = {name: data[name] for name in data.files}
        meta = json.loads(arrays.pop("meta").tobytes().decode("utf-8"))
    except (OSError, ValueError, KeyError, zipfile.BadZipFile, UnicodeDecodeError, EOFError) as exc:
        raise ModelError(f"{path}: corrupt or incomplete model file ({type(exc).__name__})") from None
    if not isinstance(meta, dict) or meta.get("kind") != kind:
        found = meta.get("kind") if isinstance(meta, dict) else None
        raise ModelError(f"{path}: expected a model of kind '{kind}', found {found!r}")
    if meta.get("format_version") != version:
        raise ModelError(f"{path}: model format version {meta.get('format_version')!r} is not supported "
                         f"by this egnlp (it reads version {version}); retrain the model")
    return arrays, meta


def pack_strings(strings: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """UTF-8 bytes of all strings concatenated (uint8) and their offsets (int64, one more than the strings).

    A fixed-width numpy str array would pad every string to the longest one
    (about 13 times larger for tagger predicates).
    """
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
