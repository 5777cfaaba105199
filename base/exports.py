"""A package's public names, loaded from their modules on first use (PEP 562).

A package face lists where each of its names lives; importing the package (or one light module of it,
such as :mod:`egnlp.base.errors`) then loads none of the heavy modules (NumPy, Numba kernels), so that
``egnlp --help`` starts fast, while ``from egnlp.parser import Parser`` works as usual.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any, Callable


def lazy_exports(package: str, exports: dict[str, str]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of ``package`` whose names ``exports`` maps to modules (a module
    name relative to the package, such as ``"parser_model"``, or absolute, such as ``"egnlp.base.errors"``)."""
    namespace = import_module(package).__dict__

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(import_module(module if module.startswith("egnlp.") else f"{package}.{module}"), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted({*namespace, *exports})

    return __getattr__, __dir__
