"""egnlp's own error types: what the user gave cannot be used.

Every message is one readable line that names what is wrong and, for a file,
the file and the 1-based line, e.g. ``data/x.conll:17: expected 10
tab-separated columns, found 7``. The command line shows exactly these errors
as one ``error: ...`` line, with the exit status of the class; any other
exception is a bug in egnlp and keeps its traceback.
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


class EgnlpError(Exception):
    """Something the user gave egnlp cannot be used; ``str()`` is one line. Exit status 1 on the command line."""

    exit_status = 1


class CorpusError(EgnlpError):
    """A corpus file or data set cannot be read, written or found."""


class DataNotFoundError(CorpusError):
    """An NLTK data package that a data set needs is not installed."""


class InvalidTreeError(CorpusError):
    """A sentence whose HEAD column does not form a tree rooted at 0 (a cycle, a head out of range,
    a word that is its own head, no root, or ``_`` beside integer heads)."""


class ModelError(EgnlpError):
    """A model file that cannot be used, or a model that does not fit what it is asked to do."""


class InputError(EgnlpError, ValueError):
    """Inputs that do not go together: sentences without the tags a model reads, a tagger where a POS
    tagger is needed, text a model cannot take. A ValueError for Python callers."""


class SettingsError(EgnlpError, ValueError):
    """A setting egnlp cannot use: a value out of range, a name or choice it does not know, or settings
    that do not go together. A ValueError for Python callers; on the command line it is a mistake in
    the command (exit status 2), since the options alone show it."""

    exit_status = 2


class EgnlpWarning(UserWarning):
    """Something the user should know that does not stop the work (a fallback taken, a default chosen);
    the command line shows it as one ``note:`` line."""
