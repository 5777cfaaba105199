"""Corpora: reading and writing dependency treebanks and tagged text, and the named data sets.

Nothing here imports the rest of egnlp; every other package builds on these
:class:`Sentence` objects.
"""

from .conll import format_conll, parse_conll, read_conll, write_conll
from .datasets import (
    DatasetInfo,
    dataset_root,
    dataset_task,
    guess_root,
    is_dataset,
    list_datasets,
    load_dataset,
    load_sentences,
)
from .errors import CorpusError, DataNotFoundError, InvalidTreeError
from .malt import parse_malt_tab
from .sentence import Sentence, is_projective

__all__ = [
    "CorpusError",
    "DataNotFoundError",
    "DatasetInfo",
    "InvalidTreeError",
    "Sentence",
    "dataset_root",
    "dataset_task",
    "format_conll",
    "guess_root",
    "is_dataset",
    "is_projective",
    "list_datasets",
    "load_dataset",
    "load_sentences",
    "parse_conll",
    "parse_malt_tab",
    "read_conll",
    "write_conll",
]
