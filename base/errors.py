"""Errors raised while reading, writing or finding corpora and model files, and the error of a name that
a registry lacks.

Every message is one readable line that names the file and, when it applies,
the 1-based line number, e.g. ``data/x.conll:17: expected 10 tab-separated
columns, found 7``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TypeVar

T = TypeVar("T")


def registered(table: Mapping[str, T], name: str, error: Callable[[str], Exception]) -> T:
    """``table[name]``; for a name the table lacks, the exception ``error(names)`` (``names``: the table's
    names joined by ", ", for a one-line message that lists them)."""
    try:
        return table[name]
    except KeyError:
        raise error(", ".join(table)) from None


class CorpusError(Exception):
    """A corpus file or data set cannot be read, written or found."""


class DataNotFoundError(CorpusError):
    """An NLTK data package that a data set needs is not installed."""


class InvalidTreeError(CorpusError):
    """A sentence whose HEAD column does not form a tree rooted at 0 (a cycle, a head out of range,
    a word that is its own head, no root, or ``_`` beside integer heads)."""


class ModelError(Exception):
    """A model file that cannot be used; ``str()`` is one readable line (also importable from
    :mod:`egnlp.base.files`, which reads and writes model files)."""

