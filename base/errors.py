"""Errors raised while reading, writing or finding corpora and model files.

Every message is one readable line that names the file and, when it applies,
the 1-based line number, e.g. ``data/x.conll:17: expected 10 tab-separated
columns, found 7``.
"""


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

