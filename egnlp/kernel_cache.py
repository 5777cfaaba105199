"""Numba's on-disk cache of the package's kernels, dropped whenever a source file of the package changes.

Numba keys a cached kernel to the timestamp and size of its own file only,
and a kernel has the functions it calls from other files compiled into it:
when ``features/hashing.py`` changes and ``features/arc_parts.py`` does not,
the cached kernels of ``arc_parts`` keep the old code of ``hashing`` and can
silently disagree with what the new code builds (a table filled one way and
probed another). In a source checkout (an editable install) any pull can do
that. :func:`refresh` runs when the package is imported, before any kernel
loads: it compares the size and modification time of every source file of
the package with the record it left beside the caches, and when they differ
it deletes the package's cached kernels (the ``*.nbi`` and ``*.nbc`` files
of its ``__pycache__`` folders, where Numba keeps them for a writable source
tree), then writes the new record. An installed release, whose files do not
change, pays one ``os.stat`` a source file: about a millisecond.

Caches kept elsewhere (under ``NUMBA_CACHE_DIR``, or in Numba's per-user
folder for a read-only install) are left alone; a read-only install changes
only by a reinstall, which gives every file a new timestamp.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Sequence

SUBPACKAGES = ("base", "corpora", "features", "parser", "tagger", "training")
RECORD_NAME = "egnlp-kernels.stamp"  # in the __pycache__ folder of egnlp/ itself
CACHE_SUFFIXES = (".nbi", ".nbc")


def package_folders() -> list[str]:
    """The source folders of egnlp and its subpackages (they are apart in a source checkout)."""
    folders = [os.path.dirname(os.path.abspath(__file__))]
    for name in SUBPACKAGES:
        spec = importlib.util.find_spec(f"egnlp.{name}")
        if spec is not None and spec.submodule_search_locations:
            folders.extend(os.path.abspath(path) for path in spec.submodule_search_locations)
    return folders


def source_stamp(folders: Sequence[str]) -> str:
    """One line per ``.py`` file of the folders: its name, size and modification time (ns)."""
    lines = []
    for folder in folders:
        try:
            entries = sorted(os.scandir(folder), key=lambda entry: entry.name)
        except OSError:
            continue
        for entry in entries:
            if entry.name.endswith(".py") and entry.is_file():
                info = entry.stat()
                lines.append(f"{os.path.basename(folder)}/{entry.name} {info.st_size} {info.st_mtime_ns}\n")
    return "".join(lines)


def drop_cached_kernels(folders: Sequence[str]) -> int:
    """Delete the cached kernels of the folders' ``__pycache__``; the number of files deleted."""
    deleted = 0
    for folder in folders:
        cache = os.path.join(folder, "__pycache__")
        try:
            names = os.listdir(cache)
        except OSError:
            continue
        for name in names:
            if name.endswith(CACHE_SUFFIXES):
                try:
                    os.remove(os.path.join(cache, name))
                    deleted += 1
                except OSError:  # gone already (another process), or not ours to delete
                    pass
    return deleted


def refresh(folders: Sequence[str] | None = None, record: str | None = None) -> bool:
    """Drop the cached kernels of ``folders`` (default: the package's) when their sources differ from
    ``record`` (default: the record beside egnlp's own caches), and record the sources; whether the
    caches were dropped. A folder that cannot be written is left as it is."""
    folders = package_folders() if folders is None else list(folders)
    if record is None:
        record = os.path.join(folders[0], "__pycache__", RECORD_NAME)
    stamp = source_stamp(folders)
    try:
        with open(record, encoding="utf-8") as handle:
            if handle.read() == stamp:
                return False
    except (OSError, UnicodeDecodeError):
        pass
    drop_cached_kernels(folders)
    temporary = f"{record}.{os.getpid()}.tmp"
    try:
        os.makedirs(os.path.dirname(record), exist_ok=True)
        with open(temporary, "w", encoding="utf-8") as handle:
            handle.write(stamp)
        os.replace(temporary, record)
    except OSError:  # a read-only install: Numba keeps its caches elsewhere, and the sources do not change
        try:
            os.remove(temporary)
        except OSError:
            pass
    return True

