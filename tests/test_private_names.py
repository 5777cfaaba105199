"""No module of the package reaches into another module's private names (``_name``): what modules share
is published under a public name.  The modules are read with ``ast``, not imported."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# The source folders and the package each installs as (pyproject.toml's package-dir).
PACKAGES = {"base": "egnlp.base", "corpora": "egnlp.corpora", "features": "egnlp.features",
            "parser": "egnlp.parser", "tagger": "egnlp.tagger", "training": "egnlp.training", "egnlp": "egnlp"}

# (file, private name) pairs allowed to cross modules; keep it empty (an entry no longer found fails the test).
ALLOWED: set[tuple[str, str]] = set()


def module_files(root: Path) -> dict[str, Path]:
    """Every module of the package under ``root`` by its dotted name (a package by its ``__init__.py``)."""
    modules = {}
    for folder, package in PACKAGES.items():
        for path in sorted((root / folder).rglob("*.py")):
            parts = path.relative_to(root / folder).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            modules[".".join((package, *parts))] = path
    return modules


def _is_private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _imported_module(node: ast.ImportFrom, module: str, path: Path) -> str:
    """The dotted name ``from X import ...`` reads X as, relative imports resolved against ``module``."""
    if node.level == 0:
        return node.module or ""
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    base = package[: len(package) - node.level + 1]
    return ".".join(base + ([node.module] if node.module else []))


def _dotted(node: ast.expr) -> str | None:
    """``a.b.c`` of a chain of attributes over a name, None for any other expression."""
    names = []
    while isinstance(node, ast.Attribute):
        names.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    names.append(node.id)
    return ".".join(reversed(names))


def private_uses(root: Path = ROOT) -> list[tuple[str, int, str, str]]:
    """(file, line, private name, what) of every ``from X import _name`` of another module X of the package
    and every ``m._name`` with ``m`` an imported module of the package, in every module under ``root``."""
    modules = module_files(root)
    found = []
    for module, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        where = path.relative_to(root).as_posix()
        bound = {}  # a name the module binds to another module of the package (import ... as, from ... import)
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                source = _imported_module(node, module, path)
                if source not in modules or source == module:
                    continue
                for alias in node.names:
                    if _is_private(alias.name):
                        found.append((where, node.lineno, alias.name, f"from {source} import {alias.name}"))
                    elif f"{source}.{alias.name}" in modules:
                        bound[alias.asname or alias.name] = f"{source}.{alias.name}"
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.split(".")[0] == "egnlp":
                        bound[alias.asname or "egnlp"] = alias.name if alias.asname else "egnlp"
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Attribute) and _is_private(node.attr)):
                continue
            chain = _dotted(node.value)
            if chain is None:
                continue
            first, _, rest = chain.partition(".")
            target = bound.get(first)
            if target is None:
                continue
            target = f"{target}.{rest}" if rest else target
            if target in modules and target != module:
                found.append((where, node.lineno, node.attr, f"{chain}.{node.attr}"))
    return found


def test_no_module_uses_another_modules_private_names():
    found = private_uses()
    reached = [f"{where}:{line}: {what}" for where, line, name, what in found if (where, name) not in ALLOWED]
    assert not reached, "private names of other modules (publish them under a public name):\n" + "\n".join(reached)
    stale = ALLOWED - {(where, name) for where, _, name, _ in found}
    assert not stale, f"allowed private uses no longer found, remove them from ALLOWED: {sorted(stale)}"


def test_the_checker_finds_a_planted_use(tmp_path):
    """Each form is found with its file and line: a private name imported by absolute and relative imports,
    and read off a module imported by name, as an alias or as a whole dotted path; a module's own private
    names, dunder names, public names and the private attributes of objects are not."""
    for folder in PACKAGES:
        (tmp_path / folder).mkdir()
    (tmp_path / "features" / "__init__.py").write_text("")
    (tmp_path / "features" / "kernels.py").write_text("_helper = 1\nPUBLIC = 2\n")
    (tmp_path / "parser" / "__init__.py").write_text("")
    (tmp_path / "parser" / "shared.py").write_text("_table = {}\n")
    (tmp_path / "parser" / "chart.py").write_text(
        "from egnlp.features.kernels import PUBLIC, _helper\n"       # 1: found
        "from .shared import _table\n"                               # 2: found (relative)
        "from egnlp.features import kernels\n"
        "import egnlp.features.kernels as k\n"
        "import egnlp.parser.shared\n"
        "x = kernels._helper + k._helper\n"                          # 6: found twice
        "y = egnlp.parser.shared._table\n"                           # 7: found
        "_own = 3\n"
        "z = kernels.__name__, PUBLIC, k.PUBLIC\n"
        "class A:\n"
        "    def f(self):\n"
        "        return self._own, _own\n")
    found = {(where, line, what) for where, line, _, what in private_uses(tmp_path)}
    assert found == {
        ("parser/chart.py", 1, "from egnlp.features.kernels import _helper"),
        ("parser/chart.py", 2, "from egnlp.parser.shared import _table"),
        ("parser/chart.py", 6, "kernels._helper"),
        ("parser/chart.py", 6, "k._helper"),
        ("parser/chart.py", 7, "egnlp.parser.shared._table"),
    }
