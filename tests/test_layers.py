"""The package's shape: one namespace, imports that go down the layers, tests that share no test modules.

The layer order is read from ``docs/architecture.md`` (its line starting with
``Layers:``), so the document and the code cannot drift apart: a module may
import its own package and the packages of lower layers, never a sibling of
its layer or a higher one.  Every import statement of every module counts,
those inside functions included.
"""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("base", "corpora", "features", "parser", "tagger", "training")
APPLICATION = "application"  # the modules of egnlp/ itself: the settings, the training functions, the pipeline
CLI = "cli"  # egnlp/cli/ and ``python -m egnlp``: the command line, over the application layer


def documented_layers() -> list[set[str]]:
    """The layers of docs/architecture.md, lowest first, e.g. [{base}, {corpora}, {features}, {parser, tagger,
    training}, {application}, {cli}]."""
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    match = re.search(r"^Layers:\s*(.+)$", text, re.MULTILINE)
    assert match, "docs/architecture.md has no 'Layers:' line"
    line = match.group(1).replace("`", "").rstrip(".")
    return [{name.strip() for name in layer.split("|")} for layer in line.split("->")]


def package_of(module: str) -> str | None:
    """The layer unit of a dotted module name inside egnlp, or None for other modules."""
    parts = module.split(".")
    if parts[0] != "egnlp":
        return None
    if len(parts) > 1 and parts[1] in PACKAGES:
        return parts[1]
    if len(parts) > 1 and parts[1] in ("cli", "__main__"):
        return CLI
    return APPLICATION


def source_modules() -> dict[str, Path]:
    """Every module of the package by its dotted name (egnlp.<package>.<module>, egnlp.<module>)."""
    out = {}
    for folder, dotted in ([(ROOT / name, f"egnlp.{name}") for name in PACKAGES]
                           + [(ROOT / "egnlp", "egnlp"), (ROOT / "egnlp" / "cli", "egnlp.cli")]):
        for path in sorted(folder.glob("*.py")):
            out[dotted if path.stem == "__init__" else f"{dotted}.{path.stem}"] = path
    return out


def imported_modules(path: Path, module: str) -> list[tuple[int, str]]:
    """(line, absolute module name) of every import in a file; relative imports resolved."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    package = module if path.stem == "__init__" else module.rpartition(".")[0]
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                name = ".".join(base + ([node.module] if node.module else []))
            else:
                name = node.module or ""
            out.append((node.lineno, name))
    return out


def test_the_documented_layers_name_every_package():
    layers = documented_layers()
    names = [name for layer in layers for name in layer]
    assert sorted(names) == sorted([*PACKAGES, APPLICATION, CLI]) and len(names) == len(set(names))


def test_imports_go_down_the_layers():
    rank = {name: level for level, layer in enumerate(documented_layers()) for name in layer}
    wrong = []
    for module, path in source_modules().items():
        here = package_of(module)
        for line, target in imported_modules(path, module):
            top = target.split(".")[0]
            where = f"{path.relative_to(ROOT)}:{line}: {module} imports {target}"
            if top in PACKAGES:
                wrong.append(f"{where} (a bare name: import egnlp.{target})")
                continue
            there = package_of(target)
            if there is None or there == here:
                continue
            if rank[there] >= rank[here]:
                wrong.append(f"{where} ({here} may not import {there})")
    assert not wrong, "\n".join(wrong)


def test_the_checker_sees_a_wrong_import(tmp_path):
    """The walk resolves relative imports and finds imports inside functions."""
    path = tmp_path / "tagger_model.py"
    path.write_text("from .chain_inference import viterbi\n\ndef f():\n    from egnlp.training.eg import EGConfig\n")
    assert imported_modules(path, "egnlp.tagger.tagger_model") == [(1, "egnlp.tagger.chain_inference"), (4, "egnlp.training.eg")]
    rank = {name: level for level, layer in enumerate(documented_layers()) for name in layer}
    assert rank[package_of("egnlp.training.eg")] == rank[package_of("egnlp.tagger.tagger_model")]


def test_tests_share_helpers_not_test_modules():
    tests = ROOT / "tests"
    names = {path.stem for path in tests.glob("test_*.py")}
    wrong = [f"{path.name}:{line} imports {target}" for path in sorted(tests.glob("*.py"))
             for line, target in imported_modules(path, f"tests.{path.stem}") if target.split(".")[0] in names]
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize("code, error", [
    ("import egnlp.parser, egnlp.tagger, egnlp.training, egnlp.features, egnlp.corpora, egnlp.base; print('ok')", None),
    *[(f"import {name}", "ModuleNotFoundError") for name in PACKAGES],
])
def test_one_namespace_outside_the_checkout(tmp_path, code, error):
    """From a folder outside the checkout only ``egnlp`` resolves; the folders' own names do not."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    result = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True)
    if error is None:
        assert result.returncode == 0 and result.stdout.strip() == "ok", result.stderr
    else:
        assert result.returncode != 0 and error in result.stderr


def test_the_public_names_import_from_egnlp_and_their_packages() -> None:
    """``from egnlp import Parser, Tagger, Pipeline`` and ``from egnlp.parser import Parser`` work, and name the
    same classes; the package faces load their modules only when a name is asked for."""
    code = ("import sys\nimport egnlp, egnlp.parser, egnlp.tagger\n"
            "assert 'egnlp.parser.parser_model' not in sys.modules and 'numpy' not in sys.modules\n"
            "from egnlp import Parser, Pipeline, Tagger, train_parser, train_tagger, ParserSettings\n"
            "from egnlp.parser import Parser as P\nfrom egnlp.tagger import Tagger as T\n"
            "from egnlp.pipeline import Pipeline as L\n"
            "assert (Parser, Tagger, Pipeline) == (P, T, L)\nprint('ok')")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stderr
