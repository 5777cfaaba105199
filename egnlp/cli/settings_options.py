"""A settings class's fields as a command's options: one table of flags, help and defaults.

:func:`settings_options` gives a typer command the options of every field of a
settings dataclass (:mod:`egnlp.settings`) that carries option metadata, and
hands the command their values as one dict, ``options``, from which it builds
the settings object. So a default, a help text and a rule are written once,
in the settings class, and ``--help``, ``docs/cli.md``, the Python API and
the Dask driver all read them from there.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import typing
from enum import Enum
from typing import Annotated, Any, Callable, Optional

import typer

# Python types of the settings fields, by their annotation (a string under ``from __future__ import annotations``).
_TYPES = {"str": str, "int": int, "float": float, "bool": bool}


def _choice_type(name: str, choices: tuple[str, ...]) -> type[Enum]:
    """A str Enum of ``choices``: typer shows them, checks them and completes them in shells."""
    return Enum(name.title().replace("_", ""), {value.replace("-", "_"): value for value in choices}, type=str)


def _option(setting: dataclasses.Field) -> inspect.Parameter:
    """The typer parameter of one settings field."""
    meta = setting.metadata
    kinds = [kind.strip() for kind in str(setting.type).split("|")]
    optional = "None" in kinds
    python = _TYPES[next(kind for kind in kinds if kind != "None")]
    default = setting.default
    if meta["choices"]:
        python = _choice_type(setting.name, meta["choices"])
        default = python(default) if default is not None else None
    flags = meta["flags"].split(",")
    info = typer.Option(*flags, help=meta["help"], metavar=meta["metavar"],
                        show_default=meta["shown"] if meta["shown"] is not None else True)
    annotation = Annotated[Optional[python] if optional else python, info]  # type: ignore[valid-type]
    return inspect.Parameter(setting.name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=annotation)


def option_fields(settings: type) -> list[dataclasses.Field]:
    """The fields of a settings class that are command-line options."""
    return [f for f in dataclasses.fields(settings) if "flags" in f.metadata]


def settings_options(settings: type) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorator: the command takes the options of ``settings``'s fields (after its own parameters) and
    receives their values as the dict ``options`` (choices as plain strings), keyword ``options``."""
    fields = option_fields(settings)
    names = {f.name for f in fields}

    def decorate(command: Callable[..., Any]) -> Callable[..., Any]:
        hints = typing.get_type_hints(command, include_extras=True)
        own = [p.replace(annotation=hints.get(p.name, p.annotation))
               for p in inspect.signature(command).parameters.values() if p.name != "options"]
        clash = names & {p.name for p in own}
        if clash:
            raise TypeError(f"{command.__name__} has parameters of {settings.__name__}'s options: {sorted(clash)}")
        parameters = own + [_option(f) for f in fields]

        @functools.wraps(command)
        def run(**given: Any) -> Any:
            options = {name: given.pop(name) for name in names}
            options = {k: v.value if isinstance(v, Enum) else v for k, v in options.items()}
            return command(options=options, **given)

        run.__signature__ = inspect.Signature(parameters)  # type: ignore[attr-defined]  # read by typer
        run.__annotations__ = {p.name: p.annotation for p in parameters}
        return run

    return decorate
