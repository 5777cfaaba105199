"""Files on disk, shared by every layer: reading text, atomic writes, and egnlp's ``.npz`` model archives.

- :func:`read_bytes` / :func:`decode`: a file's bytes and text, with one-line
  errors that name the file (and, for bytes that do not decode, the line and
  the ``--encoding`` option).
- :func:`write_text_atomic`, :func:`write_pieces_atomic`, :func:`write_bytes_atomic`,
  :func:`write_npz_atomic`: every output of egnlp, by one set of rules. A
  regular file (or a new one) is written to a temporary file in its folder,
  then renamed over it, so a reader or a crash never sees half a file. On
  Linux the temporary file has no name until it is complete (``O_TMPFILE``):
  a process killed while writing leaves nothing. Elsewhere it is
  ``.NAME.<random>.tmp`` from the start; a killed writer leaves it, and the
  next successful write of the same target removes it (it is stale when no
  process holds the lock its writer takes on it). Missing folders are
  created; a symbolic link's target is written (the link stays); a FIFO or a
  character device (``/dev/stdout``) is opened and written directly, as
  ``cat > FILE`` would.
- :func:`read_npz`: a model archive, checked before anything is allocated
  or used (:class:`ModelError` for any file that cannot be used).
- :func:`pack_strings` / :func:`unpack_strings`: string lists as two numeric
  arrays (no pickled objects, no fixed-width str arrays).

Model files
-----------

A model file is a zip archive as ``numpy.savez`` writes it (members stored,
not compressed): one ``NAME.npy`` per array and ``meta.npy``, the UTF-8 JSON
metadata as uint8. The metadata records every array's dtype and shape
(``"arrays": {"weights": {"dtype": "<f8", "shape": [n]}, ...}``). The zip
archive comment is ``egnlp-sha256:`` and the SHA-256 (hex) of every byte of
the file before it, so that any changed byte is found. :func:`read_npz`
reads the file once, takes every member as a view of its bytes (the
checksum, not zip's CRC-32, vouches for them), and checks, in order: the zip
directory (only stored ``.npy`` members, each inside the file, no repeated
names, each behind a local header that names it); the metadata
(at most :data:`MAX_META_BYTES` bytes, nested at most :data:`MAX_META_DEPTH`
deep), its model kind and format version; the checksum; then every array's
``.npy`` header against the recorded dtype and shape and against the member's
size, before the array is built. ``numpy.load`` is not used: headers are
read with :func:`ast.literal_eval` (never pickle) and only plain little-endian
numeric dtypes are accepted. The loaders then check the arrays they expect
(:func:`check_arrays`) and their contents, weights included: finite and at most
:data:`MAX_WEIGHT` in magnitude, so no score a decoder sums overflows
(:func:`check_weights`).

The parser, the tagger and the application layer all store their models
through this module; it imports nothing else of egnlp but its errors.
"""

from __future__ import annotations

import ast
import errno
import hashlib
import io
import json
import math
import os
import re
import secrets
import stat
import struct
import sys
import time
import zipfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import IO, Any

import numpy as np

from .errors import CorpusError, ModelError  # ModelError lives with the other errors, light to import

try:
    import fcntl
except ImportError:  # not POSIX: stale temporary files are recognised by age instead
    fcntl = None  # type: ignore[assignment]

CHECKSUM_MARK = b"egnlp-sha256:"
CHECKSUM_LENGTH = 64  # hex digits of a SHA-256
MAX_META_BYTES = 16 << 20
MAX_META_DEPTH = 32
MAX_MEMBERS = 256  # a pipeline file's stages hold about 80 arrays
# The dtypes an array of a model file may have (``dtype.str``): booleans, integers and floats, little-endian.
ARRAY_DTYPES = frozenset(("|b1", "|i1", "|u1", "<i2", "<u2", "<i4", "<u4", "<i8", "<u8", "<f2", "<f4", "<f8"))
# Characters no CoNLL field or comment and no label of a model may hold: the C0 controls other than TAB,
# DEL, NEL (U+0085), the line and paragraph separators and lone surrogates. They break a line when
# written, or cannot be written at all (see :mod:`egnlp.corpora.conll`).
FORBIDDEN_CHARACTERS = re.compile(r"[\x00-\x08\x0a-\x1f\x7f\x85\u2028\u2029\ud800-\udfff]")
# The most weights a decoder adds into one score, with room to spare: a sentence's tree or tag sequence
# sums at most MAX_WORDS (500) parts, three per word at the third order, of at most a few hundred features
# each (a long arc's in-between features: one per word between), some 10^6 weights in all; a sentence a
# Python caller gives a tagger may be longer, yet 2^40 weights would not fit in memory.
MAX_SCORE_TERMS = 1 << 40
# The largest weight magnitude a model may hold (about 4.1e295): MAX_SCORE_TERMS such weights sum to at most
# a quarter of the largest float64, so that every score, and the difference of two, stays finite.
MAX_WEIGHT = sys.float_info.max / 4 / MAX_SCORE_TERMS
_MEMBER_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}\.npy")
_STALE_SECONDS = 24 * 3600  # without POSIX locks, a temporary file this old is stale
_MAX_LINKS = 40  # symbolic links followed from an output's name, as Linux follows at most
_PROC = re.compile(r"/proc(/|$)")  # links there (/proc/self/fd/N) lead to descriptors, not to paths
# Unnamed temporary files: Linux's O_TMPFILE, named at the end through /proc/self/fd (linkat with a folder).
_O_TMPFILE = (getattr(os, "O_TMPFILE", None) if sys.platform.startswith("linux") and os.link in os.supports_dir_fd
              and os.path.isdir("/proc/self/fd") else None)


def read_bytes(source: str) -> bytes:
    """Return a file's bytes, turning OS errors into one-line CorpusErrors."""
    with open_bytes(source) as handle:
        try:
            return handle.read()
        except OSError as error:
            raise CorpusError(f"{source}: cannot read ({error.strerror})") from None


def open_bytes(source: str) -> IO[bytes]:
    """A file opened for reading bytes, OS errors turned into one-line CorpusErrors."""
    try:
        return open(source, "rb")
    except FileNotFoundError:
        raise CorpusError(f"{source}: no such file") from None
    except IsADirectoryError:
        raise CorpusError(f"{source}: is a folder, not a file") from None
    except OSError as error:
        raise CorpusError(f"{source}: cannot read ({error.strerror})") from None


# What a file that does not decode is instead, by its first bytes.
_NOT_TEXT = (
    ((b"PK\x03\x04",), "a zip archive (such as an egnlp model file), not a corpus file"),
    ((b"\x1f\x8b",), "gzip-compressed; decompress it first (gunzip)"),
    ((b"\xff\xfe", b"\xfe\xff"), "UTF-16 text (it starts with a UTF-16 byte order mark); pass --encoding utf-16"),
)


def decode(data: bytes, source: str, encoding: str, first_line: int = 1) -> str:
    """Decode a file's bytes (or a piece of them starting on line ``first_line``); a failure names
    the line and the ``--encoding`` option, or says what the file is instead: a zip archive (a model
    file given for a corpus), gzip-compressed, UTF-16 text, or binary (NUL bytes: no UTF-8 or
    8-bit text has them)."""
    try:
        return data.decode(encoding)
    except LookupError:
        raise CorpusError(f"{source}: unknown encoding '{encoding}'") from None
    except UnicodeDecodeError as error:
        for magic, what in _NOT_TEXT if first_line == 1 else ():
            if data.startswith(magic):
                raise CorpusError(f"{source}: {what}") from None
        nul = data.find(b"\x00")
        if nul >= 0:
            line = data.count(b"\n", 0, nul) + first_line
            raise CorpusError(f"{source}:{line}: a NUL byte: a binary file, not a corpus file, or UTF-16 text "
                              "without a byte order mark (pass --encoding utf-16-le or utf-16-be)") from None
        line = data.count(b"\n", 0, error.start) + first_line
        raise CorpusError(
            f"{source}:{line}: not valid {encoding} (byte 0x{data[error.start]:02x}); "
            "pass --encoding latin-1 if the file uses another encoding"
        ) from None


def _temporary_name(target: Path) -> re.Pattern[str]:
    """The names of the temporary files of ``target``: ``.NAME.<8 hex digits>.tmp``."""
    return re.compile(re.escape(f".{target.name}.") + r"[0-9a-f]{8}\.tmp")


def _remove_stale(target: Path, keep: Path) -> None:
    """Remove the temporary files of ``target`` (other than ``keep``) whose writer is gone.

    A writer holds an exclusive ``flock`` on its temporary file until it has
    renamed it; the lock goes with the process, also under ``kill -9``. A
    file whose lock can be taken is therefore stale. Without ``fcntl``, files
    older than a day are.
    """
    pattern = _temporary_name(target)
    try:
        names = [name for name in os.listdir(target.parent) if pattern.fullmatch(name)]
    except OSError:
        return
    for name in names:
        path = target.with_name(name)
        if path == keep:
            continue
        try:
            if fcntl is None:
                if time.time() - path.stat().st_mtime > _STALE_SECONDS:
                    path.unlink()
                continue
            descriptor = os.open(path, os.O_RDONLY)
            try:
                fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                continue  # its writer is still at work
            else:
                path.unlink()
            finally:
                os.close(descriptor)
        except OSError:
            continue


def _lock(descriptor: int) -> None:
    """Mark a temporary file as being written (best effort: a file system without locks has none)."""
    if fcntl is not None:
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            pass


def _unnamed_file(folder: Path) -> int | None:
    """A new empty file in ``folder`` that has no name yet (Linux's ``O_TMPFILE``), open for reading
    and writing with the mode ``0o666`` less the umask, as a named one would get; None where the
    system or the file system has no such files."""
    if _O_TMPFILE is None:
        return None
    try:
        return os.open(folder, _O_TMPFILE | os.O_RDWR, 0o666)
    except OSError as error:
        # EISDIR: a kernel older than O_TMPFILE reads it as O_DIRECTORY; EOPNOTSUPP, EINVAL: the file system
        if error.errno in (errno.EOPNOTSUPP, errno.EISDIR, errno.EINVAL):
            return None
        raise


def _name_unnamed(descriptor: int, path: Path) -> None:
    """Give the unnamed file open as ``descriptor`` the name ``path`` (linkat through ``/proc``: a plain
    link(2) does not follow the descriptor's magic link)."""
    folder = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.link(f"/proc/self/fd/{descriptor}", path.name, dst_dir_fd=folder)
    finally:
        os.close(folder)


def _write_atomic(target: Path, write: Callable[[IO[bytes]], None]) -> None:
    """Call ``write`` on a new temporary file in ``target``'s folder, then rename it to ``target``.

    On Linux the file has no name while it is written (``O_TMPFILE``), so a
    process killed meanwhile leaves nothing; once complete it is linked as
    ``.NAME.<random>.tmp`` and renamed over ``target``. Elsewhere, or on a
    file system without unnamed files, it carries that name from the start.
    Either way it is locked while it exists and removed when anything fails,
    so only a complete file ever carries the target's name, and stale
    temporary files of the same target (a writer killed while its file had a
    name) are removed after a success. The file's mode is ``0o666`` less the
    umask, whatever the mode of the file it replaces.

    Raises:
        OSError: the file cannot be written.
    """
    temporary = target.with_name(f".{target.name}.{secrets.token_hex(4)}.tmp")
    descriptor = _unnamed_file(target.parent)
    named = False  # whether ``temporary`` is this writer's file (to remove if anything fails)
    try:
        if descriptor is None:
            descriptor = os.open(temporary, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o666)
            named = True
        with os.fdopen(descriptor, "w+b") as handle:
            _lock(descriptor)
            write(handle)
            handle.flush()
            os.fsync(handle.fileno())
            if not named:
                _name_unnamed(descriptor, temporary)
                named = True
            os.replace(temporary, target)
            named = False
    finally:
        if named:  # writing failed
            temporary.unlink(missing_ok=True)
    _remove_stale(target, temporary)


def _write_direct(target: Path, write: Callable[[IO[bytes]], None], seekable: bool) -> None:
    """Open ``target`` (a FIFO, a device, a socket...) and call ``write`` on it, as ``cat > target`` would;
    a ``write`` that needs to seek and read back gets a buffer in memory, copied to ``target`` after."""
    if seekable:
        buffer = io.BytesIO()
        write(buffer)  # before the output is opened: a FIFO's reader is not kept waiting on a failure
        with open(target, "wb") as handle:
            handle.write(buffer.getbuffer())
    else:
        with open(target, "wb") as handle:
            write(handle)


def _atomic_destination(target: Path) -> Path | None:
    """The regular file (existing or new) an output named ``target`` is renamed onto: ``target``
    itself, or where its symbolic links lead; None when ``target`` is to be written directly (a
    FIFO, a device, a socket, or a descriptor of ``/proc`` such as ``/dev/stdout``).

    Raises:
        IsADirectoryError: ``target`` is a folder (or a link to one).
        OSError: ``target`` cannot be looked at (a loop of links, a folder that cannot be read).
    """
    try:
        status: os.stat_result | None = os.stat(target)
    except (FileNotFoundError, NotADirectoryError):  # a new file (a missing folder is created later)
        status = None
    if status is not None and stat.S_ISDIR(status.st_mode):
        raise IsADirectoryError(errno.EISDIR, "is a folder, not a file")
    if status is not None and not stat.S_ISREG(status.st_mode):
        return None
    destination = target
    for _ in range(_MAX_LINKS):
        if not os.path.islink(destination):
            break
        if _PROC.match(os.path.realpath(destination.parent)):
            return None  # /dev/stdout -> /proc/self/fd/1 -> a pipe, a terminal, a file opened with >>
        destination = destination.parent / os.readlink(destination)
    else:
        raise OSError(errno.ELOOP, os.strerror(errno.ELOOP))
    if status is not None and destination is not target:
        found = os.stat(destination)
        if (found.st_dev, found.st_ino) != (status.st_dev, status.st_ino):
            return None  # not where the links lead after all (changed meanwhile): leave the file as it is
    return destination


def _make_folders(folder: Path) -> None:
    """Create ``folder`` and its missing parents (the rule of every output of egnlp).

    Raises:
        OSError: with a reason that names the folder.
    """
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        blocker = next((part for part in reversed((folder, *folder.parents))
                        if os.path.lexists(part) and not part.is_dir()), folder)
        raise NotADirectoryError(errno.ENOTDIR, f"{blocker} is not a folder") from None
    except OSError as error:
        raise OSError(error.errno, f"cannot create the folder {folder}: {error.strerror}") from None


def _write_output(target: Path, write: Callable[[IO[bytes]], None], *, seekable: bool = False) -> None:
    """Write an output of egnlp named ``target`` by calling ``write`` on a binary handle: the one way
    every writer of this module goes.

    - A regular file, or a new name: written atomically (:func:`_write_atomic`); missing folders of
      the path are created first.
    - A symbolic link: the file it leads to, by the same rule (when that is a regular file or
      missing); the link stays a link.
    - Anything else but a folder: a FIFO, a character device (``/dev/stdout``, ``/dev/null``), a
      socket, is opened and written directly, as ``cat > target`` would; output written before an
      error is then not taken back.

    ``seekable``: ``write`` seeks and reads back its handle (a model file); a direct output then gets
    the bytes built in memory.

    Raises:
        IsADirectoryError: ``target`` is a folder.
        OSError: the file cannot be written.
    """
    destination = _atomic_destination(target)
    if destination is None:
        _write_direct(target, write, seekable)
    else:
        _make_folders(destination.parent)
        _write_atomic(destination, write)


def _write_error(target: Path, error: OSError) -> str:
    """One line for a failed write: the target and the reason (no errno, no temporary file name)."""
    return f"{target}: cannot write ({error.strerror or type(error).__name__})"


def write_text_atomic(path: str | os.PathLike[str], text: str, *, encoding: str = "utf-8") -> None:
    """Write ``text`` to ``path`` atomically (as :func:`write_pieces_atomic`).

    Raises:
        CorpusError: the text cannot be encoded or the file cannot be written.
    """
    write_pieces_atomic(path, (text,), encoding=encoding)


def write_pieces_atomic(path: str | os.PathLike[str], pieces: Iterable[str], *, encoding: str = "utf-8") -> None:
    """Write the concatenation of ``pieces`` to ``path`` atomically, one piece at a time (the text
    is never whole in memory).  An exception raised by ``pieces`` leaves ``path`` as it was.

    Missing folders are created; a symbolic link's target is written, a FIFO or a device directly
    (then not atomically: see :func:`_write_output`).

    Raises:
        CorpusError: a piece cannot be encoded or the file cannot be written.
    """
    target = Path(path)

    def write(handle: IO[bytes]) -> None:
        for piece in pieces:
            try:
                handle.write(piece.encode(encoding))
            except LookupError:
                raise CorpusError(f"{target}: unknown encoding '{encoding}'") from None
            except UnicodeEncodeError as error:
                raise CorpusError(f"{target}: cannot encode {error.object[error.start]!r} as {encoding}") from None

    try:
        _write_output(target, write)
    except OSError as error:
        raise CorpusError(_write_error(target, error)) from None


def write_bytes_atomic(path: str | os.PathLike[str], data: bytes) -> None:
    """Write ``data`` to ``path`` atomically (a picture, say), by the rules of :func:`write_pieces_atomic`.

    Raises:
        CorpusError: the file cannot be written.
    """
    target = Path(path)
    try:
        _write_output(target, lambda handle: handle.write(data))
    except OSError as error:
        raise CorpusError(_write_error(target, error)) from None


def model_bytes(arrays: Mapping[str, np.ndarray], meta: Mapping[str, Any]) -> bytes:
    """The bytes of a model file holding ``arrays`` and ``meta`` (see the module docstring).

    ``meta`` must be JSON (its ``arrays`` entry is added here). Arrays are
    stored C-contiguous with their dtype and shape recorded in the metadata.

    Raises:
        ValueError: an array named ``meta``, a name that is not an identifier,
            ``meta`` with an ``arrays`` entry, or a dtype a model file may not hold.
    """
    buffer = io.BytesIO()
    _write_model(buffer, arrays, meta)
    return buffer.getvalue()


def _write_model(handle: IO[bytes], arrays: Mapping[str, np.ndarray], meta: Mapping[str, Any]) -> None:
    """Write the model file of :func:`model_bytes` to ``handle`` (empty, seekable and readable),
    the arrays straight from memory (no copy of the whole file is made)."""
    if "meta" in arrays or "arrays" in meta:
        raise ValueError("an array may not be named 'meta', nor metadata hold 'arrays'")
    payload = {}
    records = {}
    for name, array in arrays.items():
        array = np.ascontiguousarray(array)
        if not _MEMBER_NAME.fullmatch(f"{name}.npy") or array.dtype.str not in ARRAY_DTYPES:
            raise ValueError(f"array {name!r} of dtype {array.dtype.str} cannot go into a model file")
        payload[name] = array
        records[name] = {"dtype": array.dtype.str, "shape": list(array.shape)}
    text = json.dumps({**meta, "arrays": records}, sort_keys=True)
    payload["meta"] = np.frombuffer(text.encode("utf-8"), dtype=np.uint8)
    np.savez(handle, **payload)
    # the checksum comment (add_checksum), in place: the comment length, the mark, then the digest
    end = handle.seek(0, io.SEEK_END)
    handle.seek(end - 22)
    record = handle.read(22)
    if len(record) != 22 or record[:4] != b"PK\x05\x06" or record[-2:] != b"\x00\x00":
        raise ValueError("not a zip archive without a comment")
    handle.seek(end - 2)
    handle.write(struct.pack("<H", len(CHECKSUM_MARK) + CHECKSUM_LENGTH) + CHECKSUM_MARK)
    handle.seek(0)
    digest = hashlib.sha256()
    for chunk in iter(lambda: handle.read(1 << 20), b""):
        digest.update(chunk)
    handle.write(digest.hexdigest().encode("ascii"))


def add_checksum(data: bytes) -> bytes:
    """A zip archive without a comment, ``data``, with the checksum comment of a model file added.

    Raises:
        ValueError: ``data`` does not end with a zip end-of-directory record without a comment.
    """
    if len(data) < 22 or data[-22:-18] != b"PK\x05\x06" or data[-2:] != b"\x00\x00":
        raise ValueError("not a zip archive without a comment")
    body = data[:-2] + struct.pack("<H", len(CHECKSUM_MARK) + CHECKSUM_LENGTH) + CHECKSUM_MARK
    return body + hashlib.sha256(body).hexdigest().encode("ascii")


def write_npz_atomic(path: str | os.PathLike[str], arrays: Mapping[str, np.ndarray], meta: Mapping[str, Any]) -> None:
    """Save ``arrays`` and ``meta`` as a model file (:func:`model_bytes`) at ``path``, atomically,
    written straight to the file (built in memory for a FIFO or a device: see :func:`_write_output`).

    Missing folders are created; a symbolic link's target is written.

    Raises:
        ModelError: the file cannot be written.
        ValueError: as :func:`model_bytes` (nothing is left at ``path`` then).
    """
    target = Path(path)
    try:
        _write_output(target, lambda handle: _write_model(handle, arrays, meta), seekable=True)
    except OSError as error:
        raise ModelError(_write_error(target, error)) from None


class _Broken(ValueError):
    """A model file that breaks the layout of the module docstring; the message says how."""


def read_npz(path: str | os.PathLike[str], kind: str, version: int) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """Load the arrays and metadata of a model file, checking it as the module docstring says.

    The returned metadata no longer holds the ``arrays`` records.

    Raises:
        ModelError: no such file, not an ``.npz`` archive, a corrupt archive,
            another kind of model, another format version, a checksum that
            does not match, or arrays that do not match their records.
    """
    path = str(path)
    data = _model_file_bytes(path)
    if data[:6] == b"\x93NUMPY":
        raise ModelError(f"{path}: not an egnlp model file (a single array, not an .npz archive)")
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:  # the directory only: members are views of data
            members = _members(archive, len(data))
    except _Broken as exc:
        raise ModelError(f"{path}: corrupt model file ({exc})") from None
    except Exception:  # zipfile's errors on a damaged directory are many; all mean the same here
        raise ModelError(f"{path}: not an egnlp model file (not a readable .npz archive)") from None
    try:
        if "meta" not in members:
            raise _Broken("no metadata")
        meta = _read_meta(_read_member(data, members.pop("meta")))
    except _Broken as exc:
        raise ModelError(f"{path}: corrupt model file ({exc})") from None
    except Exception as exc:
        raise ModelError(f"{path}: corrupt model file ({type(exc).__name__} in the metadata)") from None
    if meta.get("kind") != kind:
        raise ModelError(f"{path}: expected a model of kind '{kind}', found {repr(meta.get('kind'))[:40]}")
    if meta.get("format_version") != version:
        raise ModelError(f"{path}: model format version {repr(meta.get('format_version'))[:40]} is not "
                         f"supported by this egnlp (it reads version {version}); retrain the model")
    _check_checksum(data, path)
    try:
        records = _records(meta.pop("arrays", None), members)
        arrays = {name: _read_array(name, _read_member(data, info), records[name])
                  for name, info in members.items()}
    except _Broken as exc:
        raise ModelError(f"{path}: corrupt model file ({exc})") from None
    except Exception as exc:
        raise ModelError(f"{path}: corrupt model file ({type(exc).__name__} in an array)") from None
    return arrays, meta


def _model_file_bytes(path: str) -> bytes:
    if not os.path.isfile(path):
        raise ModelError(f"{path}: is a folder, not a model file" if os.path.isdir(path)
                         else f"{path}: no such model file")
    try:
        return Path(path).read_bytes()
    except OSError as error:
        raise ModelError(f"{path}: cannot read ({error.strerror or type(error).__name__})") from None


def _members(archive: zipfile.ZipFile, size: int) -> dict[str, zipfile.ZipInfo]:
    """The archive's members by array name, each checked to be a stored ``.npy`` inside the file."""
    infos = archive.infolist()
    if len(infos) > MAX_MEMBERS:
        raise _Broken(f"{len(infos)} members")
    members = {}
    for info in infos:
        if not _MEMBER_NAME.fullmatch(info.filename):
            raise _Broken(f"member {info.filename[:40]!r} is not an array")
        name = info.filename[:-4]
        if name in members:
            raise _Broken(f"member {info.filename!r} twice")
        if info.compress_type != zipfile.ZIP_STORED or info.flag_bits & ~0x800:
            raise _Broken(f"member {info.filename!r} is compressed, encrypted or flagged")
        if info.file_size != info.compress_size or info.header_offset + info.file_size > size:
            raise _Broken(f"member {info.filename!r} does not fit in the file")
        members[name] = info
    return members


_LOCAL_HEADER = struct.Struct("<4s22xHH")  # a zip member's local header: signature, ..., name and extra lengths


def _read_member(data: bytes, info: zipfile.ZipInfo) -> memoryview:
    """A stored member's bytes, a view of the file's ``data`` (no copy).

    The local header must name the member as the directory does. The member's CRC-32 is not recomputed
    (zipfile would, over a copy of every member): the SHA-256 of the whole file stands for it, checked
    before any array is built; only the metadata, whose reader checks every byte it takes, comes before.
    """
    start = info.header_offset
    header = data[start:start + _LOCAL_HEADER.size]
    if len(header) != _LOCAL_HEADER.size:
        raise _Broken(f"member {info.filename!r} is cut short")
    signature, name_length, extra_length = _LOCAL_HEADER.unpack(header)
    name_start = start + _LOCAL_HEADER.size
    if signature != b"PK\x03\x04" or data[name_start:name_start + name_length] != info.orig_filename.encode():
        raise _Broken(f"member {info.filename!r} has no local header of its own")
    begin = name_start + name_length + extra_length
    if begin + info.file_size > len(data):
        raise _Broken(f"member {info.filename!r} is cut short")
    return memoryview(data)[begin:begin + info.file_size]


def _npy_header(member: bytes | memoryview) -> tuple[str, bool, tuple, int]:
    """(dtype string, Fortran order, shape, offset of the data) of an ``.npy`` member, read with literal_eval."""
    if member[:6] != b"\x93NUMPY" or member[6:8] not in (b"\x01\x00", b"\x02\x00"):
        raise _Broken("an array that is not in .npy format 1.0 or 2.0")
    start = 10 if member[6] == 1 else 12
    length = struct.unpack("<H" if member[6] == 1 else "<I", member[8:start])[0]
    if length > 10_000 or start + length > len(member):
        raise _Broken("an .npy header too long for its member")
    try:
        header = ast.literal_eval(bytes(member[start:start + length]).decode("latin-1"))
    except (SyntaxError, ValueError, TypeError, MemoryError, RecursionError):
        raise _Broken("an .npy header that does not parse") from None
    if not isinstance(header, dict) or set(header) != {"descr", "fortran_order", "shape"} \
            or not isinstance(header["descr"], str) or not isinstance(header["fortran_order"], bool) \
            or not isinstance(header["shape"], tuple) \
            or not all(type(n) is int and n >= 0 for n in header["shape"]):
        raise _Broken("a malformed .npy header")
    return header["descr"], header["fortran_order"], header["shape"], start + length


def _read_meta(member: bytes | memoryview) -> dict[str, Any]:
    """The metadata: a uint8 array of at most MAX_META_BYTES bytes of UTF-8 JSON, an object nested at most
    MAX_META_DEPTH deep."""
    descr, fortran, shape, offset = _npy_header(member)
    if descr != "|u1" or len(shape) != 1 or fortran or offset + shape[0] != len(member):
        raise _Broken("metadata that is not one run of bytes")
    if shape[0] > MAX_META_BYTES:
        raise _Broken(f"{shape[0]} bytes of metadata, more than {MAX_META_BYTES}")
    try:
        meta = json.loads(bytes(member[offset:]).decode("utf-8"))
    except RecursionError:
        raise _Broken(f"metadata nested more than {MAX_META_DEPTH} deep") from None
    except (ValueError, UnicodeDecodeError):
        raise _Broken("metadata that is not UTF-8 JSON") from None
    if not isinstance(meta, dict):
        raise _Broken("metadata that is not a JSON object")
    stack = [(meta, 1)]
    while stack:
        value, depth = stack.pop()
        if depth > MAX_META_DEPTH:
            raise _Broken(f"metadata nested more than {MAX_META_DEPTH} deep")
        if isinstance(value, dict):
            stack.extend((item, depth + 1) for item in value.values())
        elif isinstance(value, list):
            stack.extend((item, depth + 1) for item in value)
    return meta


def _check_checksum(data: bytes, path: str) -> None:
    """Check the archive comment of a model file against the SHA-256 of the bytes before it."""
    end = len(data) - CHECKSUM_LENGTH
    body, digest = memoryview(data)[:end], data[end:]  # a view: no copy of the whole file
    if not data.endswith(CHECKSUM_MARK, 0, end):
        raise ModelError(f"{path}: model file without its checksum (changed after it was written?)")
    if hashlib.sha256(body).hexdigest().encode("ascii") != digest:
        raise ModelError(f"{path}: checksum mismatch: the model file was changed or damaged after it was written")


def _records(records: Any, members: Mapping[str, zipfile.ZipInfo]) -> dict[str, tuple[str, list[int]]]:
    """The recorded (dtype, shape) of every array; the arrays recorded must be the members."""
    if not isinstance(records, dict) or set(records) != set(members):
        raise _Broken("the arrays recorded in the metadata are not the arrays of the file")
    out = {}
    for name, record in records.items():
        if not isinstance(record, dict) or set(record) != {"dtype", "shape"} \
                or record["dtype"] not in ARRAY_DTYPES or not isinstance(record["shape"], list) \
                or not all(type(n) is int and n >= 0 for n in record["shape"]):
            raise _Broken(f"a malformed record of array {name!r}")
        out[name] = (record["dtype"], record["shape"])
    return out


def _read_array(name: str, member: bytes | memoryview, record: tuple[str, list[int]]) -> np.ndarray:
    """The array of an ``.npy`` member whose header and size agree with its record (checked before allocating)."""
    descr, fortran, shape, offset = _npy_header(member)
    dtype, recorded = record
    if descr != dtype or list(shape) != recorded or fortran:
        raise _Broken(f"array {name!r} is {descr} {shape}, recorded as {dtype} {tuple(recorded)}")
    count = math.prod(shape)
    if offset + count * np.dtype(dtype).itemsize != len(member):
        raise _Broken(f"array {name!r} does not fill its member")
    return np.frombuffer(member, dtype=dtype, count=count, offset=offset).reshape(shape).copy()


def check_arrays(arrays: Mapping[str, np.ndarray], expected: Mapping[str, tuple[str, int]]) -> None:
    """Check that ``arrays`` holds exactly the arrays of ``expected`` (name -> (``dtype.str``, ndim)).

    Raises:
        ValueError: a missing or unexpected array, or one of another dtype or number of dimensions.
    """
    missing = [name for name in expected if name not in arrays]
    if missing:
        raise ValueError(f"missing array {missing[0]!r}")
    extra = [name for name in arrays if name not in expected]
    if extra:
        raise ValueError(f"unexpected array {extra[0]!r}")
    for name, (dtype, ndim) in expected.items():
        array = np.asarray(arrays[name])
        if array.dtype.str != np.dtype(dtype).str or array.ndim != ndim:
            raise ValueError(f"array {name!r} is {array.dtype.str} with {array.ndim} dimensions, "
                             f"expected {np.dtype(dtype).str} with {ndim}")


def check_labels(labels: Any, what: str = "labels") -> list[str]:
    """``labels`` as a list, when it is a non-empty list of distinct non-empty strings without whitespace
    or :data:`FORBIDDEN_CHARACTERS` (they are written into CoNLL columns).

    Raises:
        ValueError: otherwise.
    """
    if not isinstance(labels, list) or not labels:
        raise ValueError(f"{what} must be a non-empty list of strings")
    for label in labels:
        if not isinstance(label, str) or not label or FORBIDDEN_CHARACTERS.search(label) \
                or any(char.isspace() for char in label):
            raise ValueError(f"{what}: {str(label)[:40]!r} is not a non-empty string without whitespace")
    if len(set(labels)) != len(labels):
        raise ValueError(f"{what} hold a label twice")
    return labels


def check_weights(weights: np.ndarray, what: str = "weights") -> None:
    """Check that every score a decoder adds up from ``weights`` stays finite: each weight is finite and
    at most :data:`MAX_WEIGHT` in magnitude.

    Raises:
        ValueError: otherwise, with the first weight out of bounds and its index.
    """
    weights = np.asarray(weights)
    bad = np.flatnonzero(~np.isfinite(weights))
    if bad.size:
        raise ValueError(f"{what} that are not finite ({weights.flat[bad[0]]} at {bad[0]})")
    bad = np.flatnonzero(np.abs(weights) > MAX_WEIGHT)
    if bad.size:
        raise ValueError(f"{what} whose sums could overflow: {weights.flat[bad[0]]:.3g} at {bad[0]}, "
                         f"beyond {MAX_WEIGHT:.2g} in magnitude")


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
    bounds = offsets.tolist()  # Python ints: slicing with numpy scalars costs twice as much
    try:
        return [raw[start:end].decode("utf-8") for start, end in zip(bounds, bounds[1:])]
    except UnicodeDecodeError:
        raise ValueError("string arrays that are not UTF-8") from None
