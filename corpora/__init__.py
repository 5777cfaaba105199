"""Corpora: reading and writing dependency treebanks and tagged text, and the named data sets.

Nothing here imports the rest of egnlp but :mod:`egnlp.base` (files, errors); every other package builds
on these :class:`Sentence` objects.
"""

from typing import TYPE_CHECKING

from egnlp.base.exports import lazy_exports

# Where each name lives. The modules load on first use, so that importing egnlp.corpora.sentence,
# say, does not load the readers: 'egnlp --help' starts faster.
_EXPORTS = {
    "format_conll": "conll", "format_parsed": "conll", "parse_conll": "conll", "read_conll": "conll",
    "write_conll": "conll",
    "DatasetInfo": "datasets", "dataset_root": "datasets", "dataset_task": "datasets", "guess_root": "datasets",
    "is_dataset": "datasets", "list_datasets": "datasets", "load_dataset": "datasets", "load_sentences": "datasets",
    "CorpusError": "egnlp.base.errors", "DataNotFoundError": "egnlp.base.errors",
    "InvalidTreeError": "egnlp.base.errors",
    "FORMATS": "formats", "detect_format": "formats", "parse_corpus": "formats", "read_corpus": "formats",
    "parse_malt_tab": "malt",
    "Sentence": "sentence", "is_projective": "sentence",
    "Conll18Score": "ud_evaluation", "conll18_scores": "ud_evaluation", "format_conll18_table": "ud_evaluation",
}

if TYPE_CHECKING:
    from egnlp.base.errors import CorpusError, DataNotFoundError, InvalidTreeError

    from .conll import format_conll, format_parsed, parse_conll, read_conll, write_conll
    from .datasets import (DatasetInfo, dataset_root, dataset_task, guess_root, is_dataset, list_datasets,
                           load_dataset, load_sentences)
    from .formats import FORMATS, detect_format, parse_corpus, read_corpus
    from .malt import parse_malt_tab
    from .sentence import Sentence, is_projective
    from .ud_evaluation import Conll18Score, conll18_scores, format_conll18_table

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

__all__ = [
    "Conll18Score",
    "CorpusError",
    "DataNotFoundError",
    "DatasetInfo",
    "FORMATS",
    "InvalidTreeError",
    "Sentence",
    "conll18_scores",
    "dataset_root",
    "dataset_task",
    "detect_format",
    "format_conll",
    "format_conll18_table",
    "format_parsed",
    "guess_root",
    "is_dataset",
    "is_projective",
    "list_datasets",
    "load_dataset",
    "load_sentences",
    "parse_conll",
    "parse_corpus",
    "parse_malt_tab",
    "read_conll",
    "read_corpus",
    "write_conll",
]
