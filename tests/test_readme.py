"""The Python examples of README.md and of docs/guide.md run, in order, as one program each.

Every ```python block of a document is executed in the document's order,
all in one namespace (a later block uses the names of an earlier one), in a
temporary folder. The models the examples load are the ones the command-line
examples train, under the same file names, trained here small (the first
100-200 sentences, 2 passes): ``pos.npz`` (CRF on conll2000-pos), ``wsj.npz``,
for the Portuguese examples ``pt-upos.npz`` and ``pt.npz`` (a UPOS tagger and
a parser reading UPOS, on the first sentences of
``$EGNLP_UD_DIR/pt_bosque-ud-test.conllu``), and for the Dutch ones
``nl-upos.npz``, ``nl-xpos.npz`` and ``nl.npz`` (UPOS and XPOS taggers and a
parser reading both, on ``nl_alpino-ud-test.conllu``). The examples that
train call ``load_dataset``; here it gives the first few sentences of each
split, so that they train in seconds. Nothing else is changed: a block that
raises fails the test with the document's line it failed on.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import shutil
import traceback
from pathlib import Path

import pytest

import egnlp
import egnlp.corpora
from egnlp.corpora import load_dataset, read_conll

README = Path(__file__).resolve().parents[1] / "README.md"
GUIDE = Path(__file__).resolve().parents[1] / "docs" / "guide.md"
# Sentences of each split that the examples' load_dataset gives (the real splits have thousands).
SPLIT_SIZES = {"train": 20, "dev": 10, "test": 10}
FENCE = re.compile(r"^```python[ \t]*\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)


def python_blocks(text: str) -> list[tuple[int, str]]:
    """(line of the block's first code line, code) of every ```python block, in order."""
    return [(text.count("\n", 0, match.start(1)) + 1, match.group(1)) for match in FENCE.finditer(text)]


def run_blocks(blocks: list[tuple[int, str]], name: str = "README.md") -> str:
    """Execute the blocks in order in one namespace; their printed output.

    Raises:
        AssertionError: naming the block's ``file:line`` where one raised, with the traceback and the output so far.
    """
    namespace: dict = {"__name__": "__readme__"}
    output = io.StringIO()
    for line, code in blocks:
        compiled = compile("\n" * (line - 1) + code, name, "exec")  # tracebacks give README line numbers
        try:
            with contextlib.redirect_stdout(output):
                exec(compiled, namespace)
        except Exception as error:  # any failure of an example is a test failure
            frames = [frame for frame in traceback.extract_tb(error.__traceback__) if frame.filename == name]
            where = f"{name}:{frames[-1].lineno if frames else line}"
            raise AssertionError(f"{where}: the example raised {type(error).__name__}: {error}\n"
                                 f"{traceback.format_exc()}--- output so far\n{output.getvalue()}") from None
    return output.getvalue()


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder with the model files the examples load, trained small."""
    from egnlp import train_parser, train_tagger
    from egnlp.tagger_training import label_columns

    folder = tmp_path_factory.mktemp("readme")
    pos = load_dataset("conll2000-pos", "train")[:200]
    train_tagger(*label_columns(pos)[:2], max_passes=2, data="conll2000-pos")[0].save(folder / "pos.npz")
    train_parser(load_dataset("wsj", "train")[:100], root="single", max_passes=2,
                 data="wsj")[0].save(folder / "wsj.npz")
    ud = Path(os.environ["EGNLP_UD_DIR"])
    portuguese = read_conll(ud / "pt_bosque-ud-test.conllu")[:100]
    train_tagger(*label_columns(portuguese, "upos")[:2], column="upos", max_passes=2)[0].save(folder / "pt-upos.npz")
    train_parser(portuguese, tags="upos", max_passes=2)[0].save(folder / "pt.npz")
    dutch = read_conll(ud / "nl_alpino-ud-test.conllu")[:100]
    for column, name in (("upos", "nl-upos.npz"), ("pos", "nl-xpos.npz")):
        train_tagger(*label_columns(dutch, column)[:2], column=column, max_passes=2)[0].save(folder / name)
    train_parser(dutch, root="single", tags="both", max_passes=2)[0].save(folder / "nl.npz")
    return folder


def small_datasets(monkeypatch: pytest.MonkeyPatch) -> None:
    """``load_dataset`` of the examples, as ``egnlp.load_dataset`` or ``egnlp.corpora.load_dataset``: the first
    few sentences of each split."""
    def small(name: str, split: str) -> list:
        return load_dataset(name, split)[:SPLIT_SIZES[split]]

    monkeypatch.setattr(egnlp.corpora, "load_dataset", small)
    monkeypatch.setattr(egnlp, "load_dataset", small)


def test_the_readme_has_its_python_examples() -> None:
    blocks = python_blocks(README.read_text(encoding="utf-8"))
    assert len(blocks) >= 2
    assert all(code.strip() for _, code in blocks)


def test_the_readme_python_examples_run(models: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(models)
    small_datasets(monkeypatch)
    output = run_blocks(python_blocks(README.read_text(encoding="utf-8")))
    assert "# sent_id = 1" in output and "[('The', " in output  # the pipeline's CoNLL-U and the tags


def test_the_guide_has_its_python_examples() -> None:
    blocks = python_blocks(GUIDE.read_text(encoding="utf-8"))
    assert len(blocks) >= 8
    assert all(code.strip() for _, code in blocks)


def test_the_guide_python_examples_run(models: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for model in models.glob("*.npz"):  # a folder of its own: what the README's examples write is not here
        shutil.copy(model, tmp_path / model.name)
    monkeypatch.chdir(tmp_path)
    small_datasets(monkeypatch)
    output = run_blocks(python_blocks(GUIDE.read_text(encoding="utf-8")), "docs/guide.md")
    assert "# sent_id = 1" in output  # the pipeline's CoNLL-U
    assert {"es.npz", "es-pred.conll"} <= {path.name for path in tmp_path.iterdir()}


def test_a_broken_example_fails_with_its_line() -> None:
    text = "# t\n\n```python\nx = 1\n```\n\ntext\n\n```python\nprint(x)\ny = x / 0\n```\n"
    blocks = python_blocks(text)
    assert blocks == [(4, "x = 1\n"), (10, "print(x)\ny = x / 0\n")]
    with pytest.raises(AssertionError, match=r"^README\.md:11: the example raised ZeroDivisionError"):
        run_blocks(blocks)
