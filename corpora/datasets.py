"""Named dependency data sets read from NLTK's data packages.

=====  ===============================  ===================================  =====
name   NLTK package                     splits (sentences)                   root
=====  ===============================  ===================================  =====
es     corpora/conll2007 (``esp.*``)    train 2,654 / dev 295 / test 563     single
eu     corpora/conll2007 (``eus.*``)    train 2,335 / dev 260 / test 580     multi
wsj    corpora/dependency_treebank      train 3,396 / dev 273 / test 245     single
=====  ===============================  ===================================  =====

``es`` and ``eu``: dev is the last ``round(0.1 * n)`` sentences of the
CoNLL 2007 training file and train the rest; test is the test file. The
Spanish files are UTF-8, the Basque ones Latin-1. Every Spanish sentence has
one root; 1,007 of the 2,595 Basque training-file sentences have several.

``wsj``: the Malt-TAB files ``wsj_0001``..``wsj_0159`` are train,
``wsj_0160``..``wsj_0179`` dev and ``wsj_0180``..``wsj_0199`` test. All 3,914
sentences have exactly one root (and are projective), so the root is "single".
The files carry no labels: DEPREL is ``_``.

Packages are found through NLTK's data path (``NLTK_DATA``); a missing one is
downloaded once with ``nltk.download`` and, failing that, raises
:class:`~corpora.errors.DataNotFoundError`. Each file is parsed once per
process; the sentences returned are shared between calls, so do not mutate
them (use :meth:`Sentence.with_heads`).
"""

from __future__ import annotations

import contextlib
import functools
import io
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import nltk

from .conll import decode, parse_conll, read_conll
from .errors import CorpusError, DataNotFoundError
from .malt import parse_malt_tab
from .sentence import Sentence

SPLITS = ("train", "dev", "test")
DEV_FRACTION = 0.1

Parser = Callable[[str, str], list[Sentence]]


@dataclass(frozen=True)
class DatasetInfo:
    """What :func:`list_datasets` reports about one data set.

    Attributes:
        name: the name to pass to :func:`load_dataset`.
        description: one line for people.
        nltk_package: the NLTK resource holding the files, e.g. ``corpora/conll2007``.
        splits: the split names, ``("train", "dev", "test")``.
        root: ``"single"`` when every tree has exactly one root token, else ``"multi"``.
        found: whether the NLTK package is installed (checked, never downloaded).
    """

    name: str
    description: str
    nltk_package: str
    splits: tuple[str, ...]
    root: str
    found: bool


@dataclass(frozen=True)
class _TrainTestFiles:
    """A training file whose last 10% of sentences is dev, and a test file (CoNLL)."""

    package: str
    train_file: str
    test_file: str
    encoding: str

    def load(self, split: str) -> Sequence[Sentence]:
        """Return the sentences of one split."""
        if split == "test":
            return _load_file(self.package, self.test_file, self.encoding, parse_conll)
        sentences = _load_file(self.package, self.train_file, self.encoding, parse_conll)
        cut = len(sentences) - round(DEV_FRACTION * len(sentences))
        return sentences[:cut] if split == "train" else sentences[cut:]


@dataclass(frozen=True)
class _NumberedFiles:
    """Malt-TAB files ``{prefix}{number:04d}.dp`` grouped into splits by number."""

    package: str
    prefix: str
    numbers: dict[str, range]

    def load(self, split: str) -> Sequence[Sentence]:
        """Return the sentences of one split, file by file in number order."""
        return [
            sentence
            for number in self.numbers[split]
            for sentence in _load_file(self.package, f"{self.prefix}{number:04d}.dp", "utf-8", parse_malt_tab)
        ]


@dataclass(frozen=True)
class _Dataset:
    """A registered data set: where its files are and how they split."""

    description: str
    root: str
    files: _TrainTestFiles | _NumberedFiles


_DATASETS: dict[str, _Dataset] = {
    "es": _Dataset(
        "Spanish CoNLL 2007 treebank (esp.*), labelled",
        "single",
        _TrainTestFiles("conll2007", "esp.train", "esp.test", "utf-8"),
    ),
    "eu": _Dataset(
        "Basque CoNLL 2007 treebank (eus.*, Latin-1), labelled",
        "multi",
        _TrainTestFiles("conll2007", "eus.train", "eus.test", "latin-1"),
    ),
    "wsj": _Dataset(
        "English WSJ dependencies (NLTK dependency_treebank), unlabelled",
        "single",
        _NumberedFiles(
            "dependency_treebank",
            "wsj_",
            {"train": range(1, 160), "dev": range(160, 180), "test": range(180, 200)},
        ),
    ),
}


def list_datasets() -> list[DatasetInfo]:
    """Describe every registered data set, saying whether its package is installed."""
    return [
        DatasetInfo(
            name=name,
            description=dataset.description,
            nltk_package=_resource(dataset.files.package),
            splits=SPLITS,
            root=dataset.root,
            found=_is_installed(dataset.files.package),
        )
        for name, dataset in _DATASETS.items()
    ]


def load_dataset(name: str, split: str) -> list[Sentence]:
    """Return the sentences of split ``train``, ``dev`` or ``test`` of a registered data set.

    Raises:
        CorpusError: unknown name or split.
        DataNotFoundError: the NLTK package is missing and cannot be downloaded.
    """
    dataset = _get(name)
    if split not in SPLITS:
        raise CorpusError(f"data set '{name}' has no split '{split}'; splits: {', '.join(SPLITS)}")
    _require_package(dataset.files.package)
    return list(dataset.files.load(split))


def load_sentences(
    name_or_path: str,
    split: str | None = None,
    *,
    encoding: str = "utf-8",
    require_heads: bool = True,
) -> list[Sentence]:
    """Load a registered data set's split, or else a CoNLL-X / CoNLL-U file.

    Args:
        name_or_path: a data set name (see :func:`list_datasets`) or a file path.
        split: required with a data set name; must be None with a file.
        encoding: the file's encoding (data sets know their own).
        require_heads: for files, whether every sentence must have heads.

    Raises:
        CorpusError: a name that is neither a data set nor an existing file, a
            missing or superfluous split, or any error of :func:`read_conll`.
    """
    if name_or_path in _DATASETS:
        if split is None:
            raise CorpusError(f"data set '{name_or_path}' needs a split: {', '.join(SPLITS)}")
        return load_dataset(name_or_path, split)
    if not os.path.isfile(name_or_path):
        raise CorpusError(f"unknown data set or file '{name_or_path}'; data sets: {', '.join(_DATASETS)}")
    if split is not None:
        raise CorpusError(f"{name_or_path}: a split ('{split}') applies only to data set names")
    return read_conll(name_or_path, encoding=encoding, require_heads=require_heads)


def is_dataset(name: str) -> bool:
    """Whether ``name`` is a registered data set name."""
    return name in _DATASETS


def dataset_root(name: str) -> str:
    """Return ``"single"`` or ``"multi"``: how many root tokens the data set's trees have."""
    return _get(name).root


def guess_root(sentences: Sequence[Sentence]) -> str:
    """Return ``"single"`` if every sentence with heads has exactly one token headed by 0.

    Sentences without heads are ignored; when none has heads there is no
    evidence for a single root, and the answer is ``"multi"``.
    """
    headed = [sentence.heads for sentence in sentences if sentence.heads is not None]
    if headed and all(heads.count(0) == 1 for heads in headed):
        return "single"
    return "multi"


def _get(name: str) -> _Dataset:
    """Return a registered data set or raise a CorpusError listing the names."""
    try:
        return _DATASETS[name]
    except KeyError:
        raise CorpusError(f"unknown data set '{name}'; data sets: {', '.join(_DATASETS)}") from None


def _resource(package: str) -> str:
    """NLTK resource name of a corpus package."""
    return f"corpora/{package}"


def _is_installed(package: str) -> bool:
    """Whether NLTK's data path holds the package (as a folder or a zip)."""
    try:
        nltk.data.find(_resource(package) + "/")
    except LookupError:
        return False
    return True


def _require_package(package: str) -> None:
    """Make sure the package is installed, trying one quiet download.

    Raises:
        DataNotFoundError: still missing after the download attempt.
    """
    if _is_installed(package):
        return
    try:
        # nltk prints its own download errors; the one-line error below says what matters
        with contextlib.redirect_stdout(io.StringIO()):
            nltk.download(package, quiet=True, raise_on_error=True, print_error_to=io.StringIO())
    except Exception:  # any download failure: report the package as missing below
        pass
    if not _is_installed(package):
        raise DataNotFoundError(
            f"NLTK package '{_resource(package)}' not found; install it with "
            f"nltk.download('{package}') or set NLTK_DATA to a folder that has it"
        )


@functools.lru_cache(maxsize=None)
def _load_file(package: str, filename: str, encoding: str, parse: Parser) -> tuple[Sentence, ...]:
    """Read, decode and parse one file of an installed package (once per process).

    Sentences are named ``{package}/{filename}`` in messages.
    """
    source = f"{package}/{filename}"
    try:
        pointer = nltk.data.find(f"{_resource(package)}/{filename}")
    except LookupError:
        raise DataNotFoundError(
            f"NLTK package '{_resource(package)}' has no file '{filename}'; "
            f"reinstall it with nltk.download('{package}', force=True)"
        ) from None
    with pointer.open() as handle:
        data = handle.read()
    return tuple(parse(decode(data, source, encoding), source))
