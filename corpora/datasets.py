"""Named data sets read from NLTK's data packages (and UD files): dependency treebanks and tagging corpora.

===============  ===========================  =======================================  =====  ======
name             NLTK package                 splits (sentences)                       task   root
===============  ===========================  =======================================  =====  ======
es               corpora/conll2007 (esp.*)    train 2,654 / dev 295 / test 563         parse  single
eu               corpora/conll2007 (eus.*)    train 2,335 / dev 260 / test 580         parse  multi
wsj              corpora/dependency_treebank  train 3,396 / dev 273 / test 245         parse  single
brown            corpora/brown                train 40,956 / dev 4,441 / test 11,943   pos    -
conll2000-pos    corpora/conll2000            train 8,042 / dev 894 / test 2,012       pos    -
conll2000-chunk  corpora/conll2000            train 8,042 / dev 894 / test 2,012       chunk  -
ptb-pos          corpora/treebank             train 3,396 / dev 273 / test 245         pos    -
pt-bosque        $EGNLP_UD_DIR (UD files)     train 1,050 / dev 117 / test 1,172       parse  single
nl-alpino        $EGNLP_UD_DIR (UD files)     train 536 / dev 60 / test 718            parse  single
===============  ===========================  =======================================  =====  ======

``es`` and ``eu``: dev is the last ``round(0.1 * n)`` sentences of the
CoNLL 2007 training file and train the rest; test is the test file. The
Spanish files are UTF-8, the Basque ones Latin-1. Every Spanish sentence has
one root; 1,007 of the 2,595 Basque training-file sentences have several.

``wsj``: the Malt-TAB files ``wsj_0001``..``wsj_0159`` are train,
``wsj_0160``..``wsj_0179`` dev and ``wsj_0180``..``wsj_0199`` test. All 3,914
sentences have exactly one root (and are projective), so the root is "single".
The files carry no labels: DEPREL is ``_``.

The tagging sets have no trees (HEAD is ``_``, ``Sentence.heads`` is None,
root ``-``); the tag is in CPOSTAG and POSTAG (see :mod:`egnlp.corpora.tagging`):

``brown``: the 500 Brown documents, sorted by file id and shuffled with
``random.Random(0)``; the first 400 are train+dev (dev = the last 40 of them)
and the last 100 test. Tags lose a leading ``FW-`` and every ``-TL``, ``-HL``,
``-NC``, ``-FW``, leaving 190 tags.

``conll2000-pos`` and ``conll2000-chunk``: the same sentences (CoNLL-2000
``train.txt``, dev its last ``round(0.1 * n)`` sentences; ``test.txt``), with
automatic (Brill tagger) POS tags and the IOB chunk tag as an 11th column; the
name says which column is the task.

``ptb-pos``: the gold tags of NLTK's Penn Treebank sample, files split as in
``wsj``, trace tokens (``-NONE-``) dropped: the sentences, forms and tags then
equal those of ``wsj`` token for token.

``pt-bosque`` and ``nl-alpino``: Universal Dependencies v2 treebanks of
which only the ``-test`` and ``-dev`` files are public here, read from the
folder named by the environment variable ``EGNLP_UD_DIR``: train on the
``-test`` file (its last 10% is dev, for tuning) and evaluate on the
``-dev`` file.

Packages are found through NLTK's data path (``NLTK_DATA``); a missing one is
downloaded once with ``nltk.download`` and, failing that, raises
:class:`~egnlp.base.errors.DataNotFoundError`. Each file is parsed once per
process; the sentences returned are shared between calls, so do not mutate
them (use :meth:`Sentence.with_heads`, :meth:`Sentence.with_tags`).
"""

from __future__ import annotations

import contextlib
import functools
import io
import os
import random
import re
import sys
import zipfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from .conll import parse_conll, read_conll
from egnlp.base.errors import CorpusError, DataNotFoundError, registered
from egnlp.base.files import decode
from .malt import parse_malt_tab
from .sentence import Sentence

SPLITS = ("train", "dev", "test")
DEV_FRACTION = 0.1
TASKS = ("parse", "pos", "chunk")
UD_DIR_VARIABLE = "EGNLP_UD_DIR"  # the folder of the UD treebank files
NO_ROOT = "-"  # DatasetInfo.root of the tagging sets, which have no trees

Parser = Callable[[str, str], list[Sentence]]


@dataclass(frozen=True)
class DatasetInfo:
    """What :func:`list_datasets` reports about one data set.

    Attributes:
        name: the name to pass to :func:`load_dataset`.
        description: one line for people.
        task: what the gold annotation is for: ``"parse"`` (dependency
            trees), ``"pos"`` (POS tags) or ``"chunk"`` (chunk tags, 11th column).
        source: where the files are: the NLTK resource (e.g. ``corpora/conll2007``)
            or, for the UD sets, the files in the folder ``$EGNLP_UD_DIR``.
        splits: the split names, ``("train", "dev", "test")``.
        root: ``"single"`` when every tree has exactly one root token, ``"multi"``
            otherwise, ``"-"`` for tagging sets (no trees).
        found: whether the files are there (checked, never downloaded).
    """

    name: str
    description: str
    task: str
    source: str
    splits: tuple[str, ...]
    root: str
    found: bool


class _NLTKPackage:
    """Files of an NLTK data package (``package``), found through NLTK's data path."""

    package: str

    def source(self) -> str:
        return _resource(self.package)

    def found(self) -> bool:
        return _is_installed(self.package)

    def require(self) -> None:
        _require_package(self.package)


@dataclass(frozen=True)
class _TrainTestFiles(_NLTKPackage):
    """A training file whose last 10% of sentences is dev, and a test file (CoNLL by default)."""

    package: str
    train_file: str
    test_file: str
    encoding: str
    parse: Parser = parse_conll

    def load(self, split: str) -> Sequence[Sentence]:
        """Return the sentences of one split."""
        if split == "test":
            return _load_file(self.package, self.test_file, self.encoding, self.parse)
        sentences = _load_file(self.package, self.train_file, self.encoding, self.parse)
        cut = len(sentences) - round(DEV_FRACTION * len(sentences))
        return sentences[:cut] if split == "train" else sentences[cut:]


@dataclass(frozen=True)
class _NumberedFiles(_NLTKPackage):
    """Files ``{prefix}{number:04d}{suffix}`` grouped into splits by number (Malt-TAB by default)."""

    package: str
    prefix: str
    numbers: dict[str, range]
    suffix: str = ".dp"
    parse: Parser = parse_malt_tab

    def load(self, split: str) -> Sequence[Sentence]:
        """Return the sentences of one split, file by file in number order."""
        return [
            sentence
            for number in self.numbers[split]
            for sentence in _load_file(self.package, f"{self.prefix}{number:04d}{self.suffix}", "utf-8", self.parse)
        ]


@dataclass(frozen=True)
class _ShuffledDocuments(_NLTKPackage):
    """Documents split by a seeded shuffle of their sorted ids (Brown).

    The ids matching ``pattern`` are sorted and shuffled with
    ``random.Random(seed)``; the first ``n_train`` (of which the last ``n_dev``
    are dev) are train and dev, the rest test. Sentences come document by
    document in shuffled order.
    """

    package: str
    pattern: str
    n_documents: int
    n_train: int
    n_dev: int
    seed: int
    encoding: str
    parse: Parser

    def load(self, split: str) -> Sequence[Sentence]:
        """Return the sentences of one split."""
        return [
            sentence
            for document in self.documents(split)
            for sentence in _load_file(self.package, document, self.encoding, self.parse)
        ]

    def documents(self, split: str) -> list[str]:
        """The file ids of one split, in shuffled order."""
        ids = self._all_documents()
        random.Random(self.seed).shuffle(ids)
        cut = self.n_train - self.n_dev
        return {"train": ids[:cut], "dev": ids[cut : self.n_train], "test": ids[self.n_train :]}[split]

    def _all_documents(self) -> list[str]:
        """The sorted file ids; the split is only defined for the expected number of them."""
        ids = sorted(name for name in _package_files(self.package) if re.match(self.pattern, name))
        if len(ids) != self.n_documents:
            raise DataNotFoundError(
                f"NLTK package '{_resource(self.package)}' has {len(ids)} documents, expected {self.n_documents}; "
                f"reinstall it with nltk.download('{self.package}', force=True)"
            )
        return ids


@dataclass(frozen=True)
class _UDFiles:
    """A Universal Dependencies treebank of which only the ``-test`` and ``-dev`` files are at hand,
    in the folder named by :data:`UD_DIR_VARIABLE`.

    train is the ``-test`` file without its last ``round(0.1 * n)`` sentences,
    dev those sentences (for tuning), test the ``-dev`` file (for the scores).
    """

    prefix: str  # e.g. "pt_bosque-ud"

    def folder(self) -> str | None:
        return os.environ.get(UD_DIR_VARIABLE)

    def source(self) -> str:
        return f"${UD_DIR_VARIABLE}/{self.prefix}-*.conllu"

    def found(self) -> bool:
        folder = self.folder()
        return bool(folder) and all(os.path.isfile(os.path.join(folder, f"{self.prefix}-{part}.conllu"))
                                    for part in ("test", "dev"))

    def require(self) -> None:
        if not self.folder():
            raise DataNotFoundError(f"set {UD_DIR_VARIABLE} to the folder that holds {self.prefix}-test.conllu "
                                    f"and {self.prefix}-dev.conllu")
        if not self.found():
            raise DataNotFoundError(f"{UD_DIR_VARIABLE}={self.folder()} has no {self.prefix}-test.conllu "
                                    f"and {self.prefix}-dev.conllu")

    def load(self, split: str) -> Sequence[Sentence]:
        """Return the sentences of one split."""
        if split == "test":
            return _read_ud(os.path.join(self.folder(), f"{self.prefix}-dev.conllu"))
        sentences = _read_ud(os.path.join(self.folder(), f"{self.prefix}-test.conllu"))
        cut = len(sentences) - round(DEV_FRACTION * len(sentences))
        return sentences[:cut] if split == "train" else sentences[cut:]


@functools.lru_cache(maxsize=None)
def _read_ud(path: str) -> tuple[Sentence, ...]:
    """The sentences of a UD file (once per process)."""
    return tuple(read_conll(path))


def _tagging_reader(name: str) -> Parser:
    """The reader ``name`` of :mod:`egnlp.corpora.tagging`, imported when a file is read (it loads NLTK's
    corpus readers, and with them NLTK and SciPy, which listing the data sets does not need)."""

    def parse(text: str, source: str) -> list[Sentence]:
        from . import tagging

        return getattr(tagging, name)(text, source)

    parse.__name__ = parse.__qualname__ = name
    return parse


parse_brown, parse_conll2000, parse_treebank_tags = (
    _tagging_reader(name) for name in ("parse_brown", "parse_conll2000", "parse_treebank_tags"))


@dataclass(frozen=True)
class _Dataset:
    """A registered data set: where its files are, how they split, and its task."""

    description: str
    root: str
    files: _TrainTestFiles | _NumberedFiles | _ShuffledDocuments | _UDFiles
    task: str = "parse"


DATASETS: dict[str, _Dataset] = {
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
    "pt-bosque": _Dataset(
        "Portuguese UD Bosque (train/dev: the -test file; test: the -dev file), labelled",
        "single",
        _UDFiles("pt_bosque-ud"),
    ),
    "nl-alpino": _Dataset(
        "Dutch UD Alpino (train/dev: the -test file; test: the -dev file), labelled",
        "single",
        _UDFiles("nl_alpino-ud"),
    ),
    "brown": _Dataset(
        "Brown corpus POS tags (190 tags), documents split by seed 0",
        NO_ROOT,
        _ShuffledDocuments("brown", r"c[a-z]\d\d", 500, 400, 40, 0, "ascii", parse_brown),
        "pos",
    ),
    "conll2000-pos": _Dataset(
        "CoNLL-2000 WSJ POS tags (Brill tagger output), chunk column kept",
        NO_ROOT,
        _TrainTestFiles("conll2000", "train.txt", "test.txt", "ascii", parse_conll2000),
        "pos",
    ),
    "conll2000-chunk": _Dataset(
        "CoNLL-2000 WSJ chunking (IOB tags in an 11th column)",
        NO_ROOT,
        _TrainTestFiles("conll2000", "train.txt", "test.txt", "ascii", parse_conll2000),
        "chunk",
    ),
    "ptb-pos": _Dataset(
        "Penn Treebank sample gold POS tags, traces dropped (the wsj sentences)",
        NO_ROOT,
        _NumberedFiles(
            "treebank",
            "combined/wsj_",
            {"train": range(1, 160), "dev": range(160, 180), "test": range(180, 200)},
            ".mrg",
            parse_treebank_tags,
        ),
        "pos",
    ),
}


def list_datasets() -> list[DatasetInfo]:
    """Describe every registered data set, saying whether its package is installed."""
    return [
        DatasetInfo(
            name=name,
            description=dataset.description,
            task=dataset.task,
            source=dataset.files.source(),
            splits=SPLITS,
            root=dataset.root,
            found=dataset.files.found(),
        )
        for name, dataset in DATASETS.items()
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
    dataset.files.require()
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
    if name_or_path in DATASETS:
        if split is None:
            raise CorpusError(f"data set '{name_or_path}' needs a split: {', '.join(SPLITS)}")
        return load_dataset(name_or_path, split)
    if not os.path.isfile(name_or_path):
        raise CorpusError(f"unknown data set or file '{name_or_path}'; data sets: {', '.join(DATASETS)}")
    if split is not None:
        raise CorpusError(f"{name_or_path}: a split ('{split}') applies only to data set names")
    return read_conll(name_or_path, encoding=encoding, require_heads=require_heads)


def is_dataset(name: str) -> bool:
    """Whether ``name`` is a registered data set name."""
    return name in DATASETS


def dataset_task(name: str) -> str:
    """Return ``"parse"``, ``"pos"`` or ``"chunk"``: what the data set's gold annotation is for."""
    return _get(name).task


def dataset_root(name: str) -> str:
    """Return ``"single"`` or ``"multi"``: how many root tokens the data set's trees have.

    Raises:
        CorpusError: unknown name, or a tagging data set (it has no trees).
    """
    dataset = _get(name)
    if dataset.task != "parse":
        raise CorpusError(f"data set '{name}' has no dependency trees (its task is '{dataset.task}')")
    return dataset.root


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
    return registered(DATASETS, name, lambda names: CorpusError(f"unknown data set '{name}'; data sets: {names}"))


def _resource(package: str) -> str:
    """NLTK resource name of a corpus package."""
    return f"corpora/{package}"


def _data_path() -> list[str]:
    """NLTK's data path: ``nltk.data.path`` once NLTK is imported, else the same list computed the way
    NLTK computes it (``$NLTK_DATA``, ``~/nltk_data``, then the folders under ``sys.prefix`` and
    ``/usr``), so that listing the data sets does not import NLTK, and with it SciPy."""
    if "nltk" in sys.modules or os.name == "nt":
        import nltk

        return list(nltk.data.path)
    path = [os.path.expanduser(d) for d in os.environ.get("NLTK_DATA", "").split(os.pathsep) if d]
    if "APPENGINE_RUNTIME" not in os.environ and os.path.expanduser("~/") != "~/":
        path.append(os.path.expanduser("~/nltk_data"))
    path += [os.path.join(sys.prefix, "nltk_data"), os.path.join(sys.prefix, "share", "nltk_data"),
             os.path.join(sys.prefix, "lib", "nltk_data"), "/usr/share/nltk_data", "/usr/local/share/nltk_data",
             "/usr/lib/nltk_data", "/usr/local/lib/nltk_data"]
    return path


def _is_installed(package: str) -> bool:
    """Whether NLTK's data path holds the package (as a folder or a zip)."""
    resource = _resource(package)
    return any(os.path.isdir(os.path.join(folder, resource)) or os.path.isfile(os.path.join(folder, resource + ".zip"))
               for folder in _data_path())


def _require_package(package: str) -> None:
    """Make sure the package is installed, trying one quiet download.

    Raises:
        DataNotFoundError: still missing after the download attempt.
    """
    if _is_installed(package):
        return
    import nltk

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
    root, inner = _package_root(package)
    try:
        if inner is None:
            with open(os.path.join(root, *filename.split("/")), "rb") as handle:
                data = handle.read()
        else:
            with zipfile.ZipFile(root) as archive:
                data = archive.read(inner + filename)
    except (OSError, KeyError):
        raise DataNotFoundError(
            f"NLTK package '{_resource(package)}' has no file '{filename}'; "
            f"reinstall it with nltk.download('{package}', force=True)"
        ) from None
    return tuple(parse(decode(data, source, encoding), source))


def _package_root(package: str) -> tuple[str, str | None]:
    """Where an installed NLTK corpus package is, found as ``nltk.data.find`` finds it (a folder
    anywhere on the data path before a zip): ``(folder, None)`` or ``(zip file, prefix of its
    members)``.  Reading the files ourselves spares every command that reads a data set importing
    NLTK (and SciPy with it)."""
    folders = _data_path()
    for folder in folders:
        path = os.path.join(folder, _resource(package))
        if os.path.isdir(path):
            return path, None
    for folder in folders:
        path = os.path.join(folder, _resource(package) + ".zip")
        if os.path.isfile(path):
            return path, f"{package}/"
    raise DataNotFoundError(f"NLTK package '{_resource(package)}' is not installed; "
                            f"install it with nltk.download('{package}')")


def _package_files(package: str) -> list[str]:
    """The file names of an installed package, relative to it with '/' separators (as NLTK's
    ``find_corpus_fileids`` lists them: folders and hidden folders left out)."""
    root, inner = _package_root(package)
    if inner is not None:
        with zipfile.ZipFile(root) as archive:
            return [name[len(inner):] for name in archive.namelist()
                    if name.startswith(inner) and not name.endswith("/") and len(name) > len(inner)]
    names = []
    for folder, subfolders, files in os.walk(root):
        subfolders[:] = sorted(d for d in subfolders if not d.startswith("."))
        rel = os.path.relpath(folder, root)
        names += [name if rel == "." else f"{rel.replace(os.sep, '/')}/{name}" for name in files]
    return names
