"""Numba's cached kernels are dropped when a source file of the package changes (egnlp.kernel_cache).

A folder laid out as the package's are (sources, ``__pycache__`` with
Numba's ``.nbi``/``.nbc`` files and Python's ``.pyc``) stands in for the
package; then the package's own record is checked against its sources.
"""

from __future__ import annotations

import os
from pathlib import Path

from egnlp import kernel_cache


def make_package(root: Path) -> tuple[list[str], Path]:
    folders = []
    for name, files in (("features", ("hashing.py", "arc_parts.py")), ("parser", ("eisner.py",))):
        folder = root / name
        (folder / "__pycache__").mkdir(parents=True)
        for file in files:
            (folder / file).write_text("x = 1\n", encoding="utf-8")
        folders.append(str(folder))
    return folders, root / "features" / "__pycache__" / kernel_cache.RECORD_NAME


def cache_files(folders: list[str]) -> list[str]:
    return sorted(name for folder in folders for name in os.listdir(Path(folder) / "__pycache__"))


def add_caches(folders: list[str]) -> None:
    for folder in folders:
        for name in ("f-12.py311.nbi", "f-12.py311.1.nbc", "m.cpython-311.pyc"):
            (Path(folder) / "__pycache__" / name).write_bytes(b"cached")


def test_caches_are_dropped_when_a_source_changes_and_kept_otherwise(tmp_path: Path) -> None:
    folders, record = make_package(tmp_path)
    add_caches(folders)
    assert kernel_cache.refresh(folders, str(record))  # no record yet: nothing says the caches are current
    assert cache_files(folders) == [kernel_cache.RECORD_NAME, "m.cpython-311.pyc", "m.cpython-311.pyc"]
    add_caches(folders)
    assert not kernel_cache.refresh(folders, str(record))  # the same sources: the caches stay
    assert len(cache_files(folders)) == 7
    # hashing.py changes (one byte more); arc_parts' caches, whose own file did not change, go too
    (Path(folders[0]) / "hashing.py").write_text("x = 12\n", encoding="utf-8")
    assert kernel_cache.refresh(folders, str(record))
    assert cache_files(folders) == [kernel_cache.RECORD_NAME, "m.cpython-311.pyc", "m.cpython-311.pyc"]
    add_caches(folders)
    # a new timestamp with the same size counts as a change too
    stamp = os.stat(Path(folders[1]) / "eisner.py").st_mtime_ns
    os.utime(Path(folders[1]) / "eisner.py", ns=(stamp + 10**9, stamp + 10**9))
    assert kernel_cache.refresh(folders, str(record))
    assert not any(name.endswith((".nbi", ".nbc")) for name in cache_files(folders))
    assert record.read_text(encoding="utf-8") == kernel_cache.source_stamp(folders)


def test_a_folder_that_cannot_be_written_is_left_alone(tmp_path: Path) -> None:
    folders, _ = make_package(tmp_path)
    add_caches(folders)
    blocked = tmp_path / "not-a-folder"
    blocked.write_text("", encoding="utf-8")  # the record's folder cannot be made: a file is in the way
    assert kernel_cache.refresh(folders, str(blocked / "sub" / kernel_cache.RECORD_NAME))
    assert not any(name.endswith(".tmp") for name in os.listdir(tmp_path))


def test_the_package_records_its_own_sources() -> None:
    """Importing egnlp has left a record of exactly the package's current sources (every subpackage)."""
    folders = kernel_cache.package_folders()
    assert [os.path.basename(folder) for folder in folders] == ["egnlp", *kernel_cache.SUBPACKAGES]
    record = Path(folders[0]) / "__pycache__" / kernel_cache.RECORD_NAME
    if record.exists():  # absent only where the package's folder is read-only
        assert record.read_text(encoding="utf-8") == kernel_cache.source_stamp(folders)
        assert not kernel_cache.refresh()
