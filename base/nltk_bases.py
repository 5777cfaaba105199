"""NLTK base classes that cost nothing until NLTK is imported.

egnlp's :class:`~egnlp.parser.parser_model.Parser` is an ``nltk.parse.api.ParserI``
and its :class:`~egnlp.tagger.tagger_model.Tagger` an ``nltk.tag.api.TaggerI``, but
importing NLTK takes about 0.7 s and 75 MB (its ``__init__`` imports
``scipy.stats``), most of a one-sentence ``egnlp parser parse``.  So such a
class is written on :class:`NLTKBase` and declared with :func:`nltk_base`:
its base becomes the NLTK class as soon as the NLTK module is imported, by
anyone (an import hook runs after that module's code), or at once when it
already is.  Until then the class's own methods work without NLTK, and an
attribute only the NLTK base has (``TaggerI.accuracy``, ``ParserI.parse_one``)
imports NLTK and attaches the base on first use.  ``isinstance(parser,
ParserI)`` is true whenever ``ParserI`` can be named, since naming it imports
its module.
"""

from __future__ import annotations

import importlib
import sys
from importlib.abc import MetaPathFinder

# NLTK module -> the (class, base name) pairs waiting for it
_WAITING: dict[str, list[tuple[type, str]]] = {}
# class -> (NLTK module, base name)
_DECLARED: dict[type, tuple[str, str]] = {}


class NLTKBase:
    """The base of a class until its NLTK base is attached (:func:`nltk_base`)."""

    def __getattr__(self, name: str):
        # only reached when the normal lookup fails (a method of the NLTK base not attached yet)
        declared = next((_DECLARED[c] for c in type(self).__mro__ if c in _DECLARED), None)
        if declared is not None and not name.startswith("__"):
            module = importlib.import_module(declared[0])  # the hook attaches the bases waiting for it
            _attach(module)
            if NLTKBase not in type(self).__mro__:
                return getattr(self, name)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")


def nltk_base(module: str, name: str):
    """Class decorator: ``name`` of NLTK module ``module`` becomes the class's base (in place of
    :class:`NLTKBase`) when that module is imported, or now if it is."""

    def declare(cls: type) -> type:
        if cls.__bases__ != (NLTKBase,):
            raise TypeError(f"{cls.__name__} must derive from NLTKBase alone")
        _DECLARED[cls] = (module, name)
        loaded = sys.modules.get(module)
        if loaded is not None and hasattr(loaded, name):
            cls.__bases__ = (getattr(loaded, name),)
        else:
            _WAITING.setdefault(module, []).append((cls, name))
            if not any(isinstance(f, _Hook) for f in sys.meta_path):
                sys.meta_path.insert(0, _Hook())
        return cls

    return declare


def _attach(module) -> None:
    for cls, name in _WAITING.pop(module.__name__, []):
        if cls.__bases__ == (NLTKBase,):
            cls.__bases__ = (getattr(module, name),)


class _Hook(MetaPathFinder):
    """Finds nothing itself: for a module in :data:`_WAITING`, asks the other finders for its spec and
    makes its loader attach the waiting bases after the module's code has run."""

    def find_spec(self, fullname, path, target=None):
        if fullname not in _WAITING:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                break
        else:
            return None
        loader = spec.loader
        if loader is None or not hasattr(loader, "exec_module"):
            return spec
        run = loader.exec_module

        def exec_module(module) -> None:
            run(module)
            _attach(module)

        loader.exec_module = exec_module  # this module's loader only (a new one per spec)
        return spec
