"""The README's Python examples run, in order, as one program.

Every ```python block of README.md is executed in the order of the README,
all in one namespace (a later block uses the names of an earlier one), in a
temporary folder. The models the examples load are the ones the README's
quickstart trains, under the same file names, trained here small (the first
100-200 sentences, 2 passes): ``pos.npz`` (CRF on conll2000-pos), ``wsj.npz``,
and for the Dutch example ``nl-upos.npz``, ``nl-xpos.npz`` and ``nl.npz``
(UPOS and XPOS taggers and a parser reading both, on the first sentences of
``$EGNLP_UD_DIR/nl_alpino-ud-test.conllu``). The examples that train call
``load_dataset``; here it gives the first few sentences of each split, so
that they train in seconds. Nothing else is changed: a block that raises
fails the test with the README line it failed on.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import traceback
from pathlib import Path

import pytest

import egnlp.corpora
from egnlp.corpora import load_dataset, read_conll

README = Path(__file__).resolve().parents[1] / "README.md"
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
    from egnlp.parser_training import train_parser
    from egnlp.tagger_training import label_columns, train_crf_tagger

    folder = tmp_path_factory.mktemp("readme")
    pos = load_dataset("conll2000-pos", "train")[:200]
    train_crf_tagger(*label_columns(pos)[:2], max_passes=2, data="conll2000-pos")[0].save(folder / "pos.npz")
    train_parser(load_dataset("wsj", "train")[:100], root="single", max_passes=2,
                 data="wsj")[0].save(folder / "wsj.npz")
    dutch = read_conll(Path(os.environ["EGNLP_UD_DIR"]) / "nl_alpino-ud-test.conllu")[:100]
    for column, name in (("upos", "nl-upos.npz"), ("pos", "nl-xpos.npz")):
        train_crf_tagger(*label_columns(dutch, column)[:2], column=column, max_passes=2)[0].save(folder / name)
    train_parser(dutch, root="single", tags="both", max_passes=2)[0].save(folder / "nl.npz")
    return folder


def test_the_readme_has_its_python_examples() -> None:
    blocks = python_blocks(README.read_text(encoding="utf-8"))
    assert len(blocks) >= 4
    assert all(code.strip() for _, code in blocks)


def test_the_readme_python_examples_run(models: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(models)
    monkeypatch.setattr(egnlp.corpora, "load_dataset",
                        lambda name, split: load_dataset(name, split)[:SPLIT_SIZES[split]])
    before = {path.name for path in models.iterdir()}
    output = run_blocks(python_blocks(README.read_text(encoding="utf-8")))
    assert output.strip()  # the examples print their results
    assert {"es.npz", "es-pred.conll"} <= {path.name for path in models.iterdir()} - before


def test_a_broken_example_fails_with_its_line() -> None:
    text = "# t\n\n```python\nx = 1\n```\n\ntext\n\n```python\nprint(x)\ny = x / 0\n```\n"
    blocks = python_blocks(text)
    assert blocks == [(4, "x = 1\n"), (10, "print(x)\ny = x / 0\n")]
    with pytest.raises(AssertionError, match=r"^README\.md:11: the example raised ZeroDivisionError"):
        run_blocks(blocks)
