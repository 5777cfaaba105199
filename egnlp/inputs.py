"""What the commands read: training and dev sentences from a data set or files, and text from a file or stdin.

Both the parser's and the tagger's ``train`` commands take either ``--data
NAME`` (a named data set, which brings its own dev split, or a CoNLL file)
or ``--train FILE [--dev FILE]``; :func:`training_sets` resolves the two
forms the same way for both.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass

from egnlp.corpora import CorpusError, Sentence, dataset_task, is_dataset, load_sentences, read_conll
from egnlp.corpora.files import decode, read_bytes

STDIN = "-"


@dataclass(frozen=True)
class TrainingSets:
    """Training sentences, dev sentences (None when there are none) and the data set they came from
    (None for files)."""

    train: list[Sentence]
    dev: list[Sentence] | None
    dataset: str | None


def training_sets(data: str | None, train: str | os.PathLike[str] | None, dev: str | os.PathLike[str] | None, *,
                  trees: bool, encoding: str = "utf-8", invalid: list[str] | None = None) -> TrainingSets:
    """The sentences of ``--data NAME`` (a data set's train and dev splits, or a CoNLL file) or of
    ``--train FILE`` and ``--dev FILE``.

    Args:
        trees: whether the command trains on dependency trees (a parser: file
            sentences need heads, a data set must be a treebank) or on tags
            (a tagger: any data set; files need no heads).
        invalid: when a list is given, file sentences whose heads do not form a
            tree are skipped and their messages appended (see
            :func:`~egnlp.corpora.read_conll`).

    Raises:
        CorpusError: both or neither of ``data`` and ``train``; ``dev`` with a
            data set; a tagging data set for a parser; any error reading the files.
    """
    if (data is None) == (train is None):
        raise CorpusError("give either --data NAME or --train FILE")
    if data is not None and is_dataset(data):
        if dev is not None:
            raise CorpusError("--dev goes with --train; a data set brings its own dev split")
        if trees and dataset_task(data) != "parse":
            raise CorpusError(f"data set '{data}' has no dependency trees (its task is '{dataset_task(data)}'); "
                              "see 'egnlp data list'")
        return TrainingSets(load_sentences(data, "train"), load_sentences(data, "dev"), data)
    if data is not None:
        if not os.path.isfile(data):
            load_sentences(data)  # raises: neither a data set nor a file (the message lists the data sets)
        train = data
    read = dict(encoding=encoding, require_heads=trees, invalid=invalid)
    return TrainingSets(read_conll(train, **read), read_conll(dev, **read) if dev is not None else None, None)


def read_text(source: str, encoding: str = "utf-8") -> tuple[str, str]:
    """(text, name for messages) of a file, or of stdin when ``source`` is ``-``."""
    if source == STDIN:
        raw = getattr(sys.stdin, "buffer", None)
        if raw is None:
            return sys.stdin.read(), "<stdin>"
        return decode(raw.read(), "<stdin>", encoding), "<stdin>"
    return decode(read_bytes(source), source, encoding), source
